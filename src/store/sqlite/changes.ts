// Core's rules as writes on SQLite (core/states.ts): a job's state changes,
// each a compare-and-set on the state it changes from, and the cancel of a
// job's in-flight executions.

import type { ErrorRecord } from "@duetime/sdk/contract";
import { inFlightOnCancel, type JobChange, NOT_STARTED } from "../../core/states.js";
import { jobRange, json, type Query } from "./db.js";

/** core/states.ts NOT_STARTED as a condition on an execution row (of alias `e`, or none). */
export const notStarted = (e = "") =>
  `(${e}state = '${NOT_STARTED.held}' OR (${e}state = '${NOT_STARTED.waiting}' AND ${e}attempt = ${NOT_STARTED.attempt}))`;

/**
 * Applies core's job changes (core/states.ts JobChange), each a
 * compare-and-set on the job's state in one UPDATE; a job that moved
 * meanwhile is left alone.
 */
export function changeJobs(q: Query, items: { jobId: string; change: JobChange }[], now: number): void {
  if (items.length === 0) return;
  const input = items.map(({ jobId, change }) => [jobId, change.from, change.to]);
  q(
    `UPDATE jobs SET state = x.state, version = version + 1, updated_at = @now
       FROM (SELECT value ->> 0 AS id, value ->> 1 AS from_state, value ->> 2 AS state FROM json_each(@input)) AS x
       WHERE jobs.id = x.id AND jobs.state = x.from_state`,
  ).run({ now, input: JSON.stringify(input) });
}

/**
 * What an ended one-off leaves (core/states.ts ONE_OFF_END): its executions
 * that had not started, which a trigger overtook. Of the listed jobs, only a
 * one-off's are looked at, and only rows found are checked against its kind.
 */
export function dropOvertaken(q: Query, jobIds: readonly string[]): void {
  if (jobIds.length === 0) return;
  q(
    `DELETE FROM executions WHERE id IN (
         SELECT e.id FROM json_each(?) x JOIN executions e ON e.id > x.value || '-' AND e.id < x.value || '.'
         WHERE ${notStarted("e.")} AND e.once = 1 AND (SELECT kind FROM jobs WHERE jobs.id = e.job_id) = 'once')`,
  ).run(JSON.stringify(jobIds));
}

/** Cancels a job's in-flight executions as core/states.ts inFlightOnCancel says: ends some (with error, if given), asks others to stop. */
export function cancelInFlight(q: Query, jobId: string, now: number, error: ErrorRecord | null): void {
  const [from, to] = jobRange(jobId);
  const states = (effect: "end" | "ask_to_stop") => JSON.stringify(inFlightOnCancel(effect));
  q(
    `UPDATE executions SET state = 'CANCELLED', finished_at = @now, last_error = coalesce(@error, last_error)
       WHERE id > @from AND id < @to AND state IN (SELECT value FROM json_each(@states))`,
  ).run({ now, error: json(error ?? undefined), from, to, states: states("end") });
  q("UPDATE executions SET cancel_requested = 1 WHERE id > @from AND id < @to AND state IN (SELECT value FROM json_each(@states))").run({
    from,
    to,
    states: states("ask_to_stop"),
  });
}
