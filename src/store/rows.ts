// Row decoding both drivers share: their tables have the same columns, and
// differ only in how a JSON column arrives (SQLite: text to parse;
// PostgreSQL: jsonb, parsed by the client), which each passes in.

import type { ErrorRecord, JobState, Role, TenantLimitSettings } from "@duetime/sdk/contract";
import { type AttemptFacts, retryDeadlineOf } from "../core/retry.js";
import { ONE_OFF_END } from "../core/states.js";
import { isInternalPool } from "../core/targets.js";
import type {
  ApiKeyRecord,
  AttemptRow,
  AuditEntry,
  BlobRecord,
  DeadLetterRow,
  DueRef,
  JobRecord,
  LeasedRow,
  LoadedDueEntry,
  NodeRecord,
  PurgedRow,
  RetentionKind,
  ShardLease,
  PossibleDuplicateRow,
} from "./store.js";

export type Row = Record<string, unknown>;

/** Adds a row's trace_parent (tracing, engine/tracing.ts) when it has one: without tracing, nothing is allocated or added. */
function withTraceParent<T extends { traceParent?: string }>(value: T, traceParent: unknown): T {
  if (typeof traceParent === "string") value.traceParent = traceParent;
  return value;
}

/** How a driver turns a JSON column into its value (null stays null). */
export type JsonColumn = <T>(value: unknown) => T;

/** PostgreSQL's: node-postgres has parsed jsonb already. */
export const jsonb: JsonColumn = <T>(value: unknown) => value as T;

/** toLoadedDue's columns, from `due d JOIN jobs j ON j.id = d.job_id`. */
export const DUE_COLUMNS = "d.job_id, d.tenant_id, d.shard, d.scheduled_for, d.due_at, j.kind, j.schedule, j.trace_parent";

export function toLoadedDue(r: Row, json: JsonColumn): LoadedDueEntry {
  return withTraceParent<LoadedDueEntry>(
    {
      jobId: r.job_id as string,
      tenantId: r.tenant_id as string,
      shard: r.shard as number,
      scheduledFor: r.scheduled_for as number,
      dueAt: r.due_at as number,
      kind: r.kind as "once" | "cron",
      schedule: json(r.schedule),
    },
    r.trace_parent,
  );
}

/** toDueRef's columns, from `due` alone. */
export const DUE_REF_COLUMNS = "job_id, shard, due_at";

export function toDueRef(r: Row): DueRef {
  return { jobId: r.job_id as string, shard: r.shard as number, dueAt: r.due_at as number };
}

/**
 * A lease token (LeasedRow.leaseToken: the grant's lease_incarnation, SQLite's
 * store-handle incarnation or PostgreSQL's lease epoch) as the column holds
 * it; null when the call names none (the attempt alone fences), and 0 (no
 * incarnation is) for one no grant of the store gave.
 */
export function incarnationOf(leaseToken: string | undefined): number | null {
  if (leaseToken === undefined) return null;
  return /^[1-9][0-9]{0,14}$/.test(leaseToken) ? Number(leaseToken) : 0;
}

/** The executions a lease of `pool` granted, in the lease's order: priority, then ready time, then id. */
export function toLeasedRows(granted: Row[], pool: string, json: JsonColumn): LeasedRow[] {
  granted.sort(
    (a, b) =>
      (b.priority as number) - (a.priority as number) ||
      (a.ready_at as number) - (b.ready_at as number) ||
      ((a.id as string) < (b.id as string) ? -1 : 1),
  );
  return granted.map((r) =>
    withTraceParent<LeasedRow>(
      {
        executionId: r.id as string,
        tenantId: r.tenant_id as string,
        jobId: r.job_id as string,
        name: r.name as string,
        attempt: r.attempt as number,
        ...(r.lease_incarnation != null ? { leaseToken: String(r.lease_incarnation) } : {}),
        retry: (r.attempt as number) - (r.attempt_base as number) > 1,
        payload: json(r.payload) ?? null,
        scheduledFor: r.scheduled_for as number,
        leaseUntil: r.lease_until as number,
        timeoutSeconds: (r.timeout_ms as number) / 1000,
        // Only the server's own runners (HTTP, broker relay) need the target; queue workers never see it.
        target: isInternalPool(pool) ? json(r.target) : { type: "queue", pool },
      },
      r.trace_parent,
    ),
  );
}

export function toApiKey(r: Row): ApiKeyRecord {
  return {
    id: r.id as string,
    tenantId: r.tenant_id as string,
    role: r.role as Role,
    digest: r.digest as string,
    name: (r.name as string | null) ?? null,
    createdAt: r.created_at as number,
    revokedAt: (r.revoked_at as number | null) ?? null,
  };
}

