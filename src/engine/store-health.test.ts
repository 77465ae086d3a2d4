// Store health and the background loops under a failing store, on a real
// SQLite file whose write lock another connection holds (past a short busy
// timeout), with a fake clock.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { FakeClock } from "../core/clock.js";
import { SHARD_COUNT } from "../core/ids.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import { recurringJobs } from "../store/test-support.js";
import { EngineEvents, type EngineEventMap } from "./events.js";
import { createMetrics } from "./metrics.js";
import { Scheduler } from "./scheduler.js";
import { StoreHealth } from "./store-health.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-health-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

async function setup() {
  const path = join(dir, `h${n++}.db`);
  const clock = new FakeClock("2026-03-01T00:00:00Z");
  const events = new EngineEvents();
  const health = new StoreHealth(await openSqliteStore({ path, busyTimeoutMs: 20 }), clock, events);
  const faults: EngineEventMap["store:fault"][] = [];
  events.on("store:fault", (e) => faults.push(e));
  const lock = new Database(path);
  return { clock, events, health, faults, lock, store: health.store };
}

const next = <K extends keyof EngineEventMap>(events: EngineEvents, name: K) =>
  new Promise<EngineEventMap[K]>((resolve) => {
    const off = events.on(name, (e) => {
      off();
      resolve(e);
    });
  });

test("a store fault turns readiness off and the gauge to 0; the background probe turns them back once writes work", async () => {
  const { clock, events, health, faults, lock, store } = await setup();
  const metrics = createMetrics(events, () => 0);
  const gauge = async () => (await metrics.getSingleMetric("duetime_store_writable")!.get()).values[0]!.value;
  assert.equal(await health.ready(), true);

  lock.exec("BEGIN EXCLUSIVE");
  await assert.rejects(store.shardAcquire({ owner: "n", shards: [0], leaseMs: 1000, now: clock.now() }), { code: "STORE_UNAVAILABLE" });
  assert.deepEqual(faults, [{ op: "shardAcquire", kind: "busy" }]);
  assert.equal(health.writable, false);
  assert.equal(await gauge(), 0);
  assert.equal(await health.ready(), false, "the readiness probe fails while the lock is held");
  assert.equal(health.writable, false);

  lock.exec("COMMIT");
  const back = next(events, "store:writable");
  clock.advance(2_000); // the background probe, without any readiness check or traffic
  assert.deepEqual(await back, { writable: true });
  assert.equal(health.writable, true);
  assert.equal(await gauge(), 1);
  assert.equal(await health.ready(), true);
  const text = await metrics.metrics();
  assert.match(text, /^duetime_store_failures_total\{op="shardAcquire",kind="busy"\} 1$/m);
  health.stop();
  lock.close();
  await store.close();
});

test("the scheduler's shard keeper retries a failing store with backoff, not at once, and takes its shards once it works", async () => {
  const { clock, events, health, faults, lock, store } = await setup();
  const scheduler = new Scheduler({ store, clock, nodeId: "n", events, onDispatched: () => {} });
  const errors: EngineEventMap["error"][] = [];
  events.on("error", (e) => errors.push(e));
  lock.exec("BEGIN EXCLUSIVE");
  await scheduler.start();
  for (let t = 0; t < 6_000; t += 100) {
    clock.advance(100);
    await new Promise((resolve) => setImmediate(resolve));
  }
  const tries = faults.filter((f) => f.op === "nodeHeartbeat").length;
  assert.ok(tries >= 2 && tries <= 4, `retried ${tries} times in 6 s: at 0, 1, 3 s (backing off), not every tick`);
  assert.equal(scheduler.ownedShards.length, 0);
  assert.equal(errors.length, tries, "each failed pass is reported (counted in duetime_internal_errors_total)");

  lock.exec("COMMIT");
  clock.advance(5_000);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(scheduler.ownedShards.length, SHARD_COUNT, "the next retry takes the shards");
  await scheduler.stop();
  health.stop();
  lock.close();
  await store.close();
});

test("a scheduler whose passes failed dispatches at the keeper's first good round once the store works, not at the end of its backoff", async () => {
  const { clock, events, health, lock, store } = await setup();
  const scheduler = new Scheduler({ store, clock, nodeId: "n", events, onDispatched: () => {} });
  const dispatched: number[] = [];
  events.on("execution:dispatched", () => dispatched.push(clock.now()));
  events.on("error", () => {}); // the failed passes, reported
  await scheduler.start();
  await store.jobCreateMany({ jobs: recurringJobs(1, { createdAt: clock.now(), dueAt: clock.now() + 2_000 }), nodeId: "n", now: clock.now() });
  scheduler.reloadNow();
  const step = async (ms: number) => {
    for (let t = 0; t < ms; t += 100) {
      clock.advance(100);
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  // Locked past the shard lease: every dispatch pass fails, each retry backs off further (1, 2, 4, 8 s, up to the reload interval).
  lock.exec("BEGIN EXCLUSIVE");
  await step(18_000);
  assert.deepEqual(dispatched, []);
  lock.exec("COMMIT");
  const backAt = clock.now();
  await step(4_000); // the keeper's next round comes within a third of a lease (3.3 s); it takes back the same shards, same epochs
  assert.equal(dispatched.length, 1, "the due occurrence is dispatched once the keeper's round finds the store working");
  assert.ok(dispatched[0]! - backAt <= 3_400, `dispatched ${dispatched[0]! - backAt} ms after the store came back`);
  await scheduler.stop();
  health.stop();
  lock.close();
  await store.close();
});
