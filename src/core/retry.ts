// Retry policy (docs/api.md, "Attempts and fencing"): after failed attempt n
// wait min(maxBackoff, backoff * 2^(n-1)) with ±20% jitter; throttled waits
// at least retryAfterSeconds; permanent is dead at once; every attempt,
// timed out or failed, counts toward maxAttempts; and no retry starts past
// the retry deadline (scheduledFor + retry.deadlineSeconds), if any.

import type { ErrorClass, ErrorRecord, RetryPolicy } from "@duetime/sdk/contract";
import { msOfSeconds } from "./time.js";

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 3600 };
export const JITTER_FRACTION = 0.2;

export interface FailureFacts {
  attempt: number;
  errorClass: ErrorClass;
  retryAfterSeconds?: number | undefined;
}

export type FailurePlan = { kind: "retry"; delayMs: number } | { kind: "dead"; reason: "permanent" | "exhausted" };

/** random() returns [0, 1); injected so tests are exact. */
export function backoffMs(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(policy.maxBackoffSeconds, policy.backoffSeconds * 2 ** Math.max(0, attempt - 1)) * 1000;
  const factor = 1 - JITTER_FRACTION + 2 * JITTER_FRACTION * random();
  return Math.round(base * factor);
}

export function planFailure(policy: RetryPolicy, facts: FailureFacts, random: () => number = Math.random): FailurePlan {
  if (facts.errorClass === "permanent") return { kind: "dead", reason: "permanent" };
  if (facts.attempt >= policy.maxAttempts) return { kind: "dead", reason: "exhausted" };
  let delayMs = backoffMs(policy, facts.attempt, random);
  if (facts.errorClass === "throttled" && facts.retryAfterSeconds !== undefined) {
    delayMs = Math.max(delayMs, msOfSeconds(facts.retryAfterSeconds));
  }
  return { kind: "retry", delayMs };
}

/** What the store knows of a running attempt as it ends. */
export interface AttemptFacts {
  /** Attempts since the last replay, this one included. */
  attempt: number;
  retry: RetryPolicy;
  /** The job was cancelled while the attempt ran. */
  cancelRequested: boolean;
  /** No retry may start after this (epoch ms): the occurrence's scheduledFor + retry.deadlineSeconds; null without one. */
  retryDeadline: number | null;
}

/** The retry deadline of an occurrence: its scheduled time + deadlineSeconds, or null without one. */
export function retryDeadlineOf(scheduledFor: number, deadlineSeconds: number | null | undefined): number | null {
  return deadlineSeconds === null || deadlineSeconds === undefined ? null : scheduledFor + msOfSeconds(deadlineSeconds);
}

/** What an execution becomes when an attempt ends without success. */
export type AttemptEnd =
  | { state: "CANCELLED" }
  | { state: "DEAD"; reason: "permanent" | "exhausted" | "deadline" }
  | { state: "READY"; readyAt: number };

/**
 * A failed attempt: a cancelled job's execution ends CANCELLED, else the
 * retry policy decides. `jitter` is a draw in [0, 1), passed as data so the
 * store that calls this stays deterministic.
 */
export function endFailedAttempt(facts: AttemptFacts, failure: Omit<FailureFacts, "attempt">, now: number, jitter: number): AttemptEnd {
  if (facts.cancelRequested) return { state: "CANCELLED" };
  const plan = planFailure(facts.retry, { ...failure, attempt: facts.attempt }, () => jitter);
  if (plan.kind === "dead") return { state: "DEAD", reason: plan.reason };
  const readyAt = now + plan.delayMs;
  return facts.retryDeadline !== null && readyAt > facts.retryDeadline ? { state: "DEAD", reason: "deadline" } : { state: "READY", readyAt };
}

/** An attempt whose lease expired (the reaper): ready again at once, dead once attempts are exhausted. */
export function endExpiredAttempt(facts: AttemptFacts, now: number): AttemptEnd {
  if (facts.cancelRequested) return { state: "CANCELLED" };
  if (facts.attempt >= facts.retry.maxAttempts) return { state: "DEAD", reason: "exhausted" };
  if (facts.retryDeadline !== null && now > facts.retryDeadline) return { state: "DEAD", reason: "deadline" };
  return { state: "READY", readyAt: now };
}

/** Why the reaper ended an attempt: it ran to its deadline (timeoutSeconds), or its lease lapsed without a heartbeat. */
export function expiredAttemptError(lease: { leaseUntil: number; deadline: number; timeoutMs: number }): ErrorRecord {
  return {
    message:
      lease.leaseUntil >= lease.deadline
        ? `attempt ran past timeoutSeconds (${lease.timeoutMs / 1000} s)`
        : "lease expired without a heartbeat or completion",
    class: "transient",
    timedOut: true,
  };
}

/** The dead execution's last error says why it will not be tried again. */
export function exhaustedError(error: ErrorRecord): ErrorRecord {
  return { ...error, message: `${error.message}; attempts exhausted` };
}

/**
 * The last error an ended attempt leaves on its execution: the attempt's,
 * saying why it is dead when that is not the error itself (attempts
 * exhausted by the reaper, the retry deadline passed).
 */
export function lastErrorOf(error: ErrorRecord, end: AttemptEnd, reaped: boolean): ErrorRecord {
  if (end.state !== "DEAD") return error;
  if (end.reason === "deadline") return { ...error, message: `${error.message}; retry deadline passed`, deadReason: "retry_deadline" };
  return reaped ? exhaustedError(error) : error;
}

/** A lease handed back unused (executionRelease): ready again at readyAt, CANCELLED when the job was cancelled meanwhile. */
export function endReleasedAttempt(cancelRequested: boolean, readyAt: number): AttemptEnd {
  return cancelRequested ? { state: "CANCELLED" } : { state: "READY", readyAt };
}
