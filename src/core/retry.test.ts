import assert from "node:assert/strict";
import { test } from "node:test";
import {
  backoffMs,
  endExpiredAttempt,
  endFailedAttempt,
  endReleasedAttempt,
  exhaustedError,
  expiredAttemptError,
  planFailure,
  lastErrorOf,
  retryDeadlineOf,
} from "./retry.js";

const policy = { maxAttempts: 5, backoffSeconds: 10, maxBackoffSeconds: 60 };

test("backoff doubles per attempt from backoffSeconds and is capped at maxBackoffSeconds", () => {
  const mid = () => 0.5; // no jitter
  assert.deepEqual(
    [1, 2, 3, 4, 5].map((n) => backoffMs(policy, n, mid)),
    [10_000, 20_000, 40_000, 60_000, 60_000],
  );
});

test("jitter stays within ±20%", () => {
  assert.equal(
    backoffMs(policy, 1, () => 0),
    8_000,
  );
  assert.equal(
    backoffMs(policy, 1, () => 0.999999),
    12_000,
  );
  for (let i = 0; i < 1000; i++) {
    const d = backoffMs(policy, 2, Math.random);
    assert.ok(d >= 16_000 && d <= 24_000, `${d}`);
  }
});

test("transient failures retry until maxAttempts, then are dead", () => {
  assert.deepEqual(
    planFailure(policy, { attempt: 1, errorClass: "transient" }, () => 0.5),
    { kind: "retry", delayMs: 10_000 },
  );
  assert.deepEqual(planFailure(policy, { attempt: 5, errorClass: "transient" }), { kind: "dead", reason: "exhausted" });
});

test("permanent failures are dead at once", () => {
  assert.deepEqual(planFailure(policy, { attempt: 1, errorClass: "permanent" }), { kind: "dead", reason: "permanent" });
});

test("throttled waits at least retryAfterSeconds and still counts toward maxAttempts", () => {
  assert.deepEqual(
    planFailure(policy, { attempt: 1, errorClass: "throttled", retryAfterSeconds: 120 }, () => 0.5),
    {
      kind: "retry",
      delayMs: 120_000,
    },
  );
  assert.deepEqual(
    planFailure(policy, { attempt: 1, errorClass: "throttled", retryAfterSeconds: 1 }, () => 0.5),
    {
      kind: "retry",
      delayMs: 10_000,
    },
  );
  assert.deepEqual(planFailure(policy, { attempt: 5, errorClass: "throttled", retryAfterSeconds: 1 }), { kind: "dead", reason: "exhausted" });
});

test("backoffSeconds 0 retries at once", () => {
  assert.equal(backoffMs({ maxAttempts: 3, backoffSeconds: 0, maxBackoffSeconds: 0 }, 3), 0);
});

const facts = (attempt: number, cancelRequested = false, retryDeadline: number | null = null) => ({
  attempt,
  retry: policy,
  cancelRequested,
  retryDeadline,
});

test("a failed attempt retries from now plus the backoff, with the jitter passed in", () => {
  assert.deepEqual(endFailedAttempt(facts(1), { errorClass: "transient" }, 1_000, 0.5), { state: "READY", readyAt: 11_000 });
  assert.deepEqual(endFailedAttempt(facts(2), { errorClass: "transient" }, 1_000, 0), { state: "READY", readyAt: 17_000 });
  assert.deepEqual(endFailedAttempt(facts(5), { errorClass: "transient" }, 1_000, 0.5), { state: "DEAD", reason: "exhausted" });
  assert.deepEqual(endFailedAttempt(facts(1), { errorClass: "permanent" }, 1_000, 0.5), { state: "DEAD", reason: "permanent" });
});

test("no retry starts past the retry deadline: the execution is dead, and its last error says why", () => {
  const deadline = retryDeadlineOf(0, 15);
  assert.equal(deadline, 15_000);
  assert.equal(retryDeadlineOf(0, undefined), null);
  // attempt 1 fails at 1 s: the retry would start at 11 s, inside the deadline
  assert.deepEqual(endFailedAttempt(facts(1, false, deadline), { errorClass: "transient" }, 1_000, 0.5), { state: "READY", readyAt: 11_000 });
  // attempt 2 fails at 11 s: its retry would start at 31 s, past 15 s
  const end = endFailedAttempt(facts(2, false, deadline), { errorClass: "transient" }, 11_000, 0.5);
  assert.deepEqual(end, { state: "DEAD", reason: "deadline" });
  assert.deepEqual(lastErrorOf({ message: "503" }, end, false), { message: "503; retry deadline passed", deadReason: "retry_deadline" });
  // an expired lease past the deadline is not run again
  assert.deepEqual(endExpiredAttempt(facts(1, false, deadline), 15_001), { state: "DEAD", reason: "deadline" });
  assert.deepEqual(endExpiredAttempt(facts(1, false, deadline), 15_000), { state: "READY", readyAt: 15_000 });
  assert.equal(lastErrorOf({ message: "x" }, { state: "DEAD", reason: "exhausted" }, true).message, "x; attempts exhausted");
  assert.equal(lastErrorOf({ message: "x" }, { state: "DEAD", reason: "exhausted" }, false).message, "x");
});

test("an attempt of a cancelled job ends CANCELLED, whatever the error or the count", () => {
  assert.deepEqual(endFailedAttempt(facts(5, true), { errorClass: "permanent" }, 1_000, 0.5), { state: "CANCELLED" });
  assert.deepEqual(endExpiredAttempt(facts(5, true), 1_000), { state: "CANCELLED" });
});

test("an expired lease is ready again at once, dead once attempts are exhausted", () => {
  assert.deepEqual(endExpiredAttempt(facts(4), 1_000), { state: "READY", readyAt: 1_000 });
  assert.deepEqual(endExpiredAttempt(facts(5), 1_000), { state: "DEAD", reason: "exhausted" });
});

test("an expired attempt's error says whether it hit its deadline or missed its heartbeats", () => {
  assert.match(expiredAttemptError({ leaseUntil: 5_000, deadline: 5_000, timeoutMs: 5_000 }).message, /past timeoutSeconds \(5 s\)/);
  assert.match(expiredAttemptError({ leaseUntil: 4_000, deadline: 5_000, timeoutMs: 5_000 }).message, /without a heartbeat/);
  assert.equal(exhaustedError({ message: "x" }).message, "x; attempts exhausted");
});

test("a released lease is ready again at readyAt, or CANCELLED when its job was cancelled meanwhile", () => {
  assert.deepEqual(endReleasedAttempt(false, 5_000), { state: "READY", readyAt: 5_000 });
  assert.deepEqual(endReleasedAttempt(true, 5_000), { state: "CANCELLED" });
});
