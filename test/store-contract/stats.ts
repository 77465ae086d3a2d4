// The store contract, in part (index.ts runs the parts in order).
// Stats (store.ts, "shards, stats, audit"): poolCounts, readyUpcoming and
// executionCountsFold, trace parents and workload minutes.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { executionIdFor } from "../../src/core/ids.js";
import { LAG_COLUMNS, type WorkloadMinute } from "../../src/store/workload-minutes.js";
import type { Store } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  MINUTE,
  HOUR,
  CREATED,
  newJob,
  cronJob,
  acquireAll,
  getJob,
  readyExecution,
  lease,
  leaseOne,
  fail,
  countsOf,
  nonZero,
  RACE_ROUNDS,
  race,
  type ContractTests,
} from "./support.js";

export function statsContract({ storeTest, pairTest }: ContractTests): void {
  describe("poolCounts", () => {
    async function scenario(store: Store): Promise<void> {
      const epochs = await acquireAll(store, "n1");
      // t1/p1: one pending (retry later), one running, one queued, one succeeded, one cancelled.
      const pending = await readyExecution(store, epochs);
      await leaseOne(store, T0, { tenantId: "t1" });
      await store.executionFailMany({ items: [fail({ executionId: pending.executionId, tenantId: "t1", attempt: 1 })], now: T0 });
      const running = await readyExecution(store, epochs);
      assert.equal((await leaseOne(store, T0, { tenantId: "t1" })).executionId, running.executionId);
      const done = await readyExecution(store, epochs);
      assert.equal((await leaseOne(store, T0, { tenantId: "t1" })).executionId, done.executionId);
      await store.executionCompleteMany({ items: [{ executionId: done.executionId, tenantId: "t1", attempt: 1 }], now: T0 });
      const cancelled = await readyExecution(store, epochs);
      const cj = await getJob(store, cancelled.nj);
      await store.jobTransition({
        tenantId: "t1",
        jobId: cj.jobId,
        fromVersion: cj.version,
        state: "CANCELLED",
        due: null,
        cancelExecutions: true,
        now: T0,
      });
      await readyExecution(store, epochs); // queued
      // t2/p1: one queued. t1/p2: two queued.
      await readyExecution(store, epochs, { tenantId: "t2" });
      await readyExecution(store, epochs, { target: { type: "queue", pool: "p2" } });
      await readyExecution(store, epochs, { target: { type: "queue", pool: "p2" } });
    }

    storeTest("counts pending (readyAt > now), queued (readyAt <= now) and running per tenant and pool", async (store) => {
      await scenario(store);
      const rows = await store.poolCounts({ now: T0 + SECOND });
      assert.deepEqual(countsOf(rows, "t1", "p1"), { pending: 1, queued: 1, running: 1 });
      assert.deepEqual(countsOf(rows, "t2", "p1"), { pending: 0, queued: 1, running: 0 });
      assert.deepEqual(countsOf(rows, "t1", "p2"), { pending: 0, queued: 2, running: 0 });
      assert.equal(nonZero(rows).length, 3);
      // Once the retry is due it counts as queued.
      assert.deepEqual(countsOf(await store.poolCounts({ now: T0 + 10 * MINUTE }), "t1", "p1"), { pending: 0, queued: 2, running: 1 });
    });

    storeTest("filters by tenant and by pool", async (store) => {
      await scenario(store);
      const t1 = nonZero(await store.poolCounts({ tenantId: "t1", now: T0 + SECOND }));
      assert.deepEqual(t1.map((r) => `${r.tenantId}/${r.pool}`).sort(), ["t1/p1", "t1/p2"]);
      const p1 = nonZero(await store.poolCounts({ pool: "p1", now: T0 + SECOND }));
      assert.deepEqual(p1.map((r) => `${r.tenantId}/${r.pool}`).sort(), ["t1/p1", "t2/p1"]);
      const both = await store.poolCounts({ tenantId: "t2", pool: "p1", now: T0 + SECOND });
      assert.deepEqual(
        nonZero(both).map((r) => `${r.tenantId}/${r.pool}`),
        ["t2/p1"],
      );
      assert.deepEqual(countsOf(both, "t2", "p1"), { pending: 0, queued: 1, running: 0 });
      assert.deepEqual(nonZero(await store.poolCounts({ pool: "nope", now: T0 })), []);
    });

    storeTest("an empty store counts nothing", async (store) => {
      assert.deepEqual(nonZero(await store.poolCounts({ now: T0 })), []);
    });

    storeTest(
      "earlier hours' READY rows are queued, later hours' pending, and the current hour is split at now, whatever the priority",
      async (store) => {
        // T0 starts an hour; now is 20 minutes into it.
        const now = T0 + 20 * MINUTE;
        const due = [T0 - 2 * HOUR, T0 - MINUTE, T0 + 10 * MINUTE, now];
        const later = [now + 1, T0 + 59 * MINUTE, T0 + 3 * HOUR];
        await store.jobCreateMany({
          nodeId: "n1",
          jobs: [...due, ...later].map((at, i) => newJob({ at, priority: i % 2 === 0 ? 0 : 5 })),
          now: CREATED - 3 * HOUR,
        });
        assert.deepEqual(countsOf(await store.poolCounts({ now }), "t1", "p1"), { pending: 3, queued: 4, running: 0 });
        await store.executionCountsFold();
        assert.deepEqual(countsOf(await store.poolCounts({ now }), "t1", "p1"), { pending: 3, queued: 4, running: 0 });
        // Leasing the due ones moves them to running; the next hour makes two more queued.
        assert.equal((await lease(store, now, { max: 10 })).length, 4);
        assert.deepEqual(countsOf(await store.poolCounts({ now }), "t1", "p1"), { pending: 3, queued: 0, running: 4 });
        await store.executionCountsFold();
        assert.deepEqual(countsOf(await store.poolCounts({ now: T0 + HOUR }), "t1", "p1"), { pending: 1, queued: 2, running: 4 });
        assert.deepEqual(countsOf(await store.poolCounts({ now: T0 + 5 * HOUR }), "t1", "p1"), { pending: 0, queued: 3, running: 4 });
      },
    );

    storeTest("readyUpcoming counts READY executions by the minute they become due, over lanes and priorities, up to the limit", async (store) => {
      const now = T0 + 59 * MINUTE; // the window crosses into the next hour
      const ats = [
        now - SECOND,
        now,
        now + 30 * SECOND,
        now + MINUTE,
        now + 90 * SECOND,
        now + 150 * SECOND,
        now + 150 * SECOND,
        now + 5 * MINUTE,
        now + 6 * MINUTE,
      ];
      await store.jobCreateMany({
        nodeId: "n1",
        jobs: ats.map((at, i) =>
          newJob({ at, priority: i % 3, tenantId: i % 2 === 0 ? "t1" : "t2", target: { type: "queue", pool: i % 4 === 0 ? "p2" : "p1" } }),
        ),
        now: CREATED,
      });
      assert.deepEqual(await store.readyUpcoming({ now, minutes: 5, limit: 100 }), [2, 1, 2, 0, 1]);
      await store.executionCountsFold();
      assert.deepEqual(await store.readyUpcoming({ now, minutes: 5, limit: 100 }), [2, 1, 2, 0, 1]);
      const capped = await store.readyUpcoming({ now, minutes: 5, limit: 3 });
      assert.equal(
        capped.reduce((a, b) => a + b, 0),
        3,
        "stops at the limit",
      );
      // Leased, an execution is no longer upcoming: p1's due by now + 30 s are the one due at now and the one at now + 30 s.
      assert.equal((await lease(store, now + 30 * SECOND, { max: 10 })).length, 2);
      assert.deepEqual(await store.readyUpcoming({ now, minutes: 5, limit: 100 }), [1, 1, 2, 0, 1]);
    });

    pairTest("counts stay exact while two handles create, lease, complete and fold at once", async (a, b) => {
      let created = 0;
      let leased = 0;
      let completed = 0;
      for (let round = 0; round < RACE_ROUNDS / 5; round++) {
        const jobs = Array.from({ length: 4 }, (_, i) => newJob({ at: T0 - (i % 2) * HOUR }));
        const [, got] = await race(
          round,
          async () => {
            await a.jobCreateMany({ nodeId: "n1", jobs, now: CREATED - HOUR });
            await a.executionCountsFold();
          },
          async () => {
            const rows = await lease(b, T0, { max: 3 });
            await b.executionCountsFold();
            const done = rows.slice(0, 1);
            await b.executionCompleteMany({
              items: done.map((r) => ({ executionId: r.executionId, tenantId: "t1", attempt: r.attempt })),
              now: T0,
            });
            return { leased: rows.length, completed: done.length };
          },
        );
        created += jobs.length;
        leased += got.leased;
        completed += got.completed;
        const truth = { pending: 0, queued: created - leased, running: leased - completed };
        assert.deepEqual(countsOf(await a.poolCounts({ now: T0 }), "t1", "p1"), truth, `round ${round}, read by a`);
        assert.deepEqual(countsOf(await b.poolCounts({ now: T0 }), "t1", "p1"), truth, `round ${round}, read by b`);
      }
      await Promise.all([a.executionCountsFold(), b.executionCountsFold()]);
      assert.deepEqual(countsOf(await a.poolCounts({ now: T0 }), "t1", "p1"), {
        pending: 0,
        queued: created - leased,
        running: leased - completed,
      });
    });
  });

  describe("trace parents (engine/tracing.ts)", () => {
    const PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    storeTest(
      "a job's trace parent reaches its executions: a one-off's at create, a recurring job's through its due entry and dispatch",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const once = newJob();
        const cron = cronJob();
        const plain = newJob();
        await store.jobCreateMany({
          nodeId: "n1",
          jobs: [{ ...once, traceParent: PARENT }, { ...cron, traceParent: PARENT }, plain],
          now: CREATED,
        });
        const [entry] = await store
          .dueLoad({ shards: [cron.job.shard], before: T0 + 1, limit: 10 })
          .then((l) => l.filter((e) => e.jobId === cron.job.jobId));
        assert.equal(entry?.traceParent, PARENT);
        const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entry!, next: null }] });
        const dispatched = res.dispatched[0]!.executionId;
        const leased = await lease(store, T0, { max: 10 });
        const byId = new Map(leased.map((r) => [r.executionId, r.traceParent]));
        const onceId = executionIdFor(once.job.jobId, T0);
        const plainId = executionIdFor(plain.job.jobId, T0);
        assert.deepEqual([byId.get(onceId), byId.get(dispatched), byId.has(plainId), byId.get(plainId)], [PARENT, PARENT, true, undefined]);
        const parents = await store.executionTraceParents({ executionIds: [onceId, dispatched, plainId, "nope"] });
        assert.deepEqual(
          [...parents].sort(),
          [
            [dispatched, PARENT],
            [onceId, PARENT],
          ].sort(),
        );
      },
    );
  });

  describe("workload minutes", () => {
    const lag = (bucket: number, n = 1): number[] => LAG_COLUMNS.map((_, i) => (i === bucket ? n : 0));
    const record = (o: Partial<WorkloadMinute> = {}): WorkloadMinute => ({
      minute: T0,
      tenantId: "t1",
      pool: "p1",
      started: 0,
      succeeded: 0,
      failed: 0,
      dead: 0,
      lag: lag(0, 0),
      ...o,
    });

    storeTest("adds counts from several writers to one minute's row, and sets the depth a sample gives", async (store) => {
      await store.workloadAdd({ records: [record({ started: 2, succeeded: 1, lag: lag(3, 2) }), record({ pool: "p2", failed: 1, dead: 1 })] });
      await store.workloadAdd({ records: [record({ started: 1, failed: 1, lag: lag(11) }), record({ pending: 5, queued: 2, running: 1 })] });
      // A writer without a sample leaves the depth as sampled.
      await store.workloadAdd({ records: [record({ succeeded: 1 })] });
      await store.workloadAdd({ records: [record({ minute: T0 + MINUTE, tenantId: "t2", started: 4, lag: lag(0, 4) })] });
      const all = await store.workloadMinutes({ from: T0 });
      assert.deepEqual(all, [
        record({
          started: 3,
          succeeded: 2,
          failed: 1,
          lag: LAG_COLUMNS.map((_, i) => (i === 3 ? 2 : i === 11 ? 1 : 0)),
          pending: 5,
          queued: 2,
          running: 1,
        }),
        record({ pool: "p2", failed: 1, dead: 1, pending: null, queued: null, running: null }),
        record({ minute: T0 + MINUTE, tenantId: "t2", started: 4, lag: lag(0, 4), pending: null, queued: null, running: null }),
      ]);
      assert.deepEqual(
        (await store.workloadMinutes({ from: T0, tenantId: "t2" })).map((m) => m.tenantId),
        ["t2"],
      );
      assert.deepEqual(
        (await store.workloadMinutes({ from: T0 + MINUTE })).map((m) => m.minute),
        [T0 + MINUTE],
      );
      assert.equal(await store.workloadPurge({ before: T0 + MINUTE }), 2);
      assert.deepEqual(
        (await store.workloadMinutes({ from: 0 })).map((m) => m.minute),
        [T0 + MINUTE],
      );
    });

    pairTest("two nodes adding to the same minute at once lose nothing", async (a, b) => {
      for (let round = 0; round < RACE_ROUNDS / 5; round++) {
        const minute = T0 + round * MINUTE;
        await race(
          round,
          () => a.workloadAdd({ records: [record({ minute, started: 1, lag: lag(1) }), record({ minute, pool: "p2", started: 1 })] }),
          () => b.workloadAdd({ records: [record({ minute, pool: "p2", started: 2 }), record({ minute, started: 2, lag: lag(1, 2) })] }),
        );
        const rows = await a.workloadMinutes({ from: minute });
        assert.deepEqual(
          rows.filter((r) => r.minute === minute).map((r) => [r.pool, r.started, r.lag[1]]),
          [
            ["p1", 3, 3],
            ["p2", 3, 0],
          ],
          `round ${round}`,
        );
      }
    });
  });
}
