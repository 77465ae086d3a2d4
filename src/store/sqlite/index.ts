// The SQLite driver (better-sqlite3, WAL). Accepted writes commit with
// synchronous=FULL, on disk before the API answers 201; transitions commit
// with synchronous=NORMAL under the default durability (store.ts Durability),
// flushed by the next FULL commit or within FLUSH_BOUND_MS. better-sqlite3 is synchronous: every
// method runs its statements inside one transaction and resolves at once.
// SQLite has one writer, so a transaction is also the claim: no SKIP LOCKED
// is needed, and UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING claims a
// batch atomically.

import Database from "better-sqlite3";
import type { ErrorRecord, JobState, Overlap, Role } from "@duetime/sdk/contract";
import { overlapAction, REPLACED_ERROR, skippedError } from "../../core/misfire.js";
import { chargeDispatch, dispatchAllowance, nextDispatchAt } from "../../core/dispatch-rate.js";
import { fairPick, NO_WORK, type Lane, type LaneGrant } from "../../core/fair-share.js";
import { executionIdFor, SHARD_COUNT } from "../../core/ids.js";
import {
  type AttemptEnd,
  type AttemptFacts,
  endExpiredAttempt,
  endFailedAttempt,
  endReleasedAttempt,
  lastErrorOf,
  retryDeadlineOf,
  expiredAttemptError,
} from "../../core/retry.js";
import {
  DISPATCHING_STATES,
  IN_FLIGHT_STATES,
  inFlightOnCancel,
  type JobChange,
  jobChangeAfterExecution,
  LAST_DISPATCH_JOB_CHANGE,
  NOT_STARTED,
  REPLAY_JOB_CHANGE,
} from "../../core/states.js";
import type {
  AckOutcome,
  ApiKeyRecord,
  AttemptRow,
  AuditEntry,
  ClusterSignal,
  CompleteInput,
  DeadLetterRow,
  DispatchItem,
  DueEntry,
  DueRef,
  FailInput,
  JobCreateOutcome,
  LeaseParams,
  JobRecord,
  LeasedRow,
  LoadedDueEntry,
  MigrateResult,
  NewJob,
  NextOccurrence,
  NodeRecord,
  PendingChange,
  PendingReplace,
  PoolCounts,
  PossibleDuplicateMark,
  PossibleDuplicateRow,
  PurgedRow,
  ReplayCursor,
  ReplayRecord,
  ReplaySelection,
  RetentionKind,
  ShardLease,
  SignalEvent,
  Store,
  StoreParams,
  TenantLimits,
} from "../store.js";
import { type Durability, FLUSH_BOUND_MS, HTTP_POOL } from "../store.js";
import { poolOf } from "../../core/targets.js";
import { expiredRows, purgeBatch } from "./retention.js";
import { onStoreError } from "../faults.js";
import { rethrowSqliteError } from "./errors.js";
import { MIGRATIONS } from "./schema.js";
import { nextIds, replaySlots, toPossibleDuplicate, toReplay } from "../replays.js";
import { countHour, type CountRow, countsSql, toPoolCounts, toUpcoming, upcomingSql, upcomingWindow } from "../ready-counts.js";
import { fromWorkloadRow, WORKLOAD_COLUMNS, type WorkloadMinute, workloadJson, workloadUpsertSql } from "../workload-minutes.js";
import { heartbeat, leave, liveNodes, releaseShards } from "./nodes.js";
import { SignalBus } from "./signals.js";
import {
  DUE_COLUMNS,
  DUE_REF_COLUMNS,
  KIND_FILTER,
  TENANT_LIMIT_COLUMNS,
  toApiKey,
  toAttemptRow,
  toDueRef,
  toLeasedRows,
  toLoadedDue,
  toTenantLimits,
} from "../rows.js";

export interface SqliteStoreOptions {
  /** A file path, or ":memory:". */
  path: string;
  /** store.ts Durability (default "accepted"). */
  durability?: Durability;
  /** How long a write waits for another connection's lock before it fails as busy (default 5000). */
  busyTimeoutMs?: number;
  /** Apply missing migrations on open (default true). */
  migrate?: boolean;
}

type Row = Record<string, unknown>;

/** A job's executions: ids "<jobId>-…" sort between "<jobId>-" and "<jobId>." ("." follows "-"). */
const OF_JOB = "id > ? AND id < ?";
const OF_JOB_NAMED = "e.id > @from AND e.id < @to";
/** An execution waiting for a grant whose last one left no attempt (handed back unused): history shows it as it waits. */
const WAITING_UNRECORDED =
  "e.state IN ('READY', 'PENDING', 'PAUSED') AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.execution_id = e.id AND a.attempt = e.attempt)";
const jobRange = (jobId: string): [string, string] => [`${jobId}-`, `${jobId}.`];

/**
 * [executionId, jobId, scheduledFor, readyAt, state, lastError JSON, whenIdle]
 * for insertExecutions; whenIdle 1 inserts it only while its job has no
 * execution in flight (overlap: forbid).
 */
type NewExecution = [string, string, number, number | null, "READY" | "PAUSED" | "SKIPPED", string | null, (0 | 1)?];

/** A one-off's pending execution (store.ts NewJob.execution), held when its job is paused. */
function pendingRow(jobId: string, at: NextOccurrence, held: boolean): NewExecution {
  return [executionIdFor(jobId, at.scheduledFor), jobId, at.scheduledFor, at.dueAt, held ? NOT_STARTED.held : NOT_STARTED.waiting, null];
}

/** core/states.ts NOT_STARTED as a condition on an execution row (of alias `e`, or none). */
const notStarted = (e = "") =>
  `(${e}state = '${NOT_STARTED.held}' OR (${e}state = '${NOT_STARTED.waiting}' AND ${e}attempt = ${NOT_STARTED.attempt}))`;

/**
 * A job with its next occurrence (store.ts JobRecord.nextRunAt): a recurring
 * job's due entry; a one-off's pending execution that is ready first.
 */
const JOB_WITH_NEXT = `SELECT j.*, coalesce(d.scheduled_for, p.scheduled_for) AS next_run_at, coalesce(d.due_at, p.ready_at) AS next_due_at
  FROM jobs j LEFT JOIN due d ON d.job_id = j.id
  LEFT JOIN executions p ON p.id = (
    SELECT x.id FROM executions x WHERE j.kind = 'once' AND x.id > j.id || '-' AND x.id < j.id || '.'
      AND x.state = '${NOT_STARTED.waiting}' AND x.attempt = ${NOT_STARTED.attempt}
    ORDER BY x.ready_at LIMIT 1)`;

function skippedRow(jobId: string, scheduledFor: number, reason: string): NewExecution {
  return [executionIdFor(jobId, scheduledFor), jobId, scheduledFor, null, "SKIPPED", JSON.stringify(skippedError(reason))];
}

/** The lease fences: an attempt holds its lease up to and including leaseUntil. */
const LEASE_HELD = "state = 'RUNNING' AND lease_until >= @now";
const LEASE_EXPIRED = "state = 'RUNNING' AND lease_until < @now";

/** An execution row read to end its attempt, with its job's kind (a one-off ends with it). */
const ENDING_ROW = "*, (SELECT kind FROM jobs WHERE jobs.id = executions.job_id) AS job_kind FROM executions";

/**
 * The time a lease call records and judges by (store.ts, "Lease time"): the
 * caller's when it pins one, else the store's own clock, which for SQLite,
 * one process on one host, is the host's.
 */
const leaseNow = (now: number | undefined): number => now ?? Date.now();

/** What core/retry.ts needs of a running execution row to decide how its attempt ends. */
function attemptFacts(e: Row): AttemptFacts {
  return {
    attempt: (e.attempt as number) - (e.attempt_base as number),
    retry: {
      maxAttempts: e.max_attempts as number,
      backoffSeconds: e.backoff_seconds as number,
      maxBackoffSeconds: e.max_backoff_seconds as number,
    },
    cancelRequested: e.cancel_requested === 1,
    retryDeadline: retryDeadlineOf(e.scheduled_for as number, e.retry_deadline_seconds as number | null),
  };
}

/**
 * A lease token (LeasedRow.leaseToken: the grant's incarnation) as the
 * column holds it; null when the call names none (the attempt alone fences),
 * and 0 (no incarnation is) for one no grant of this store gave.
 */
function incarnationOf(leaseToken: string | undefined): number | null {
  if (leaseToken === undefined) return null;
  return /^[1-9][0-9]{0,14}$/.test(leaseToken) ? Number(leaseToken) : 0;
}

/** A call's lease token matches the grant (of alias `e`, or none): SQL over @token, from incarnationOf. */
const tokenHeld = (e = "") => `(@token IS NULL OR ${e}lease_incarnation = @token)`;

const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));
const parse = <T>(text: unknown): T => (text === null || text === undefined ? (null as T) : (JSON.parse(text as string) as T));

/** A history row, its JSON columns parsed from text. */
const historyRow = (r: Row): AttemptRow => toAttemptRow(r, parse);

/** A tenant's caps as one lease sees them: what it may still be granted, and its dispatch rate's state. */
interface TenantGate {
  left: number;
  rate: number | null;
  /** What the rate alone allowed when the lease began. */
  byRate: number;
  tat: number | null;
}

export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  // Every statement and transaction runs inside a method: faults are classified on the way out of each.
  const store = onStoreError(new SqliteStore(options), rethrowSqliteError);
  if (options.migrate ?? true) await store.migrate();
  return store;
}

class SqliteStore implements Store {
  readonly kind = "sqlite";
  private readonly db: Database.Database;
  private readonly stmts = new Map<string, Database.Statement>();
  private readonly signals: SignalBus;
  private readonly unsubscribes = new Set<() => Promise<void>>();
  private readonly durability: Durability;
  /** This handle's incarnation (store_meta), flushed before its first lease grant records it. */
  private incarnation: number | undefined;
  /** A transition has committed since the last FULL commit; flushTimer will flush it. */
  private unflushed = false;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(options: SqliteStoreOptions) {
    this.db = new Database(options.path);
    this.db.pragma("journal_mode = WAL");
    // FULL between transitions: every write outside transition() is flushed before it returns.
    this.db.pragma("synchronous = FULL");
    this.durability = options.durability ?? "accepted";
    this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    this.db.pragma("foreign_keys = OFF");
    this.signals = new SignalBus(options.path === ":memory:" ? `:memory:${Math.random()}` : options.path);
  }

