// The Redis due index alone (src/store/redis/due-keys.ts), without a store or
// a server: what a member costs in Redis memory, and how long the claim script
// takes with a large index. It loads --members due entries (job ids as duetime
// makes them, over the 256 shards) under a key prefix of its own on
// BENCH_REDIS_URL, then times --claims claims of --max due ids, one at a time,
// each followed by the advance that settles it (the ids go back due a year
// later, as a yearly recurring job's next occurrence), so the index keeps its
// size throughout. The prefix's keys are deleted at the end (never a FLUSHDB:
// the Redis may be shared).
//
//   npm run bench -- redis-claim [--members 1000000] [--claims 2000] [--max 100]
//
// Latency is measured in this process (ioredis, EVALSHA round trip on
// localhost); a TIME command's round trip is timed too, as the floor that
// any call pays.

import { parseArgs } from "node:util";
import { newId, SHARD_COUNT, shardOf } from "../src/core/ids.js";
import { RedisDueKeys } from "../src/store/redis/due-keys.js";
import type { DueRef } from "../src/store/store.js";
import { pct } from "./measure.js";
import { redisPrefix } from "./services.js";

const { values } = parseArgs({
  options: {
    members: { type: "string", default: "1000000" },
    claims: { type: "string", default: "2000" },
    max: { type: "string", default: "100" },
  },
});
const MEMBERS = Number(values.members);
const CLAIMS = Number(values.claims);
const MAX = Number(values.max);
/** Entries per add() call while loading: add() splits them per shard into ZADDs of at most 1,000. */
const LOAD_BATCH = 20_000;
const WARMUP = 20;
const YEAR_MS = 365 * 86_400_000;

const n = (x: number) => Math.round(x).toLocaleString("en-US");

/** Runs `call` `count` times in a row; sorted latencies in ms. */
async function timed(count: number, call: () => Promise<unknown>): Promise<Float64Array> {
  const ms = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await call();
    ms[i] = performance.now() - t;
  }
  return ms.sort();
}

const latency = (ms: Float64Array) => `p50 ${pct(ms, 0.5).toFixed(2)} ms, p99 ${pct(ms, 0.99).toFixed(2)} ms, max ${pct(ms, 1).toFixed(2)} ms`;

const space = await redisPrefix(`bench-claim-${process.pid}:`);
const keys = RedisDueKeys.connect({ url: space.url, prefix: space.prefix });
try {
  const memory0 = await space.usedMemory();
  // Every entry due within the last hour: each claim finds --max due ids in its shard.
  const now = Date.now();
  const t0 = performance.now();
  for (let i = 0; i < MEMBERS; i += LOAD_BATCH) {
    const batch: DueRef[] = [];
    for (let k = i; k < Math.min(MEMBERS, i + LOAD_BATCH); k++) {
      const jobId = newId(now - 3_600_000 + k);
      batch.push({ jobId, shard: shardOf(jobId), dueAt: now - 3_600_000 + ((k * 7919) % 3_600_000) });
    }
    await keys.add(batch);
  }
  const loadMs = performance.now() - t0;
  const usedDelta = (await space.usedMemory()) - memory0;
  const keyBytes = await space.bytes();
  console.log(`loaded ${n(MEMBERS)} members over ${SHARD_COUNT} shards in ${(loadMs / 1000).toFixed(1)} s (${n((MEMBERS / loadMs) * 1000)}/s)`);
  console.log(
    `memory: MEMORY USAGE over the prefix's keys ${n(keyBytes)} bytes (${(keyBytes / MEMBERS).toFixed(1)} bytes/member); ` +
      `INFO used_memory grew ${n(usedDelta)} bytes (${(usedDelta / MEMBERS).toFixed(1)} bytes/member; the whole server, shared)`,
  );

  // The first EVALSHA of each script loads it (NOSCRIPT, then EVAL): not timed.
  const settle = async (shard: number, ids: string[]) =>
    keys.advance(
      shard,
      ids.map((jobId) => ({ jobId, next: now + YEAR_MS })),
    );
  for (let i = 0; i < WARMUP; i++) await settle(i, (await keys.claim(i, MAX, 30_000)).ids);
  const floor = await timed(CLAIMS, () => keys.time());
  const claims = new Float64Array(CLAIMS);
  const advances = new Float64Array(CLAIMS);
  let short = 0;
  for (let i = 0; i < CLAIMS; i++) {
    const shard = (WARMUP + i) % SHARD_COUNT;
    const t = performance.now();
    const { ids } = await keys.claim(shard, MAX, 30_000);
    const claimed = performance.now();
    await settle(shard, ids);
    claims[i] = claimed - t;
    advances[i] = performance.now() - claimed;
    if (ids.length < MAX) short++;
  }
  claims.sort();
  advances.sort();
  const counts = await keys.counts(Array.from({ length: SHARD_COUNT }, (_, s) => s));
  console.log(`TIME round trip (the floor), ${n(CLAIMS)} calls: ${latency(floor)}`);
  console.log(
    `claim of ${MAX} due ids (claim.lua), ${n(CLAIMS)} calls: ${latency(claims)}${short ? `; ${short} claims found fewer than ${MAX}` : ""}`,
  );
  console.log(`advance of ${MAX} claimed ids, next due a year later (advance.lua), ${n(CLAIMS)} calls: ${latency(advances)}`);
  console.log(`afterwards: ${n(counts.scheduled)} scheduled, ${n(counts.leased)} leased`);
} finally {
  await keys.close();
  await space.drop();
}
