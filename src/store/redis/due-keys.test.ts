// RedisDueKeys against a real Redis (test-support.ts): the shared
// server under a prefix per test, and private redis-servers for what must not
// touch it (SCRIPT FLUSH, cluster mode, a server going away).

import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { RedisDueKeys } from "./due-keys.js";
import { admin, deletePrefix, keysUnder, privateRedis, privateTest, freePort, REDIS_URL, redisTest, testPrefix } from "./test-support.js";

/** A client under a prefix of this test's own, its keys deleted after. */
function fixture(t: TestContext): { keys: RedisDueKeys; prefix: string } {
  const prefix = testPrefix("keys");
  const keys = RedisDueKeys.connect({ url: REDIS_URL, prefix });
  t.after(async () => {
    await keys.close();
    await deletePrefix(prefix);
  });
  return { keys, prefix };
}

const scheduledKey = (prefix: string, shard: number) => `${prefix}{dt:${shard}}:scheduled`;
const leasedKey = (prefix: string, shard: number) => `${prefix}{dt:${shard}}:leased`;

/** A sorted set as id -> score. */
async function zset(key: string): Promise<Map<string, number>> {
  const flat = await admin().zrange(key, 0, -1, "WITHSCORES");
  const out = new Map<string, number>();
  for (let i = 0; i < flat.length; i += 2) out.set(flat[i]!, Number(flat[i + 1]));
  return out;
}

/** Polls Redis's clock (the scripts' clock) until it is past `ms`. */
async function untilRedisTimePast(keys: RedisDueKeys, ms: number): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if ((await keys.time()) > ms) return;
    await sleep(2);
  }
  throw new Error(`Redis TIME never passed ${ms}`);
}

// ------------------------------------------------------------ shared Redis

redisTest("claim takes only due ids, lowest first, at most max, leases them until now+claimMs, and answers the next head", async (t) => {
  const { keys, prefix } = fixture(t);
  const now = await keys.time();
  await keys.add([
    { jobId: "c", shard: 3, dueAt: now - 1000 },
    { jobId: "a", shard: 3, dueAt: now - 3000 },
    { jobId: "b", shard: 3, dueAt: now - 2000 },
    { jobId: "later", shard: 3, dueAt: now + 60_000 },
    { jobId: "elsewhere", shard: 4, dueAt: now - 5000 },
  ]);

  assert.deepEqual(await keys.claim(3, 0, 30_000), { ids: [], next: now - 3000 }, "max 0 claims nothing");
  const before = await keys.time();
  assert.deepEqual(await keys.claim(3, 2, 30_000), { ids: ["a", "b"], next: now - 1000 });
  const afterClaim = await keys.time();
  const leased = await zset(leasedKey(prefix, 3));
  assert.deepEqual([...leased.keys()].sort(), ["a", "b"]);
  for (const deadline of leased.values()) {
    assert.ok(deadline >= before + 30_000 && deadline <= afterClaim + 30_000, `deadline ${deadline} is Redis now + claimMs`);
  }

  // "later" is not due: only c goes, and the head is now later's due time.
  assert.deepEqual(await keys.claim(3, 10, 30_000), { ids: ["c"], next: now + 60_000 });
  assert.deepEqual(await keys.claim(3, 10, 30_000), { ids: [], next: now + 60_000 });
  assert.deepEqual([...(await zset(scheduledKey(prefix, 3))).keys()], ["later"]);
  assert.deepEqual([...(await zset(leasedKey(prefix, 3))).keys()].sort(), ["a", "b", "c"]);

  await keys.remove([{ jobId: "later", shard: 3 }]);
  assert.deepEqual(await keys.claim(3, 10, 30_000), { ids: [], next: null }, "an empty shard has no head");
  assert.deepEqual([...(await zset(scheduledKey(prefix, 4))).keys()], ["elsewhere"], "another shard is untouched");
});

