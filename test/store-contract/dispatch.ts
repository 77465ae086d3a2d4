// The store contract, in part (index.ts runs the parts in order).
// Dispatch (store.ts, "due index and dispatch"): dispatchMany, its misfire and
// overlap plans included.

import assert from "node:assert/strict";
import { describe } from "node:test";

import type { Target } from "@duetime/sdk/contract";
import { executionIdFor } from "../../src/core/ids.js";
import { HTTP_POOL } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  MINUTE,
  HOUR,
  CREATED,
  LEASE_MS,
  cronJob,
  CRON,
  jobOutsideShards,
  entryOf,
  acquireAll,
  createOne,
  getJob,
  readyExecution,
  lease,
  leaseOne,
  history,
  attemptOf,
  assertOk,
  type ContractTests,
} from "./support.js";

export function dispatchContract({ storeTest }: ContractTests): void {
  describe("dispatchMany", () => {
    storeTest("creates a READY execution named executionIdFor(jobId, scheduledFor), leasable from the job's queue pool", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 200 } });
      await createOne(store, nj);
      const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0 + 200, items: [{ entry: entryOf(nj), next: null }] });
      const executionId = executionIdFor(nj.job.jobId, T0);
      assert.deepEqual(res.dispatched, [{ jobId: nj.job.jobId, executionId, tenantId: "t1", pool: "p1" }]);
      assert.deepEqual(res.stale, []);
      assert.deepEqual(res.fenced, []);
      const rows = await history(store, "t1", nj.job.jobId);
      assert.equal(rows.length, 1);
      const row = attemptOf(rows, executionId, 0);
      assert.equal(row.state, "READY");
      assert.equal(row.scheduledFor, T0);
      assert.equal(row.jobId, nj.job.jobId);
      assert.equal(await store.executionLease({ pool: "other", workerId: "w", max: 10, leaseMs: LEASE_MS, now: T0 + 200 }).then((r) => r.length), 0);
      const leased = await leaseOne(store, T0 + 200);
      assert.equal(leased.executionId, executionId);
    });

    storeTest(
      "a dry-run job's run is recorded SKIPPED (reason dry_run) in wouldRun, never leased; after a flip to live the next is READY",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob({ mode: "dry_run" });
        await createOne(store, nj);
        const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
        const first = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next }] });
        const would = executionIdFor(nj.job.jobId, T0);
        assert.deepEqual(first.dispatched, []);
        assert.deepEqual(first.wouldRun, [{ jobId: nj.job.jobId, executionId: would, tenantId: "t1", pool: "p1" }]);
        const skipped = attemptOf(await history(store, "t1", nj.job.jobId), would, 0);
        assert.deepEqual([skipped.state, skipped.error?.reason, skipped.finishedAt], ["SKIPPED", "dry_run", T0]);
        assert.deepEqual(await lease(store, T0 + MINUTE), []);

        const job = await getJob(store, nj);
        const { kind, name, target, payload, schedule, retry, timeoutSeconds, priority } = job;
        const fields = { kind, name, target, payload, schedule, retry, timeoutSeconds, priority, mode: "live" as const };
        assert.ok(
          await store.jobUpdate({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: job.version, fields, due: "keep", nodeId: "n1", now: T0 }),
        );
        const second = await store.dispatchMany({
          nodeId: "n1",
          epochs,
          now: T0 + HOUR,
          items: [{ entry: { ...entryOf(nj), ...next }, next: null }],
        });
        assert.deepEqual(second.wouldRun, []);
        assert.deepEqual(
          second.dispatched.map((d) => d.executionId),
          [executionIdFor(nj.job.jobId, T0 + HOUR)],
        );
        assert.equal((await leaseOne(store, T0 + HOUR)).executionId, executionIdFor(nj.job.jobId, T0 + HOUR));
      },
    );

    storeTest("records dispatchedBy = nodeId and dispatchedAt = now", async (store) => {
      const epochs = await acquireAll(store, "node-a");
      const nj = cronJob();
      await createOne(store, nj);
      await store.dispatchMany({ nodeId: "node-a", epochs, now: T0 + 42, items: [{ entry: entryOf(nj), next: null }] });
      const row = attemptOf(await history(store, "t1", nj.job.jobId), executionIdFor(nj.job.jobId, T0), 0);
      assert.equal(row.dispatchedBy, "node-a");
      assert.equal(row.dispatchedAt, T0 + 42);
    });

    storeTest("an http target's execution waits in HTTP_POOL and is leased with its target", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const target: Target = { type: "http", url: "https://example.com/hook", method: "POST", headers: { "x-k": "v" } };
      const r = await readyExecution(store, epochs, { ...CRON, target });
      assert.deepEqual(await lease(store, T0), []);
      const leased = await leaseOne(store, T0, { pool: HTTP_POOL });
      assert.equal(leased.executionId, r.executionId);
      assert.deepEqual(leased.target, target);
    });

    storeTest("a last occurrence's due entry is deleted; the job stays SCHEDULED with nextRunAt and nextDueAt null", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs, CRON);
      const job = await getJob(store, r.nj);
      assert.equal(job.state, "SCHEDULED");
      assert.equal(job.nextRunAt, null);
      assert.equal(job.nextDueAt, null);
      assert.deepEqual(await store.dueLoad({ shards: [job.shard], before: T0 + HOUR, limit: 10 }), []);
    });

    storeTest("a cron job's due entry advances to next (nextRunAt, nextDueAt), and the next occurrence dispatches too", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR + 300 };
      const first = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next }] });
      assert.equal(first.dispatched.length, 1);
      const job = await getJob(store, nj);
      assert.equal(job.state, "SCHEDULED");
      assert.equal(job.nextRunAt, T0 + HOUR);
      assert.equal(job.nextDueAt, T0 + HOUR + 300);
      const loaded = await store.dueLoad({ shards: [nj.job.shard], before: T0 + 2 * HOUR, limit: 10 });
      assert.equal(loaded.length, 1);
      const entry = loaded[0]!;
      assert.deepEqual([entry.jobId, entry.scheduledFor, entry.dueAt], [nj.job.jobId, T0 + HOUR, T0 + HOUR + 300]);
      const second = await store.dispatchMany({
        nodeId: "n1",
        epochs,
        now: T0 + HOUR + 300,
        items: [{ entry, next: { scheduledFor: T0 + 2 * HOUR, dueAt: T0 + 2 * HOUR } }],
      });
      assert.deepEqual(
        second.dispatched.map((d) => d.executionId),
        [executionIdFor(nj.job.jobId, T0 + HOUR)],
      );
      assert.equal((await getJob(store, nj)).nextRunAt, T0 + 2 * HOUR);
      const rows = await history(store, "t1", nj.job.jobId);
      assert.deepEqual(
        rows.map((r) => r.scheduledFor),
        [T0 + HOUR, T0],
      );
      const leased = await lease(store, T0 + HOUR + 300, { max: 10 });
      assert.equal(leased.length, 2);
    });

    storeTest("a paused job's due entry is consumed but dispatches nothing; a trigger still adds an execution", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      assert.ok(await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: T0 - 1 }));
      const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next: null }] });
      assert.deepEqual(res.dispatched, []);
      assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
      const [triggered] = await store.executionCreateMany({
        tenantId: "t1",
        jobId: nj.job.jobId,
        nodeId: "n1",
        now: T0,
        items: [{ scheduledFor: T0 + 5, readyAt: T0 }],
      });
      assert.equal(triggered?.state, "READY");
    });

    storeTest("with completeJob the job becomes COMPLETED, its last execution still runs", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      const created = await createOne(store, nj);
      const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next: null, completeJob: true }] });
      assert.equal(res.dispatched.length, 1);
      const job = await getJob(store, nj);
      assert.equal(job.state, "COMPLETED");
      assert.equal(job.nextRunAt, null);
      assert.ok(job.version > created.version, "the version grows on every change");
      assert.deepEqual(await store.dueLoad({ shards: [nj.job.shard], before: T0 + 10 * HOUR, limit: 10 }), []);
      assert.equal((await leaseOne(store, T0)).executionId, res.dispatched[0]!.executionId);
    });

    storeTest("dispatching the same entry twice: the second is stale and creates no second execution", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const last = cronJob();
      const cron = cronJob();
      await store.jobCreateMany({ nodeId: "n1", jobs: [last, cron], now: CREATED });
      const items = [
        { entry: entryOf(last), next: null },
        { entry: entryOf(cron), next: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR } },
      ];
      const first = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items });
      assert.equal(first.dispatched.length, 2);
      const again = await store.dispatchMany({ nodeId: "n1", epochs, now: T0 + 5, items });
      assert.deepEqual(again.dispatched, []);
      assert.deepEqual(new Set(again.stale), new Set([last.job.jobId, cron.job.jobId]));
      assert.deepEqual(again.fenced, []);
      assert.equal((await history(store, "t1", last.job.jobId)).length, 1);
      assert.equal((await history(store, "t1", cron.job.jobId)).length, 1);
      assert.equal(attemptOf(await history(store, "t1", last.job.jobId), executionIdFor(last.job.jobId, T0), 0).dispatchedAt, T0);
      assert.equal((await getJob(store, cron)).nextRunAt, T0 + HOUR, "the stale item did not advance the entry");
      assert.equal((await lease(store, T0 + 10)).length, 2);
    });

    storeTest("an entry whose job was cancelled (due removed) is stale", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      const [entry] = await store.dueLoad({ shards: [nj.job.shard], before: T0, limit: 10 });
      assert.ok(entry);
      await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 - 10 });
      const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry, next: null }] });
      assert.deepEqual(res.dispatched, []);
      assert.deepEqual(res.stale, [nj.job.jobId]);
      assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
      assert.equal((await getJob(store, nj)).state, "CANCELLED");
    });

    storeTest("an entry whose due moved to another time is stale, and the moved entry stays", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      const entry = entryOf(nj);
      await store.jobTransition({
        tenantId: "t1",
        jobId: nj.job.jobId,
        fromVersion: 1,
        state: "SCHEDULED",
        due: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR },
        now: T0 - 10,
      });
      const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry, next: null }] });
      assert.deepEqual(res.stale, [nj.job.jobId]);
      assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
      assert.equal((await getJob(store, nj)).nextRunAt, T0 + HOUR);
      assert.equal((await store.dueLoad({ shards: [nj.job.shard], before: T0 + HOUR, limit: 10 })).length, 1);
    });

    storeTest("an item whose shard epoch moved is fenced and nothing is written", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      const wrong = new Map(epochs);
      wrong.set(nj.job.shard, epochs.get(nj.job.shard)! + 1);
      const res = await store.dispatchMany({ nodeId: "n1", epochs: wrong, now: T0, items: [{ entry: entryOf(nj), next: null }] });
      assert.deepEqual(res.dispatched, []);
      assert.deepEqual(res.fenced, [nj.job.jobId]);
      assert.deepEqual(res.stale, []);
      assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
      assert.equal((await getJob(store, nj)).nextRunAt, T0);
      assert.equal((await store.dueLoad({ shards: [nj.job.shard], before: T0, limit: 10 })).length, 1);
      assert.deepEqual(await lease(store, T0), []);
    });

    storeTest("without completeJob the driver decides nothing: a cron job with no next occurrence stays SCHEDULED", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next: null }] });
      assert.equal((await getJob(store, nj)).state, "SCHEDULED");
    });

    storeTest("an item of a shard missing from epochs is fenced", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      const partial = new Map(epochs);
      partial.delete(nj.job.shard);
      const res = await store.dispatchMany({ nodeId: "n1", epochs: partial, now: T0, items: [{ entry: entryOf(nj), next: null }] });
      assert.deepEqual(res.fenced, [nj.job.jobId]);
      assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
      assert.equal((await getJob(store, nj)).nextRunAt, T0);
    });

    storeTest("after a takeover the old owner's epochs are fenced and the new owner dispatches", async (store) => {
      const old = await acquireAll(store, "old", T0 - HOUR, 10 * SECOND);
      const nj = cronJob();
      await createOne(store, nj);
      const taken = await acquireAll(store, "new", T0 - HOUR + 20 * SECOND, HOUR);
      assert.ok(taken.get(nj.job.shard)! > old.get(nj.job.shard)!);
      const fenced = await store.dispatchMany({ nodeId: "old", epochs: old, now: T0, items: [{ entry: entryOf(nj), next: null }] });
      assert.deepEqual(fenced.fenced, [nj.job.jobId]);
      assert.deepEqual(fenced.dispatched, []);
      const ok = await store.dispatchMany({ nodeId: "new", epochs: taken, now: T0, items: [{ entry: entryOf(nj), next: null }] });
      assert.equal(ok.dispatched.length, 1);
      assert.equal(attemptOf(await history(store, "t1", nj.job.jobId), ok.dispatched[0]!.executionId, 0).dispatchedBy, "new");
    });

    storeTest("one batch answers dispatched, stale and fenced items each on its own", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const fencedJob = cronJob();
      const good = jobOutsideShards(new Set([fencedJob.job.shard]), { ...CRON, tenantId: "t2", target: { type: "queue", pool: "p2" } });
      const staleJob = jobOutsideShards(new Set([fencedJob.job.shard]), CRON);
      await store.jobCreateMany({ nodeId: "n1", jobs: [fencedJob, good, staleJob], now: CREATED });
      await store.jobTransition({ tenantId: "t1", jobId: staleJob.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 - 1 });
      const wrong = new Map(epochs);
      wrong.set(fencedJob.job.shard, epochs.get(fencedJob.job.shard)! - 1);
      const res = await store.dispatchMany({
        nodeId: "n1",
        epochs: wrong,
        now: T0,
        items: [fencedJob, good, staleJob].map((nj) => ({ entry: entryOf(nj), next: null })),
      });
      assert.deepEqual(res.dispatched, [{ jobId: good.job.jobId, executionId: executionIdFor(good.job.jobId, T0), tenantId: "t2", pool: "p2" }]);
      assert.deepEqual(res.stale, [staleJob.job.jobId]);
      assert.deepEqual(res.fenced, [fencedJob.job.jobId]);
      assert.equal((await getJob(store, fencedJob)).nextRunAt, T0);
    });

    storeTest("an execution that already exists for (jobId, scheduledFor) is not inserted again", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs, CRON);
      const leased = await leaseOne(store, T0);
      assertOk(
        (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 10 }))[0],
        "SUCCEEDED",
      );
      // Re-arm the same occurrence (e.g. a resume that recomputed the same time).
      const job = await getJob(store, r.nj);
      const rearmed = await store.jobTransition({
        tenantId: "t1",
        jobId: r.job.jobId,
        fromVersion: job.version,
        state: "SCHEDULED",
        due: { scheduledFor: T0, dueAt: T0 },
        now: T0 + 20,
      });
      assert.ok(rearmed);
      const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0 + 30, items: [{ entry: entryOf(r.nj), next: null }] });
      assert.deepEqual(res.stale, []);
      assert.deepEqual(res.fenced, []);
      const rows = await history(store, "t1", r.job.jobId);
      assert.equal(rows.length, 1, `one attempt, no new execution: ${JSON.stringify(rows)}`);
      const row = attemptOf(rows, r.executionId, leased.attempt);
      assert.equal(row.state, "SUCCEEDED");
      assert.equal(row.dispatchedAt, T0);
      assert.equal((await getJob(store, r.nj)).nextRunAt, null, "the entry was consumed");
      assert.deepEqual(await lease(store, T0 + 40), []);
    });
  });

  describe("dispatchMany: misfire and overlap plans", () => {
    storeTest("run picks another occurrence to execute and skipped ones are recorded SKIPPED with their reason", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      const runAt = T0 + 2 * HOUR;
      const res = await store.dispatchMany({
        nodeId: "n1",
        epochs,
        now: T0 + 2 * HOUR + MINUTE,
        items: [
          {
            entry: entryOf(nj),
            next: { scheduledFor: T0 + 3 * HOUR, dueAt: T0 + 3 * HOUR },
            run: runAt,
            skipped: [
              { scheduledFor: T0, reason: "misfire" },
              { scheduledFor: T0 + HOUR, reason: "misfire" },
            ],
          },
        ],
      });
      assert.deepEqual(
        res.dispatched.map((d) => d.executionId),
        [executionIdFor(nj.job.jobId, runAt)],
      );
      const rows = await history(store, "t1", nj.job.jobId);
      assert.deepEqual(
        rows.map((r) => [r.scheduledFor, r.state]),
        [
          [runAt, "READY"],
          [T0 + HOUR, "SKIPPED"],
          [T0, "SKIPPED"],
        ],
      );
      assert.equal(rows[2]!.error?.reason, "misfire");
      assert.equal((await lease(store, T0 + 3 * HOUR)).length, 1, "a SKIPPED execution was leased");
    });

    storeTest("run null executes nothing but still moves the due entry", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      const res = await store.dispatchMany({
        nodeId: "n1",
        epochs,
        now: T0,
        items: [{ entry: entryOf(nj), next: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR }, run: null }],
      });
      assert.deepEqual(res.dispatched, []);
      assert.equal((await getJob(store, nj)).nextRunAt, T0 + HOUR);
      assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
    });

    storeTest("overlap forbid records the run SKIPPED while an execution of the job is in flight", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
      await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next, overlap: "forbid" }] });
      const res = await store.dispatchMany({
        nodeId: "n1",
        epochs,
        now: T0 + HOUR,
        items: [{ entry: { ...entryOf(nj), ...next }, next: null, overlap: "forbid" }],
      });
      assert.deepEqual(res.dispatched, []);
      const rows = await history(store, "t1", nj.job.jobId);
      assert.deepEqual(
        rows.map((r) => [r.scheduledFor, r.state]),
        [
          [T0 + HOUR, "SKIPPED"],
          [T0, "READY"],
        ],
      );
      assert.equal(rows[0]!.error?.reason, "overlap");
    });

    storeTest("overlap replace cancels the in-flight executions, asks running ones to stop, and runs", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
      await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next, overlap: "replace" }] });
      const running = await leaseOne(store, T0, { leaseMs: 10 * HOUR });
      // the next occurrence's dispatch while the first still runs (inside its 300 s timeout)
      const res = await store.dispatchMany({
        nodeId: "n1",
        epochs,
        now: T0 + MINUTE,
        items: [{ entry: { ...entryOf(nj), ...next }, next: null, overlap: "replace" }],
      });
      assert.equal(res.dispatched.length, 1);
      const beat = await store.executionHeartbeat({ tenantId: "t1", executionId: running.executionId, attempt: 1, now: T0 + MINUTE });
      assert.deepEqual(beat.status === "ok" && beat.cancelRequested, true);
    });
  });
}
