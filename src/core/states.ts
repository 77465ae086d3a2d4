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