redisTest("4 clients claiming one shard of 5,000 due ids concurrently take disjoint sets whose union is all 5,000", async (t) => {
  const { keys, prefix } = fixture(t);
  const now = await keys.time();
  const all = Array.from({ length: 5000 }, (_, i) => `job-${String(i).padStart(5, "0")}`);
  await keys.add(all.map((jobId, i) => ({ jobId, shard: 7, dueAt: now - 10_000 + (i % 97) })));
  assert.equal((await keys.counts([7])).scheduled, 5000);

  const claimers = Array.from({ length: 4 }, () => RedisDueKeys.connect({ url: REDIS_URL, prefix }));
  t.after(() => Promise.all(claimers.map((c) => c.close())));
  const claimed = await Promise.all(
    claimers.map(async (c) => {
      const mine: string[] = [];
      for (;;) {
        const { ids } = await c.claim(7, 100, 60_000);
        if (ids.length === 0) return mine;
        assert.ok(ids.length <= 100);
        mine.push(...ids);
      }
    }),
  );

  for (const mine of claimed) assert.ok(mine.length > 0, "every claimer took a share");
  const union = new Set(claimed.flat());
  assert.equal(union.size, claimed.flat().length, "no id was claimed twice");
  assert.deepEqual([...union].sort(), all);
  assert.deepEqual(await keys.counts([7]), { scheduled: 0, leased: 5000 });
});

redisTest("advance ends claims: the next occurrence is added with NX (a re-index since the claim wins), a null next only removes", async (t) => {
  const { keys, prefix } = fixture(t);
  const now = await keys.time();
  await keys.add(["a", "b", "c"].map((jobId, i) => ({ jobId, shard: 9, dueAt: now - 3000 + i })));
  assert.deepEqual((await keys.claim(9, 10, 60_000)).ids, ["a", "b", "c"]);
  await keys.add([{ jobId: "b", shard: 9, dueAt: now + 5000 }]); // b was updated meanwhile

  const added = await keys.advance(9, [
    { jobId: "a", next: now + 1000 },
    { jobId: "b", next: now + 2000 },
    { jobId: "c", next: null },
  ]);
  assert.equal(added, 1);
  assert.deepEqual(
    await zset(scheduledKey(prefix, 9)),
    new Map([
      ["a", now + 1000],
      ["b", now + 5000],
    ]),
  );
  assert.equal((await zset(leasedKey(prefix, 9))).size, 0, "every claim ended");
  assert.equal(await keys.advance(9, []), 0);
});

redisTest("reap returns expired claims due now (up to max), keeps unexpired ones, and keeps a scheduled entry (NX)", async (t) => {
  const { keys, prefix } = fixture(t);
  const now = await keys.time();
  await keys.add([
    { jobId: "a", shard: 11, dueAt: now - 3000 },
    { jobId: "d", shard: 11, dueAt: now - 2000 },
    { jobId: "b", shard: 11, dueAt: now - 1000 },
  ]);
  assert.deepEqual((await keys.claim(11, 2, 1)).ids, ["a", "d"]); // a crashed claimer's
  assert.deepEqual((await keys.claim(11, 1, 600_000)).ids, ["b"]); // a live claimer's
  await keys.add([{ jobId: "d", shard: 11, dueAt: now + 7777 }]); // d re-indexed since
  const { leased } = await keys.scores(11, ["a", "d"]);
  await untilRedisTimePast(keys, Math.max(...leased.map((s) => s!)));

  const before = await keys.time();
  assert.equal(await keys.reap(11, 1), 1, "at most max per call");
  assert.equal(await keys.reap(11, 10), 1);
  const afterReap = await keys.time();
  assert.equal(await keys.reap(11, 10), 0, "b's claim has not expired");

  const scheduled = await zset(scheduledKey(prefix, 11));
  assert.ok(scheduled.get("a")! >= before && scheduled.get("a")! <= afterReap, "a is due at Redis now");
  assert.equal(scheduled.get("d"), now + 7777, "NX kept d's entry");
  assert.equal(scheduled.has("b"), false);
  assert.deepEqual([...(await zset(leasedKey(prefix, 11))).keys()], ["b"]);
});

