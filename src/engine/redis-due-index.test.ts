// The engine on the Redis due index (--due-index), against the machine's
// Redis, each test under its own key prefix, and a real SQLite store and real
// time: recurring jobs fire through the index, each occurrence once; an index
// that lost every key (a flush, a Redis restart without persistence) is
// rebuilt by reconciliation, and the jobs still fire once; members the store
// no longer wants are dropped; two schedulers claiming one shard at once (a
// handover) take disjoint sets; and a bad --due-index URL is refused.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, type TestContext, test } from "node:test";
import type { BatchCreateItem } from "@duetime/sdk/contract";
import { newId, shardOf } from "../core/ids.js";
import { openStore } from "../store/factory.js";
import { recurringJobs } from "../store/test-support.js";
import { openEngine, type Engine } from "./engine.js";
import { EngineEvents } from "./events.js";
import { RedisDueIndex } from "./redis-due-index.js";
import { deletePrefix, REDIS_URL, redisTest, testPrefix } from "../store/redis/test-support.js";
import { RedisDueKeys } from "../store/redis/due-keys.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-redis-index-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** An engine on the Redis index under a prefix of the test's own, and a client of that prefix; all torn down after the test. */
async function indexedEngine(
  t: TestContext,
  label: string,
  refreshMs = 500,
  stepMs = 20,
): Promise<{ engine: Engine; keys: RedisDueKeys; prefix: string }> {
  const prefix = testPrefix(label);
  const engine = await openEngine({
    store: `sqlite:${join(dir, `r${n++}.db`)}`,
    nodeId: "n",
    httpTargets: false,
    dueIndex: { url: REDIS_URL, prefix, refreshMs, reconcile: { stepMs } },
  });
  await engine.start();
  const keys = RedisDueKeys.connect({ url: REDIS_URL, prefix });
  t.after(async () => {
    await engine.stop();
    await keys.close();
    await deletePrefix(prefix);
  });
  return { engine, keys, prefix };
}

/** `count` yearly six-field crons whose next occurrence is the whole second `at`. */
function cronsAt(at: number, count: number): BatchCreateItem[] {
  const d = new Date(at);
  const cron = `${d.getUTCSeconds()} ${d.getUTCMinutes()} ${d.getUTCHours()} ${d.getUTCDate()} ${d.getUTCMonth() + 1} *`;
  return Array.from({ length: count }, (_, i) => ({ name: `c${i}`, target: { type: "queue", pool: "p" }, schedule: { cron, tz: "UTC" } }));
}

/** Dispatches counted by job until `count` jobs have one, or the deadline. */
function dispatchedJobs(engine: Engine, count: number, timeoutMs: number): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${seen.size} of ${count} jobs dispatched in ${timeoutMs} ms`)), timeoutMs);
    engine.events.on("execution:dispatched", (e) => {
      seen.set(e.jobId, (seen.get(e.jobId) ?? 0) + 1);
      if (seen.size === count) {
        clearTimeout(timer);
        // A little longer: a second dispatch of any job would show.
        setTimeout(() => resolve(seen), 300);
      }
    });
  });
}

async function indexed(keys: RedisDueKeys, until: number, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const shards = Array.from({ length: 256 }, (_, i) => i);
  for (;;) {
    const { scheduled, leased } = await keys.counts(shards);
    if (scheduled + leased >= until) return;
    if (Date.now() > deadline) throw new Error(`the index holds ${scheduled + leased} of ${until}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const secondsFromNow = (s: number) => Math.ceil(Date.now() / 1000) * 1000 + s * 1000;

redisTest("recurring jobs fire through the Redis index, each occurrence once, and the index moves to the next", async (t) => {
  const { engine, keys } = await indexedEngine(t, "e2e");
  const at = secondsFromNow(2);
  const created = await engine.service.createJobs(ctx, cronsAt(at, 300));
  assert.ok(created.every((r) => "jobId" in r));
  await indexed(keys, 300);
  const seen = await dispatchedJobs(engine, 300, 15_000);
  assert.equal(seen.size, 300);
  assert.deepEqual([...new Set(seen.values())], [1], "no occurrence dispatched twice");
  const leased = await engine.service.lease(ctx, "p", { workerId: "w", max: 1000 });
  assert.equal(leased.items.length, 300);
  const shards = Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(await keys.counts(shards), { scheduled: 300, leased: 0 }, "each job's next (a year on) is indexed, no claim is left");
});

