// The store contract, in part (index.ts runs the parts in order).
// A one-off's end (core/states.ts ONE_OFF_END): read from its execution, never
// written on its job, and held by every reader and writer of the job.

import assert from "node:assert/strict";
import { describe } from "node:test";

import type { Store } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  HOUR,
  FATAL,
  newJob,
  cronJob,
  acquireAll,
  createOne,
  getJob,
  lease,
  leaseOne,
  runningExecution,
  fail,
  assertOk,
  rescheduled,
  type Ready,
  type ContractTests,
} from "./support.js";

async function succeed(store: Store, r: Ready, now: number): Promise<void> {
  assertOk((await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now }))[0], "SUCCEEDED");
}

export function oneOffEndContract({ storeTest }: ContractTests): void {
  describe("a one-off's end, read from its execution", () => {
    storeTest("a change at the version read before the end is refused: its end moves no version, and the job reads ended", async (store) => {
      const epochs = await acquireAll(store, "n1");
      for (const end of ["SUCCEEDED", "DEAD"] as const) {
        const r = await runningExecution(store, epochs);
        const { version } = await getJob(store, r.nj);
        if (end === "SUCCEEDED") await succeed(store, r, T0 + SECOND);
        else
          assertOk(
            (
              await store.executionFailMany({
                items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error: FATAL })],
                now: T0 + SECOND,
              })
            )[0],
            "DEAD",
          );
        const jobId = r.job.jobId;
        for (const state of ["CANCELLED", "PAUSED"] as const) {
          assert.equal(
            await store.jobTransition({ tenantId: "t1", jobId, fromVersion: version, state, due: null, now: T0 + 2 * SECOND }),
            null,
            state,
          );
        }
        const fields = rescheduled(r.job, T0 + HOUR);
        const pending = { from: null, to: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR } };
        assert.equal(
          await store.jobUpdate({ tenantId: "t1", jobId, fromVersion: version, fields, due: null, pending, nodeId: "n1", now: T0 + 2 * SECOND }),
          null,
          "a PATCH of an ended one-off",
        );
        const job = await getJob(store, r.nj);
        assert.deepEqual([job.state, job.version, job.updatedAt], [end === "SUCCEEDED" ? "COMPLETED" : "DEAD", version, T0 + SECOND]);
      }
      assert.deepEqual(await lease(store, T0 + 2 * HOUR), [], "nothing of either runs again");
    });

    storeTest("jobList filters by the state as read: an ended one-off lists as COMPLETED or DEAD, not SCHEDULED", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const done = await runningExecution(store, epochs, { target: { type: "queue", pool: "p-done" } });
      await succeed(store, done, T0 + SECOND);
      const dead = await runningExecution(store, epochs, { target: { type: "queue", pool: "p-dead" } });
      await store.executionFailMany({ items: [fail({ executionId: dead.executionId, tenantId: "t1", attempt: 1, error: FATAL })], now: T0 + SECOND });
      const live = newJob({ at: T0 + HOUR });
      await createOne(store, live);
      const listed = async (state: "SCHEDULED" | "COMPLETED" | "DEAD") =>
        (await store.jobList({ tenantId: "t1", state, limit: 10 })).map((j) => [j.jobId, j.state]);
      assert.deepEqual(await listed("COMPLETED"), [[done.job.jobId, "COMPLETED"]]);
      assert.deepEqual(await listed("DEAD"), [[dead.job.jobId, "DEAD"]]);
      assert.deepEqual(await listed("SCHEDULED"), [[live.job.jobId, "SCHEDULED"]]);
    });

    storeTest("paused while its attempt runs, a one-off reads COMPLETED once the attempt succeeds; cancelled, it stays CANCELLED", async (store) => {
      const epochs = await acquireAll(store, "n1");
      for (const state of ["PAUSED", "CANCELLED"] as const) {
        const r = await runningExecution(store, epochs);
        assert.ok(await store.jobTransition({ tenantId: "t1", jobId: r.job.jobId, fromVersion: 1, state, due: null, now: T0 }));
        await succeed(store, r, T0 + SECOND);
        const job = await getJob(store, r.nj);
        assert.equal(job.state, state === "PAUSED" ? "COMPLETED" : "CANCELLED", state);
        if (state === "PAUSED") {
          const resume = {
            tenantId: "t1",
            jobId: r.job.jobId,
            fromVersion: job.version,
            state: "SCHEDULED",
            due: null,
            now: T0 + 2 * SECOND,
          } as const;
          assert.equal(await store.jobTransition(resume), null, "an ended one-off is not resumed");
        }
      }
    });

    storeTest(
      "jobCountPending: a one-off counts until its execution ends (once, however many it has); a recurring job while scheduled",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const count = () => store.jobCountPending({ tenantId: "t1" });
        const later = newJob({ at: T0 + HOUR });
        await createOne(store, later);
        const r = await runningExecution(store, epochs, { target: { type: "queue", pool: "p-run" } });
        await createOne(store, cronJob());
        assert.equal(await count(), 3, "pending, running, recurring");
        await store.executionCreateMany({
          tenantId: "t1",
          jobId: later.job.jobId,
          nodeId: "n1",
          now: T0,
          items: [{ scheduledFor: T0, readyAt: T0 }],
        });
        assert.equal(await count(), 3, "a triggered second execution counts its job once");
        assertOk(
          (await store.executionFailMany({ items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })], now: T0 + SECOND }))[0],
          "READY",
        );
        assert.equal(await count(), 3, "a retry waiting is still pending");
        const [retry] = await lease(store, T0 + HOUR, { pool: "p-run" });
        assert.ok(retry);
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: retry.attempt }], now: T0 + HOUR }))[0],
          "SUCCEEDED",
        );
        assert.equal(await count(), 2, "ended: no longer pending");
        const triggered = await leaseOne(store, T0 + HOUR, { pool: "p1" });
        await store.executionCompleteMany({ items: [{ executionId: triggered.executionId, tenantId: "t1", attempt: 1 }], now: T0 + HOUR });
        assert.equal(await count(), 1, "its trigger ended it, and dropped the pending one");
      },
    );
  });
}
