// Dispatch on PostgreSQL: due entries become executions, fenced by the
// shard's owner and epoch in the statement that consumes them; and the extra
// executions of trigger and backfill. Every batch is a handful of statements
// over unnest arrays, whatever its size.

import type pg from "pg";
import type { ErrorRecord, Overlap } from "@duetime/sdk/contract";
import { executionIdFor } from "../../core/ids.js";
import { overlapAction, REPLACED_ERROR, skippedError } from "../../core/misfire.js";
import { DISPATCHING_STATES, IN_FLIGHT_STATES, LAST_DISPATCH_JOB_CHANGE } from "../../core/states.js";
import type { AttemptRow, DispatchItem, DueEntry } from "../store.js";
import { cancelInFlight, changeJobs } from "./changes.js";
import { toInserted } from "../rows.js";
import { json, rows } from "./db.js";
import { attemptZeros } from "./history.js";

type Dispatched = { jobId: string; executionId: string; tenantId: string; pool: string };

/** A READY row of insertExecutions that its job's dry run (jobs.mode, read in the statement) records SKIPPED (core/attempt-rules.ts insertedExecutionState). */
const DRY_RUN = "(NOT $13 AND x.state = 'READY' AND j.mode = 'dry_run')";
const DRY_RUN_ERROR = JSON.stringify(skippedError("dry_run"));

/** An execution to insert; whenIdle inserts it only while its job has none in flight (overlap: forbid). */
export interface NewExecution {
  jobId: string;
  scheduledFor: number;
  readyAt: number | null;
  state: "READY" | "PAUSED" | "SKIPPED";
  lastError: ErrorRecord | null;
  whenIdle: boolean;
}

const skipped = (jobId: string, scheduledFor: number, reason: string): NewExecution => ({
  jobId,
  scheduledFor,
  readyAt: null,
  state: "SKIPPED",
  lastError: skippedError(reason),
  whenIdle: false,
});

/**
 * The fence and the consumption in one statement. The shard rows are read
 * FOR SHARE: a takeover (cluster.ts acquireShards) waits until this
 * transaction ends, and one that committed first is seen, so the item is
 * fenced. Due entries are consumed only where they still name the same
 * occurrence: moved to next, or deleted. Answers the consumed items, and the
 * items whose shard is held (held but not consumed: stale).
 */
const CONSUME_DUE = `
WITH x AS (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[])
    AS x(job_id, scheduled_for, shard, epoch, next_at, next_due)
), held AS MATERIALIZED (
  SELECT x.* FROM x JOIN shards s ON s.shard = x.shard AND s.owner = $7 AND s.epoch = x.epoch
  ORDER BY x.shard -- locked in shard order, as acquireShards takes them: the two cannot deadlock
  FOR SHARE OF s
), moved AS (
  UPDATE due d SET scheduled_for = h.next_at, due_at = h.next_due FROM held h
  WHERE d.job_id = h.job_id AND d.scheduled_for = h.scheduled_for AND h.next_at IS NOT NULL
  RETURNING d.job_id
), deleted AS (
  DELETE FROM due d USING held h
  WHERE d.job_id = h.job_id AND d.scheduled_for = h.scheduled_for AND h.next_at IS NULL
  RETURNING d.job_id
)
SELECT job_id, true AS consumed FROM moved
UNION ALL SELECT job_id, true FROM deleted
UNION ALL SELECT job_id, false FROM held`;

export async function dispatch(
  c: pg.PoolClient,
  p: { nodeId: string; epochs: ReadonlyMap<number, number>; now: number; items: DispatchItem[] },
): Promise<{ dispatched: Dispatched[]; wouldRun: Dispatched[]; stale: string[]; fenced: string[] }> {
  if (p.items.length === 0) return { dispatched: [], wouldRun: [], stale: [], fenced: [] };
  const entries = p.items.map((i) => i.entry);
  const answered = await rows<{ job_id: string; consumed: boolean }>(
    c,
    CONSUME_DUE,
    [
      entries.map((e) => e.jobId),
      entries.map((e) => e.scheduledFor),
      entries.map((e) => e.shard),
      entries.map((e) => p.epochs.get(e.shard) ?? null),
      p.items.map((i) => i.next?.scheduledFor ?? null),
      p.items.map((i) => i.next?.dueAt ?? null),
      p.nodeId,
    ],
    "dispatch_consume_due",
  );
  const consumed = new Set(answered.filter((r) => r.consumed).map((r) => r.job_id));
  const held = new Set(answered.map((r) => r.job_id));
  const stale: string[] = [];
  const fenced: string[] = [];
  const executions: NewExecution[] = [];
  const replace: string[] = [];
  const finished: string[] = [];
  for (const item of p.items) {
    const { entry } = item;
    if (!consumed.has(entry.jobId)) {
      (held.has(entry.jobId) ? stale : fenced).push(entry.jobId);
      continue;
    }
    for (const s of item.skipped ?? []) executions.push(skipped(entry.jobId, s.scheduledFor, s.reason));
    const run = item.run === undefined ? entry.scheduledFor : item.run;
    if (run !== null) executions.push(runOf(entry, run, item.overlap ?? "allow", p.now, replace));
    if (item.completeJob) finished.push(entry.jobId);
  }
  await cancelInFlight(c, replace, p.now, REPLACED_ERROR);
  const inserted = await insertExecutions(c, executions, p.now, p.nodeId);
  // A run that waited for its job to be idle and found it busy is recorded SKIPPED instead.
  const ids = new Set(inserted.map((r) => r.executionId));
  const busy = executions.filter((e) => e.whenIdle && !ids.has(executionIdFor(e.jobId, e.scheduledFor)));
  await insertExecutions(
    c,
    busy.map((e) => skipped(e.jobId, e.scheduledFor, "overlap")),
    p.now,
    p.nodeId,
  );
  await changeJobs(
    c,
    finished.map((jobId) => ({ jobId, change: LAST_DISPATCH_JOB_CHANGE })),
    p.now,
  );
  const dispatched = inserted.filter((r) => r.state === "READY").map(({ state: _, dryRun: _d, ...r }) => r);
  const wouldRun = inserted.filter((r) => r.dryRun).map(({ state: _, dryRun: _d, ...r }) => r);
  return { dispatched, wouldRun, stale, fenced };
}

