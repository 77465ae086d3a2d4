// The scheduler with a fake clock and a real SQLite store.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { SHARD_COUNT } from "../core/ids.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import { openEngine, type Engine } from "./engine.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-sched-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

async function engineAt(clock: FakeClock, nodeId = "node-a", file = `db${n++}.sqlite`): Promise<Engine> {
  const engine = await openEngine({ store: `sqlite:${join(dir, file)}`, clock, nodeId, httpTargets: false });
  await engine.start();
  return engine;
}

async function tick(engine: Engine, clock: FakeClock, ms: number): Promise<void> {
  clock.advance(ms);
  await engine.scheduler.runOnce();
}

const queue = { type: "queue" as const, pool: "p" };

test("a delayed job becomes leasable at its due time, never before, without passing through the scheduler", async () => {
  const clock = new FakeClock("2026-03-01T00:00:00Z");
  const engine = await engineAt(clock);
  await engine.service.createJob(ctx, { name: "a", target: queue, schedule: { delaySeconds: 10 } });
  assert.equal(engine.scheduler.loaded, 0, "a one-off is not in the scheduler's window");
  await tick(engine, clock, 9_999);
  assert.equal((await engine.service.lease(ctx, "p", { workerId: "w", max: 10 })).items.length, 0);
  await tick(engine, clock, 1);
  const leased = await engine.service.lease(ctx, "p", { workerId: "w", max: 10 });
  assert.equal(leased.items.length, 1);
  assert.equal(leased.items[0]!.scheduledFor, "2026-03-01T00:00:10.000Z");
  await engine.stop();
});

test("a recurring occurrence due beyond the window is loaded by a later reload, not held in memory now", async () => {
  const clock = new FakeClock("2026-03-01T00:00:00Z");
  const engine = await engineAt(clock);
  await engine.service.createJob(ctx, { name: "far", target: queue, schedule: { cron: "0 * * * *" } });
  assert.equal(engine.scheduler.loaded, 0);
  for (let t = 0; t < 3600 - 60; t += 15) await tick(engine, clock, 15_000);
  assert.equal(engine.scheduler.loaded, 1, "loaded once inside the window");
  for (let t = 3600 - 60; t < 3600; t += 15) await tick(engine, clock, 15_000);
  await tick(engine, clock, 1_000);
  assert.equal((await engine.service.lease(ctx, "p", { workerId: "w", max: 10 })).items.length, 1);
  await engine.stop();
});

test("a recurring job dispatches each occurrence once and advances nextRunAt", async () => {
  const clock = new FakeClock("2026-03-01T00:00:00Z");
  const engine = await engineAt(clock);
  const job = await engine.service.createJob(ctx, { name: "c", target: queue, schedule: { cron: "* * * * *" } });
  assert.equal(job.nextRunAt, "2026-03-01T00:01:00.000Z");
  for (let i = 0; i < 3; i++) await tick(engine, clock, 60_000);
  const leased = await engine.service.lease(ctx, "p", { workerId: "w", max: 10 });
  assert.deepEqual(leased.items.map((i) => i.scheduledFor).sort(), [
    "2026-03-01T00:01:00.000Z",
    "2026-03-01T00:02:00.000Z",
    "2026-03-01T00:03:00.000Z",
  ]);
  assert.equal((await engine.service.getJob(ctx, job.jobId)).nextRunAt, "2026-03-01T00:04:00.000Z");
  await engine.stop();
});

test("a cancelled job inside the window never dispatches", async () => {
  const clock = new FakeClock("2026-03-01T00:00:00Z");
  const engine = await engineAt(clock);
  const job = await engine.service.createJob(ctx, { name: "x", target: queue, schedule: { cron: "* * * * *" } });
  assert.equal(engine.scheduler.loaded, 1);
  await engine.service.cancelJob(ctx, job.jobId);
  await tick(engine, clock, 120_000);
  assert.equal((await engine.service.lease(ctx, "p", { workerId: "w", max: 10 })).items.length, 0);
  assert.equal((await engine.service.listExecutions(ctx, job.jobId, {})).items.length, 0);
  await engine.stop();
});

test("a cancelled one-off never runs: its execution, created at submit, ends CANCELLED", async () => {
  const clock = new FakeClock("2026-03-01T00:00:00Z");
  const engine = await engineAt(clock);
  const job = await engine.service.createJob(ctx, { name: "x", target: queue, schedule: { delaySeconds: 5 } });
  assert.deepEqual(
    (await engine.service.listExecutions(ctx, job.jobId, {})).items.map((e) => e.state),
    ["PENDING"],
  );
  await engine.service.cancelJob(ctx, job.jobId);
  await tick(engine, clock, 10_000);
  assert.equal((await engine.service.lease(ctx, "p", { workerId: "w", max: 10 })).items.length, 0);
  assert.deepEqual(
    (await engine.service.listExecutions(ctx, job.jobId, {})).items.map((e) => e.state),
    ["CANCELLED"],
  );
  await engine.stop();
});

test("a scheduler that lost its shards cannot dispatch (fenced by epoch)", async () => {
  const clock = new FakeClock("2026-03-01T00:00:00Z");
  const a = await engineAt(clock, "node-a", "shared.sqlite");
  const job = await a.service.createJob(ctx, { name: "x", target: queue, schedule: { cron: "*/2 * * * * *" } });
  assert.equal(a.scheduler.loaded, 1);
  // node-a stalls after its last reload; to node-b, whose clock reads 40 s
  // later, node-a's 15 s shard lease has expired, so node-b takes every shard.
  const raw = await openSqliteStore({ path: join(dir, "shared.sqlite") });
  const all = Array.from({ length: SHARD_COUNT }, (_, i) => i);
  const taken = await raw.shardAcquire({ owner: "node-b", shards: all, leaseMs: 600_000, now: clock.now() + 40_000 });
  assert.equal(taken.length, SHARD_COUNT);
  const dispatched: string[] = [];
  a.events.on("execution:dispatched", (e) => dispatched.push(e.jobId));
  // node-a wakes before its next reload and dispatches the entry it holds, with its old epochs
  await tick(a, clock, 2_000);
  assert.equal(a.scheduler.loaded, 0, "node-a did not try to dispatch");
  assert.deepEqual(dispatched, [], "stale owner dispatched");
  assert.equal((await a.service.listExecutions(ctx, job.jobId, {})).items.length, 0, "stale owner dispatched");
  // the occurrence is left, unconsumed, for its new owner
  const due = await raw.dueLoad({ shards: all, before: clock.now() + 60_000, limit: 10 });
  assert.deepEqual(
    due.map((d) => d.jobId),
    [job.jobId],
  );
  await raw.close();
  await a.stop();
});
