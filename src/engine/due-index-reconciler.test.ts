// The reconciler's hurry, against the machine's Redis (a key prefix per
// test) and a real SQLite store: a shard is hurried through until a full
// pass has covered it in the index's generation. That mark is kept in Redis,
// so a node restarting against an intact index does not hurry; a shard whose
// mark is gone is hurried through first; and a lost generation (Redis lost
// its data) hurries every shard again.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import { systemClock } from "../core/clock.js";
import { openStore } from "../store/factory.js";
import { RedisDueKeys } from "../store/redis/due-keys.js";
import { admin, deletePrefix, REDIS_URL, redisTest, testPrefix } from "../store/redis/test-support.js";
import { recurringJobs } from "../store/test-support.js";
import { DueIndexReconciler } from "./due-index-reconciler.js";
import { EngineEvents } from "./events.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-reconciler-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const ALL_SHARDS = Array.from({ length: 256 }, (_, i) => i);

redisTest("a restart against an intact index does not hurry; a shard that lost its mark, or an index that lost its generation, does", async (t) => {
  const prefix = testPrefix("hurry");
  const store = await openStore(`sqlite:${join(dir, "hurry.db")}`);
  const keys = RedisDueKeys.connect({ url: REDIS_URL, prefix });
  const redis = admin();
  t.after(async () => {
    await keys.close();
    await store.close();
    await deletePrefix(prefix);
  });
  // Shard 5 holds three entries, so with pages of one its pass takes several steps.
  const now = Date.now();
  await store.jobCreateMany({ nodeId: "n", jobs: recurringJobs(3, { createdAt: now, dueAt: now + 3_600_000, shard: 5 }), now });
  const node = () => new DueIndexReconciler({ keys, store, clock: systemClock, events: new EngineEvents(), shards: () => ALL_SHARDS, pageSize: 1 });

  const first = node();
  const step = await first.runOnce();
  assert.equal(first.rebuildingShards(), step.shard === 5 ? 256 : 255, "a new index: every shard waits for its first pass");
  assert.deepEqual(await first.runCycle(), { added: step.added === 0 ? 3 : 2, removed: 0 });
  assert.equal(first.rebuildingShards(), 0);

  const restarted = node();
  await restarted.runOnce();
  assert.equal(restarted.rebuildingShards(), 0, "every shard's pass is marked in this generation: nothing to hurry");

  await redis.del(`${prefix}{dt:5}:built`);
  const takingOver = node();
  const first5 = await takingOver.runOnce();
  assert.equal(first5.shard, 5, "the shard without a mark goes first");
  assert.equal(takingOver.rebuildingShards(), 1, "and only it");
  await takingOver.runCycle();
  assert.equal(takingOver.rebuildingShards(), 0);

  await redis.del(`${prefix}{dt:meta}:generation`); // what a flush or an empty restart leaves
  const afterLoss = await restarted.runOnce();
  assert.equal(restarted.rebuildingShards(), afterLoss.shard === 5 ? 256 : 255, "a new generation: the marks of the old one do not count");
});

redisTest(
  "a pass where store and index agree reads nothing back and writes nothing; where they differ, only the differing ids are read again and repaired",
  async (t) => {
    const prefix = testPrefix("agree");
    const store = await openStore(`sqlite:${join(dir, "agree.db")}`);
    const keys = RedisDueKeys.connect({ url: REDIS_URL, prefix });
    t.after(async () => {
      await keys.close();
      await store.close();
      await deletePrefix(prefix);
    });
    const now = Date.now();
    // Shard 9 holds five entries: with pages of two, its pass takes three steps on each side.
    const jobs = recurringJobs(5, { createdAt: now, dueAt: now + 3_600_000, shard: 9 });
    await store.jobCreateMany({ nodeId: "n", jobs, now });
    const ids = jobs.map((j) => j.job.jobId);
    // What the reconciler asks again, and of which ids.
    const readBack: { scores: string[][]; dueRefs: string[][] } = { scores: [], dueRefs: [] };
    const scores = keys.scores.bind(keys);
    keys.scores = (shard, jobIds) => {
      readBack.scores.push([...jobIds]);
      return scores(shard, jobIds);
    };
    const dueRefs = store.dueRefs.bind(store);
    store.dueRefs = (p) => {
      readBack.dueRefs.push([...p.jobIds]);
      return dueRefs(p);
    };
    const reconciler = new DueIndexReconciler({ keys, store, clock: systemClock, events: new EngineEvents(), shards: () => [9], pageSize: 2 });
    assert.deepEqual(await reconciler.runCycle(), { added: 5, removed: 0 }, "a new index: the first pass adds every entry");

    readBack.scores = [];
    readBack.dueRefs = [];
    assert.deepEqual(await reconciler.runCycle(), { added: 0, removed: 0 });
    assert.deepEqual(readBack, { scores: [], dueRefs: [] }, "an index that agrees with the store costs one read of each side, nothing more");

    const dueAt = now + 3_600_000;
    await keys.remove([{ jobId: ids[1]!, shard: 9 }]); // a create's ZADD lost
    await keys.add([{ jobId: ids[3]!, shard: 9, dueAt: dueAt + 60_000 }]); // an update's ZADD lost: the index says later
    await keys.add([{ jobId: "job_notinthestore", shard: 9, dueAt }]); // a delete's ZREM lost
    assert.deepEqual(await reconciler.runCycle(), { added: 2, removed: 1 });
    assert.deepEqual(readBack.scores.flat().sort(), [ids[1]!, ids[3]!].sort(), "only the entries the index lacked or held later are read again");
    assert.deepEqual(readBack.dueRefs.flat(), ["job_notinthestore"], "only the member the store pass did not meet is read back");
    const after = await keys.scores(9, [...ids, "job_notinthestore"]);
    assert.deepEqual(after.scheduled, [dueAt, dueAt, dueAt, dueAt, dueAt, null], "the index holds what the store holds");
  },
);
