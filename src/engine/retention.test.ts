// Retention with a fake clock and a real SQLite store: what is removed when,
// what never is, and that a run is bounded. The engine is not started, so no
// timer races the runs these tests drive; "time passes" is the clock jumping.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { DuetimeError } from "../core/errors.js";
import type { Store } from "../store/store.js";
import { openStore } from "../store/factory.js";
import { openEngine, type Engine } from "./engine.js";
import { EngineEvents } from "./events.js";
import { ArchiveWriter, readArchive } from "./archive.js";
import { Retention } from "./retention.js";
import { RETENTION_DEFAULTS } from "../core/retention.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-retention-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const T0 = "2026-03-02T10:00:00Z";
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

async function setup(retention: Parameters<typeof openEngine>[0]["retention"] = {}) {
  const clock = new FakeClock(T0);
  const engine = await openEngine({ store: `sqlite:${join(dir, `r${n++}.db`)}`, clock, nodeId: "n", httpTargets: false, retention });
  return { clock, engine };
}

/** `count` one-off jobs run now and succeed now; answers their ids. */
async function succeedNow(engine: Engine, pool: string, count = 1): Promise<string[]> {
  const jobs = [];
  for (let i = 0; i < count; i++) {
    jobs.push(await engine.service.createJob(ctx, { name: "once", target: { type: "queue", pool }, schedule: { delaySeconds: 0 } }));
  }
  await engine.scheduler.runOnce();
  const { leased } = await engine.executor.lease({ pool, workerId: "w", max: count, leaseMs: 30_000, waitMs: 0 });
  assert.equal(leased.length, count);
  await engine.executor.complete(leased.map((l) => ({ executionId: l.executionId, tenantId: l.tenantId, attempt: l.attempt })));
  return jobs.map((j) => j.jobId);
}

const executionsOf = async (engine: Engine, jobId: string) => (await engine.service.listExecutions(ctx, jobId, {})).items;
const code = (c: string) => (err: unknown) => err instanceof DuetimeError && err.code === c;

test("history: executions that ended 31 days ago go (and then their ended job), 29 days ago stay, running ones never", async () => {
  const { clock, engine } = await setup();
  const [old] = await succeedNow(engine, "old");
  const running = (await engine.service.createJob(ctx, { name: "slow", target: { type: "queue", pool: "slow" }, schedule: { delaySeconds: 0 } }))
    .jobId;
  await engine.scheduler.runOnce();
  assert.equal((await engine.executor.lease({ pool: "slow", workerId: "w", max: 1, leaseMs: 30_000, waitMs: 0 })).leased.length, 1);
  clock.jump(2 * DAY);
  const [recent] = await succeedNow(engine, "recent");
  clock.jump(29 * DAY); // old ended 31 days ago, recent 29

  const counts = await engine.retention.runOnce();
  assert.deepEqual(counts, { executions: 1, jobs: 1, idempotency: 0, audit: 0 });
  await assert.rejects(engine.service.getJob(ctx, old!), code("NOT_FOUND"), "a one-off with no history left goes too");
  assert.equal((await executionsOf(engine, recent!)).length, 1);
  assert.equal((await engine.service.getJob(ctx, recent!)).state, "COMPLETED");
  assert.deepEqual(
    (await executionsOf(engine, running)).map((e) => e.state),
    ["RUNNING"],
  );
  assert.match(await engine.metricsText(), /duetime_retention_deleted_total\{kind="executions"\} 1\n/);

  clock.jump(365 * DAY);
  await engine.retention.runOnce();
  assert.deepEqual(
    (await executionsOf(engine, running)).map((e) => e.state),
    ["RUNNING"],
    "however old, a running attempt stays",
  );
  await engine.stop();
});

test("idempotency: a key is kept 24 hours; after that the same key creates a new job", async () => {
  const { clock, engine } = await setup();
  const spec = (name: string) => ({ name, target: { type: "queue" as const, pool: "p" }, schedule: { delaySeconds: 3600 * 24 * 7 } });
  const first = await engine.service.createJob(ctx, spec("a"), { idempotencyKey: "key-1" });
  clock.jump(23 * HOUR);
  assert.equal((await engine.retention.runOnce()).idempotency, 0);
  await assert.rejects(engine.service.createJob(ctx, spec("b"), { idempotencyKey: "key-1" }), code("IDEMPOTENCY_MISMATCH"));
  clock.jump(2 * HOUR);
  assert.equal((await engine.retention.runOnce()).idempotency, 1);
  const second = await engine.service.createJob(ctx, spec("b"), { idempotencyKey: "key-1" });
  assert.notEqual(second.jobId, first.jobId);
  assert.equal((await engine.service.getJob(ctx, first.jobId)).state, "SCHEDULED", "the first job itself is untouched");
  await engine.stop();
});

