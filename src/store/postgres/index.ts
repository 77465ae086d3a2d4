// The PostgreSQL driver (node-postgres, docs/design-notes.md "PostgreSQL
// client"): a pool per store, every multi-statement method one READ
// COMMITTED transaction, batches as unnest arrays, leasing and reaping with
// FOR UPDATE SKIP LOCKED, and every fence a compare-and-set in the WHERE of
// the statement that writes. The statements live beside their topic:
// jobs.ts, dispatch.ts, leases.ts, acks.ts, history.ts, cluster.ts, retention.ts;
// core's rules as writes in changes.ts.

import pg from "pg";
import { onStoreError } from "../faults.js";
import type {
  ApiKeyRecord,
  ClusterSignal,
  CompleteInput,
  DueRef,
  Durability,
  FailInput,
  JobRecord,
  LeaseParams,
  LoadedDueEntry,
  MigrateResult,
  NewJob,
  SignalEvent,
  Store,
  StoreParams,
} from "../store.js";
import type { TenantLimitSettings } from "@duetime/sdk/contract";
import { FLUSH_BOUND_MS } from "../store.js";
import { acquireShards, heartbeat, leave, listShards, liveNodes, releaseShards } from "./cluster.js";
import { checkSchemaName } from "../names.js";
import { countHour, type CountRow, countsSql, toPoolCounts, toUpcoming, upcomingSql, upcomingWindow } from "../ready-counts.js";
import { fromWorkloadRow, WORKLOAD_COLUMNS, workloadJson, workloadUpsertSql } from "../workload-minutes.js";
import { DUE_COLUMNS, DUE_REF_COLUMNS, jsonb, TENANT_LIMIT_COLUMNS, toAudit, toDueRef, toLoadedDue, toTenantLimits } from "../rows.js";
import { clientConfig, createPool, executionKey, one, type PoolOptions, rows, transaction } from "./db.js";
import { createExecutions, dispatch } from "./dispatch.js";
import { rethrowPostgresError } from "./errors.js";
import { appendAudit, deadLetters, history, inWindow, replay } from "./history.js";
import { createJobs, getJob, listJobs, transitionJob, updateJob } from "./jobs.js";
import * as acks from "./acks.js";
import * as blobs from "./blobs.js";
import * as keys from "./keys.js";
import * as leases from "./leases.js";
import { expiredRows, purgeBatch } from "./retention.js";
import { createAhead, dropEnded } from "./partitions.js";
import { migrate } from "./schema.js";
import { cancelReplay, claimReplays, createReplay, getReplay, listReplays, releaseReplays, stepReplay } from "./replays.js";
import { chunkSignals, NOTIFY_SQL, PgSignals } from "./signals.js";

/** A synchronous commit that writes WAL, so it waits for the flush of every commit before it (flushSoon). */
const FLUSH_SQL = "SELECT pg_logical_emit_message(true, 'duetime', 'flush')";

/** poolCounts' buckets: the folded counters and the deltas appended since (ready-counts.ts). */
const BUCKETS = "(SELECT * FROM ready_counts UNION ALL SELECT * FROM ready_count_deltas)";

/** Classid of the counters' fold lock (pg_try_advisory_xact_lock(classid, objid)): "cnts". */
const COUNTS_LOCK = 0x636e7473;

export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/database */
  url: string;
  /** The schema holding duetime's tables, created if absent (default "duetime"). */
  schema?: string;
  /** Connections at most (default 10). */
  poolSize?: number;
  /** store.ts Durability (default "accepted"). */
  durability?: Durability;
  /** A statement running longer is cancelled, a StoreUnavailableError "timeout" (default 30000). */
  statementTimeoutMs?: number;
  /** How long to wait for a new connection (default 10000). */
  connectTimeoutMs?: number;
  /** Shown in pg_stat_activity (default "duetime"). */
  applicationName?: string;
  /** Apply missing migrations on open (default true); `duetime migrate` opens without and calls migrate(). */
  migrate?: boolean;
}

export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const connection: PoolOptions = {
    url: options.url,
    schema: checkSchemaName(options.schema ?? "duetime"),
    poolSize: options.poolSize ?? 10,
    statementTimeoutMs: options.statementTimeoutMs ?? 30_000,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    applicationName: options.applicationName ?? "duetime",
  };
  // Every statement runs inside a method: faults are classified on the way out of each.
  const store = onStoreError(new PostgresStore(connection, options.durability ?? "accepted"), rethrowPostgresError);
  if (options.migrate ?? true) {
    try {
      await store.migrate();
    } catch (error) {
      await store.close();
      throw error;
    }
  }
  return store;
}