redisTest("removeIf removes an id only while its score is the one given", async (t) => {
  const { keys, prefix } = fixture(t);
  await keys.add([
    { jobId: "a", shard: 12, dueAt: 1000 },
    { jobId: "b", shard: 12, dueAt: 2000 },
    { jobId: "c", shard: 12, dueAt: 3000 },
  ]);
  await keys.add([{ jobId: "c", shard: 12, dueAt: 3500 }]); // re-added after the caller read 3000
  const removed = await keys.removeIf(12, [
    { jobId: "a", score: 1000 },
    { jobId: "b", score: 2001 },
    { jobId: "c", score: 3000 },
    { jobId: "missing", score: 5 },
  ]);
  assert.equal(removed, 1);
  assert.deepEqual(
    await zset(scheduledKey(prefix, 12)),
    new Map([
      ["b", 2000],
      ["c", 3500],
    ]),
  );
  assert.equal(await keys.removeIf(12, []), 0);
});

redisTest("repair adds missing ids and lowers a higher score, never raises one, and leaves a claimed id alone", async (t) => {
  const { keys, prefix } = fixture(t);
  const now = await keys.time();
  await keys.add([
    { jobId: "a", shard: 13, dueAt: now + 5_000 },
    { jobId: "claimed", shard: 13, dueAt: now - 1000 },
  ]);
  assert.deepEqual((await keys.claim(13, 1, 60_000)).ids, ["claimed"]);
  const first = await keys.repair([
    { jobId: "a", shard: 13, dueAt: now + 3_000 },
    { jobId: "b", shard: 13, dueAt: now + 7_000 },
    { jobId: "claimed", shard: 13, dueAt: now - 1000 },
  ]);
  assert.equal(first, 2, "a lowered, b added; the claimed id is its claimer's");
  const second = await keys.repair([
    { jobId: "a", shard: 13, dueAt: now + 4_000 },
    { jobId: "b", shard: 13, dueAt: now + 9_000 },
  ]);
  assert.equal(second, 0, "never raised");
  assert.deepEqual(
    await zset(scheduledKey(prefix, 13)),
    new Map([
      ["a", now + 3_000],
      ["b", now + 7_000],
    ]),
  );
});

redisTest("add overwrites a score either way, addIfAbsent keeps one, remove clears both sets", async (t) => {
  const { keys, prefix } = fixture(t);
  await keys.add([{ jobId: "a", shard: 14, dueAt: 100 }]);
  await keys.add([{ jobId: "a", shard: 14, dueAt: 50 }]);
  await keys.add([{ jobId: "a", shard: 14, dueAt: 900 }]);
  await keys.addIfAbsent([
    { jobId: "a", shard: 14, dueAt: 1 },
    { jobId: "c", shard: 14, dueAt: 3 },
  ]);
  assert.deepEqual(
    await zset(scheduledKey(prefix, 14)),
    new Map([
      ["c", 3],
      ["a", 900],
    ]),
  );

  assert.deepEqual((await keys.claim(14, 1, 60_000)).ids, ["c"]);
  await keys.remove([
    { jobId: "a", shard: 14 },
    { jobId: "c", shard: 14 },
  ]);
  assert.deepEqual(await keys.counts([14]), { scheduled: 0, leased: 0 });
});

