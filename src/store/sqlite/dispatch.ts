// The due index and dispatch on SQLite: due entries become executions,
// fenced by the shard's owner and epoch; and the extra executions of trigger
// and backfill. Each batch is a few statements over json_each, whatever its
// size.

import type { Overlap } from "@duetime/sdk/contract";
import { executionIdFor, SHARD_COUNT } from "../../core/ids.js";
import { overlapAction, REPLACED_ERROR, skippedError } from "../../core/misfire.js";
import { DISPATCHING_STATES, IN_FLIGHT_STATES, LAST_DISPATCH_JOB_CHANGE } from "../../core/states.js";
import type { AttemptRow, DispatchItem, DueEntry, DueRef, LoadedDueEntry } from "../store.js";
import { DUE_COLUMNS, DUE_REF_COLUMNS, type InsertedExecution, toDueRef, toInserted, toLoadedDue } from "../rows.js";
import { cancelInFlight, changeJobs } from "./changes.js";
import { parse, type Query, type Row } from "./db.js";
import { attemptZero } from "./history.js";

/**
 * [executionId, jobId, scheduledFor, readyAt, state, lastError JSON, whenIdle]
 * for insertExecutions; whenIdle 1 inserts it only while its job has no
 * execution in flight (overlap: forbid).
 */
export type NewExecution = [string, string, number, number | null, "READY" | "PAUSED" | "SKIPPED", string | null, (0 | 1)?];

/** A READY row of insertExecutions that its job's dry run (jobs.mode, read in the statement) records SKIPPED (core/attempt-rules.ts insertedExecutionState). */
const DRY_RUN = "(@any = 0 AND x.value ->> 4 = 'READY' AND j.mode = 'dry_run')";
const DRY_RUN_ERROR = JSON.stringify(skippedError("dry_run"));

function skippedRow(jobId: string, scheduledFor: number, reason: string): NewExecution {
  return [executionIdFor(jobId, scheduledFor), jobId, scheduledFor, null, "SKIPPED", JSON.stringify(skippedError(reason))];
}

export function loadDue(q: Query, { shards, before, limit }: { shards: readonly number[]; before: number; limit: number }): LoadedDueEntry[] {
  if (shards.length === 0) return [];
  const cols = DUE_COLUMNS;
  const rows = (
    shards.length === SHARD_COUNT
      ? q(
          `SELECT ${cols} FROM due d JOIN jobs j ON j.id = d.job_id
             WHERE d.due_at <= ? ORDER BY d.due_at LIMIT ?`,
        ).all(before, limit)
      : q(
          `SELECT ${cols} FROM due d INDEXED BY due_by_time JOIN jobs j ON j.id = d.job_id
             WHERE d.due_at <= ? AND d.shard IN (SELECT value FROM json_each(?)) ORDER BY d.due_at LIMIT ?`,
        ).all(before, JSON.stringify(shards), limit)
  ) as Row[];
  return rows.map((r) => toLoadedDue(r, parse));
}

export function getDue(q: Query, { jobIds }: { jobIds: readonly string[] }): LoadedDueEntry[] {
  if (jobIds.length === 0) return [];
  const rows = q(`SELECT ${DUE_COLUMNS} FROM due d JOIN jobs j ON j.id = d.job_id WHERE d.job_id IN (SELECT value FROM json_each(?))`).all(
    JSON.stringify(jobIds),
  ) as Row[];
  return rows.map((r) => toLoadedDue(r, parse));
}

