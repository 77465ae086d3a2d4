// Jobs and the due index on SQLite: batch creation with idempotency keys,
// reads, and the version compare-and-sets (jobTransition, jobUpdate). Every
// write here runs in the caller's write transaction (index.ts).

import type { JobState } from "@duetime/sdk/contract";
import { executionIdFor } from "../../core/ids.js";
import { NOT_STARTED } from "../../core/states.js";
import { poolOf } from "../../core/targets.js";
import type { JobCreateOutcome, JobRecord, NewJob, NextOccurrence, PendingChange, PendingReplace, StoreParams } from "../store.js";
import { jobStateSql, KIND_FILTER, ONE_OFF_ENDED, toJob } from "../rows.js";
import { cancelInFlight, notStarted } from "./changes.js";
import { json, parse, type Query, type Row } from "./db.js";
import { insertExecutions, type NewExecution, readyInserted } from "./dispatch.js";

/** A jobs row as its record. */
const jobRecord = (r: Row): JobRecord => toJob(r, parse);

/** The first ended execution of the one-off aliased `j`, as an SQL subquery of its id: core/states.ts ONE_OFF_END reads its state. */
const firstEnded = (j: string) => `SELECT x.id FROM executions x WHERE ${j}.kind = 'once' AND x.id > ${j}.id || '-' AND x.id < ${j}.id || '.'
      AND x.once = 1 AND x.state IN (${ONE_OFF_ENDED}) ORDER BY x.finished_at LIMIT 1`;

/**
 * A job with its next occurrence (store.ts JobRecord.nextRunAt): a recurring
 * job's due entry; a one-off's pending execution that is ready first. And
 * its state as read (rows.ts jobStateSql, over its first ended execution f).
 */
const JOB_WITH_NEXT = `SELECT j.*, coalesce(d.scheduled_for, p.scheduled_for) AS next_run_at, coalesce(d.due_at, p.ready_at) AS next_due_at,
    ${jobStateSql()} AS job_state, f.finished_at AS ended_at
  FROM jobs j LEFT JOIN due d ON d.job_id = j.id
  LEFT JOIN executions p ON p.id = (
    SELECT x.id FROM executions x WHERE j.kind = 'once' AND x.id > j.id || '-' AND x.id < j.id || '.'
      AND x.state = '${NOT_STARTED.waiting}' AND x.attempt = ${NOT_STARTED.attempt}
    ORDER BY x.ready_at LIMIT 1)
  LEFT JOIN executions f ON f.id = (${firstEnded("j")})`;

/** A compare-and-set of a job row's write: the job is not a one-off that ended (ONE_OFF_END: read from its execution, which moves without the job). */
const NOT_ENDED = `NOT EXISTS (${firstEnded("jobs")})`;

/** A one-off's pending execution (store.ts NewJob.execution), held when its job is paused. */
function pendingRow(jobId: string, at: NextOccurrence, held: boolean): NewExecution {
  return [executionIdFor(jobId, at.scheduledFor), jobId, at.scheduledFor, at.dueAt, held ? NOT_STARTED.held : NOT_STARTED.waiting, null];
}

export function createJobs(q: Query, jobs: NewJob[], nodeId: string, now: number): JobCreateOutcome[] {
  const ready: Row[] = [];
  const outcomes = jobs.map((j) => createOne(q, j, now, nodeId, ready));
  readyInserted(q, ready);
  return outcomes;
}

