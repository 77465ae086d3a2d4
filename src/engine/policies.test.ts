// Misfire, overlap, jitter and start/end rules of recurring jobs, with a fake
// clock and a real SQLite store. "The scheduler was down" is the clock
// jumping forward without firing any timer.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { CronSchedule, ExecutionItem } from "@duetime/sdk/contract";
import { FakeClock } from "../core/clock.js";
import { openEngine, type Engine } from "./engine.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-policy-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const T0 = "2026-03-02T10:00:00Z";
const MIN = 60_000;

async function setup(schedule: CronSchedule) {
  const clock = new FakeClock(T0);
  const engine = await openEngine({ store: `sqlite:${join(dir, `p${n++}.db`)}`, clock, nodeId: "n", httpTargets: false });
  await engine.start();
  const job = await engine.service.createJob(ctx, { name: "cron", target: { type: "queue", pool: "p" }, schedule });
  return { clock, engine, job };
}

async function tick(engine: Engine, clock: FakeClock, ms: number) {
  clock.advance(ms);
  await engine.scheduler.runOnce();
}

/** The scheduler process was down: time passes, no timer fires. */
async function downFor(engine: Engine, clock: FakeClock, ms: number) {
  clock.jump(ms);
  await engine.scheduler.runOnce();
}

async function history(engine: Engine, jobId: string): Promise<ExecutionItem[]> {
  return (await engine.service.listExecutions(ctx, jobId, { limit: 500 })).items.sort((a, b) => a.scheduledFor.localeCompare(b.scheduledFor));
}

const at = (minutes: number) => new Date(Date.parse(T0) + minutes * MIN).toISOString();

test("misfire run_once: the most recent missed occurrence runs once, the others are SKIPPED", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *", misfire: "run_once" });
  await downFor(engine, clock, 10 * MIN + 5_000);
  const h = await history(engine, job.jobId);
  assert.deepEqual(
    h.filter((e) => e.state === "QUEUED").map((e) => e.scheduledFor),
    [at(10)],
  );
  assert.deepEqual(
    h.filter((e) => e.state === "SKIPPED").map((e) => e.scheduledFor),
    [1, 2, 3, 4, 5, 6, 7, 8, 9].map(at),
  );
  assert.equal(h.find((e) => e.state === "SKIPPED")!.error?.reason, "misfire");
  assert.equal((await engine.service.getJob(ctx, job.jobId)).nextRunAt, at(11));
  await engine.stop();
});

test("misfire skip: nothing missed runs; the schedule resumes at the next future time", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *", misfire: "skip" });
  await downFor(engine, clock, 10 * MIN + 5_000);
  const h = await history(engine, job.jobId);
  assert.equal(h.filter((e) => e.state !== "SKIPPED").length, 0);
  assert.equal(h.length, 10);
  assert.equal((await engine.service.getJob(ctx, job.jobId)).nextRunAt, at(11));
  await engine.stop();
});

test("misfire catch_up: every missed occurrence runs, one per second, then the schedule resumes", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *", misfire: "catch_up" });
  await downFor(engine, clock, 10 * MIN + 5_000);
  let h = await history(engine, job.jobId);
  assert.deepEqual(
    h.map((e) => e.scheduledFor),
    [at(1)],
    "a burst instead of a bounded rate",
  );
  for (let i = 0; i < 12; i++) await tick(engine, clock, 1_000);
  h = await history(engine, job.jobId);
  assert.deepEqual(
    h.map((e) => e.scheduledFor),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(at),
  );
  assert.ok(h.every((e) => e.state === "QUEUED"));
  assert.equal((await engine.service.getJob(ctx, job.jobId)).nextRunAt, at(11));
  await engine.stop();
});

test("misfire catch_up runs at most 100 missed occurrences; older ones are SKIPPED", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *", misfire: "catch_up" });
  await downFor(engine, clock, 150 * MIN + 5_000);
  const h = await history(engine, job.jobId);
  assert.equal(h.filter((e) => e.state === "QUEUED").length, 1);
  assert.equal(h.find((e) => e.state === "QUEUED")!.scheduledFor, at(51));
  assert.equal(h.filter((e) => e.state === "SKIPPED").length, 50);
  await engine.stop();
});

test("a late occurrence within the misfire threshold simply runs", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *", misfire: "skip" });
  await downFor(engine, clock, MIN + 30_000);
  const h = await history(engine, job.jobId);
  assert.deepEqual(
    h.map((e) => [e.scheduledFor, e.state]),
    [[at(1), "QUEUED"]],
  );
  await engine.stop();
});

