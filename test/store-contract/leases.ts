// The store contract, in part (index.ts runs the parts in order).
// Leasing (store.ts, "executions"): executionLease and executionNextReady.

import assert from "node:assert/strict";
import { describe } from "node:test";

import type { Target } from "@duetime/sdk/contract";
import { HTTP_POOL } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  MINUTE,
  HOUR,
  CREATED,
  LEASE_MS,
  newJob,
  acquireAll,
  createOne,
  readyExecution,
  lease,
  leaseOne,
  runningExecution,
  history,
  attemptOf,
  fail,
  assertOk,
  type ContractTests,
} from "./support.js";

export function leasesContract({ storeTest }: ContractTests): void {
  describe("executionLease", () => {
    storeTest("grants attempt 1 with leaseUntil = now + leaseMs, returning payload, target, name, scheduledFor and timeout", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs, { name: "send-mail", payload: { to: "a@b.c", n: [1, 2] }, timeoutSeconds: 120 });
      const rows = await lease(store, T0 + 100, { leaseMs: 20 * SECOND, workerId: "w9" });
      assert.equal(rows.length, 1);
      // The token is the store's own (fencing.ts has what it fences): opaque, as the wire allows it.
      const { leaseToken, ...row } = rows[0]!;
      if (leaseToken !== undefined) assert.match(leaseToken, /^[0-9A-Za-z._~-]{1,64}$/);
      assert.deepEqual(row, {
        executionId: r.executionId,
        tenantId: "t1",
        jobId: r.job.jobId,
        name: "send-mail",
        attempt: 1,
        retry: false,
        payload: { to: "a@b.c", n: [1, 2] },
        scheduledFor: T0,
        leaseUntil: T0 + 100 + 20 * SECOND,
        timeoutSeconds: 120,
        target: { type: "queue", pool: "p1" },
      });
    });

    storeTest("leases at most max executions", async (store) => {
      const epochs = await acquireAll(store, "n1");
      for (let i = 0; i < 5; i++) await readyExecution(store, epochs);
      assert.equal((await lease(store, T0, { max: 3 })).length, 3);
      assert.equal((await lease(store, T0, { max: 3 })).length, 2);
      assert.equal((await lease(store, T0, { max: 3 })).length, 0);
    });

    storeTest("leases only executions with readyAt <= now", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const outcome = await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })],
        now: T0,
      });
      assertOk(outcome[0], "READY");
      assert.deepEqual(await lease(store, T0 + 10 * SECOND - 1), []);
      const leased = await leaseOne(store, T0 + 10 * SECOND);
      assert.equal(leased.executionId, r.executionId);
    });

    storeTest("leases higher priority first, then earlier readyAt", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const a = await readyExecution(store, epochs, { priority: 0, at: T0 });
      const b = await readyExecution(store, epochs, { priority: 5, at: T0 + 1000 });
      const c = await readyExecution(store, epochs, { priority: 5, at: T0 + 2000 });
      const d = await readyExecution(store, epochs, { priority: 0, at: T0 - 1000 });
      const e = await readyExecution(store, epochs, { priority: -1, at: T0 - 5000 });
      const order: string[] = [];
      for (let i = 0; i < 5; i++) order.push((await leaseOne(store, T0 + 5000)).executionId);
      assert.deepEqual(
        order,
        [b, c, d, a, e].map((x) => x.executionId),
      );
    });

    storeTest(
      "an execution not yet due never stands in the way: a due lower-priority one is leased past a future higher-priority one",
      async (store) => {
        const future = newJob({ at: T0 + HOUR, priority: 50 });
        const due = newJob({ at: T0, priority: -50 });
        await store.jobCreateMany({ nodeId: "n1", jobs: [future, due], now: CREATED });
        const leased = await lease(store, T0, { max: 10 });
        assert.deepEqual(
          leased.map((r) => r.jobId),
          [due.job.jobId],
        );
      },
    );

    storeTest("a batch takes the highest-priority executions", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const low = await readyExecution(store, epochs, { priority: 1, at: T0 - 3000 });
      const high = await readyExecution(store, epochs, { priority: 9, at: T0 });
      const mid = await readyExecution(store, epochs, { priority: 4, at: T0 - 1000 });
      const rows = await lease(store, T0, { max: 2 });
      assert.deepEqual(new Set(rows.map((r) => r.executionId)), new Set([high.executionId, mid.executionId]));
      assert.equal((await leaseOne(store, T0)).executionId, low.executionId);
    });

    storeTest("caps the lease at start + timeoutSeconds", async (store) => {
      const epochs = await acquireAll(store, "n1");
      await readyExecution(store, epochs, { timeoutSeconds: 60 });
      const leased = await leaseOne(store, T0 + 7, { leaseMs: 10 * MINUTE });
      assert.equal(leased.leaseUntil, T0 + 7 + 60 * SECOND);
    });

    storeTest("graceMs extends the deadline: the lease ends at min(now + leaseMs, now + timeout + graceMs)", async (store) => {
      const epochs = await acquireAll(store, "n1");
      await readyExecution(store, epochs, { timeoutSeconds: 60 });
      const rows = await store.executionLease({ pool: "p1", workerId: "w1", max: 1, leaseMs: 10 * MINUTE, graceMs: 5 * SECOND, now: T0 });
      assert.equal(rows[0]?.leaseUntil, T0 + 65 * SECOND);
      await readyExecution(store, epochs, { timeoutSeconds: 60 });
      const short = await store.executionLease({ pool: "p1", workerId: "w1", max: 1, leaseMs: 20 * SECOND, graceMs: 5 * SECOND, now: T0 });
      assert.equal(short[0]?.leaseUntil, T0 + 20 * SECOND);
    });

    storeTest("leases only from the given pool", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const p1 = await readyExecution(store, epochs);
      const p2 = await readyExecution(store, epochs, { target: { type: "queue", pool: "p2" } });
      assert.deepEqual(await lease(store, T0, { pool: "p3" }), []);
      assert.deepEqual(
        (await lease(store, T0, { pool: "p2" })).map((r) => r.executionId),
        [p2.executionId],
      );
      assert.deepEqual(
        (await lease(store, T0, { pool: "p1" })).map((r) => r.executionId),
        [p1.executionId],
      );
      assert.deepEqual(await lease(store, T0, { pool: HTTP_POOL }), []);
    });

    storeTest("filters by tenant, or leases across all tenants when tenantId is absent", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const t1 = await readyExecution(store, epochs, { tenantId: "t1" });
      const t2 = await readyExecution(store, epochs, { tenantId: "t2" });
      const t3 = await readyExecution(store, epochs, { tenantId: "t3" });
      const t2rows = await lease(store, T0, { tenantId: "t2" });
      assert.deepEqual(
        t2rows.map((r) => [r.executionId, r.tenantId]),
        [[t2.executionId, "t2"]],
      );
      assert.deepEqual(await lease(store, T0, { tenantId: "t9" }), []);
      const rest = await lease(store, T0);
      assert.deepEqual(new Set(rest.map((r) => r.executionId)), new Set([t1.executionId, t3.executionId]));
    });

    storeTest("a leased execution is not leased again while it runs", async (store) => {
      const epochs = await acquireAll(store, "n1");
      await runningExecution(store, epochs);
      assert.deepEqual(await lease(store, T0, { workerId: "w2" }), []);
      assert.deepEqual(await lease(store, T0 + LEASE_MS - 1, { workerId: "w2" }), []);
    });

    storeTest("each grant is a new attempt: 1, then 2 after its lease is reaped", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      assert.equal(r.leased.attempt, 1);
      const expiredAt = T0 + LEASE_MS + 1;
      assert.deepEqual(await lease(store, expiredAt), [], "an expired RUNNING attempt is not leased before the reaper frees it");
      await store.executionReap({ now: expiredAt, limit: 10 });
      const second = await leaseOne(store, expiredAt);
      assert.equal(second.executionId, r.executionId);
      assert.equal(second.attempt, 2);
    });

    storeTest("history shows the RUNNING attempt with its workerId and startedAt", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs);
      await leaseOne(store, T0 + 50, { workerId: "worker-x" });
      const rows = await history(store, "t1", r.job.jobId);
      assert.equal(rows.length, 1, "attempt 0 gives way to attempt 1");
      const row = attemptOf(rows, r.executionId, 1);
      assert.equal(row.state, "RUNNING");
      assert.equal(row.workerId, "worker-x");
      assert.equal(row.startedAt, T0 + 50);
      assert.equal(row.finishedAt, null);
      assert.equal(row.error, null);
    });
  });

  describe("executionNextReady", () => {
    storeTest("answers the earliest readyAt of a pool's READY executions, one tenant's or all, across priorities; null when none", async (store) => {
      assert.equal(await store.executionNextReady({ pool: "p1", tenantId: "t1" }), null);
      await store.jobCreateMany({
        nodeId: "n1",
        jobs: [
          newJob({ at: T0 + 3 * HOUR, priority: 9 }),
          newJob({ at: T0 + 2 * HOUR, priority: -4 }),
          newJob({ at: T0 + HOUR, tenantId: "t2" }),
          newJob({ at: T0 + MINUTE, target: { type: "queue", pool: "other" } }),
        ],
        now: CREATED,
      });
      assert.equal(await store.executionNextReady({ pool: "p1", tenantId: "t1" }), T0 + 2 * HOUR);
      assert.equal(await store.executionNextReady({ pool: "p1" }), T0 + HOUR);
      assert.equal(await store.executionNextReady({ pool: "p1", tenantId: "t3" }), null);
      assert.equal(await store.executionNextReady({ pool: "other", tenantId: "t1" }), T0 + MINUTE);
    });

    storeTest("counts only READY executions: a running one, or the HTTP runner's pool across tenants", async (store) => {
      await createOne(store, newJob({ at: T0 }));
      await leaseOne(store, T0);
      assert.equal(await store.executionNextReady({ pool: "p1", tenantId: "t1" }), null);
      const target: Target = { type: "http", url: "https://example.com/hook", method: "POST", headers: {} };
      await store.jobCreateMany({
        nodeId: "n1",
        jobs: [newJob({ at: T0 + HOUR, target }), newJob({ at: T0 + MINUTE, tenantId: "t2", target })],
        now: CREATED,
      });
      assert.equal(await store.executionNextReady({ pool: HTTP_POOL }), T0 + MINUTE);
    });
  });
}
