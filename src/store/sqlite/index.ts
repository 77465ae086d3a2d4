// The SQLite driver (better-sqlite3, WAL). Accepted writes commit with
// synchronous=FULL, on disk before the API answers 201; transitions commit
// with synchronous=NORMAL under the default durability (store.ts Durability),
// flushed by the next FULL commit or within FLUSH_BOUND_MS (db.ts). better-sqlite3 is synchronous: every
// method runs its statements inside one transaction and resolves at once.
// SQLite has one writer, so a transaction is also the claim: no SKIP LOCKED
// is needed, and UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING claims a
// batch atomically. The statements live beside their topic, as the
// PostgreSQL driver's do: jobs.ts, dispatch.ts, leases.ts, acks.ts, history.ts,
// replays.ts, cluster.ts, retention.ts; core's rules as writes in changes.ts.

import type { Role, TenantLimitSettings } from "@duetime/sdk/contract";
import type {
  AckOutcome,
  ApiKeyRecord,
  AttemptRow,
  AuditEntry,
  ClusterSignal,
  CompleteInput,
  DeadLetterRow,
  DispatchItem,
  DueRef,
  FailInput,
  JobCreateOutcome,
  LeaseParams,
  JobRecord,
  LeasedRow,
  LoadedDueEntry,
  MigrateResult,
  NewJob,
  NodeRecord,
  PoolCounts,
  PossibleDuplicateRow,
  PurgedRow,
  ReplayRecord,
  RetentionKind,
  ShardLease,
  SignalEvent,
  Store,
  StoreParams,
} from "../store.js";
import type { Durability } from "../store.js";
import { onStoreError } from "../faults.js";
import { countHour, type CountRow, countsSql, toPoolCounts, toUpcoming, upcomingSql, upcomingWindow } from "../ready-counts.js";
import { fromWorkloadRow, WORKLOAD_COLUMNS, type WorkloadMinute, workloadJson, workloadUpsertSql } from "../workload-minutes.js";
import { TENANT_LIMIT_COLUMNS, toApiKey, toAudit, toTenantLimits } from "../rows.js";
import { acquireShards, heartbeat, leave, listShards, liveNodes, releaseShards } from "./cluster.js";
import { leaseNow, parse, type Query, type Row, SqliteDb } from "./db.js";
import { createExecutions, dispatch, dueRefs, getDue, loadDue, scanDue } from "./dispatch.js";
import { rethrowSqliteError } from "./errors.js";
import { appendAudit, deadLetters, history, inWindow, replay } from "./history.js";
import { createJobs, getJob, listJobs, transitionJob, updateJob } from "./jobs.js";
import * as acks from "./acks.js";
import * as blobs from "./blobs.js";
import * as leases from "./leases.js";
import { cancelReplay, claimReplays, createReplay, getReplay, listReplays, releaseReplays, stepReplay } from "./replays.js";
import { expiredRows, purgeBatch } from "./retention.js";
import { migrate } from "./schema.js";
import { SignalBus } from "./signals.js";

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

export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  // Every statement and transaction runs inside a method: faults are classified on the way out of each.
  const store = onStoreError(new SqliteStore(options), rethrowSqliteError);
  if (options.migrate ?? true) await store.migrate();
  return store;
}

class SqliteStore implements Store {
  readonly kind = "sqlite";
  private readonly db: SqliteDb;
  /** Prepared statements, cached by their text (db.ts). */
  private readonly q: Query;
  private readonly signals: SignalBus;
  private readonly unsubscribes = new Set<() => Promise<void>>();

  constructor(options: SqliteStoreOptions) {
    this.db = new SqliteDb(options);
    this.q = this.db.q;
    this.signals = new SignalBus(options.path === ":memory:" ? `:memory:${Math.random()}` : options.path);
  }

  /** An accepted write (or a read that must see one): flushed before it returns (db.ts). */
  private tx<T>(fn: () => T): T {
    return this.db.tx(fn);
  }