export function dueRefs(q: Query, { jobIds }: { jobIds: readonly string[] }): DueRef[] {
  if (jobIds.length === 0) return [];
  const rows = q(`SELECT ${DUE_REF_COLUMNS} FROM due WHERE job_id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(jobIds)) as Row[];
  return rows.map(toDueRef);
}

export function scanDue(q: Query, { shard, after, limit }: { shard: number; after: string; limit: number }): DueRef[] {
  const rows = q(`SELECT ${DUE_REF_COLUMNS} FROM due INDEXED BY due_by_shard WHERE shard = ? AND job_id > ? ORDER BY job_id LIMIT ?`).all(
    shard,
    after,
    limit,
  ) as Row[];
  return rows.map(toDueRef);
}

/** dispatchMany, in the caller's write transaction. */
export function dispatch(q: Query, p: { nodeId: string; epochs: ReadonlyMap<number, number>; now: number; items: DispatchItem[] }) {
  const stale: string[] = [];
  const fenced: string[] = [];
  const rows: NewExecution[] = [];
  const finished: string[] = [];
  const consumed = consumeDue(q, p.nodeId, p.epochs, p.items);
  // Only to say why nothing was written, read after the writes: the shard moved (fenced), else the entry did (stale).
  const missed = p.items.filter((i) => !consumed.has(i.entry.jobId));
  const held = missed.length > 0 ? heldShards(q, p.nodeId, p.epochs, missed) : new Set<number>();
  for (const item of p.items) {
    const { entry } = item;
    if (!consumed.has(entry.jobId)) {
      (held.has(entry.shard) ? stale : fenced).push(entry.jobId);
      continue;
    }
    for (const s of item.skipped ?? []) rows.push(skippedRow(entry.jobId, s.scheduledFor, s.reason));
    const run = item.run === undefined ? entry.scheduledFor : item.run;
    if (run !== null) rows.push(runRow(q, entry, run, item.overlap ?? "allow", p.now));
    if (item.completeJob) finished.push(entry.jobId);
  }
  const inserted = insertExecutions(q, rows, p.now, p.nodeId);
  // A run that waited for its job to be idle and found it busy is recorded SKIPPED instead.
  const ids = new Set(inserted.map((r) => r.executionId));
  const busy = rows.filter((r) => r[6] === 1 && !ids.has(r[0])).map((r) => skippedRow(r[1], r[2], "overlap"));
  insertExecutions(q, busy, p.now, p.nodeId);
  changeJobs(
    q,
    finished.map((jobId) => ({ jobId, change: LAST_DISPATCH_JOB_CHANGE })),
    p.now,
  );
  const dispatched = inserted.filter((r) => r.state === "READY").map(({ state: _, dryRun: _d, ...r }) => r);
  const wouldRun = inserted.filter((r) => r.dryRun).map(({ state: _, dryRun: _d, ...r }) => r);
  return { dispatched, wouldRun, stale, fenced };
}

/** The items' shards this node holds at the epoch it names (one read for the batch): why a miss of consumeDue missed. */
function heldShards(q: Query, nodeId: string, epochs: ReadonlyMap<number, number>, items: DispatchItem[]): Set<number> {
  const shards = [...new Set(items.map((i) => i.entry.shard))];
  const owned = q("SELECT shard, epoch FROM shards WHERE owner = @node AND shard IN (SELECT value FROM json_each(@shards))").all({
    node: nodeId,
    shards: JSON.stringify(shards),
  }) as { shard: number; epoch: number }[];
  return new Set(owned.filter((r) => epochs.get(r.shard) === r.epoch).map((r) => r.shard));
}

/**
 * The fence and the consumption in one statement each, the dispatch's
 * compare-and-set: an entry moves to its next occurrence (or goes, with
 * none) only if it still names this one and its shard's row still names
 * nodeId as owner at the epoch the item was dispatched under. A takeover
 * committed before the statement runs is seen by it, whenever the caller
 * read the shard, so a stale owner consumes nothing. Two statements for the
 * batch, not one per item. Answers the jobs whose entry was consumed.
 */
function consumeDue(q: Query, nodeId: string, epochs: ReadonlyMap<number, number>, items: DispatchItem[]): Set<string> {
  const fence = (i: DispatchItem) => [i.entry.shard, epochs.get(i.entry.shard) ?? null];
  const moving = items.filter((i) => i.next).map((i) => [i.entry.jobId, i.entry.scheduledFor, i.next!.scheduledFor, i.next!.dueAt, ...fence(i)]);
  const ending = items.filter((i) => !i.next).map((i) => [i.entry.jobId, i.entry.scheduledFor, ...fence(i)]);
  const moved = moving.length
    ? (q(
        `UPDATE due SET scheduled_for = x.value ->> 2, due_at = x.value ->> 3 FROM json_each(@items) x
           WHERE due.job_id = x.value ->> 0 AND due.scheduled_for = x.value ->> 1
             AND EXISTS (SELECT 1 FROM shards s WHERE s.shard = x.value ->> 4 AND s.owner = @node AND s.epoch = x.value ->> 5)
           RETURNING due.job_id AS job_id`,
      ).all({ items: JSON.stringify(moving), node: nodeId }) as { job_id: string }[])
    : [];
  const ended = ending.length
    ? (q(
        `DELETE FROM due WHERE (job_id, scheduled_for) IN (
           SELECT x.value ->> 0, x.value ->> 1 FROM json_each(@items) x
           WHERE EXISTS (SELECT 1 FROM shards s WHERE s.shard = x.value ->> 2 AND s.owner = @node AND s.epoch = x.value ->> 3))
         RETURNING job_id`,
      ).all({ items: JSON.stringify(ending), node: nodeId }) as { job_id: string }[])
    : [];
  return new Set([...moved, ...ended].map((r) => r.job_id));
}

/**
 * The execution of an occurrence that runs now, as core/misfire.ts
 * overlapAction says for a job with an execution in flight. No read decides
 * whether one is: "replace" cancels whatever is in flight (none: nothing
 * changes), "skip" inserts the run only where the insert finds none.
 */
function runRow(q: Query, entry: DueEntry, run: number, overlap: Overlap, now: number): NewExecution {
  const action = overlapAction(overlap, true);
  if (action === "replace") cancelInFlight(q, entry.jobId, now, REPLACED_ERROR);
  return [executionIdFor(entry.jobId, run), entry.jobId, run, Math.min(entry.dueAt, now), "READY", null, action === "skip" ? 1 : 0];
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
export function insertExecutions(
  q: Query,
  rows: NewExecution[],
  now: number,
  nodeId: string,
  only: { tenantId?: string; anyJobState?: boolean } = {},
): InsertedExecution[] {
  if (rows.length === 0) return [];
  const inserted = q(
    `INSERT INTO executions (id, tenant_id, job_id, pool, name, scheduled_for, priority, state, max_attempts,
           backoff_seconds, max_backoff_seconds, retry_deadline_seconds, timeout_ms, ready_at, payload, target, dispatched_at, dispatched_by,
           last_error, finished_at, trace_parent, once)
         SELECT x.value ->> 0, j.tenant_id, j.id, j.pool, j.name, x.value ->> 2, j.priority, CASE WHEN ${DRY_RUN} THEN 'SKIPPED' ELSE x.value ->> 4 END,
           j.retry ->> '$.maxAttempts', j.retry ->> '$.backoffSeconds', j.retry ->> '$.maxBackoffSeconds', j.retry ->> '$.deadlineSeconds',
           CAST(round(j.timeout_seconds * 1000) AS INTEGER), x.value ->> 3, j.payload, j.target, @now, @node,
           CASE WHEN ${DRY_RUN} THEN @dryRun ELSE x.value ->> 5 END, CASE WHEN ${DRY_RUN} OR x.value ->> 4 = 'SKIPPED' THEN @now END, j.trace_parent,
           j.kind = 'once'
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
  readyInserted(
    q,
    inserted.filter((r) => r.state === "READY"),
  );
  return inserted.map(toInserted);
}

/**
 * New READY executions: their lanes wake by the earliest (a lane that sleeps
 * past it, or is new), and the ready counters grow; one statement each for
 * the batch (the update and delete triggers keep both for every later change).
 */
export function readyInserted(q: Query, rows: Row[]): void {
  if (rows.length === 0) return;
  const input = JSON.stringify(rows.map((r) => [r.pool, r.tenant_id, r.priority, r.ready_at]));
  q(
    `INSERT INTO lanes (pool, tenant_id, idle_until)
         SELECT value ->> 0, value ->> 1, min(value ->> 3) FROM json_each(@input) GROUP BY 1, 2
       ON CONFLICT (pool, tenant_id) DO UPDATE SET idle_until = excluded.idle_until WHERE lanes.idle_until > excluded.idle_until`,
  ).run({ input });
  q(
    `INSERT INTO ready_counts (tenant_id, pool, priority, hour, n)
         SELECT value ->> 1, value ->> 0, value ->> 2, CAST(coalesce(value ->> 3, 0) / 3600000 AS INTEGER), count(*) FROM json_each(@input) GROUP BY 1, 2, 3, 4
       ON CONFLICT (tenant_id, pool, priority, hour) DO UPDATE SET n = n + excluded.n`,
  ).run({ input });
}

/** Trigger and backfill: READY executions of one tenant's job, in any job state; null where the occurrence has one. */
export function createExecutions(
  q: Query,
  p: { tenantId: string; jobId: string; nodeId: string; now: number; items: { scheduledFor: number; readyAt: number }[] },
): (AttemptRow | null)[] {
  const rows: NewExecution[] = p.items.map((i) => [executionIdFor(p.jobId, i.scheduledFor), p.jobId, i.scheduledFor, i.readyAt, "READY", null]);
  const created = new Set(insertExecutions(q, rows, p.now, p.nodeId, { tenantId: p.tenantId }).map((r) => r.executionId));
  return rows.map(([id]) => (created.has(id) ? attemptZero(q, id) : null));
}