/** A history row (columns of executions, or of attempts, named alike); a succeeded attempt carries its result. */
export function toAttemptRow(r: Row, json: JsonColumn): AttemptRow {
  return {
    executionId: r.id as string,
    jobId: r.job_id as string,
    scheduledFor: r.scheduled_for as number,
    attempt: r.attempt as number,
    state: r.state as string,
    readyAt: r.ready_at as number | null,
    dispatchedAt: r.dispatched_at as number,
    dispatchedBy: r.dispatched_by as string | null,
    startedAt: r.started_at as number | null,
    finishedAt: r.finished_at as number | null,
    error: json<ErrorRecord | null>(r.error) ?? null,
    workerId: r.worker_id as string | null,
    ...(r.result !== null && r.result !== undefined ? { result: json(r.result) } : {}),
    ...(r.throttled_ms !== null && r.throttled_ms !== undefined ? { throttledMs: Number(r.throttled_ms) } : {}),
  };
}

/** The columns of the tenants table that hold limits, in TenantLimitSettings' order. */
export const TENANT_LIMIT_COLUMNS =
  "weight, max_pending_jobs, create_rate_per_second, dispatch_rate_per_second, max_leased_attempts, max_payload_bytes";

/** A tenants row as TenantLimitSettings (both drivers; numbers come back as numbers, NULL as null). */
export function toTenantLimits(r: Record<string, unknown>): TenantLimitSettings {
  const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    weight: Number(r.weight),
    maxPendingJobs: n(r.max_pending_jobs),
    createRatePerSecond: n(r.create_rate_per_second),
    dispatchRatePerSecond: n(r.dispatch_rate_per_second),
    maxLeasedAttempts: n(r.max_leased_attempts),
    maxPayloadBytes: n(r.max_payload_bytes),
  };
}

/** jobList's kind filter, on jobs aliased j: a literal, not a parameter, so the partial index of cron jobs (jobs_cron_by_tenant_created) matches it. */
export const KIND_FILTER = { once: "j.kind = 'once'", cron: "j.kind = 'cron'" } as const;

/** core/states.ts ONE_OFF_END's execution states, as an SQL list: the ends a one-off's job state is read from. */
export const ONE_OFF_ENDED = Object.keys(ONE_OFF_END.by)
  .map((s) => `'${s}'`)
  .join(", ");

/**
 * A jobs row (of alias `j`) whose state is read from its executions
 * (core/states.ts ONE_OFF_END): retention removes it with the last of them,
 * so no job row outlives what its state is read from.
 */
export const readsItsEnd = (j: string): string => `${j}.kind = 'once' AND ${j}.state IN (${ONE_OFF_END.over.map((s) => `'${s}'`).join(", ")})`;

/**
 * A one-off's job row removed with its executions (readsItsEnd), as the
 * archive keeps it: with its state as reads answered it (core/states.ts
 * ONE_OFF_END over the first of them to end), not as stored.
 */
export function endedOneOffRow(job: Row, executions: readonly Row[]): Row {
  const ends: Record<string, string> = ONE_OFF_END.by;
  const first = executions
    .filter((e) => e.job_id === job.id && ends[e.state as string] !== undefined)
    .sort((a, b) => Number(a.finished_at) - Number(b.finished_at))[0];
  return first ? { ...job, state: ends[first.state as string] } : job;
}

/**
 * core/states.ts ONE_OFF_END as SQL, on a jobs row aliased `j` and the first
 * ended one-off execution of it aliased `f` (joined by the driver; all NULL
 * when there is none): the job's state as reads answer it and lists filter by.
 */
export function jobStateSql(j = "j", f = "f"): string {
  const over = ONE_OFF_END.over.map((s) => `'${s}'`).join(", ");
  const by = Object.entries(ONE_OFF_END.by)
    .map(([ended, state]) => `WHEN '${ended}' THEN '${state}'`)
    .join(" ");
  return `CASE WHEN ${j}.state IN (${over}) THEN coalesce(CASE ${f}.state ${by} END, ${j}.state) ELSE ${j}.state END`;
}

/**
 * A jobs row (with next_run_at and next_due_at, store.ts JobRecord.nextRunAt;
 * job_state and ended_at, jobStateSql's answer and its execution's end) as
 * its record: a one-off read as ended changed last when its execution ended.
 */
export function toJob(r: Row, json: JsonColumn): JobRecord {
  return {
    tenantId: r.tenant_id as string,
    jobId: r.id as string,
    shard: r.shard as number,
    kind: r.kind as "once" | "cron",
    name: r.name as string,
    state: r.job_state as JobState,
    target: json(r.target),
    payload: json(r.payload) ?? null,
    schedule: json(r.schedule),
    retry: json(r.retry),
    timeoutSeconds: r.timeout_seconds as number,
    priority: r.priority as number,
    mode: r.mode as JobRecord["mode"],
    version: r.version as number,
    createdAt: r.created_at as number,
    updatedAt: r.job_state === r.state ? (r.updated_at as number) : Math.max(r.updated_at as number, r.ended_at as number),
    nextRunAt: (r.next_run_at as number | null) ?? null,
    nextDueAt: (r.next_due_at as number | null) ?? null,
  };
}