  /** A transition after acceptance (store.ts Durability; db.ts). */
  private transition<T>(fn: () => T): T {
    return this.db.transition(fn);
  }

  async migrate(): Promise<MigrateResult> {
    return migrate(this.db);
  }

  async ping(): Promise<void> {
    this.q("SELECT 1").get();
  }

  async replicaLagMs(): Promise<number> {
    return Infinity; // one file, its own primary: no one's replica
  }

  async storeTime(): Promise<number> {
    return leaseNow(undefined);
  }

  async pingWrite(): Promise<void> {
    await this.db.pingWrite();
  }

  async close(): Promise<void> {
    await Promise.all([...this.unsubscribes].map((unsubscribe) => unsubscribe()));
    this.db.close();
  }

  // ---- signals (signals.ts) ---------------------------------------------------------

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

  // ---- jobs (jobs.ts) -----------------------------------------------------------------

  async jobCreateMany({ jobs, nodeId, now }: { jobs: NewJob[]; nodeId: string; now: number }): Promise<JobCreateOutcome[]> {
    return this.tx(() => createJobs(this.q, jobs, nodeId, now));
  }

  async jobGet({ tenantId, jobId }: { tenantId: string; jobId: string }): Promise<JobRecord | null> {
    return getJob(this.q, tenantId, jobId);
  }

  async jobList(p: StoreParams<"jobList">): Promise<JobRecord[]> {
    return listJobs(this.q, p);
  }

  async jobTransition(p: StoreParams<"jobTransition">): Promise<JobRecord | null> {
    return this.tx(() => transitionJob(this.q, p));
  }

  async jobUpdate(p: StoreParams<"jobUpdate">): Promise<JobRecord | null> {
    return this.tx(() => updateJob(this.q, p));
  }

  // ---- due index and dispatch (dispatch.ts) -------------------------------------------

  async dueLoad(p: StoreParams<"dueLoad">): Promise<LoadedDueEntry[]> {
    return loadDue(this.q, p);
  }

  async dueGet(p: StoreParams<"dueGet">): Promise<LoadedDueEntry[]> {
    return getDue(this.q, p);
  }

  async dueRefs(p: StoreParams<"dueRefs">): Promise<DueRef[]> {
    return dueRefs(this.q, p);
  }

  async dueScan(p: StoreParams<"dueScan">): Promise<DueRef[]> {
    return scanDue(this.q, p);
  }

  async dispatchMany(p: { nodeId: string; epochs: ReadonlyMap<number, number>; now: number; items: DispatchItem[] }) {
    return this.tx(() => dispatch(this.q, p));
  }

  // ---- executions (dispatch.ts, leases.ts, acks.ts, history.ts) --------------------------------

  async executionCreateMany(p: StoreParams<"executionCreateMany">): Promise<(AttemptRow | null)[]> {
    return this.tx(() => createExecutions(this.q, p));
  }

  async executionsInWindow(p: StoreParams<"executionsInWindow">): Promise<AttemptRow[]> {
    return inWindow(this.q, p);
  }

  async executionLease(p: LeaseParams): Promise<LeasedRow[]> {
    const now = leaseNow(p.now);
    const incarnation = this.db.leaseIncarnation();
    return this.transition(() => leases.lease(this.q, p, now, incarnation));
  }

  async executionAckAndLease(p: LeaseParams & { complete: CompleteInput[]; fail: FailInput[] }) {
    const now = leaseNow(p.now);
    const incarnation = this.db.leaseIncarnation();
    return this.transition(() => ({
      completed: acks.complete(this.q, p.complete, now),
      failed: acks.fail(this.q, p.fail, now),
      leased: leases.lease(this.q, p, now, incarnation),
    }));
  }

  async executionTraceParents(p: { executionIds: readonly string[] }): Promise<Map<string, string>> {
    return acks.traceParents(this.q, p);
  }

