// The job state machine (docs/api.md, "Job states and transitions") as a
// table, so the rules are in one place and tested on their own.

import type { JobState } from "@duetime/sdk/contract";

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

/** A job state change the store makes only while the job is still in `from` (a compare-and-set on its state). */
export interface JobChange {
  from: JobState;
  to: JobState;
}

/**
 * A one-off's end is read, not written (docs/design-notes.md, "What a
 * one-off writes"): its job row keeps what accepted writes set, and while
 * that says SCHEDULED or PAUSED, an execution of it that ended says the
 * job's state, COMPLETED when it succeeded and DEAD when it died (the first
 * to end, if a trigger made two). A cancel stays CANCELLED. The stores
 * compute it in their reads (rows.ts jobStateSql); an execution's end drops
 * the one-off's executions that had not started (a trigger overtook them).
 * A recurring job goes on to its next occurrence.
 */
export const ONE_OFF_END = {
  over: ["SCHEDULED", "PAUSED"],
  by: { SUCCEEDED: "COMPLETED", DEAD: "DEAD" },
} as const satisfies { over: readonly JobState[]; by: Record<string, JobState> };

/** A recurring job's last dispatch completes it (core/misfire.ts completesAtDispatch); its due entry has gone with the dispatch. */
export const LAST_DISPATCH_JOB_CHANGE: JobChange = { from: "SCHEDULED", to: "COMPLETED" };

/** Job states whose due occurrences the scheduler turns into executions (trigger and backfill go by jobVerdict instead). */
export const DISPATCHING_STATES: readonly JobState[] = ["SCHEDULED"];

/** Execution states that count as in flight (overlap policies look at them). PAUSED: a paused one-off's held execution. */
export const IN_FLIGHT_STATES = ["READY", "PAUSED", "RUNNING"] as const;
export type InFlightState = (typeof IN_FLIGHT_STATES)[number];

/**
 * Cancelling a job's in-flight executions (a cancelled job, or overlap:
 * replace): a waiting or held one ends CANCELLED; a running one is asked to
 * stop and ends CANCELLED when its attempt ends.
 */
const ON_CANCEL: Record<InFlightState, "end" | "ask_to_stop"> = { READY: "end", PAUSED: "end", RUNNING: "ask_to_stop" };

export function inFlightOnCancel(effect: "end" | "ask_to_stop"): InFlightState[] {
  return IN_FLIGHT_STATES.filter((s) => ON_CANCEL[s] === effect);
}

// One-off jobs get their execution at submit time (docs/design-notes.md):
// only a recurring job's next occurrence waits in the due index for its
// shard's owner to dispatch; a one-off's is its execution, READY from its
// due time (PENDING until then) and leased like any other.

/** Where a new or changed job's next occurrence is stored. */
export function occurrenceHome(kind: "once" | "cron"): "execution" | "due" {
  return kind === "once" ? "execution" : "due";
}

/**
 * An execution that has not started: READY and never leased (attempt 0), or
 * held (PAUSED). A one-off's is its pending execution: pausing the job holds
 * it, resuming releases it, a PATCH replaces it, a finished trigger drops it.
 * A retry waiting (READY at attempt 1 or more) has started, and runs on.
 */
export const NOT_STARTED = { held: "PAUSED", waiting: "READY", attempt: 0 } as const;

/** What pausing and resuming a one-off do to its pending execution: hold it (never leased) and release it (READY again). */
export const PENDING_ON_ACTION: Partial<Record<JobAction, "hold" | "release">> = { pause: "hold", resume: "release" };
