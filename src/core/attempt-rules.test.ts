import assert from "node:assert/strict";
import { test } from "node:test";
import {
  attemptDeadline,
  insertedExecutionState,
  leaseEnd,
  lostAnswerIsDuplicate,
  succeededAfterExpiry,
  type LostAnswerFacts,
} from "./attempt-rules.js";
import { fairPick, laneOfferLimit } from "./fair-share.js";

test("a lease ends at now + leaseMs, never past the attempt's timeout plus grace", () => {
  const deadline = attemptDeadline({ now: 1000, timeoutMs: 60_000, graceMs: 5_000 });
  assert.equal(deadline, 66_000);
  assert.equal(leaseEnd({ now: 1000, leaseMs: 30_000, deadline }), 31_000);
  assert.equal(leaseEnd({ now: 1000, leaseMs: 600_000, deadline }), 66_000);
  assert.equal(leaseEnd({ now: 50_000, leaseMs: 30_000, deadline }), 66_000, "a renewal is capped too");
});

test("a dry run skips a READY run from the schedule or a trigger, not a one-off's own execution", () => {
  assert.deepEqual(insertedExecutionState({ mode: "dry_run", state: "READY", writtenWithJob: false }), { state: "SKIPPED", dryRun: true });
  assert.deepEqual(insertedExecutionState({ mode: "dry_run", state: "READY", writtenWithJob: true }), { state: "READY", dryRun: false });
  assert.deepEqual(insertedExecutionState({ mode: "dry_run", state: "SKIPPED", writtenWithJob: false }), { state: "SKIPPED", dryRun: false });
  assert.deepEqual(insertedExecutionState({ mode: "live", state: "READY", writtenWithJob: false }), { state: "READY", dryRun: false });
});

test("a lost answer is a possible duplicate when its granted attempt was overtaken, once per attempt", () => {
  const running: LostAnswerFacts = { attempt: 2, state: "RUNNING", leaseUntil: 100, tokenHeld: true, duplicateAttempt: null };
  assert.equal(lostAnswerIsDuplicate(running, 1, 50), true, "a later attempt was granted");
  assert.equal(lostAnswerIsDuplicate({ ...running, duplicateAttempt: 1 }, 1, 50), false, "recorded already");
  assert.equal(lostAnswerIsDuplicate(running, 0, 50), false, "never granted");
  assert.equal(lostAnswerIsDuplicate(running, 3, 50), false, "not granted yet");
  assert.equal(lostAnswerIsDuplicate(running, 2, 50), false, "the lease is held");
  assert.equal(lostAnswerIsDuplicate(running, 2, 101), true, "its own lease expired");
  assert.equal(lostAnswerIsDuplicate({ ...running, tokenHeld: false }, 2, 50), true, "granted again under another token");
});

test("a success after a reaped attempt records that attempt once", () => {
  assert.equal(succeededAfterExpiry({ expiredAttempt: 1, duplicateAttempt: null }), 1);
  assert.equal(succeededAfterExpiry({ expiredAttempt: 1, duplicateAttempt: 1 }), null);
  assert.equal(succeededAfterExpiry({ expiredAttempt: null, duplicateAttempt: null }), null);
  assert.equal(succeededAfterExpiry({ expiredAttempt: 3, duplicateAttempt: 2 }), 3);
});

test("fairPick never grants a backlogged lane its offer limit: twice its share of the lease", () => {
  for (const weights of [
    [1, 1],
    [3, 1],
    [1, 2, 5],
    [0.5, 1, 1, 1, 4, 10, 1, 1],
  ]) {
    for (const max of [1, 7, 100, 500]) {
      const total = weights.reduce((a, b) => a + b, 0);
      const lanes = weights.map((weight, i) => ({ tenantId: `t${i}`, vtime: 0, weight }));
      let next = 0;
      const { lanes: granted } = fairPick(
        max,
        (k) => lanes.splice(0, k),
        (lane, n) => Array.from({ length: n }, () => `${lane.tenantId}-${next++}`),
      );
      for (const lane of granted) assert.ok(lane.granted < laneOfferLimit(max, lane.weight, total), `${lane.tenantId} of ${weights} at ${max}`);
    }
  }
});