  async executionNextReady(p: { pool: string; tenantId?: string }): Promise<number | null> {
    return leases.nextReadyAt(this.q, p);
  }

  async executionHeartbeat(p: StoreParams<"executionHeartbeat">) {
    const now = leaseNow(p.now);
    return this.transition(() => acks.heartbeat(this.q, p, now));
  }

  async executionPossibleDuplicates(p: StoreParams<"executionPossibleDuplicates">): Promise<PossibleDuplicateRow[]> {
    return acks.possibleDuplicates(this.q, p);
  }

  async executionCompleteMany(p: { items: CompleteInput[]; now?: number }): Promise<AckOutcome[]> {
    const now = leaseNow(p.now);
    return this.transition(() => acks.complete(this.q, p.items, now));
  }

  async executionFailMany(p: { items: FailInput[]; now?: number }): Promise<AckOutcome[]> {
    const now = leaseNow(p.now);
    return this.transition(() => acks.fail(this.q, p.items, now));
  }

  async executionRelease(p: StoreParams<"executionRelease">): Promise<("ok" | "lost")[]> {
    const now = leaseNow(p.now);
    return this.transition(() => acks.release(this.q, p.items, now));
  }

  async executionReap(p: { now?: number; limit: number }) {
    const now = leaseNow(p.now);
    return this.transition(() => acks.reap(this.q, p, now));
  }

  async executionHistory(p: StoreParams<"executionHistory">): Promise<AttemptRow[]> {
    return history(this.q, p);
  }

  // ---- dead letters (history.ts) ------------------------------------------------------

  async deadLetterList(p: StoreParams<"deadLetterList">): Promise<DeadLetterRow[]> {
    return deadLetters(this.q, p);
  }

  async deadLetterReplay(p: StoreParams<"deadLetterReplay">) {
    return this.tx(() => replay(this.q, p));
  }

  // ---- bulk dead-letter replays (replays.ts) ------------------------------------------

  async replayCreate(p: StoreParams<"replayCreate">): Promise<ReplayRecord> {
    return this.tx(() => createReplay(this.q, p));
  }

  async replayGet(p: StoreParams<"replayGet">): Promise<ReplayRecord | null> {
    return getReplay(this.q, p);
  }

  async replayList(p: StoreParams<"replayList">): Promise<ReplayRecord[]> {
    return listReplays(this.q, p);
  }

  async replayClaim(p: StoreParams<"replayClaim">): Promise<ReplayRecord[]> {
    const now = leaseNow(p.now);
    return this.tx(() => claimReplays(this.q, p, now));
  }

  async replayRelease(p: StoreParams<"replayRelease">): Promise<void> {
    releaseReplays(this.q, p);
  }

  async replayStep(p: StoreParams<"replayStep">) {
    const now = leaseNow(p.now);
    return this.tx(() => stepReplay(this.q, p, now));
  }

  async replayCancel(p: StoreParams<"replayCancel">) {
    return this.tx(() => cancelReplay(this.q, p));
  }

  // ---- shards (cluster.ts), stats, audit ------------------------------------------

  async shardAcquire(p: StoreParams<"shardAcquire">): Promise<ShardLease[]> {
    const now = leaseNow(p.now);
    return this.tx(() => acquireShards(this.q, p, now));
  }

  async shardRelease(p: StoreParams<"shardRelease">): Promise<void> {
    releaseShards(this.q, p);
  }

  async shardList(): Promise<ShardLease[]> {
    return listShards(this.q);
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
    return rows.map((r) => toAudit(r, parse));
  }

  // ---- API keys -------------------------------------------------------------------