/**
 * The execution of an occurrence that runs now, as core/misfire.ts
 * overlapAction says for a job with an execution in flight. No read decides
 * whether one is: "replace" cancels whatever is in flight (none: nothing
 * changes), "skip" inserts the run only where the insert finds none.
 */
function runOf(entry: DueEntry, run: number, overlap: Overlap, now: number, replace: string[]): NewExecution {
  const action = overlapAction(overlap, true);
  if (action === "replace") replace.push(entry.jobId);
  return { jobId: entry.jobId, scheduledFor: run, readyAt: Math.min(entry.dueAt, now), state: "READY", lastError: null, whenIdle: action === "skip" };
}

/**
 * One INSERT for a batch of executions, its columns copied from the job
 * rows. One that exists already is left alone (ON CONFLICT on the occurrence),
 * and so is a whenIdle one whose job has an execution in flight (checked in
 * the statement). Without a tenant (dispatch), only jobs in core/states.ts
 * DISPATCHING_STATES get executions; with one (trigger, backfill), any state
 * of that tenant's job does; with anyJobState (a one-off's own execution,
 * written with its job), any job. A READY row of a job in dry run is written
 * SKIPPED (reason dry_run), the job's mode read by this statement (store.ts
 * dispatchMany). Answers those inserted, in the order given.
 */
export async function insertExecutions(
  c: pg.PoolClient,
  executions: NewExecution[],
  now: number,
  nodeId: string,
  only: { tenantId?: string; anyJobState?: boolean } = {},
) {
  if (executions.length === 0) return [];
  const inserted = await rows(
    c,
    `INSERT INTO executions (id, tenant_id, job_id, scheduled_for, pool, name, priority, state, max_attempts,
       backoff_seconds, max_backoff_seconds, retry_deadline_seconds, timeout_ms, ready_at, payload, target, dispatched_at, dispatched_by,
       last_error, finished_at, trace_parent, once)
     SELECT x.id, j.tenant_id, j.id, x.scheduled_for, j.pool, j.name, j.priority, CASE WHEN ${DRY_RUN} THEN 'SKIPPED' ELSE x.state END,
       (j.retry ->> 'maxAttempts')::int, (j.retry ->> 'backoffSeconds')::float8, (j.retry ->> 'maxBackoffSeconds')::float8,
       (j.retry ->> 'deadlineSeconds')::float8,
       round(j.timeout_seconds * 1000)::bigint, x.ready_at, j.payload, j.target, $8, $9,
       CASE WHEN ${DRY_RUN} THEN $14::jsonb ELSE x.last_error::jsonb END,
       CASE WHEN ${DRY_RUN} OR x.state = 'SKIPPED' THEN $8::bigint END, j.trace_parent, j.kind = 'once'
     FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::bool[])
       AS x(id, job_id, scheduled_for, ready_at, state, last_error, when_idle)
     JOIN jobs j ON j.id = x.job_id
     WHERE ($13 OR ($10::text IS NULL AND j.state = ANY($11::text[])) OR j.tenant_id = $10)
       AND (NOT x.when_idle OR NOT EXISTS (
         SELECT 1 FROM executions f WHERE f.job_id = j.id AND f.state = ANY($12::text[])))
     ON CONFLICT (job_id, scheduled_for) DO NOTHING
     RETURNING id, job_id, tenant_id, pool, state, coalesce(last_error ->> 'reason' = 'dry_run', false) AS dry_run`,
    [
      executions.map((e) => executionIdFor(e.jobId, e.scheduledFor)),
      executions.map((e) => e.jobId),
      executions.map((e) => e.scheduledFor),
      executions.map((e) => e.readyAt),
      executions.map((e) => e.state),
      executions.map((e) => json(e.lastError ?? undefined)),
      executions.map((e) => e.whenIdle),
      now,
      nodeId,
      only.tenantId ?? null,
      DISPATCHING_STATES,
      IN_FLIGHT_STATES,
      only.anyJobState ?? false,
      DRY_RUN_ERROR,
    ],
    "executions_insert",
  );
  const byId = new Map(inserted.map((r) => [r.id as string, r]));
  return executions.flatMap((e) => {
    const r = byId.get(executionIdFor(e.jobId, e.scheduledFor));
    return r ? [toInserted(r)] : [];
  });
}

/** Trigger and backfill: READY executions of one tenant's job, in any job state; null where the occurrence has one. */
export async function createExecutions(
  c: pg.PoolClient,
  p: { tenantId: string; jobId: string; nodeId: string; now: number; items: { scheduledFor: number; readyAt: number }[] },
): Promise<(AttemptRow | null)[]> {
  const executions = p.items.map(
    (i): NewExecution => ({ jobId: p.jobId, scheduledFor: i.scheduledFor, readyAt: i.readyAt, state: "READY", lastError: null, whenIdle: false }),
  );
  const created = await insertExecutions(c, executions, p.now, p.nodeId, { tenantId: p.tenantId });
  const rows = await attemptZeros(
    c,
    created.map((r) => r.executionId),
  );
  return executions.map((e) => rows.get(executionIdFor(e.jobId, e.scheduledFor)) ?? null);
}