test("a job outlives its idempotency key, even when history is kept for less: a one-off's history is kept as long as its key", async () => {
  const { clock, engine } = await setup({ historyMs: HOUR });
  const spec = { name: "once", target: { type: "queue" as const, pool: "p" }, schedule: { delaySeconds: 0 } };
  const first = await engine.service.createJob(ctx, spec, { idempotencyKey: "key-1" });
  await engine.scheduler.runOnce();
  const { leased } = await engine.executor.lease({ pool: "p", workerId: "w", max: 1, leaseMs: 30_000, waitMs: 0 });
  await engine.executor.complete(leased.map((l) => ({ executionId: l.executionId, tenantId: l.tenantId, attempt: l.attempt })));
  clock.jump(2 * HOUR);
  assert.deepEqual(await engine.retention.runOnce(), { executions: 0, jobs: 0, idempotency: 0, audit: 0 });
  const retried = await engine.service.createJob(ctx, spec, { idempotencyKey: "key-1" });
  assert.equal(retried.jobId, first.jobId, "a retried create still answers the first job");
  assert.equal(retried.state, "COMPLETED", "read from its execution, still kept");
  clock.jump(23 * HOUR);
  assert.deepEqual(await engine.retention.runOnce(), { executions: 1, jobs: 1, idempotency: 1, audit: 0 }, "the job with its execution");
  await engine.stop();
});

test("audit: entries are kept 90 days", async () => {
  const { clock, engine } = await setup();
  await engine.service.createKey(ctx, { role: "worker", name: "first" });
  clock.jump(2 * DAY);
  await engine.service.createKey(ctx, { role: "worker", name: "second" });
  clock.jump(89 * DAY); // 91 and 89 days old
  assert.equal((await engine.retention.runOnce()).audit, 1);
  const left = (await engine.service.listAudit(ctx, {})).items;
  assert.equal(left.length, 1);
  assert.equal(left[0]!.at, new Date(Date.parse(T0) + 2 * DAY).toISOString());
  await engine.stop();
});

test("a run is bounded (batchSize × maxBatchesPerRun of each kind); the next run takes the rest", async () => {
  const { clock, engine } = await setup({ batchSize: 2, maxBatchesPerRun: 2 });
  await succeedNow(engine, "p", 5);
  clock.jump(31 * DAY);
  assert.equal((await engine.retention.runOnce()).executions, 4);
  assert.equal((await engine.retention.runOnce()).executions, 1);
  assert.equal((await engine.retention.runOnce()).executions, 0);
  await engine.stop();
});

test("a run yields to the event loop between batches, so dispatch and leases are served meanwhile", async () => {
  const { clock, engine } = await setup({ batchSize: 1 });
  await succeedNow(engine, "p", 3);
  clock.jump(31 * DAY);
  const order: string[] = [];
  engine.events.on("retention:purged", (e) => order.push(e.kind));
  const run = engine.retention.runOnce();
  setImmediate(() => order.push("other work"));
  await run;
  assert.deepEqual(
    order.filter((e) => e !== "jobs").slice(0, 3),
    ["executions", "other work", "executions"],
    "each batch's one-off jobs are reported with it",
  );
  await engine.stop();
});

test("the run ledger says an occurrence older than the history retention is unknown (expired), not missed", async () => {
  const { clock, engine } = await setup();
  const job = await engine.service.createJob(ctx, { name: "hourly", target: { type: "queue", pool: "h" }, schedule: { cron: "0 * * * *" } });
  clock.jump(HOUR);
  await engine.scheduler.runOnce(); // dispatches the 11:00 occurrence
  const { leased } = await engine.executor.lease({ pool: "h", workerId: "w", max: 10, leaseMs: 30_000, waitMs: 0 });
  assert.equal(leased.length, 1);
  await engine.executor.complete(leased.map((l) => ({ executionId: l.executionId, tenantId: l.tenantId, attempt: l.attempt })));
  const window = (fromMs: number, hours: number) => ({ from: new Date(fromMs).toISOString(), to: new Date(fromMs + hours * HOUR).toISOString() });
  const t0 = Date.parse(T0);
  assert.deepEqual(
    (await engine.service.listOccurrences(ctx, job.jobId, window(t0, 1))).items.map((i) => i.status),
    ["dispatched"],
  );

  clock.jump(31 * DAY);
  assert.equal((await engine.retention.runOnce()).executions, 1);
  const old = (await engine.service.listOccurrences(ctx, job.jobId, window(t0, 1))).items;
  assert.deepEqual(
    old.map((i) => [i.status, i.reason]),
    [["unknown", "expired"]],
  );
  const recent = (await engine.service.listOccurrences(ctx, job.jobId, window(t0 + 29 * DAY, 1))).items;
  assert.deepEqual(
    recent.map((i) => [i.status, i.reason]),
    [["not_run", "misfire"]],
    "within the retention a missing record means not run",
  );
  await engine.stop();
});

