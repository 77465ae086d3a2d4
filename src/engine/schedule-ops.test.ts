// Editing schedules (PATCH), backfill and the run ledger, with a fake clock
// and a real SQLite store.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { ScheduleSpec } from "@duetime/sdk/contract";
import { FakeClock } from "../core/clock.js";
import { DuetimeError } from "../core/errors.js";
import { executionIdFor } from "../core/ids.js";
import { openEngine, type Engine } from "./engine.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-ops-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const T0 = "2026-03-02T10:00:00Z";
const MIN = 60_000;
const at = (minutes: number) => new Date(Date.parse(T0) + minutes * MIN).toISOString();

async function setup(schedule: ScheduleSpec) {
  const clock = new FakeClock(T0);
  const engine = await openEngine({ store: `sqlite:${join(dir, `o${n++}.db`)}`, clock, nodeId: "n", httpTargets: false });
  await engine.start();
  const job = await engine.service.createJob(ctx, { name: "ops", target: { type: "queue", pool: "p" }, schedule });
  return { clock, engine, job };
}

async function tick(engine: Engine, clock: FakeClock, ms: number) {
  clock.advance(ms);
  await engine.scheduler.runOnce();
}

const code = (c: string) => (err: unknown) => err instanceof DuetimeError && err.code === c;

test("PATCH with a new schedule moves the next occurrence; the old time never runs", async () => {
  const { clock, engine, job } = await setup({ cron: "*/5 * * * *" });
  assert.equal(job.nextRunAt, at(5));
  await tick(engine, clock, MIN); // the old occurrence is in the scheduler's memory now
  const updated = await engine.service.updateJob(ctx, job.jobId, { schedule: { cron: "*/7 * * * *" } }, { ifMatch: job.version });
  assert.equal(updated.nextRunAt, at(7));
  assert.equal(updated.version, job.version + 1);
  for (let i = 0; i < 8; i++) await tick(engine, clock, MIN);
  const history = (await engine.service.listExecutions(ctx, job.jobId, {})).items;
  assert.deepEqual(
    history.map((e) => e.scheduledFor),
    [at(7)],
  );
  await engine.stop();
});

test("PATCH with a stale version is VERSION_CONFLICT and changes nothing", async () => {
  const { engine, job } = await setup({ cron: "*/5 * * * *" });
  await engine.service.updateJob(ctx, job.jobId, { name: "renamed" }, { ifMatch: job.version });
  await assert.rejects(engine.service.updateJob(ctx, job.jobId, { name: "again" }, { ifMatch: job.version }), code("VERSION_CONFLICT"));
  await assert.rejects(engine.service.updateJob(ctx, job.jobId, { name: "again", version: job.version }), code("VERSION_CONFLICT"));
  // If-Match (as a header sends it) and the body's version disagreeing is the caller's mistake, named If-Match.
  const current = job.version + 1;
  await assert.rejects(engine.service.updateJob(ctx, job.jobId, { name: "again", version: current }, { ifMatch: `"${current + 1}"` }), (err) => {
    return code("INVALID_ARGUMENT")(err) && (err as DuetimeError).details?.field === "If-Match";
  });
  const now = await engine.service.getJob(ctx, job.jobId);
  assert.equal(now.name, "renamed");
  assert.equal(now.nextRunAt, job.nextRunAt, "a change without a schedule keeps the next occurrence");
  await engine.stop();
});

test("PATCH of retry changes only the fields it names", async () => {
  const { engine, job } = await setup({ cron: "*/5 * * * *" });
  await engine.service.updateJob(ctx, job.jobId, { retry: { maxAttempts: 5, backoffSeconds: 60, maxBackoffSeconds: 600 } });
  const updated = await engine.service.updateJob(ctx, job.jobId, { retry: { maxAttempts: 9 } });
  assert.deepEqual(updated.retry, { maxAttempts: 9, backoffSeconds: 60, maxBackoffSeconds: 600 });
  await engine.stop();
});

test("PATCH validates like create and refuses ended jobs", async () => {
  const { engine, job } = await setup({ cron: "*/5 * * * *" });
  await assert.rejects(
    engine.service.updateJob(ctx, job.jobId, { schedule: { cron: "0 0 31 2 *" } }),
    (err: unknown) => err instanceof DuetimeError && err.details?.field === "schedule.cron",
  );
  await engine.service.cancelJob(ctx, job.jobId);
  await assert.rejects(engine.service.updateJob(ctx, job.jobId, { name: "x" }), code("INVALID_STATE"));
  await engine.stop();
});

