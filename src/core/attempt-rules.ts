// Rules of an attempt's life that both stores evaluate inside their own
// statements, for speed: a lease's deadline, a dry run's skip and the two
// kinds of possible duplicate. This is their one statement; the drivers'
// SQL says the same (sqlite/, postgres/), and the store contract suite holds
// each driver's answers to these functions over generated cases.

import type { JobMode } from "@duetime/sdk/contract";

/** When a granted attempt must end, whatever its heartbeats: its timeout from the grant, plus the grace the lease asked for. */
export function attemptDeadline(p: { now: number; timeoutMs: number; graceMs: number }): number {
  return p.now + p.timeoutMs + p.graceMs;
}

/** A lease's end, granted or renewed at now for leaseMs: never past the attempt's deadline. */
export function leaseEnd(p: { now: number; leaseMs: number; deadline: number }): number {
  return Math.min(p.now + p.leaseMs, p.deadline);
}

/**
 * The state a new execution is written in. A READY run of a job in dry run
 * is recorded SKIPPED (reason dry_run) instead of running, when it comes from
 * the job's schedule or a trigger; a one-off's own execution, written with
 * its job, is written as asked (its job's mode is applied when it is due).
 */
export function insertedExecutionState(p: { mode: JobMode; state: "READY" | "SKIPPED"; writtenWithJob: boolean }): {
  state: "READY" | "SKIPPED";
  dryRun: boolean;
} {
  const dryRun = !p.writtenWithJob && p.state === "READY" && p.mode === "dry_run";
  return { state: dryRun ? "SKIPPED" : p.state, dryRun };
}

/** What the store knows of an execution when an answer (complete, fail, heartbeat) for one of its attempts does not hold the lease. */
export interface LostAnswerFacts {
  /** The execution's current attempt and state, and its lease's end. */
  attempt: number;
  state: string;
  leaseUntil: number | null;
  /** Whether the answer's lease token is the current grant's (an answer without a token counts as the grant's). */
  tokenHeld: boolean;
  /** The latest attempt already recorded as a possible duplicate, if any. */
  duplicateAttempt: number | null;
}

/**
 * Whether a lost answer for `attempt` at now records a possible duplicate
 * (reason lease_lost): the attempt was granted (1 or more, not past the
 * current one) and may have run, because a later attempt was granted, its
 * own lease expired, or its grant was handed out again under another token;
 * and it is later than the one recorded, so each attempt is recorded once.
 */
export function lostAnswerIsDuplicate(facts: LostAnswerFacts, attempt: number, now: number): boolean {
  if (attempt < 1) return false;
  const overtaken =
    facts.attempt > attempt ||
    (facts.attempt === attempt && facts.state === "RUNNING" && facts.leaseUntil !== null && facts.leaseUntil < now) ||
    (facts.attempt === attempt && !facts.tokenHeld);
  return overtaken && (facts.duplicateAttempt === null || facts.duplicateAttempt < attempt);
}

/**
 * The attempt a success records as a possible duplicate (reason
 * expired_then_succeeded): the last attempt whose lease was reaped, which may
 * have run too, when it is later than the one recorded; otherwise null.
 */
export function succeededAfterExpiry(p: { expiredAttempt: number | null; duplicateAttempt: number | null }): number | null {
  return p.expiredAttempt !== null && p.expiredAttempt > (p.duplicateAttempt ?? 0) ? p.expiredAttempt : null;
}
