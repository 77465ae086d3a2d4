// Retry policy (docs/api.md, "Attempts and fencing"): after failed attempt n
// wait min(maxBackoff, backoff * 2^(n-1)) with ±20% jitter; throttled waits
// at least retryAfterSeconds; permanent is dead at once; every attempt,
// timed out or failed, counts toward maxAttempts.

import type { ErrorClass, RetryPolicy } from "./api.js";

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
    delayMs = Math.max(delayMs, facts.retryAfterSeconds * 1000);
  }
  return { kind: "retry", delayMs };
}