redisTest("head, scan, scores, counts and time read the sets", async (t) => {
  const { keys } = fixture(t);
  const ids = Array.from({ length: 250 }, (_, i) => `j${i}`);
  await keys.add(ids.map((jobId, i) => ({ jobId, shard: 1, dueAt: 10_000 + i })));
  await keys.add([{ jobId: "x", shard: 3, dueAt: 42 }]);
  assert.deepEqual(
    await keys.head([0, 1, 2, 3]),
    new Map([
      [1, 10_000],
      [3, 42],
    ]),
  );

  const seen = new Map<string, number>();
  let cursor = "0";
  do {
    const page = await keys.scan(1, cursor, 50);
    for (const m of page.members) seen.set(m.jobId, m.score);
    cursor = page.cursor;
  } while (cursor !== "0");
  assert.equal(seen.size, 250);
  assert.equal(seen.get("j249"), 10_249);

  assert.deepEqual((await keys.claim(3, 1, 0)).ids, ["x"]);
  const s = await keys.scores(3, ["x", "nope"]);
  assert.equal(s.scheduled[0], null);
  assert.equal(s.scheduled[1], null);
  assert.equal(typeof s.leased[0], "number");
  assert.equal(s.leased[1], null);
  assert.deepEqual(await keys.scores(3, []), { scheduled: [], leased: [] });
  assert.deepEqual(await keys.counts([1, 2, 3]), { scheduled: 250, leased: 1 });

  const [sec, usec] = await admin().time();
  const theirs = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  assert.ok(Math.abs((await keys.time()) - theirs) < 1000);
});

redisTest(
  "every key the client writes is <prefix>{dt:N}:scheduled or :leased, and shards or prefixes that would break that are refused",
  async (t) => {
    const { keys, prefix } = fixture(t);
    const now = await keys.time();
    const shards = [0, 1, 200, 255];
    const entries = shards.flatMap((shard) => ["p", "q", "r"].map((jobId) => ({ jobId: `${jobId}${shard}`, shard, dueAt: now - 1000 })));
    await keys.add(entries);
    await keys.repair(entries);
    await keys.addIfAbsent(entries);
    for (const shard of shards) {
      await keys.claim(shard, 2, 1);
      await keys.advance(shard, [{ jobId: `p${shard}`, next: now + 1000 }]);
    }
    await untilRedisTimePast(keys, (await keys.time()) + 1); // past every 1 ms claim deadline, however slow the claims were
    for (const shard of shards) await keys.reap(shard, 10);
    await keys.remove([{ jobId: "p0", shard: 0 }]);
    await keys.removeIf(1, [{ jobId: "p1", score: now + 1000 }]);
    await keys.claim(200, 1, 600_000); // leaves a leased key

    const written = await keysUnder(prefix);
    const escaped = prefix.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&");
    const layout = new RegExp(`^${escaped}\\{dt:\\d+\\}:(scheduled|leased)$`);
    for (const key of written) assert.match(key, layout);
    assert.deepEqual(written.sort(), [...shards.map((s) => scheduledKey(prefix, s)), leasedKey(prefix, 200)].sort());

    for (const bad of [-1, 256, 1.5, Number.NaN]) await assert.rejects(keys.claim(bad, 1, 1), RangeError);
    assert.throws(() => RedisDueKeys.connect({ url: REDIS_URL, prefix: "a{b}:" }), /braces/);
  },
);

// ------------------------------------------------------- private redis-server

/** A connection of the test's own to a private server, closed after. */
function direct(t: TestContext, url: string): Redis {
  const r = new Redis(url, { maxRetriesPerRequest: 2 });
  t.after(() => r.disconnect());
  return r;
}

privateTest("after SCRIPT FLUSH, claim still works: EVALSHA meets NOSCRIPT and ioredis resends the script with EVAL", async (t) => {
  const { url } = await privateRedis(t, await freePort());
  const keys = RedisDueKeys.connect({ url, prefix: "p:" });
  t.after(() => keys.close());
  const server = direct(t, url);
  const now = await keys.time();
  await keys.add([
    { jobId: "a", shard: 0, dueAt: now - 2 },
    { jobId: "b", shard: 0, dueAt: now - 1 },
  ]);
  assert.deepEqual((await keys.claim(0, 1, 60_000)).ids, ["a"]);

  await server.script("FLUSH");
  assert.equal(await server.info("errorstats").then((s) => s.includes("NOSCRIPT")), false);
  assert.deepEqual((await keys.claim(0, 1, 60_000)).ids, ["b"]);
  assert.match(await server.info("errorstats"), /errorstat_NOSCRIPT:count=1/, "the EVALSHA was refused once");
});