test("backfill creates a past window's occurrences with their deterministic ids, spaced out; repeating adds nothing", async () => {
  // Hours 4 to 8: nothing of its own falls due while the clock moves to 13:00, so every execution here is the backfill's.
  const { clock, engine, job } = await setup({ cron: "0 4-8 * * *" });
  clock.set(Date.parse(T0) + 3 * 60 * MIN);
  const first = await engine.service.backfillJob(ctx, job.jobId, { from: "2026-03-02T04:30:00Z", to: "2026-03-02T08:00:00Z" });
  assert.deepEqual(
    first.items.map((i) => i.scheduledFor),
    ["2026-03-02T05:00:00.000Z", "2026-03-02T06:00:00.000Z", "2026-03-02T07:00:00.000Z", "2026-03-02T08:00:00.000Z"],
  );
  assert.ok(first.items.every((i) => i.created));
  assert.equal(first.items[0]!.executionId, executionIdFor(job.jobId, Date.parse("2026-03-02T05:00:00Z")));
  const readyAts = first.items.map((i) => Date.parse(i.readyAt!));
  assert.ok(
    readyAts.every((t, i) => i === 0 || t > readyAts[i - 1]!),
    "not spaced out",
  );
  const again = await engine.service.backfillJob(ctx, job.jobId, { from: "2026-03-02T04:30:00Z", to: "2026-03-02T08:00:00Z" });
  assert.ok(again.items.every((i) => !i.created));
  assert.equal((await engine.service.listExecutions(ctx, job.jobId, { limit: 100 })).items.length, 4);
  clock.advance(1_000);
  const leased = await engine.service.lease(ctx, "p", { workerId: "w", max: 10 });
  assert.equal(leased.items.length, 4);
  await assert.rejects(
    engine.service.backfillJob(ctx, job.jobId, { from: "2026-03-02T08:00:00Z", to: "2026-03-02T05:00:00Z" }),
    code("INVALID_ARGUMENT"),
  );
  await engine.stop();
});

test("the run ledger says what became of every fire time in a window", async () => {
  const { clock, engine, job } = await setup({ cron: "* * * * *", misfire: "run_once", endAt: at(30) });
  await tick(engine, clock, MIN); // 10:01 dispatched
  clock.jump(5 * MIN); // down across 10:02..10:06
  await engine.scheduler.runOnce(); // 10:06 runs, 10:02..10:05 skipped
  const { items } = await engine.service.listOccurrences(ctx, job.jobId, { from: "2026-03-02T09:58:00Z", to: "2026-03-02T10:31:30Z" });
  const byTime = new Map(items.map((i) => [i.scheduledFor, i]));
  assert.equal(byTime.get(new Date(Date.parse(T0) - MIN).toISOString())?.reason, "before_creation");
  assert.equal(byTime.get(at(1))?.status, "dispatched");
  assert.equal(byTime.get(at(1))?.executionState, "QUEUED");
  assert.deepEqual(
    [2, 3, 4, 5].map((m) => [byTime.get(at(m))?.status, byTime.get(at(m))?.reason]),
    Array(4).fill(["skipped", "misfire"]),
  );
  assert.equal(byTime.get(at(6))?.status, "dispatched");
  assert.equal(byTime.get(at(7))?.status, "due");
  assert.equal(byTime.get(at(31))?.reason, "outside_window");
  assert.equal(byTime.get(at(1))?.local, "2026-03-02T10:01:00");
  await engine.stop();
});

test("the ledger marks daylight-saving moves", async () => {
  const clock = new FakeClock("2026-03-01T00:00:00Z");
  const engine = await openEngine({ store: `sqlite:${join(dir, `o${n++}.db`)}`, clock, nodeId: "n", httpTargets: false });
  const job = await engine.service.createJob(ctx, {
    name: "nightly",
    target: { type: "queue", pool: "p" },
    schedule: { cron: "30 2 * * *", tz: "America/New_York" },
  });
  const { items } = await engine.service.listOccurrences(ctx, job.jobId, { from: "2026-03-07T00:00:00Z", to: "2026-03-10T00:00:00Z" });
  const moved = items.find((i) => i.dst === "gap");
  assert.ok(moved, "no gap mark on the spring-forward night");
  assert.equal(moved.scheduledFor, "2026-03-08T07:00:00.000Z");
  assert.ok(job.nextRunAtLocal?.endsWith("[America/New_York]"));
  await engine.stop();
});

test("a ledger or backfill window may span 100 years at most: a rare expression cannot make a request walk millennia", async () => {
  const { engine, job } = await setup({ cron: "0 0 29 2 *", tz: "Europe/London" });
  const within = await engine.service.listOccurrences(ctx, job.jobId, { from: "1970-01-01T00:00:00Z", to: "2069-01-01T00:00:00Z" });
  assert.equal(within.items.length, 25);
  for (const call of [
    () => engine.service.listOccurrences(ctx, job.jobId, { from: "1900-01-01T00:00:00Z", to: "9999-01-01T00:00:00Z" }),
    () => engine.service.backfillJob(ctx, job.jobId, { from: "1900-01-01T00:00:00Z", to: "2026-01-01T00:00:00Z" }),
  ]) {
    await assert.rejects(call(), (err: unknown) => err instanceof DuetimeError && err.details?.field === "to" && /100 years/.test(err.message));
  }
  await engine.stop();
});