  /** Prepared statements are cached by their text. */
  private q(sql: string): Database.Statement {
    let stmt = this.stmts.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.stmts.set(sql, stmt);
    }
    return stmt;
  }

  /** An accepted write (or a read that must see one): flushed before it returns, with every transition before it. */
  private tx<T>(fn: () => T): T {
    const value = this.db.transaction(fn).immediate();
    this.unflushed = false;
    return value;
  }

  /**
   * A transition after acceptance (store.ts Durability): under "accepted",
   * committed with synchronous=NORMAL, so it survives a process crash at once
   * (the WAL is in the OS's cache) and a power loss from the next FULL commit
   * on, which comes within FLUSH_BOUND_MS. A WAL commit's frames are a prefix:
   * the FULL commit's fsync makes every transition before it durable too.
   */
  private transition<T>(fn: () => T): T {
    if (this.durability === "strict") return this.tx(fn);
    this.q("PRAGMA synchronous = NORMAL").run();
    try {
      return this.db.transaction(fn).immediate();
    } finally {
      this.q("PRAGMA synchronous = FULL").run();
      this.unflushed = true;
      this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_BOUND_MS).unref();
    }
  }

  /** Makes the transitions committed so far durable: a FULL commit (an empty one writes nothing, so nothing is synced). */
  private flush(): void {
    this.flushTimer = undefined;
    if (!this.unflushed || !this.db.open) return;
    try {
      this.tx(() => this.q("UPDATE store_meta SET flushed_at = ? WHERE id = 1").run(Date.now()));
    } catch {
      // Busy or the disk: the transitions stay unflushed; the next one schedules another flush, and the next accepted write fails as loudly.
    }
  }

  /** The incarnation this handle's grants record: taken at its first grant, in a FULL commit, so it is durable before any token names it. */
  private leaseIncarnation(): number {
    this.incarnation ??= (
      this.tx(() => this.q("UPDATE store_meta SET incarnation = incarnation + 1 WHERE id = 1 RETURNING incarnation").get()) as {
        incarnation: number;
      }
    ).incarnation;
    return this.incarnation;
  }

  async migrate(): Promise<MigrateResult> {
    this.db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)");
    const done = new Set((this.db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((r) => r.version));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      // Another process on the file may apply it between that read and this write lock: the check that counts is under the lock.
      const ran = this.tx(() => {
        if (this.db.prepare("SELECT 1 FROM schema_migrations WHERE version = ?").get(m.version)) return false;
        this.db.exec(m.sql);
        m.data?.(this.db, Date.now());
        this.db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(m.version, Date.now());
        return true;
      });
      if (ran) applied.push(m.version);
    }
    return { applied, version: MIGRATIONS[MIGRATIONS.length - 1]!.version };
  }

  async ping(): Promise<void> {
    this.q("SELECT 1").get();
  }

  async replicaLagMs(): Promise<number> {
    return 0; // one file: always its own primary
  }

  async storeTime(): Promise<number> {
    return leaseNow(undefined);
  }

  async pingWrite(): Promise<void> {
    // Empty the WAL first: a failed commit leaves its frames' space at the WAL's
    // end, where a small write fits on a full disk while the next real one fails.
    this.db.pragma("wal_checkpoint(TRUNCATE)");
    // Setting user_version (unused by duetime) to its own value writes page 1 all the same.
    this.tx(() => this.db.pragma(`user_version = ${Number(this.db.pragma("user_version", { simple: true }))}`));
  }

  async close(): Promise<void> {
    await Promise.all([...this.unsubscribes].map((unsubscribe) => unsubscribe()));
    clearTimeout(this.flushTimer);
    this.flush();
    if (this.db.open) this.db.close();
  }

  // ---- signals ---------------------------------------------------------------

  async signalPublish({ from, signals }: { from: string; signals: ClusterSignal[] }): Promise<void> {
    if (signals.length > 0) this.signals.publish({ from, signals });
  }

  async signalSubscribe(handler: (event: SignalEvent) => void): Promise<() => Promise<void>> {
    const unsubscribe = this.signals.subscribe(handler);
    const once = async (): Promise<void> => {
      this.unsubscribes.delete(once);
      await unsubscribe();
    };
    this.unsubscribes.add(once);
    return once;
  }

  // ---- jobs ------------------------------------------------------------------

  async jobCreateMany({ jobs, nodeId, now }: { jobs: NewJob[]; nodeId: string; now: number }): Promise<JobCreateOutcome[]> {
    return this.tx(() => {
      const ready: Row[] = [];
      const outcomes = jobs.map((j) => this.createOne(j, now, nodeId, ready));
      this.readyInserted(ready);
      return outcomes;
    });
  }

  /** Writes a job, and a one-off's execution (its lane and ready counter rows are added to `ready`, for one write per batch). */
  private createOne({ job, due, execution, idempotency, traceParent }: NewJob, now: number, nodeId: string, ready: Row[]): JobCreateOutcome {
    if (idempotency) {
      const prior = this.q("SELECT request_hash, job_id FROM idempotency_keys WHERE tenant_id = ? AND key = ?").get(job.tenantId, idempotency.key) as
        | { request_hash: string; job_id: string }
        | undefined;
      if (prior) {
        if (prior.request_hash !== idempotency.requestHash) return { status: "idempotency_mismatch" };
        const existing = this.getJob(job.tenantId, prior.job_id);
        if (existing) return { status: "existing", job: existing };
      }
      this.q("INSERT OR REPLACE INTO idempotency_keys (tenant_id, key, request_hash, job_id, created_at) VALUES (?, ?, ?, ?, ?)").run(
        job.tenantId,
        idempotency.key,
        idempotency.requestHash,
        job.jobId,
        now,
      );
    }
    const pool = poolOf(job.target);
    const target = JSON.stringify(job.target);
    const payload = json(job.payload);
    // Positional parameters: named ones cost about 2 µs a row more to bind.
    this.q(
      `INSERT INTO jobs (id, tenant_id, shard, kind, name, state, target, pool, payload, schedule, retry,
         timeout_seconds, priority, mode, version, created_at, updated_at, trace_parent)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
    ).run(
      job.jobId,
      job.tenantId,
      job.shard,
      job.kind,
      job.name,
      job.state,
      target,
      pool,
      payload,
      JSON.stringify(job.schedule),
      JSON.stringify(job.retry),
      job.timeoutSeconds,
      job.priority,
      job.mode,
      job.createdAt,
      job.createdAt,
      traceParent ?? null,
    );
    if (due) this.putDue(job.jobId, job.tenantId, job.shard, due);
    if (execution) {
      this.insertOneOffExecution(job, execution, { pool, target, payload, traceParent: traceParent ?? null, now, nodeId });
      ready.push({ pool, tenant_id: job.tenantId, priority: job.priority, ready_at: execution.dueAt });
    }
    const next = due ?? execution ?? null;
    const record: JobRecord = {
      ...job,
      version: 1,
      updatedAt: job.createdAt,
      nextRunAt: next?.scheduledFor ?? null,
      nextDueAt: next?.dueAt ?? null,
    };
    return { status: "created", job: record };
  }

  /**
   * A new one-off's execution (store.ts NewJob.execution), from the values in
   * hand: the same row insertExecutions would copy from the job, without its
   * JSON batch and join (they cost a create about 8 µs a job).
   */
  private insertOneOffExecution(
    job: NewJob["job"],
    at: NextOccurrence,
    w: { pool: string; target: string; payload: string | null; traceParent: string | null; now: number; nodeId: string },
  ): void {
    this.q(
      `INSERT INTO executions (id, tenant_id, job_id, pool, name, scheduled_for, priority, state, max_attempts,
           backoff_seconds, max_backoff_seconds, retry_deadline_seconds, timeout_ms, ready_at, payload, target, dispatched_at, dispatched_by,
           trace_parent)
         VALUES (?, ?, ?, ?, ?, ?, ?, '${NOT_STARTED.waiting}', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      executionIdFor(job.jobId, at.scheduledFor),
      job.tenantId,
      job.jobId,
      w.pool,
      job.name,
      at.scheduledFor,
      job.priority,
      job.retry.maxAttempts,
      job.retry.backoffSeconds,
      job.retry.maxBackoffSeconds,
      job.retry.deadlineSeconds ?? null,
      Math.round(job.timeoutSeconds * 1000),
      at.dueAt,
      w.payload,
      w.target,
      w.now,
      w.nodeId,
      w.traceParent,
    );
  }

  private replaceDue(jobId: string, tenantId: string, shard: number, due: NextOccurrence | null | "keep"): void {
    if (due === null) this.q("DELETE FROM due WHERE job_id = ?").run(jobId);
    else if (due !== "keep") this.putDue(jobId, tenantId, shard, due);
  }

  private putDue(jobId: string, tenantId: string, shard: number, due: NextOccurrence): void {
    this.q("INSERT OR REPLACE INTO due (job_id, tenant_id, shard, scheduled_for, due_at) VALUES (?, ?, ?, ?, ?)").run(
      jobId,
      tenantId,
      shard,
      due.scheduledFor,
      due.dueAt,
    );
  }

  private getJob(tenantId: string, jobId: string): JobRecord | null {
    const row = this.q(`${JOB_WITH_NEXT} WHERE j.id = ? AND j.tenant_id = ?`).get(jobId, tenantId) as Row | undefined;
    return row ? toJob(row) : null;
  }

  async jobGet({ tenantId, jobId }: { tenantId: string; jobId: string }): Promise<JobRecord | null> {
    return this.getJob(tenantId, jobId);
  }

  async jobList(p: StoreParams<"jobList">): Promise<JobRecord[]> {
    const where = ["j.tenant_id = @tenant"];
    if (p.state) where.push("j.state = @state");
    if (p.name) where.push("j.name = @name");
    if (p.pool) where.push("j.pool = @pool");
    if (p.kind) where.push(KIND_FILTER[p.kind]);
    if (p.after) where.push("(j.created_at < @afterCreated OR (j.created_at = @afterCreated AND j.id < @afterId))");
    const rows = this.q(`${JOB_WITH_NEXT} WHERE ${where.join(" AND ")} ORDER BY j.created_at DESC, j.id DESC LIMIT @limit`).all({
      tenant: p.tenantId,
      state: p.state ?? null,
      name: p.name ?? null,
      pool: p.pool ?? null,
      afterCreated: p.after?.createdAt ?? null,
      afterId: p.after?.jobId ?? null,
      limit: p.limit,
    }) as Row[];
    return rows.map(toJob);
  }

  async jobTransition(p: StoreParams<"jobTransition">): Promise<JobRecord | null> {
    return this.tx(() => {
      const row = this.q(
        `UPDATE jobs SET state = ?, version = version + 1, updated_at = ?
         WHERE id = ? AND tenant_id = ? AND version = ? RETURNING shard`,
      ).get(p.state, p.now, p.jobId, p.tenantId, p.fromVersion) as { shard: number } | undefined;
      if (!row) return null;
      this.replaceDue(p.jobId, p.tenantId, row.shard, p.due);
      if (p.cancelExecutions) this.cancelInFlight(p.jobId, p.now, null);
      if (p.pending) this.changePending(p.jobId, p.pending);
      return this.getJob(p.tenantId, p.jobId);
    });
  }

  /** Holds or releases a one-off's pending execution: each a compare-and-set on its state. */
  private changePending(jobId: string, change: PendingChange): void {
    if ("hold" in change) {
      this.q(`UPDATE executions SET state = @held WHERE id = @id AND state = @waiting AND attempt = @attempt`).run({
        ...NOT_STARTED,
        id: executionIdFor(jobId, change.hold),
      });
      return;
    }
    this.q(`UPDATE executions SET state = @waiting, ready_at = @readyAt WHERE id = @id AND state = @held`).run({
      held: NOT_STARTED.held,
      waiting: NOT_STARTED.waiting,
      id: executionIdFor(jobId, change.release.scheduledFor),
      readyAt: change.release.readyAt,
    });
  }

  /**
   * Replaces a one-off's pending execution (store.ts PendingReplace): removing
   * the old one while it has not started is the compare-and-set; the new one
   * is built from the job as it now is, held when the job is paused.
   */
  private replacePending(jobId: string, jobState: JobState, r: PendingReplace, now: number, nodeId: string): void {
    if (r.from !== null) {
      const removed = this.q(`DELETE FROM executions WHERE id = ? AND ${notStarted()}`).run(executionIdFor(jobId, r.from));
      if (removed.changes === 0) return;
    }
    if (r.to) this.insertExecutions([pendingRow(jobId, r.to, jobState === "PAUSED")], now, nodeId, { anyJobState: true });
  }

  async jobUpdate(p: StoreParams<"jobUpdate">): Promise<JobRecord | null> {
    return this.tx(() => {
      const f = p.fields;
      const row = this.q(
        `UPDATE jobs SET kind = @kind, name = @name, target = @target, pool = @pool, payload = @payload, schedule = @schedule,
           retry = @retry, timeout_seconds = @timeout, priority = @priority, mode = @mode, version = version + 1, updated_at = @now
         WHERE id = @id AND tenant_id = @tenant AND version = @version RETURNING shard, state`,
      ).get({
        kind: f.kind,
        name: f.name,
        target: json(f.target),
        pool: poolOf(f.target),
        payload: json(f.payload),
        schedule: json(f.schedule),
        retry: json(f.retry),
        timeout: f.timeoutSeconds,
        priority: f.priority,
        mode: f.mode,
        now: p.now,
        id: p.jobId,
        tenant: p.tenantId,
        version: p.fromVersion,
      }) as { shard: number; state: JobState } | undefined;
      if (!row) return null;
      this.replaceDue(p.jobId, p.tenantId, row.shard, p.due);
      if (p.pending) this.replacePending(p.jobId, row.state, p.pending, p.now, p.nodeId);
      return this.getJob(p.tenantId, p.jobId);
    });
  }

  // ---- due index and dispatch ----------------------------------------------

  async dueLoad({ shards, before, limit }: { shards: readonly number[]; before: number; limit: number }): Promise<LoadedDueEntry[]> {
    if (shards.length === 0) return [];
    const cols = DUE_COLUMNS;
    const rows = (
      shards.length === SHARD_COUNT
        ? this.q(
            `SELECT ${cols} FROM due d JOIN jobs j ON j.id = d.job_id
             WHERE d.due_at <= ? ORDER BY d.due_at LIMIT ?`,
          ).all(before, limit)
        : this.q(
            `SELECT ${cols} FROM due d INDEXED BY due_by_time JOIN jobs j ON j.id = d.job_id
             WHERE d.due_at <= ? AND d.shard IN (SELECT value FROM json_each(?)) ORDER BY d.due_at LIMIT ?`,
          ).all(before, JSON.stringify(shards), limit)
    ) as Row[];
    return rows.map((r) => toLoadedDue(r, parse));
  }

  async dueGet({ jobIds }: { jobIds: readonly string[] }): Promise<LoadedDueEntry[]> {
    if (jobIds.length === 0) return [];
    const rows = this.q(`SELECT ${DUE_COLUMNS} FROM due d JOIN jobs j ON j.id = d.job_id WHERE d.job_id IN (SELECT value FROM json_each(?))`).all(
      JSON.stringify(jobIds),
    ) as Row[];
    return rows.map((r) => toLoadedDue(r, parse));
  }

  async dueRefs({ jobIds }: { jobIds: readonly string[] }): Promise<DueRef[]> {
    if (jobIds.length === 0) return [];
    const rows = this.q(`SELECT ${DUE_REF_COLUMNS} FROM due WHERE job_id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(jobIds)) as Row[];
    return rows.map(toDueRef);
  }

  async dueScan({ shard, after, limit }: { shard: number; after: string; limit: number }): Promise<DueRef[]> {
    const rows = this.q(`SELECT ${DUE_REF_COLUMNS} FROM due INDEXED BY due_by_shard WHERE shard = ? AND job_id > ? ORDER BY job_id LIMIT ?`).all(
      shard,
      after,
      limit,
    ) as Row[];
    return rows.map(toDueRef);
  }

  async dispatchMany(p: { nodeId: string; epochs: ReadonlyMap<number, number>; now: number; items: DispatchItem[] }) {
    return this.tx(() => {
      const stale: string[] = [];
      const fenced: string[] = [];
      const rows: NewExecution[] = [];
      const finished: string[] = [];
      const held = this.heldShards(p.nodeId, p.epochs, p.items);
      const consumed = this.consumeDue(p.items.filter((i) => held.has(i.entry.shard)));
      for (const item of p.items) {
        const { entry } = item;
        if (!consumed.has(entry.jobId)) {
          // Only to say why nothing was written: the shard moved (fenced), else the entry did (stale).
          (held.has(entry.shard) ? stale : fenced).push(entry.jobId);
          continue;
        }
        for (const s of item.skipped ?? []) rows.push(skippedRow(entry.jobId, s.scheduledFor, s.reason));
        const run = item.run === undefined ? entry.scheduledFor : item.run;
        if (run !== null) rows.push(this.runRow(entry, run, item.overlap ?? "allow", p.now));
        if (item.completeJob) finished.push(entry.jobId);
      }
      const inserted = this.insertExecutions(rows, p.now, p.nodeId);
      // A run that waited for its job to be idle and found it busy is recorded SKIPPED instead.
      const ids = new Set(inserted.map((r) => r.executionId));
      const busy = rows.filter((r) => r[6] === 1 && !ids.has(r[0])).map((r) => skippedRow(r[1], r[2], "overlap"));
      this.insertExecutions(busy, p.now, p.nodeId);
      this.changeJobs(
        finished.map((jobId) => ({ jobId, change: LAST_DISPATCH_JOB_CHANGE })),
        p.now,
      );
      const dispatched = inserted.filter((r) => r.state === "READY").map(({ state: _, dryRun: _d, ...r }) => r);
      const wouldRun = inserted.filter((r) => r.dryRun).map(({ state: _, dryRun: _d, ...r }) => r);
      return { dispatched, wouldRun, stale, fenced };
    });
  }

  /** The items' shards this node holds at the epoch it names (the dispatch's fence; one read for the batch). */
  private heldShards(nodeId: string, epochs: ReadonlyMap<number, number>, items: DispatchItem[]): Set<number> {
    const shards = [...new Set(items.map((i) => i.entry.shard))];
    const owned = this.q("SELECT shard, epoch FROM shards WHERE owner = @node AND shard IN (SELECT value FROM json_each(@shards))").all({
      node: nodeId,
      shards: JSON.stringify(shards),
    }) as { shard: number; epoch: number }[];
    return new Set(owned.filter((r) => epochs.get(r.shard) === r.epoch).map((r) => r.shard));
  }

  /**
   * Consumes the items' due entries, the dispatch's compare-and-set: an
   * entry moves to its next occurrence (or goes, with none) only if it still
   * names this one. Two statements for the batch, not one per item. Answers
   * the jobs whose entry was consumed.
   */
  private consumeDue(items: DispatchItem[]): Set<string> {
    const moving = items.filter((i) => i.next).map((i) => [i.entry.jobId, i.entry.scheduledFor, i.next!.scheduledFor, i.next!.dueAt]);
    const ending = items.filter((i) => !i.next).map((i) => [i.entry.jobId, i.entry.scheduledFor]);
    const moved = moving.length
      ? (this.q(
          `UPDATE due SET scheduled_for = x.value ->> 2, due_at = x.value ->> 3 FROM json_each(@items) x
           WHERE due.job_id = x.value ->> 0 AND due.scheduled_for = x.value ->> 1 RETURNING due.job_id AS job_id`,
        ).all({ items: JSON.stringify(moving) }) as { job_id: string }[])
      : [];
    const ended = ending.length
      ? (this.q(
          `DELETE FROM due WHERE (job_id, scheduled_for) IN (SELECT x.value ->> 0, x.value ->> 1 FROM json_each(@items) x) RETURNING job_id`,
        ).all({ items: JSON.stringify(ending) }) as { job_id: string }[])
      : [];
    return new Set([...moved, ...ended].map((r) => r.job_id));
  }

  /**
   * The execution of an occurrence that runs now, as core/misfire.ts
   * overlapAction says for a job with an execution in flight. No read decides
   * whether one is: "replace" cancels whatever is in flight (none: nothing
   * changes), "skip" inserts the run only where the insert finds none.
   */
  private runRow(entry: DueEntry, run: number, overlap: Overlap, now: number): NewExecution {
    const action = overlapAction(overlap, true);
    if (action === "replace") this.cancelInFlight(entry.jobId, now, REPLACED_ERROR);
    return [executionIdFor(entry.jobId, run), entry.jobId, run, Math.min(entry.dueAt, now), "READY", null, action === "skip" ? 1 : 0];
  }

  /** Cancels a job's in-flight executions as core/states.ts inFlightOnCancel says: ends some (with error, if given), asks others to stop. */
  private cancelInFlight(jobId: string, now: number, error: ErrorRecord | null): void {
    const [from, to] = jobRange(jobId);
    const states = (effect: "end" | "ask_to_stop") => JSON.stringify(inFlightOnCancel(effect));
    this.q(
      `UPDATE executions SET state = 'CANCELLED', finished_at = @now, last_error = coalesce(@error, last_error)
       WHERE id > @from AND id < @to AND state IN (SELECT value FROM json_each(@states))`,
    ).run({ now, error: json(error ?? undefined), from, to, states: states("end") });
    this.q("UPDATE executions SET cancel_requested = 1 WHERE id > @from AND id < @to AND state IN (SELECT value FROM json_each(@states))").run({
      from,
      to,
      states: states("ask_to_stop"),
    });
  }

  /**
   * One INSERT for a batch of executions; one that exists already is left
   * alone, and so is a whenIdle one whose job has an execution in flight
   * (checked in the statement). Without a tenant (dispatch), only jobs in
   * core/states.ts DISPATCHING_STATES get executions; with one (trigger,
   * backfill), any state of that tenant's job does; with anyJobState (a
   * one-off's own execution, written with its job), any job. A READY row
   * of a job in dry run is written SKIPPED (reason dry_run), the job's mode
   * read by this statement (store.ts dispatchMany). Answers those inserted.
   */
  private insertExecutions(rows: NewExecution[], now: number, nodeId: string, only: { tenantId?: string; anyJobState?: boolean } = {}) {
    if (rows.length === 0) return [];
    const inserted = this.q(
      `INSERT INTO executions (id, tenant_id, job_id, pool, name, scheduled_for, priority, state, max_attempts,
           backoff_seconds, max_backoff_seconds, retry_deadline_seconds, timeout_ms, ready_at, payload, target, dispatched_at, dispatched_by,
           last_error, finished_at, trace_parent)
         SELECT x.value ->> 0, j.tenant_id, j.id, j.pool, j.name, x.value ->> 2, j.priority, CASE WHEN ${DRY_RUN} THEN 'SKIPPED' ELSE x.value ->> 4 END,
           j.retry ->> '$.maxAttempts', j.retry ->> '$.backoffSeconds', j.retry ->> '$.maxBackoffSeconds', j.retry ->> '$.deadlineSeconds',
           CAST(round(j.timeout_seconds * 1000) AS INTEGER), x.value ->> 3, j.payload, j.target, @now, @node,
           CASE WHEN ${DRY_RUN} THEN @dryRun ELSE x.value ->> 5 END, CASE WHEN ${DRY_RUN} OR x.value ->> 4 = 'SKIPPED' THEN @now END, j.trace_parent
         FROM json_each(@items) x JOIN jobs j ON j.id = x.value ->> 1
         WHERE (@any = 1 OR (@tenant IS NULL AND j.state IN (SELECT value FROM json_each(@dispatching))) OR j.tenant_id = @tenant)
           AND (coalesce(x.value ->> 6, 0) = 0 OR NOT EXISTS (
             SELECT 1 FROM executions f WHERE f.id > j.id || '-' AND f.id < j.id || '.'
               AND f.state IN (SELECT value FROM json_each(@inFlight))))
         ON CONFLICT (id) DO NOTHING
         RETURNING id, job_id, tenant_id, pool, state, priority, ready_at, last_error ->> '$.reason' = 'dry_run' AS dry_run`,
    ).all({
      items: JSON.stringify(rows),
      dryRun: DRY_RUN_ERROR,
      now,
      node: nodeId,
      tenant: only.tenantId ?? null,
      any: only.anyJobState ? 1 : 0,
      dispatching: JSON.stringify(DISPATCHING_STATES),
      inFlight: JSON.stringify(IN_FLIGHT_STATES),
    }) as Row[];
    this.readyInserted(inserted.filter((r) => r.state === "READY"));
    return inserted.map((r) => ({
      jobId: r.job_id as string,
      executionId: r.id as string,
      tenantId: r.tenant_id as string,
      pool: r.pool as string,
      state: r.state as string,
      dryRun: r.dry_run === 1,
    }));
  }

  /**
   * New READY executions: their lanes wake by the earliest (a lane that sleeps
   * past it, or is new), and the ready counters grow; one statement each for
   * the batch (the update and delete triggers keep both for every later change).
   */
  private readyInserted(rows: Row[]): void {
    if (rows.length === 0) return;
    const input = JSON.stringify(rows.map((r) => [r.pool, r.tenant_id, r.priority, r.ready_at]));
    this.q(
      `INSERT INTO lanes (pool, tenant_id, idle_until)
         SELECT value ->> 0, value ->> 1, min(value ->> 3) FROM json_each(@input) GROUP BY 1, 2
       ON CONFLICT (pool, tenant_id) DO UPDATE SET idle_until = excluded.idle_until WHERE lanes.idle_until > excluded.idle_until`,
    ).run({ input });
    this.q(
      `INSERT INTO ready_counts (tenant_id, pool, priority, hour, n)
         SELECT value ->> 1, value ->> 0, value ->> 2, CAST(coalesce(value ->> 3, 0) / 3600000 AS INTEGER), count(*) FROM json_each(@input) GROUP BY 1, 2, 3, 4
       ON CONFLICT (tenant_id, pool, priority, hour) DO UPDATE SET n = n + excluded.n`,
    ).run({ input });
  }

  // ---- executions --------------------------------------------------------------

  async executionCreateMany(p: {
    tenantId: string;
    jobId: string;
    nodeId: string;
    now: number;
    items: { scheduledFor: number; readyAt: number }[];
  }): Promise<(AttemptRow | null)[]> {
    return this.tx(() => {
      const rows: NewExecution[] = p.items.map((i) => [executionIdFor(p.jobId, i.scheduledFor), p.jobId, i.scheduledFor, i.readyAt, "READY", null]);
      const created = new Set(this.insertExecutions(rows, p.now, p.nodeId, { tenantId: p.tenantId }).map((r) => r.executionId));
      return rows.map(([id]) => (created.has(id) ? this.attemptZero(id) : null));
    });
  }

  async executionsInWindow(p: { tenantId: string; jobId: string; from: number; to: number }): Promise<AttemptRow[]> {
    const rows = this.q(`SELECT * FROM executions WHERE ${OF_JOB} AND tenant_id = ? AND scheduled_for BETWEEN ? AND ? ORDER BY scheduled_for`).all(
      ...jobRange(p.jobId),
      p.tenantId,
      p.from,
      p.to,
    ) as Row[];
    return rows.map((e) => historyRow({ ...e, error: e.last_error, result: null }));
  }

  /** An execution as it waits for its next attempt (trigger, backfill, replay). */
  private attemptZero(executionId: string): AttemptRow {
    const e = this.q("SELECT * FROM executions WHERE id = ?").get(executionId) as Row;
    return historyRow({ ...e, started_at: null, finished_at: null, error: null, worker_id: null, result: null });
  }

  async executionLease(p: LeaseParams): Promise<LeasedRow[]> {
    const now = leaseNow(p.now);
    const incarnation = this.leaseIncarnation();
    return this.transition(() => this.leaseRows(p, now, incarnation));
  }

  async executionAckAndLease(p: LeaseParams & { complete: CompleteInput[]; fail: FailInput[] }) {
    const now = leaseNow(p.now);
    const incarnation = this.leaseIncarnation();
    return this.transition(() => ({
      completed: this.completeItems(p.complete, now),
      failed: this.failItems(p.fail, now),
      leased: this.leaseRows(p, now, incarnation),
    }));
  }

  /**
   * Grants up to max READY executions due by now. The pool's READY rows
   * include every one-off not yet due, so the pick never walks them: it
   * visits the priority levels that hold READY rows, highest first, and in
   * each reads the index range up to now, earliest first.
   */
  private leaseRows(p: LeaseParams, now: number, incarnation: number): LeasedRow[] {
    const gates = new Map<string, TenantGate>();
    const gate = (tenantId: string): TenantGate => {
      let g = gates.get(tenantId);
      if (!g) gates.set(tenantId, (g = this.gateOf(tenantId, now)));
      return g;
    };
    const fair = p.tenantId === undefined ? this.fairShares(p.pool, now, p.max, gate) : undefined;
    const ids = fair
      ? fair.ids
      : this.dueIds({ pool: p.pool, tenantId: p.tenantId as string }, now, Math.min(p.max, gate(p.tenantId as string).left));
    // The grant reads each lane's throttled_since as the lease found it: the wait the rate imposed on each attempt.
    const rows =
      ids.length === 0
        ? []
        : (this.q(
            `UPDATE executions SET state = 'RUNNING', attempt = attempt + 1, lease_incarnation = @incarnation, worker_id = @worker, cancel_requested = 0, started_at = @now,
               deadline = @now + timeout_ms + @grace, lease_ms = @leaseMs,
               lease_until = min(@now + @leaseMs, @now + timeout_ms + @grace),
               throttled_ms = (SELECT max(0, @now - max(executions.ready_at, l.throttled_since)) FROM lanes l
                               WHERE l.pool = executions.pool AND l.tenant_id = executions.tenant_id)
             WHERE id IN (SELECT value FROM json_each(@ids))
             RETURNING id, tenant_id, job_id, name, attempt, attempt_base, lease_incarnation, payload, scheduled_for, lease_until, timeout_ms, target,
               priority, ready_at, trace_parent`,
          ).all({ ids: JSON.stringify(ids), now, worker: p.workerId, leaseMs: p.leaseMs, grace: p.graceMs ?? 0, incarnation }) as Row[]);
    // After the grant: a lane's next READY row is one not granted now.
    const wakes = this.chargeRates(p.pool, gates, rows, now);
    if (fair) this.settleLanes(p.pool, fair.lanes, wakes);
    return toLeasedRows(rows, p.pool, parse);
  }

  async executionTraceParents(p: { executionIds: readonly string[] }): Promise<Map<string, string>> {
    if (p.executionIds.length === 0) return new Map();
    const rows = this.q("SELECT id, trace_parent FROM executions WHERE id IN (SELECT value FROM json_each(?)) AND trace_parent IS NOT NULL").all(
      JSON.stringify(p.executionIds),
    ) as { id: string; trace_parent: string }[];
    return new Map(rows.map((r) => [r.id, r.trace_parent]));
  }

  /** Up to max READY executions of one tenant's pool due by now, highest priority first, then earliest; `skip` are passed over. */
  private dueIds(p: { pool: string; tenantId: string }, now: number, max: number, skip?: ReadonlySet<string>): string[] {
    const scope = readyScope(p);
    const ids: string[] = [];
    for (const priority of this.priorityLevels(scope, p)) {
      if (ids.length >= max) break;
      const rows = this.q(`SELECT id FROM ${scope} AND state = 'READY' AND priority = @priority AND ready_at <= @now ORDER BY ready_at LIMIT @n`).all(
        { ...scopeParams(p), priority, now, n: max - ids.length + (skip?.size ?? 0) },
      ) as { id: string }[];
      for (const r of rows) if (ids.length < max && !skip?.has(r.id)) ids.push(r.id);
    }
    return ids;
  }

  /**
   * A cross-tenant lease's picks: weighted fair queueing over the pool's
   * lanes (core/fair-share.ts). Lanes come in vtime order, a few at a time;
   * a lane whose rows run out leaves the batch, and the next lane comes in.
   * Cost: a seek per lane served, never a walk over every tenant.
   */
  private fairShares(pool: string, now: number, max: number, gate: (tenantId: string) => TenantGate): { ids: string[]; lanes: LaneGrant[] } {
    this.wakeLanes(pool, now);
    const next = this.q(
      `SELECT l.tenant_id, l.vtime, coalesce(t.weight, 1) AS weight FROM lanes l LEFT JOIN tenants t USING (tenant_id)
       WHERE l.pool = @pool AND l.idle_until IS NULL AND (l.vtime, l.tenant_id) > (@vtime, @tenant)
       ORDER BY l.vtime, l.tenant_id LIMIT @k`,
    );
    let after = { vtime: -Infinity, tenant: "" };
    const more = (k: number): Lane[] => {
      const rows = next.all({ pool, vtime: after.vtime, tenant: after.tenant, k }) as { tenant_id: string; vtime: number; weight: number }[];
      const last = rows.at(-1);
      if (last) after = { vtime: last.vtime, tenant: last.tenant_id };
      return rows.map((r) => ({ tenantId: r.tenant_id, vtime: r.vtime, weight: r.weight }));
    };
    const taken = new Set<string>();
    return fairPick(max, more, (lane, n) => {
      const g = gate(lane.tenantId);
      const ids = this.dueIds({ pool, tenantId: lane.tenantId }, now, Math.min(n, g.left), taken);
      for (const id of ids) taken.add(id);
      g.left -= ids.length;
      return ids;
    });
  }

  /**
   * What a tenant may still be granted in this lease: its maxLeasedAttempts
   * less its RUNNING attempts, and what its dispatch rate allows now
   * (Infinity for either without a limit).
   */
  private gateOf(tenantId: string, now: number): TenantGate {
    const row = this.q(
      "SELECT max_leased_attempts AS cap, dispatch_rate_per_second AS rate, dispatch_tat AS tat FROM tenants WHERE tenant_id = ?",
    ).get(tenantId) as { cap: number | null; rate: number | null; tat: number | null } | undefined;
    let left = Number.POSITIVE_INFINITY;
    if (row?.cap != null) {
      const running = this.q("SELECT count(*) AS n FROM executions WHERE tenant_id = ? AND state = 'RUNNING'").get(tenantId) as { n: number };
      left = Math.max(0, row.cap - running.n);
    }
    const rate = row?.rate ?? null;
    const byRate = dispatchAllowance(rate, row?.tat ?? null, now);
    return { left: Math.min(left, byRate), rate, byRate, tat: row?.tat ?? null };
  }

  /**
   * Charges each rate-limited tenant's grants to its dispatch rate, and marks
   * its lane throttled while the rate leaves due work waiting (unmarked once
   * it does not). Answers when each throttled lane may be served again.
   */
  private chargeRates(pool: string, gates: ReadonlyMap<string, TenantGate>, granted: readonly Row[], now: number): Map<string, number> {
    const wakes = new Map<string, number>();
    for (const [tenantId, g] of gates) {
      if (g.rate === null) continue;
      const n = granted.filter((r) => r.tenant_id === tenantId).length;
      const tat = n > 0 ? chargeDispatch(g.rate, g.tat, now, n) : g.tat;
      if (n > 0) this.q("UPDATE tenants SET dispatch_tat = @tat WHERE tenant_id = @tenant").run({ tenant: tenantId, tat });
      const next = g.byRate - n < 1 ? this.nextReadyAt({ pool, tenantId }) : null;
      if (next !== null && next <= now) {
        this.q("UPDATE lanes SET throttled_since = coalesce(throttled_since, @now) WHERE pool = @pool AND tenant_id = @tenant").run({
          pool,
          tenant: tenantId,
          now,
        });
        wakes.set(tenantId, nextDispatchAt(g.rate, tat, now));
      } else {
        this.q("UPDATE lanes SET throttled_since = NULL WHERE pool = @pool AND tenant_id = @tenant AND throttled_since IS NOT NULL").run({
          pool,
          tenant: tenantId,
        });
      }
    }
    return wakes;
  }

  /**
   * Lanes whose first READY row is due by now rejoin the rotation, at the
   * vtime of the lanes in it (no credit for the time they had no work).
   */
  private wakeLanes(pool: string, now: number): void {
    const floor = this.q(
      `SELECT coalesce((SELECT min(vtime) FROM lanes WHERE pool = @pool AND idle_until IS NULL),
                       (SELECT max(vtime) FROM lanes WHERE pool = @pool), 0) AS floor`,
    ).get({ pool }) as { floor: number };
    this.q("UPDATE lanes SET idle_until = NULL, vtime = max(vtime, @floor) WHERE pool = @pool AND idle_until <= @now").run({
      pool,
      now,
      floor: floor.floor,
    });
  }

  /**
   * Charges each lane its grants; a lane that ran out sleeps until its next
   * READY row is due, or a throttled one until its rate allows (`wakes`).
   */
  private settleLanes(pool: string, lanes: readonly LaneGrant[], wakes: ReadonlyMap<string, number>): void {
    for (const lane of lanes) {
      if (lane.granted > 0)
        this.q("UPDATE lanes SET vtime = @vtime WHERE pool = @pool AND tenant_id = @tenant").run({ pool, tenant: lane.tenantId, vtime: lane.vtime });
      if (!lane.exhausted) continue;
      const next = wakes.get(lane.tenantId) ?? this.nextReadyAt({ pool, tenantId: lane.tenantId });
      this.q("UPDATE lanes SET idle_until = @until WHERE pool = @pool AND tenant_id = @tenant").run({
        pool,
        tenant: lane.tenantId,
        until: next ?? NO_WORK,
      });
    }
  }

  /** The priorities that hold READY executions in scope, highest first: one index seek each. */
  private *priorityLevels(scope: string, p: { pool: string; tenantId?: string }): Generator<number> {
    const below = this.q(`SELECT priority FROM ${scope} AND state = 'READY' AND priority < @below ORDER BY priority DESC LIMIT 1`);
    for (let level = below.get({ ...scopeParams(p), below: Infinity }) as { priority: number } | undefined; level; ) {
      yield level.priority;
      level = below.get({ ...scopeParams(p), below: level.priority }) as { priority: number } | undefined;
    }
  }

  async executionNextReady(p: { pool: string; tenantId?: string }): Promise<number | null> {
    return this.nextReadyAt(p);
  }

  private nextReadyAt(p: { pool: string; tenantId?: string }): number | null {
    const scope = readyScope(p);
    const first = this.q(`SELECT ready_at FROM ${scope} AND state = 'READY' AND priority = @priority ORDER BY ready_at LIMIT 1`);
    let next: number | null = null;
    for (const priority of this.priorityLevels(scope, p)) {
      const { ready_at: at } = first.get({ ...scopeParams(p), priority }) as { ready_at: number };
      if (next === null || at < next) next = at;
    }
    return next;
  }

  async executionHeartbeat(p: StoreParams<"executionHeartbeat">) {
    const now = leaseNow(p.now);
    return this.transition(() => {
      const row = this.q(
        `UPDATE executions SET lease_until = min(@now + coalesce(@leaseMs, lease_ms), deadline)
         WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant) AND attempt = @attempt AND ${tokenHeld()} AND ${LEASE_HELD}
         RETURNING lease_until, cancel_requested`,
      ).get({ id: p.executionId, tenant: p.tenantId, attempt: p.attempt, token: incarnationOf(p.leaseToken), now, leaseMs: p.leaseMs ?? null }) as
        | Row
        | undefined;
      if (row) return { status: "ok" as const, leaseUntil: row.lease_until as number, cancelRequested: row.cancel_requested === 1 };
      return this.lostOrNotFound(p, now);
    });
  }

  /**
   * The answer to a call whose attempt does not hold its lease: not_found, or
   * lost, recording the possible duplicate when the attempt was granted and
   * is later than the one recorded (a compare-and-set in the UPDATE).
   */
  private lostOrNotFound(
    item: { executionId: string; tenantId: string | null; attempt: number; leaseToken?: string },
    now: number,
  ): { status: "lost"; possibleDuplicate?: PossibleDuplicateMark } | { status: "not_found" } {
    // A token that is not the grant's: the attempt was granted in an earlier incarnation, lost, and granted again.
    const marked = this.q(
      `UPDATE executions SET dup_attempt = @attempt, dup_reason = 'lease_lost', dup_at = @now
       WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant) AND @attempt >= 1
         AND (attempt > @attempt OR (attempt = @attempt AND state = 'RUNNING' AND lease_until < @now)
              OR (attempt = @attempt AND NOT ${tokenHeld()}))
         AND (dup_attempt IS NULL OR dup_attempt < @attempt)
       RETURNING tenant_id`,
    ).get({ id: item.executionId, tenant: item.tenantId, attempt: item.attempt, token: incarnationOf(item.leaseToken), now }) as Row | undefined;
    if (marked) return { status: "lost", possibleDuplicate: { tenantId: marked.tenant_id as string, attempt: item.attempt, reason: "lease_lost" } };
    return this.exists(item.tenantId, item.executionId) ? { status: "lost" } : { status: "not_found" };
  }

  async executionPossibleDuplicates(p: StoreParams<"executionPossibleDuplicates">): Promise<PossibleDuplicateRow[]> {
    const cursor = p.after ? "AND (dup_at < @at OR (dup_at = @at AND id < @id))" : "";
    const found = this.q(
      `SELECT id, tenant_id, job_id, name, pool, scheduled_for, state, attempt, dup_attempt, dup_reason, dup_at FROM executions
       WHERE tenant_id = @tenant AND dup_at IS NOT NULL ${cursor} ORDER BY dup_at DESC, id DESC LIMIT @limit`,
    ).all({ tenant: p.tenantId, at: p.after?.at ?? null, id: p.after?.executionId ?? null, limit: p.limit }) as Row[];
    return found.map(toPossibleDuplicate);
  }

  /** Whether the execution exists (as the tenant's, unless tenantId is null). */
  private exists(tenantId: string | null, executionId: string): boolean {
    return (
      this.q("SELECT 1 FROM executions WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant)").get({ id: executionId, tenant: tenantId }) !==
      undefined
    );
  }

  async executionCompleteMany(p: { items: CompleteInput[]; now?: number }): Promise<AckOutcome[]> {
    const now = leaseNow(p.now);
    return this.transition(() => this.completeItems(p.items, now));
  }

  /**
   * Set-based: one UPDATE … FROM json_each succeeds every item that still
   * holds its lease, one UPDATE ends their one-off jobs; only the misses are
   * looked at one by one.
   */
  private completeItems(items: CompleteInput[], now: number): AckOutcome[] {
    if (items.length === 0) return [];
    const input = JSON.stringify(items.map((i) => [i.executionId, i.tenantId, i.attempt, json(i.result), incarnationOf(i.leaseToken)]));
    const done = this.q(
      `UPDATE executions SET state = 'SUCCEEDED', finished_at = @now, result = x.result, lease_until = NULL,
         -- an attempt reaped for an expired lease may have run too: a possible duplicate (once)
         dup_attempt = CASE WHEN expired_attempt > coalesce(dup_attempt, 0) THEN expired_attempt ELSE dup_attempt END,
         dup_reason = CASE WHEN expired_attempt > coalesce(dup_attempt, 0) THEN 'expired_then_succeeded' ELSE dup_reason END,
         dup_at = CASE WHEN expired_attempt > coalesce(dup_attempt, 0) THEN @now ELSE dup_at END
       FROM (SELECT value ->> 0 AS id, value ->> 1 AS tenant, value ->> 2 AS attempt, value ->> 3 AS result, value ->> 4 AS token
             FROM json_each(@input)) AS x
       WHERE executions.id = x.id AND (x.tenant IS NULL OR executions.tenant_id = x.tenant) AND executions.attempt = x.attempt
         AND (x.token IS NULL OR executions.lease_incarnation = x.token)
         AND executions.state = 'RUNNING' AND executions.lease_until >= @now
       RETURNING executions.id AS id, executions.attempt AS attempt, executions.job_id AS job_id, executions.tenant_id AS tenant_id,
         executions.pool AS pool, (SELECT kind FROM jobs WHERE jobs.id = executions.job_id) AS kind,
         CASE WHEN executions.dup_reason = 'expired_then_succeeded' AND executions.dup_at = @now
           AND executions.dup_attempt = executions.expired_attempt THEN executions.dup_attempt END AS dup_new`,
    ).all({ now, input }) as {
      id: string;
      attempt: number;
      job_id: string;
      tenant_id: string;
      pool: string;
      kind: "once" | "cron";
      dup_new: number | null;
    }[];
    // The succeeding attempt stays on the execution row (history reads it there).
    this.changeJobs(
      done.map((d) => ({ jobId: d.job_id, change: jobChangeAfterExecution(d.kind, "SUCCEEDED") })),
      now,
    );
    // By execution and attempt: a batch naming one execution twice answers a stale attempt lost, not with the holder's success.
    const succeeded = new Map(done.map((d) => [`${d.id}\u0000${d.attempt}`, d]));
    const duplicates = new Map(done.flatMap((d) => (d.dup_new !== null ? [[d.id, d.dup_new] as const] : [])));
    return items.map((item): AckOutcome => {
      const row = succeeded.get(`${item.executionId}\u0000${item.attempt}`);
      const dup = duplicates.get(item.executionId);
      if (row !== undefined && dup !== undefined) duplicates.delete(item.executionId);
      if (row !== undefined) {
        const { tenant_id: tenantId, pool } = row;
        return dup !== undefined
          ? { status: "ok", state: "SUCCEEDED", pool, tenantId, possibleDuplicate: { tenantId, attempt: dup, reason: "expired_then_succeeded" } }
          : { status: "ok", state: "SUCCEEDED", pool, tenantId };
      }
      const e = this.q(
        `SELECT state, attempt, tenant_id, pool, ${tokenHeld()} AS token_held FROM executions WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant)`,
      ).get({
        id: item.executionId,
        tenant: item.tenantId,
        token: incarnationOf(item.leaseToken),
      }) as Row | undefined;
      if (!e) return { status: "not_found" };
      if (e.state === "SUCCEEDED" && e.attempt === item.attempt && e.token_held === 1)
        return { status: "ok", state: "SUCCEEDED", pool: e.pool as string, tenantId: e.tenant_id as string };
      return this.lostOrNotFound(item, now);
    });
  }

  /**
   * Records an attempt that did not succeed. The running attempt, and the one
   * that succeeded, live on the execution row (worker, start and finish
   * times), so the hot path (lease, complete) writes no attempt rows. Call it
   * before the execution row moves on.
   */
  private finishAttempt(executionId: string, attempt: number, state: string, now: number, error: ErrorRecord | null): void {
    this.q(
      `INSERT OR REPLACE INTO attempts (execution_id, attempt, state, worker_id, started_at, finished_at, error, throttled_ms)
       SELECT id, ?, ?, worker_id, started_at, ?, ?, throttled_ms FROM executions WHERE id = ?`,
    ).run(attempt, state, now, json(error ?? undefined), executionId);
  }

  /**
   * Applies core's job changes (core/states.ts JobChange), each a
   * compare-and-set on the job's state in one UPDATE; a job that moved
   * meanwhile is left alone. Null changes are skipped.
   */
  private changeJobs(items: { jobId: string; change: JobChange | null }[], now: number): void {
    const changes = items.flatMap(({ jobId, change }) => (change ? [{ jobId, ...change }] : []));
    if (changes.length === 0) return;
    const input = changes.map((c) => [c.jobId, c.from, c.to]);
    const dropDue = new Set(changes.filter((c) => c.due === "drop").map((c) => c.jobId));
    const changed = this.q(
      `UPDATE jobs SET state = x.state, version = version + 1, updated_at = @now
       FROM (SELECT value ->> 0 AS id, value ->> 1 AS from_state, value ->> 2 AS state FROM json_each(@input)) AS x
       WHERE jobs.id = x.id AND jobs.state = x.from_state
       RETURNING jobs.id AS id`,
    ).all({ now, input: JSON.stringify(input) }) as { id: string }[];
    const drop = changed.filter((c) => dropDue.has(c.id)).map((c) => c.id);
    if (drop.length === 0) return;
    this.q("DELETE FROM due WHERE job_id IN (SELECT value FROM json_each(?))").run(JSON.stringify(drop));
    this.q(
      `DELETE FROM executions WHERE id IN (
         SELECT e.id FROM json_each(?) x JOIN executions e ON e.id > x.value || '-' AND e.id < x.value || '.' WHERE ${notStarted("e.")})`,
    ).run(JSON.stringify(drop));
  }

  async executionFailMany(p: { items: FailInput[]; now?: number }): Promise<AckOutcome[]> {
    const now = leaseNow(p.now);
    return this.transition(() => this.failItems(p.items, now));
  }

  private failItems(items: FailInput[], now: number): AckOutcome[] {
    return items.map((item) => this.failOne(item, now));
  }

  private failOne(item: FailInput, now: number): AckOutcome {
    const failure = { errorClass: item.error.class ?? "transient", retryAfterSeconds: item.error.retryAfterSeconds };
    // Decide on the row as read, then write only if the attempt still holds
    // its lease and the facts decided on still hold; a cancel that landed in
    // between (another handle) is the one fact that can move: decide again.
    for (;;) {
      const e = this.q(
        `SELECT ${ENDING_ROW} WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant) AND attempt = @attempt AND ${tokenHeld()} AND ${LEASE_HELD}`,
      ).get({
        id: item.executionId,
        tenant: item.tenantId,
        attempt: item.attempt,
        token: incarnationOf(item.leaseToken),
        now,
      }) as Row | undefined;
      if (!e) return this.lostOrNotFound(item, now);
      const end = endFailedAttempt(attemptFacts(e), failure, now, item.jitter);
      const attemptState = end.state === "DEAD" ? "DEAD" : item.timedOut ? "TIMED_OUT" : "FAILED";
      if (!this.endAttempt(e, end, { attemptState, error: item.error, lastError: lastErrorOf(item.error, end, false), now, lease: LEASE_HELD }))
        continue;
      const pool = e.pool as string;
      const tenantId = e.tenant_id as string;
      return end.state === "READY"
        ? { status: "ok", state: "READY", readyAt: end.readyAt, pool, tenantId }
        : { status: "ok", state: end.state, pool, tenantId };
    }
  }

  /**
   * Ends the attempt the row `e` was read at, as `end` says: a compare-and-set
   * on the attempt, its lease (held, or expired for the reaper) and the facts
   * `end` was decided on. False, writing nothing, when any of them moved.
   */
  private endAttempt(
    e: Row,
    end: AttemptEnd,
    o: { attemptState: string; error: ErrorRecord; lastError: ErrorRecord; now: number; lease: typeof LEASE_HELD | typeof LEASE_EXPIRED },
  ): boolean {
    const id = e.id as string;
    const attempt = e.attempt as number;
    const ended =
      this.q(
        `UPDATE executions SET state = @state, ready_at = coalesce(@readyAt, ready_at), dead_at = @deadAt, finished_at = @finishedAt,
           last_error = @lastError, lease_until = NULL${o.lease === LEASE_EXPIRED ? ", expired_attempt = attempt" : ""}
         WHERE id = @id AND attempt = @attempt AND lease_incarnation IS @incarnation AND ${o.lease} AND attempt_base = @base
           AND cancel_requested = @cancel`,
      ).run({
        state: end.state,
        readyAt: end.state === "READY" ? end.readyAt : null,
        deadAt: end.state === "DEAD" ? o.now : null,
        finishedAt: end.state === "READY" ? null : o.now,
        lastError: json(o.lastError),
        id,
        attempt,
        incarnation: e.lease_incarnation,
        now: o.now,
        base: e.attempt_base,
        cancel: e.cancel_requested,
      }).changes === 1;
    if (!ended) return false;
    this.finishAttempt(id, attempt, o.attemptState, o.now, o.error);
    if (end.state === "DEAD")
      this.changeJobs([{ jobId: e.job_id as string, change: jobChangeAfterExecution(e.job_kind as "once" | "cron", "DEAD") }], o.now);
    return true;
  }

  async executionRelease(p: {
    items: { executionId: string; tenantId: string; attempt: number; readyAt: number }[];
    now?: number;
  }): Promise<("ok" | "lost")[]> {
    const now = leaseNow(p.now);
    // core/retry.ts endReleasedAttempt decides on one fact of the row, cancel_requested:
    // both of its answers go into the one UPDATE, which picks by the fact as it is then.
    return this.transition(() =>
      p.items.map((i) => {
        const live = endReleasedAttempt(false, i.readyAt);
        const cancelled = endReleasedAttempt(true, i.readyAt);
        const finished = (end: AttemptEnd) => (end.state === "READY" ? null : now);
        return this.q(
          `UPDATE executions SET
             state = CASE cancel_requested WHEN 1 THEN @cancelledState ELSE @liveState END,
             finished_at = CASE cancel_requested WHEN 1 THEN @cancelledFinished ELSE @liveFinished END,
             ready_at = @readyAt, lease_until = NULL, attempt_base = attempt_base + 1
           WHERE id = @id AND tenant_id = @tenant AND attempt = @attempt AND ${LEASE_HELD}`,
        ).run({
          cancelledState: cancelled.state,
          liveState: live.state,
          cancelledFinished: finished(cancelled),
          liveFinished: finished(live),
          readyAt: i.readyAt,
          id: i.executionId,
          tenant: i.tenantId,
          attempt: i.attempt,
          now,
        }).changes === 1
          ? "ok"
          : "lost";
      }),
    );
  }

  async executionReap(p: { now?: number; limit: number }) {
    const now = leaseNow(p.now);
    return this.transition(() => {
      const rows = this.q(`SELECT ${ENDING_ROW} WHERE ${LEASE_EXPIRED} ORDER BY lease_until LIMIT @limit`).all({ now, limit: p.limit }) as Row[];
      const reaped: { executionId: string; tenantId: string; pool: string; state: "READY" | "DEAD" | "CANCELLED" }[] = [];
      for (const e of rows) {
        const error = expiredAttemptError({
          leaseUntil: e.lease_until as number,
          deadline: e.deadline as number,
          timeoutMs: e.timeout_ms as number,
        });
        const end = endExpiredAttempt(attemptFacts(e), now);
        const attemptState = end.state === "DEAD" ? "DEAD" : "TIMED_OUT";
        const lastError = lastErrorOf(error, end, true);
        // A miss: the owner acknowledged, or another reaper ended it, since the read.
        if (!this.endAttempt(e, end, { attemptState, error, lastError, now, lease: LEASE_EXPIRED })) continue;
        reaped.push({ executionId: e.id as string, tenantId: e.tenant_id as string, pool: e.pool as string, state: end.state });
      }
      return reaped;
    });
  }

  async executionHistory(p: {
    tenantId: string;
    jobId: string;
    limit: number;
    after?: { scheduledFor: number; attempt: number };
  }): Promise<AttemptRow[]> {
    const cursor = p.after ? "AND (scheduled_for < @sf OR (scheduled_for = @sf AND attempt < @att))" : "";
    const rows = this.q(
      `SELECT * FROM (
         SELECT e.id, e.job_id, e.scheduled_for, a.attempt, a.state, e.ready_at, e.dispatched_at, e.dispatched_by,
                a.started_at, a.finished_at, a.error, a.worker_id, NULL AS result, a.throttled_ms
         FROM executions e JOIN attempts a ON a.execution_id = e.id
         WHERE ${OF_JOB_NAMED} AND e.tenant_id = @tenant
         UNION ALL
         SELECT e.id, e.job_id, e.scheduled_for, e.attempt, e.state, e.ready_at, e.dispatched_at, e.dispatched_by,
                e.started_at, e.finished_at, NULL, e.worker_id, e.result, e.throttled_ms
         FROM executions e WHERE ${OF_JOB_NAMED} AND e.tenant_id = @tenant AND e.state IN ('RUNNING', 'SUCCEEDED')
         UNION ALL
         SELECT e.id, e.job_id, e.scheduled_for, e.attempt, e.state, e.ready_at, e.dispatched_at, e.dispatched_by,
                NULL, e.finished_at, CASE WHEN e.state IN ('SKIPPED', 'CANCELLED') THEN e.last_error END, NULL, NULL, NULL
         FROM executions e WHERE ${OF_JOB_NAMED} AND e.tenant_id = @tenant AND (e.attempt = 0 OR (${WAITING_UNRECORDED}))
       ) WHERE 1 = 1 ${cursor}
       ORDER BY scheduled_for DESC, attempt DESC LIMIT @limit`,
    ).all({
      from: jobRange(p.jobId)[0],
      to: jobRange(p.jobId)[1],
      tenant: p.tenantId,
      sf: p.after?.scheduledFor ?? null,
      att: p.after?.attempt ?? null,
      limit: p.limit,
    }) as Row[];
    return rows.map(historyRow);
  }

  // ---- dead letters ---------------------------------------------------------------

  async deadLetterList(p: { tenantId: string; limit: number; after?: { deadAt: number; executionId: string } }): Promise<DeadLetterRow[]> {
    const cursor = p.after ? "AND (e.dead_at < @deadAt OR (e.dead_at = @deadAt AND e.id < @id))" : "";
    const rows = this.q(
      `SELECT e.* FROM executions e WHERE e.tenant_id = @tenant AND e.state = 'DEAD' ${cursor}
       ORDER BY e.dead_at DESC, e.id DESC LIMIT @limit`,
    ).all({ tenant: p.tenantId, deadAt: p.after?.deadAt ?? null, id: p.after?.executionId ?? null, limit: p.limit }) as Row[];
    return rows.map((e) => ({
      executionId: e.id as string,
      tenantId: e.tenant_id as string,
      jobId: e.job_id as string,
      name: e.name as string,
      scheduledFor: e.scheduled_for as number,
      attempts: e.attempt as number,
      lastError: parse<ErrorRecord | null>(e.last_error),
      deadAt: e.dead_at as number,
      payload: parse(e.payload),
    }));
  }

  async deadLetterReplay(p: { tenantId: string; executionId: string; now: number; audit: AuditEntry }) {
    return this.tx(() => {
      const row = this.q(
        `UPDATE executions SET state = 'READY', ready_at = ?, dead_at = NULL, finished_at = NULL, attempt_base = attempt
         WHERE id = ? AND tenant_id = ? AND state = 'DEAD' RETURNING job_id, pool`,
      ).get(p.now, p.executionId, p.tenantId) as Row | undefined;
      if (!row) return null;
      this.changeJobs([{ jobId: row.job_id as string, change: REPLAY_JOB_CHANGE }], p.now);
      this.appendAudit(p.audit);
      return { pool: row.pool as string, row: this.attemptZero(p.executionId) };
    });
  }

  // ---- bulk dead-letter replays (store/replays.ts) ------------------------------------

  async replayCreate(p: StoreParams<"replayCreate">): Promise<ReplayRecord> {
    return this.tx(() => {
      const r = p.replay;
      const total = "executionIds" in r.selection ? r.selection.executionIds.length : null;
      const row = this.q(
        `INSERT INTO dead_letter_replays (id, tenant_id, selection, rate, actor, state, total, next_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, 'RUNNING', ?, ?, ?, ?) RETURNING *`,
      ).get(r.replayId, r.tenantId, json(r.selection), r.ratePerSecond, r.actor, total, r.createdAt, r.createdAt, r.createdAt) as Row;
      this.appendAudit(p.audit);
      return toReplay(row, parse);
    });
  }

  async replayGet(p: StoreParams<"replayGet">): Promise<ReplayRecord | null> {
    const row = this.q("SELECT * FROM dead_letter_replays WHERE id = ? AND (? IS NULL OR tenant_id = ?)").get(
      p.replayId,
      p.tenantId ?? null,
      p.tenantId ?? null,
    ) as Row | undefined;
    return row ? toReplay(row, parse) : null;
  }

  async replayList(p: StoreParams<"replayList">): Promise<ReplayRecord[]> {
    const cursor = p.after ? "AND (created_at < @at OR (created_at = @at AND id < @id))" : "";
    const found = this.q(`SELECT * FROM dead_letter_replays WHERE tenant_id = @tenant ${cursor} ORDER BY created_at DESC, id DESC LIMIT @limit`).all({
      tenant: p.tenantId,
      at: p.after?.createdAt ?? null,
      id: p.after?.replayId ?? null,
      limit: p.limit,
    }) as Row[];
    return found.map((r) => toReplay(r, parse));
  }

  async replayClaim(p: StoreParams<"replayClaim">): Promise<ReplayRecord[]> {
    const now = leaseNow(p.now);
    return this.tx(() => {
      const found = this.q(
        `UPDATE dead_letter_replays SET owner = @owner, lease_until = @until
         WHERE id IN (SELECT id FROM dead_letter_replays WHERE state = 'RUNNING'
                        AND (owner IS NULL OR owner = @owner OR lease_until < @now) LIMIT @limit)
           AND state = 'RUNNING' AND (owner IS NULL OR owner = @owner OR lease_until < @now)
         RETURNING *`,
      ).all({ owner: p.owner, until: now + p.leaseMs, now, limit: p.limit }) as Row[];
      return found.map((r) => toReplay(r, parse));
    });
  }

  async replayRelease(p: StoreParams<"replayRelease">): Promise<void> {
    this.q("UPDATE dead_letter_replays SET owner = NULL, lease_until = NULL WHERE owner = @owner AND state = 'RUNNING'").run({ owner: p.owner });
  }

  async replayStep(p: StoreParams<"replayStep">) {
    const now = leaseNow(p.now);
    return this.tx(() => {
      const fenced = this.q(
        `UPDATE dead_letter_replays SET lease_until = @until
         WHERE id = @id AND owner = @owner AND state = 'RUNNING' AND lease_until >= @now RETURNING *`,
      ).get({ id: p.replayId, owner: p.owner, until: now + p.leaseMs, now }) as Row | undefined;
      if (!fenced) return null;
      const replay = toReplay(fenced, parse);
      let candidates: string[];
      let cursor: ReplayCursor | null;
      let done: boolean;
      let skipped = 0;
      const byIds = nextIds(replay, p.limit);
      if (byIds) {
        const dead = this.q("SELECT id FROM executions WHERE id = ? AND tenant_id = ? AND state = 'DEAD'");
        candidates = byIds.ids.filter((id) => dead.get(id, replay.tenantId) !== undefined);
        skipped = byIds.ids.length - candidates.length;
        ({ cursor, done } = byIds);
      } else {
        const f = (replay.selection as Extract<ReplaySelection, { filter: unknown }>).filter;
        const after = replay.cursor && "deadAt" in replay.cursor ? replay.cursor : null;
        const found = this.q(
          `SELECT id, dead_at FROM executions
           WHERE tenant_id = @tenant AND state = 'DEAD' AND dead_at <= @before AND (@afterTime IS NULL OR dead_at >= @afterTime)
             AND (@cursorAt IS NULL OR dead_at > @cursorAt OR (dead_at = @cursorAt AND id > @cursorId))
             AND (@pool IS NULL OR pool = @pool) AND (@cls IS NULL OR last_error ->> '$.class' = @cls)
           ORDER BY dead_at, id LIMIT @limit`,
        ).all({
          tenant: replay.tenantId,
          before: f.deadBefore,
          afterTime: f.deadAfter ?? null,
          cursorAt: after?.deadAt ?? null,
          cursorId: after?.executionId ?? null,
          pool: f.pool ?? null,
          cls: f.errorClass ?? null,
          limit: p.limit,
        }) as Row[];
        candidates = found.map((r) => r.id as string);
        const last = found[found.length - 1];
        cursor = last ? { deadAt: last.dead_at as number, executionId: last.id as string } : replay.cursor;
        done = found.length < p.limit;
      }
      const slots = replaySlots(replay, p.at, candidates.length);
      const revive = this.q(
        `UPDATE executions SET state = 'READY', ready_at = ?, dead_at = NULL, finished_at = NULL, attempt_base = attempt
         WHERE id = ? AND tenant_id = ? AND state = 'DEAD' RETURNING job_id, pool`,
      );
      const replayed: { executionId: string; pool: string; readyAt: number }[] = [];
      const jobs: { jobId: string; change: typeof REPLAY_JOB_CHANGE }[] = [];
      candidates.forEach((id, i) => {
        const readyAt = slots.readyAt[i]!;
        const row = revive.get(readyAt, id, replay.tenantId) as Row | undefined;
        if (!row) {
          skipped++;
          return;
        }
        replayed.push({ executionId: id, pool: row.pool as string, readyAt });
        jobs.push({ jobId: row.job_id as string, change: REPLAY_JOB_CHANGE });
      });
      this.changeJobs(jobs, p.at);
      const updated = this.q(
        `UPDATE dead_letter_replays SET replayed = replayed + @replayed, skipped = skipped + @skipped, cursor = @cursor,
           next_at = @nextAt, updated_at = @at, state = @state, finished_at = @finished,
           owner = CASE WHEN @state = 'RUNNING' THEN owner END, lease_until = CASE WHEN @state = 'RUNNING' THEN lease_until END
         WHERE id = @id RETURNING *`,
      ).get({
        id: replay.replayId,
        replayed: replayed.length,
        skipped,
        cursor: json(cursor),
        nextAt: slots.nextAt,
        at: p.at,
        state: done ? "DONE" : "RUNNING",
        finished: done ? p.at : null,
      }) as Row;
      return { replay: toReplay(updated, parse), replayed };
    });
  }

  async replayCancel(p: StoreParams<"replayCancel">) {
    return this.tx(() => {
      const changed = this.q(
        `UPDATE dead_letter_replays SET state = 'CANCELLED', finished_at = @now, updated_at = @now, owner = NULL, lease_until = NULL
         WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant) AND state = 'RUNNING' RETURNING *`,
      ).get({ id: p.replayId, tenant: p.tenantId ?? null, now: p.now }) as Row | undefined;
      if (changed) {
        this.appendAudit(p.audit);
        return { replay: toReplay(changed, parse), changed: true };
      }
      const row = this.q("SELECT * FROM dead_letter_replays WHERE id = ? AND (? IS NULL OR tenant_id = ?)").get(
        p.replayId,
        p.tenantId ?? null,
        p.tenantId ?? null,
      ) as Row | undefined;
      return row ? { replay: toReplay(row, parse), changed: false } : null;
    });
  }

  private appendAudit(a: AuditEntry): void {
    this.q("INSERT INTO audit (tenant_id, at, actor, action, subject, details) VALUES (?, ?, ?, ?, ?, ?)").run(
      a.tenantId,
      a.at,
      a.actor,
      a.action,
      a.subject,
      json(a.details),
    );
  }

  // ---- shards, stats, audit -----------------------------------------------------------

  async shardAcquire(p: { owner: string; shards: readonly number[]; leaseMs: number; now?: number }): Promise<ShardLease[]> {
    const now = leaseNow(p.now);
    return this.tx(() => {
      const until = now + p.leaseMs;
      const take = this.q(
        `INSERT INTO shards (shard, owner, epoch, lease_until) VALUES (@shard, @owner, 1, @until)
         ON CONFLICT (shard) DO UPDATE SET
           epoch = CASE WHEN shards.owner IS @owner THEN shards.epoch ELSE shards.epoch + 1 END,
           owner = @owner, lease_until = @until
         WHERE shards.owner IS @owner OR shards.owner IS NULL OR shards.lease_until < @now
         RETURNING shard, owner, epoch, lease_until`,
      );
      const held: ShardLease[] = [];
      for (const shard of p.shards) {
        const r = take.get({ shard, owner: p.owner, until, now }) as Row | undefined;
        if (r) held.push(toShard(r));
      }
      return held;
    });
  }

  async shardRelease(p: { owner: string; shards?: readonly number[] }): Promise<void> {
    releaseShards((sql) => this.q(sql), p);
  }

  async shardList(): Promise<ShardLease[]> {
    return (this.q("SELECT * FROM shards ORDER BY shard").all() as Row[]).map(toShard);
  }

  async poolCounts(p: { tenantId?: string; pool?: string; now: number }): Promise<PoolCounts[]> {
    const { hour, from } = countHour(p.now);
    const found = this.q(countsSql("ready_counts", (name) => `@${name}`)).all({
      tenant: p.tenantId ?? null,
      pool: p.pool ?? null,
      hour,
      from,
      now: p.now,
    }) as CountRow[];
    return toPoolCounts(found, p.now);
  }

  async readyUpcoming(p: { now: number; minutes: number; limit: number }): Promise<number[]> {
    const found = this.q(upcomingSql("ready_counts", (name) => `@${name}`)).all({
      now: p.now,
      ...upcomingWindow(p.now, p.minutes),
      limit: p.limit,
    }) as { minute: number; n: number }[];
    return toUpcoming(found, p.minutes);
  }

  async executionCountsFold(): Promise<void> {
    this.q("DELETE FROM ready_counts WHERE n = 0").run();
  }

  async workloadAdd(p: { records: WorkloadMinute[] }): Promise<void> {
    if (p.records.length === 0) return;
    const fields = WORKLOAD_COLUMNS.map(([c]) => `value ->> '${c}' AS ${c}`).join(", ");
    this.q(workloadUpsertSql(`(SELECT ${fields} FROM json_each(@records))`)).run({ records: workloadJson(p.records) });
  }

  async workloadMinutes(p: { tenantId?: string; from: number }): Promise<WorkloadMinute[]> {
    const found = this.q(
      "SELECT * FROM workload_minutes WHERE minute >= @from AND (@tenant IS NULL OR tenant_id = @tenant) ORDER BY minute, tenant_id, pool",
    ).all({ from: p.from, tenant: p.tenantId ?? null }) as Row[];
    return found.map(fromWorkloadRow);
  }

  async workloadPurge(p: { before: number }): Promise<number> {
    return this.q("DELETE FROM workload_minutes WHERE minute < @before").run({ before: p.before }).changes;
  }

  async auditList(p: { tenantId: string; limit: number; after?: { at: number; id: number } }) {
    const cursor = p.after ? "AND (at < @at OR (at = @at AND id < @id))" : "";
    const rows = this.q(`SELECT * FROM audit WHERE tenant_id = @tenant ${cursor} ORDER BY at DESC, id DESC LIMIT @limit`).all({
      tenant: p.tenantId,
      at: p.after?.at ?? null,
      id: p.after?.id ?? null,
      limit: p.limit,
    }) as Row[];
    return rows.map((r) => ({
      id: r.id as number,
      tenantId: r.tenant_id as string,
      at: r.at as number,
      actor: r.actor as string,
      action: r.action as string,
      subject: r.subject as string,
      details: parse(r.details),
    }));
  }

  // ---- API keys -------------------------------------------------------------------

  async apiKeyCreate(p: { id: string; tenantId: string; role: Role; digest: string; name?: string; now: number; audit?: AuditEntry }) {
    return this.tx(() => {
      const row = this.q(
        `INSERT INTO api_keys (id, tenant_id, role, digest, name, created_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT DO NOTHING RETURNING *`,
      ).get(p.id, p.tenantId, p.role, p.digest, p.name ?? null, p.now) as Row | undefined;
      if (!row) return null;
      if (p.audit) this.appendAudit(p.audit);
      return toApiKey(row);
    });
  }

  async apiKeyList(p: { tenantId?: string; limit: number; after?: { createdAt: number; id: string } }): Promise<ApiKeyRecord[]> {
    const tenant = p.tenantId !== undefined ? "tenant_id = @tenant" : "1";
    const cursor = p.after ? "AND (created_at < @createdAt OR (created_at = @createdAt AND id < @id))" : "";
    const rows = this.q(`SELECT * FROM api_keys WHERE ${tenant} ${cursor} ORDER BY created_at DESC, id DESC LIMIT @limit`).all({
      tenant: p.tenantId ?? null,
      createdAt: p.after?.createdAt ?? null,
      id: p.after?.id ?? null,
      limit: p.limit,
    }) as Row[];
    return rows.map(toApiKey);
  }

  async apiKeyRevoke(p: { id: string; tenantId?: string; now: number; audit?: Omit<AuditEntry, "tenantId"> }) {
    return this.tx(() => {
      const revoked = this.q(
        `UPDATE api_keys SET revoked_at = @now WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant) AND revoked_at IS NULL
         RETURNING *`,
      ).get({ id: p.id, tenant: p.tenantId ?? null, now: p.now }) as Row | undefined;
      if (revoked) {
        const key = toApiKey(revoked);
        if (p.audit) this.appendAudit({ ...p.audit, tenantId: key.tenantId });
        return key;
      }
      const row = this.q("SELECT * FROM api_keys WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant)").get({
        id: p.id,
        tenant: p.tenantId ?? null,
      }) as Row | undefined;
      return row ? toApiKey(row) : null;
    });
  }

  async apiKeyFind({ digest }: { digest: string }): Promise<ApiKeyRecord | null> {
    const row = this.q("SELECT * FROM api_keys WHERE digest = ? AND revoked_at IS NULL").get(digest) as Row | undefined;
    return row ? toApiKey(row) : null;
  }

  // ---- Signing secrets -------------------------------------------------------------

  async signingSecretEnsure(p: { tenantId: string; generate: () => string; now: number }): Promise<string> {
    const existing = await this.signingSecretGet({ tenantId: p.tenantId });
    if (existing !== null) return existing;
    const secret = p.generate();
    return this.tx(() => {
      // Another connection (node) may have created it meanwhile: the first insert wins.
      this.q("INSERT INTO signing_secrets (tenant_id, secret, created_at) VALUES (?, ?, ?) ON CONFLICT (tenant_id) DO NOTHING").run(
        p.tenantId,
        secret,
        p.now,
      );
      const row = this.q("SELECT secret FROM signing_secrets WHERE tenant_id = ?").get(p.tenantId) as Row;
      return row.secret as string;
    });
  }

  async signingSecretGet({ tenantId }: { tenantId: string }): Promise<string | null> {
    const row = this.q("SELECT secret FROM signing_secrets WHERE tenant_id = ?").get(tenantId) as Row | undefined;
    return row ? (row.secret as string) : null;
  }

  // ---- tenants ------------------------------------------------------------------------

  async tenantLimitsGet({ tenantId }: { tenantId: string }): Promise<TenantLimits | null> {
    const row = this.q(`SELECT ${TENANT_LIMIT_COLUMNS} FROM tenants WHERE tenant_id = ?`).get(tenantId) as Row | undefined;
    return row ? toTenantLimits(row) : null;
  }

  async tenantLimitsPut(p: { tenantId: string; limits: TenantLimits; now: number; audit?: AuditEntry }): Promise<TenantLimits> {
    return this.tx(() => {
      const l = p.limits;
      this.q(
        `INSERT INTO tenants (tenant_id, ${TENANT_LIMIT_COLUMNS}, updated_at) VALUES (@tenant, @weight, @pending, @rate, @dispatch, @leased, @payload, @now)
         ON CONFLICT (tenant_id) DO UPDATE SET weight = excluded.weight, max_pending_jobs = excluded.max_pending_jobs,
           create_rate_per_second = excluded.create_rate_per_second, dispatch_rate_per_second = excluded.dispatch_rate_per_second,
           max_leased_attempts = excluded.max_leased_attempts,
           max_payload_bytes = excluded.max_payload_bytes, updated_at = excluded.updated_at`,
      ).run({
        tenant: p.tenantId,
        weight: l.weight,
        pending: l.maxPendingJobs,
        rate: l.createRatePerSecond,
        dispatch: l.dispatchRatePerSecond,
        leased: l.maxLeasedAttempts,
        payload: l.maxPayloadBytes,
        now: p.now,
      });
      // A new rate starts afresh: no debt, no throttle carried over.
      this.q("UPDATE tenants SET dispatch_tat = NULL WHERE tenant_id = ?").run(p.tenantId);
      this.q("UPDATE lanes SET throttled_since = NULL WHERE tenant_id = ? AND throttled_since IS NOT NULL").run(p.tenantId);
      if (p.audit) this.appendAudit(p.audit);
      return { ...l };
    });
  }

  async dueInWindow(p: { tenantId: string; pool: string; priority: number; from: number; to: number; limit: number }): Promise<number> {
    const ready = this.q(
      `SELECT count(*) AS n FROM (SELECT 1 FROM executions WHERE pool = @pool AND tenant_id = @tenant AND state = 'READY'
         AND priority = @priority AND ready_at >= @from AND ready_at < @to LIMIT @limit)`,
    ).get({ ...p, tenant: p.tenantId }) as { n: number };
    const due = this.q(
      "SELECT count(*) AS n FROM (SELECT 1 FROM due WHERE tenant_id = @tenant AND due_at >= @from AND due_at < @to LIMIT @limit)",
    ).get({ tenant: p.tenantId, from: p.from, to: p.to, limit: p.limit }) as { n: number };
    return ready.n + due.n;
  }

  async jobCountPending(p: { tenantId: string }): Promise<number> {
    const row = this.q("SELECT count(*) AS n FROM jobs WHERE tenant_id = ? AND state IN ('SCHEDULED', 'PAUSED')").get(p.tenantId) as { n: number };
    return row.n;
  }

  // ---- retention (sqlite/retention.ts) ------------------------------------------------

  async retentionExpired(p: { kind: RetentionKind; before: number; limit: number }): Promise<PurgedRow[]> {
    // A read transaction: the executions and their attempts from one snapshot.
    return this.db.transaction(() => expiredRows((sql) => this.q(sql), p)).deferred();
  }

  async retentionPurge(p: { kind: RetentionKind; before: number; limit: number; only?: readonly { tenantId: string; id: string }[] }) {
    return this.tx(() => purgeBatch((sql) => this.q(sql), p));
  }

  // ---- cluster membership (sqlite/nodes.ts) ---------------------------------------------

  async nodeHeartbeat(p: { nodeId: string; address: string | null; now: number; ttlMs: number }): Promise<void> {
    heartbeat((sql) => this.q(sql), p);
  }

  async nodeList(p: { now: number }): Promise<NodeRecord[]> {
    return liveNodes((sql) => this.q(sql), p);
  }

  async nodeLeave(p: { nodeId: string }): Promise<void> {
    leave((sql) => this.q(sql), p);
  }
}

/**
 * "executions WHERE …" of the READY rows a lease (or a long poll's next
 * look) may take, each kind served by its index: one tenant's pool
 * (executions_ready), the HTTP runner's pool across tenants
 * (executions_ready_http, named: the planner would take the other).
 */
function readyScope(p: { pool: string; tenantId?: string }): string {
  if (p.tenantId !== undefined) return "executions WHERE pool = @pool AND tenant_id = @tenant";
  return p.pool === HTTP_POOL ? "executions INDEXED BY executions_ready_http WHERE pool = '$http'" : "executions WHERE pool = @pool";
}

function scopeParams(p: { pool: string; tenantId?: string }): { pool: string; tenant: string | null } {
  return { pool: p.pool, tenant: p.tenantId ?? null };
}

/** A READY row of insertExecutions that its job's dry run (jobs.mode, read in the statement) records SKIPPED. */
const DRY_RUN = "(@any = 0 AND x.value ->> 4 = 'READY' AND j.mode = 'dry_run')";
const DRY_RUN_ERROR = JSON.stringify(skippedError("dry_run"));

function toJob(r: Row): JobRecord {
  return {
    tenantId: r.tenant_id as string,
    jobId: r.id as string,
    shard: r.shard as number,
    kind: r.kind as "once" | "cron",
    name: r.name as string,
    state: r.state as JobState,
    target: parse(r.target),
    payload: parse(r.payload),
    schedule: parse(r.schedule),
    retry: parse(r.retry),
    timeoutSeconds: r.timeout_seconds as number,
    priority: r.priority as number,
    mode: r.mode as JobRecord["mode"],
    version: r.version as number,
    createdAt: r.created_at as number,
    updatedAt: r.updated_at as number,
    nextRunAt: (r.next_run_at as number | null) ?? null,
    nextDueAt: (r.next_due_at as number | null) ?? null,
  };
}

function toShard(r: Row): ShardLease {
  return {
    shard: r.shard as number,
    owner: r.owner as string | null,
    epoch: r.epoch as number,
    leaseUntil: r.lease_until as number,
  };
}