/** A one-node Redis Cluster holding every slot: cross-slot commands fail there as on a real one. */
async function privateCluster(t: TestContext): Promise<{ url: string; stop: () => Promise<void> }> {
  const server = await privateRedis(t, await freePort(), ["--cluster-enabled", "yes", "--cluster-announce-ip", "127.0.0.1"]);
  const admin = direct(t, server.url);
  await admin.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383");
  for (let i = 0; !((await admin.call("CLUSTER", "INFO")) as string).includes("cluster_state:ok"); i++) {
    assert.ok(i < 500, "the private cluster never became ok");
    await sleep(20);
  }
  admin.disconnect();
  return server;
}

privateTest("in Redis Cluster mode every command and script runs on one slot per shard (no CROSSSLOT)", async (t) => {
  const { url } = await privateCluster(t);
  const keys = RedisDueKeys.connect({ url, prefix: "c:", cluster: true });
  t.after(() => keys.close());
  const now = await keys.time();
  const entries = [0, 1, 2, 255].flatMap((shard) => ["a", "b"].map((id) => ({ jobId: `${id}${shard}`, shard, dueAt: now - 10 })));
  await keys.add(entries);
  await keys.repair(entries);
  await keys.addIfAbsent(entries);
  assert.deepEqual((await keys.claim(2, 10, 1)).ids, ["a2", "b2"]);
  assert.equal(await keys.advance(2, [{ jobId: "a2", next: now + 1000 }]), 1);
  await untilRedisTimePast(keys, (await keys.time()) + 1); // past the 1 ms claim deadline, however slow the calls were
  assert.equal(await keys.reap(2, 10), 1);
  assert.equal(await keys.removeIf(2, [{ jobId: "a2", score: now + 1000 }]), 1);
  await keys.remove([{ jobId: "a0", shard: 0 }]);
  assert.deepEqual([...(await keys.head([0, 1, 2, 255])).keys()], [0, 1, 2, 255]);
  assert.equal((await keys.scan(1, "0", 10)).members.length, 2);
  assert.deepEqual(await keys.counts([0, 1, 2, 255]), { scheduled: 6, leased: 0 });
});

privateTest("a Cluster client whose nodes all went away fails calls after timeoutMs instead of queueing them forever", async (t) => {
  const cluster = await privateCluster(t);
  const keys = RedisDueKeys.connect({ url: cluster.url, prefix: "c:", cluster: true, timeoutMs: 500 });
  t.after(() => keys.close());
  assert.deepEqual(await keys.head([0]), new Map());
  await cluster.stop();
  const started = Date.now();
  await assert.rejects(keys.head([0]), /did not answer within 500 ms/);
  assert.ok(Date.now() - started < 2000);
});

privateTest("while Redis is down a call fails instead of hanging, and the client reconnects once it is back", async (t) => {
  const port = await freePort();
  const keys = RedisDueKeys.connect({ url: `redis://127.0.0.1:${port}`, prefix: "d:" });
  t.after(() => keys.close());
  const started = Date.now();
  await assert.rejects(keys.claim(0, 1, 1000));
  assert.ok(Date.now() - started < 5000, "rejected within a few reconnect attempts");

  await privateRedis(t, port);
  for (let i = 0; ; i++) {
    const ok = await keys.head([0]).then(
      () => true,
      () => false,
    );
    if (ok) break;
    assert.ok(i < 100, "the client never reconnected");
    await sleep(50);
  }
});