redisTest("an index that lost every key is rebuilt from the store by reconciliation; every job still fires once", async (t) => {
  // No refresh and no paced reconcile step in the test's time: the lost generation makes the
  // reconciler hurry, and the entries it repairs wake the scheduler themselves.
  const { engine, keys, prefix } = await indexedEngine(t, "flush", 60_000, 60_000);
  const at = secondsFromNow(3);
  await engine.service.createJobs(ctx, cronsAt(at, 500));
  await indexed(keys, 500);
  await deletePrefix(prefix); // the index is gone: only the store knows
  const seen = await dispatchedJobs(engine, 500, 20_000);
  assert.equal(seen.size, 500);
  assert.deepEqual([...new Set(seen.values())], [1], "no occurrence dispatched twice");
  assert.match(await engine.metricsText(), /duetime_due_index_repaired_total\{repair="added"\} [1-9]/);
});

redisTest("reconciliation drops members the store has no due entry for, and counts them", async (t) => {
  const { engine, keys } = await indexedEngine(t, "orphans");
  await engine.reconciler!.stop(); // stepped by hand below
  await keys.add([{ jobId: "job_notinthestore", shard: 7, dueAt: Date.now() + 3_600_000 }]);
  const cycle = await engine.reconciler!.runCycle();
  assert.deepEqual(cycle, { added: 0, removed: 1 });
  assert.deepEqual((await keys.scores(7, ["job_notinthestore"])).scheduled, [null]);
  assert.ok(engine.reconciler!.lagMs() < 5_000, "every owned shard just had a pass");
});

redisTest("two schedulers claiming one shard at once take disjoint sets, together every due entry, each as the store holds it", async () => {
  const prefix = testPrefix("race");
  const store = await openStore(`sqlite:${join(dir, `race${n++}.db`)}`);
  const now = Date.now();
  const shard = shardOf(newId(now));
  const jobs = recurringJobs(2000, { createdAt: now, dueAt: now - 1000, shard });
  const shards = [shard];
  const indexes = [0, 1].map(() => new RedisDueIndex({ keys: RedisDueKeys.connect({ url: REDIS_URL, prefix }), store, events: new EngineEvents() }));
  try {
    await store.jobCreateMany({ jobs, nodeId: "n", now });
    const writer = RedisDueKeys.connect({ url: REDIS_URL, prefix });
    await writer.add(jobs.map((j) => ({ jobId: j.job.jobId, shard: j.job.shard, dueAt: j.due!.dueAt })));
    await writer.close();
    for (const index of indexes) {
      index.setShards(shards);
      await index.refresh(Date.now());
    }
    const takes = await Promise.all(
      indexes.map(async (index) => {
        const taken: string[] = [];
        for (let batch = await index.take(Date.now(), 50); batch.length > 0; batch = await index.take(Date.now(), 50)) {
          for (const e of batch) assert.equal(e.scheduledFor, now - 1000, "the entry as the store holds it");
          taken.push(...batch.map((e) => e.jobId));
        }
        return taken;
      }),
    );
    assert.ok(
      takes.every((t) => t.length > 0),
      "both claimed some: they raced",
    );
    const all = takes.flat();
    assert.equal(new Set(all).size, all.length, "no entry was taken twice");
    assert.deepEqual(new Set(all), new Set(jobs.map((j) => j.job.jobId)));
  } finally {
    await Promise.all(indexes.map((i) => i.close()));
    await store.close();
    await deletePrefix(prefix);
  }
});

test("a due index URL that is not redis:// is refused before anything opens", async () => {
  await assert.rejects(
    openEngine({ store: `sqlite:${join(dir, `bad${n++}.db`)}`, httpTargets: false, dueIndex: { url: "http://127.0.0.1:6379" } }),
    /dueIndex\.url: a redis:\/\/ or rediss:\/\/ URL/,
  );
});
