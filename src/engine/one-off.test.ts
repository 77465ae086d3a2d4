// One-off jobs through the service, with a fake clock and a real SQLite
// store: their execution exists from submit (PENDING until due); pause
// holds it, resume releases it, PATCH replaces it, trigger overtakes it;
// history, the run ledger and the stats say so.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { executionIdFor } from "../core/ids.js";
import { openEngine, type Engine } from "./engine.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-oneoff-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const T0 = "2026-03-02T10:00:00.000Z";
const MIN = 60_000;
const at = (minutes: number) => new Date(Date.parse(T0) + minutes * MIN).toISOString();

async function setup(delayMinutes = 5) {
  const clock = new FakeClock(T0);
  const engine = await openEngine({ store: `sqlite:${join(dir, `o${n++}.db`)}`, clock, nodeId: "node-x", httpTargets: false });
  await engine.start();
  const job = await engine.service.createJob(ctx, {
    name: "once",
    target: { type: "queue", pool: "p" },
    payload: { v: 1 },
    schedule: { delaySeconds: delayMinutes * 60 },
  });
  return { clock, engine, job };
}

const history = async (engine: Engine, jobId: string) =>
  (await engine.service.listExecutions(ctx, jobId, {})).items.map((e) => [e.executionId, e.state]);
const lease = async (engine: Engine) => (await engine.service.lease(ctx, "p", { workerId: "w", max: 10 })).items;

test("right after submit, history shows the one-off's execution PENDING, created by the accepting node; QUEUED once due", async () => {
  const { clock, engine, job } = await setup();
  const [item] = (await engine.service.listExecutions(ctx, job.jobId, {})).items;
  assert.equal(item?.executionId, executionIdFor(job.jobId, Date.parse(at(5))));
  assert.equal(item?.state, "PENDING");
  assert.equal(item?.attempt, 0);
  assert.equal(item?.scheduledFor, at(5));
  assert.equal(item?.dispatchedAt, T0);
  assert.equal(item?.dispatchedBy, "node-x");
  assert.equal(job.nextRunAt, at(5));
  assert.deepEqual(await engine.service.poolStats(ctx, "p"), { pending: 1, queued: 0, running: 0 });
  clock.advance(5 * MIN);
  assert.deepEqual(await history(engine, job.jobId), [[item!.executionId, "QUEUED"]]);
  assert.deepEqual(await engine.service.poolStats(ctx, "p"), { pending: 0, queued: 1, running: 0 });
  await engine.stop();
});

test("the run ledger shows a one-off's occurrence due while its execution waits, dispatched once it ran", async () => {
  const { clock, engine, job } = await setup();
  const window = { from: at(0), to: at(10) };
  assert.deepEqual(
    (await engine.service.listOccurrences(ctx, job.jobId, window)).items.map((i) => [i.status, i.executionState]),
    [["due", "PENDING"]],
  );
  clock.advance(5 * MIN);
  assert.equal((await lease(engine)).length, 1);
  assert.deepEqual(
    (await engine.service.listOccurrences(ctx, job.jobId, window)).items.map((i) => [i.status, i.executionState]),
    [["dispatched", "RUNNING"]],
  );
  await engine.stop();
});

test("pause holds the pending execution (PAUSED, not leased, no nextRunAt); resuming after its time runs it at once", async () => {
  const { clock, engine, job } = await setup();
  const id = executionIdFor(job.jobId, Date.parse(at(5)));
  const paused = await engine.service.pauseJob(ctx, job.jobId);
  assert.equal(paused.nextRunAt, null);
  assert.deepEqual(await history(engine, job.jobId), [[id, "PAUSED"]]);
  assert.deepEqual(
    (await engine.service.listOccurrences(ctx, job.jobId, { from: at(0), to: at(10) })).items.map((i) => [i.status, i.reason]),
    [["not_run", "paused"]],
  );
  clock.advance(10 * MIN);
  assert.deepEqual(await lease(engine), []);
  assert.deepEqual(await engine.service.poolStats(ctx, "p"), { pending: 0, queued: 0, running: 0 });
  const resumed = await engine.service.resumeJob(ctx, job.jobId);
  assert.equal(resumed.nextRunAt, at(5));
  assert.deepEqual(
    (await lease(engine)).map((i) => i.executionId),
    [id],
  );
  await engine.stop();
});

test("resuming before its time: the one-off runs at its time, not before", async () => {
  const { clock, engine, job } = await setup();
  await engine.service.pauseJob(ctx, job.jobId);
  clock.advance(MIN);
  await engine.service.resumeJob(ctx, job.jobId);
  clock.advance(4 * MIN - 1);
  assert.deepEqual(await lease(engine), []);
  clock.advance(1);
  assert.equal((await lease(engine)).length, 1);
  await engine.stop();
});

test("PATCH of runAt replaces the pending execution: the new time has a new id, the old time never runs", async () => {
  const { clock, engine, job } = await setup();
  const updated = await engine.service.updateJob(ctx, job.jobId, { schedule: { runAt: at(8) }, payload: { v: 2 } });
  assert.equal(updated.nextRunAt, at(8));
  assert.deepEqual(await history(engine, job.jobId), [[executionIdFor(job.jobId, Date.parse(at(8))), "PENDING"]]);
  clock.advance(5 * MIN);
  assert.deepEqual(await lease(engine), [], "the old time never runs");
  clock.advance(3 * MIN);
  const [leased] = await lease(engine);
  assert.equal(leased?.scheduledFor, at(8));
  assert.deepEqual(leased?.payload, { v: 2 });
  await engine.stop();
});

test("PATCH of the payload alone reaches the pending execution", async () => {
  const { clock, engine, job } = await setup();
  await engine.service.updateJob(ctx, job.jobId, { payload: { v: 3 } });
  clock.advance(5 * MIN);
  const [leased] = await lease(engine);
  assert.equal(leased?.executionId, executionIdFor(job.jobId, Date.parse(at(5))));
  assert.deepEqual(leased?.payload, { v: 3 });
  await engine.stop();
});

test("a PATCH turning a one-off recurring drops its pending execution; its occurrences come from the scheduler", async () => {
  const { clock, engine, job } = await setup();
  const updated = await engine.service.updateJob(ctx, job.jobId, { schedule: { cron: "*/2 * * * *" } });
  assert.equal(updated.nextRunAt, at(2));
  assert.deepEqual(await history(engine, job.jobId), []);
  clock.advance(2 * MIN);
  await engine.scheduler.runOnce();
  assert.deepEqual(
    (await lease(engine)).map((i) => i.scheduledFor),
    [at(2)],
  );
  await engine.stop();
});

test("a trigger that succeeds completes the one-off and drops its pending execution", async () => {
  const { clock, engine, job } = await setup();
  const triggered = await engine.service.triggerJob(ctx, job.jobId);
  const [leased] = await lease(engine);
  assert.equal(leased?.executionId, triggered.executionId);
  await engine.service.complete(ctx, leased!.executionId, leased!.attempt);
  const done = await engine.service.getJob(ctx, job.jobId);
  assert.equal(done.state, "COMPLETED");
  assert.equal(done.nextRunAt, null);
  clock.advance(10 * MIN);
  assert.deepEqual(await lease(engine), []);
  assert.deepEqual(await history(engine, job.jobId), [[triggered.executionId, "SUCCEEDED"]]);
  await engine.stop();
});
