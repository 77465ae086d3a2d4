// The store contract, in part (index.ts runs the parts in order).
// A lease kept and ended well (store.ts, "executions"): executionHeartbeat and
// executionCompleteMany.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { executionIdFor, newId } from "../../src/core/ids.js";
import {
  T0,
  SECOND,
  MINUTE,
  HOUR,
  LEASE_MS,
  CRON_SCHEDULE,
  acquireAll,
  getJob,
  readyExecution,
  lease,
  leaseOne,
  runningExecution,
  history,
  attemptOf,
  assertOk,
  unmarked,
  type ContractTests,
} from "./support.js";

export function leaseAcksContract({ storeTest }: ContractTests): void {
  describe("executionHeartbeat", () => {
    storeTest("extends the lease to now + leaseMs", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const hb = await store.executionHeartbeat({
        tenantId: "t1",
        executionId: r.executionId,
        attempt: 1,
        leaseMs: 90 * SECOND,
        now: T0 + 20 * SECOND,
      });
      assert.deepEqual(hb, { status: "ok", leaseUntil: T0 + 110 * SECOND, cancelRequested: false });
      // The extended lease holds: not reaped, still completable past the old deadline.
      assert.deepEqual(await store.executionReap({ now: T0 + 100 * SECOND, limit: 10 }), []);
      assertOk(
        (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 100 * SECOND }))[0],
        "SUCCEEDED",
      );
    });

    storeTest("without leaseMs extends by the lease's original length", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs); // leased at T0 for 30 s
      const hb = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 10 * SECOND });
      assert.deepEqual(hb, { status: "ok", leaseUntil: T0 + 40 * SECOND, cancelRequested: false });
      const hb2 = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 35 * SECOND });
      assert.ok(hb2.status === "ok");
      assert.equal(hb2.leaseUntil, T0 + 65 * SECOND);
    });

    storeTest("never extends past start + timeoutSeconds", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs, { timeoutSeconds: 60 });
      const hb = await store.executionHeartbeat({
        tenantId: "t1",
        executionId: r.executionId,
        attempt: 1,
        leaseMs: 10 * MINUTE,
        now: T0 + 20 * SECOND,
      });
      assert.ok(hb.status === "ok");
      assert.equal(hb.leaseUntil, T0 + 60 * SECOND);
    });

    storeTest("never extends past the deadline that graceMs set at lease time", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs, { timeoutSeconds: 60 });
      await store.executionLease({ pool: "p1", workerId: "w1", max: 1, leaseMs: 20 * SECOND, graceMs: 5 * SECOND, now: T0 });
      const hb = await store.executionHeartbeat({
        tenantId: "t1",
        executionId: r.executionId,
        attempt: 1,
        leaseMs: 10 * MINUTE,
        now: T0 + 15 * SECOND,
      });
      assert.ok(hb.status === "ok");
      assert.equal(hb.leaseUntil, T0 + 65 * SECOND);
    });

    storeTest("a wrong attempt answers lost", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      assert.deepEqual(unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 2, now: T0 + SECOND })), {
        status: "lost",
      });
      assert.deepEqual(unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 0, now: T0 + SECOND })), {
        status: "lost",
      });
    });

    storeTest("after the lease expired (now > leaseUntil) answers lost, even before the reaper ran", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      assert.deepEqual(unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + LEASE_MS + 1 })), {
        status: "lost",
      });
      // Losing changed nothing: the reaper still finds the expired attempt.
      const reaped = await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
      assert.deepEqual(
        reaped.map((x) => x.executionId),
        [r.executionId],
      );
    });

    storeTest("the lease holds up to and including leaseUntil: heartbeat and complete at exactly leaseUntil succeed", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const hb = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, leaseMs: LEASE_MS, now: T0 + LEASE_MS });
      assert.deepEqual(hb, { status: "ok", leaseUntil: T0 + 2 * LEASE_MS, cancelRequested: false });
      assert.deepEqual(await store.executionReap({ now: T0 + 2 * LEASE_MS, limit: 10 }), []);
      assertOk(
        (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 2 * LEASE_MS }))[0],
        "SUCCEEDED",
      );
    });

    storeTest("a finished attempt answers lost", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + SECOND });
      assert.deepEqual(unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 2 * SECOND })), {
        status: "lost",
      });
    });

    storeTest("another tenant's or an unknown execution answers not_found", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      assert.deepEqual(await store.executionHeartbeat({ tenantId: "t2", executionId: r.executionId, attempt: 1, now: T0 + SECOND }), {
        status: "not_found",
      });
      assert.deepEqual(await store.executionHeartbeat({ tenantId: "t1", executionId: executionIdFor(newId(T0), T0), attempt: 1, now: T0 + SECOND }), {
        status: "not_found",
      });
      // The other tenant's call changed nothing.
      const hb = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 2 * SECOND });
      assert.equal(hb.status, "ok");
    });
  });

  describe("executionCompleteMany", () => {
    storeTest(
      "one batch naming the same execution twice answers each item by its own attempt: the holder succeeds, a stale one is lost",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const outcomes = await store.executionCompleteMany({
          items: [
            { executionId: r.executionId, tenantId: "t1", attempt: 1 },
            { executionId: r.executionId, tenantId: "t1", attempt: 9 },
          ],
          now: T0 + SECOND,
        });
        assert.deepEqual(
          unmarked(outcomes).map((o) => (o.status === "ok" ? o.state : o.status)),
          ["SUCCEEDED", "lost"],
        );
      },
    );
    storeTest("succeeds a running attempt; a one-off job reads COMPLETED, changed then, its version where accepted writes left it", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const before = await getJob(store, r.nj);
      const [outcome] = await store.executionCompleteMany({
        items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1, result: { ok: true } }],
        now: T0 + 5 * SECOND,
      });
      assertOk(outcome, "SUCCEEDED");
      const job = await getJob(store, r.nj);
      assert.equal(job.state, "COMPLETED");
      assert.equal(job.version, before.version, "the end is read from the execution: no write of the job");
      assert.equal(job.updatedAt, T0 + 5 * SECOND);
      const row = attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1);
      assert.equal(row.state, "SUCCEEDED");
      assert.equal(row.finishedAt, T0 + 5 * SECOND);
      assert.equal(row.error, null);
      assert.deepEqual(await lease(store, T0 + HOUR), []);
    });

    storeTest("a cron job stays SCHEDULED when an occurrence succeeds", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs, { kind: "cron", schedule: { ...CRON_SCHEDULE } }, { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR });
      await leaseOne(store, T0);
      assertOk(
        (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + SECOND }))[0],
        "SUCCEEDED",
      );
      const job = await getJob(store, r.nj);
      assert.equal(job.state, "SCHEDULED");
      assert.equal(job.nextRunAt, T0 + HOUR);
    });

    storeTest("repeating the same complete answers ok again and changes nothing", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const item = { executionId: r.executionId, tenantId: "t1", attempt: 1 };
      assertOk((await store.executionCompleteMany({ items: [item], now: T0 + SECOND }))[0], "SUCCEEDED");
      const job = await getJob(store, r.nj);
      const rows = await history(store, "t1", r.job.jobId);
      assertOk((await store.executionCompleteMany({ items: [item], now: T0 + 2 * SECOND }))[0], "SUCCEEDED");
      assert.deepEqual(await getJob(store, r.nj), job);
      assert.deepEqual(await history(store, "t1", r.job.jobId), rows);
    });

    storeTest("a stale attempt answers lost and changes nothing", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
      const second = await leaseOne(store, T0 + LEASE_MS + 2);
      assert.equal(second.attempt, 2);
      const [outcome] = await store.executionCompleteMany({
        items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }],
        now: T0 + LEASE_MS + 3,
      });
      assert.deepEqual(unmarked(outcome), { status: "lost" });
      const job = await getJob(store, r.nj);
      assert.equal(job.state, "SCHEDULED");
      const rows = await history(store, "t1", r.job.jobId);
      assert.equal(attemptOf(rows, r.executionId, 1).state, "TIMED_OUT");
      assert.equal(attemptOf(rows, r.executionId, 2).state, "RUNNING");
      // The holder of the lease can still complete.
      assertOk(
        (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 2 }], now: T0 + LEASE_MS + 4 }))[0],
        "SUCCEEDED",
      );
    });

    storeTest("an expired lease answers lost, even before the reaper ran", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const [outcome] = await store.executionCompleteMany({
        items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }],
        now: T0 + LEASE_MS + 1,
      });
      assert.deepEqual(unmarked(outcome), { status: "lost" });
      assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
      assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING");
    });

    storeTest("a READY execution that was never leased cannot be completed", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs);
      const [outcome] = await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 });
      assert.deepEqual(unmarked(outcome), { status: "lost" });
      assert.equal((await leaseOne(store, T0)).attempt, 1);
    });

    storeTest("an unknown or another tenant's execution answers not_found", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const outcomes = await store.executionCompleteMany({
        items: [
          { executionId: executionIdFor(newId(T0), T0), tenantId: "t1", attempt: 1 },
          { executionId: r.executionId, tenantId: "t2", attempt: 1 },
        ],
        now: T0 + SECOND,
      });
      assert.deepEqual(outcomes, [{ status: "not_found" }, { status: "not_found" }]);
      assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING");
    });

    storeTest("answers a mixed batch item by item, in order", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const a = await readyExecution(store, epochs);
      const b = await readyExecution(store, epochs);
      const c = await readyExecution(store, epochs);
      await lease(store, T0, { max: 3 });
      const outcomes = await store.executionCompleteMany({
        items: [
          { executionId: b.executionId, tenantId: "t1", attempt: 1 },
          { executionId: executionIdFor(newId(T0), T0), tenantId: "t1", attempt: 1 },
          { executionId: a.executionId, tenantId: "t1", attempt: 2 },
          { executionId: c.executionId, tenantId: "t1", attempt: 1 },
        ],
        now: T0 + SECOND,
      });
      assert.equal(outcomes.length, 4);
      assertOk(outcomes[0], "SUCCEEDED");
      assert.deepEqual(outcomes[1], { status: "not_found" });
      assert.deepEqual(unmarked(outcomes[2]), { status: "lost" });
      assertOk(outcomes[3], "SUCCEEDED");
      assert.equal((await getJob(store, a.nj)).state, "SCHEDULED");
      assert.equal((await getJob(store, b.nj)).state, "COMPLETED");
      assert.equal((await getJob(store, c.nj)).state, "COMPLETED");
    });
  });
}