test("resuming a paused recurring job applies its misfire policy to what was missed", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *", misfire: "run_once" });
  await engine.service.pauseJob(ctx, job.jobId);
  for (let i = 0; i < 10; i++) await tick(engine, clock, MIN);
  assert.equal((await history(engine, job.jobId)).length, 0, "a paused job dispatched");
  await engine.service.resumeJob(ctx, job.jobId);
  await engine.scheduler.runOnce();
  const h = await history(engine, job.jobId);
  assert.deepEqual(
    h.filter((e) => e.state === "QUEUED").map((e) => e.scheduledFor),
    [at(10)],
  );
  assert.equal(h.filter((e) => e.state === "SKIPPED").length, 9);
  await engine.stop();
});

test("overlap forbid: the next occurrence is SKIPPED while the previous one runs", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *", overlap: "forbid" });
  await tick(engine, clock, MIN);
  const [first] = (await engine.service.lease(ctx, "p", { workerId: "w", max: 1, leaseSeconds: 600 })).items;
  await tick(engine, clock, MIN);
  let h = await history(engine, job.jobId);
  assert.deepEqual(
    h.map((e) => [e.scheduledFor, e.state]),
    [
      [at(1), "RUNNING"],
      [at(2), "SKIPPED"],
    ],
  );
  assert.equal(h[1]!.error?.reason, "overlap");
  await engine.service.complete(ctx, first!.executionId, first!.attempt);
  await tick(engine, clock, MIN);
  h = await history(engine, job.jobId);
  assert.deepEqual(
    h.map((e) => e.state),
    ["SUCCEEDED", "SKIPPED", "QUEUED"],
  );
  await engine.stop();
});

test("overlap replace: the running occurrence is asked to stop and the next one starts", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *", overlap: "replace" });
  await tick(engine, clock, MIN);
  const [first] = (await engine.service.lease(ctx, "p", { workerId: "w", max: 1, leaseSeconds: 600 })).items;
  assert.equal((await engine.service.heartbeat(ctx, first!.executionId, { attempt: 1 })).cancelRequested, false);
  await tick(engine, clock, MIN);
  assert.equal((await engine.service.heartbeat(ctx, first!.executionId, { attempt: 1 })).cancelRequested, true);
  const [second] = (await engine.service.lease(ctx, "p", { workerId: "w", max: 1 })).items;
  assert.equal(second!.scheduledFor, at(2));
  assert.equal(job.jobId, second!.jobId);
  await engine.stop();
});

test("overlap allow: occurrences run side by side", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *" });
  await tick(engine, clock, MIN);
  await engine.service.lease(ctx, "p", { workerId: "w", max: 1, leaseSeconds: 600 });
  await tick(engine, clock, MIN);
  const h = await history(engine, job.jobId);
  assert.deepEqual(
    h.map((e) => e.state),
    ["RUNNING", "QUEUED"],
  );
  await engine.stop();
});

test("jitter: dispatch waits a stable per-job offset within the window; scheduledFor stays nominal", async () => {
  const { clock, engine, job } = await setup({ cron: "0 * * * *", jitterSeconds: 600 });
  assert.equal(job.nextRunAt, at(60));
  await tick(engine, clock, 60 * MIN);
  let dispatchedAt = Infinity;
  for (let s = 0; s <= 601 && dispatchedAt === Infinity; s++) {
    const h = await history(engine, job.jobId);
    if (h.length > 0) dispatchedAt = Date.parse(h[0]!.dispatchedAt!);
    else await tick(engine, clock, 1_000);
  }
  const offset = dispatchedAt - Date.parse(at(60));
  assert.ok(offset >= 0 && offset <= 601_000, `offset ${offset}`);
  const h = await history(engine, job.jobId);
  assert.equal(h[0]!.scheduledFor, at(60));
  // the same job gets the same offset at the next hour
  await tick(engine, clock, 60 * MIN - offset);
  for (let s = 0; s <= 601; s++) {
    if ((await history(engine, job.jobId)).length === 2) break;
    await tick(engine, clock, 1_000);
  }
  const second = (await history(engine, job.jobId))[1]!;
  assert.equal(Date.parse(second.dispatchedAt!) - Date.parse(second.scheduledFor), offset);
  await engine.stop();
});

test("startAt and endAt bound a recurring job; past endAt it completes", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *", startAt: at(5), endAt: at(7) });
  assert.equal(job.nextRunAt, at(5));
  for (let i = 0; i < 9; i++) await tick(engine, clock, MIN);
  const h = await history(engine, job.jobId);
  assert.deepEqual(
    h.map((e) => e.scheduledFor),
    [at(5), at(6), at(7)],
  );
  const done = await engine.service.getJob(ctx, job.jobId);
  assert.equal(done.state, "COMPLETED");
  assert.equal(done.nextRunAt, null);
  await engine.stop();
});
