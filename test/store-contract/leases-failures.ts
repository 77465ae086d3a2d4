// The store contract, in part (index.ts runs the parts in order).
// A lease ended badly (store.ts, "executions"): executionFailMany and
// executionReap.

import assert from "node:assert/strict";
import { describe } from "node:test";

import type { ErrorRecord } from "@duetime/sdk/contract";
import { executionIdFor, newId } from "../../src/core/ids.js";
import { HTTP_POOL } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  HOUR,
  LEASE_MS,
  CRON_SCHEDULE,
  FATAL,
  acquireAll,
  getJob,
  readyExecution,
  lease,
  leaseOne,
  runningExecution,
  history,
  attemptOf,
  fail,
  assertOk,
  unmarked,
  type ContractTests,
} from "./support.js";

export function leaseFailuresContract({ storeTest }: ContractTests): void {
  describe("executionFailMany", () => {
    storeTest("one batch naming the same execution twice answers each item by its own attempt", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const outcomes = await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 }), fail({ executionId: r.executionId, tenantId: "t1", attempt: 9 })],
        now: T0 + SECOND,
      });
      assert.deepEqual(
        unmarked(outcomes).map((o) => o.status),
        ["ok", "lost"],
      );
    });
    storeTest("asks the planner with the attempt, the job's retry policy and the item", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const retry = { maxAttempts: 5, backoffSeconds: 7, maxBackoffSeconds: 70 };
      const r = await runningExecution(store, epochs, { retry });
      const item = fail({
        executionId: r.executionId,
        tenantId: "t1",
        attempt: 1,
        error: { message: "nope", class: "throttled", retryAfterSeconds: 9 },
      });
      const [outcome] = await store.executionFailMany({ items: [item], now: T0 + SECOND });
      assert.ok(outcome?.status === "ok" && outcome.state === "READY");
      assert.equal(outcome.readyAt, T0 + SECOND + 9 * SECOND, "throttled: the row's 7 s backoff, raised to the item's retryAfterSeconds");
    });

    storeTest(
      "the retry deadline (retry.deadlineSeconds after scheduledFor): no retry past it, by failure or by the reaper; dead with the reason",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const retry = { maxAttempts: 9, backoffSeconds: 10, maxBackoffSeconds: 10, deadlineSeconds: 15 };
        const r = await runningExecution(store, epochs, { retry });
        const first = await store.executionFailMany({ items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })], now: T0 });
        assertOk(first[0], "READY"); // its retry starts at T0 + 10 s, inside the deadline
        await leaseOne(store, T0 + 10 * SECOND);
        const second = await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 2 })],
          now: T0 + 10 * SECOND,
        });
        assertOk(second[0], "DEAD"); // the next would start at T0 + 20 s, past T0 + 15 s
        const [dead] = await store.deadLetterList({ tenantId: "t1", limit: 10 });
        assert.equal(dead?.executionId, r.executionId);
        assert.equal(dead?.lastError?.message, "boom; retry deadline passed");
        assert.equal(dead?.lastError?.deadReason, "retry_deadline");

        const reaped = await runningExecution(store, epochs, { retry });
        assert.deepEqual(
          (await store.executionReap({ now: T0 + 31 * SECOND, limit: 10 })).map((x) => [x.executionId, x.state]),
          [[reaped.executionId, "DEAD"]],
          "its lease ended past the deadline: not run again",
        );
      },
    );

    storeTest("the retry delay's jitter is the item's draw: ±20% of the backoff at 0 and near 1", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const a = await runningExecution(store, epochs);
      const b = await runningExecution(store, epochs);
      const outcomes = await store.executionFailMany({
        items: [
          fail({ executionId: a.executionId, tenantId: "t1", attempt: 1, jitter: 0 }),
          fail({ executionId: b.executionId, tenantId: "t1", attempt: 1, jitter: 0.999999 }),
        ],
        now: T0,
      });
      assert.deepEqual(
        outcomes.map((o) => o.status === "ok" && o.readyAt),
        [T0 + 8 * SECOND, T0 + 12 * SECOND],
      );
    });

    storeTest("a retry makes the execution READY at now plus the backoff: not leasable before, leasable after as attempt 2", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const [outcome] = await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })],
        now: T0 + 10 * SECOND,
      });
      assertOk(outcome, "READY");
      assert.ok(outcome?.status === "ok");
      assert.equal(outcome.readyAt, T0 + 20 * SECOND);
      assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
      assert.deepEqual(await lease(store, T0 + 20 * SECOND - 1), []);
      const second = await leaseOne(store, T0 + 20 * SECOND);
      assert.equal(second.executionId, r.executionId);
      assert.equal(second.attempt, 2);
      assert.equal(second.scheduledFor, r.scheduledFor, "scheduledFor stays the same on retries");
    });

    storeTest("the failed attempt is recorded FAILED with its error and finishedAt", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const error: ErrorRecord = { message: "connection reset", class: "transient", status: 503 };
      await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error })],
        now: T0 + 3 * SECOND,
      });
      const rows = await history(store, "t1", r.job.jobId);
      assert.equal(rows.length, 1, "one row per attempt; the pending retry adds none");
      const row = attemptOf(rows, r.executionId, 1);
      assert.equal(row.state, "FAILED");
      assert.deepEqual(row.error, error);
      assert.equal(row.finishedAt, T0 + 3 * SECOND);
      assert.equal(row.startedAt, T0);
      assert.equal(row.workerId, "w1");
    });

    storeTest("a dead plan makes the execution DEAD and a one-off job DEAD, listed in dead letters", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs, { name: "charge", payload: { amount: 42 } });
      const error: ErrorRecord = { message: "card declined", class: "permanent" };
      const before = await getJob(store, r.nj);
      const [outcome] = await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error })],
        now: T0 + 2 * SECOND,
      });
      assertOk(outcome, "DEAD");
      const job = await getJob(store, r.nj);
      assert.equal(job.state, "DEAD");
      assert.equal(job.version, before.version, "the end is read from the execution: no write of the job");
      assert.equal(job.updatedAt, T0 + 2 * SECOND);
      const letters = await store.deadLetterList({ tenantId: "t1", limit: 10 });
      assert.deepEqual(letters, [
        {
          executionId: r.executionId,
          tenantId: "t1",
          jobId: r.job.jobId,
          name: "charge",
          scheduledFor: T0,
          attempts: 1,
          lastError: error,
          deadAt: T0 + 2 * SECOND,
          payload: { amount: 42 },
        },
      ]);
      const row = attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1);
      assert.equal(row.state, "DEAD");
      assert.deepEqual(row.error, error);
      assert.deepEqual(await lease(store, T0 + HOUR), []);
    });

    storeTest("a cron job stays SCHEDULED when one execution dies", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs, { kind: "cron", schedule: { ...CRON_SCHEDULE } }, { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR });
      await leaseOne(store, T0);
      assertOk(
        (
          await store.executionFailMany({
            items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error: FATAL })],
            now: T0 + SECOND,
          })
        )[0],
        "DEAD",
      );
      const job = await getJob(store, r.nj);
      assert.equal(job.state, "SCHEDULED");
      assert.equal(job.nextRunAt, T0 + HOUR);
      assert.equal((await store.deadLetterList({ tenantId: "t1", limit: 10 })).length, 1);
    });

    storeTest("timedOut records the attempt as TIMED_OUT with its error", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const error: ErrorRecord = { message: "timed out after 300 s", class: "transient" };
      await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error, timedOut: true })],
        now: T0 + SECOND,
      });
      const row = attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1);
      assert.equal(row.state, "TIMED_OUT");
      assert.deepEqual(row.error, error);
    });

    storeTest("a stale attempt or an expired lease answers lost and changes nothing", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const outcomes = await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 2 })],
        now: T0 + SECOND,
      });
      assert.deepEqual(unmarked(outcomes), [{ status: "lost" }]);
      const expired = await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })],
        now: T0 + LEASE_MS + 1,
      });
      assert.deepEqual(unmarked(expired), [{ status: "lost" }]);
      assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
      assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING");
      assert.deepEqual(await store.deadLetterList({ tenantId: "t1", limit: 10 }), []);
    });

    storeTest("a failed attempt cannot be failed or completed again", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const item = fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 });
      assertOk((await store.executionFailMany({ items: [item], now: T0 + SECOND }))[0], "READY");
      assert.deepEqual(unmarked(await store.executionFailMany({ items: [item], now: T0 + 2 * SECOND })), [{ status: "lost" }]);
      assert.deepEqual(unmarked(await store.executionCompleteMany({ items: [item], now: T0 + 2 * SECOND })), [{ status: "lost" }]);
      assert.deepEqual(await store.deadLetterList({ tenantId: "t1", limit: 10 }), []);
    });

    storeTest("answers a mixed batch in order: retry, dead, not_found, lost", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const a = await readyExecution(store, epochs);
      const b = await readyExecution(store, epochs);
      await lease(store, T0, { max: 2 });
      const outcomes = await store.executionFailMany({
        items: [
          fail({ executionId: a.executionId, tenantId: "t1", attempt: 1 }),
          fail({ executionId: b.executionId, tenantId: "t1", attempt: 1, error: FATAL }),
          fail({ executionId: executionIdFor(newId(T0), T0), tenantId: "t1", attempt: 1 }),
          fail({ executionId: a.executionId, tenantId: "t1", attempt: 1 }),
        ],
        now: T0 + SECOND,
      });
      assert.equal(outcomes.length, 4);
      assertOk(outcomes[0], "READY");
      assertOk(outcomes[1], "DEAD");
      assert.deepEqual(outcomes[2], { status: "not_found" });
      assert.deepEqual(unmarked(outcomes[3]), { status: "lost" });
    });
  });

  describe("executionReap", () => {
    storeTest("reaps an expired lease: the attempt TIMED_OUT, the execution READY at once with the next attempt", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const now = T0 + LEASE_MS + 1;
      const reaped = await store.executionReap({ now, limit: 10 });
      assert.deepEqual(reaped, [{ executionId: r.executionId, tenantId: "t1", pool: "p1", state: "READY" }]);
      const row = attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1);
      assert.equal(row.state, "TIMED_OUT");
      assert.ok(row.finishedAt !== null);
      const again = await leaseOne(store, now);
      assert.equal(again.executionId, r.executionId);
      assert.equal(again.attempt, 2);
      assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
    });

    storeTest("leaves live leases untouched", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      assert.deepEqual(await store.executionReap({ now: T0 + LEASE_MS - 1, limit: 10 }), []);
      assert.deepEqual(await store.executionReap({ now: T0 + LEASE_MS, limit: 10 }), [], "leaseUntil < now, not <=");
      assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING");
      assertOk(
        (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + LEASE_MS - 1 }))[0],
        "SUCCEEDED",
      );
    });

    storeTest("respects the limit", async (store) => {
      const epochs = await acquireAll(store, "n1");
      for (let i = 0; i < 4; i++) await readyExecution(store, epochs);
      assert.equal((await lease(store, T0, { max: 10 })).length, 4);
      const now = T0 + LEASE_MS + 1;
      assert.equal((await store.executionReap({ now, limit: 3 })).length, 3);
      assert.equal((await store.executionReap({ now, limit: 3 })).length, 1);
      assert.equal((await store.executionReap({ now, limit: 3 })).length, 0);
    });

    storeTest("a poison job ends DEAD in the dead letters after maxAttempts reaps", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs, { retry: { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 3600 } });
      let now = T0;
      const states: string[] = [];
      for (let attempt = 1; attempt <= 3; attempt++) {
        const leased = await leaseOne(store, now);
        assert.equal(leased.attempt, attempt);
        now += LEASE_MS + 1;
        const reaped = await store.executionReap({ now, limit: 10 });
        assert.equal(reaped.length, 1);
        states.push(reaped[0]!.state);
      }
      assert.deepEqual(states, ["READY", "READY", "DEAD"]);
      assert.deepEqual(await lease(store, now + HOUR), []);
      const letters = await store.deadLetterList({ tenantId: "t1", limit: 10 });
      assert.equal(letters.length, 1);
      assert.equal(letters[0]!.executionId, r.executionId);
      assert.equal(letters[0]!.attempts, 3);
      assert.equal(letters[0]!.deadAt, now);
      assert.equal((await getJob(store, r.nj)).state, "DEAD");
      const rows = await history(store, "t1", r.job.jobId);
      assert.deepEqual(
        rows.map((x) => x.attempt),
        [3, 2, 1],
      );
      assert.equal(attemptOf(rows, r.executionId, 1).state, "TIMED_OUT");
      assert.equal(attemptOf(rows, r.executionId, 2).state, "TIMED_OUT");
    });

    storeTest("a late complete of a reaped attempt answers lost", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
      const [outcome] = await store.executionCompleteMany({
        items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }],
        now: T0 + LEASE_MS + 2,
      });
      assert.deepEqual(unmarked(outcome), { status: "lost" });
      assert.deepEqual(unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + LEASE_MS + 2 })), {
        status: "lost",
      });
      assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
      assert.equal((await leaseOne(store, T0 + LEASE_MS + 3)).attempt, 2);
    });

    storeTest("reports the pool of http executions as HTTP_POOL", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs, { tenantId: "t5", target: { type: "http", url: "https://example.com/x" } });
      const reaped = await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
      assert.deepEqual(reaped, [{ executionId: r.executionId, tenantId: "t5", pool: HTTP_POOL, state: "READY" }]);
    });
  });
}