  async apiKeyCreate(p: { id: string; tenantId: string; role: Role; digest: string; name?: string; now: number; audit?: AuditEntry }) {
    return this.tx(() => {
      const row = this.q(
        `INSERT INTO api_keys (id, tenant_id, role, digest, name, created_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT DO NOTHING RETURNING *`,
      ).get(p.id, p.tenantId, p.role, p.digest, p.name ?? null, p.now) as Row | undefined;
      if (!row) return null;
      if (p.audit) appendAudit(this.q, p.audit);
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
        if (p.audit) appendAudit(this.q, { ...p.audit, tenantId: key.tenantId });
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

  async tenantLimitsGet({ tenantId }: { tenantId: string }): Promise<TenantLimitSettings | null> {
    const row = this.q(`SELECT ${TENANT_LIMIT_COLUMNS} FROM tenants WHERE tenant_id = ?`).get(tenantId) as Row | undefined;
    return row ? toTenantLimits(row) : null;
  }

  async tenantLimitsPut(p: { tenantId: string; limits: TenantLimitSettings; now: number; audit?: AuditEntry }): Promise<TenantLimitSettings> {
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
      if (p.audit) appendAudit(this.q, p.audit);
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
    const row = this.q(
      `SELECT (SELECT count(*) FROM jobs WHERE tenant_id = @tenant AND kind = 'cron' AND state IN ('SCHEDULED', 'PAUSED'))
         + (SELECT count(DISTINCT job_id) FROM executions WHERE tenant_id = @tenant AND once = 1 AND finished_at IS NULL) AS n`,
    ).get({ tenant: p.tenantId }) as { n: number };
    return row.n;
  }

  // ---- retention (retention.ts) -------------------------------------------------------

  async retentionExpired(p: { kind: RetentionKind; before: number; limit: number }): Promise<PurgedRow[]> {
    // A read transaction: the executions and their attempts from one snapshot.
    return this.db.read(() => expiredRows(this.q, p));
  }

  async retentionPurge(p: { kind: RetentionKind; before: number; limit: number; only?: readonly { tenantId: string; id: string }[] }) {
    return this.tx(() => purgeBatch(this.q, p));
  }

  // ---- payload blobs (blobs.ts) --------------------------------------------------------

  async blobBegin(p: StoreParams<"blobBegin">): Promise<void> {
    this.tx(() => blobs.beginBlob(this.q, p.blob));
  }

  /** A transition's commit: the seal after the last chunk is flushed, and with it every chunk before it (a WAL commit's frames are a prefix). */
  async blobChunksPut(p: StoreParams<"blobChunksPut">): Promise<void> {
    this.transition(() => blobs.putChunks(this.q, p));
  }

  async blobChunksGet(p: StoreParams<"blobChunksGet">): Promise<Uint8Array[]> {
    return blobs.getChunks(this.q, p);
  }

  async blobChunksDelete(p: StoreParams<"blobChunksDelete">): Promise<void> {
    this.transition(() => blobs.deleteChunks(this.q, p.blobIds));
  }

  async blobSeal(p: StoreParams<"blobSeal">): Promise<boolean> {
    return this.tx(() => blobs.sealBlob(this.q, p));
  }

  async blobAttach(p: StoreParams<"blobAttach">): Promise<void> {
    this.transition(() => blobs.attachBlobs(this.q, p.blobIds));
  }

  async blobGet(p: StoreParams<"blobGet">) {
    return blobs.getBlob(this.q, p);
  }

  async blobSweep(p: StoreParams<"blobSweep">) {
    return this.transition(() => blobs.sweepBlobs(this.q, p));
  }

  async blobRemove(p: StoreParams<"blobRemove">): Promise<void> {
    this.transition(() => blobs.removeBlobs(this.q, p.blobIds));
  }

  // ---- cluster membership (cluster.ts) ------------------------------------------------

  async nodeHeartbeat(p: { nodeId: string; address: string | null; now: number; ttlMs: number }): Promise<void> {
    heartbeat(this.q, p);
  }

  async nodeList(p: { now: number }): Promise<NodeRecord[]> {
    return liveNodes(this.q, p);
  }

  async nodeLeave(p: { nodeId: string }): Promise<void> {
    leave(this.q, p);
  }
}
