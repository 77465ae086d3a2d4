// The store contract, in part (index.ts runs the parts in order).
// Tenants: fair leasing across tenants (weights, caps, dispatch rates;
// store.ts, "tenants"), and acks of any tenant (tenantId null, a platform
// worker).

import assert from "node:assert/strict";
import { describe } from "node:test";

import { DEFAULT_TENANT_LIMITS, type LeasedRow, type Store } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  MINUTE,
  HOUR,
  CREATED,
  type JobOverrides,
  newJob,
  acquireAll,
  lease,
  runningExecution,
  history,
  fail,
  assertOk,
  type ContractTests,
} from "./support.js";

export function tenantsContract({ storeTest }: ContractTests): void {
  describe("executionLease across tenants (fair leasing)", () => {
    /** n one-offs of a tenant in pool p1, due at `at`, created in one call. */
    const backlog = async (store: Store, tenantId: string, n: number, o: JobOverrides = {}) => {
      const jobs = Array.from({ length: n }, () => newJob({ tenantId, ...o }));
      await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
      return jobs.map((j) => j.job.jobId);
    };
    const byTenant = (rows: LeasedRow[]) => {
      const counts: Record<string, number> = {};
      for (const r of rows) counts[r.tenantId] = (counts[r.tenantId] ?? 0) + 1;
      return counts;
    };

    storeTest("one tenant's flood does not hold another's work back: each backlogged tenant gets an equal share", async (store) => {
      await backlog(store, "flood", 200);
      await backlog(store, "small", 10, { at: T0 + SECOND });
      assert.deepEqual(byTenant(await lease(store, T0 + SECOND, { max: 10 })), { flood: 5, small: 5 });
      assert.deepEqual(byTenant(await lease(store, T0 + SECOND, { max: 10 })), { flood: 5, small: 5 });
      // small has none left: flood takes the whole batch
      assert.deepEqual(byTenant(await lease(store, T0 + SECOND, { max: 10 })), { flood: 10 });
    });

    storeTest("priority orders a tenant's own work and cannot jump other tenants", async (store) => {
      const high = await backlog(store, "a", 6, { priority: 100 });
      await backlog(store, "a", 6, { priority: 0 });
      await backlog(store, "b", 6, { priority: -5 });
      const rows = await lease(store, T0, { max: 6 });
      assert.deepEqual(byTenant(rows), { a: 3, b: 3 });
      assert.ok(
        rows.filter((r) => r.tenantId === "a").every((r) => high.includes(r.jobId)),
        "a's share is its highest-priority work",
      );
    });

    storeTest("weights share a pool in proportion (3:1)", async (store) => {
      await store.tenantLimitsPut({ tenantId: "heavy", limits: { ...DEFAULT_TENANT_LIMITS, weight: 3 }, now: CREATED });
      await backlog(store, "heavy", 400);
      await backlog(store, "light", 400);
      const leased: LeasedRow[] = [];
      for (let i = 0; i < 8; i++) leased.push(...(await lease(store, T0, { max: 50 })));
      const counts = byTenant(leased);
      assert.equal(leased.length, 400);
      assert.ok(Math.abs((counts.heavy ?? 0) / (counts.light ?? 1) - 3) <= 0.3, `3:1 within 10%, got ${JSON.stringify(counts)}`);
      assert.deepEqual(await store.tenantLimitsGet({ tenantId: "heavy" }), { ...DEFAULT_TENANT_LIMITS, weight: 3 });
      assert.equal(await store.tenantLimitsGet({ tenantId: "light" }), null);
    });

    storeTest("a tenant with no work due gains no credit: when its work comes, it shares, it does not take over", async (store) => {
      await backlog(store, "busy", 300);
      for (let i = 0; i < 5; i++) await lease(store, T0, { max: 20 }); // busy alone: 100 leased
      await backlog(store, "late", 100, { at: T0 + MINUTE });
      const counts = byTenant(await lease(store, T0 + MINUTE, { max: 20 }));
      assert.deepEqual(counts, { busy: 10, late: 10 });
    });

    storeTest("a tenant whose work is not due yet sleeps, and wakes when its work falls due", async (store) => {
      await backlog(store, "now", 5);
      const [later] = await backlog(store, "later", 1, { at: T0 + HOUR });
      assert.deepEqual(byTenant(await lease(store, T0, { max: 10 })), { now: 5 });
      assert.deepEqual(await lease(store, T0 + HOUR - 1, { max: 10 }), []);
      const rows = await lease(store, T0 + HOUR, { max: 10 });
      assert.deepEqual(
        rows.map((r) => r.jobId),
        [later],
      );
    });

    storeTest("work that becomes READY again wakes its tenant: a retry, and a job created while the tenant slept", async (store) => {
      const [first] = await backlog(store, "t2", 1);
      const [leased] = await lease(store, T0, { max: 10 });
      assert.equal(leased?.jobId, first);
      assert.deepEqual(await lease(store, T0, { max: 10 }), []); // t2 has nothing due: it sleeps
      const failed = await store.executionFailMany({ items: [fail({ executionId: leased!.executionId, tenantId: "t2", attempt: 1 })], now: T0 });
      assertOk(failed[0], "READY"); // its retry is due at T0 + 10 s
      assert.deepEqual(
        (await lease(store, T0 + 10 * SECOND, { max: 10 })).map((r) => r.jobId),
        [first],
      );
      assert.deepEqual(await lease(store, T0 + 10 * SECOND, { max: 10 }), []); // asleep again
      const [created] = await backlog(store, "t2", 1, { at: T0 + 20 * SECOND });
      assert.deepEqual(
        (await lease(store, T0 + 20 * SECOND, { max: 10 })).map((r) => r.jobId),
        [created],
      );
    });

    storeTest("many tenants: each lease serves a few, and every tenant is served in turn", async (store) => {
      const tenants = Array.from({ length: 40 }, (_, i) => `t${String(i).padStart(2, "0")}`);
      for (const t of tenants) await backlog(store, t, 3);
      const served = new Set<string>();
      for (let i = 0; i < 5; i++) for (const r of await lease(store, T0, { max: 8 })) served.add(r.tenantId);
      assert.equal(served.size, 40, "40 leases of 8 across 40 tenants reach every tenant");
    });

    storeTest("maxLeasedAttempts caps a tenant's RUNNING attempts, in its own leases and across tenants", async (store) => {
      await store.tenantLimitsPut({ tenantId: "capped", limits: { ...DEFAULT_TENANT_LIMITS, maxLeasedAttempts: 3 }, now: CREATED });
      await backlog(store, "capped", 10);
      await backlog(store, "free", 10);
      assert.deepEqual(byTenant(await lease(store, T0, { max: 2, tenantId: "capped" })), { capped: 2 });
      assert.deepEqual(byTenant(await lease(store, T0, { max: 10 })), { capped: 1, free: 9 }, "across tenants, capped gets what is left of its 3");
      assert.deepEqual(await lease(store, T0, { max: 10, tenantId: "capped" }), [], "3 RUNNING: nothing more");
      assert.equal(await store.jobCountPending({ tenantId: "capped" }), 10, "leased one-offs are still pending jobs");
      await store.tenantLimitsPut({ tenantId: "capped", limits: DEFAULT_TENANT_LIMITS, now: CREATED });
      assert.equal((await lease(store, T0, { max: 10, tenantId: "capped" })).length, 7);
    });

    storeTest(
      "dispatchRatePerSecond spreads a tenant's work over the following seconds, in order, and records the wait on each attempt",
      async (store) => {
        await store.tenantLimitsPut({ tenantId: "herd", limits: { ...DEFAULT_TENANT_LIMITS, dispatchRatePerSecond: 5 }, now: CREATED });
        // 20 due by T0, in order a millisecond apart.
        const herd: string[] = [];
        for (let i = 0; i < 20; i++) herd.push(...(await backlog(store, "herd", 1, { at: T0 - 20 + i })));
        await backlog(store, "free", 10);
        const first = await lease(store, T0, { max: 30 });
        assert.deepEqual(byTenant(first), { herd: 5, free: 10 }, "a burst of one second's worth, the others unaffected");
        assert.deepEqual(await lease(store, T0 + 100, { max: 30 }), [], "nothing until the rate allows");
        const second = await lease(store, T0 + SECOND, { max: 30 });
        const third = await lease(store, T0 + SECOND + 400, { max: 30, tenantId: "herd" });
        assert.equal(second.length, 5, "a second later: five more");
        assert.equal(third.length, 2, "in its own lease too: 0.4 s at 5/s");
        const order = [...first, ...second, ...third].filter((r) => r.tenantId === "herd").map((r) => r.jobId);
        assert.deepEqual(order, herd.slice(0, 12), "in order");

        const attempt = async (jobId: string) => (await history(store, "herd", jobId)).find((h) => h.attempt === 1);
        assert.equal((await attempt(herd[0]!))?.throttledMs, undefined, "the first burst waited for nothing");
        assert.equal((await attempt(herd[5]!))?.throttledMs, SECOND, "held back from T0, when the rate first left it waiting");
        const failed = await store.executionFailMany({
          items: [fail({ executionId: second[0]!.executionId, tenantId: "herd", attempt: 1 })],
          now: T0 + 2 * SECOND,
        });
        assertOk(failed[0], "READY");
        assert.equal((await attempt(second[0]!.jobId))?.throttledMs, SECOND, "kept with the attempt once it ended");
        assert.equal((await attempt(herd[11]!))?.throttledMs, SECOND + 400);
        assert.equal((await history(store, "free", first.find((r) => r.tenantId === "free")!.jobId))[0]?.throttledMs, undefined);

        // Drained at its rate (the failed one's retry too), the lane is no longer throttled: later work waits for nothing.
        for (let at = T0 + 2 * SECOND; at <= T0 + 20 * SECOND; at += SECOND) await lease(store, at, { max: 30 });
        const [late] = await backlog(store, "herd", 1, { at: T0 + HOUR });
        assert.deepEqual(
          (await lease(store, T0 + HOUR, { max: 30 })).map((r) => r.jobId),
          [late],
        );
        assert.equal((await attempt(late!))?.throttledMs, undefined);
      },
    );

    storeTest("a tenant's own lease is not fair-shared: it takes its work by priority", async (store) => {
      await backlog(store, "t1", 5);
      await backlog(store, "t2", 5);
      assert.deepEqual(byTenant(await lease(store, T0, { max: 10, tenantId: "t2" })), { t2: 5 });
    });
  });

  describe("acks of any tenant (tenantId null: a platform worker)", () => {
    storeTest("heartbeat, complete and fail reach any tenant's attempt; a tenant's call still reaches only its own", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const a = await runningExecution(store, epochs, { tenantId: "ta" });
      const b = await runningExecution(store, epochs, { tenantId: "tb" });
      const beat = await store.executionHeartbeat({ tenantId: null, executionId: a.executionId, attempt: 1, now: T0 + SECOND });
      assert.equal(beat.status, "ok");
      const other = await store.executionHeartbeat({ tenantId: "tb", executionId: a.executionId, attempt: 1, now: T0 + SECOND });
      assert.equal(other.status, "not_found");
      assert.deepEqual(await store.executionCompleteMany({ items: [{ executionId: a.executionId, tenantId: null, attempt: 1 }], now: T0 + SECOND }), [
        { status: "ok", state: "SUCCEEDED", pool: "p1", tenantId: "ta" },
      ]);
      const [failed] = await store.executionFailMany({
        items: [fail({ executionId: b.executionId, tenantId: null, attempt: 1 })],
        now: T0 + SECOND,
      });
      assertOk(failed, "READY");
      assert.equal(failed?.status === "ok" && failed.tenantId, "tb");
      const [stale] = await store.executionCompleteMany({ items: [{ executionId: b.executionId, tenantId: null, attempt: 1 }], now: T0 + SECOND });
      assert.equal(stale?.status, "lost", "the fence is the attempt and its lease, with or without a tenant");
    });
  });
}
