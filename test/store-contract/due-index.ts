// The store contract, in part (index.ts runs the parts in order).
// The due index (store.ts, "due index and dispatch"): dueGet, dueRefs, dueScan
// and dueLoad.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { SHARD_COUNT } from "../../src/core/ids.js";
import type { NewJob } from "../../src/store/store.js";
import { T0, SECOND, HOUR, CREATED, newJob, cronJob, CRON, jobOutsideShards, type ContractTests } from "./support.js";

export function dueIndexContract({ storeTest }: ContractTests): void {
  describe("dueGet, dueRefs and dueScan", () => {
    storeTest("dueGet answers the entries of the jobs asked that have one, with what dispatch needs", async (store) => {
      const a = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 7 } });
      const notAsked = cronJob();
      const oneOff = newJob();
      await store.jobCreateMany({ nodeId: "n1", jobs: [a, notAsked, oneOff], now: CREATED });
      const got = await store.dueGet({ jobIds: [a.job.jobId, oneOff.job.jobId, "job_unknown"] });
      assert.deepEqual(
        got.map((e) => [e.jobId, e.shard, e.scheduledFor, e.dueAt, e.kind, e.tenantId]),
        [[a.job.jobId, a.job.shard, T0, T0 + 7, "cron", "t1"]],
        "only the jobs asked for; a one-off and an unknown job have no due entry",
      );
      assert.deepEqual(got[0]!.schedule, a.job.schedule);
      assert.deepEqual(await store.dueGet({ jobIds: [] }), []);
    });

    storeTest("dueRefs answers where the jobs asked are due, for those that have a due entry", async (store) => {
      const a = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 7 } });
      const notAsked = cronJob();
      const oneOff = newJob();
      await store.jobCreateMany({ nodeId: "n1", jobs: [a, notAsked, oneOff], now: CREATED });
      assert.deepEqual(await store.dueRefs({ jobIds: [a.job.jobId, oneOff.job.jobId, "job_unknown"] }), [
        { jobId: a.job.jobId, shard: a.job.shard, dueAt: T0 + 7 },
      ]);
      assert.deepEqual(await store.dueRefs({ jobIds: [] }), []);
    });

    storeTest("dueScan pages one shard's entries by job id, and no other shard's", async (store) => {
      const first = cronJob();
      const shard = first.job.shard;
      const same: NewJob[] = [first];
      while (same.length < 5) {
        const nj = cronJob();
        if (nj.job.shard === shard) same.push(nj);
      }
      const other = jobOutsideShards(new Set([shard]), CRON);
      await store.jobCreateMany({ nodeId: "n1", jobs: [...same, other], now: CREATED });
      const ids = same.map((j) => j.job.jobId).sort();
      const page1 = await store.dueScan({ shard, after: "", limit: 3 });
      const dueAt = new Map(same.map((j) => [j.job.jobId, j.due!.dueAt]));
      assert.deepEqual(
        page1,
        ids.slice(0, 3).map((jobId) => ({ jobId, shard, dueAt: dueAt.get(jobId) })),
      );
      const page2 = await store.dueScan({ shard, after: page1[2]!.jobId, limit: 3 });
      assert.deepEqual(
        page2.map((e) => e.jobId),
        ids.slice(3),
      );
      assert.deepEqual(await store.dueScan({ shard, after: ids[4]!, limit: 3 }), []);
    });
  });

  describe("dueLoad", () => {
    storeTest("loads only the given shards", async (store) => {
      const a = cronJob();
      const b = jobOutsideShards(new Set([a.job.shard]), CRON);
      await store.jobCreateMany({ nodeId: "n1", jobs: [a, b], now: CREATED });
      const onlyA = await store.dueLoad({ shards: [a.job.shard], before: T0, limit: 10 });
      assert.deepEqual(
        onlyA.map((e) => e.jobId),
        [a.job.jobId],
      );
      const both = await store.dueLoad({ shards: [a.job.shard, b.job.shard], before: T0, limit: 10 });
      assert.deepEqual(new Set(both.map((e) => e.jobId)), new Set([a.job.jobId, b.job.jobId]));
      const none = await store.dueLoad({ shards: [], before: T0, limit: 10 });
      assert.deepEqual(none, []);
    });

    storeTest("loads only entries with dueAt <= before, earliest dueAt first", async (store) => {
      // scheduledFor order differs from dueAt order (jitter): dueAt decides.
      const late = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 5000 } });
      const early = cronJob({ due: { scheduledFor: T0 + 1000, dueAt: T0 + 1000 } });
      const edge = cronJob({ due: { scheduledFor: T0 + 6000, dueAt: T0 + 6000 } });
      const future = cronJob({ due: { scheduledFor: T0 + 6001, dueAt: T0 + 6001 } });
      const jobs = [late, early, edge, future];
      await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
      const shards = [...new Set(jobs.map((j) => j.job.shard))];
      const loaded = await store.dueLoad({ shards, before: T0 + 6000, limit: 10 });
      assert.deepEqual(
        loaded.map((e) => e.jobId),
        [early.job.jobId, late.job.jobId, edge.job.jobId],
      );
      const first = loaded[1]!;
      assert.equal(first.scheduledFor, T0);
      assert.equal(first.dueAt, T0 + 5000);
      assert.equal(first.tenantId, "t1");
      assert.equal(first.shard, late.job.shard);
      assert.deepEqual(await store.dueLoad({ shards, before: T0 + 999, limit: 10 }), []);
    });

    storeTest("respects the limit, keeping the earliest", async (store) => {
      const jobs = Array.from({ length: 12 }, (_, i) => cronJob({ at: T0 + (12 - i) * SECOND }));
      await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
      const shards = Array.from({ length: SHARD_COUNT }, (_, i) => i);
      const loaded = await store.dueLoad({ shards, before: T0 + HOUR, limit: 5 });
      assert.deepEqual(
        loaded.map((e) => e.dueAt),
        [1, 2, 3, 4, 5].map((s) => T0 + s * SECOND),
      );
    });

    storeTest("returns the job's kind and schedule with each entry; a one-off has none", async (store) => {
      const once = newJob();
      const cron = cronJob();
      await store.jobCreateMany({ nodeId: "n1", jobs: [once, cron], now: CREATED });
      const loaded = await store.dueLoad({ shards: [once.job.shard, cron.job.shard], before: T0, limit: 10 });
      const byId = new Map(loaded.map((e) => [e.jobId, e]));
      assert.equal(byId.has(once.job.jobId), false);
      assert.equal(byId.get(cron.job.jobId)?.kind, "cron");
      assert.deepEqual(byId.get(cron.job.jobId)?.schedule, cron.job.schedule);
    });
  });
}