test("a failing kind is counted as an error and logged; the other kinds still run", async () => {
  const clock = new FakeClock(Date.parse(T0) + 100 * DAY);
  const store = await openStore(`sqlite:${join(dir, `r${n++}.db`)}`);
  await store.apiKeyCreate({
    id: "ak_1",
    tenantId: "t",
    role: "worker",
    digest: "d",
    now: Date.parse(T0),
    audit: { tenantId: "t", at: Date.parse(T0), actor: "a", action: "key.create", subject: "ak_1" },
  });
  const broken: Store = Object.create(store, {
    retentionPurge: {
      value: (p: Parameters<Store["retentionPurge"]>[0]) =>
        p.kind === "executions" ? Promise.reject(new Error("disk I/O error")) : store.retentionPurge(p),
    },
  });
  const events = new EngineEvents();
  const errors: string[] = [];
  events.on("error", (e) => errors.push(`${e.where}: ${(e.error as Error).message}`));
  const runs: Record<string, number>[] = [];
  events.on("retention:ran", (e) => runs.push(e.deleted));
  const retention = new Retention({ store: broken, clock, events, periods: RETENTION_DEFAULTS, archive: null });
  const counts = await retention.runOnce();
  assert.deepEqual(counts, { executions: 0, jobs: 0, idempotency: 0, audit: 1 });
  assert.deepEqual(errors, ["retention: disk I/O error"]);
  assert.deepEqual(runs, [counts], "the run's summary, for the log");
  await store.close();
});

/** A Retention over a second handle on the engine's SQLite file, archiving to a fresh directory, with the store and archive wrapped. */
async function archivingRetention(
  path: string,
  clock: FakeClock,
  wrap: { store?: (store: Store) => Partial<Store>; write?: (write: ArchiveWriter["write"]) => ArchiveWriter["write"] },
) {
  const store = await openStore(`sqlite:${path}`);
  const archiveDir = join(dir, `archive${n++}`);
  const writer = new ArchiveWriter(archiveDir, "p1");
  const write = wrap.write?.((rows) => writer.write(rows)) ?? ((rows) => writer.write(rows));
  const wrapped: Store = Object.assign(Object.create(store), wrap.store?.(store) ?? {});
  const events = new EngineEvents();
  const errors: string[] = [];
  events.on("error", (e) => errors.push((e.error as Error).message));
  const retention = new Retention({
    store: wrapped,
    clock,
    events,
    periods: RETENTION_DEFAULTS,
    archive: Object.assign(Object.create(writer), { write }),
  });
  const archived = async () => {
    const lines: string[] = [];
    for await (const line of readArchive(archiveDir)) lines.push(`${line.kind} ${line.id} ${String(line.row.state)}`);
    return lines;
  };
  return { store, retention, archived, errors };
}

test("with an archive: a failed write deletes nothing; a failed delete leaves the rows to be archived again, and read once", async () => {
  const path = join(dir, `r${n++}.db`);
  const clock = new FakeClock(T0);
  const engine = await openEngine({ store: `sqlite:${path}`, clock, nodeId: "n", httpTargets: false });
  const [jobId] = await succeedNow(engine, "p");
  const [execution] = (await executionsOf(engine, jobId!)).map((e) => e.executionId);
  clock.jump(31 * DAY);
  let failing: "write" | "delete" | null = "write";
  const { store, retention, archived, errors } = await archivingRetention(path, clock, {
    write: (write) => (rows) => (failing === "write" ? Promise.reject(new Error("disk full")) : write(rows)),
    store: (s) => ({ retentionPurge: (p) => (failing === "delete" ? Promise.reject(new Error("crash")) : s.retentionPurge(p)) }),
  });
  const none = { executions: 0, jobs: 0, idempotency: 0, audit: 0 };
  assert.deepEqual(await retention.runOnce(), none);
  assert.equal((await executionsOf(engine, jobId!)).length, 1, "not archived, so not deleted");
  failing = "delete";
  assert.deepEqual(await retention.runOnce(), none);
  assert.deepEqual(
    await archived(),
    [`executions ${execution} SUCCEEDED`, `jobs ${jobId} COMPLETED`],
    "a one-off's job is archived with its last execution, as read",
  );
  assert.equal((await executionsOf(engine, jobId!)).length, 1);
  failing = null;
  assert.deepEqual(errors, ["disk full", "crash"]);
  assert.deepEqual(await retention.runOnce(), { ...none, executions: 1, jobs: 1 });
  assert.deepEqual(await archived(), [`executions ${execution} SUCCEEDED`, `jobs ${jobId} COMPLETED`], "archived twice, read once");
  await assert.rejects(engine.service.getJob(ctx, jobId!), code("NOT_FOUND"));
  await store.close();
  await engine.stop();
});

