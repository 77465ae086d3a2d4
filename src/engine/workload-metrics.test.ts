// The /metrics store reads' cache (workload-metrics.ts Cached): shared within
// its period, stretched by a slow read, and a failed read not kept.

import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Cached, STORE_GAUGE_COST_FACTOR } from "./workload-metrics.js";

test("store-gauge cache: reads once per period; two slow reads in a row stretch the period to STORE_GAUGE_COST_FACTOR times their duration, one does not", async () => {
  let reads = 0;
  let delayMs = 0;
  const cached = new Cached(20, async () => {
    reads++;
    if (delayMs > 0) await sleep(delayMs);
    return reads;
  });
  assert.deepEqual(await Promise.all([cached.get(), cached.get()]), [1, 1], "concurrent callers share one read");
  await sleep(60);
  delayMs = 40; // slow reads from here: 40 ms × 50 = 2 s
  assert.equal(await cached.get(), 2);
  await sleep(60); // one slow read did not stretch the 20 ms period
  assert.equal(await cached.get(), 3);
  await sleep(100); // the second slow read did
  assert.equal(await cached.get(), 3, `stretched to ${40 * STORE_GAUGE_COST_FACTOR} ms`);
  assert.equal(reads, 3);
});

test("store-gauge cache: a failed read is not kept, the next call reads again", async () => {
  let fail = true;
  const cached = new Cached(60_000, async () => {
    if (fail) throw new Error("store down");
    return "ok";
  });
  await assert.rejects(cached.get(), /store down/);
  fail = false;
  await sleep(1); // the rejection's bookkeeping runs first
  assert.equal(await cached.get(), "ok");
});
