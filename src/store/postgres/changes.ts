// Core's rules as writes (core/states.ts): a job's state changes, each a
// compare-and-set on the state it changes from, and the cancel of a job's
// in-flight executions. Both are single statements over arrays.

import type { ErrorRecord } from "@duetime/sdk/contract";
import { inFlightOnCancel, type JobChange, NOT_STARTED } from "../../core/states.js";
import { type Db, json, nowOr, rows } from "./db.js";

/**
 * core/states.ts NOT_STARTED as a condition on an execution row: held, or
 * READY and never leased. Written without a top-level OR on purpose: an OR
 * of states lets the planner answer each branch from the partial indexes
 * on state (a BitmapOr), which reads a pool's every READY entry once per
 * job, where the primary key finds the job's few rows (24 ms against 2 ms
 * for a completion batch of 100 beside 20,000 READY rows).
 */
export const NOT_STARTED_SQL = `(state = ANY('{${NOT_STARTED.held},${NOT_STARTED.waiting}}') AND (state = '${NOT_STARTED.held}' OR attempt = ${NOT_STARTED.attempt}))`;

/**
 * Applies core's job changes in one statement, each only while the job is
 * still in change.from (a job that moved meanwhile is left alone). `now`
 * absent: the database clock.
 */
export async function changeJobs(db: Db, items: { jobId: string; change: JobChange }[], now: number | null): Promise<void> {
  if (items.length === 0) return;
  await db.query({
    name: "change_jobs",
    text: `UPDATE jobs SET state = x.to_state, version = version + 1, updated_at = ${nowOr("$4")}
       FROM unnest($1::text[], $2::text[], $3::text[]) AS x(id, from_state, to_state)
       WHERE jobs.id = x.id AND jobs.state = x.from_state`,
    values: [items.map((i) => i.jobId), items.map((i) => i.change.from), items.map((i) => i.change.to), now],
  });
}

/**
 * What an ended one-off leaves (core/states.ts ONE_OFF_END): its executions
 * that had not started, which a trigger overtook. Found by job id as an
 * array (an index condition on the primary key), never by a join the
 * planner could answer by reading the history whole; only rows found are
 * checked against their job's kind.
 */
export async function dropOvertaken(db: Db, jobIds: readonly string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await db.query({
    name: "drop_overtaken",
    text: `DELETE FROM executions e WHERE e.job_id = ANY($1::text[]) AND e.once AND ${NOT_STARTED_SQL}
       AND (SELECT kind FROM jobs WHERE jobs.id = e.job_id) = 'once'`,
    values: [jobIds],
  });
}

/**
 * Cancels jobs' in-flight executions as core/states.ts inFlightOnCancel says,
 * in one statement: the ones to end become CANCELLED (with `error`, if
 * given), the ones to ask are asked to stop. A row a lease holds locked is
 * waited for and judged as that lease left it: a READY row it granted meanwhile
 * is RUNNING by then, and is asked to stop.
 */
export async function cancelInFlight(db: Db, jobIds: readonly string[], now: number, error: ErrorRecord | null): Promise<void> {
  if (jobIds.length === 0) return;
  await rows(
    db,
    `UPDATE executions SET
       state = CASE WHEN state = ANY($2::text[]) THEN 'CANCELLED' ELSE state END,
       finished_at = CASE WHEN state = ANY($2::text[]) THEN $4::bigint ELSE finished_at END,
       last_error = CASE WHEN state = ANY($2::text[]) THEN coalesce($5::jsonb, last_error) ELSE last_error END,
       cancel_requested = cancel_requested OR state = ANY($3::text[])
     WHERE job_id = ANY($1::text[]) AND (state = ANY($2::text[]) OR state = ANY($3::text[]))`,
    [jobIds, inFlightOnCancel("end"), inFlightOnCancel("ask_to_stop"), now, error ? json(error) : null],
    "cancel_in_flight",
  );
}
