// The job state machine (docs/api.md, "Job states and transitions") as a
// table, so the rules are in one place and tested on their own.

import type { JobState } from "./api.js";

export type JobAction = "cancel" | "pause" | "resume" | "trigger";
export type Verdict = { kind: "apply"; to: JobState } | { kind: "noop" } | { kind: "invalid" };

const apply = (to: JobState): Verdict => ({ kind: "apply", to });
const noop: Verdict = { kind: "noop" };
const invalid: Verdict = { kind: "invalid" };

const TABLE: Record<JobAction, Record<JobState, Verdict>> = {
  cancel: { SCHEDULED: apply("CANCELLED"), PAUSED: apply("CANCELLED"), CANCELLED: noop, COMPLETED: invalid, DEAD: invalid },
  pause: { SCHEDULED: apply("PAUSED"), PAUSED: noop, CANCELLED: invalid, COMPLETED: invalid, DEAD: invalid },
  resume: { SCHEDULED: noop, PAUSED: apply("SCHEDULED"), CANCELLED: invalid, COMPLETED: invalid, DEAD: invalid },
  // trigger adds an execution without changing the job's state
  trigger: { SCHEDULED: noop, PAUSED: noop, CANCELLED: invalid, COMPLETED: invalid, DEAD: invalid },
};

export function jobVerdict(state: JobState, action: JobAction): Verdict {
  return TABLE[action][state];
}

// What the store applies to rows as compare-and-sets: each rule is data here,
// the driver only writes it (DESIGN.md, "Rules of the port").

/** A job state change the store makes only while the job is still in `from`; "drop" deletes its due entry, "keep" leaves it. */
export interface JobChange {
  from: JobState;
  to: JobState;
  due: "drop" | "keep";
}

/**
 * A one-off job ends with its execution: COMPLETED when it succeeds, DEAD
 * when it dies, and only while still SCHEDULED (a cancelled or paused one
 * stays so). A recurring job goes on to its next occurrence.
 */
export function jobChangeAfterExecution(kind: "once" | "cron", execution: "SUCCEEDED" | "DEAD"): JobChange | null {
  if (kind !== "once") return null;
  // An occurrence triggered early is still due: the ended job has none left.
  return { from: "SCHEDULED", to: execution === "SUCCEEDED" ? "COMPLETED" : "DEAD", due: "drop" };
}

/** A recurring job's last dispatch completes it (core/misfire.ts completesAtDispatch); its due entry has gone with the dispatch. */
export const LAST_DISPATCH_JOB_CHANGE: JobChange = { from: "SCHEDULED", to: "COMPLETED", due: "keep" };

/** Replaying a dead letter revives the job that died with it. */
export const REPLAY_JOB_CHANGE: JobChange = { from: "DEAD", to: "SCHEDULED", due: "keep" };

/** Job states whose due occurrences the scheduler turns into executions (trigger and backfill go by jobVerdict instead). */
export const DISPATCHING_STATES: readonly JobState[] = ["SCHEDULED"];

/** Execution states that count as in flight (overlap policies look at them). */
export const IN_FLIGHT_STATES = ["READY", "RUNNING"] as const;
export type InFlightState = (typeof IN_FLIGHT_STATES)[number];

/**
 * Cancelling a job's in-flight executions (a cancelled job, or overlap:
 * replace): a waiting one ends CANCELLED; a running one is asked to stop
 * and ends CANCELLED when its attempt ends.
 */
const ON_CANCEL: Record<InFlightState, "end" | "ask_to_stop"> = { READY: "end", RUNNING: "ask_to_stop" };

export function inFlightOnCancel(effect: "end" | "ask_to_stop"): InFlightState[] {
  return IN_FLIGHT_STATES.filter((s) => ON_CANCEL[s] === effect);
}
