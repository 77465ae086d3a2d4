// The store contract, in part (index.ts runs the parts in order).
// Executions outside dispatch and leasing (store.ts, "executions"): jobUpdate
// and executionsInWindow, a one-off's pending execution through pause, resume,
// PATCH and cancel, and executionCreateMany.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { executionIdFor, newId } from "../../src/core/ids.js";
import type { NewJob, NextOccurrence, Store } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  MINUTE,
  HOUR,
  iso,
  RETRY,
  CRON_SCHEDULE,
  newJob,
  cronJob,
  acquireAll,
  createOne,
  getJob,
  lease,
  leaseOne,
  runningExecution,
  history,
  attemptOf,
  fail,
  nonZero,
  assertOk,
  type ContractTests,
} from "./support.js";

export function executionsContract({ storeTest }: ContractTests): void {
  describe("jobUpdate and executionsInWindow", () => {
    storeTest("jobUpdate replaces the definition at fromVersion and moves or keeps the due entry", async (store) => {
      const nj = cronJob({ name: "before" });
      await createOne(store, nj);
      const fields = {
        kind: "cron" as const,
        name: "renamed",
        target: { type: "queue" as const, pool: "p2" },
        payload: { n: 2 },
        schedule: { ...CRON_SCHEDULE },
        retry: RETRY,
        timeoutSeconds: 60,
        priority: 5,
        mode: "live" as const,
      };
      assert.equal(await store.jobUpdate({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 7, fields, due: "keep", nodeId: "n1", now: T0 }), null);
      const updated = await store.jobUpdate({
        tenantId: "t1",
        jobId: nj.job.jobId,
        fromVersion: 1,
        fields,
        due: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR },
        nodeId: "n1",
        now: T0,
      });
      assert.ok(updated);
      assert.equal(updated.version, 2);
      assert.equal(updated.name, "renamed");
      assert.equal(updated.kind, "cron");
      assert.deepEqual(updated.target, { type: "queue", pool: "p2" });
      assert.equal(updated.nextRunAt, T0 + HOUR);
      const kept = await store.jobUpdate({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 2, fields, due: "keep", nodeId: "n1", now: T0 });
      assert.equal(kept?.nextRunAt, T0 + HOUR);
      assert.equal(await store.jobUpdate({ tenantId: "t2", jobId: nj.job.jobId, fromVersion: 3, fields, due: "keep", nodeId: "n1", now: T0 }), null);
    });

    storeTest("executionsInWindow lists a job's executions with scheduledFor in [from, to]", async (store) => {
      const nj = cronJob();
      await createOne(store, nj);
      const items = [0, 1, 2, 3].map((i) => ({ scheduledFor: T0 + i * HOUR, readyAt: T0 }));
      await store.executionCreateMany({ tenantId: "t1", jobId: nj.job.jobId, nodeId: "n1", now: T0, items });
      const rows = await store.executionsInWindow({ tenantId: "t1", jobId: nj.job.jobId, from: T0 + HOUR, to: T0 + 2 * HOUR });
      assert.deepEqual(
        rows.map((r) => r.scheduledFor),
        [T0 + HOUR, T0 + 2 * HOUR],
      );
      assert.deepEqual(await store.executionsInWindow({ tenantId: "t2", jobId: nj.job.jobId, from: T0, to: T0 + 9 * HOUR }), []);
    });
  });

  describe("a one-off's pending execution (pause, resume, PATCH, cancel)", () => {
    /** The job at its current version, and one transition of it. */
    async function transition(
      store: Store,
      nj: NewJob,
      state: "PAUSED" | "SCHEDULED" | "CANCELLED",
      extra: Partial<Parameters<Store["jobTransition"]>[0]>,
      now = T0 - MINUTE,
    ) {
      const job = await getJob(store, nj);
      return store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: job.version, state, due: null, now, ...extra });
    }

    async function update(
      store: Store,
      nj: NewJob,
      fields: Partial<NewJob["job"]>,
      pending: { from: number | null; to: NextOccurrence | null },
      now = T0 - MINUTE,
    ) {
      const job = await getJob(store, nj);
      const { kind, name, target, payload, schedule, retry, timeoutSeconds, priority, mode } = { ...job, ...fields };
      return store.jobUpdate({
        tenantId: "t1",
        jobId: nj.job.jobId,
        fromVersion: job.version,
        fields: { kind, name, target, payload, schedule, retry, timeoutSeconds, priority, mode },
        due: kind === "cron" ? null : "keep",
        pending,
        nodeId: "n2",
        now,
      });
    }

    storeTest("hold makes it PAUSED: never leased, not counted, not the job's next run; release makes it READY from readyAt", async (store) => {
      const nj = newJob();
      await createOne(store, nj);
      const id = executionIdFor(nj.job.jobId, T0);
      const paused = await transition(store, nj, "PAUSED", { pending: { hold: T0 } });
      assert.equal(paused?.nextRunAt, null);
      assert.equal(paused?.nextDueAt, null);
      assert.equal(attemptOf(await history(store, "t1", nj.job.jobId), id, 0).state, "PAUSED");
      assert.deepEqual(await lease(store, T0 + HOUR), []);
      assert.deepEqual(nonZero(await store.poolCounts({ now: T0 + HOUR })), []);
      assert.equal(await store.executionNextReady({ pool: "p1", tenantId: "t1" }), null);
      const resumed = await transition(store, nj, "SCHEDULED", { pending: { release: { scheduledFor: T0, readyAt: T0 + HOUR } } }, T0 + 10);
      assert.equal(resumed?.nextRunAt, T0);
      assert.equal(resumed?.nextDueAt, T0 + HOUR);
      const row = attemptOf(await history(store, "t1", nj.job.jobId), id, 0);
      assert.equal(row.state, "READY");
      assert.equal(row.readyAt, T0 + HOUR);
      assert.deepEqual(await lease(store, T0 + HOUR - 1), []);
      assert.equal((await leaseOne(store, T0 + HOUR)).executionId, id);
    });

    storeTest("hold leaves an execution that started alone: a running attempt, or a retry waiting", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const running = await runningExecution(store, epochs);
      await transition(store, running.nj, "PAUSED", { pending: { hold: T0 } }, T0 + 1);
      const beat = await store.executionHeartbeat({ tenantId: "t1", executionId: running.executionId, attempt: 1, now: T0 + 2 });
      assert.equal(beat.status, "ok");
      const retrying = await runningExecution(store, epochs, { tenantId: "t2" });
      assertOk(
        (await store.executionFailMany({ items: [fail({ executionId: retrying.executionId, tenantId: "t2", attempt: 1 })], now: T0 + 3 }))[0],
        "READY",
      );
      const job = await store.jobGet({ tenantId: "t2", jobId: retrying.job.jobId });
      await store.jobTransition({
        tenantId: "t2",
        jobId: retrying.job.jobId,
        fromVersion: job!.version,
        state: "PAUSED",
        due: null,
        pending: { hold: T0 },
        now: T0 + 4,
      });
      assert.equal((await leaseOne(store, T0 + 3 + 10 * SECOND, { tenantId: "t2" })).attempt, 2, "the retry runs on");
    });

    storeTest("a version that moved writes nothing to the pending execution", async (store) => {
      const nj = newJob();
      await createOne(store, nj);
      assert.equal(
        await store.jobTransition({
          tenantId: "t1",
          jobId: nj.job.jobId,
          fromVersion: 9,
          state: "PAUSED",
          due: null,
          pending: { hold: T0 },
          now: T0 - 1,
        }),
        null,
      );
      assert.equal(
        await store.jobUpdate({
          tenantId: "t1",
          jobId: nj.job.jobId,
          fromVersion: 9,
          fields: nj.job,
          due: "keep",
          pending: { from: T0, to: null },
          nodeId: "n1",
          now: T0 - 1,
        }),
        null,
      );
      assert.equal((await leaseOne(store, T0)).executionId, executionIdFor(nj.job.jobId, T0));
    });

    storeTest("cancelExecutions ends a held execution CANCELLED; resuming cannot bring it back", async (store) => {
      const nj = newJob();
      await createOne(store, nj);
      await transition(store, nj, "PAUSED", { pending: { hold: T0 } });
      const cancelled = await transition(store, nj, "CANCELLED", { cancelExecutions: true });
      assert.equal(cancelled?.state, "CANCELLED");
      const row = attemptOf(await history(store, "t1", nj.job.jobId), executionIdFor(nj.job.jobId, T0), 0);
      assert.equal(row.state, "CANCELLED");
      await transition(store, nj, "SCHEDULED", { pending: { release: { scheduledFor: T0, readyAt: T0 } } });
      assert.deepEqual(await lease(store, T0 + HOUR), []);
    });

    storeTest("a PATCH to a new time replaces it: a new id at the new time, from the new definition, created by the calling node", async (store) => {
      const nj = newJob({ at: T0 + HOUR });
      await createOne(store, nj);
      const to = { scheduledFor: T0 + 2 * HOUR, dueAt: T0 + 2 * HOUR };
      const updated = await update(
        store,
        nj,
        { target: { type: "queue", pool: "p2" }, payload: { n: 2 }, priority: 3, schedule: { runAt: iso(to.scheduledFor) } },
        { from: T0 + HOUR, to },
        T0 + 5,
      );
      assert.equal(updated?.nextRunAt, to.scheduledFor);
      const rows = await history(store, "t1", nj.job.jobId);
      assert.deepEqual(
        rows.map((r) => [r.executionId, r.state, r.readyAt, r.dispatchedAt, r.dispatchedBy]),
        [[executionIdFor(nj.job.jobId, to.scheduledFor), "READY", to.dueAt, T0 + 5, "n2"]],
      );
      assert.deepEqual(await lease(store, T0 + 3 * HOUR), [], "nothing left in the old pool");
      const leased = await leaseOne(store, to.dueAt, { pool: "p2" });
      assert.deepEqual(leased.payload, { n: 2 });
      assert.equal(leased.scheduledFor, to.scheduledFor);
    });

    storeTest("a PATCH at the same time rebuilds it in place, so a new payload reaches it", async (store) => {
      const nj = newJob();
      await createOne(store, nj);
      await update(store, nj, { payload: { n: 42 } }, { from: T0, to: { scheduledFor: T0, dueAt: T0 } });
      const leased = await leaseOne(store, T0);
      assert.equal(leased.executionId, executionIdFor(nj.job.jobId, T0));
      assert.deepEqual(leased.payload, { n: 42 });
    });

    storeTest("a PATCH of a paused one-off keeps the replacement held", async (store) => {
      const nj = newJob();
      await createOne(store, nj);
      await transition(store, nj, "PAUSED", { pending: { hold: T0 } });
      const to = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
      await update(store, nj, { schedule: { runAt: iso(to.scheduledFor) } }, { from: T0, to });
      const rows = await history(store, "t1", nj.job.jobId);
      assert.deepEqual(
        rows.map((r) => [r.executionId, r.state]),
        [[executionIdFor(nj.job.jobId, to.scheduledFor), "PAUSED"]],
      );
      assert.deepEqual(await lease(store, T0 + 2 * HOUR), []);
    });

    storeTest("a PATCH replaces it only while it has not started: a running one stays, and nothing is added", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const to = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
      const updated = await update(store, r.nj, { schedule: { runAt: iso(to.scheduledFor) } }, { from: T0, to }, T0 + 1);
      assert.ok(updated, "the job itself changes");
      const rows = await history(store, "t1", r.job.jobId);
      assert.deepEqual(
        rows.map((x) => [x.executionId, x.state]),
        [[r.executionId, "RUNNING"]],
      );
      assert.deepEqual(await lease(store, T0 + 2 * HOUR), []);
    });

    storeTest("a change of kind moves the occurrence: a one-off turned recurring loses its pending execution, and back", async (store) => {
      const nj = newJob();
      await createOne(store, nj);
      await update(store, nj, { kind: "cron", schedule: { ...CRON_SCHEDULE } }, { from: T0, to: null });
      assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
      const to = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
      const back = await update(store, nj, { kind: "once", schedule: { runAt: iso(to.scheduledFor) } }, { from: null, to });
      assert.equal(back?.nextRunAt, to.scheduledFor);
      assert.equal((await leaseOne(store, to.dueAt)).executionId, executionIdFor(nj.job.jobId, to.scheduledFor));
    });

    storeTest("a one-off ended by a triggered execution drops its pending execution", async (store) => {
      const nj = newJob({ at: T0 + HOUR });
      await createOne(store, nj);
      const [triggered] = await store.executionCreateMany({
        tenantId: "t1",
        jobId: nj.job.jobId,
        nodeId: "n1",
        now: T0,
        items: [{ scheduledFor: T0, readyAt: T0 }],
      });
      assert.ok(triggered);
      const leased = await leaseOne(store, T0);
      assert.equal(leased.executionId, triggered.executionId);
      assertOk(
        (await store.executionCompleteMany({ items: [{ executionId: leased.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 1 }))[0],
        "SUCCEEDED",
      );
      const job = await getJob(store, nj);
      assert.equal(job.state, "COMPLETED");
      assert.equal(job.nextRunAt, null);
      assert.deepEqual(
        (await history(store, "t1", nj.job.jobId)).map((r) => r.executionId),
        [triggered.executionId],
      );
      assert.deepEqual(await lease(store, T0 + 2 * HOUR), []);
    });
  });

  describe("executionCreateMany", () => {
    storeTest("creates READY executions with the given scheduledFor and readyAt (trigger, backfill)", async (store) => {
      const nj = cronJob({ at: T0 + HOUR });
      await createOne(store, nj);
      const at = T0 + 5 * SECOND;
      const [row] = await store.executionCreateMany({
        tenantId: "t1",
        jobId: nj.job.jobId,
        nodeId: "n7",
        now: at,
        items: [{ scheduledFor: at, readyAt: at }],
      });
      assert.ok(row);
      assert.equal(row.executionId, executionIdFor(nj.job.jobId, at));
      assert.equal(row.jobId, nj.job.jobId);
      assert.equal(row.scheduledFor, at);
      assert.equal(row.attempt, 0);
      assert.equal(row.state, "READY");
      assert.equal(row.readyAt, at);
      assert.equal(row.dispatchedAt, at);
      assert.equal(row.dispatchedBy, "n7");
      assert.equal(row.startedAt, null);
      assert.equal(row.finishedAt, null);
      assert.deepEqual(await history(store, "t1", nj.job.jobId), [row]);
      const leased = await leaseOne(store, at);
      assert.equal(leased.executionId, row.executionId);
      assert.equal(leased.scheduledFor, at);
      const job = await getJob(store, nj);
      assert.equal(job.nextRunAt, T0 + HOUR, "a trigger leaves the schedule alone");
      assert.equal(job.state, "SCHEDULED");
    });

    storeTest("an occurrence that has an execution already answers null; the others are created, ready when asked", async (store) => {
      const nj = cronJob({ at: T0 + HOUR });
      await createOne(store, nj);
      const items = [1, 2, 3].map((i) => ({ scheduledFor: T0 - i * HOUR, readyAt: T0 + i * SECOND }));
      const first = await store.executionCreateMany({ tenantId: "t1", jobId: nj.job.jobId, nodeId: "n1", now: T0, items: items.slice(0, 1) });
      assert.ok(first[0]);
      const again = await store.executionCreateMany({ tenantId: "t1", jobId: nj.job.jobId, nodeId: "n1", now: T0, items });
      assert.equal(again[0], null);
      assert.ok(again[1] && again[2]);
      assert.equal(again[2]!.readyAt, T0 + 3 * SECOND);
      assert.equal((await lease(store, T0 + 1 * SECOND)).length, 1, "only the first is ready at T0 + 1 s");
      assert.equal((await lease(store, T0 + 3 * SECOND)).length, 2);
    });

    storeTest("answers null for another tenant's job or an unknown job", async (store) => {
      const nj = cronJob();
      await createOne(store, nj);
      const item = [{ scheduledFor: T0, readyAt: T0 }];
      assert.deepEqual(await store.executionCreateMany({ tenantId: "t2", jobId: nj.job.jobId, nodeId: "n1", now: T0, items: item }), [null]);
      assert.deepEqual(await store.executionCreateMany({ tenantId: "t1", jobId: newId(T0), nodeId: "n1", now: T0, items: item }), [null]);
      assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
      assert.deepEqual(await lease(store, T0), []);
    });
  });
}