/** The blobs columns a blob's record is read from (toBlob). */
export const BLOB_COLUMNS = "blob_id, tenant_id, job_id, backend, state, bytes, sha256, chunks, created_at";

/** A blobs row as its record. */
export function toBlob(r: Row): BlobRecord {
  return {
    blobId: r.blob_id as string,
    tenantId: r.tenant_id as string,
    jobId: r.job_id as string,
    backend: r.backend as BlobRecord["backend"],
    state: r.state as BlobRecord["state"],
    bytes: (r.bytes as number | null) ?? null,
    sha256: (r.sha256 as string | null) ?? null,
    chunks: (r.chunks as number | null) ?? null,
    createdAt: r.created_at as number,
  };
}

/** A DEAD executions row as a dead letter. */
export function toDeadLetter(e: Row, json: JsonColumn): DeadLetterRow {
  return {
    executionId: e.id as string,
    tenantId: e.tenant_id as string,
    jobId: e.job_id as string,
    name: e.name as string,
    scheduledFor: e.scheduled_for as number,
    attempts: e.attempt as number,
    lastError: json<ErrorRecord | null>(e.last_error) ?? null,
    deadAt: e.dead_at as number,
    payload: json(e.payload) ?? null,
  };
}

/** An audit row as its entry. */
export function toAudit(r: Row, json: JsonColumn): AuditEntry & { id: number } {
  return {
    id: r.id as number,
    tenantId: r.tenant_id as string,
    at: r.at as number,
    actor: r.actor as string,
    action: r.action as string,
    subject: r.subject as string,
    details: json(r.details) ?? null,
  };
}

/** A row retention removes, as the archive sees it; `row` is the row with its JSON columns parsed (executions: with their attempts). */
export function toPurged(kind: RetentionKind, row: Row): PurgedRow {
  const common = { kind, tenantId: row.tenant_id as string, row };
  switch (kind) {
    case "executions":
      return { ...common, id: row.id as string, jobId: row.job_id as string, at: row.finished_at as number };
    case "jobs":
      return { ...common, id: row.id as string, jobId: row.id as string, at: row.updated_at as number };
    case "idempotency":
      return { ...common, id: row.key as string, jobId: row.job_id as string, at: row.created_at as number };
    case "audit":
      return { ...common, id: String(row.id), jobId: null, at: row.at as number };
  }
}

/** What core/retry.ts needs of a running execution row to decide how its attempt ends (cancel_requested: a boolean, or SQLite's 0/1). */
export function attemptFacts(e: Row): AttemptFacts {
  return {
    attempt: (e.attempt as number) - (e.attempt_base as number),
    retry: { maxAttempts: e.max_attempts as number, backoffSeconds: e.backoff_seconds as number, maxBackoffSeconds: e.max_backoff_seconds as number },
    cancelRequested: e.cancel_requested === true || e.cancel_requested === 1,
    retryDeadline: retryDeadlineOf(Number(e.scheduled_for), e.retry_deadline_seconds as number | null),
  };
}

export function toShard(r: Row): ShardLease {
  return { shard: r.shard as number, owner: r.owner as string | null, epoch: r.epoch as number, leaseUntil: r.lease_until as number };
}

export function toNode(r: Row): NodeRecord {
  return {
    nodeId: r.node_id as string,
    address: (r.address as string | null) ?? null,
    lastHeartbeatAt: r.last_heartbeat_at as number,
    expiresAt: r.expires_at as number,
  };
}

/** An execution a batch insert wrote, from its RETURNING row (dry_run: a boolean, or SQLite's 0/1). */
export interface InsertedExecution {
  jobId: string;
  executionId: string;
  tenantId: string;
  pool: string;
  state: string;
  dryRun: boolean;
}

export function toInserted(r: Row): InsertedExecution {
  return {
    jobId: r.job_id as string,
    executionId: r.id as string,
    tenantId: r.tenant_id as string,
    pool: r.pool as string,
    state: r.state as string,
    dryRun: r.dry_run === true || r.dry_run === 1,
  };
}

/** A row of executionPossibleDuplicates. */
export function toPossibleDuplicate(r: Row): PossibleDuplicateRow {
  return {
    executionId: r.id as string,
    tenantId: r.tenant_id as string,
    jobId: r.job_id as string,
    name: r.name as string,
    pool: r.pool as string,
    scheduledFor: Number(r.scheduled_for),
    state: r.state as string,
    attempt: Number(r.attempt),
    duplicateAttempt: Number(r.dup_attempt),
    reason: r.dup_reason as PossibleDuplicateRow["reason"],
    at: Number(r.dup_at),
  };
}