/** Writes a job, and a one-off's execution (its lane and ready counter rows are added to `ready`, for one write per batch). */
function createOne(q: Query, { job, due, execution, idempotency, traceParent }: NewJob, now: number, nodeId: string, ready: Row[]): JobCreateOutcome {
  if (idempotency && !claimKey(q, job.tenantId, job.jobId, idempotency, now)) {
    // Held by another request: read after the claim, as it stands.
    const holder = q("SELECT request_hash, job_id FROM idempotency_keys WHERE tenant_id = ? AND key = ?").get(job.tenantId, idempotency.key) as
      | { request_hash: string; job_id: string }
      | undefined;
    if (holder?.request_hash !== idempotency.requestHash) return { status: "idempotency_mismatch" };
    const existing = getJob(q, job.tenantId, holder.job_id);
    // Its job gone since the claim (another handle's retention): as postgres/jobs.ts answers it.
    return existing ? { status: "existing", job: existing } : { status: "idempotency_mismatch" };
  }
  const pool = poolOf(job.target);
  const target = JSON.stringify(job.target);
  const payload = json(job.payload);
  // Positional parameters: named ones cost about 2 µs a row more to bind.
  q(
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
  if (due) putDue(q, job.jobId, job.tenantId, job.shard, due);
  if (execution) {
    insertOneOffExecution(q, job, execution, { pool, target, payload, traceParent: traceParent ?? null, now, nodeId });
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
function insertOneOffExecution(
  q: Query,
  job: NewJob["job"],
  at: NextOccurrence,
  w: { pool: string; target: string; payload: string | null; traceParent: string | null; now: number; nodeId: string },
): void {
  q(
    `INSERT INTO executions (id, tenant_id, job_id, pool, name, scheduled_for, priority, state, max_attempts,
           backoff_seconds, max_backoff_seconds, retry_deadline_seconds, timeout_ms, ready_at, payload, target, dispatched_at, dispatched_by,
           trace_parent, once)
         VALUES (?, ?, ?, ?, ?, ?, ?, '${NOT_STARTED.waiting}', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
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

/**
 * Claims an idempotency key for jobId, a compare-and-set in the insert: a
 * new key, or one whose job is gone (retention removed it first) under the
 * same request hash, is taken; a key another job holds, or another
 * request's, changes nothing (false), whatever was read before.
 */
function claimKey(q: Query, tenantId: string, jobId: string, k: { key: string; requestHash: string }, now: number): boolean {
  return (
    q(
      `INSERT INTO idempotency_keys (tenant_id, key, request_hash, job_id, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (tenant_id, key) DO UPDATE SET request_hash = excluded.request_hash, job_id = excluded.job_id, created_at = excluded.created_at
       WHERE idempotency_keys.request_hash = excluded.request_hash
         AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = idempotency_keys.job_id AND j.tenant_id = idempotency_keys.tenant_id)`,
    ).run(tenantId, k.key, k.requestHash, jobId, now).changes === 1
  );
}

function replaceDue(q: Query, jobId: string, tenantId: string, shard: number, due: NextOccurrence | null | "keep"): void {
  if (due === null) q("DELETE FROM due WHERE job_id = ?").run(jobId);
  else if (due !== "keep") putDue(q, jobId, tenantId, shard, due);
}

function putDue(q: Query, jobId: string, tenantId: string, shard: number, due: NextOccurrence): void {
  q("INSERT OR REPLACE INTO due (job_id, tenant_id, shard, scheduled_for, due_at) VALUES (?, ?, ?, ?, ?)").run(
    jobId,
    tenantId,
    shard,
    due.scheduledFor,
    due.dueAt,
  );
}

export function getJob(q: Query, tenantId: string, jobId: string): JobRecord | null {
  const row = q(`${JOB_WITH_NEXT} WHERE j.id = ? AND j.tenant_id = ?`).get(jobId, tenantId) as Row | undefined;
  return row ? jobRecord(row) : null;
}

export function listJobs(q: Query, p: StoreParams<"jobList">): JobRecord[] {
  const where = ["j.tenant_id = @tenant"];
  if (p.state) where.push(`${jobStateSql()} = @state`);
  if (p.name) where.push("j.name = @name");
  if (p.pool) where.push("j.pool = @pool");
  if (p.kind) where.push(KIND_FILTER[p.kind]);
  if (p.after) where.push("(j.created_at < @afterCreated OR (j.created_at = @afterCreated AND j.id < @afterId))");
  const rows = q(`${JOB_WITH_NEXT} WHERE ${where.join(" AND ")} ORDER BY j.created_at DESC, j.id DESC LIMIT @limit`).all({
    tenant: p.tenantId,
    state: p.state ?? null,
    name: p.name ?? null,
    pool: p.pool ?? null,
    afterCreated: p.after?.createdAt ?? null,
    afterId: p.after?.jobId ?? null,
    limit: p.limit,
  }) as Row[];
  return rows.map(jobRecord);
}

export function transitionJob(q: Query, p: StoreParams<"jobTransition">): JobRecord | null {
  const row = q(
    `UPDATE jobs SET state = ?, version = version + 1, updated_at = ?
         WHERE id = ? AND tenant_id = ? AND version = ? AND ${NOT_ENDED} RETURNING shard`,
  ).get(p.state, p.now, p.jobId, p.tenantId, p.fromVersion) as { shard: number } | undefined;
  if (!row) return null;
  replaceDue(q, p.jobId, p.tenantId, row.shard, p.due);
  if (p.cancelExecutions) cancelInFlight(q, p.jobId, p.now, null);
  if (p.pending) changePending(q, p.jobId, p.pending);
  return getJob(q, p.tenantId, p.jobId);
}

/** Holds or releases a one-off's pending execution: each a compare-and-set on its state. */
function changePending(q: Query, jobId: string, change: PendingChange): void {
  if ("hold" in change) {
    q(`UPDATE executions SET state = @held WHERE id = @id AND state = @waiting AND attempt = @attempt`).run({
      ...NOT_STARTED,
      id: executionIdFor(jobId, change.hold),
    });
    return;
  }
  q(`UPDATE executions SET state = @waiting, ready_at = @readyAt WHERE id = @id AND state = @held`).run({
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
function replacePending(q: Query, jobId: string, jobState: JobState, r: PendingReplace, now: number, nodeId: string): void {
  if (r.from !== null) {
    const removed = q(`DELETE FROM executions WHERE id = ? AND ${notStarted()}`).run(executionIdFor(jobId, r.from));
    if (removed.changes === 0) return;
  }
  if (r.to) insertExecutions(q, [pendingRow(jobId, r.to, jobState === "PAUSED")], now, nodeId, { anyJobState: true });
}

export function updateJob(q: Query, p: StoreParams<"jobUpdate">): JobRecord | null {
  const f = p.fields;
  const row = q(
    `UPDATE jobs SET kind = @kind, name = @name, target = @target, pool = @pool, payload = @payload, schedule = @schedule,
           retry = @retry, timeout_seconds = @timeout, priority = @priority, mode = @mode, version = version + 1, updated_at = @now
         WHERE id = @id AND tenant_id = @tenant AND version = @version AND ${NOT_ENDED} RETURNING shard, state`,
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
  replaceDue(q, p.jobId, p.tenantId, row.shard, p.due);
  if (p.pending) replacePending(q, p.jobId, row.state, p.pending, p.now, p.nodeId);
  return getJob(q, p.tenantId, p.jobId);
}