test("with an archive: only the rows archived are deleted, not one that became due meanwhile", async () => {
  const path = join(dir, `r${n++}.db`);
  const clock = new FakeClock(T0);
  const engine = await openEngine({ store: `sqlite:${path}`, clock, nodeId: "n", httpTargets: false });
  const [done] = await succeedNow(engine, "done");
  await engine.service.createJob(ctx, { name: "late", target: { type: "queue", pool: "late" }, schedule: { delaySeconds: 0 } });
  await engine.scheduler.runOnce();
  const [late] = (await engine.executor.lease({ pool: "late", workerId: "w", max: 1, leaseMs: 30_000, waitMs: 0 })).leased;
  clock.jump(31 * DAY);
  const { store, retention, archived } = await archivingRetention(path, clock, {
    store: (s) => ({
      // Between the read and the delete, another execution ends (dated in the past) and becomes due too.
      retentionPurge: async (p) => {
        if (p.kind === "executions")
          await s.executionCompleteMany({
            items: [{ executionId: late!.executionId, tenantId: late!.tenantId, attempt: late!.attempt }],
            now: Date.parse(T0) + 1,
          });
        return s.retentionPurge(p);
      },
    }),
  });
  assert.deepEqual(await retention.runOnce(), { executions: 1, jobs: 1, idempotency: 0, audit: 0 });
  await assert.rejects(engine.service.getJob(ctx, done!), code("NOT_FOUND"));
  assert.deepEqual(
    (await executionsOf(engine, late!.jobId)).map((e) => e.state),
    ["SUCCEEDED"],
    "not archived, so not deleted",
  );
  assert.equal((await retention.runOnce()).executions, 1, "the next run archives it, then deletes it");
  assert.deepEqual((await archived()).filter((l) => l.startsWith("executions")).length, 2);
  await store.close();
  await engine.stop();
});

test("start() runs it every interval on the clock; stop() cancels the next run", async () => {
  const clock = new FakeClock(Date.parse(T0) + 100 * DAY);
  const store = await openStore(`sqlite:${join(dir, `r${n++}.db`)}`);
  const audit = (at: number) => ({ tenantId: "t", at, actor: "a", action: "key.create", subject: `ak_${at}` });
  for (const at of [Date.parse(T0), Date.parse(T0) + 1]) {
    await store.apiKeyCreate({ id: `ak_${at}`, tenantId: "t", role: "worker", digest: `d${at}`, now: at, audit: audit(at) });
  }
  const events = new EngineEvents();
  const purged: number[] = [];
  let ran = (): void => {};
  events.on("retention:purged", (e) => {
    purged.push(e.deleted);
    ran();
  });
  const retention = new Retention({
    store,
    clock,
    events,
    periods: RETENTION_DEFAULTS,
    archive: null,
    tuning: { intervalMs: 60_000, batchSize: 1, maxBatchesPerRun: 1 },
  });
  retention.start();
  clock.advance(59_999);
  assert.deepEqual(purged, []);
  await new Promise<void>((resolve) => {
    ran = resolve;
    clock.advance(1);
  });
  assert.deepEqual(purged, [1]);
  await new Promise((resolve) => setImmediate(resolve)); // the run ends and arms the next one
  assert.equal(clock.pendingTimers(), 1);
  await new Promise<void>((resolve) => {
    ran = resolve;
    clock.advance(60_000);
  });
  assert.deepEqual(purged, [1, 1]);
  await retention.stop();
  assert.equal(clock.pendingTimers(), 0);
  await store.close();
});

test("retention periods below their floor are refused before anything opens, naming the field", async () => {
  await assert.rejects(
    setup({ idempotencyMs: 23 * HOUR }),
    (err: unknown) => err instanceof DuetimeError && err.details?.field === "retention.idempotencyMs" && /at least 1d/.test(err.message),
  );
  await assert.rejects(setup({ historyMs: 0 }), (err: unknown) => err instanceof DuetimeError && err.details?.field === "retention.historyMs");
});