class PostgresStore implements Store {
  readonly kind = "postgres";
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private readonly signals: PgSignals;
  private closed = false;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    connection: PoolOptions,
    private readonly durability: Durability,
  ) {
    this.pool = createPool(connection);
    this.schema = connection.schema;
    this.signals = new PgSignals({ client: () => new pg.Client(clientConfig(connection)), schema: connection.schema });
  }

  private tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return transaction(this.pool, fn);
  }

  /**
   * A transition after acceptance (store.ts Durability), lease grants
   * included: under "accepted", its commit does not wait for the WAL flush.
   * A grant that a crash loses is granted again under a new lease epoch
   * (leases.ts), so its attempt number never goes out twice under one token.
   * The flush comes within FLUSH_BOUND_MS (flushSoon).
   */
  private async transition<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.durability === "strict") return this.tx(fn);
    const value = await transaction(this.pool, fn, true);
    this.flushSoon();
    return value;
  }

  /**
   * A synchronous commit within FLUSH_BOUND_MS: it waits for the WAL up to
   * its own commit record, so every asynchronous commit before it is then on
   * disk. A commit waits only if its transaction wrote WAL: a transactional
   * logical message is the smallest such write (no row, any wal_level, any
   * user); decoders see it under the prefix "duetime".
   */
  private flushSoon(): void {
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      if (!this.closed) this.pool.query({ name: "flush", text: FLUSH_SQL }).catch(() => {});
    }, FLUSH_BOUND_MS).unref();
  }

  async migrate(): Promise<MigrateResult> {
    return migrate(this.pool, this.schema);
  }

  async ping(): Promise<void> {
    await this.pool.query({ name: "ping", text: "SELECT 1" });
  }

  async replicaLagMs(): Promise<number> {
    // A replica trails by the age of the last transaction it replayed, unless it
    // has replayed all it received (an idle primary); not streaming: unknown.
    // Out of recovery it is a primary, no one's replica (a promoted one no
    // longer follows the store): it never serves.
    const row = await one<{ lag: number }>(
      this.pool,
      `SELECT (CASE
         WHEN NOT pg_is_in_recovery() THEN 'Infinity'::float8
         WHEN NOT EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming') THEN 'Infinity'::float8
         WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
         ELSE greatest(0, extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000)
       END)::float8 AS lag`,
    );
    return row!.lag;
  }

  async storeTime(): Promise<number> {
    return leases.storeTime(this.pool);
  }

  async pingWrite(): Promise<void> {
    // A real row version (heap and WAL), changing no value: fails on a full disk, a standby, a read-only database.
    await this.pool.query("UPDATE schema_migrations SET applied_at = applied_at WHERE version = (SELECT max(version) FROM schema_migrations)");
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.flushTimer);
    // A clean stop leaves nothing unflushed.
    if (this.durability === "accepted") await this.pool.query(FLUSH_SQL).catch(() => {});
    await this.signals.close();
    await this.pool.end();
  }

  // ---- signals between nodes (signals.ts) --------------------------------------

  async signalPublish({ from, signals }: { from: string; signals: ClusterSignal[] }): Promise<void> {
    if (signals.length === 0) return;
    // One statement: the chunks are delivered at its commit, in order.
    await this.pool.query(NOTIFY_SQL, [this.signals.channel, chunkSignals(from, this.schema, signals)]);
  }

  async signalSubscribe(handler: (event: SignalEvent) => void): Promise<() => Promise<void>> {
    return this.signals.subscribe(handler);
  }

  // ---- jobs (jobs.ts) --------------------------------------------------------

  async jobCreateMany({ jobs, nodeId, now }: { jobs: NewJob[]; nodeId: string; now: number }) {
    return this.tx((c) => createJobs(c, jobs, nodeId, now));
  }

  async jobGet({ tenantId, jobId }: { tenantId: string; jobId: string }): Promise<JobRecord | null> {
    return getJob(this.pool, tenantId, jobId);
  }

  async jobList(p: StoreParams<"jobList">) {
    return listJobs(this.pool, p);
  }

  async jobTransition(p: StoreParams<"jobTransition">) {
    return this.tx((c) => transitionJob(c, p));
  }

  async jobUpdate(p: StoreParams<"jobUpdate">) {
    return this.tx((c) => updateJob(c, p));
  }

  // ---- due index and dispatch (dispatch.ts) ---------------------------------------

  async dueLoad({ shards, before, limit }: { shards: readonly number[]; before: number; limit: number }): Promise<LoadedDueEntry[]> {
    if (shards.length === 0) return [];
    const loaded = await rows(
      this.pool,
      `SELECT ${DUE_COLUMNS} FROM due d JOIN jobs j ON j.id = d.job_id
       WHERE d.due_at <= $1 AND d.shard = ANY($2::int[]) ORDER BY d.due_at LIMIT $3`,
      [before, shards, limit],
      "due_load",
    );
    return loaded.map((r) => toLoadedDue(r, jsonb));
  }

  async dueGet({ jobIds }: StoreParams<"dueGet">): Promise<LoadedDueEntry[]> {
    if (jobIds.length === 0) return [];
    const loaded = await rows(
      this.pool,
      `SELECT ${DUE_COLUMNS} FROM due d JOIN jobs j ON j.id = d.job_id WHERE d.job_id = ANY($1::text[])`,
      [jobIds],
      "due_get",
    );
    return loaded.map((r) => toLoadedDue(r, jsonb));
  }

  async dueRefs({ jobIds }: StoreParams<"dueRefs">): Promise<DueRef[]> {
    if (jobIds.length === 0) return [];
    const loaded = await rows(this.pool, `SELECT ${DUE_REF_COLUMNS} FROM due WHERE job_id = ANY($1::text[])`, [jobIds], "due_refs");
    return loaded.map(toDueRef);
  }

  async dueScan({ shard, after, limit }: StoreParams<"dueScan">): Promise<DueRef[]> {
    const loaded = await rows(
      this.pool,
      `SELECT ${DUE_REF_COLUMNS} FROM due WHERE shard = $1 AND job_id > $2 ORDER BY job_id LIMIT $3`,
      [shard, after, limit],
      "due_scan",
    );
    return loaded.map(toDueRef);
  }

  async dispatchMany(p: StoreParams<"dispatchMany">) {
    return this.tx((c) => dispatch(c, p));
  }

  // ---- executions (dispatch.ts, leases.ts, acks.ts, history.ts) ------------------------------

  async executionCreateMany(p: StoreParams<"executionCreateMany">) {
    return this.tx((c) => createExecutions(c, p));
  }

  async executionsInWindow(p: StoreParams<"executionsInWindow">) {
    return inWindow(this.pool, p);
  }

  async tenantLimitsGet({ tenantId }: { tenantId: string }): Promise<TenantLimitSettings | null> {
    const row = await one(this.pool, `SELECT ${TENANT_LIMIT_COLUMNS} FROM tenants WHERE tenant_id = $1`, [tenantId], "tenant_limits_get");
    return row ? toTenantLimits(row) : null;
  }

  async tenantLimitsPut(p: StoreParams<"tenantLimitsPut">): Promise<TenantLimitSettings> {
    const l = p.limits;
    return this.tx(async (c) => {
      await c.query(
        `INSERT INTO tenants (tenant_id, ${TENANT_LIMIT_COLUMNS}, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (tenant_id) DO UPDATE SET weight = excluded.weight, max_pending_jobs = excluded.max_pending_jobs,
           create_rate_per_second = excluded.create_rate_per_second, dispatch_rate_per_second = excluded.dispatch_rate_per_second,
           max_leased_attempts = excluded.max_leased_attempts,
           max_payload_bytes = excluded.max_payload_bytes, updated_at = excluded.updated_at`,
        [p.tenantId, l.weight, l.maxPendingJobs, l.createRatePerSecond, l.dispatchRatePerSecond, l.maxLeasedAttempts, l.maxPayloadBytes, p.now],
      );
      // A new rate starts afresh: no debt, no throttle carried over.
      await c.query("UPDATE tenants SET dispatch_tat = NULL WHERE tenant_id = $1", [p.tenantId]);
      await c.query("UPDATE lanes SET throttled_since = NULL WHERE tenant_id = $1 AND throttled_since IS NOT NULL", [p.tenantId]);
      if (p.audit) await appendAudit(c, p.audit);
      return { ...l };
    });
  }

  async dueInWindow(p: StoreParams<"dueInWindow">): Promise<number> {
    const row = await one<{ n: number }>(
      this.pool,
      `SELECT (SELECT count(*) FROM (SELECT 1 FROM executions WHERE pool = $2 AND tenant_id = $1 AND state = 'READY'
                 AND priority = $3 AND ready_at >= $4 AND ready_at < $5 LIMIT $6) r)
            + (SELECT count(*) FROM (SELECT 1 FROM due WHERE tenant_id = $1 AND due_at >= $4 AND due_at < $5 LIMIT $6) d) AS n`,
      [p.tenantId, p.pool, p.priority, p.from, p.to, p.limit],
      "due_in_window",
    );
    return Number(row?.n ?? 0);
  }

  async jobCountPending(p: { tenantId: string }): Promise<number> {
    const row = await one<{ n: number }>(
      this.pool,
      `SELECT (SELECT count(*) FROM jobs WHERE tenant_id = $1 AND kind = 'cron' AND state IN ('SCHEDULED', 'PAUSED'))::int
         + (SELECT count(DISTINCT job_id) FROM executions WHERE tenant_id = $1 AND once AND finished_at IS NULL)::int AS n`,
      [p.tenantId],
      "job_count_pending",
    );
    return row?.n ?? 0;
  }

  async executionLease(p: LeaseParams) {
    return this.transition((c) => leases.lease(c, p));
  }

  async executionAckAndLease(p: LeaseParams & { complete: CompleteInput[]; fail: FailInput[] }) {
    // One transaction: now() is its start, so the three agree on the time when it is not pinned.
    return this.transition(async (c) => {
      const completed = await acks.complete(c, p.complete, p.now ?? null);
      const failed = await acks.fail(c, p.fail, p.now ?? null);
      return { completed, failed, leased: await leases.lease(c, p) };
    });
  }

  async executionNextReady(p: StoreParams<"executionNextReady">) {
    return leases.nextReady(this.pool, p);
  }

  async executionHeartbeat(p: StoreParams<"executionHeartbeat">) {
    return acks.heartbeat(this.pool, p);
  }

  async executionCompleteMany(p: StoreParams<"executionCompleteMany">) {
    return this.transition((c) => acks.complete(c, p.items, p.now ?? null));
  }

  async executionFailMany(p: StoreParams<"executionFailMany">) {
    return this.transition((c) => acks.fail(c, p.items, p.now ?? null));
  }

  async executionRelease(p: StoreParams<"executionRelease">) {
    return acks.release(this.pool, p.items, p.now ?? null);
  }

  async executionReap(p: StoreParams<"executionReap">) {
    return this.transition((c) => acks.reap(c, p));
  }

  async executionHistory(p: StoreParams<"executionHistory">) {
    return history(this.pool, p);
  }

  async executionPossibleDuplicates(p: StoreParams<"executionPossibleDuplicates">) {
    return acks.possibleDuplicates(this.pool, p);
  }

  // ---- dead letters (history.ts) -------------------------------------------------

  async deadLetterList(p: StoreParams<"deadLetterList">) {
    return deadLetters(this.pool, p);
  }

  async deadLetterReplay(p: StoreParams<"deadLetterReplay">) {
    return this.tx((c) => replay(c, p));
  }

  // ---- bulk dead-letter replays (replays.ts) -------------------------------------------

  async replayCreate(p: StoreParams<"replayCreate">) {
    return this.tx((c) => createReplay(c, p));
  }

  async replayGet(p: StoreParams<"replayGet">) {
    return getReplay(this.pool, p);
  }

  async replayList(p: StoreParams<"replayList">) {
    return listReplays(this.pool, p);
  }

  async replayClaim(p: StoreParams<"replayClaim">) {
    return claimReplays(this.pool, p);
  }

  async replayRelease(p: StoreParams<"replayRelease">) {
    await releaseReplays(this.pool, p);
  }

  async replayStep(p: StoreParams<"replayStep">) {
    return this.tx((c) => stepReplay(c, p));
  }

  async replayCancel(p: StoreParams<"replayCancel">) {
    return this.tx((c) => cancelReplay(c, p));
  }

  // ---- shards, stats, audit ----------------------------------------------------------

  async shardAcquire(p: StoreParams<"shardAcquire">) {
    return acquireShards(this.pool, p);
  }

  async shardRelease(p: StoreParams<"shardRelease">): Promise<void> {
    await releaseShards(this.pool, p);
  }

  async shardList() {
    return listShards(this.pool);
  }

  async executionTraceParents(p: { executionIds: readonly string[] }): Promise<Map<string, string>> {
    const keys = p.executionIds.flatMap((id) => executionKey(id) ?? []);
    if (keys.length === 0) return new Map();
    const found = await rows<{ id: string; trace_parent: string }>(
      this.pool,
      `SELECT e.id, e.trace_parent FROM executions e JOIN unnest($1::text[], $2::bigint[]) AS x(job_id, scheduled_for)
         ON e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for WHERE e.trace_parent IS NOT NULL`,
      [keys.map((k) => k.jobId), keys.map((k) => k.scheduledFor)],
    );
    return new Map(found.map((r) => [r.id, r.trace_parent]));
  }

  async poolCounts(p: StoreParams<"poolCounts">) {
    const { hour, from } = countHour(p.now);
    const types = { tenant: "$1::text", pool: "$2::text", hour: "$3::bigint", from: "$4::bigint", now: "$5::bigint" } as const;
    const buckets = "(SELECT * FROM ready_counts UNION ALL SELECT * FROM ready_count_deltas)";
    const found = await rows<CountRow>(
      this.pool,
      countsSql(buckets, (name) => types[name]),
      [p.tenantId ?? null, p.pool ?? null, hour, from, p.now],
    );
    return toPoolCounts(found, p.now);
  }

  async readyUpcoming(p: StoreParams<"readyUpcoming">): Promise<number[]> {
    const types = { now: "$1::bigint", horizon: "$2::bigint", fromHour: "$3::bigint", toHour: "$4::bigint", limit: "$5::int" } as const;
    const { horizon, fromHour, toHour } = upcomingWindow(p.now, p.minutes);
    const found = await rows<{ minute: string; n: string }>(
      this.pool,
      upcomingSql(BUCKETS, (name) => types[name]),
      [p.now, horizon, fromHour, toHour, p.limit],
    );
    return toUpcoming(found, p.minutes);
  }

  async executionCountsFold(): Promise<void> {
    await transaction(this.pool, async (c) => {
      // One node at a time: the others find the deltas being folded and have nothing to add.
      const got = await one<{ got: boolean }>(c, "SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS got", [COUNTS_LOCK, this.schema]);
      if (!got?.got) return;
      await c.query(
        `WITH moved AS (DELETE FROM ready_count_deltas RETURNING *)
         INSERT INTO ready_counts AS c (tenant_id, pool, priority, hour, n)
           SELECT tenant_id, pool, priority, hour, sum(n) FROM moved GROUP BY 1, 2, 3, 4
         ON CONFLICT (tenant_id, pool, priority, hour) DO UPDATE SET n = c.n + EXCLUDED.n`,
      );
      await c.query("DELETE FROM ready_counts WHERE n = 0");
    });
  }

  async workloadAdd(p: StoreParams<"workloadAdd">): Promise<void> {
    if (p.records.length === 0) return;
    const record = WORKLOAD_COLUMNS.map(([c, type]) => `${c} ${type}`).join(", ");
    await rows(this.pool, workloadUpsertSql(`jsonb_to_recordset($1::jsonb) AS r(${record})`), [workloadJson(p.records)]);
  }

  async workloadMinutes(p: StoreParams<"workloadMinutes">) {
    const found = await rows(
      this.pool,
      "SELECT * FROM workload_minutes WHERE minute >= $1 AND ($2::text IS NULL OR tenant_id = $2) ORDER BY minute, tenant_id, pool",
      [p.from, p.tenantId ?? null],
    );
    return found.map(fromWorkloadRow);
  }

  async workloadPurge(p: StoreParams<"workloadPurge">): Promise<number> {
    const gone = await one<{ n: number }>(
      this.pool,
      "WITH d AS (DELETE FROM workload_minutes WHERE minute < $1 RETURNING 1) SELECT count(*)::int AS n FROM d",
      [p.before],
    );
    return gone?.n ?? 0;
  }

  async auditList(p: StoreParams<"auditList">) {
    const cursor = p.after ? "AND (at, id) < ($3::bigint, $4::bigint)" : "";
    const found = await rows(this.pool, `SELECT * FROM audit WHERE tenant_id = $1 ${cursor} ORDER BY at DESC, id DESC LIMIT $2`, [
      p.tenantId,
      p.limit,
      ...(p.after ? [p.after.at, p.after.id] : []),
    ]);
    return found.map((r) => toAudit(r, jsonb));
  }

  // ---- API keys (keys.ts) -----------------------------------------------------------

  async apiKeyCreate(p: StoreParams<"apiKeyCreate">) {
    return this.tx((c) => keys.create(c, p));
  }

  async apiKeyList(p: StoreParams<"apiKeyList">): Promise<ApiKeyRecord[]> {
    return keys.list(this.pool, p);
  }

  async apiKeyRevoke(p: StoreParams<"apiKeyRevoke">) {
    return this.tx((c) => keys.revoke(c, p));
  }

  async apiKeyFind({ digest }: { digest: string }): Promise<ApiKeyRecord | null> {
    return keys.find(this.pool, digest);
  }

  // ---- signing secrets ------------------------------------------------------------

  async signingSecretEnsure(p: StoreParams<"signingSecretEnsure">): Promise<string> {
    const existing = await this.signingSecretGet({ tenantId: p.tenantId });
    if (existing !== null) return existing;
    // Two statements, so the read sees a secret another node committed while the insert waited for it.
    await this.pool.query("INSERT INTO signing_secrets (tenant_id, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT (tenant_id) DO NOTHING", [
      p.tenantId,
      p.generate(),
      p.now,
    ]);
    return (await this.signingSecretGet({ tenantId: p.tenantId }))!;
  }

  async signingSecretGet({ tenantId }: { tenantId: string }): Promise<string | null> {
    const row = await one<{ secret: string }>(this.pool, "SELECT secret FROM signing_secrets WHERE tenant_id = $1", [tenantId], "signing_secret_get");
    return row?.secret ?? null;
  }

  // ---- retention (retention.ts) -----------------------------------------------------

  // Retention's run is the partitions' maintenance (partitions.ts): each
  // executions batch first creates the ranges ahead. Without an archive, a
  // range whose rows are all due is dropped whole; with one (retentionExpired,
  // then purge `only`), rows go one by one once archived, and the read that
  // ends a run drops the old ranges they left empty. It also settles the
  // wake rows no cross-tenant lease took (leases.ts settleStaleWakes).

  async retentionExpired(p: StoreParams<"retentionExpired">) {
    if (p.kind !== "executions") return expiredRows(this.pool, p);
    await createAhead(this.pool, this.schema);
    await leases.settleStaleWakes(this.pool);
    const found = await expiredRows(this.pool, p);
    if (found.length < p.limit) await dropEnded(this.pool, this.schema, p.before, "empty");
    return found;
  }

  async retentionPurge(p: StoreParams<"retentionPurge">) {
    if (p.kind !== "executions" || p.only) return purgeBatch(this.pool, p);
    await createAhead(this.pool, this.schema);
    await leases.settleStaleWakes(this.pool);
    const dropped = await dropEnded(this.pool, this.schema, p.before, "due");
    const batch = await purgeBatch(this.pool, p);
    const jobs = dropped.jobs + (batch.jobs ?? 0);
    const deleted = dropped.executions + batch.deleted;
    return jobs > 0 ? { deleted, jobs } : { deleted };
  }

  // ---- payload blobs (blobs.ts) ------------------------------------------------------

  async blobBegin(p: StoreParams<"blobBegin">): Promise<void> {
    await blobs.beginBlob(this.pool, p.blob);
  }

  /** A transition's commit: the seal after the last chunk commits synchronously, and so flushes the WAL of every chunk before it. */
  async blobChunksPut(p: StoreParams<"blobChunksPut">): Promise<void> {
    await this.transition((c) => blobs.putChunks(c, p));
  }

  async blobChunksGet(p: StoreParams<"blobChunksGet">): Promise<Uint8Array[]> {
    return blobs.getChunks(this.pool, p);
  }

  async blobChunksDelete(p: StoreParams<"blobChunksDelete">): Promise<void> {
    await blobs.deleteChunks(this.pool, p.blobIds);
  }

  async blobSeal(p: StoreParams<"blobSeal">): Promise<boolean> {
    return blobs.sealBlob(this.pool, p);
  }

  async blobAttach(p: StoreParams<"blobAttach">): Promise<void> {
    await blobs.attachBlobs(this.pool, p.blobIds);
  }

  async blobGet(p: StoreParams<"blobGet">) {
    return blobs.getBlob(this.pool, p);
  }

  async blobSweep(p: StoreParams<"blobSweep">) {
    return this.tx((c) => blobs.sweepBlobs(c, p));
  }

  async blobRemove(p: StoreParams<"blobRemove">): Promise<void> {
    await blobs.removeBlobs(this.pool, p.blobIds);
  }

  // ---- cluster membership (cluster.ts) ---------------------------------------------

  async nodeHeartbeat(p: StoreParams<"nodeHeartbeat">): Promise<void> {
    await heartbeat(this.pool, p);
  }

  async nodeList(p: StoreParams<"nodeList">) {
    return liveNodes(this.pool, p);
  }

  async nodeLeave(p: StoreParams<"nodeLeave">): Promise<void> {
    await leave(this.pool, p);
  }
}
