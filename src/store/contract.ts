// The store conformance suite: one set of tests every driver must pass
// (River's riverdrivertest, Oban's engine tests over [Basic, Lite]). A driver's
// test file calls storeContract(name, open, openPair) with an `open` that
// returns an already-migrated, empty store, isolated from every other call (a
// new SQLite file, a new PostgreSQL schema), and an `openPair` that returns
// two handles (connections, as two nodes would hold) on one such database,
// for the races at the end. Each test opens its own store and closes it.
//
// The suite knows only the Store port (store.ts): every assertion here is a
// sentence of a doc comment there, or of docs/api.md where the port defers to
// it. Time is never the wall clock: tests pass fixed `now` values around T0.

import { poolOf } from "../core/targets.js";
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import type { ErrorRecord, Target } from "@duetime/sdk/contract";
import { executionIdFor, newId, SHARD_COUNT, shardOf } from "../core/ids.js";
import {
  HTTP_POOL,
  type AckOutcome,
  type ApiKeyRecord,
  type AttemptRow,
  type ClusterSignal,
  DEFAULT_TENANT_LIMITS,
  type DueEntry,
  type FailInput,
  type JobRecord,
  type LeasedRow,
  type NewJob,
  type NextOccurrence,
  type PoolCounts,
  type PurgedRow,
  type ReplaySelection,
  type RetentionKind,
  type Store,
} from "./store.js";
import { LAG_COLUMNS, type WorkloadMinute } from "./workload-minutes.js";

// ---- fixed time ----------------------------------------------------------

// Times are pinned (now given) unless a test says otherwise: every driver
// honours a given now, lease methods included (store.ts, "Lease time"), so
// exact deadlines such as leaseUntil = now + leaseMs hold for a networked
// driver too. T0 lies in the past: the tests that leave now to the store's
// own clock see leases pinned at T0 as long expired.
const T0 = Date.parse("2026-03-01T00:00:00Z");
/** How far a networked store's clock may be from this host's in the tests that leave `now` to the store. */
const STORE_CLOCK_TOLERANCE_MS = 5_000;
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** Jobs are created an hour before T0 unless a test says otherwise. */
const CREATED = T0 - HOUR;
const LEASE_MS = 30 * SECOND;

const iso = (ms: number): string => new Date(ms).toISOString();

// ---- record factories ----------------------------------------------------

const RETRY = { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 3600 };
const CRON_SCHEDULE = { cron: "0 * * * *", tz: "UTC", jitterSeconds: 0, misfire: "run_once", overlap: "allow" } as const;
const BOOM: ErrorRecord = { message: "boom", class: "transient" };
/** A permanent error: dead at once. */
const FATAL: ErrorRecord = { message: "fatal", class: "permanent" };

type JobFields = NewJob["job"];

interface JobOverrides extends Partial<JobFields> {
  /** The first occurrence's scheduledFor and dueAt (default T0); ignored when `due` (recurring) or `execution` (one-off) is given. */
  at?: number;
  /** A recurring job's first due entry (default at `at`); a one-off has none unless given. */
  due?: NextOccurrence | null;
  /** A one-off's execution (default at `at`; null: none); a recurring job has none. */
  execution?: NextOccurrence | null;
  idempotency?: NewJob["idempotency"];
}

/** A valid NewJob: tenant t1, a one-off queue job in pool p1 due at T0, created with its execution. */
function newJob(overrides: JobOverrides = {}): NewJob {
  const { at = T0, due, execution, idempotency, ...fields } = overrides;
  const createdAt = fields.createdAt ?? CREATED;
  const jobId = fields.jobId ?? newId(createdAt);
  const job: JobFields = {
    tenantId: "t1",
    jobId,
    shard: shardOf(jobId),
    kind: "once",
    name: "job",
    state: "SCHEDULED",
    target: { type: "queue", pool: "p1" },
    payload: { n: 1 },
    schedule: { runAt: iso(at) },
    retry: RETRY,
    timeoutSeconds: 300,
    priority: 0,
    mode: "live",
    createdAt,
    ...fields,
  } as JobFields;
  const first = { scheduledFor: at, dueAt: at };
  const result: NewJob =
    job.kind === "once"
      ? { job, due: due ?? null, ...(execution !== null ? { execution: execution ?? first } : {}) }
      : { job, due: due === undefined ? first : due };
  if (idempotency) result.idempotency = idempotency;
  return result;
}

/** A recurring job (hourly, UTC) whose first occurrence is at T0, in the due index. */
function cronJob(overrides: JobOverrides = {}): NewJob {
  return newJob({ ...CRON, ...overrides });
}

const CRON: JobOverrides = { kind: "cron", schedule: { ...CRON_SCHEDULE } };

/** A job whose shard is not in `avoid`. */
function jobOutsideShards(avoid: ReadonlySet<number>, overrides: JobOverrides = {}): NewJob {
  for (;;) {
    const nj = newJob(overrides);
    if (!avoid.has(nj.job.shard)) return nj;
  }
}

function entryOf(nj: NewJob): DueEntry {
  assert.ok(nj.due, "the job has a due entry");
  return { jobId: nj.job.jobId, tenantId: nj.job.tenantId, shard: nj.job.shard, kind: nj.job.kind, ...nj.due };
}

// ---- store helpers ---------------------------------------------------------

/** Takes all SHARD_COUNT shards for owner; answers shard → epoch. */
async function acquireAll(store: Store, owner: string, now = T0 - 2 * HOUR, leaseMs = 24 * HOUR): Promise<Map<number, number>> {
  const all = Array.from({ length: SHARD_COUNT }, (_, i) => i);
  const leases = await store.shardAcquire({ owner, shards: all, leaseMs, now });
  const epochs = new Map<number, number>();
  for (const l of leases) if (l.owner === owner) epochs.set(l.shard, l.epoch);
  assert.equal(epochs.size, SHARD_COUNT, `${owner} holds every shard`);
  return epochs;
}

async function createOne(store: Store, nj: NewJob, now = CREATED): Promise<JobRecord> {
  const [outcome] = await store.jobCreateMany({ nodeId: "n1", jobs: [nj], now });
  assert.ok(outcome && outcome.status === "created", `created, got ${JSON.stringify(outcome)}`);
  return outcome.job;
}

async function getJob(store: Store, nj: NewJob | JobRecord): Promise<JobRecord> {
  const j = "job" in nj ? nj.job : nj;
  const got = await store.jobGet({ tenantId: j.tenantId, jobId: j.jobId });
  assert.ok(got, `job ${j.jobId} exists`);
  return got;
}

interface Ready {
  nj: NewJob;
  job: JobRecord;
  executionId: string;
  scheduledFor: number;
}

/**
 * A READY execution of a job due at `at` (default T0): a one-off's, created
 * with it; a recurring job's, dispatched at its due time.
 */
async function readyExecution(
  store: Store,
  epochs: ReadonlyMap<number, number>,
  overrides: JobOverrides = {},
  next: NextOccurrence | null = null,
): Promise<Ready> {
  const nj = newJob(overrides);
  const job = await createOne(store, nj);
  if (nj.execution) return { nj, job, executionId: executionIdFor(job.jobId, nj.execution.scheduledFor), scheduledFor: nj.execution.scheduledFor };
  const entry = entryOf(nj);
  const res = await store.dispatchMany({ nodeId: "n1", epochs, now: entry.dueAt, items: [{ entry, next }] });
  assert.equal(res.dispatched.length, 1, "dispatched");
  return { nj, job, executionId: res.dispatched[0]!.executionId, scheduledFor: entry.scheduledFor };
}

interface LeaseOptions {
  pool?: string;
  tenantId?: string;
  leaseMs?: number;
  workerId?: string;
  max?: number;
}

async function lease(store: Store, now: number, o: LeaseOptions = {}): Promise<LeasedRow[]> {
  return store.executionLease({
    pool: o.pool ?? "p1",
    workerId: o.workerId ?? "w1",
    max: o.max ?? 100,
    leaseMs: o.leaseMs ?? LEASE_MS,
    now,
    ...(o.tenantId !== undefined ? { tenantId: o.tenantId } : {}),
  });
}

async function leaseOne(store: Store, now: number, o: LeaseOptions = {}): Promise<LeasedRow> {
  const rows = await lease(store, now, { ...o, max: 1 });
  assert.equal(rows.length, 1, "one execution leased");
  return rows[0]!;
}

/** A RUNNING attempt: a ready execution leased at T0 with a 30 s lease. */
async function runningExecution(
  store: Store,
  epochs: ReadonlyMap<number, number>,
  overrides: JobOverrides = {},
): Promise<Ready & { leased: LeasedRow }> {
  const ready = await readyExecution(store, epochs, overrides);
  const leased = await leaseOne(store, T0, { pool: poolOf(ready.job.target), tenantId: ready.job.tenantId });
  assert.equal(leased.executionId, ready.executionId);
  return { ...ready, leased };
}

async function history(store: Store, tenantId: string, jobId: string): Promise<AttemptRow[]> {
  return store.executionHistory({ tenantId, jobId, limit: 1000 });
}

function attemptOf(rows: AttemptRow[], executionId: string, attempt: number): AttemptRow {
  const row = rows.find((r) => r.executionId === executionId && r.attempt === attempt);
  assert.ok(row, `history has attempt ${attempt} of ${executionId}: ${JSON.stringify(rows)}`);
  return row;
}

/** A failed attempt; by default a transient error and jitter 0.5 (none): attempt n retries after RETRY's 10 s × 2^(n-1). */
function fail(item: Omit<FailInput, "error" | "jitter"> & { error?: ErrorRecord; jitter?: number }): FailInput {
  return { error: BOOM, jitter: 0.5, ...item };
}

function countsOf(rows: PoolCounts[], tenantId: string, pool: string): { pending: number; queued: number; running: number } {
  const matching = rows.filter((r) => r.tenantId === tenantId && r.pool === pool);
  assert.ok(matching.length <= 1, "one row per tenant and pool");
  const row = matching[0];
  return { pending: row?.pending ?? 0, queued: row?.queued ?? 0, running: row?.running ?? 0 };
}

function nonZero(rows: PoolCounts[]): PoolCounts[] {
  return rows.filter((r) => r.pending + r.queued + r.running > 0);
}

function assertOk(outcome: AckOutcome | undefined, state: "SUCCEEDED" | "READY" | "DEAD"): void {
  assert.ok(outcome && outcome.status === "ok", `ok, got ${JSON.stringify(outcome)}`);
  assert.equal(outcome.state, state);
}

// ---- bulk dead-letter replays ----------------------------------------------

/**
 * n dead letters of one tenant and pool, dying one second apart from
 * `deadFrom` (oldest first in the answer), each failed with `error`.
 */
async function deadLetters(
  store: Store,
  n: number,
  o: { tenantId?: string; pool?: string; error?: ErrorRecord; deadFrom?: number } = {},
): Promise<string[]> {
  const tenantId = o.tenantId ?? "t1";
  const pool = o.pool ?? "p1";
  const jobs = Array.from({ length: n }, () => newJob({ tenantId, target: { type: "queue", pool }, retry: { ...RETRY, maxAttempts: 1 } }));
  await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const leased = await leaseOne(store, T0, { pool, tenantId });
    const now = (o.deadFrom ?? T0 + SECOND) + i * SECOND;
    const [outcome] = await store.executionFailMany({
      items: [fail({ executionId: leased.executionId, tenantId, attempt: leased.attempt, error: o.error ?? FATAL })],
      now,
    });
    assertOk(outcome, "DEAD");
    ids.push(leased.executionId);
  }
  return ids;
}

const REPLAY_AT = T0 + HOUR;
let replayCount = 0;

function bulkReplay(selection: ReplaySelection, o: { tenantId?: string; ratePerSecond?: number } = {}) {
  const tenantId = o.tenantId ?? "t1";
  const replayId = `rp_${++replayCount}_${newId(T0)}`;
  return {
    replay: { replayId, tenantId, selection, ratePerSecond: o.ratePerSecond ?? 2, actor: "admin-key", createdAt: REPLAY_AT },
    audit: { tenantId, at: REPLAY_AT, actor: "admin-key", action: "dead-letter.replay-bulk", subject: replayId, details: { selection } },
  };
}

/** Steps a replay at `at` until it is done, at most `steps` times; answers every execution it replayed, in order. */
async function driveReplay(store: Store, replayId: string, o: { owner?: string; at?: number; limit?: number; steps?: number } = {}) {
  const owner = o.owner ?? "n1";
  const replayed: { executionId: string; pool: string; readyAt: number }[] = [];
  for (let i = 0; i < (o.steps ?? 100); i++) {
    const step = await store.replayStep({
      replayId,
      owner,
      leaseMs: 10 * SECOND,
      now: o.at ?? REPLAY_AT,
      at: o.at ?? REPLAY_AT,
      limit: o.limit ?? 2,
    });
    assert.ok(step, "the owner holds the lease");
    replayed.push(...step.replayed);
    if (step.replay.state !== "RUNNING") return { replayed, replay: step.replay };
  }
  assert.fail("the replay did not finish");
}

/** A lost answer without the possible duplicate it may have recorded ("possible duplicates" tests look at that); arrays item by item. */
function unmarked<T>(outcome: T): T {
  if (Array.isArray(outcome)) return outcome.map((o) => unmarked(o)) as T;
  if (outcome && typeof outcome === "object" && (outcome as { status?: unknown }).status === "lost") return { status: "lost" } as T;
  return outcome;
}

// ---- races -----------------------------------------------------------------

/** Rounds of each race: enough for the arms to meet in every order. */
const RACE_ROUNDS = 50;

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs two arms at once. A driver that serialises them (SQLite's one writer
 * answers each call before the next starts) would always run them in call
 * order, so the round picks which arm starts first and how many event-loop
 * turns the other waits: over the rounds, the arms' steps interleave in
 * every order. A networked driver races them for real.
 */
async function race<A, B>(round: number, a: () => Promise<A>, b: () => Promise<B>): Promise<[A, B]> {
  const lag = Math.floor(round / 2) % 3;
  const late = async <T>(arm: () => Promise<T>): Promise<T> => {
    for (let i = 0; i < lag; i++) await turn();
    return arm();
  };
  return round % 2 === 0 ? Promise.all([a(), late(b)]) : Promise.all([late(a), b()]);
}

/** A job on this shard. */
function jobOnShard(shard: number, overrides: JobOverrides = {}): NewJob {
  for (;;) {
    const nj = newJob(overrides);
    if (nj.job.shard === shard) return nj;
  }
}

// ---- the suite -------------------------------------------------------------

export function storeContract(name: string, open: () => Promise<Store>, openPair: () => Promise<[Store, Store]>): void {
  /** A test with its own fresh store, closed whatever happens. */
  function storeTest(title: string, fn: (store: Store) => Promise<void>): void {
    test(title, async () => {
      const store = await open();
      try {
        await fn(store);
      } finally {
        await store.close();
      }
    });
  }

  /** A test with two handles on one fresh database, both closed whatever happens. */
  function pairTest(title: string, fn: (a: Store, b: Store) => Promise<void>): void {
    test(title, async () => {
      const [a, b] = await openPair();
      try {
        await fn(a, b);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });
  }

  describe(`store contract: ${name}`, () => {
    describe("lifecycle", () => {
      storeTest("kind names the driver and ping answers", async (store) => {
        assert.equal(typeof store.kind, "string");
        assert.ok(store.kind.length > 0);
        await store.ping();
      });

      storeTest("a primary trails nothing: replicaLagMs answers 0", async (store) => {
        assert.equal(await store.replicaLagMs(), 0);
      });

      storeTest("pingWrite answers on a healthy store and changes no data", async (store) => {
        const created = await createOne(store, newJob());
        await store.pingWrite();
        await store.pingWrite();
        assert.deepEqual(await getJob(store, created), created);
      });

      storeTest("migrate on an already-migrated store is a no-op that keeps the data", async (store) => {
        const nj = newJob();
        await createOne(store, nj);
        const first = await store.migrate();
        const second = await store.migrate();
        assert.deepEqual(first.applied, [], "the store was opened migrated");
        assert.deepEqual(second, first);
        assert.ok(Number.isInteger(first.version) && first.version >= 1, `version ${first.version}`);
        const got = await getJob(store, nj);
        assert.equal(got.jobId, nj.job.jobId);
      });
    });

    describe("jobCreateMany", () => {
      storeTest("keeps a fractional timeoutSeconds as given, and judges its deadline in whole ms", async (store) => {
        const nj = newJob({ timeoutSeconds: 2.5004 });
        await createOne(store, nj);
        assert.equal((await getJob(store, nj)).timeoutSeconds, 2.5004);
        const row = await leaseOne(store, T0, { leaseMs: 60 * SECOND });
        assert.equal(row.timeoutSeconds, 2.5);
        assert.equal(row.leaseUntil, T0 + 2500, "the lease ends at the deadline, now + 2,500 ms (rounded to whole ms)");
      });

      storeTest("creates a job SCHEDULED at version 1 with nextRunAt = due.scheduledFor and updatedAt = createdAt", async (store) => {
        const nj = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 1500 } });
        const [outcome] = await store.jobCreateMany({ nodeId: "n1", jobs: [nj], now: CREATED });
        assert.ok(outcome && outcome.status === "created");
        assert.equal(outcome.job.state, "SCHEDULED");
        assert.equal(outcome.job.version, 1);
        assert.equal(outcome.job.nextRunAt, T0);
        assert.equal(outcome.job.nextDueAt, T0 + 1500);
        assert.equal(outcome.job.createdAt, CREATED);
        assert.equal(outcome.job.updatedAt, CREATED);
        assert.deepEqual(await getJob(store, nj), outcome.job);
      });

      storeTest("stores every field as given: kind, name, shard, target, payload, schedule, retry, timeout, priority", async (store) => {
        const nj = cronJob({
          name: "nightly-report ☾",
          target: { type: "http", url: "https://example.com/hook?x=1", method: "PUT", headers: { "x-a": "b" } },
          payload: { nested: { list: [1, "two", null, true], emoji: "⏰" }, n: 1.5 },
          schedule: {
            cron: "30 9 * * 1-5",
            tz: "Europe/London",
            jitterSeconds: 30,
            misfire: "skip",
            overlap: "forbid",
            startAt: "2026-01-01T00:00:00.000Z",
            dst: { gap: "skip", overlap: "both" },
          },
          retry: { maxAttempts: 7, backoffSeconds: 2, maxBackoffSeconds: 60 },
          timeoutSeconds: 45,
          priority: -3,
        });
        const created = await createOne(store, nj);
        const got = await getJob(store, nj);
        assert.deepEqual(got, created);
        const fields = Object.fromEntries(Object.keys(nj.job).map((k) => [k, got[k as keyof JobRecord]]));
        assert.deepEqual(fields, nj.job);
        assert.equal(got.version, 1);
        assert.equal(got.updatedAt, CREATED);
        assert.equal(got.nextRunAt, T0);
      });

      storeTest("a null payload is kept as null", async (store) => {
        const nj = newJob({ payload: null });
        await createOne(store, nj);
        assert.equal((await getJob(store, nj)).payload, null);
      });

      storeTest("creates a batch of many jobs in one call, answering in request order", async (store) => {
        const jobs = Array.from({ length: 300 }, (_, i) => newJob({ name: `j${i}`, at: T0 + i * SECOND }));
        const outcomes = await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
        assert.equal(outcomes.length, jobs.length);
        outcomes.forEach((o, i) => {
          assert.ok(o.status === "created", `item ${i} created`);
          assert.equal(o.job.jobId, jobs[i]!.job.jobId);
          assert.equal(o.job.name, `j${i}`);
          assert.equal(o.job.nextRunAt, T0 + i * SECOND);
        });
        const listed = await store.jobList({ tenantId: "t1", limit: 1000 });
        assert.equal(listed.length, 300);
      });

      storeTest(
        "a one-off is created with its execution: READY from its due time at attempt 0, dispatched by the creating node at creation",
        async (store) => {
          const nj = newJob({ execution: { scheduledFor: T0, dueAt: T0 + 1500 } });
          const created = await createOne(store, nj, CREATED + 7);
          assert.equal(created.nextRunAt, T0);
          assert.equal(created.nextDueAt, T0 + 1500);
          assert.deepEqual(await getJob(store, nj), created);
          const rows = await history(store, "t1", nj.job.jobId);
          assert.equal(rows.length, 1);
          const row = attemptOf(rows, executionIdFor(nj.job.jobId, T0), 0);
          assert.equal(row.state, "READY");
          assert.equal(row.scheduledFor, T0);
          assert.equal(row.readyAt, T0 + 1500);
          assert.equal(row.dispatchedAt, CREATED + 7);
          assert.equal(row.dispatchedBy, "n1");
          assert.equal(row.startedAt, null);
          assert.deepEqual(await store.dueLoad({ shards: [nj.job.shard], before: T0 + HOUR, limit: 10 }), [], "a one-off has no due entry");
        },
      );

      storeTest("a one-off's execution is leased from its pool once due, with the job's payload and priority, never before", async (store) => {
        const nj = newJob({
          execution: { scheduledFor: T0, dueAt: T0 + 1500 },
          target: { type: "queue", pool: "mail" },
          payload: { to: "ada" },
          priority: 5,
        });
        await createOne(store, nj);
        assert.deepEqual(await lease(store, T0 + 1499, { pool: "mail" }), []);
        assert.deepEqual(countsOf(await store.poolCounts({ now: T0 + 1499 }), "t1", "mail"), { pending: 1, queued: 0, running: 0 });
        const leased = await leaseOne(store, T0 + 1500, { pool: "mail" });
        assert.equal(leased.executionId, executionIdFor(nj.job.jobId, T0));
        assert.equal(leased.attempt, 1);
        assert.deepEqual(leased.payload, { to: "ada" });
        assert.equal(leased.scheduledFor, T0);
      });

      storeTest("a one-off's nextRunAt is its pending execution's: none once it started", async (store) => {
        const nj = newJob();
        await createOne(store, nj);
        await leaseOne(store, T0);
        const job = await getJob(store, nj);
        assert.equal(job.nextRunAt, null);
        assert.equal(job.nextDueAt, null);
      });

      storeTest("a job with due null has nextRunAt and nextDueAt null and no due entry", async (store) => {
        const nj = cronJob({ due: null });
        const created = await createOne(store, nj);
        assert.equal(created.nextRunAt, null);
        assert.equal(created.nextDueAt, null);
        assert.equal((await getJob(store, nj)).nextRunAt, null);
        assert.deepEqual(await store.dueLoad({ shards: [nj.job.shard], before: T0 + 365 * 24 * HOUR, limit: 10 }), []);
      });

      storeTest("the same idempotency key and hash answers existing with the first job, writing nothing", async (store) => {
        const first = newJob({ idempotency: { key: "k1", requestHash: "h1" } });
        const created = await createOne(store, first);
        const retry = newJob({ at: T0 + HOUR, idempotency: { key: "k1", requestHash: "h1" } });
        const [outcome] = await store.jobCreateMany({ nodeId: "n1", jobs: [retry], now: CREATED + 10 });
        assert.ok(outcome && outcome.status === "existing", JSON.stringify(outcome));
        assert.deepEqual(outcome.job, created);
        assert.equal(await store.jobGet({ tenantId: "t1", jobId: retry.job.jobId }), null);
        assert.deepEqual(await history(store, "t1", retry.job.jobId), [], "no execution of the job not created");
        assert.equal((await history(store, "t1", first.job.jobId)).length, 1, "the first job has one execution");
        assert.equal((await store.jobList({ tenantId: "t1", limit: 10 })).length, 1);
        assert.deepEqual(
          await store
            .dueLoad({ shards: [retry.job.shard], before: T0 + 2 * HOUR, limit: 10 })
            .then((r) => r.filter((e) => e.jobId === retry.job.jobId)),
          [],
        );
      });

      storeTest("the same idempotency key with another hash answers idempotency_mismatch, writing nothing", async (store) => {
        const created = await createOne(store, newJob({ idempotency: { key: "k1", requestHash: "h1" } }));
        const other = newJob({ idempotency: { key: "k1", requestHash: "h2" } });
        const [outcome] = await store.jobCreateMany({ nodeId: "n1", jobs: [other], now: CREATED + 10 });
        assert.deepEqual(outcome, { status: "idempotency_mismatch" });
        assert.equal(await store.jobGet({ tenantId: "t1", jobId: other.job.jobId }), null);
        const listed = await store.jobList({ tenantId: "t1", limit: 10 });
        assert.deepEqual(
          listed.map((j) => j.jobId),
          [created.jobId],
        );
      });

      storeTest("idempotency keys are per tenant: the same key in another tenant creates", async (store) => {
        await createOne(store, newJob({ idempotency: { key: "k1", requestHash: "h1" } }));
        const t2 = newJob({ tenantId: "t2", idempotency: { key: "k1", requestHash: "h1" } });
        const [outcome] = await store.jobCreateMany({ nodeId: "n1", jobs: [t2], now: CREATED });
        assert.ok(outcome && outcome.status === "created", JSON.stringify(outcome));
        assert.equal(outcome.job.tenantId, "t2");
        const t2other = newJob({ tenantId: "t2", idempotency: { key: "k2", requestHash: "h9" } });
        assert.equal((await store.jobCreateMany({ nodeId: "n1", jobs: [t2other], now: CREATED }))[0]?.status, "created");
      });

      storeTest("the same key twice in one batch: the second answers existing with the first's job", async (store) => {
        const a = newJob({ idempotency: { key: "k1", requestHash: "h1" } });
        const b = newJob({ idempotency: { key: "k1", requestHash: "h1" } });
        const outcomes = await store.jobCreateMany({ nodeId: "n1", jobs: [a, b], now: CREATED });
        assert.equal(outcomes.length, 2);
        assert.ok(outcomes[0]?.status === "created");
        assert.ok(outcomes[1]?.status === "existing", JSON.stringify(outcomes[1]));
        assert.equal(outcomes[1].job.jobId, a.job.jobId);
        assert.equal(await store.jobGet({ tenantId: "t1", jobId: b.job.jobId }), null);
        assert.equal((await store.jobList({ tenantId: "t1", limit: 10 })).length, 1);
      });

      storeTest("the same key twice in one batch with another hash: the second answers idempotency_mismatch", async (store) => {
        const a = newJob({ idempotency: { key: "k1", requestHash: "h1" } });
        const b = newJob({ idempotency: { key: "k1", requestHash: "h2" } });
        const c = newJob();
        const outcomes = await store.jobCreateMany({ nodeId: "n1", jobs: [a, b, c], now: CREATED });
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ["created", "idempotency_mismatch", "created"],
        );
        assert.equal(await store.jobGet({ tenantId: "t1", jobId: b.job.jobId }), null);
        assert.ok(await store.jobGet({ tenantId: "t1", jobId: c.job.jobId }));
      });
    });

    describe("jobGet", () => {
      storeTest("returns the job to its tenant, null to another tenant and for an unknown id", async (store) => {
        const nj = newJob();
        const created = await createOne(store, nj);
        assert.deepEqual(await store.jobGet({ tenantId: "t1", jobId: nj.job.jobId }), created);
        assert.equal(await store.jobGet({ tenantId: "t2", jobId: nj.job.jobId }), null);
        assert.equal(await store.jobGet({ tenantId: "t1", jobId: newId(T0) }), null);
      });
    });

    describe("jobList", () => {
      storeTest("lists newest first by createdAt, ties broken by jobId descending", async (store) => {
        const jobs = [
          newJob({ createdAt: CREATED - 3000 }),
          newJob({ createdAt: CREATED - 1000 }),
          newJob({ createdAt: CREATED - 2000 }),
          newJob({ createdAt: CREATED - 2000 }),
          newJob({ createdAt: CREATED - 2000 }),
        ];
        await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
        const expected = jobs
          .map((j) => j.job)
          .sort((x, y) => y.createdAt - x.createdAt || (y.jobId < x.jobId ? -1 : y.jobId > x.jobId ? 1 : 0))
          .map((j) => j.jobId);
        const listed = await store.jobList({ tenantId: "t1", limit: 10 });
        assert.deepEqual(
          listed.map((j) => j.jobId),
          expected,
        );
      });

      storeTest("filters by state and by name", async (store) => {
        const a = newJob({ name: "alpha", createdAt: CREATED - 3 });
        const b = newJob({ name: "beta", createdAt: CREATED - 2 });
        const c = newJob({ name: "alpha", createdAt: CREATED - 1 });
        await store.jobCreateMany({ nodeId: "n1", jobs: [a, b, c], now: CREATED });
        await store.jobTransition({ tenantId: "t1", jobId: a.job.jobId, fromVersion: 1, state: "PAUSED", due: null, now: CREATED + 1 });
        const ids = (js: JobRecord[]): string[] => js.map((j) => j.jobId);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", state: "PAUSED", limit: 10 })), [a.job.jobId]);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", state: "SCHEDULED", limit: 10 })), [c.job.jobId, b.job.jobId]);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", name: "alpha", limit: 10 })), [c.job.jobId, a.job.jobId]);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", name: "alpha", state: "SCHEDULED", limit: 10 })), [c.job.jobId]);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", name: "gamma", limit: 10 })), []);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", state: "DEAD", limit: 10 })), []);
      });

      storeTest("filters by pool and by kind, with the other filters and the cursor", async (store) => {
        const mail = { type: "queue", pool: "mail" } as const;
        const jobs = [
          newJob({ target: mail, createdAt: CREATED - 5 }),
          cronJob({ target: mail, createdAt: CREATED - 4 }),
          newJob({ createdAt: CREATED - 3 }),
          cronJob({ createdAt: CREATED - 2 }),
          cronJob({ target: mail, name: "digest", createdAt: CREATED - 1 }),
          newJob({ tenantId: "t2", target: mail, createdAt: CREATED }),
        ];
        await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
        const id = (i: number): string => jobs[i]!.job.jobId;
        const ids = (js: JobRecord[]): string[] => js.map((j) => j.jobId);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", pool: "mail", limit: 10 })), [id(4), id(1), id(0)]);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", kind: "cron", limit: 10 })), [id(4), id(3), id(1)]);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", kind: "once", limit: 10 })), [id(2), id(0)]);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", pool: "mail", kind: "cron", name: "digest", limit: 10 })), [id(4)]);
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", pool: "nope", limit: 10 })), []);
        const first = await store.jobList({ tenantId: "t1", pool: "mail", kind: "cron", limit: 1 });
        const after = { createdAt: first[0]!.createdAt, jobId: first[0]!.jobId };
        assert.deepEqual(ids(await store.jobList({ tenantId: "t1", pool: "mail", kind: "cron", limit: 1, after })), [id(1)]);
      });

      storeTest("respects limit, and the after cursor pages through every job exactly once in order", async (store) => {
        const jobs = Array.from({ length: 11 }, (_, i) => newJob({ createdAt: CREATED - Math.floor(i / 3) * 1000 }));
        await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
        const all = await store.jobList({ tenantId: "t1", limit: 100 });
        assert.equal(all.length, 11);
        assert.equal((await store.jobList({ tenantId: "t1", limit: 4 })).length, 4);
        const seen: string[] = [];
        let after: { createdAt: number; jobId: string } | undefined;
        for (let page = 0; page < 20; page++) {
          const rows = await store.jobList({ tenantId: "t1", limit: 4, ...(after ? { after } : {}) });
          assert.ok(rows.length <= 4);
          if (rows.length === 0) break;
          seen.push(...rows.map((r) => r.jobId));
          const last = rows[rows.length - 1]!;
          after = { createdAt: last.createdAt, jobId: last.jobId };
        }
        assert.deepEqual(
          seen,
          all.map((j) => j.jobId),
        );
      });

      storeTest("sees only the caller's tenant", async (store) => {
        const mine = newJob();
        await store.jobCreateMany({ nodeId: "n1", jobs: [mine, newJob({ tenantId: "t2" }), newJob({ tenantId: "t2" })], now: CREATED });
        assert.deepEqual(
          (await store.jobList({ tenantId: "t1", limit: 10 })).map((j) => j.jobId),
          [mine.job.jobId],
        );
        assert.equal((await store.jobList({ tenantId: "t2", limit: 10 })).length, 2);
        assert.deepEqual(await store.jobList({ tenantId: "t3", limit: 10 }), []);
      });
    });

    describe("jobTransition", () => {
      storeTest("sets the state, bumps the version and sets updatedAt = now", async (store) => {
        const nj = newJob();
        await createOne(store, nj);
        const paused = await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: T0 - 5 });
        assert.ok(paused);
        assert.equal(paused.state, "PAUSED");
        assert.equal(paused.version, 2);
        assert.equal(paused.updatedAt, T0 - 5);
        assert.equal(paused.createdAt, CREATED);
        assert.deepEqual(await getJob(store, nj), paused);
        const resumed = await store.jobTransition({
          tenantId: "t1",
          jobId: nj.job.jobId,
          fromVersion: 2,
          state: "SCHEDULED",
          due: "keep",
          now: T0 - 4,
        });
        assert.equal(resumed?.version, 3);
        assert.equal(resumed?.state, "SCHEDULED");
      });

      storeTest("a stale fromVersion answers null and changes nothing", async (store) => {
        const nj = cronJob();
        await createOne(store, nj);
        const moved = await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: T0 - 5 });
        assert.ok(moved);
        const stale = await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 - 4 });
        assert.equal(stale, null);
        const ahead = await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 3, state: "CANCELLED", due: null, now: T0 - 4 });
        assert.equal(ahead, null);
        assert.deepEqual(await getJob(store, nj), moved);
        assert.equal((await store.dueLoad({ shards: [nj.job.shard], before: T0, limit: 10 })).filter((e) => e.jobId === nj.job.jobId).length, 1);
      });

      storeTest("another tenant's or an unknown job answers null and changes nothing", async (store) => {
        const nj = newJob();
        const created = await createOne(store, nj);
        assert.equal(
          await store.jobTransition({ tenantId: "t2", jobId: nj.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 }),
          null,
        );
        assert.equal(await store.jobTransition({ tenantId: "t1", jobId: newId(T0), fromVersion: 1, state: "CANCELLED", due: null, now: T0 }), null);
        assert.deepEqual(await getJob(store, nj), created);
      });

      storeTest("a new due replaces the entry: nextRunAt, nextDueAt and dueLoad follow", async (store) => {
        const nj = cronJob();
        await createOne(store, nj);
        const moved = await store.jobTransition({
          tenantId: "t1",
          jobId: nj.job.jobId,
          fromVersion: 1,
          state: "SCHEDULED",
          due: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR + 500 },
          now: T0 - 5,
        });
        assert.equal(moved?.nextRunAt, T0 + HOUR);
        assert.equal(moved?.nextDueAt, T0 + HOUR + 500);
        assert.equal((await getJob(store, nj)).nextRunAt, T0 + HOUR);
        const loaded = await store.dueLoad({ shards: [nj.job.shard], before: T0 + 2 * HOUR, limit: 10 });
        const mine = loaded.filter((e) => e.jobId === nj.job.jobId);
        assert.equal(mine.length, 1, "one due entry per job");
        assert.equal(mine[0]!.scheduledFor, T0 + HOUR);
        assert.equal(mine[0]!.dueAt, T0 + HOUR + 500);
      });

      storeTest("due null removes the entry: nextRunAt and nextDueAt null, nothing to load", async (store) => {
        const nj = cronJob();
        await createOne(store, nj);
        const cancelled = await store.jobTransition({
          tenantId: "t1",
          jobId: nj.job.jobId,
          fromVersion: 1,
          state: "CANCELLED",
          due: null,
          now: T0 - 5,
        });
        assert.equal(cancelled?.state, "CANCELLED");
        assert.equal(cancelled?.nextRunAt, null);
        assert.equal(cancelled?.nextDueAt, null);
        assert.equal((await getJob(store, nj)).nextRunAt, null);
        assert.deepEqual(await store.dueLoad({ shards: [nj.job.shard], before: T0 + HOUR, limit: 10 }), []);
      });

      storeTest('due "keep" leaves the entry as it was', async (store) => {
        const nj = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 700 } });
        await createOne(store, nj);
        const paused = await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: T0 - 5 });
        assert.equal(paused?.nextRunAt, T0);
        assert.equal(paused?.nextDueAt, T0 + 700);
        const loaded = await store.dueLoad({ shards: [nj.job.shard], before: T0 + HOUR, limit: 10 });
        assert.deepEqual(
          loaded.map((e) => [e.jobId, e.scheduledFor, e.dueAt]),
          [[nj.job.jobId, T0, T0 + 700]],
        );
      });

      storeTest("cancelExecutions cancels READY executions: never leased afterwards, history shows CANCELLED", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(
          store,
          epochs,
          { kind: "cron", schedule: { ...CRON_SCHEDULE } },
          { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR },
        );
        const job = await getJob(store, r.nj);
        const cancelled = await store.jobTransition({
          tenantId: "t1",
          jobId: r.job.jobId,
          fromVersion: job.version,
          state: "CANCELLED",
          due: null,
          cancelExecutions: true,
          now: T0 + 10,
        });
        assert.equal(cancelled?.state, "CANCELLED");
        assert.deepEqual(await lease(store, T0 + 20), []);
        assert.deepEqual(await lease(store, T0 + 10 * HOUR), []);
        const rows = await history(store, "t1", r.job.jobId);
        assert.equal(rows.length, 1);
        assert.equal(attemptOf(rows, r.executionId, 0).state, "CANCELLED");
        assert.equal(countsOf(await store.poolCounts({ now: T0 + 20 }), "t1", "p1").queued, 0);
      });

      storeTest("cancelExecutions asks a RUNNING attempt to stop: its heartbeat sees cancelRequested", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const before = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 1000 });
        assert.ok(before.status === "ok");
        assert.equal(before.cancelRequested, false);
        const job = await getJob(store, r.nj);
        const cancelled = await store.jobTransition({
          tenantId: "t1",
          jobId: r.job.jobId,
          fromVersion: job.version,
          state: "CANCELLED",
          due: null,
          cancelExecutions: true,
          now: T0 + 2000,
        });
        assert.ok(cancelled);
        const after = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 3000 });
        assert.ok(after.status === "ok", JSON.stringify(after));
        assert.equal(after.cancelRequested, true);
      });

      storeTest("a RUNNING execution asked to stop is not retried when its attempt fails", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const job = await getJob(store, r.nj);
        await store.jobTransition({
          tenantId: "t1",
          jobId: r.job.jobId,
          fromVersion: job.version,
          state: "CANCELLED",
          due: null,
          cancelExecutions: true,
          now: T0 + SECOND,
        });
        const [outcome] = await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error: { message: "stopped on request" } })],
          now: T0 + 2 * SECOND,
        });
        assert.equal(outcome?.status, "ok");
        assert.deepEqual(await lease(store, T0 + HOUR), [], "a cancelled job's execution never runs again");
        assert.equal((await getJob(store, r.nj)).state, "CANCELLED");
      });

      storeTest("a RUNNING execution asked to stop is not retried when its lease is reaped", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const job = await getJob(store, r.nj);
        await store.jobTransition({
          tenantId: "t1",
          jobId: r.job.jobId,
          fromVersion: job.version,
          state: "CANCELLED",
          due: null,
          cancelExecutions: true,
          now: T0 + SECOND,
        });
        const reaped = await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
        assert.deepEqual(
          reaped.map((x) => x.executionId),
          [r.executionId],
        );
        assert.deepEqual(await lease(store, T0 + HOUR), [], "a cancelled job's execution never runs again");
        assert.equal((await getJob(store, r.nj)).state, "CANCELLED");
      });

      storeTest("without cancelExecutions, READY executions stay leasable", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs, CRON);
        const job = await getJob(store, r.nj);
        await store.jobTransition({ tenantId: "t1", jobId: r.job.jobId, fromVersion: job.version, state: "PAUSED", due: null, now: T0 + 10 });
        const leased = await leaseOne(store, T0 + 20);
        assert.equal(leased.executionId, r.executionId);
      });
    });

    describe("dueGet, dueRefs and dueScan", () => {
      storeTest("dueGet answers the entries of the jobs asked that have one, with what dispatch needs", async (store) => {
        const a = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 7 } });
        const notAsked = cronJob();
        const oneOff = newJob();
        await store.jobCreateMany({ nodeId: "n1", jobs: [a, notAsked, oneOff], now: CREATED });
        const got = await store.dueGet({ jobIds: [a.job.jobId, oneOff.job.jobId, "job_unknown"] });
        assert.deepEqual(
          got.map((e) => [e.jobId, e.shard, e.scheduledFor, e.dueAt, e.kind, e.tenantId]),
          [[a.job.jobId, a.job.shard, T0, T0 + 7, "cron", "t1"]],
          "only the jobs asked for; a one-off and an unknown job have no due entry",
        );
        assert.deepEqual(got[0]!.schedule, a.job.schedule);
        assert.deepEqual(await store.dueGet({ jobIds: [] }), []);
      });

      storeTest("dueRefs answers where the jobs asked are due, for those that have a due entry", async (store) => {
        const a = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 7 } });
        const notAsked = cronJob();
        const oneOff = newJob();
        await store.jobCreateMany({ nodeId: "n1", jobs: [a, notAsked, oneOff], now: CREATED });
        assert.deepEqual(await store.dueRefs({ jobIds: [a.job.jobId, oneOff.job.jobId, "job_unknown"] }), [
          { jobId: a.job.jobId, shard: a.job.shard, dueAt: T0 + 7 },
        ]);
        assert.deepEqual(await store.dueRefs({ jobIds: [] }), []);
      });

      storeTest("dueScan pages one shard's entries by job id, and no other shard's", async (store) => {
        const first = cronJob();
        const shard = first.job.shard;
        const same: NewJob[] = [first];
        while (same.length < 5) {
          const nj = cronJob();
          if (nj.job.shard === shard) same.push(nj);
        }
        const other = jobOutsideShards(new Set([shard]), CRON);
        await store.jobCreateMany({ nodeId: "n1", jobs: [...same, other], now: CREATED });
        const ids = same.map((j) => j.job.jobId).sort();
        const page1 = await store.dueScan({ shard, after: "", limit: 3 });
        const dueAt = new Map(same.map((j) => [j.job.jobId, j.due!.dueAt]));
        assert.deepEqual(
          page1,
          ids.slice(0, 3).map((jobId) => ({ jobId, shard, dueAt: dueAt.get(jobId) })),
        );
        const page2 = await store.dueScan({ shard, after: page1[2]!.jobId, limit: 3 });
        assert.deepEqual(
          page2.map((e) => e.jobId),
          ids.slice(3),
        );
        assert.deepEqual(await store.dueScan({ shard, after: ids[4]!, limit: 3 }), []);
      });
    });

    describe("dueLoad", () => {
      storeTest("loads only the given shards", async (store) => {
        const a = cronJob();
        const b = jobOutsideShards(new Set([a.job.shard]), CRON);
        await store.jobCreateMany({ nodeId: "n1", jobs: [a, b], now: CREATED });
        const onlyA = await store.dueLoad({ shards: [a.job.shard], before: T0, limit: 10 });
        assert.deepEqual(
          onlyA.map((e) => e.jobId),
          [a.job.jobId],
        );
        const both = await store.dueLoad({ shards: [a.job.shard, b.job.shard], before: T0, limit: 10 });
        assert.deepEqual(new Set(both.map((e) => e.jobId)), new Set([a.job.jobId, b.job.jobId]));
        const none = await store.dueLoad({ shards: [], before: T0, limit: 10 });
        assert.deepEqual(none, []);
      });

      storeTest("loads only entries with dueAt <= before, earliest dueAt first", async (store) => {
        // scheduledFor order differs from dueAt order (jitter): dueAt decides.
        const late = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 5000 } });
        const early = cronJob({ due: { scheduledFor: T0 + 1000, dueAt: T0 + 1000 } });
        const edge = cronJob({ due: { scheduledFor: T0 + 6000, dueAt: T0 + 6000 } });
        const future = cronJob({ due: { scheduledFor: T0 + 6001, dueAt: T0 + 6001 } });
        const jobs = [late, early, edge, future];
        await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
        const shards = [...new Set(jobs.map((j) => j.job.shard))];
        const loaded = await store.dueLoad({ shards, before: T0 + 6000, limit: 10 });
        assert.deepEqual(
          loaded.map((e) => e.jobId),
          [early.job.jobId, late.job.jobId, edge.job.jobId],
        );
        const first = loaded[1]!;
        assert.equal(first.scheduledFor, T0);
        assert.equal(first.dueAt, T0 + 5000);
        assert.equal(first.tenantId, "t1");
        assert.equal(first.shard, late.job.shard);
        assert.deepEqual(await store.dueLoad({ shards, before: T0 + 999, limit: 10 }), []);
      });

      storeTest("respects the limit, keeping the earliest", async (store) => {
        const jobs = Array.from({ length: 12 }, (_, i) => cronJob({ at: T0 + (12 - i) * SECOND }));
        await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
        const shards = Array.from({ length: SHARD_COUNT }, (_, i) => i);
        const loaded = await store.dueLoad({ shards, before: T0 + HOUR, limit: 5 });
        assert.deepEqual(
          loaded.map((e) => e.dueAt),
          [1, 2, 3, 4, 5].map((s) => T0 + s * SECOND),
        );
      });

      storeTest("returns the job's kind and schedule with each entry; a one-off has none", async (store) => {
        const once = newJob();
        const cron = cronJob();
        await store.jobCreateMany({ nodeId: "n1", jobs: [once, cron], now: CREATED });
        const loaded = await store.dueLoad({ shards: [once.job.shard, cron.job.shard], before: T0, limit: 10 });
        const byId = new Map(loaded.map((e) => [e.jobId, e]));
        assert.equal(byId.has(once.job.jobId), false);
        assert.equal(byId.get(cron.job.jobId)?.kind, "cron");
        assert.deepEqual(byId.get(cron.job.jobId)?.schedule, cron.job.schedule);
      });
    });

    describe("dispatchMany", () => {
      storeTest("creates a READY execution named executionIdFor(jobId, scheduledFor), leasable from the job's queue pool", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 200 } });
        await createOne(store, nj);
        const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0 + 200, items: [{ entry: entryOf(nj), next: null }] });
        const executionId = executionIdFor(nj.job.jobId, T0);
        assert.deepEqual(res.dispatched, [{ jobId: nj.job.jobId, executionId, tenantId: "t1", pool: "p1" }]);
        assert.deepEqual(res.stale, []);
        assert.deepEqual(res.fenced, []);
        const rows = await history(store, "t1", nj.job.jobId);
        assert.equal(rows.length, 1);
        const row = attemptOf(rows, executionId, 0);
        assert.equal(row.state, "READY");
        assert.equal(row.scheduledFor, T0);
        assert.equal(row.jobId, nj.job.jobId);
        assert.equal(
          await store.executionLease({ pool: "other", workerId: "w", max: 10, leaseMs: LEASE_MS, now: T0 + 200 }).then((r) => r.length),
          0,
        );
        const leased = await leaseOne(store, T0 + 200);
        assert.equal(leased.executionId, executionId);
      });

      storeTest(
        "a dry-run job's run is recorded SKIPPED (reason dry_run) in wouldRun, never leased; after a flip to live the next is READY",
        async (store) => {
          const epochs = await acquireAll(store, "n1");
          const nj = cronJob({ mode: "dry_run" });
          await createOne(store, nj);
          const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
          const first = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next }] });
          const would = executionIdFor(nj.job.jobId, T0);
          assert.deepEqual(first.dispatched, []);
          assert.deepEqual(first.wouldRun, [{ jobId: nj.job.jobId, executionId: would, tenantId: "t1", pool: "p1" }]);
          const skipped = attemptOf(await history(store, "t1", nj.job.jobId), would, 0);
          assert.deepEqual([skipped.state, skipped.error?.reason, skipped.finishedAt], ["SKIPPED", "dry_run", T0]);
          assert.deepEqual(await lease(store, T0 + MINUTE), []);

          const job = await getJob(store, nj);
          const { kind, name, target, payload, schedule, retry, timeoutSeconds, priority } = job;
          const fields = { kind, name, target, payload, schedule, retry, timeoutSeconds, priority, mode: "live" as const };
          assert.ok(
            await store.jobUpdate({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: job.version, fields, due: "keep", nodeId: "n1", now: T0 }),
          );
          const second = await store.dispatchMany({
            nodeId: "n1",
            epochs,
            now: T0 + HOUR,
            items: [{ entry: { ...entryOf(nj), ...next }, next: null }],
          });
          assert.deepEqual(second.wouldRun, []);
          assert.deepEqual(
            second.dispatched.map((d) => d.executionId),
            [executionIdFor(nj.job.jobId, T0 + HOUR)],
          );
          assert.equal((await leaseOne(store, T0 + HOUR)).executionId, executionIdFor(nj.job.jobId, T0 + HOUR));
        },
      );

      storeTest("records dispatchedBy = nodeId and dispatchedAt = now", async (store) => {
        const epochs = await acquireAll(store, "node-a");
        const nj = cronJob();
        await createOne(store, nj);
        await store.dispatchMany({ nodeId: "node-a", epochs, now: T0 + 42, items: [{ entry: entryOf(nj), next: null }] });
        const row = attemptOf(await history(store, "t1", nj.job.jobId), executionIdFor(nj.job.jobId, T0), 0);
        assert.equal(row.dispatchedBy, "node-a");
        assert.equal(row.dispatchedAt, T0 + 42);
      });

      storeTest("an http target's execution waits in HTTP_POOL and is leased with its target", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const target: Target = { type: "http", url: "https://example.com/hook", method: "POST", headers: { "x-k": "v" } };
        const r = await readyExecution(store, epochs, { ...CRON, target });
        assert.deepEqual(await lease(store, T0), []);
        const leased = await leaseOne(store, T0, { pool: HTTP_POOL });
        assert.equal(leased.executionId, r.executionId);
        assert.deepEqual(leased.target, target);
      });

      storeTest("a last occurrence's due entry is deleted; the job stays SCHEDULED with nextRunAt and nextDueAt null", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs, CRON);
        const job = await getJob(store, r.nj);
        assert.equal(job.state, "SCHEDULED");
        assert.equal(job.nextRunAt, null);
        assert.equal(job.nextDueAt, null);
        assert.deepEqual(await store.dueLoad({ shards: [job.shard], before: T0 + HOUR, limit: 10 }), []);
      });

      storeTest("a cron job's due entry advances to next (nextRunAt, nextDueAt), and the next occurrence dispatches too", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR + 300 };
        const first = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next }] });
        assert.equal(first.dispatched.length, 1);
        const job = await getJob(store, nj);
        assert.equal(job.state, "SCHEDULED");
        assert.equal(job.nextRunAt, T0 + HOUR);
        assert.equal(job.nextDueAt, T0 + HOUR + 300);
        const loaded = await store.dueLoad({ shards: [nj.job.shard], before: T0 + 2 * HOUR, limit: 10 });
        assert.equal(loaded.length, 1);
        const entry = loaded[0]!;
        assert.deepEqual([entry.jobId, entry.scheduledFor, entry.dueAt], [nj.job.jobId, T0 + HOUR, T0 + HOUR + 300]);
        const second = await store.dispatchMany({
          nodeId: "n1",
          epochs,
          now: T0 + HOUR + 300,
          items: [{ entry, next: { scheduledFor: T0 + 2 * HOUR, dueAt: T0 + 2 * HOUR } }],
        });
        assert.deepEqual(
          second.dispatched.map((d) => d.executionId),
          [executionIdFor(nj.job.jobId, T0 + HOUR)],
        );
        assert.equal((await getJob(store, nj)).nextRunAt, T0 + 2 * HOUR);
        const rows = await history(store, "t1", nj.job.jobId);
        assert.deepEqual(
          rows.map((r) => r.scheduledFor),
          [T0 + HOUR, T0],
        );
        const leased = await lease(store, T0 + HOUR + 300, { max: 10 });
        assert.equal(leased.length, 2);
      });

      storeTest("a paused job's due entry is consumed but dispatches nothing; a trigger still adds an execution", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        assert.ok(await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: T0 - 1 }));
        const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next: null }] });
        assert.deepEqual(res.dispatched, []);
        assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
        const [triggered] = await store.executionCreateMany({
          tenantId: "t1",
          jobId: nj.job.jobId,
          nodeId: "n1",
          now: T0,
          items: [{ scheduledFor: T0 + 5, readyAt: T0 }],
        });
        assert.equal(triggered?.state, "READY");
      });

      storeTest("with completeJob the job becomes COMPLETED, its last execution still runs", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        const created = await createOne(store, nj);
        const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next: null, completeJob: true }] });
        assert.equal(res.dispatched.length, 1);
        const job = await getJob(store, nj);
        assert.equal(job.state, "COMPLETED");
        assert.equal(job.nextRunAt, null);
        assert.ok(job.version > created.version, "the version grows on every change");
        assert.deepEqual(await store.dueLoad({ shards: [nj.job.shard], before: T0 + 10 * HOUR, limit: 10 }), []);
        assert.equal((await leaseOne(store, T0)).executionId, res.dispatched[0]!.executionId);
      });

      storeTest("dispatching the same entry twice: the second is stale and creates no second execution", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const last = cronJob();
        const cron = cronJob();
        await store.jobCreateMany({ nodeId: "n1", jobs: [last, cron], now: CREATED });
        const items = [
          { entry: entryOf(last), next: null },
          { entry: entryOf(cron), next: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR } },
        ];
        const first = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items });
        assert.equal(first.dispatched.length, 2);
        const again = await store.dispatchMany({ nodeId: "n1", epochs, now: T0 + 5, items });
        assert.deepEqual(again.dispatched, []);
        assert.deepEqual(new Set(again.stale), new Set([last.job.jobId, cron.job.jobId]));
        assert.deepEqual(again.fenced, []);
        assert.equal((await history(store, "t1", last.job.jobId)).length, 1);
        assert.equal((await history(store, "t1", cron.job.jobId)).length, 1);
        assert.equal(attemptOf(await history(store, "t1", last.job.jobId), executionIdFor(last.job.jobId, T0), 0).dispatchedAt, T0);
        assert.equal((await getJob(store, cron)).nextRunAt, T0 + HOUR, "the stale item did not advance the entry");
        assert.equal((await lease(store, T0 + 10)).length, 2);
      });

      storeTest("an entry whose job was cancelled (due removed) is stale", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        const [entry] = await store.dueLoad({ shards: [nj.job.shard], before: T0, limit: 10 });
        assert.ok(entry);
        await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 - 10 });
        const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry, next: null }] });
        assert.deepEqual(res.dispatched, []);
        assert.deepEqual(res.stale, [nj.job.jobId]);
        assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
        assert.equal((await getJob(store, nj)).state, "CANCELLED");
      });

      storeTest("an entry whose due moved to another time is stale, and the moved entry stays", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        const entry = entryOf(nj);
        await store.jobTransition({
          tenantId: "t1",
          jobId: nj.job.jobId,
          fromVersion: 1,
          state: "SCHEDULED",
          due: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR },
          now: T0 - 10,
        });
        const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry, next: null }] });
        assert.deepEqual(res.stale, [nj.job.jobId]);
        assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
        assert.equal((await getJob(store, nj)).nextRunAt, T0 + HOUR);
        assert.equal((await store.dueLoad({ shards: [nj.job.shard], before: T0 + HOUR, limit: 10 })).length, 1);
      });

      storeTest("an item whose shard epoch moved is fenced and nothing is written", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        const wrong = new Map(epochs);
        wrong.set(nj.job.shard, epochs.get(nj.job.shard)! + 1);
        const res = await store.dispatchMany({ nodeId: "n1", epochs: wrong, now: T0, items: [{ entry: entryOf(nj), next: null }] });
        assert.deepEqual(res.dispatched, []);
        assert.deepEqual(res.fenced, [nj.job.jobId]);
        assert.deepEqual(res.stale, []);
        assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
        assert.equal((await getJob(store, nj)).nextRunAt, T0);
        assert.equal((await store.dueLoad({ shards: [nj.job.shard], before: T0, limit: 10 })).length, 1);
        assert.deepEqual(await lease(store, T0), []);
      });

      storeTest("without completeJob the driver decides nothing: a cron job with no next occurrence stays SCHEDULED", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next: null }] });
        assert.equal((await getJob(store, nj)).state, "SCHEDULED");
      });

      storeTest("an item of a shard missing from epochs is fenced", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        const partial = new Map(epochs);
        partial.delete(nj.job.shard);
        const res = await store.dispatchMany({ nodeId: "n1", epochs: partial, now: T0, items: [{ entry: entryOf(nj), next: null }] });
        assert.deepEqual(res.fenced, [nj.job.jobId]);
        assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
        assert.equal((await getJob(store, nj)).nextRunAt, T0);
      });

      storeTest("after a takeover the old owner's epochs are fenced and the new owner dispatches", async (store) => {
        const old = await acquireAll(store, "old", T0 - HOUR, 10 * SECOND);
        const nj = cronJob();
        await createOne(store, nj);
        const taken = await acquireAll(store, "new", T0 - HOUR + 20 * SECOND, HOUR);
        assert.ok(taken.get(nj.job.shard)! > old.get(nj.job.shard)!);
        const fenced = await store.dispatchMany({ nodeId: "old", epochs: old, now: T0, items: [{ entry: entryOf(nj), next: null }] });
        assert.deepEqual(fenced.fenced, [nj.job.jobId]);
        assert.deepEqual(fenced.dispatched, []);
        const ok = await store.dispatchMany({ nodeId: "new", epochs: taken, now: T0, items: [{ entry: entryOf(nj), next: null }] });
        assert.equal(ok.dispatched.length, 1);
        assert.equal(attemptOf(await history(store, "t1", nj.job.jobId), ok.dispatched[0]!.executionId, 0).dispatchedBy, "new");
      });

      storeTest("one batch answers dispatched, stale and fenced items each on its own", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const fencedJob = cronJob();
        const good = jobOutsideShards(new Set([fencedJob.job.shard]), { ...CRON, tenantId: "t2", target: { type: "queue", pool: "p2" } });
        const staleJob = jobOutsideShards(new Set([fencedJob.job.shard]), CRON);
        await store.jobCreateMany({ nodeId: "n1", jobs: [fencedJob, good, staleJob], now: CREATED });
        await store.jobTransition({ tenantId: "t1", jobId: staleJob.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 - 1 });
        const wrong = new Map(epochs);
        wrong.set(fencedJob.job.shard, epochs.get(fencedJob.job.shard)! - 1);
        const res = await store.dispatchMany({
          nodeId: "n1",
          epochs: wrong,
          now: T0,
          items: [fencedJob, good, staleJob].map((nj) => ({ entry: entryOf(nj), next: null })),
        });
        assert.deepEqual(res.dispatched, [{ jobId: good.job.jobId, executionId: executionIdFor(good.job.jobId, T0), tenantId: "t2", pool: "p2" }]);
        assert.deepEqual(res.stale, [staleJob.job.jobId]);
        assert.deepEqual(res.fenced, [fencedJob.job.jobId]);
        assert.equal((await getJob(store, fencedJob)).nextRunAt, T0);
      });

      storeTest("an execution that already exists for (jobId, scheduledFor) is not inserted again", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs, CRON);
        const leased = await leaseOne(store, T0);
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 10 }))[0],
          "SUCCEEDED",
        );
        // Re-arm the same occurrence (e.g. a resume that recomputed the same time).
        const job = await getJob(store, r.nj);
        const rearmed = await store.jobTransition({
          tenantId: "t1",
          jobId: r.job.jobId,
          fromVersion: job.version,
          state: "SCHEDULED",
          due: { scheduledFor: T0, dueAt: T0 },
          now: T0 + 20,
        });
        assert.ok(rearmed);
        const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0 + 30, items: [{ entry: entryOf(r.nj), next: null }] });
        assert.deepEqual(res.stale, []);
        assert.deepEqual(res.fenced, []);
        const rows = await history(store, "t1", r.job.jobId);
        assert.equal(rows.length, 1, `one attempt, no new execution: ${JSON.stringify(rows)}`);
        const row = attemptOf(rows, r.executionId, leased.attempt);
        assert.equal(row.state, "SUCCEEDED");
        assert.equal(row.dispatchedAt, T0);
        assert.equal((await getJob(store, r.nj)).nextRunAt, null, "the entry was consumed");
        assert.deepEqual(await lease(store, T0 + 40), []);
      });
    });

    describe("dispatchMany: misfire and overlap plans", () => {
      storeTest("run picks another occurrence to execute and skipped ones are recorded SKIPPED with their reason", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        const runAt = T0 + 2 * HOUR;
        const res = await store.dispatchMany({
          nodeId: "n1",
          epochs,
          now: T0 + 2 * HOUR + MINUTE,
          items: [
            {
              entry: entryOf(nj),
              next: { scheduledFor: T0 + 3 * HOUR, dueAt: T0 + 3 * HOUR },
              run: runAt,
              skipped: [
                { scheduledFor: T0, reason: "misfire" },
                { scheduledFor: T0 + HOUR, reason: "misfire" },
              ],
            },
          ],
        });
        assert.deepEqual(
          res.dispatched.map((d) => d.executionId),
          [executionIdFor(nj.job.jobId, runAt)],
        );
        const rows = await history(store, "t1", nj.job.jobId);
        assert.deepEqual(
          rows.map((r) => [r.scheduledFor, r.state]),
          [
            [runAt, "READY"],
            [T0 + HOUR, "SKIPPED"],
            [T0, "SKIPPED"],
          ],
        );
        assert.equal(rows[2]!.error?.reason, "misfire");
        assert.equal((await lease(store, T0 + 3 * HOUR)).length, 1, "a SKIPPED execution was leased");
      });

      storeTest("run null executes nothing but still moves the due entry", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        const res = await store.dispatchMany({
          nodeId: "n1",
          epochs,
          now: T0,
          items: [{ entry: entryOf(nj), next: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR }, run: null }],
        });
        assert.deepEqual(res.dispatched, []);
        assert.equal((await getJob(store, nj)).nextRunAt, T0 + HOUR);
        assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
      });

      storeTest("overlap forbid records the run SKIPPED while an execution of the job is in flight", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
        await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next, overlap: "forbid" }] });
        const res = await store.dispatchMany({
          nodeId: "n1",
          epochs,
          now: T0 + HOUR,
          items: [{ entry: { ...entryOf(nj), ...next }, next: null, overlap: "forbid" }],
        });
        assert.deepEqual(res.dispatched, []);
        const rows = await history(store, "t1", nj.job.jobId);
        assert.deepEqual(
          rows.map((r) => [r.scheduledFor, r.state]),
          [
            [T0 + HOUR, "SKIPPED"],
            [T0, "READY"],
          ],
        );
        assert.equal(rows[0]!.error?.reason, "overlap");
      });

      storeTest("overlap replace cancels the in-flight executions, asks running ones to stop, and runs", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
        await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next, overlap: "replace" }] });
        const running = await leaseOne(store, T0, { leaseMs: 10 * HOUR });
        // the next occurrence's dispatch while the first still runs (inside its 300 s timeout)
        const res = await store.dispatchMany({
          nodeId: "n1",
          epochs,
          now: T0 + MINUTE,
          items: [{ entry: { ...entryOf(nj), ...next }, next: null, overlap: "replace" }],
        });
        assert.equal(res.dispatched.length, 1);
        const beat = await store.executionHeartbeat({ tenantId: "t1", executionId: running.executionId, attempt: 1, now: T0 + MINUTE });
        assert.deepEqual(beat.status === "ok" && beat.cancelRequested, true);
      });
    });

    describe("jobUpdate and executionsInWindow", () => {
      storeTest("jobUpdate replaces the definition at fromVersion and moves or keeps the due entry", async (store) => {
        const nj = cronJob({ name: "before" });
        await createOne(store, nj);
        const fields = {
          kind: "cron" as const,
          name: "renamed",
          target: { type: "queue" as const, pool: "p2" },
          payload: { n: 2 },
          schedule: { ...CRON_SCHEDULE },
          retry: RETRY,
          timeoutSeconds: 60,
          priority: 5,
          mode: "live" as const,
        };
        assert.equal(
          await store.jobUpdate({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 7, fields, due: "keep", nodeId: "n1", now: T0 }),
          null,
        );
        const updated = await store.jobUpdate({
          tenantId: "t1",
          jobId: nj.job.jobId,
          fromVersion: 1,
          fields,
          due: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR },
          nodeId: "n1",
          now: T0,
        });
        assert.ok(updated);
        assert.equal(updated.version, 2);
        assert.equal(updated.name, "renamed");
        assert.equal(updated.kind, "cron");
        assert.deepEqual(updated.target, { type: "queue", pool: "p2" });
        assert.equal(updated.nextRunAt, T0 + HOUR);
        const kept = await store.jobUpdate({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 2, fields, due: "keep", nodeId: "n1", now: T0 });
        assert.equal(kept?.nextRunAt, T0 + HOUR);
        assert.equal(
          await store.jobUpdate({ tenantId: "t2", jobId: nj.job.jobId, fromVersion: 3, fields, due: "keep", nodeId: "n1", now: T0 }),
          null,
        );
      });

      storeTest("executionsInWindow lists a job's executions with scheduledFor in [from, to]", async (store) => {
        const nj = cronJob();
        await createOne(store, nj);
        const items = [0, 1, 2, 3].map((i) => ({ scheduledFor: T0 + i * HOUR, readyAt: T0 }));
        await store.executionCreateMany({ tenantId: "t1", jobId: nj.job.jobId, nodeId: "n1", now: T0, items });
        const rows = await store.executionsInWindow({ tenantId: "t1", jobId: nj.job.jobId, from: T0 + HOUR, to: T0 + 2 * HOUR });
        assert.deepEqual(
          rows.map((r) => r.scheduledFor),
          [T0 + HOUR, T0 + 2 * HOUR],
        );
        assert.deepEqual(await store.executionsInWindow({ tenantId: "t2", jobId: nj.job.jobId, from: T0, to: T0 + 9 * HOUR }), []);
      });
    });

    describe("a one-off's pending execution (pause, resume, PATCH, cancel)", () => {
      /** The job at its current version, and one transition of it. */
      async function transition(
        store: Store,
        nj: NewJob,
        state: "PAUSED" | "SCHEDULED" | "CANCELLED",
        extra: Partial<Parameters<Store["jobTransition"]>[0]>,
        now = T0 - MINUTE,
      ) {
        const job = await getJob(store, nj);
        return store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: job.version, state, due: null, now, ...extra });
      }

      async function update(
        store: Store,
        nj: NewJob,
        fields: Partial<NewJob["job"]>,
        pending: { from: number | null; to: NextOccurrence | null },
        now = T0 - MINUTE,
      ) {
        const job = await getJob(store, nj);
        const { kind, name, target, payload, schedule, retry, timeoutSeconds, priority, mode } = { ...job, ...fields };
        return store.jobUpdate({
          tenantId: "t1",
          jobId: nj.job.jobId,
          fromVersion: job.version,
          fields: { kind, name, target, payload, schedule, retry, timeoutSeconds, priority, mode },
          due: kind === "cron" ? null : "keep",
          pending,
          nodeId: "n2",
          now,
        });
      }

      storeTest("hold makes it PAUSED: never leased, not counted, not the job's next run; release makes it READY from readyAt", async (store) => {
        const nj = newJob();
        await createOne(store, nj);
        const id = executionIdFor(nj.job.jobId, T0);
        const paused = await transition(store, nj, "PAUSED", { pending: { hold: T0 } });
        assert.equal(paused?.nextRunAt, null);
        assert.equal(paused?.nextDueAt, null);
        assert.equal(attemptOf(await history(store, "t1", nj.job.jobId), id, 0).state, "PAUSED");
        assert.deepEqual(await lease(store, T0 + HOUR), []);
        assert.deepEqual(nonZero(await store.poolCounts({ now: T0 + HOUR })), []);
        assert.equal(await store.executionNextReady({ pool: "p1", tenantId: "t1" }), null);
        const resumed = await transition(store, nj, "SCHEDULED", { pending: { release: { scheduledFor: T0, readyAt: T0 + HOUR } } }, T0 + 10);
        assert.equal(resumed?.nextRunAt, T0);
        assert.equal(resumed?.nextDueAt, T0 + HOUR);
        const row = attemptOf(await history(store, "t1", nj.job.jobId), id, 0);
        assert.equal(row.state, "READY");
        assert.equal(row.readyAt, T0 + HOUR);
        assert.deepEqual(await lease(store, T0 + HOUR - 1), []);
        assert.equal((await leaseOne(store, T0 + HOUR)).executionId, id);
      });

      storeTest("hold leaves an execution that started alone: a running attempt, or a retry waiting", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const running = await runningExecution(store, epochs);
        await transition(store, running.nj, "PAUSED", { pending: { hold: T0 } }, T0 + 1);
        const beat = await store.executionHeartbeat({ tenantId: "t1", executionId: running.executionId, attempt: 1, now: T0 + 2 });
        assert.equal(beat.status, "ok");
        const retrying = await runningExecution(store, epochs, { tenantId: "t2" });
        assertOk(
          (await store.executionFailMany({ items: [fail({ executionId: retrying.executionId, tenantId: "t2", attempt: 1 })], now: T0 + 3 }))[0],
          "READY",
        );
        const job = await store.jobGet({ tenantId: "t2", jobId: retrying.job.jobId });
        await store.jobTransition({
          tenantId: "t2",
          jobId: retrying.job.jobId,
          fromVersion: job!.version,
          state: "PAUSED",
          due: null,
          pending: { hold: T0 },
          now: T0 + 4,
        });
        assert.equal((await leaseOne(store, T0 + 3 + 10 * SECOND, { tenantId: "t2" })).attempt, 2, "the retry runs on");
      });

      storeTest("a version that moved writes nothing to the pending execution", async (store) => {
        const nj = newJob();
        await createOne(store, nj);
        assert.equal(
          await store.jobTransition({
            tenantId: "t1",
            jobId: nj.job.jobId,
            fromVersion: 9,
            state: "PAUSED",
            due: null,
            pending: { hold: T0 },
            now: T0 - 1,
          }),
          null,
        );
        assert.equal(
          await store.jobUpdate({
            tenantId: "t1",
            jobId: nj.job.jobId,
            fromVersion: 9,
            fields: nj.job,
            due: "keep",
            pending: { from: T0, to: null },
            nodeId: "n1",
            now: T0 - 1,
          }),
          null,
        );
        assert.equal((await leaseOne(store, T0)).executionId, executionIdFor(nj.job.jobId, T0));
      });

      storeTest("cancelExecutions ends a held execution CANCELLED; resuming cannot bring it back", async (store) => {
        const nj = newJob();
        await createOne(store, nj);
        await transition(store, nj, "PAUSED", { pending: { hold: T0 } });
        const cancelled = await transition(store, nj, "CANCELLED", { cancelExecutions: true });
        assert.equal(cancelled?.state, "CANCELLED");
        const row = attemptOf(await history(store, "t1", nj.job.jobId), executionIdFor(nj.job.jobId, T0), 0);
        assert.equal(row.state, "CANCELLED");
        await transition(store, nj, "SCHEDULED", { pending: { release: { scheduledFor: T0, readyAt: T0 } } });
        assert.deepEqual(await lease(store, T0 + HOUR), []);
      });

      storeTest(
        "a PATCH to a new time replaces it: a new id at the new time, from the new definition, created by the calling node",
        async (store) => {
          const nj = newJob({ at: T0 + HOUR });
          await createOne(store, nj);
          const to = { scheduledFor: T0 + 2 * HOUR, dueAt: T0 + 2 * HOUR };
          const updated = await update(
            store,
            nj,
            { target: { type: "queue", pool: "p2" }, payload: { n: 2 }, priority: 3, schedule: { runAt: iso(to.scheduledFor) } },
            { from: T0 + HOUR, to },
            T0 + 5,
          );
          assert.equal(updated?.nextRunAt, to.scheduledFor);
          const rows = await history(store, "t1", nj.job.jobId);
          assert.deepEqual(
            rows.map((r) => [r.executionId, r.state, r.readyAt, r.dispatchedAt, r.dispatchedBy]),
            [[executionIdFor(nj.job.jobId, to.scheduledFor), "READY", to.dueAt, T0 + 5, "n2"]],
          );
          assert.deepEqual(await lease(store, T0 + 3 * HOUR), [], "nothing left in the old pool");
          const leased = await leaseOne(store, to.dueAt, { pool: "p2" });
          assert.deepEqual(leased.payload, { n: 2 });
          assert.equal(leased.scheduledFor, to.scheduledFor);
        },
      );

      storeTest("a PATCH at the same time rebuilds it in place, so a new payload reaches it", async (store) => {
        const nj = newJob();
        await createOne(store, nj);
        await update(store, nj, { payload: { n: 42 } }, { from: T0, to: { scheduledFor: T0, dueAt: T0 } });
        const leased = await leaseOne(store, T0);
        assert.equal(leased.executionId, executionIdFor(nj.job.jobId, T0));
        assert.deepEqual(leased.payload, { n: 42 });
      });

      storeTest("a PATCH of a paused one-off keeps the replacement held", async (store) => {
        const nj = newJob();
        await createOne(store, nj);
        await transition(store, nj, "PAUSED", { pending: { hold: T0 } });
        const to = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
        await update(store, nj, { schedule: { runAt: iso(to.scheduledFor) } }, { from: T0, to });
        const rows = await history(store, "t1", nj.job.jobId);
        assert.deepEqual(
          rows.map((r) => [r.executionId, r.state]),
          [[executionIdFor(nj.job.jobId, to.scheduledFor), "PAUSED"]],
        );
        assert.deepEqual(await lease(store, T0 + 2 * HOUR), []);
      });

      storeTest("a PATCH replaces it only while it has not started: a running one stays, and nothing is added", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const to = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
        const updated = await update(store, r.nj, { schedule: { runAt: iso(to.scheduledFor) } }, { from: T0, to }, T0 + 1);
        assert.ok(updated, "the job itself changes");
        const rows = await history(store, "t1", r.job.jobId);
        assert.deepEqual(
          rows.map((x) => [x.executionId, x.state]),
          [[r.executionId, "RUNNING"]],
        );
        assert.deepEqual(await lease(store, T0 + 2 * HOUR), []);
      });

      storeTest("a change of kind moves the occurrence: a one-off turned recurring loses its pending execution, and back", async (store) => {
        const nj = newJob();
        await createOne(store, nj);
        await update(store, nj, { kind: "cron", schedule: { ...CRON_SCHEDULE } }, { from: T0, to: null });
        assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
        const to = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
        const back = await update(store, nj, { kind: "once", schedule: { runAt: iso(to.scheduledFor) } }, { from: null, to });
        assert.equal(back?.nextRunAt, to.scheduledFor);
        assert.equal((await leaseOne(store, to.dueAt)).executionId, executionIdFor(nj.job.jobId, to.scheduledFor));
      });

      storeTest("a one-off ended by a triggered execution drops its pending execution", async (store) => {
        const nj = newJob({ at: T0 + HOUR });
        await createOne(store, nj);
        const [triggered] = await store.executionCreateMany({
          tenantId: "t1",
          jobId: nj.job.jobId,
          nodeId: "n1",
          now: T0,
          items: [{ scheduledFor: T0, readyAt: T0 }],
        });
        assert.ok(triggered);
        const leased = await leaseOne(store, T0);
        assert.equal(leased.executionId, triggered.executionId);
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: leased.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 1 }))[0],
          "SUCCEEDED",
        );
        const job = await getJob(store, nj);
        assert.equal(job.state, "COMPLETED");
        assert.equal(job.nextRunAt, null);
        assert.deepEqual(
          (await history(store, "t1", nj.job.jobId)).map((r) => r.executionId),
          [triggered.executionId],
        );
        assert.deepEqual(await lease(store, T0 + 2 * HOUR), []);
      });
    });

    describe("executionCreateMany", () => {
      storeTest("creates READY executions with the given scheduledFor and readyAt (trigger, backfill)", async (store) => {
        const nj = cronJob({ at: T0 + HOUR });
        await createOne(store, nj);
        const at = T0 + 5 * SECOND;
        const [row] = await store.executionCreateMany({
          tenantId: "t1",
          jobId: nj.job.jobId,
          nodeId: "n7",
          now: at,
          items: [{ scheduledFor: at, readyAt: at }],
        });
        assert.ok(row);
        assert.equal(row.executionId, executionIdFor(nj.job.jobId, at));
        assert.equal(row.jobId, nj.job.jobId);
        assert.equal(row.scheduledFor, at);
        assert.equal(row.attempt, 0);
        assert.equal(row.state, "READY");
        assert.equal(row.readyAt, at);
        assert.equal(row.dispatchedAt, at);
        assert.equal(row.dispatchedBy, "n7");
        assert.equal(row.startedAt, null);
        assert.equal(row.finishedAt, null);
        assert.deepEqual(await history(store, "t1", nj.job.jobId), [row]);
        const leased = await leaseOne(store, at);
        assert.equal(leased.executionId, row.executionId);
        assert.equal(leased.scheduledFor, at);
        const job = await getJob(store, nj);
        assert.equal(job.nextRunAt, T0 + HOUR, "a trigger leaves the schedule alone");
        assert.equal(job.state, "SCHEDULED");
      });

      storeTest("an occurrence that has an execution already answers null; the others are created, ready when asked", async (store) => {
        const nj = cronJob({ at: T0 + HOUR });
        await createOne(store, nj);
        const items = [1, 2, 3].map((i) => ({ scheduledFor: T0 - i * HOUR, readyAt: T0 + i * SECOND }));
        const first = await store.executionCreateMany({ tenantId: "t1", jobId: nj.job.jobId, nodeId: "n1", now: T0, items: items.slice(0, 1) });
        assert.ok(first[0]);
        const again = await store.executionCreateMany({ tenantId: "t1", jobId: nj.job.jobId, nodeId: "n1", now: T0, items });
        assert.equal(again[0], null);
        assert.ok(again[1] && again[2]);
        assert.equal(again[2]!.readyAt, T0 + 3 * SECOND);
        assert.equal((await lease(store, T0 + 1 * SECOND)).length, 1, "only the first is ready at T0 + 1 s");
        assert.equal((await lease(store, T0 + 3 * SECOND)).length, 2);
      });

      storeTest("answers null for another tenant's job or an unknown job", async (store) => {
        const nj = cronJob();
        await createOne(store, nj);
        const item = [{ scheduledFor: T0, readyAt: T0 }];
        assert.deepEqual(await store.executionCreateMany({ tenantId: "t2", jobId: nj.job.jobId, nodeId: "n1", now: T0, items: item }), [null]);
        assert.deepEqual(await store.executionCreateMany({ tenantId: "t1", jobId: newId(T0), nodeId: "n1", now: T0, items: item }), [null]);
        assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
        assert.deepEqual(await lease(store, T0), []);
      });
    });

    describe("executionLease", () => {
      storeTest("grants attempt 1 with leaseUntil = now + leaseMs, returning payload, target, name, scheduledFor and timeout", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs, { name: "send-mail", payload: { to: "a@b.c", n: [1, 2] }, timeoutSeconds: 120 });
        const rows = await lease(store, T0 + 100, { leaseMs: 20 * SECOND, workerId: "w9" });
        assert.equal(rows.length, 1);
        // The token is the store's own (absent where grants are durable before they answer): opaque, as the wire allows it.
        const { leaseToken, ...row } = rows[0]!;
        if (leaseToken !== undefined) assert.match(leaseToken, /^[0-9A-Za-z._~-]{1,64}$/);
        assert.deepEqual(row, {
          executionId: r.executionId,
          tenantId: "t1",
          jobId: r.job.jobId,
          name: "send-mail",
          attempt: 1,
          retry: false,
          payload: { to: "a@b.c", n: [1, 2] },
          scheduledFor: T0,
          leaseUntil: T0 + 100 + 20 * SECOND,
          timeoutSeconds: 120,
          target: { type: "queue", pool: "p1" },
        });
      });

      storeTest("leases at most max executions", async (store) => {
        const epochs = await acquireAll(store, "n1");
        for (let i = 0; i < 5; i++) await readyExecution(store, epochs);
        assert.equal((await lease(store, T0, { max: 3 })).length, 3);
        assert.equal((await lease(store, T0, { max: 3 })).length, 2);
        assert.equal((await lease(store, T0, { max: 3 })).length, 0);
      });

      storeTest("leases only executions with readyAt <= now", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const outcome = await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })],
          now: T0,
        });
        assertOk(outcome[0], "READY");
        assert.deepEqual(await lease(store, T0 + 10 * SECOND - 1), []);
        const leased = await leaseOne(store, T0 + 10 * SECOND);
        assert.equal(leased.executionId, r.executionId);
      });

      storeTest("leases higher priority first, then earlier readyAt", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const a = await readyExecution(store, epochs, { priority: 0, at: T0 });
        const b = await readyExecution(store, epochs, { priority: 5, at: T0 + 1000 });
        const c = await readyExecution(store, epochs, { priority: 5, at: T0 + 2000 });
        const d = await readyExecution(store, epochs, { priority: 0, at: T0 - 1000 });
        const e = await readyExecution(store, epochs, { priority: -1, at: T0 - 5000 });
        const order: string[] = [];
        for (let i = 0; i < 5; i++) order.push((await leaseOne(store, T0 + 5000)).executionId);
        assert.deepEqual(
          order,
          [b, c, d, a, e].map((x) => x.executionId),
        );
      });

      storeTest(
        "an execution not yet due never stands in the way: a due lower-priority one is leased past a future higher-priority one",
        async (store) => {
          const future = newJob({ at: T0 + HOUR, priority: 50 });
          const due = newJob({ at: T0, priority: -50 });
          await store.jobCreateMany({ nodeId: "n1", jobs: [future, due], now: CREATED });
          const leased = await lease(store, T0, { max: 10 });
          assert.deepEqual(
            leased.map((r) => r.jobId),
            [due.job.jobId],
          );
        },
      );

      storeTest("a batch takes the highest-priority executions", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const low = await readyExecution(store, epochs, { priority: 1, at: T0 - 3000 });
        const high = await readyExecution(store, epochs, { priority: 9, at: T0 });
        const mid = await readyExecution(store, epochs, { priority: 4, at: T0 - 1000 });
        const rows = await lease(store, T0, { max: 2 });
        assert.deepEqual(new Set(rows.map((r) => r.executionId)), new Set([high.executionId, mid.executionId]));
        assert.equal((await leaseOne(store, T0)).executionId, low.executionId);
      });

      storeTest("caps the lease at start + timeoutSeconds", async (store) => {
        const epochs = await acquireAll(store, "n1");
        await readyExecution(store, epochs, { timeoutSeconds: 60 });
        const leased = await leaseOne(store, T0 + 7, { leaseMs: 10 * MINUTE });
        assert.equal(leased.leaseUntil, T0 + 7 + 60 * SECOND);
      });

      storeTest("graceMs extends the deadline: the lease ends at min(now + leaseMs, now + timeout + graceMs)", async (store) => {
        const epochs = await acquireAll(store, "n1");
        await readyExecution(store, epochs, { timeoutSeconds: 60 });
        const rows = await store.executionLease({ pool: "p1", workerId: "w1", max: 1, leaseMs: 10 * MINUTE, graceMs: 5 * SECOND, now: T0 });
        assert.equal(rows[0]?.leaseUntil, T0 + 65 * SECOND);
        await readyExecution(store, epochs, { timeoutSeconds: 60 });
        const short = await store.executionLease({ pool: "p1", workerId: "w1", max: 1, leaseMs: 20 * SECOND, graceMs: 5 * SECOND, now: T0 });
        assert.equal(short[0]?.leaseUntil, T0 + 20 * SECOND);
      });

      storeTest("leases only from the given pool", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const p1 = await readyExecution(store, epochs);
        const p2 = await readyExecution(store, epochs, { target: { type: "queue", pool: "p2" } });
        assert.deepEqual(await lease(store, T0, { pool: "p3" }), []);
        assert.deepEqual(
          (await lease(store, T0, { pool: "p2" })).map((r) => r.executionId),
          [p2.executionId],
        );
        assert.deepEqual(
          (await lease(store, T0, { pool: "p1" })).map((r) => r.executionId),
          [p1.executionId],
        );
        assert.deepEqual(await lease(store, T0, { pool: HTTP_POOL }), []);
      });

      storeTest("filters by tenant, or leases across all tenants when tenantId is absent", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const t1 = await readyExecution(store, epochs, { tenantId: "t1" });
        const t2 = await readyExecution(store, epochs, { tenantId: "t2" });
        const t3 = await readyExecution(store, epochs, { tenantId: "t3" });
        const t2rows = await lease(store, T0, { tenantId: "t2" });
        assert.deepEqual(
          t2rows.map((r) => [r.executionId, r.tenantId]),
          [[t2.executionId, "t2"]],
        );
        assert.deepEqual(await lease(store, T0, { tenantId: "t9" }), []);
        const rest = await lease(store, T0);
        assert.deepEqual(new Set(rest.map((r) => r.executionId)), new Set([t1.executionId, t3.executionId]));
      });

      storeTest("a leased execution is not leased again while it runs", async (store) => {
        const epochs = await acquireAll(store, "n1");
        await runningExecution(store, epochs);
        assert.deepEqual(await lease(store, T0, { workerId: "w2" }), []);
        assert.deepEqual(await lease(store, T0 + LEASE_MS - 1, { workerId: "w2" }), []);
      });

      storeTest("each grant is a new attempt: 1, then 2 after its lease is reaped", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        assert.equal(r.leased.attempt, 1);
        const expiredAt = T0 + LEASE_MS + 1;
        assert.deepEqual(await lease(store, expiredAt), [], "an expired RUNNING attempt is not leased before the reaper frees it");
        await store.executionReap({ now: expiredAt, limit: 10 });
        const second = await leaseOne(store, expiredAt);
        assert.equal(second.executionId, r.executionId);
        assert.equal(second.attempt, 2);
      });

      storeTest("history shows the RUNNING attempt with its workerId and startedAt", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs);
        await leaseOne(store, T0 + 50, { workerId: "worker-x" });
        const rows = await history(store, "t1", r.job.jobId);
        assert.equal(rows.length, 1, "attempt 0 gives way to attempt 1");
        const row = attemptOf(rows, r.executionId, 1);
        assert.equal(row.state, "RUNNING");
        assert.equal(row.workerId, "worker-x");
        assert.equal(row.startedAt, T0 + 50);
        assert.equal(row.finishedAt, null);
        assert.equal(row.error, null);
      });
    });

    describe("executionNextReady", () => {
      storeTest(
        "answers the earliest readyAt of a pool's READY executions, one tenant's or all, across priorities; null when none",
        async (store) => {
          assert.equal(await store.executionNextReady({ pool: "p1", tenantId: "t1" }), null);
          await store.jobCreateMany({
            nodeId: "n1",
            jobs: [
              newJob({ at: T0 + 3 * HOUR, priority: 9 }),
              newJob({ at: T0 + 2 * HOUR, priority: -4 }),
              newJob({ at: T0 + HOUR, tenantId: "t2" }),
              newJob({ at: T0 + MINUTE, target: { type: "queue", pool: "other" } }),
            ],
            now: CREATED,
          });
          assert.equal(await store.executionNextReady({ pool: "p1", tenantId: "t1" }), T0 + 2 * HOUR);
          assert.equal(await store.executionNextReady({ pool: "p1" }), T0 + HOUR);
          assert.equal(await store.executionNextReady({ pool: "p1", tenantId: "t3" }), null);
          assert.equal(await store.executionNextReady({ pool: "other", tenantId: "t1" }), T0 + MINUTE);
        },
      );

      storeTest("counts only READY executions: a running one, or the HTTP runner's pool across tenants", async (store) => {
        await createOne(store, newJob({ at: T0 }));
        await leaseOne(store, T0);
        assert.equal(await store.executionNextReady({ pool: "p1", tenantId: "t1" }), null);
        const target: Target = { type: "http", url: "https://example.com/hook", method: "POST", headers: {} };
        await store.jobCreateMany({
          nodeId: "n1",
          jobs: [newJob({ at: T0 + HOUR, target }), newJob({ at: T0 + MINUTE, tenantId: "t2", target })],
          now: CREATED,
        });
        assert.equal(await store.executionNextReady({ pool: HTTP_POOL }), T0 + MINUTE);
      });
    });

    describe("executionLease across tenants (fair leasing)", () => {
      /** n one-offs of a tenant in pool p1, due at `at`, created in one call. */
      const backlog = async (store: Store, tenantId: string, n: number, o: JobOverrides = {}) => {
        const jobs = Array.from({ length: n }, () => newJob({ tenantId, ...o }));
        await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
        return jobs.map((j) => j.job.jobId);
      };
      const byTenant = (rows: LeasedRow[]) => {
        const counts: Record<string, number> = {};
        for (const r of rows) counts[r.tenantId] = (counts[r.tenantId] ?? 0) + 1;
        return counts;
      };

      storeTest("one tenant's flood does not hold another's work back: each backlogged tenant gets an equal share", async (store) => {
        await backlog(store, "flood", 200);
        await backlog(store, "small", 10, { at: T0 + SECOND });
        assert.deepEqual(byTenant(await lease(store, T0 + SECOND, { max: 10 })), { flood: 5, small: 5 });
        assert.deepEqual(byTenant(await lease(store, T0 + SECOND, { max: 10 })), { flood: 5, small: 5 });
        // small has none left: flood takes the whole batch
        assert.deepEqual(byTenant(await lease(store, T0 + SECOND, { max: 10 })), { flood: 10 });
      });

      storeTest("priority orders a tenant's own work and cannot jump other tenants", async (store) => {
        const high = await backlog(store, "a", 6, { priority: 100 });
        await backlog(store, "a", 6, { priority: 0 });
        await backlog(store, "b", 6, { priority: -5 });
        const rows = await lease(store, T0, { max: 6 });
        assert.deepEqual(byTenant(rows), { a: 3, b: 3 });
        assert.ok(
          rows.filter((r) => r.tenantId === "a").every((r) => high.includes(r.jobId)),
          "a's share is its highest-priority work",
        );
      });

      storeTest("weights share a pool in proportion (3:1)", async (store) => {
        await store.tenantLimitsPut({ tenantId: "heavy", limits: { ...DEFAULT_TENANT_LIMITS, weight: 3 }, now: CREATED });
        await backlog(store, "heavy", 400);
        await backlog(store, "light", 400);
        const leased: LeasedRow[] = [];
        for (let i = 0; i < 8; i++) leased.push(...(await lease(store, T0, { max: 50 })));
        const counts = byTenant(leased);
        assert.equal(leased.length, 400);
        assert.ok(Math.abs((counts.heavy ?? 0) / (counts.light ?? 1) - 3) <= 0.3, `3:1 within 10%, got ${JSON.stringify(counts)}`);
        assert.deepEqual(await store.tenantLimitsGet({ tenantId: "heavy" }), { ...DEFAULT_TENANT_LIMITS, weight: 3 });
        assert.equal(await store.tenantLimitsGet({ tenantId: "light" }), null);
      });

      storeTest("a tenant with no work due gains no credit: when its work comes, it shares, it does not take over", async (store) => {
        await backlog(store, "busy", 300);
        for (let i = 0; i < 5; i++) await lease(store, T0, { max: 20 }); // busy alone: 100 leased
        await backlog(store, "late", 100, { at: T0 + MINUTE });
        const counts = byTenant(await lease(store, T0 + MINUTE, { max: 20 }));
        assert.deepEqual(counts, { busy: 10, late: 10 });
      });

      storeTest("a tenant whose work is not due yet sleeps, and wakes when its work falls due", async (store) => {
        await backlog(store, "now", 5);
        const [later] = await backlog(store, "later", 1, { at: T0 + HOUR });
        assert.deepEqual(byTenant(await lease(store, T0, { max: 10 })), { now: 5 });
        assert.deepEqual(await lease(store, T0 + HOUR - 1, { max: 10 }), []);
        const rows = await lease(store, T0 + HOUR, { max: 10 });
        assert.deepEqual(
          rows.map((r) => r.jobId),
          [later],
        );
      });

      storeTest("work that becomes READY again wakes its tenant: a retry, and a job created while the tenant slept", async (store) => {
        const [first] = await backlog(store, "t2", 1);
        const [leased] = await lease(store, T0, { max: 10 });
        assert.equal(leased?.jobId, first);
        assert.deepEqual(await lease(store, T0, { max: 10 }), []); // t2 has nothing due: it sleeps
        const failed = await store.executionFailMany({ items: [fail({ executionId: leased!.executionId, tenantId: "t2", attempt: 1 })], now: T0 });
        assertOk(failed[0], "READY"); // its retry is due at T0 + 10 s
        assert.deepEqual(
          (await lease(store, T0 + 10 * SECOND, { max: 10 })).map((r) => r.jobId),
          [first],
        );
        assert.deepEqual(await lease(store, T0 + 10 * SECOND, { max: 10 }), []); // asleep again
        const [created] = await backlog(store, "t2", 1, { at: T0 + 20 * SECOND });
        assert.deepEqual(
          (await lease(store, T0 + 20 * SECOND, { max: 10 })).map((r) => r.jobId),
          [created],
        );
      });

      storeTest("many tenants: each lease serves a few, and every tenant is served in turn", async (store) => {
        const tenants = Array.from({ length: 40 }, (_, i) => `t${String(i).padStart(2, "0")}`);
        for (const t of tenants) await backlog(store, t, 3);
        const served = new Set<string>();
        for (let i = 0; i < 5; i++) for (const r of await lease(store, T0, { max: 8 })) served.add(r.tenantId);
        assert.equal(served.size, 40, "40 leases of 8 across 40 tenants reach every tenant");
      });

      storeTest("maxLeasedAttempts caps a tenant's RUNNING attempts, in its own leases and across tenants", async (store) => {
        await store.tenantLimitsPut({ tenantId: "capped", limits: { ...DEFAULT_TENANT_LIMITS, maxLeasedAttempts: 3 }, now: CREATED });
        await backlog(store, "capped", 10);
        await backlog(store, "free", 10);
        assert.deepEqual(byTenant(await lease(store, T0, { max: 2, tenantId: "capped" })), { capped: 2 });
        assert.deepEqual(byTenant(await lease(store, T0, { max: 10 })), { capped: 1, free: 9 }, "across tenants, capped gets what is left of its 3");
        assert.deepEqual(await lease(store, T0, { max: 10, tenantId: "capped" }), [], "3 RUNNING: nothing more");
        assert.equal(await store.jobCountPending({ tenantId: "capped" }), 10, "leased one-offs are still pending jobs");
        await store.tenantLimitsPut({ tenantId: "capped", limits: DEFAULT_TENANT_LIMITS, now: CREATED });
        assert.equal((await lease(store, T0, { max: 10, tenantId: "capped" })).length, 7);
      });

      storeTest(
        "dispatchRatePerSecond spreads a tenant's work over the following seconds, in order, and records the wait on each attempt",
        async (store) => {
          await store.tenantLimitsPut({ tenantId: "herd", limits: { ...DEFAULT_TENANT_LIMITS, dispatchRatePerSecond: 5 }, now: CREATED });
          // 20 due by T0, in order a millisecond apart.
          const herd: string[] = [];
          for (let i = 0; i < 20; i++) herd.push(...(await backlog(store, "herd", 1, { at: T0 - 20 + i })));
          await backlog(store, "free", 10);
          const first = await lease(store, T0, { max: 30 });
          assert.deepEqual(byTenant(first), { herd: 5, free: 10 }, "a burst of one second's worth, the others unaffected");
          assert.deepEqual(await lease(store, T0 + 100, { max: 30 }), [], "nothing until the rate allows");
          const second = await lease(store, T0 + SECOND, { max: 30 });
          const third = await lease(store, T0 + SECOND + 400, { max: 30, tenantId: "herd" });
          assert.equal(second.length, 5, "a second later: five more");
          assert.equal(third.length, 2, "in its own lease too: 0.4 s at 5/s");
          const order = [...first, ...second, ...third].filter((r) => r.tenantId === "herd").map((r) => r.jobId);
          assert.deepEqual(order, herd.slice(0, 12), "in order");

          const attempt = async (jobId: string) => (await history(store, "herd", jobId)).find((h) => h.attempt === 1);
          assert.equal((await attempt(herd[0]!))?.throttledMs, undefined, "the first burst waited for nothing");
          assert.equal((await attempt(herd[5]!))?.throttledMs, SECOND, "held back from T0, when the rate first left it waiting");
          const failed = await store.executionFailMany({
            items: [fail({ executionId: second[0]!.executionId, tenantId: "herd", attempt: 1 })],
            now: T0 + 2 * SECOND,
          });
          assertOk(failed[0], "READY");
          assert.equal((await attempt(second[0]!.jobId))?.throttledMs, SECOND, "kept with the attempt once it ended");
          assert.equal((await attempt(herd[11]!))?.throttledMs, SECOND + 400);
          assert.equal((await history(store, "free", first.find((r) => r.tenantId === "free")!.jobId))[0]?.throttledMs, undefined);

          // Drained at its rate (the failed one's retry too), the lane is no longer throttled: later work waits for nothing.
          for (let at = T0 + 2 * SECOND; at <= T0 + 20 * SECOND; at += SECOND) await lease(store, at, { max: 30 });
          const [late] = await backlog(store, "herd", 1, { at: T0 + HOUR });
          assert.deepEqual(
            (await lease(store, T0 + HOUR, { max: 30 })).map((r) => r.jobId),
            [late],
          );
          assert.equal((await attempt(late!))?.throttledMs, undefined);
        },
      );

      storeTest("a tenant's own lease is not fair-shared: it takes its work by priority", async (store) => {
        await backlog(store, "t1", 5);
        await backlog(store, "t2", 5);
        assert.deepEqual(byTenant(await lease(store, T0, { max: 10, tenantId: "t2" })), { t2: 5 });
      });
    });

    describe("acks of any tenant (tenantId null: a platform worker)", () => {
      storeTest("heartbeat, complete and fail reach any tenant's attempt; a tenant's call still reaches only its own", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const a = await runningExecution(store, epochs, { tenantId: "ta" });
        const b = await runningExecution(store, epochs, { tenantId: "tb" });
        const beat = await store.executionHeartbeat({ tenantId: null, executionId: a.executionId, attempt: 1, now: T0 + SECOND });
        assert.equal(beat.status, "ok");
        const other = await store.executionHeartbeat({ tenantId: "tb", executionId: a.executionId, attempt: 1, now: T0 + SECOND });
        assert.equal(other.status, "not_found");
        assert.deepEqual(
          await store.executionCompleteMany({ items: [{ executionId: a.executionId, tenantId: null, attempt: 1 }], now: T0 + SECOND }),
          [{ status: "ok", state: "SUCCEEDED", pool: "p1", tenantId: "ta" }],
        );
        const [failed] = await store.executionFailMany({
          items: [fail({ executionId: b.executionId, tenantId: null, attempt: 1 })],
          now: T0 + SECOND,
        });
        assertOk(failed, "READY");
        assert.equal(failed?.status === "ok" && failed.tenantId, "tb");
        const [stale] = await store.executionCompleteMany({ items: [{ executionId: b.executionId, tenantId: null, attempt: 1 }], now: T0 + SECOND });
        assert.equal(stale?.status, "lost", "the fence is the attempt and its lease, with or without a tenant");
      });
    });

    describe("executionHeartbeat", () => {
      storeTest("extends the lease to now + leaseMs", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const hb = await store.executionHeartbeat({
          tenantId: "t1",
          executionId: r.executionId,
          attempt: 1,
          leaseMs: 90 * SECOND,
          now: T0 + 20 * SECOND,
        });
        assert.deepEqual(hb, { status: "ok", leaseUntil: T0 + 110 * SECOND, cancelRequested: false });
        // The extended lease holds: not reaped, still completable past the old deadline.
        assert.deepEqual(await store.executionReap({ now: T0 + 100 * SECOND, limit: 10 }), []);
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 100 * SECOND }))[0],
          "SUCCEEDED",
        );
      });

      storeTest("without leaseMs extends by the lease's original length", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs); // leased at T0 for 30 s
        const hb = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 10 * SECOND });
        assert.deepEqual(hb, { status: "ok", leaseUntil: T0 + 40 * SECOND, cancelRequested: false });
        const hb2 = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 35 * SECOND });
        assert.ok(hb2.status === "ok");
        assert.equal(hb2.leaseUntil, T0 + 65 * SECOND);
      });

      storeTest("never extends past start + timeoutSeconds", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs, { timeoutSeconds: 60 });
        const hb = await store.executionHeartbeat({
          tenantId: "t1",
          executionId: r.executionId,
          attempt: 1,
          leaseMs: 10 * MINUTE,
          now: T0 + 20 * SECOND,
        });
        assert.ok(hb.status === "ok");
        assert.equal(hb.leaseUntil, T0 + 60 * SECOND);
      });

      storeTest("never extends past the deadline that graceMs set at lease time", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs, { timeoutSeconds: 60 });
        await store.executionLease({ pool: "p1", workerId: "w1", max: 1, leaseMs: 20 * SECOND, graceMs: 5 * SECOND, now: T0 });
        const hb = await store.executionHeartbeat({
          tenantId: "t1",
          executionId: r.executionId,
          attempt: 1,
          leaseMs: 10 * MINUTE,
          now: T0 + 15 * SECOND,
        });
        assert.ok(hb.status === "ok");
        assert.equal(hb.leaseUntil, T0 + 65 * SECOND);
      });

      storeTest("a wrong attempt answers lost", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        assert.deepEqual(unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 2, now: T0 + SECOND })), {
          status: "lost",
        });
        assert.deepEqual(unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 0, now: T0 + SECOND })), {
          status: "lost",
        });
      });

      storeTest("after the lease expired (now > leaseUntil) answers lost, even before the reaper ran", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        assert.deepEqual(
          unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + LEASE_MS + 1 })),
          {
            status: "lost",
          },
        );
        // Losing changed nothing: the reaper still finds the expired attempt.
        const reaped = await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
        assert.deepEqual(
          reaped.map((x) => x.executionId),
          [r.executionId],
        );
      });

      storeTest("the lease holds up to and including leaseUntil: heartbeat and complete at exactly leaseUntil succeed", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const hb = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, leaseMs: LEASE_MS, now: T0 + LEASE_MS });
        assert.deepEqual(hb, { status: "ok", leaseUntil: T0 + 2 * LEASE_MS, cancelRequested: false });
        assert.deepEqual(await store.executionReap({ now: T0 + 2 * LEASE_MS, limit: 10 }), []);
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 2 * LEASE_MS }))[0],
          "SUCCEEDED",
        );
      });

      storeTest("a finished attempt answers lost", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + SECOND });
        assert.deepEqual(unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 2 * SECOND })), {
          status: "lost",
        });
      });

      storeTest("another tenant's or an unknown execution answers not_found", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        assert.deepEqual(await store.executionHeartbeat({ tenantId: "t2", executionId: r.executionId, attempt: 1, now: T0 + SECOND }), {
          status: "not_found",
        });
        assert.deepEqual(
          await store.executionHeartbeat({ tenantId: "t1", executionId: executionIdFor(newId(T0), T0), attempt: 1, now: T0 + SECOND }),
          { status: "not_found" },
        );
        // The other tenant's call changed nothing.
        const hb = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 2 * SECOND });
        assert.equal(hb.status, "ok");
      });
    });

    describe("executionCompleteMany", () => {
      storeTest(
        "one batch naming the same execution twice answers each item by its own attempt: the holder succeeds, a stale one is lost",
        async (store) => {
          const epochs = await acquireAll(store, "n1");
          const r = await runningExecution(store, epochs);
          const outcomes = await store.executionCompleteMany({
            items: [
              { executionId: r.executionId, tenantId: "t1", attempt: 1 },
              { executionId: r.executionId, tenantId: "t1", attempt: 9 },
            ],
            now: T0 + SECOND,
          });
          assert.deepEqual(
            unmarked(outcomes).map((o) => (o.status === "ok" ? o.state : o.status)),
            ["SUCCEEDED", "lost"],
          );
        },
      );
      storeTest("succeeds a running attempt; a one-off job becomes COMPLETED with its version bumped", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const before = await getJob(store, r.nj);
        const [outcome] = await store.executionCompleteMany({
          items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1, result: { ok: true } }],
          now: T0 + 5 * SECOND,
        });
        assertOk(outcome, "SUCCEEDED");
        const job = await getJob(store, r.nj);
        assert.equal(job.state, "COMPLETED");
        assert.ok(job.version > before.version, "version bumped");
        assert.equal(job.updatedAt, T0 + 5 * SECOND);
        const row = attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1);
        assert.equal(row.state, "SUCCEEDED");
        assert.equal(row.finishedAt, T0 + 5 * SECOND);
        assert.equal(row.error, null);
        assert.deepEqual(await lease(store, T0 + HOUR), []);
      });

      storeTest("a cron job stays SCHEDULED when an occurrence succeeds", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(
          store,
          epochs,
          { kind: "cron", schedule: { ...CRON_SCHEDULE } },
          { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR },
        );
        await leaseOne(store, T0);
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + SECOND }))[0],
          "SUCCEEDED",
        );
        const job = await getJob(store, r.nj);
        assert.equal(job.state, "SCHEDULED");
        assert.equal(job.nextRunAt, T0 + HOUR);
      });

      storeTest("repeating the same complete answers ok again and changes nothing", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const item = { executionId: r.executionId, tenantId: "t1", attempt: 1 };
        assertOk((await store.executionCompleteMany({ items: [item], now: T0 + SECOND }))[0], "SUCCEEDED");
        const job = await getJob(store, r.nj);
        const rows = await history(store, "t1", r.job.jobId);
        assertOk((await store.executionCompleteMany({ items: [item], now: T0 + 2 * SECOND }))[0], "SUCCEEDED");
        assert.deepEqual(await getJob(store, r.nj), job);
        assert.deepEqual(await history(store, "t1", r.job.jobId), rows);
      });

      storeTest("a stale attempt answers lost and changes nothing", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
        const second = await leaseOne(store, T0 + LEASE_MS + 2);
        assert.equal(second.attempt, 2);
        const [outcome] = await store.executionCompleteMany({
          items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }],
          now: T0 + LEASE_MS + 3,
        });
        assert.deepEqual(unmarked(outcome), { status: "lost" });
        const job = await getJob(store, r.nj);
        assert.equal(job.state, "SCHEDULED");
        const rows = await history(store, "t1", r.job.jobId);
        assert.equal(attemptOf(rows, r.executionId, 1).state, "TIMED_OUT");
        assert.equal(attemptOf(rows, r.executionId, 2).state, "RUNNING");
        // The holder of the lease can still complete.
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 2 }], now: T0 + LEASE_MS + 4 }))[0],
          "SUCCEEDED",
        );
      });

      storeTest("an expired lease answers lost, even before the reaper ran", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const [outcome] = await store.executionCompleteMany({
          items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }],
          now: T0 + LEASE_MS + 1,
        });
        assert.deepEqual(unmarked(outcome), { status: "lost" });
        assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
        assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING");
      });

      storeTest("a READY execution that was never leased cannot be completed", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs);
        const [outcome] = await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 });
        assert.deepEqual(unmarked(outcome), { status: "lost" });
        assert.equal((await leaseOne(store, T0)).attempt, 1);
      });

      storeTest("an unknown or another tenant's execution answers not_found", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const outcomes = await store.executionCompleteMany({
          items: [
            { executionId: executionIdFor(newId(T0), T0), tenantId: "t1", attempt: 1 },
            { executionId: r.executionId, tenantId: "t2", attempt: 1 },
          ],
          now: T0 + SECOND,
        });
        assert.deepEqual(outcomes, [{ status: "not_found" }, { status: "not_found" }]);
        assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING");
      });

      storeTest("answers a mixed batch item by item, in order", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const a = await readyExecution(store, epochs);
        const b = await readyExecution(store, epochs);
        const c = await readyExecution(store, epochs);
        await lease(store, T0, { max: 3 });
        const outcomes = await store.executionCompleteMany({
          items: [
            { executionId: b.executionId, tenantId: "t1", attempt: 1 },
            { executionId: executionIdFor(newId(T0), T0), tenantId: "t1", attempt: 1 },
            { executionId: a.executionId, tenantId: "t1", attempt: 2 },
            { executionId: c.executionId, tenantId: "t1", attempt: 1 },
          ],
          now: T0 + SECOND,
        });
        assert.equal(outcomes.length, 4);
        assertOk(outcomes[0], "SUCCEEDED");
        assert.deepEqual(outcomes[1], { status: "not_found" });
        assert.deepEqual(unmarked(outcomes[2]), { status: "lost" });
        assertOk(outcomes[3], "SUCCEEDED");
        assert.equal((await getJob(store, a.nj)).state, "SCHEDULED");
        assert.equal((await getJob(store, b.nj)).state, "COMPLETED");
        assert.equal((await getJob(store, c.nj)).state, "COMPLETED");
      });
    });

    describe("executionFailMany", () => {
      storeTest("one batch naming the same execution twice answers each item by its own attempt", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const outcomes = await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 }), fail({ executionId: r.executionId, tenantId: "t1", attempt: 9 })],
          now: T0 + SECOND,
        });
        assert.deepEqual(
          unmarked(outcomes).map((o) => o.status),
          ["ok", "lost"],
        );
      });
      storeTest("asks the planner with the attempt, the job's retry policy and the item", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const retry = { maxAttempts: 5, backoffSeconds: 7, maxBackoffSeconds: 70 };
        const r = await runningExecution(store, epochs, { retry });
        const item = fail({
          executionId: r.executionId,
          tenantId: "t1",
          attempt: 1,
          error: { message: "nope", class: "throttled", retryAfterSeconds: 9 },
        });
        const [outcome] = await store.executionFailMany({ items: [item], now: T0 + SECOND });
        assert.ok(outcome?.status === "ok" && outcome.state === "READY");
        assert.equal(outcome.readyAt, T0 + SECOND + 9 * SECOND, "throttled: the row's 7 s backoff, raised to the item's retryAfterSeconds");
      });

      storeTest(
        "the retry deadline (retry.deadlineSeconds after scheduledFor): no retry past it, by failure or by the reaper; dead with the reason",
        async (store) => {
          const epochs = await acquireAll(store, "n1");
          const retry = { maxAttempts: 9, backoffSeconds: 10, maxBackoffSeconds: 10, deadlineSeconds: 15 };
          const r = await runningExecution(store, epochs, { retry });
          const first = await store.executionFailMany({ items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })], now: T0 });
          assertOk(first[0], "READY"); // its retry starts at T0 + 10 s, inside the deadline
          await leaseOne(store, T0 + 10 * SECOND);
          const second = await store.executionFailMany({
            items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 2 })],
            now: T0 + 10 * SECOND,
          });
          assertOk(second[0], "DEAD"); // the next would start at T0 + 20 s, past T0 + 15 s
          const [dead] = await store.deadLetterList({ tenantId: "t1", limit: 10 });
          assert.equal(dead?.executionId, r.executionId);
          assert.equal(dead?.lastError?.message, "boom; retry deadline passed");
          assert.equal(dead?.lastError?.deadReason, "retry_deadline");

          const reaped = await runningExecution(store, epochs, { retry });
          assert.deepEqual(
            (await store.executionReap({ now: T0 + 31 * SECOND, limit: 10 })).map((x) => [x.executionId, x.state]),
            [[reaped.executionId, "DEAD"]],
            "its lease ended past the deadline: not run again",
          );
        },
      );

      storeTest("the retry delay's jitter is the item's draw: ±20% of the backoff at 0 and near 1", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const a = await runningExecution(store, epochs);
        const b = await runningExecution(store, epochs);
        const outcomes = await store.executionFailMany({
          items: [
            fail({ executionId: a.executionId, tenantId: "t1", attempt: 1, jitter: 0 }),
            fail({ executionId: b.executionId, tenantId: "t1", attempt: 1, jitter: 0.999999 }),
          ],
          now: T0,
        });
        assert.deepEqual(
          outcomes.map((o) => o.status === "ok" && o.readyAt),
          [T0 + 8 * SECOND, T0 + 12 * SECOND],
        );
      });

      storeTest("a retry makes the execution READY at now plus the backoff: not leasable before, leasable after as attempt 2", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const [outcome] = await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })],
          now: T0 + 10 * SECOND,
        });
        assertOk(outcome, "READY");
        assert.ok(outcome?.status === "ok");
        assert.equal(outcome.readyAt, T0 + 20 * SECOND);
        assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
        assert.deepEqual(await lease(store, T0 + 20 * SECOND - 1), []);
        const second = await leaseOne(store, T0 + 20 * SECOND);
        assert.equal(second.executionId, r.executionId);
        assert.equal(second.attempt, 2);
        assert.equal(second.scheduledFor, r.scheduledFor, "scheduledFor stays the same on retries");
      });

      storeTest("the failed attempt is recorded FAILED with its error and finishedAt", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const error: ErrorRecord = { message: "connection reset", class: "transient", status: 503 };
        await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error })],
          now: T0 + 3 * SECOND,
        });
        const rows = await history(store, "t1", r.job.jobId);
        assert.equal(rows.length, 1, "one row per attempt; the pending retry adds none");
        const row = attemptOf(rows, r.executionId, 1);
        assert.equal(row.state, "FAILED");
        assert.deepEqual(row.error, error);
        assert.equal(row.finishedAt, T0 + 3 * SECOND);
        assert.equal(row.startedAt, T0);
        assert.equal(row.workerId, "w1");
      });

      storeTest("a dead plan makes the execution DEAD and a one-off job DEAD, listed in dead letters", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs, { name: "charge", payload: { amount: 42 } });
        const error: ErrorRecord = { message: "card declined", class: "permanent" };
        const before = await getJob(store, r.nj);
        const [outcome] = await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error })],
          now: T0 + 2 * SECOND,
        });
        assertOk(outcome, "DEAD");
        const job = await getJob(store, r.nj);
        assert.equal(job.state, "DEAD");
        assert.ok(job.version > before.version);
        const letters = await store.deadLetterList({ tenantId: "t1", limit: 10 });
        assert.deepEqual(letters, [
          {
            executionId: r.executionId,
            tenantId: "t1",
            jobId: r.job.jobId,
            name: "charge",
            scheduledFor: T0,
            attempts: 1,
            lastError: error,
            deadAt: T0 + 2 * SECOND,
            payload: { amount: 42 },
          },
        ]);
        const row = attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1);
        assert.equal(row.state, "DEAD");
        assert.deepEqual(row.error, error);
        assert.deepEqual(await lease(store, T0 + HOUR), []);
      });

      storeTest("a cron job stays SCHEDULED when one execution dies", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(
          store,
          epochs,
          { kind: "cron", schedule: { ...CRON_SCHEDULE } },
          { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR },
        );
        await leaseOne(store, T0);
        assertOk(
          (
            await store.executionFailMany({
              items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error: FATAL })],
              now: T0 + SECOND,
            })
          )[0],
          "DEAD",
        );
        const job = await getJob(store, r.nj);
        assert.equal(job.state, "SCHEDULED");
        assert.equal(job.nextRunAt, T0 + HOUR);
        assert.equal((await store.deadLetterList({ tenantId: "t1", limit: 10 })).length, 1);
      });

      storeTest("timedOut records the attempt as TIMED_OUT with its error", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const error: ErrorRecord = { message: "timed out after 300 s", class: "transient" };
        await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error, timedOut: true })],
          now: T0 + SECOND,
        });
        const row = attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1);
        assert.equal(row.state, "TIMED_OUT");
        assert.deepEqual(row.error, error);
      });

      storeTest("a stale attempt or an expired lease answers lost and changes nothing", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const outcomes = await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 2 })],
          now: T0 + SECOND,
        });
        assert.deepEqual(unmarked(outcomes), [{ status: "lost" }]);
        const expired = await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })],
          now: T0 + LEASE_MS + 1,
        });
        assert.deepEqual(unmarked(expired), [{ status: "lost" }]);
        assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
        assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING");
        assert.deepEqual(await store.deadLetterList({ tenantId: "t1", limit: 10 }), []);
      });

      storeTest("a failed attempt cannot be failed or completed again", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const item = fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 });
        assertOk((await store.executionFailMany({ items: [item], now: T0 + SECOND }))[0], "READY");
        assert.deepEqual(unmarked(await store.executionFailMany({ items: [item], now: T0 + 2 * SECOND })), [{ status: "lost" }]);
        assert.deepEqual(unmarked(await store.executionCompleteMany({ items: [item], now: T0 + 2 * SECOND })), [{ status: "lost" }]);
        assert.deepEqual(await store.deadLetterList({ tenantId: "t1", limit: 10 }), []);
      });

      storeTest("answers a mixed batch in order: retry, dead, not_found, lost", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const a = await readyExecution(store, epochs);
        const b = await readyExecution(store, epochs);
        await lease(store, T0, { max: 2 });
        const outcomes = await store.executionFailMany({
          items: [
            fail({ executionId: a.executionId, tenantId: "t1", attempt: 1 }),
            fail({ executionId: b.executionId, tenantId: "t1", attempt: 1, error: FATAL }),
            fail({ executionId: executionIdFor(newId(T0), T0), tenantId: "t1", attempt: 1 }),
            fail({ executionId: a.executionId, tenantId: "t1", attempt: 1 }),
          ],
          now: T0 + SECOND,
        });
        assert.equal(outcomes.length, 4);
        assertOk(outcomes[0], "READY");
        assertOk(outcomes[1], "DEAD");
        assert.deepEqual(outcomes[2], { status: "not_found" });
        assert.deepEqual(unmarked(outcomes[3]), { status: "lost" });
      });
    });

    describe("executionReap", () => {
      storeTest("reaps an expired lease: the attempt TIMED_OUT, the execution READY at once with the next attempt", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const now = T0 + LEASE_MS + 1;
        const reaped = await store.executionReap({ now, limit: 10 });
        assert.deepEqual(reaped, [{ executionId: r.executionId, tenantId: "t1", pool: "p1", state: "READY" }]);
        const row = attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1);
        assert.equal(row.state, "TIMED_OUT");
        assert.ok(row.finishedAt !== null);
        const again = await leaseOne(store, now);
        assert.equal(again.executionId, r.executionId);
        assert.equal(again.attempt, 2);
        assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
      });

      storeTest("leaves live leases untouched", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        assert.deepEqual(await store.executionReap({ now: T0 + LEASE_MS - 1, limit: 10 }), []);
        assert.deepEqual(await store.executionReap({ now: T0 + LEASE_MS, limit: 10 }), [], "leaseUntil < now, not <=");
        assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING");
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + LEASE_MS - 1 }))[0],
          "SUCCEEDED",
        );
      });

      storeTest("respects the limit", async (store) => {
        const epochs = await acquireAll(store, "n1");
        for (let i = 0; i < 4; i++) await readyExecution(store, epochs);
        assert.equal((await lease(store, T0, { max: 10 })).length, 4);
        const now = T0 + LEASE_MS + 1;
        assert.equal((await store.executionReap({ now, limit: 3 })).length, 3);
        assert.equal((await store.executionReap({ now, limit: 3 })).length, 1);
        assert.equal((await store.executionReap({ now, limit: 3 })).length, 0);
      });

      storeTest("a poison job ends DEAD in the dead letters after maxAttempts reaps", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs, { retry: { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 3600 } });
        let now = T0;
        const states: string[] = [];
        for (let attempt = 1; attempt <= 3; attempt++) {
          const leased = await leaseOne(store, now);
          assert.equal(leased.attempt, attempt);
          now += LEASE_MS + 1;
          const reaped = await store.executionReap({ now, limit: 10 });
          assert.equal(reaped.length, 1);
          states.push(reaped[0]!.state);
        }
        assert.deepEqual(states, ["READY", "READY", "DEAD"]);
        assert.deepEqual(await lease(store, now + HOUR), []);
        const letters = await store.deadLetterList({ tenantId: "t1", limit: 10 });
        assert.equal(letters.length, 1);
        assert.equal(letters[0]!.executionId, r.executionId);
        assert.equal(letters[0]!.attempts, 3);
        assert.equal(letters[0]!.deadAt, now);
        assert.equal((await getJob(store, r.nj)).state, "DEAD");
        const rows = await history(store, "t1", r.job.jobId);
        assert.deepEqual(
          rows.map((x) => x.attempt),
          [3, 2, 1],
        );
        assert.equal(attemptOf(rows, r.executionId, 1).state, "TIMED_OUT");
        assert.equal(attemptOf(rows, r.executionId, 2).state, "TIMED_OUT");
      });

      storeTest("a late complete of a reaped attempt answers lost", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
        const [outcome] = await store.executionCompleteMany({
          items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }],
          now: T0 + LEASE_MS + 2,
        });
        assert.deepEqual(unmarked(outcome), { status: "lost" });
        assert.deepEqual(
          unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + LEASE_MS + 2 })),
          {
            status: "lost",
          },
        );
        assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
        assert.equal((await leaseOne(store, T0 + LEASE_MS + 3)).attempt, 2);
      });

      storeTest("reports the pool of http executions as HTTP_POOL", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs, { tenantId: "t5", target: { type: "http", url: "https://example.com/x" } });
        const reaped = await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
        assert.deepEqual(reaped, [{ executionId: r.executionId, tenantId: "t5", pool: HTTP_POOL, state: "READY" }]);
      });
    });

    describe("executionHistory", () => {
      storeTest("one row per attempt plus attempt 0 for a never-attempted execution, newest first by (scheduledFor, attempt)", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
        await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next }] });
        const first = executionIdFor(nj.job.jobId, T0);
        await leaseOne(store, T0);
        await store.executionFailMany({ items: [fail({ executionId: first, tenantId: "t1", attempt: 1 })], now: T0 });
        await leaseOne(store, T0 + 10 * SECOND);
        await store.executionCompleteMany({ items: [{ executionId: first, tenantId: "t1", attempt: 2 }], now: T0 + 11 * SECOND });
        await store.dispatchMany({
          nodeId: "n1",
          epochs,
          now: T0 + HOUR,
          items: [{ entry: { ...entryOf(nj), ...next }, next: { scheduledFor: T0 + 2 * HOUR, dueAt: T0 + 2 * HOUR } }],
        });
        const second = executionIdFor(nj.job.jobId, T0 + HOUR);
        const rows = await history(store, "t1", nj.job.jobId);
        assert.deepEqual(
          rows.map((r) => [r.executionId, r.scheduledFor, r.attempt, r.state]),
          [
            [second, T0 + HOUR, 0, "READY"],
            [first, T0, 2, "SUCCEEDED"],
            [first, T0, 1, "FAILED"],
          ],
        );
        for (const r of rows) assert.equal(r.jobId, nj.job.jobId);
      });

      storeTest("pages with the after cursor, strictly after it", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        let entry = entryOf(nj);
        for (let i = 1; i <= 4; i++) {
          const next = { scheduledFor: T0 + i * HOUR, dueAt: T0 + i * HOUR };
          await store.dispatchMany({ nodeId: "n1", epochs, now: entry.dueAt, items: [{ entry, next }] });
          entry = { ...entry, ...next };
        }
        // Give the first occurrence two attempts.
        const first = executionIdFor(nj.job.jobId, T0);
        await leaseOne(store, T0);
        await store.executionFailMany({ items: [fail({ executionId: first, tenantId: "t1", attempt: 1 })], now: T0 + 1 });
        await leaseOne(store, T0 + 1 + 10 * SECOND);
        const all = await history(store, "t1", nj.job.jobId);
        assert.equal(all.length, 5);
        const seen: [number, number][] = [];
        let after: { scheduledFor: number; attempt: number } | undefined;
        for (let page = 0; page < 10; page++) {
          const rows = await store.executionHistory({ tenantId: "t1", jobId: nj.job.jobId, limit: 2, ...(after ? { after } : {}) });
          assert.ok(rows.length <= 2);
          if (rows.length === 0) break;
          seen.push(...rows.map((r): [number, number] => [r.scheduledFor, r.attempt]));
          const last = rows[rows.length - 1]!;
          after = { scheduledFor: last.scheduledFor, attempt: last.attempt };
        }
        assert.deepEqual(seen, [
          [T0 + 3 * HOUR, 0],
          [T0 + 2 * HOUR, 0],
          [T0 + HOUR, 0],
          [T0, 2],
          [T0, 1],
        ]);
        assert.deepEqual(
          seen,
          all.map((r) => [r.scheduledFor, r.attempt]),
        );
      });

      storeTest("sees only the caller's tenant", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs);
        assert.deepEqual(await history(store, "t2", r.job.jobId), []);
        assert.deepEqual(await history(store, "t1", newId(T0)), []);
        assert.equal((await history(store, "t1", r.job.jobId)).length, 1);
      });
    });

    describe("dead letters", () => {
      async function deadExecution(
        store: Store,
        epochs: ReadonlyMap<number, number>,
        overrides: JobOverrides = {},
        now = T0 + SECOND,
      ): Promise<Ready> {
        const r = await readyExecution(store, epochs, overrides);
        const leased = await leaseOne(store, T0, { pool: poolOf(r.job.target), tenantId: r.job.tenantId });
        assert.equal(leased.executionId, r.executionId);
        const [outcome] = await store.executionFailMany({
          items: [
            fail({ executionId: r.executionId, tenantId: r.job.tenantId, attempt: 1, error: { message: `dead at ${now}`, class: "permanent" } }),
          ],
          now,
        });
        assertOk(outcome, "DEAD");
        return r;
      }

      const audit = (subject: string) => ({
        tenantId: "t1",
        at: T0 + HOUR,
        actor: "admin-key",
        action: "dead_letter.replay",
        subject,
        details: { reason: "fixed" },
      });

      storeTest("lists dead executions of the caller's tenant only", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const mine = await deadExecution(store, epochs);
        await deadExecution(store, epochs, { tenantId: "t2" });
        await readyExecution(store, epochs); // alive: not listed
        const letters = await store.deadLetterList({ tenantId: "t1", limit: 10 });
        assert.deepEqual(
          letters.map((l) => l.executionId),
          [mine.executionId],
        );
        assert.equal(letters[0]!.tenantId, "t1");
        assert.deepEqual(letters[0]!.lastError, { message: `dead at ${T0 + SECOND}`, class: "permanent" });
        assert.equal((await store.deadLetterList({ tenantId: "t2", limit: 10 })).length, 1);
        assert.deepEqual(await store.deadLetterList({ tenantId: "t3", limit: 10 }), []);
      });

      storeTest("respects limit, and the after cursor pages through every dead letter exactly once", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const ids = new Set<string>();
        for (let i = 0; i < 7; i++) ids.add((await deadExecution(store, epochs, {}, T0 + SECOND * (1 + Math.floor(i / 2)))).executionId);
        assert.equal((await store.deadLetterList({ tenantId: "t1", limit: 3 })).length, 3);
        const seen: string[] = [];
        let after: { deadAt: number; executionId: string } | undefined;
        for (let page = 0; page < 10; page++) {
          const rows = await store.deadLetterList({ tenantId: "t1", limit: 3, ...(after ? { after } : {}) });
          assert.ok(rows.length <= 3);
          if (rows.length === 0) break;
          seen.push(...rows.map((r) => r.executionId));
          const last = rows[rows.length - 1]!;
          after = { deadAt: last.deadAt, executionId: last.executionId };
        }
        assert.equal(seen.length, 7, "no dead letter seen twice");
        assert.deepEqual(new Set(seen), ids);
      });

      storeTest("replay makes the execution READY now, leasable with the next attempt, history kept, one-off job SCHEDULED again", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await deadExecution(store, epochs, { payload: { p: 1 } });
        assert.equal((await getJob(store, r.nj)).state, "DEAD");
        const at = T0 + HOUR;
        const replayed = await store.deadLetterReplay({ tenantId: "t1", executionId: r.executionId, now: at, audit: audit(r.executionId) });
        assert.ok(replayed);
        assert.equal(replayed.pool, "p1");
        assert.equal(replayed.row.executionId, r.executionId);
        assert.equal(replayed.row.jobId, r.job.jobId);
        assert.equal(replayed.row.scheduledFor, T0);
        assert.equal(replayed.row.readyAt, at);
        assert.equal(replayed.row.state, "READY");
        assert.equal(replayed.row.attempt, 1, "the row carries the attempts made so far; the next lease is attempt + 1");
        assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
        assert.deepEqual(await store.deadLetterList({ tenantId: "t1", limit: 10 }), []);
        const leased = await leaseOne(store, at);
        assert.equal(leased.executionId, r.executionId);
        assert.equal(leased.attempt, 2);
        assert.equal(leased.retry, false, "a replay starts afresh: its first attempt is not a retry");
        assert.deepEqual(leased.payload, { p: 1 });
        const rows = await history(store, "t1", r.job.jobId);
        assert.equal(attemptOf(rows, r.executionId, 1).error?.message, `dead at ${T0 + SECOND}`);
        assert.equal(attemptOf(rows, r.executionId, 2).state, "RUNNING");
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 2 }], now: at + 1 }))[0],
          "SUCCEEDED",
        );
        assert.equal((await getJob(store, r.nj)).state, "COMPLETED");
      });

      storeTest("a replayed execution gets a fresh budget of maxAttempts, its attempt numbers still growing", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs, { retry: { maxAttempts: 3, backoffSeconds: 1, maxBackoffSeconds: 1 } });
        let now = T0;
        const reapOnce = async (expectAttempt: number): Promise<string> => {
          assert.equal((await leaseOne(store, now)).attempt, expectAttempt);
          now += LEASE_MS + 1;
          const reaped = await store.executionReap({ now, limit: 10 });
          assert.equal(reaped.length, 1);
          return reaped[0]!.state;
        };
        const failOnce = async (expectAttempt: number): Promise<AckOutcome | undefined> => {
          assert.equal((await leaseOne(store, now)).attempt, expectAttempt);
          const [outcome] = await store.executionFailMany({
            items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: expectAttempt })],
            now: now + 1,
          });
          now += 2 * SECOND; // past the 1 s backoff
          return outcome;
        };
        assert.deepEqual([await reapOnce(1), await reapOnce(2), await reapOnce(3)], ["READY", "READY", "DEAD"]);
        const replayed = await store.deadLetterReplay({ tenantId: "t1", executionId: r.executionId, now, audit: audit(r.executionId) });
        assert.equal(replayed?.row.attempt, 3);
        // Counted from the first attempt, each of these would be past maxAttempts.
        assertOk(await failOnce(4), "READY");
        assert.equal(await reapOnce(5), "READY", "the reaper counts attempts since the replay too");
        assertOk(await failOnce(6), "DEAD");
        const [letter] = await store.deadLetterList({ tenantId: "t1", limit: 10 });
        assert.equal(letter?.attempts, 6, "dead letters count every attempt");
        assert.equal((await history(store, "t1", r.job.jobId)).length, 6);
      });

      storeTest("replay of a cron job's execution leaves the job SCHEDULED", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const nj = cronJob();
        await createOne(store, nj);
        await store.dispatchMany({
          nodeId: "n1",
          epochs,
          now: T0,
          items: [{ entry: entryOf(nj), next: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR } }],
        });
        const executionId = executionIdFor(nj.job.jobId, T0);
        await leaseOne(store, T0);
        await store.executionFailMany({ items: [fail({ executionId, tenantId: "t1", attempt: 1, error: FATAL })], now: T0 + 1 });
        const replayed = await store.deadLetterReplay({ tenantId: "t1", executionId, now: T0 + 2, audit: audit(executionId) });
        assert.ok(replayed);
        const job = await getJob(store, nj);
        assert.equal(job.state, "SCHEDULED");
        assert.equal(job.nextRunAt, T0 + HOUR);
        assert.equal((await leaseOne(store, T0 + 2)).attempt, 2);
      });

      storeTest("replay is audited", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await deadExecution(store, epochs);
        await store.deadLetterReplay({ tenantId: "t1", executionId: r.executionId, now: T0 + HOUR, audit: audit(r.executionId) });
        const entries = await store.auditList({ tenantId: "t1", limit: 10 });
        assert.equal(entries.length, 1);
        const { id, ...entry } = entries[0]!;
        assert.equal(typeof id, "number");
        assert.deepEqual(entry, audit(r.executionId));
        assert.deepEqual(await store.auditList({ tenantId: "t2", limit: 10 }), []);
      });

      storeTest("auditList pages newest first with the after cursor, visiting every entry once", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const subjects: string[] = [];
        for (let i = 0; i < 5; i++) {
          const r = await deadExecution(store, epochs);
          subjects.push(r.executionId);
          const at = T0 + HOUR + Math.floor(i / 2) * SECOND; // two entries share each instant
          await store.deadLetterReplay({ tenantId: "t1", executionId: r.executionId, now: at, audit: { ...audit(r.executionId), at } });
          assert.equal((await leaseOne(store, at)).executionId, r.executionId); // keep the next dead letter's lease unambiguous
          await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 2 }], now: at });
        }
        const all = await store.auditList({ tenantId: "t1", limit: 100 });
        assert.equal(all.length, 5);
        for (let i = 1; i < all.length; i++) assert.ok(all[i - 1]!.at >= all[i]!.at, "newest first");
        const seen: number[] = [];
        let after: { at: number; id: number } | undefined;
        for (let page = 0; page < 10; page++) {
          const rows = await store.auditList({ tenantId: "t1", limit: 2, ...(after ? { after } : {}) });
          assert.ok(rows.length <= 2);
          if (rows.length === 0) break;
          seen.push(...rows.map((r) => r.id));
          const last = rows[rows.length - 1]!;
          after = { at: last.at, id: last.id };
        }
        assert.deepEqual(
          seen,
          all.map((e) => e.id),
        );
        assert.deepEqual(new Set(all.map((e) => e.subject)), new Set(subjects));
      });

      storeTest("replaying an execution that is not dead answers null and audits nothing", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const dl = await deadExecution(store, epochs, { tenantId: "t1" });
        const ready = await readyExecution(store, epochs);
        const now = T0 + HOUR;
        assert.equal(await store.deadLetterReplay({ tenantId: "t1", executionId: ready.executionId, now, audit: audit(ready.executionId) }), null);
        assert.equal(
          await store.deadLetterReplay({ tenantId: "t2", executionId: dl.executionId, now, audit: { ...audit(dl.executionId), tenantId: "t2" } }),
          null,
        );
        assert.equal(await store.deadLetterReplay({ tenantId: "t1", executionId: executionIdFor(newId(T0), T0), now, audit: audit("x") }), null);
        assert.deepEqual(await store.auditList({ tenantId: "t1", limit: 10 }), []);
        assert.deepEqual(await store.auditList({ tenantId: "t2", limit: 10 }), []);
        // Replaying twice: the second finds it no longer dead.
        assert.ok(await store.deadLetterReplay({ tenantId: "t1", executionId: dl.executionId, now, audit: audit(dl.executionId) }));
        assert.equal(await store.deadLetterReplay({ tenantId: "t1", executionId: dl.executionId, now: now + 1, audit: audit(dl.executionId) }), null);
        assert.equal((await store.auditList({ tenantId: "t1", limit: 10 })).length, 1);
      });
    });

    describe("possible duplicates", () => {
      /** An execution whose attempt 1 lost its lease (reaped) and whose attempt 2 runs. */
      async function overtaken(store: Store, epochs: ReadonlyMap<number, number>, overrides: JobOverrides = {}) {
        const r = await runningExecution(store, epochs, overrides);
        const reaped = await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
        assert.equal(reaped.length, 1);
        const second = await leaseOne(store, T0 + LEASE_MS + 2, { pool: poolOf(r.job.target), tenantId: r.job.tenantId });
        assert.equal(second.attempt, 2);
        return r;
      }

      storeTest(
        "a lost complete, fail or heartbeat of a granted attempt records a possible duplicate, once per attempt; the list is newest first, by tenant",
        async (store) => {
          const epochs = await acquireAll(store, "n1");
          const a = await overtaken(store, epochs);
          const at = T0 + LEASE_MS + 10;
          const [lostComplete] = await store.executionCompleteMany({ items: [{ executionId: a.executionId, tenantId: "t1", attempt: 1 }], now: at });
          assert.deepEqual(lostComplete, { status: "lost", possibleDuplicate: { tenantId: "t1", attempt: 1, reason: "lease_lost" } });
          assert.deepEqual(
            await store.executionHeartbeat({ tenantId: "t1", executionId: a.executionId, attempt: 1, now: at + 1 }),
            { status: "lost" },
            "recorded once",
          );
          assert.deepEqual(
            await store.executionHeartbeat({ tenantId: "t1", executionId: a.executionId, attempt: 7, now: at + 1 }),
            { status: "lost" },
            "never granted: no duplicate",
          );
          assert.deepEqual(await store.executionHeartbeat({ tenantId: "t2", executionId: a.executionId, attempt: 1, now: at + 1 }), {
            status: "not_found",
          });
          const b = await overtaken(store, epochs, { tenantId: "t1" });
          const [lostFail] = await store.executionFailMany({
            items: [fail({ executionId: b.executionId, tenantId: null, attempt: 1 })],
            now: at + 2,
          });
          assert.deepEqual(lostFail, { status: "lost", possibleDuplicate: { tenantId: "t1", attempt: 1, reason: "lease_lost" } });
          const c = await overtaken(store, epochs, { tenantId: "t2" });
          const beat = await store.executionHeartbeat({ tenantId: null, executionId: c.executionId, attempt: 1, now: at + 3 });
          assert.deepEqual(beat, { status: "lost", possibleDuplicate: { tenantId: "t2", attempt: 1, reason: "lease_lost" } });
          const listed = await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 });
          assert.deepEqual(
            listed.map((d) => [d.executionId, d.duplicateAttempt, d.reason, d.at, d.attempt, d.state]),
            [
              [b.executionId, 1, "lease_lost", at + 2, 2, "RUNNING"],
              [a.executionId, 1, "lease_lost", at, 2, "RUNNING"],
            ],
          );
          assert.equal(listed[0]!.jobId, b.job.jobId);
          assert.equal(listed[0]!.pool, "p1");
          const page = await store.executionPossibleDuplicates({ tenantId: "t1", limit: 1, after: { at: at + 2, executionId: b.executionId } });
          assert.deepEqual(
            page.map((d) => d.executionId),
            [a.executionId],
          );
          assert.deepEqual(
            (await store.executionPossibleDuplicates({ tenantId: "t2", limit: 10 })).map((d) => d.executionId),
            [c.executionId],
          );
          // The current attempt still holds its lease: its acks are not duplicates.
          assertOk(
            (await store.executionCompleteMany({ items: [{ executionId: a.executionId, tenantId: "t1", attempt: 2 }], now: at + 4 }))[0],
            "SUCCEEDED",
          );
          assert.equal((await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 })).length, 2);
        },
      );

      storeTest(
        "a call after the attempt's own acknowledgement is not a possible duplicate; a call past an expired lease not yet reaped is one",
        async (store) => {
          const epochs = await acquireAll(store, "n1");
          const r = await runningExecution(store, epochs);
          assertOk(
            (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 1 }))[0],
            "SUCCEEDED",
          );
          assertOk(
            (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 2 }))[0],
            "SUCCEEDED",
          );
          assert.deepEqual(
            await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 3 }),
            { status: "lost" },
            "a heartbeat racing its own complete",
          );
          assert.deepEqual(await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 }), []);
          const expired = await runningExecution(store, epochs);
          assert.deepEqual(
            await store.executionHeartbeat({ tenantId: "t1", executionId: expired.executionId, attempt: 1, now: T0 + LEASE_MS + 1 }),
            { status: "lost", possibleDuplicate: { tenantId: "t1", attempt: 1, reason: "lease_lost" } },
            "its lease expired, not yet reaped: the worker runs on",
          );
        },
      );

      storeTest(
        "the success of an execution whose earlier attempt the reaper ended for an expired lease records that attempt, once, in the complete",
        async (store) => {
          const epochs = await acquireAll(store, "n1");
          const r = await overtaken(store, epochs);
          const at = T0 + LEASE_MS + 20;
          const [done] = await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 2 }], now: at });
          assert.deepEqual(done, {
            status: "ok",
            state: "SUCCEEDED",
            pool: "p1",
            tenantId: "t1",
            possibleDuplicate: { tenantId: "t1", attempt: 1, reason: "expired_then_succeeded" },
          });
          const [again] = await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 2 }], now: at + 1 });
          assert.deepEqual(again, { status: "ok", state: "SUCCEEDED", pool: "p1", tenantId: "t1" }, "a repeated complete records nothing more");
          assert.deepEqual(
            await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: at + 2 }),
            { status: "lost" },
            "the same attempt showing up later is the same duplicate",
          );
          const listed = await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 });
          assert.deepEqual(
            listed.map((d) => [d.executionId, d.duplicateAttempt, d.reason, d.at, d.state]),
            [[r.executionId, 1, "expired_then_succeeded", at, "SUCCEEDED"]],
          );
          // A failed attempt (acknowledged by its worker) then a success: nothing ran twice.
          const f = await runningExecution(store, epochs, { retry: { maxAttempts: 3, backoffSeconds: 1, maxBackoffSeconds: 1 } });
          assertOk(
            (await store.executionFailMany({ items: [fail({ executionId: f.executionId, tenantId: "t1", attempt: 1 })], now: T0 + 1 }))[0],
            "READY",
          );
          const retried = await leaseOne(store, T0 + 5 * SECOND);
          assert.equal(retried.executionId, f.executionId);
          const [ok] = await store.executionCompleteMany({
            items: [{ executionId: f.executionId, tenantId: "t1", attempt: 2 }],
            now: T0 + 6 * SECOND,
          });
          assert.deepEqual(ok, { status: "ok", state: "SUCCEEDED", pool: "p1", tenantId: "t1" });
          assert.equal((await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 })).length, 1);
        },
      );
    });

    describe("bulk dead-letter replays", () => {
      storeTest(
        "replay by filter: the tenant's dead letters dead by deadBefore, oldest first, a batch a step, each at the rate's next slot",
        async (store) => {
          const ids = await deadLetters(store, 5);
          const [late] = await deadLetters(store, 1, { deadFrom: T0 + 10 * SECOND });
          const [theirs] = await deadLetters(store, 1, { tenantId: "t2" });
          const created = await store.replayCreate(bulkReplay({ filter: { deadBefore: T0 + 5 * SECOND } }, { ratePerSecond: 2 }));
          assert.equal(created.state, "RUNNING");
          assert.equal(created.total, null);
          assert.equal(created.replayed, 0);
          assert.deepEqual(
            await store.replayClaim({ owner: "n1", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 10 }).then((r) => r.map((x) => x.replayId)),
            [created.replayId],
          );
          const first = await store.replayStep({
            replayId: created.replayId,
            owner: "n1",
            leaseMs: 10 * SECOND,
            now: REPLAY_AT,
            at: REPLAY_AT,
            limit: 2,
          });
          assert.ok(first);
          assert.deepEqual(first.replayed, [
            { executionId: ids[0], pool: "p1", readyAt: REPLAY_AT },
            { executionId: ids[1], pool: "p1", readyAt: REPLAY_AT + 500 },
          ]);
          assert.equal(first.replay.state, "RUNNING");
          assert.equal(first.replay.replayed, 2);
          assert.equal(first.replay.nextAt, REPLAY_AT + 1000);
          const rest = await driveReplay(store, created.replayId);
          assert.deepEqual(
            rest.replayed.map((r) => [r.executionId, r.readyAt]),
            [
              [ids[2], REPLAY_AT + 1000],
              [ids[3], REPLAY_AT + 1500],
              [ids[4], REPLAY_AT + 2000],
            ],
            "a step before the next slot still spaces by the rate",
          );
          const done = rest.replay;
          assert.equal(done.state, "DONE");
          assert.equal(done.replayed, 5);
          assert.equal(done.skipped, 0);
          assert.equal(done.finishedAt, REPLAY_AT);
          assert.equal(done.owner, null);
          assert.deepEqual(
            (await store.deadLetterList({ tenantId: "t1", limit: 10 })).map((d) => d.executionId),
            [late],
            "a dead letter later than deadBefore is not selected",
          );
          assert.deepEqual(
            (await store.deadLetterList({ tenantId: "t2", limit: 10 })).map((d) => d.executionId),
            [theirs],
          );
          // READY at their slots: the first leasable now, the last only 2 s later.
          assert.equal((await lease(store, REPLAY_AT, { tenantId: "t1" })).length, 1);
          assert.equal((await lease(store, REPLAY_AT + 2000, { tenantId: "t1" })).length, 4);
          assert.equal(
            await store.replayStep({ replayId: created.replayId, owner: "n1", leaseMs: SECOND, now: REPLAY_AT, at: REPLAY_AT, limit: 2 }),
            null,
          );
          const [entry] = await store.auditList({ tenantId: "t1", limit: 10 });
          assert.equal(entry?.action, "dead-letter.replay-bulk");
          assert.equal(entry?.subject, created.replayId);
          assert.equal((await store.auditList({ tenantId: "t1", limit: 10 })).length, 1, "one audit entry for the bulk replay");
        },
      );

      storeTest("replay by filter selects by pool, error class and deadAfter", async (store) => {
        const p1 = await deadLetters(store, 2, { pool: "p1", error: { message: "x", class: "transient" } });
        await deadLetters(store, 1, { pool: "p2", error: { message: "x", class: "transient" } });
        await deadLetters(store, 1, { pool: "p1", error: FATAL, deadFrom: T0 + 3 * SECOND });
        const early = await deadLetters(store, 1, { pool: "p1", error: { message: "x", class: "transient" }, deadFrom: T0 - HOUR });
        const created = await store.replayCreate(
          bulkReplay({ filter: { pool: "p1", errorClass: "transient", deadAfter: T0, deadBefore: T0 + HOUR } }),
        );
        await store.replayClaim({ owner: "n1", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 10 });
        const { replayed, replay } = await driveReplay(store, created.replayId, { limit: 1 });
        assert.deepEqual(
          replayed.map((r) => r.executionId),
          p1,
        );
        assert.equal(replay.replayed, 2);
        const left = (await store.deadLetterList({ tenantId: "t1", limit: 10 })).map((d) => d.executionId);
        assert.equal(left.length, 3);
        assert.ok(left.includes(early[0]!));
      });

      storeTest(
        "replay by ids: ids no longer dead (replayed meanwhile, another tenant's, unknown) are skipped and counted, the others replayed once",
        async (store) => {
          const [a, c, d] = await deadLetters(store, 3);
          const [theirs] = await deadLetters(store, 1, { tenantId: "t2" });
          const unknown = executionIdFor(newId(T0), T0);
          const created = await store.replayCreate(bulkReplay({ executionIds: [a!, theirs!, c!, unknown, d!] }, { ratePerSecond: 10 }));
          assert.equal(created.total, 5);
          assert.ok(
            await store.deadLetterReplay({
              tenantId: "t1",
              executionId: a!,
              now: REPLAY_AT,
              audit: { tenantId: "t1", at: REPLAY_AT, actor: "x", action: "dead-letter.replay", subject: a! },
            }),
          );
          await store.replayClaim({ owner: "n1", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 10 });
          const { replayed, replay } = await driveReplay(store, created.replayId, { limit: 2 });
          assert.deepEqual(
            replayed.map((r) => [r.executionId, r.readyAt]),
            [
              [c, REPLAY_AT],
              [d, REPLAY_AT + 100],
            ],
          );
          assert.equal(replay.state, "DONE");
          assert.equal(replay.replayed, 2);
          assert.equal(replay.skipped, 3);
          assert.equal((await store.deadLetterList({ tenantId: "t2", limit: 10 })).length, 1, "another tenant's dead letter stays dead");
        },
      );

      storeTest(
        "a step is fenced by the replay's lease: another owner, an expired lease or a cancelled replay answer null and change nothing",
        async (store) => {
          await deadLetters(store, 3);
          const created = await store.replayCreate(bulkReplay({ filter: { deadBefore: REPLAY_AT } }));
          const step = (owner: string, now: number) =>
            store.replayStep({ replayId: created.replayId, owner, leaseMs: 10 * SECOND, now, at: now, limit: 1 });
          assert.equal(await step("n1", REPLAY_AT), null, "not claimed yet");
          assert.equal((await store.replayClaim({ owner: "n1", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 10 })).length, 1);
          assert.deepEqual(await store.replayClaim({ owner: "n2", leaseMs: 10 * SECOND, now: REPLAY_AT + 5 * SECOND, limit: 10 }), [], "held by n1");
          // A clean stop gives the lease up: n2 claims at once, and n1 is fenced out; n2 then gives it back.
          await store.replayRelease({ owner: "n2" });
          assert.deepEqual(
            await store.replayClaim({ owner: "n2", leaseMs: 10 * SECOND, now: REPLAY_AT + SECOND, limit: 10 }),
            [],
            "another owner's release frees nothing",
          );
          await store.replayRelease({ owner: "n1" });
          assert.equal(
            (await store.replayClaim({ owner: "n2", leaseMs: 10 * SECOND, now: REPLAY_AT + SECOND, limit: 10 }))[0]?.owner,
            "n2",
            "released: claimed at once",
          );
          assert.equal(await step("n1", REPLAY_AT + SECOND), null, "the releasing owner is fenced out");
          await store.replayRelease({ owner: "n2" });
          assert.equal((await store.replayClaim({ owner: "n1", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 10 })).length, 1, "and n1 takes it back");
          assert.equal(await step("n2", REPLAY_AT + 5 * SECOND), null);
          assert.equal((await step("n1", REPLAY_AT + 5 * SECOND))?.replayed.length, 1, "the step extends n1's lease to +15 s");
          assert.deepEqual(await store.replayClaim({ owner: "n2", leaseMs: 10 * SECOND, now: REPLAY_AT + 15 * SECOND, limit: 10 }), []);
          assert.equal(await step("n1", REPLAY_AT + 15 * SECOND + 1), null, "n1's own lease has expired");
          const taken = await store.replayClaim({ owner: "n2", leaseMs: 10 * SECOND, now: REPLAY_AT + 15 * SECOND + 1, limit: 10 });
          assert.equal(taken[0]?.owner, "n2", "an expired lease is taken over");
          assert.equal(taken[0]?.replayed, 1, "progress survives the takeover");
          assert.equal(await step("n1", REPLAY_AT + 16 * SECOND), null, "the old owner is fenced out");
          assert.equal((await step("n2", REPLAY_AT + 16 * SECOND))?.replay.replayed, 2);
          const cancelAudit = {
            tenantId: "t1",
            at: REPLAY_AT + 17 * SECOND,
            actor: "admin-key",
            action: "dead-letter.replay-cancel",
            subject: created.replayId,
          };
          assert.equal(
            await store.replayCancel({ replayId: created.replayId, tenantId: "t2", now: REPLAY_AT + 17 * SECOND, audit: cancelAudit }),
            null,
            "another tenant's",
          );
          const cancelled = await store.replayCancel({
            replayId: created.replayId,
            tenantId: "t1",
            now: REPLAY_AT + 17 * SECOND,
            audit: cancelAudit,
          });
          assert.equal(cancelled?.changed, true);
          assert.equal(cancelled?.replay.state, "CANCELLED");
          assert.equal(cancelled?.replay.finishedAt, REPLAY_AT + 17 * SECOND);
          assert.equal(await step("n2", REPLAY_AT + 18 * SECOND), null, "a cancelled replay goes no further");
          assert.deepEqual(await store.replayClaim({ owner: "n3", leaseMs: SECOND, now: REPLAY_AT + HOUR, limit: 10 }), []);
          assert.equal((await store.deadLetterList({ tenantId: "t1", limit: 10 })).length, 1);
          const again = await store.replayCancel({ replayId: created.replayId, now: REPLAY_AT + 20 * SECOND, audit: cancelAudit });
          assert.equal(again?.changed, false);
          assert.equal(again?.replay.finishedAt, REPLAY_AT + 17 * SECOND);
          assert.equal((await store.auditList({ tenantId: "t1", limit: 10 })).filter((e) => e.action === "dead-letter.replay-cancel").length, 1);
        },
      );

      storeTest("replayGet and replayList are tenant-scoped; the list pages newest first", async (store) => {
        const made: string[] = [];
        for (let i = 0; i < 5; i++) {
          const r = bulkReplay({ executionIds: ["x"] });
          r.replay.createdAt = REPLAY_AT + Math.floor(i / 2) * SECOND;
          made.push((await store.replayCreate(r)).replayId);
        }
        const theirs = await store.replayCreate(bulkReplay({ executionIds: ["x"] }, { tenantId: "t2" }));
        assert.equal(await store.replayGet({ replayId: theirs.replayId, tenantId: "t1" }), null);
        assert.equal((await store.replayGet({ replayId: theirs.replayId }))?.tenantId, "t2");
        assert.equal((await store.replayGet({ replayId: made[0]!, tenantId: "t1" }))?.replayId, made[0]);
        const seen: string[] = [];
        let after: { createdAt: number; replayId: string } | undefined;
        for (let page = 0; page < 10; page++) {
          const rows = await store.replayList({ tenantId: "t1", limit: 2, ...(after ? { after } : {}) });
          if (rows.length === 0) break;
          seen.push(...rows.map((r) => r.replayId));
          const last = rows[rows.length - 1]!;
          after = { createdAt: last.createdAt, replayId: last.replayId };
        }
        assert.equal(seen.length, 5);
        assert.deepEqual(new Set(seen), new Set(made));
        const all = await store.replayList({ tenantId: "t1", limit: 10 });
        for (let i = 1; i < all.length; i++) assert.ok(all[i - 1]!.createdAt >= all[i]!.createdAt, "newest first");
      });
    });

    describe("shards", () => {
      storeTest("acquires free shards with a bumped epoch, visible in shardList", async (store) => {
        const leases = await store.shardAcquire({ owner: "a", shards: [0, 1, 2], leaseMs: 10 * SECOND, now: T0 });
        assert.deepEqual(
          leases.map((l) => l.shard).sort((x, y) => x - y),
          [0, 1, 2],
        );
        for (const l of leases) {
          assert.equal(l.owner, "a");
          assert.ok(l.epoch >= 1, "the epoch grows on a change of owner");
          assert.equal(l.leaseUntil, T0 + 10 * SECOND);
        }
        const listed = (await store.shardList()).filter((l) => l.owner !== null);
        assert.deepEqual(
          listed.map((l) => [l.shard, l.owner, l.leaseUntil]).sort((x, y) => (x[0] as number) - (y[0] as number)),
          [
            [0, "a", T0 + 10 * SECOND],
            [1, "a", T0 + 10 * SECOND],
            [2, "a", T0 + 10 * SECOND],
          ],
        );
      });

      storeTest("does not take a shard owned by another live owner", async (store) => {
        const [a] = await store.shardAcquire({ owner: "a", shards: [5], leaseMs: 10 * SECOND, now: T0 });
        assert.ok(a);
        const b = await store.shardAcquire({ owner: "b", shards: [5, 6], leaseMs: 10 * SECOND, now: T0 + 9 * SECOND });
        assert.deepEqual(
          b.filter((l) => l.owner === "b").map((l) => l.shard),
          [6],
        );
        const five = (await store.shardList()).find((l) => l.shard === 5);
        assert.deepEqual(five, { shard: 5, owner: "a", epoch: a.epoch, leaseUntil: T0 + 10 * SECOND });
      });

      storeTest("takes over a shard whose owner's lease expired, with a higher epoch", async (store) => {
        const [a] = await store.shardAcquire({ owner: "a", shards: [7], leaseMs: 10 * SECOND, now: T0 });
        assert.ok(a);
        const b = await store.shardAcquire({ owner: "b", shards: [7], leaseMs: 10 * SECOND, now: T0 + 10 * SECOND + 1 });
        const taken = b.find((l) => l.shard === 7);
        assert.ok(taken);
        assert.equal(taken.owner, "b");
        assert.ok(taken.epoch > a.epoch, `epoch ${taken.epoch} > ${a.epoch}`);
        assert.equal(taken.leaseUntil, T0 + 20 * SECOND + 1);
        assert.deepEqual(
          (await store.shardList()).find((l) => l.shard === 7),
          taken,
        );
        // The old owner cannot take it back while b's lease lives.
        const back = await store.shardAcquire({ owner: "a", shards: [7], leaseMs: 10 * SECOND, now: T0 + 11 * SECOND });
        assert.deepEqual(
          back.filter((l) => l.owner === "a"),
          [],
        );
      });

      storeTest("re-acquiring by the same owner renews the lease without bumping the epoch", async (store) => {
        const [first] = await store.shardAcquire({ owner: "a", shards: [9], leaseMs: 10 * SECOND, now: T0 });
        assert.ok(first);
        const [renewed] = await store.shardAcquire({ owner: "a", shards: [9], leaseMs: 10 * SECOND, now: T0 + 5 * SECOND });
        assert.deepEqual(renewed, { shard: 9, owner: "a", epoch: first.epoch, leaseUntil: T0 + 15 * SECOND });
        assert.deepEqual(
          (await store.shardList()).find((l) => l.shard === 9),
          renewed,
        );
      });

      storeTest("epochs keep growing across changes of owner", async (store) => {
        const epochs: number[] = [];
        let now = T0;
        for (const owner of ["a", "b", "a", "c"]) {
          const [l] = await store.shardAcquire({ owner, shards: [3], leaseMs: SECOND, now });
          assert.ok(l && l.owner === owner);
          epochs.push(l.epoch);
          now += 2 * SECOND;
        }
        for (let i = 1; i < epochs.length; i++) assert.ok(epochs[i]! > epochs[i - 1]!, `epochs grow: ${epochs.join(", ")}`);
      });
    });

    describe("executionRelease", () => {
      storeTest("a released lease is READY again from readyAt, without spending an attempt; the next grant is the next attempt", async (store) => {
        const epochs = await acquireAll(store, "n1");
        await readyExecution(store, epochs, { retry: { maxAttempts: 2, backoffSeconds: 10, maxBackoffSeconds: 3600 } });
        const first = await leaseOne(store, T0);
        assert.deepEqual(
          await store.executionRelease({
            items: [{ executionId: first.executionId, tenantId: "t1", attempt: 1, readyAt: T0 + MINUTE }],
            now: T0 + SECOND,
          }),
          ["ok"],
        );
        assert.deepEqual(await lease(store, T0 + 2 * SECOND), [], "leasable before readyAt");
        const second = await leaseOne(store, T0 + MINUTE);
        assert.equal(second.attempt, 2);
        assert.deepEqual([first.retry, second.retry], [false, false], "granted again after a hand-back: still a first attempt");
        // maxAttempts 2: had the released attempt counted, this failure would be the last
        const [outcome] = await store.executionFailMany({
          items: [fail({ executionId: second.executionId, tenantId: "t1", attempt: 2 })],
          now: T0 + MINUTE + SECOND,
        });
        assert.equal(outcome?.status === "ok" && outcome.state, "READY");
        assert.equal((await leaseOne(store, T0 + 2 * MINUTE)).retry, true, "after a failed attempt: a retry");
        assert.deepEqual(
          await store.executionRelease({
            items: [{ executionId: first.executionId, tenantId: "t1", attempt: 1, readyAt: T0 }],
            now: T0 + 2 * MINUTE,
          }),
          ["lost"],
        );
      });
      storeTest(
        "a released execution stays in its job's history, READY at the attempt it was handed back from, until its next grant",
        async (store) => {
          const epochs = await acquireAll(store, "n1");
          const { nj, executionId } = await readyExecution(store, epochs);
          await leaseOne(store, T0);
          await store.executionRelease({ items: [{ executionId, tenantId: "t1", attempt: 1, readyAt: T0 + MINUTE }], now: T0 + SECOND });
          const waiting = await history(store, "t1", nj.job.jobId);
          assert.deepEqual(
            waiting.map((r) => [r.executionId, r.attempt, r.state, r.readyAt]),
            [[executionId, 1, "READY", T0 + MINUTE]],
          );
          await leaseOne(store, T0 + MINUTE);
          const running = await history(store, "t1", nj.job.jobId);
          assert.deepEqual(
            running.map((r) => [r.attempt, r.state]),
            [[2, "RUNNING"]],
            "the handed-back grant left no attempt of its own",
          );
        },
      );
      storeTest("releasing the lease of a job cancelled meanwhile ends the execution CANCELLED; it is never leased again", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const { nj } = await readyExecution(store, epochs);
        const leased = await leaseOne(store, T0);
        const job = await getJob(store, nj);
        await store.jobTransition({
          tenantId: "t1",
          jobId: nj.job.jobId,
          fromVersion: job.version,
          state: "CANCELLED",
          due: null,
          cancelExecutions: true,
          now: T0 + SECOND,
        });
        assert.deepEqual(
          await store.executionRelease({ items: [{ executionId: leased.executionId, tenantId: "t1", attempt: 1, readyAt: T0 }], now: T0 + SECOND }),
          ["ok"],
        );
        assert.deepEqual(await lease(store, T0 + HOUR), []);
      });
    });

    describe("shardRelease", () => {
      storeTest("a released shard is free for the next owner at once, with a higher epoch", async (store) => {
        const a = await acquireAll(store, "node-a", T0, HOUR);
        await store.shardRelease({ owner: "node-a" });
        const b = await store.shardAcquire({ owner: "node-b", shards: [0, 1], leaseMs: HOUR, now: T0 + SECOND });
        assert.deepEqual(
          b.map((l) => l.owner),
          ["node-b", "node-b"],
        );
        assert.ok(b.every((l) => l.epoch > a.get(l.shard)!));
      });
      storeTest("releasing listed shards hands over only those, and only the owner's", async (store) => {
        await acquireAll(store, "node-a", T0, HOUR);
        await store.shardRelease({ owner: "node-a", shards: [1, 2] });
        await store.shardRelease({ owner: "node-b", shards: [3] });
        const b = await store.shardAcquire({ owner: "node-b", shards: [0, 1, 2, 3], leaseMs: HOUR, now: T0 + SECOND });
        assert.deepEqual(
          b.map((l) => l.shard),
          [1, 2],
          "the listed shards are free at once; shard 3 stays node-a's",
        );
        const owners = new Map((await store.shardList()).map((l) => [l.shard, l.owner]));
        assert.equal(owners.get(0), "node-a");
        assert.equal(owners.get(3), "node-a");
      });
    });

    describe("nodeHeartbeat / nodeList / nodeLeave", () => {
      storeTest("a node is live until its heartbeat expires; a heartbeat renews it; leaving removes it", async (store) => {
        await store.nodeHeartbeat({ nodeId: "node-b", address: "10.0.0.2:8080", now: T0, ttlMs: 10 * SECOND });
        await store.nodeHeartbeat({ nodeId: "node-a", address: null, now: T0, ttlMs: 10 * SECOND });
        assert.deepEqual(await store.nodeList({ now: T0 + 10 * SECOND }), [
          { nodeId: "node-a", address: null, lastHeartbeatAt: T0, expiresAt: T0 + 10 * SECOND },
          { nodeId: "node-b", address: "10.0.0.2:8080", lastHeartbeatAt: T0, expiresAt: T0 + 10 * SECOND },
        ]);
        await store.nodeHeartbeat({ nodeId: "node-a", address: "10.0.0.1:8080", now: T0 + 5 * SECOND, ttlMs: 10 * SECOND });
        const later = await store.nodeList({ now: T0 + 10 * SECOND + 1 });
        assert.deepEqual(
          later.map((n) => [n.nodeId, n.address, n.lastHeartbeatAt]),
          [["node-a", "10.0.0.1:8080", T0 + 5 * SECOND]],
        );
        await store.nodeLeave({ nodeId: "node-a" });
        assert.deepEqual(await store.nodeList({ now: T0 }), [
          { nodeId: "node-b", address: "10.0.0.2:8080", lastHeartbeatAt: T0, expiresAt: T0 + 10 * SECOND },
        ]);
      });
    });

    describe("poolCounts", () => {
      async function scenario(store: Store): Promise<void> {
        const epochs = await acquireAll(store, "n1");
        // t1/p1: one pending (retry later), one running, one queued, one succeeded, one cancelled.
        const pending = await readyExecution(store, epochs);
        await leaseOne(store, T0, { tenantId: "t1" });
        await store.executionFailMany({ items: [fail({ executionId: pending.executionId, tenantId: "t1", attempt: 1 })], now: T0 });
        const running = await readyExecution(store, epochs);
        assert.equal((await leaseOne(store, T0, { tenantId: "t1" })).executionId, running.executionId);
        const done = await readyExecution(store, epochs);
        assert.equal((await leaseOne(store, T0, { tenantId: "t1" })).executionId, done.executionId);
        await store.executionCompleteMany({ items: [{ executionId: done.executionId, tenantId: "t1", attempt: 1 }], now: T0 });
        const cancelled = await readyExecution(store, epochs);
        const cj = await getJob(store, cancelled.nj);
        await store.jobTransition({
          tenantId: "t1",
          jobId: cj.jobId,
          fromVersion: cj.version,
          state: "CANCELLED",
          due: null,
          cancelExecutions: true,
          now: T0,
        });
        await readyExecution(store, epochs); // queued
        // t2/p1: one queued. t1/p2: two queued.
        await readyExecution(store, epochs, { tenantId: "t2" });
        await readyExecution(store, epochs, { target: { type: "queue", pool: "p2" } });
        await readyExecution(store, epochs, { target: { type: "queue", pool: "p2" } });
      }

      storeTest("counts pending (readyAt > now), queued (readyAt <= now) and running per tenant and pool", async (store) => {
        await scenario(store);
        const rows = await store.poolCounts({ now: T0 + SECOND });
        assert.deepEqual(countsOf(rows, "t1", "p1"), { pending: 1, queued: 1, running: 1 });
        assert.deepEqual(countsOf(rows, "t2", "p1"), { pending: 0, queued: 1, running: 0 });
        assert.deepEqual(countsOf(rows, "t1", "p2"), { pending: 0, queued: 2, running: 0 });
        assert.equal(nonZero(rows).length, 3);
        // Once the retry is due it counts as queued.
        assert.deepEqual(countsOf(await store.poolCounts({ now: T0 + 10 * MINUTE }), "t1", "p1"), { pending: 0, queued: 2, running: 1 });
      });

      storeTest("filters by tenant and by pool", async (store) => {
        await scenario(store);
        const t1 = nonZero(await store.poolCounts({ tenantId: "t1", now: T0 + SECOND }));
        assert.deepEqual(t1.map((r) => `${r.tenantId}/${r.pool}`).sort(), ["t1/p1", "t1/p2"]);
        const p1 = nonZero(await store.poolCounts({ pool: "p1", now: T0 + SECOND }));
        assert.deepEqual(p1.map((r) => `${r.tenantId}/${r.pool}`).sort(), ["t1/p1", "t2/p1"]);
        const both = await store.poolCounts({ tenantId: "t2", pool: "p1", now: T0 + SECOND });
        assert.deepEqual(
          nonZero(both).map((r) => `${r.tenantId}/${r.pool}`),
          ["t2/p1"],
        );
        assert.deepEqual(countsOf(both, "t2", "p1"), { pending: 0, queued: 1, running: 0 });
        assert.deepEqual(nonZero(await store.poolCounts({ pool: "nope", now: T0 })), []);
      });

      storeTest("an empty store counts nothing", async (store) => {
        assert.deepEqual(nonZero(await store.poolCounts({ now: T0 })), []);
      });

      storeTest(
        "earlier hours' READY rows are queued, later hours' pending, and the current hour is split at now, whatever the priority",
        async (store) => {
          // T0 starts an hour; now is 20 minutes into it.
          const now = T0 + 20 * MINUTE;
          const due = [T0 - 2 * HOUR, T0 - MINUTE, T0 + 10 * MINUTE, now];
          const later = [now + 1, T0 + 59 * MINUTE, T0 + 3 * HOUR];
          await store.jobCreateMany({
            nodeId: "n1",
            jobs: [...due, ...later].map((at, i) => newJob({ at, priority: i % 2 === 0 ? 0 : 5 })),
            now: CREATED - 3 * HOUR,
          });
          assert.deepEqual(countsOf(await store.poolCounts({ now }), "t1", "p1"), { pending: 3, queued: 4, running: 0 });
          await store.executionCountsFold();
          assert.deepEqual(countsOf(await store.poolCounts({ now }), "t1", "p1"), { pending: 3, queued: 4, running: 0 });
          // Leasing the due ones moves them to running; the next hour makes two more queued.
          assert.equal((await lease(store, now, { max: 10 })).length, 4);
          assert.deepEqual(countsOf(await store.poolCounts({ now }), "t1", "p1"), { pending: 3, queued: 0, running: 4 });
          await store.executionCountsFold();
          assert.deepEqual(countsOf(await store.poolCounts({ now: T0 + HOUR }), "t1", "p1"), { pending: 1, queued: 2, running: 4 });
          assert.deepEqual(countsOf(await store.poolCounts({ now: T0 + 5 * HOUR }), "t1", "p1"), { pending: 0, queued: 3, running: 4 });
        },
      );

      storeTest("readyUpcoming counts READY executions by the minute they become due, over lanes and priorities, up to the limit", async (store) => {
        const now = T0 + 59 * MINUTE; // the window crosses into the next hour
        const ats = [
          now - SECOND,
          now,
          now + 30 * SECOND,
          now + MINUTE,
          now + 90 * SECOND,
          now + 150 * SECOND,
          now + 150 * SECOND,
          now + 5 * MINUTE,
          now + 6 * MINUTE,
        ];
        await store.jobCreateMany({
          nodeId: "n1",
          jobs: ats.map((at, i) =>
            newJob({ at, priority: i % 3, tenantId: i % 2 === 0 ? "t1" : "t2", target: { type: "queue", pool: i % 4 === 0 ? "p2" : "p1" } }),
          ),
          now: CREATED,
        });
        assert.deepEqual(await store.readyUpcoming({ now, minutes: 5, limit: 100 }), [2, 1, 2, 0, 1]);
        await store.executionCountsFold();
        assert.deepEqual(await store.readyUpcoming({ now, minutes: 5, limit: 100 }), [2, 1, 2, 0, 1]);
        const capped = await store.readyUpcoming({ now, minutes: 5, limit: 3 });
        assert.equal(
          capped.reduce((a, b) => a + b, 0),
          3,
          "stops at the limit",
        );
        // Leased, an execution is no longer upcoming: p1's due by now + 30 s are the one due at now and the one at now + 30 s.
        assert.equal((await lease(store, now + 30 * SECOND, { max: 10 })).length, 2);
        assert.deepEqual(await store.readyUpcoming({ now, minutes: 5, limit: 100 }), [1, 1, 2, 0, 1]);
      });

      pairTest("counts stay exact while two handles create, lease, complete and fold at once", async (a, b) => {
        let created = 0;
        let leased = 0;
        let completed = 0;
        for (let round = 0; round < RACE_ROUNDS / 5; round++) {
          const jobs = Array.from({ length: 4 }, (_, i) => newJob({ at: T0 - (i % 2) * HOUR }));
          const [, got] = await race(
            round,
            async () => {
              await a.jobCreateMany({ nodeId: "n1", jobs, now: CREATED - HOUR });
              await a.executionCountsFold();
            },
            async () => {
              const rows = await lease(b, T0, { max: 3 });
              await b.executionCountsFold();
              const done = rows.slice(0, 1);
              await b.executionCompleteMany({
                items: done.map((r) => ({ executionId: r.executionId, tenantId: "t1", attempt: r.attempt })),
                now: T0,
              });
              return { leased: rows.length, completed: done.length };
            },
          );
          created += jobs.length;
          leased += got.leased;
          completed += got.completed;
          const truth = { pending: 0, queued: created - leased, running: leased - completed };
          assert.deepEqual(countsOf(await a.poolCounts({ now: T0 }), "t1", "p1"), truth, `round ${round}, read by a`);
          assert.deepEqual(countsOf(await b.poolCounts({ now: T0 }), "t1", "p1"), truth, `round ${round}, read by b`);
        }
        await Promise.all([a.executionCountsFold(), b.executionCountsFold()]);
        assert.deepEqual(countsOf(await a.poolCounts({ now: T0 }), "t1", "p1"), {
          pending: 0,
          queued: created - leased,
          running: leased - completed,
        });
      });
    });

    describe("trace parents (engine/tracing.ts)", () => {
      const PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

      storeTest(
        "a job's trace parent reaches its executions: a one-off's at create, a recurring job's through its due entry and dispatch",
        async (store) => {
          const epochs = await acquireAll(store, "n1");
          const once = newJob();
          const cron = cronJob();
          const plain = newJob();
          await store.jobCreateMany({
            nodeId: "n1",
            jobs: [{ ...once, traceParent: PARENT }, { ...cron, traceParent: PARENT }, plain],
            now: CREATED,
          });
          const [entry] = await store
            .dueLoad({ shards: [cron.job.shard], before: T0 + 1, limit: 10 })
            .then((l) => l.filter((e) => e.jobId === cron.job.jobId));
          assert.equal(entry?.traceParent, PARENT);
          const res = await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entry!, next: null }] });
          const dispatched = res.dispatched[0]!.executionId;
          const leased = await lease(store, T0, { max: 10 });
          const byId = new Map(leased.map((r) => [r.executionId, r.traceParent]));
          const onceId = executionIdFor(once.job.jobId, T0);
          const plainId = executionIdFor(plain.job.jobId, T0);
          assert.deepEqual([byId.get(onceId), byId.get(dispatched), byId.has(plainId), byId.get(plainId)], [PARENT, PARENT, true, undefined]);
          const parents = await store.executionTraceParents({ executionIds: [onceId, dispatched, plainId, "nope"] });
          assert.deepEqual(
            [...parents].sort(),
            [
              [dispatched, PARENT],
              [onceId, PARENT],
            ].sort(),
          );
        },
      );
    });

    describe("workload minutes", () => {
      const lag = (bucket: number, n = 1): number[] => LAG_COLUMNS.map((_, i) => (i === bucket ? n : 0));
      const record = (o: Partial<WorkloadMinute> = {}): WorkloadMinute => ({
        minute: T0,
        tenantId: "t1",
        pool: "p1",
        started: 0,
        succeeded: 0,
        failed: 0,
        dead: 0,
        lag: lag(0, 0),
        ...o,
      });

      storeTest("adds counts from several writers to one minute's row, and sets the depth a sample gives", async (store) => {
        await store.workloadAdd({ records: [record({ started: 2, succeeded: 1, lag: lag(3, 2) }), record({ pool: "p2", failed: 1, dead: 1 })] });
        await store.workloadAdd({ records: [record({ started: 1, failed: 1, lag: lag(11) }), record({ pending: 5, queued: 2, running: 1 })] });
        // A writer without a sample leaves the depth as sampled.
        await store.workloadAdd({ records: [record({ succeeded: 1 })] });
        await store.workloadAdd({ records: [record({ minute: T0 + MINUTE, tenantId: "t2", started: 4, lag: lag(0, 4) })] });
        const all = await store.workloadMinutes({ from: T0 });
        assert.deepEqual(all, [
          record({
            started: 3,
            succeeded: 2,
            failed: 1,
            lag: LAG_COLUMNS.map((_, i) => (i === 3 ? 2 : i === 11 ? 1 : 0)),
            pending: 5,
            queued: 2,
            running: 1,
          }),
          record({ pool: "p2", failed: 1, dead: 1, pending: null, queued: null, running: null }),
          record({ minute: T0 + MINUTE, tenantId: "t2", started: 4, lag: lag(0, 4), pending: null, queued: null, running: null }),
        ]);
        assert.deepEqual(
          (await store.workloadMinutes({ from: T0, tenantId: "t2" })).map((m) => m.tenantId),
          ["t2"],
        );
        assert.deepEqual(
          (await store.workloadMinutes({ from: T0 + MINUTE })).map((m) => m.minute),
          [T0 + MINUTE],
        );
        assert.equal(await store.workloadPurge({ before: T0 + MINUTE }), 2);
        assert.deepEqual(
          (await store.workloadMinutes({ from: 0 })).map((m) => m.minute),
          [T0 + MINUTE],
        );
      });

      pairTest("two nodes adding to the same minute at once lose nothing", async (a, b) => {
        for (let round = 0; round < RACE_ROUNDS / 5; round++) {
          const minute = T0 + round * MINUTE;
          await race(
            round,
            () => a.workloadAdd({ records: [record({ minute, started: 1, lag: lag(1) }), record({ minute, pool: "p2", started: 1 })] }),
            () => b.workloadAdd({ records: [record({ minute, pool: "p2", started: 2 }), record({ minute, started: 2, lag: lag(1, 2) })] }),
          );
          const rows = await a.workloadMinutes({ from: minute });
          assert.deepEqual(
            rows.filter((r) => r.minute === minute).map((r) => [r.pool, r.started, r.lag[1]]),
            [
              ["p1", 3, 3],
              ["p2", 3, 0],
            ],
            `round ${round}`,
          );
        }
      });
    });

    describe("API keys", () => {
      const hex = (n: number): string => n.toString(16).padStart(64, "0");
      let seq = 0;
      /** Creates a key (a fresh id and digest unless given); asserts it was stored. */
      async function createKey(
        store: Store,
        fields: Partial<{ id: string; tenantId: string; role: "admin" | "client" | "worker"; digest: string; name: string; now: number }> = {},
      ): Promise<ApiKeyRecord> {
        seq++;
        const created = await store.apiKeyCreate({
          id: fields.id ?? `ak_${String(seq).padStart(4, "0")}`,
          tenantId: fields.tenantId ?? "t1",
          role: fields.role ?? "worker",
          digest: fields.digest ?? hex(seq),
          ...(fields.name !== undefined ? { name: fields.name } : {}),
          now: fields.now ?? T0,
        });
        assert.ok(created, "the key was created");
        return created;
      }

      storeTest("create answers the active key; find looks it up by digest", async (store) => {
        const key = await createKey(store, { id: "ak_a", tenantId: "t1", role: "admin", digest: hex(1), name: "ops laptop", now: T0 });
        const expected: ApiKeyRecord = {
          id: "ak_a",
          tenantId: "t1",
          role: "admin",
          digest: hex(1),
          name: "ops laptop",
          createdAt: T0,
          revokedAt: null,
        };
        assert.deepEqual(key, expected);
        assert.deepEqual(await store.apiKeyFind({ digest: hex(1) }), expected);
        assert.equal(await store.apiKeyFind({ digest: hex(2) }), null);
        const unnamed = await createKey(store, { id: "ak_b", digest: hex(2) });
        assert.equal(unnamed.name, null);
      });

      storeTest("a taken id or digest answers null and writes nothing, audit included", async (store) => {
        await createKey(store, { id: "ak_a", digest: hex(1), tenantId: "t1" });
        const audit = { tenantId: "t1", at: T0, actor: "admin-key", action: "api-key.create", subject: "ak_x" };
        assert.equal(await store.apiKeyCreate({ id: "ak_a", tenantId: "t1", role: "client", digest: hex(2), now: T0, audit }), null);
        assert.equal(await store.apiKeyCreate({ id: "ak_b", tenantId: "t2", role: "client", digest: hex(1), now: T0, audit }), null);
        assert.equal(await store.apiKeyFind({ digest: hex(2) }), null);
        assert.equal((await store.apiKeyList({ limit: 10 })).length, 1);
        assert.deepEqual(await store.auditList({ tenantId: "t1", limit: 10 }), []);
        // a revoked key's digest stays taken
        await store.apiKeyRevoke({ id: "ak_a", now: T0 + 1 });
        assert.equal(await store.apiKeyCreate({ id: "ak_c", tenantId: "t1", role: "client", digest: hex(1), now: T0 + 2 }), null);
      });

      storeTest("create is audited in the same call", async (store) => {
        const audit = { tenantId: "t1", at: T0, actor: "admin-key", action: "api-key.create", subject: "ak_a", details: { role: "worker" } };
        await store.apiKeyCreate({ id: "ak_a", tenantId: "t1", role: "worker", digest: hex(1), now: T0, audit });
        const entries = await store.auditList({ tenantId: "t1", limit: 10 });
        assert.equal(entries.length, 1);
        const { id: _id, ...entry } = entries[0]!;
        assert.deepEqual(entry, audit);
      });

      storeTest("revoke: find no longer answers, the key keeps its first revokedAt, repeating it is a no-op", async (store) => {
        const key = await createKey(store, { id: "ak_a", digest: hex(1) });
        const revoked = await store.apiKeyRevoke({ id: "ak_a", now: T0 + MINUTE });
        assert.deepEqual(revoked, { ...key, revokedAt: T0 + MINUTE });
        assert.equal(await store.apiKeyFind({ digest: hex(1) }), null);
        assert.deepEqual(await store.apiKeyRevoke({ id: "ak_a", now: T0 + HOUR }), { ...key, revokedAt: T0 + MINUTE });
        assert.equal(await store.apiKeyRevoke({ id: "ak_nope", now: T0 }), null);
      });

      storeTest("revoke with a tenant touches only that tenant's key", async (store) => {
        const key = await createKey(store, { id: "ak_a", tenantId: "t1", digest: hex(1) });
        assert.equal(await store.apiKeyRevoke({ id: "ak_a", tenantId: "t2", now: T0 + 1 }), null);
        assert.deepEqual(await store.apiKeyFind({ digest: hex(1) }), key);
        assert.equal((await store.apiKeyRevoke({ id: "ak_a", tenantId: "t1", now: T0 + 2 }))?.revokedAt, T0 + 2);
      });

      storeTest("revoke is audited under the key's tenant, only when it revoked the key", async (store) => {
        await createKey(store, { id: "ak_a", tenantId: "t2", digest: hex(1) });
        const audit = { at: T0 + 1, actor: "root", action: "api-key.revoke", subject: "ak_a" };
        await store.apiKeyRevoke({ id: "ak_a", now: T0 + 1, audit });
        await store.apiKeyRevoke({ id: "ak_a", now: T0 + 2, audit: { ...audit, at: T0 + 2 } });
        await store.apiKeyRevoke({ id: "ak_nope", now: T0 + 3, audit: { ...audit, at: T0 + 3, subject: "ak_nope" } });
        const entries = await store.auditList({ tenantId: "t2", limit: 10 });
        assert.equal(entries.length, 1);
        const { tenantId, at, actor, action, subject } = entries[0]!;
        assert.deepEqual({ tenantId, at, actor, action, subject }, { ...audit, tenantId: "t2" });
        assert.deepEqual(await store.auditList({ tenantId: "t1", limit: 10 }), []);
      });

      storeTest("list: newest first, revoked keys included, one tenant or all, paged with the after cursor", async (store) => {
        await createKey(store, { id: "ak_a", tenantId: "t1", now: T0 });
        await createKey(store, { id: "ak_b", tenantId: "t2", now: T0 + 1 });
        const c = await createKey(store, { id: "ak_c", tenantId: "t1", now: T0 + 1 });
        await createKey(store, { id: "ak_d", tenantId: "t1", now: T0 + 2 });
        await store.apiKeyRevoke({ id: "ak_c", now: T0 + 3 });
        const all = await store.apiKeyList({ limit: 10 });
        assert.deepEqual(
          all.map((k) => k.id),
          ["ak_d", "ak_c", "ak_b", "ak_a"],
        );
        assert.equal(all[1]?.revokedAt, T0 + 3);
        assert.deepEqual(
          (await store.apiKeyList({ tenantId: "t1", limit: 10 })).map((k) => k.id),
          ["ak_d", "ak_c", "ak_a"],
        );
        assert.deepEqual(await store.apiKeyList({ tenantId: "t3", limit: 10 }), []);
        // pages of two, by (createdAt, id): ties on createdAt are ordered by id
        const seen: string[] = [];
        let after: { createdAt: number; id: string } | undefined;
        for (;;) {
          const page = await store.apiKeyList({ limit: 2, ...(after ? { after } : {}) });
          seen.push(...page.map((k) => k.id));
          const last = page.at(-1);
          if (page.length < 2 || !last) break;
          after = { createdAt: last.createdAt, id: last.id };
        }
        assert.deepEqual(seen, ["ak_d", "ak_c", "ak_b", "ak_a"]);
        assert.deepEqual(
          (await store.apiKeyList({ tenantId: "t1", limit: 10, after: { createdAt: c.createdAt, id: c.id } })).map((k) => k.id),
          ["ak_a"],
        );
      });

      storeTest("keys survive a repeated migrate", async (store) => {
        await createKey(store, { id: "ak_a", digest: hex(1) });
        await store.migrate();
        assert.equal((await store.apiKeyFind({ digest: hex(1) }))?.id, "ak_a");
      });
    });

    describe("signing secrets", () => {
      storeTest("get is null until ensure creates the secret; ensure then answers it without generating again", async (store) => {
        assert.equal(await store.signingSecretGet({ tenantId: "t1" }), null);
        let calls = 0;
        const generate = (): string => `whsec_${++calls}`;
        assert.equal(await store.signingSecretEnsure({ tenantId: "t1", generate, now: T0 }), "whsec_1");
        assert.equal(await store.signingSecretGet({ tenantId: "t1" }), "whsec_1");
        assert.equal(await store.signingSecretEnsure({ tenantId: "t1", generate, now: T0 + 1000 }), "whsec_1");
        assert.equal(await store.signingSecretGet({ tenantId: "t1" }), "whsec_1");
      });

      storeTest("each tenant has its own secret", async (store) => {
        assert.equal(await store.signingSecretEnsure({ tenantId: "t1", generate: () => "a", now: T0 }), "a");
        assert.equal(await store.signingSecretEnsure({ tenantId: "t2", generate: () => "b", now: T0 }), "b");
        assert.equal(await store.signingSecretGet({ tenantId: "t1" }), "a");
        assert.equal(await store.signingSecretGet({ tenantId: "t2" }), "b");
        assert.equal(await store.signingSecretGet({ tenantId: "t3" }), null);
      });

      storeTest("concurrent first ensures all answer the same secret", async (store) => {
        let n = 0;
        const results = await Promise.all(
          Array.from({ length: 8 }, () => store.signingSecretEnsure({ tenantId: "t1", generate: () => `s${++n}`, now: T0 })),
        );
        assert.equal(new Set(results).size, 1, `one secret for all: ${results.join(", ")}`);
        assert.equal(await store.signingSecretGet({ tenantId: "t1" }), results[0]);
      });

      storeTest("the secret survives a repeated migrate", async (store) => {
        await store.signingSecretEnsure({ tenantId: "t1", generate: () => "kept", now: T0 });
        await store.migrate();
        assert.equal(await store.signingSecretGet({ tenantId: "t1" }), "kept");
      });
    });

    // Fences the sections above leave untested: each of these goes red when
    // its one check is deleted from the driver.
    // Lease time (store.ts): without `now` a driver sets and judges leases by
    // its own clock, which for a networked store is not this host's. So these
    // tests pin nothing: they check that a lease's deadline lies within the
    // call's window, give or take STORE_CLOCK_TOLERANCE_MS, and that leases
    // pinned far in the past (T0) are judged expired by the store's clock.
    describe("the store's own clock (now omitted)", () => {
      const window = async <T>(call: () => Promise<T>): Promise<{ value: T; from: number; to: number }> => {
        const from = Date.now() - STORE_CLOCK_TOLERANCE_MS;
        const value = await call();
        return { value, from, to: Date.now() + STORE_CLOCK_TOLERANCE_MS };
      };

      storeTest("storeTime reads the store's clock: within the call's window", async (store) => {
        const { value, from, to } = await window(() => store.storeTime());
        assert.ok(Number.isSafeInteger(value) && value >= from && value <= to, `${value} in [${from}, ${to}]`);
      });

      storeTest("a lease granted, renewed and completed by the store's clock: its deadline is now + leaseMs in the call's window", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await readyExecution(store, epochs);
        const { value: rows, from, to } = await window(() => store.executionLease({ pool: "p1", workerId: "w1", max: 1, leaseMs: LEASE_MS }));
        const leased = rows[0];
        assert.ok(leased, "leased");
        assert.equal(leased.executionId, r.executionId);
        assert.ok(leased.leaseUntil - LEASE_MS >= from && leased.leaseUntil - LEASE_MS <= to, "leaseUntil - leaseMs lies within the call");
        const beat = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1 });
        assert.equal(beat.status, "ok");
        assert.ok(beat.status === "ok" && beat.leaseUntil >= leased.leaseUntil, "a renewal never moves the deadline back");
        const items = [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }];
        assert.deepEqual(await store.executionCompleteMany({ items }), [{ status: "ok", state: "SUCCEEDED", pool: "p1", tenantId: "t1" }]);
      });

      storeTest("a lease that ended long ago by the store's clock is lost to heartbeats and reaped; a fresh one is not", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const stale = await runningExecution(store, epochs);
        const fresh = await readyExecution(store, epochs);
        assert.equal((await store.executionLease({ pool: "p1", workerId: "w2", max: 1, leaseMs: LEASE_MS }))[0]?.executionId, fresh.executionId);
        assert.deepEqual(unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: stale.executionId, attempt: 1 })), {
          status: "lost",
        });
        const reaped = await store.executionReap({ limit: 10 });
        assert.deepEqual(
          reaped.map((x) => x.executionId),
          [stale.executionId],
        );
      });

      storeTest("a shard lease that ended long ago is taken over; a fresh one holds against another owner", async (store) => {
        const [old] = await store.shardAcquire({ owner: "a", shards: [3], leaseMs: 10 * SECOND, now: T0 });
        assert.ok(old);
        const { value, from, to } = await window(() => store.shardAcquire({ owner: "b", shards: [3], leaseMs: 10 * SECOND }));
        const [taken] = value;
        assert.equal(taken?.owner, "b");
        assert.ok(taken.epoch > old.epoch, "a new owner bumps the epoch");
        assert.ok(taken.leaseUntil - 10 * SECOND >= from && taken.leaseUntil - 10 * SECOND <= to, "leaseUntil - leaseMs lies within the call");
        assert.deepEqual(await store.shardAcquire({ owner: "a", shards: [3], leaseMs: 10 * SECOND }), []);
      });
    });

    describe("fencing", () => {
      storeTest(
        "dispatch is fenced by owner: another node with the owner's epochs, or the owner after releasing, dispatches nothing",
        async (store) => {
          const epochs = await acquireAll(store, "node-a");
          const nj = cronJob();
          await createOne(store, nj);
          const items = [{ entry: entryOf(nj), next: null }];
          assert.deepEqual((await store.dispatchMany({ nodeId: "node-b", epochs, now: T0, items })).fenced, [nj.job.jobId]);
          await store.shardRelease({ owner: "node-a" });
          assert.deepEqual((await store.dispatchMany({ nodeId: "node-a", epochs, now: T0, items })).fenced, [nj.job.jobId]);
          assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
        },
      );

      storeTest("complete is fenced by attempt: a stale attempt answers lost after a later attempt succeeded", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
        const second = await leaseOne(store, T0 + LEASE_MS + 2);
        assertOk(
          (
            await store.executionCompleteMany({
              items: [{ executionId: r.executionId, tenantId: "t1", attempt: second.attempt }],
              now: T0 + LEASE_MS + 3,
            })
          )[0],
          "SUCCEEDED",
        );
        const [late] = await store.executionCompleteMany({
          items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }],
          now: T0 + LEASE_MS + 4,
        });
        assert.deepEqual(unmarked(late), { status: "lost" });
      });

      storeTest("release is fenced by attempt: a stale attempt answers lost and the running one keeps its lease", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
        const second = await leaseOne(store, T0 + LEASE_MS + 2);
        const release = { executionId: r.executionId, tenantId: "t1", attempt: 1, readyAt: T0 };
        assert.deepEqual(await store.executionRelease({ items: [release], now: T0 + LEASE_MS + 3 }), ["lost"]);
        assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, second.attempt).state, "RUNNING");
      });

      storeTest("release is fenced by lease expiry: an expired lease answers lost, even before the reaper ran", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        const release = { executionId: r.executionId, tenantId: "t1", attempt: 1, readyAt: T0 };
        assert.deepEqual(await store.executionRelease({ items: [release], now: r.leased.leaseUntil + 1 }), ["lost"]);
        assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING");
      });
    });

    describe("retention", () => {
      /** A job in its own pool (so leases never mix), leased at T0 and completed at `at`. */
      async function succeededAt(store: Store, epochs: ReadonlyMap<number, number>, at: number): Promise<Ready> {
        const r = await runningExecution(store, epochs, { target: { type: "queue", pool: `p-${newId(at)}` } });
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: at }))[0],
          "SUCCEEDED",
        );
        return r;
      }

      async function deadAt(store: Store, epochs: ReadonlyMap<number, number>, at: number): Promise<Ready> {
        const r = await runningExecution(store, epochs, { target: { type: "queue", pool: `p-${newId(at)}` }, payload: { order: 7 } });
        const [outcome] = await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error: FATAL })],
          now: at,
        });
        assertOk(outcome, "DEAD");
        return r;
      }

      const executionIds = async (store: Store, r: Ready): Promise<string[]> => (await history(store, "t1", r.job.jobId)).map((h) => h.executionId);

      /** What the engine does with an archive: reads the due rows, then removes exactly those. */
      async function expireAndPurge(
        store: Store,
        p: { kind: RetentionKind; before: number; limit: number },
      ): Promise<{ rows: PurgedRow[]; deleted: number }> {
        const rows = await store.retentionExpired(p);
        return { rows, deleted: (await store.retentionPurge({ ...p, only: rows })).deleted };
      }

      storeTest("executions: removes ended ones that finished before `before`, with their attempts; never a READY or RUNNING one", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const old = await succeededAt(store, epochs, T0 + SECOND);
        const oldDead = await deadAt(store, epochs, T0 + 2 * SECOND);
        const recent = await succeededAt(store, epochs, T0 + 20 * SECOND);
        const running = await runningExecution(store, epochs, { target: { type: "queue", pool: "p-running" } });
        const ready = await readyExecution(store, epochs, { target: { type: "queue", pool: "p-ready" } });

        assert.deepEqual(await store.retentionPurge({ kind: "executions", before: T0 + 10 * SECOND, limit: 100 }), { deleted: 2 });
        assert.deepEqual(await executionIds(store, old), []);
        assert.deepEqual(await executionIds(store, oldDead), [], "the attempts went with the execution");
        assert.deepEqual(await store.deadLetterList({ tenantId: "t1", limit: 10 }), [], "a dead letter follows the history retention");
        // The same occurrence made again (a backfill) starts afresh: no attempt of the removed one is left behind.
        await store.executionCreateMany({
          tenantId: "t1",
          jobId: oldDead.job.jobId,
          nodeId: "n1",
          now: T0 + MINUTE,
          items: [{ scheduledFor: oldDead.scheduledFor, readyAt: T0 + MINUTE }],
        });
        assert.deepEqual(
          (await history(store, "t1", oldDead.job.jobId)).map((h) => [h.executionId, h.attempt]),
          [[oldDead.executionId, 0]],
        );
        assert.deepEqual(await executionIds(store, recent), [recent.executionId]);

        assert.deepEqual(await store.retentionPurge({ kind: "executions", before: T0 + 1000 * HOUR, limit: 100 }), { deleted: 1 });
        assert.deepEqual(await executionIds(store, running), [running.executionId], "RUNNING is never removed");
        assert.deepEqual(await executionIds(store, ready), [ready.executionId], "READY is never removed");
        assert.equal((await lease(store, T0 + 1000 * HOUR, { pool: "p-ready" })).length, 1, "and still leasable");
      });

      storeTest("a batch removes at most `limit` rows, oldest first", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const done: Ready[] = [];
        for (let i = 5; i >= 1; i--) done.push(await succeededAt(store, epochs, T0 + i * SECOND));
        const before = T0 + MINUTE;
        assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 2 }), { deleted: 2 });
        const left = async () => (await Promise.all(done.map((r) => executionIds(store, r)))).flat();
        assert.deepEqual(
          await left(),
          done.slice(0, 3).map((r) => r.executionId),
          "the two that finished first went",
        );
        assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 2 }), { deleted: 2 });
        assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 2 }), { deleted: 1 });
        assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 2 }), { deleted: 0 });
      });

      storeTest("retentionExpired answers the due rows oldest first, as stored (attempts included), and removes nothing", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await deadAt(store, epochs, T0 + 2 * SECOND);
        const older = await succeededAt(store, epochs, T0 + SECOND);
        const recent = await succeededAt(store, epochs, T0 + 20 * SECOND);
        const p = { kind: "executions", before: T0 + 10 * SECOND, limit: 10 } as const;
        const rows = await store.retentionExpired(p);
        assert.deepEqual(
          rows.map((x) => x.id),
          [older.executionId, r.executionId],
        );
        assert.deepEqual(
          (await store.retentionExpired({ ...p, limit: 1 })).map((x) => x.id),
          [older.executionId],
          "bounded by limit, oldest first",
        );
        const row = rows[1]!;
        assert.deepEqual([row.kind, row.id, row.tenantId, row.jobId, row.at], ["executions", r.executionId, "t1", r.job.jobId, T0 + 2 * SECOND]);
        assert.equal(row.row.state, "DEAD");
        assert.deepEqual(row.row.payload, { order: 7 }, "JSON columns are parsed");
        const attempts = row.row.attempts as Record<string, unknown>[];
        assert.deepEqual(
          attempts.map((a) => [a.attempt, a.state]),
          [[1, "DEAD"]],
        );
        assert.deepEqual(attempts[0]!.error, FATAL);
        for (const x of [r, older, recent]) assert.deepEqual(await executionIds(store, x), [x.executionId], "nothing removed");
        assert.equal((await store.deadLetterList({ tenantId: "t1", limit: 10 })).length, 1);
      });

      storeTest("retentionPurge with `only` removes exactly the listed rows (at most `limit`), with their attempts", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const due = [
          await succeededAt(store, epochs, T0 + SECOND),
          await deadAt(store, epochs, T0 + 2 * SECOND),
          await succeededAt(store, epochs, T0 + 3 * SECOND),
        ];
        const p = { kind: "executions", before: T0 + MINUTE, limit: 10 } as const;
        const [first, second, third] = await store.retentionExpired(p);
        assert.deepEqual(await store.retentionPurge({ ...p, only: [second!] }), { deleted: 1 });
        assert.deepEqual(await executionIds(store, due[1]!), [], "the listed one went, its attempts too");
        assert.deepEqual(await store.retentionPurge({ ...p, limit: 1, only: [third!, first!] }), { deleted: 1 });
        assert.deepEqual(await executionIds(store, due[2]!), []);
        assert.deepEqual(await executionIds(store, due[0]!), [due[0]!.executionId], "beyond limit: kept");
        assert.deepEqual(await store.retentionPurge({ ...p, only: [] }), { deleted: 0 });
      });

      // The compare-and-set: what is due is checked again by the delete itself.
      storeTest(
        "retentionPurge with `only` keeps a row that is no longer due: a replayed dead letter, a job brought back or given an execution, a later `before`",
        async (store) => {
          const epochs = await acquireAll(store, "n1");
          const r = await deadAt(store, epochs, T0 + SECOND);
          const [deadRow] = await store.retentionExpired({ kind: "executions", before: T0 + MINUTE, limit: 10 });
          const replay = { tenantId: "t1", at: T0 + 2 * SECOND, actor: "admin", action: "dead_letter.replay", subject: r.executionId };
          const replayed = await store.deadLetterReplay({ tenantId: "t1", executionId: r.executionId, now: T0 + 2 * SECOND, audit: replay });
          assert.ok(replayed);
          assert.deepEqual(await store.retentionPurge({ kind: "executions", before: T0 + MINUTE, limit: 10, only: [deadRow!] }), { deleted: 0 });
          assert.deepEqual(
            (await history(store, "t1", r.job.jobId)).map((h) => [h.attempt, h.state]),
            [[1, "DEAD"]],
            "its attempt stays",
          );
          assert.equal((await lease(store, T0 + 3 * SECOND, { pool: replayed.pool })).length, 1, "and the replayed execution is leased");

          const jobs = [cronJob({ at: T0 + 1000 * HOUR }), cronJob({ at: T0 + 1000 * HOUR }), cronJob({ at: T0 + 1000 * HOUR })];
          for (const nj of jobs) {
            await createOne(store, nj);
            assert.ok(await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 }));
          }
          const p = { kind: "jobs", before: T0 + MINUTE, limit: 10 } as const;
          const rows = await store.retentionExpired(p);
          assert.equal(rows.length, 3);
          const [revived, withExecution, later] = jobs.map((nj) => nj.job.jobId);
          assert.ok(await store.jobTransition({ tenantId: "t1", jobId: revived!, fromVersion: 2, state: "SCHEDULED", due: null, now: T0 }));
          await store.executionCreateMany({
            tenantId: "t1",
            jobId: withExecution!,
            nodeId: "n1",
            now: T0,
            items: [{ scheduledFor: T0, readyAt: T0 }],
          });
          assert.deepEqual(await store.retentionPurge({ ...p, only: rows }), { deleted: 1 });
          assert.equal(await store.jobGet({ tenantId: "t1", jobId: later! }), null);
          assert.equal((await store.jobGet({ tenantId: "t1", jobId: revived! }))?.state, "SCHEDULED");
          assert.equal((await store.jobGet({ tenantId: "t1", jobId: withExecution! }))?.state, "CANCELLED");

          const [entry] = await store.retentionExpired({ kind: "audit", before: T0 + HOUR, limit: 1 });
          assert.ok(entry);
          assert.deepEqual(
            await store.retentionPurge({ kind: "audit", before: entry.at, limit: 1, only: [entry] }),
            { deleted: 0 },
            "not before `before`: kept",
          );
          assert.deepEqual(await store.retentionPurge({ kind: "audit", before: T0 + HOUR, limit: 1, only: [entry] }), { deleted: 1 });
        },
      );

      storeTest("jobs: removes ended jobs last changed before `before` once no execution is left; never a live one", async (store) => {
        const epochs = await acquireAll(store, "n1");
        const cancelled = cronJob({ at: T0 + 1000 * HOUR });
        await createOne(store, cancelled);
        assert.ok(await store.jobTransition({ tenantId: "t1", jobId: cancelled.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 }));
        const completed = await succeededAt(store, epochs, T0 + SECOND);
        assert.equal((await getJob(store, completed.nj)).state, "COMPLETED");
        const live = cronJob({ at: T0 + 1000 * HOUR });
        await createOne(store, live);
        const paused = cronJob({ at: T0 + 1000 * HOUR });
        await createOne(store, paused);
        assert.ok(await store.jobTransition({ tenantId: "t1", jobId: paused.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: T0 }));

        const purge = () => expireAndPurge(store, { kind: "jobs", before: T0 + MINUTE, limit: 10 });
        const { rows, deleted } = await purge();
        assert.equal(deleted, 1);
        assert.equal(await store.jobGet({ tenantId: "t1", jobId: cancelled.job.jobId }), null);
        assert.deepEqual(
          rows.map((a) => [a.kind, a.id, a.jobId, a.at]),
          [["jobs", cancelled.job.jobId, cancelled.job.jobId, T0]],
        );
        assert.equal((await getJob(store, completed.nj)).state, "COMPLETED", "kept while its execution is");

        await store.retentionPurge({ kind: "executions", before: T0 + MINUTE, limit: 10 });
        assert.equal((await store.retentionPurge({ kind: "jobs", before: T0 + MINUTE, limit: 10 })).deleted, 1, "without `only` too");
        assert.equal(await store.jobGet({ tenantId: "t1", jobId: completed.job.jobId }), null);
        assert.equal((await getJob(store, live)).state, "SCHEDULED");
        assert.equal((await getJob(store, paused)).state, "PAUSED");
        assert.equal((await store.dueLoad({ shards: [...epochs.keys()], before: T0 + 2000 * HOUR, limit: 10 })).length, 2, "live due entries kept");
      });

      storeTest("idempotency: removes keys stored before `before`; the same key then creates a new job", async (store) => {
        const key = (k: string, requestHash: string) => ({ idempotency: { key: k, requestHash } });
        const first = newJob(key("k-old", "h1"));
        await createOne(store, first, T0);
        await createOne(store, newJob(key("k-new", "h1")), T0 + HOUR);
        const { rows, deleted } = await expireAndPurge(store, { kind: "idempotency", before: T0 + MINUTE, limit: 10 });
        assert.equal(deleted, 1);
        assert.deepEqual(
          rows.map((a) => [a.kind, a.id, a.tenantId, a.jobId, a.at]),
          [["idempotency", "k-old", "t1", first.job.jobId, T0]],
        );
        const [again] = await store.jobCreateMany({ nodeId: "n1", jobs: [newJob(key("k-old", "h2"))], now: T0 + 2 * HOUR });
        assert.equal(again?.status, "created", "a removed key no longer answers");
        const [kept] = await store.jobCreateMany({ nodeId: "n1", jobs: [newJob(key("k-new", "h2"))], now: T0 + 2 * HOUR });
        assert.equal(kept?.status, "idempotency_mismatch", "a later key is kept");
      });

      storeTest("audit: removes entries recorded before `before`, oldest first", async (store) => {
        const entry = (at: number, subject: string) => ({ tenantId: "t1", at, actor: "admin", action: "key.create", subject, details: { n: 1 } });
        for (const [id, at] of [
          ["ak_2", T0 + SECOND],
          ["ak_1", T0],
          ["ak_3", T0 + HOUR],
        ] as const) {
          await store.apiKeyCreate({ id, tenantId: "t1", role: "worker", digest: id, now: at, audit: entry(at, id) });
        }
        const { rows, deleted } = await expireAndPurge(store, { kind: "audit", before: T0 + MINUTE, limit: 1 });
        assert.equal(deleted, 1);
        assert.deepEqual(
          rows.map((a) => [a.kind, a.row.subject, a.jobId, a.at, a.row.details]),
          [["audit", "ak_1", null, T0, { n: 1 }]],
        );
        assert.deepEqual(await store.retentionPurge({ kind: "audit", before: T0 + MINUTE, limit: 10 }), { deleted: 1 });
        assert.deepEqual(
          (await store.auditList({ tenantId: "t1", limit: 10 })).map((a) => a.subject),
          ["ak_3"],
        );
      });
    });

    // Two handles on one database race each other, many rounds each: SQLite's
    // single writer serialises them, a networked driver must hold the same
    // sentences under true concurrency.
    describe("races (two handles on one database)", () => {
      pairTest(
        "bulk replay: two nodes claim one replay, one holds it; its steps and single replays from the other handle replay each dead letter once",
        async (a, b) => {
          for (let round = 0; round < 10; round++) {
            const tenantId = `replay-${round}`;
            const ids = await deadLetters(a, 6, { tenantId });
            const created = await a.replayCreate(bulkReplay({ filter: { deadBefore: REPLAY_AT } }, { tenantId, ratePerSecond: 1000 }));
            const [byA, byB] = await race(
              round,
              () => a.replayClaim({ owner: "na", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 100 }),
              () => b.replayClaim({ owner: "nb", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 100 }),
            );
            const holders = [...byA, ...byB].filter((r) => r.replayId === created.replayId);
            assert.equal(holders.length, 1, `round ${round}: one node holds the replay`);
            const owner = holders[0]!.owner!;
            const driver = owner === "na" ? a : b;
            const other = owner === "na" ? b : a;
            const single = async (): Promise<number> => {
              let won = 0;
              for (const id of [...ids].reverse()) {
                const replayed = await other.deadLetterReplay({
                  tenantId,
                  executionId: id,
                  now: REPLAY_AT,
                  audit: { tenantId, at: REPLAY_AT, actor: "x", action: "dead-letter.replay", subject: id },
                });
                if (replayed) won++;
              }
              return won;
            };
            const [steps, singles] = await race(round, () => driveReplay(driver, created.replayId, { owner, limit: 2 }), single);
            assert.equal(steps.replay.replayed, steps.replayed.length);
            assert.equal(
              steps.replayed.length + singles,
              ids.length,
              `round ${round}: every dead letter replayed exactly once (bulk ${steps.replayed.length}, single ${singles})`,
            );
            assert.deepEqual(await a.deadLetterList({ tenantId, limit: 10 }), []);
          }
        },
      );

      pairTest(
        "two leases at once both charge a tenant's dispatch rate: by any time, grants stay within a burst and a batch of the rate",
        async (a, b) => {
          for (let round = 0; round < 10; round++) {
            const tenantId = `rated-${round}`;
            await a.tenantLimitsPut({ tenantId, limits: { ...DEFAULT_TENANT_LIMITS, dispatchRatePerSecond: 4 }, now: CREATED });
            const jobs = Array.from({ length: 40 }, () => newJob({ tenantId }));
            await a.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
            let granted = 0;
            for (let s = 0; s < 3; s++) {
              const at = T0 + s * SECOND;
              const [x, y] = await race(
                round,
                () => lease(a, at, { max: 10, tenantId }),
                () => lease(b, at, { max: 10 }),
              );
              granted += x.length + y.length;
              // A burst (4), the rate since T0, and one concurrent batch's overshoot (4) at most.
              assert.ok(granted <= 4 + 4 * s + 4, `round ${round}, ${s} s: ${granted} granted`);
            }
            assert.ok(granted >= 4 * 3 - 4, `round ${round}: the rate is used, ${granted} granted`);
          }
        },
      );

      pairTest("two leasers on one pool: every ready execution is granted exactly once, no attempt twice", async (a, b) => {
        const READY = 6;
        for (let round = 0; round < RACE_ROUNDS; round++) {
          const pool = `race-${round}`;
          // One-offs due at T0: READY since their creation.
          const jobs = Array.from({ length: READY }, () => newJob({ target: { type: "queue", pool } }));
          await a.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
          const ready = jobs.map((nj) => executionIdFor(nj.job.jobId, T0));
          /** Leases two at a time until the pool answers none (or more calls than there is work). */
          const drain = async (store: Store, workerId: string): Promise<LeasedRow[]> => {
            const got: LeasedRow[] = [];
            for (let call = 0; call <= READY; call++) {
              const rows = await lease(store, T0, { pool, workerId, max: 2 });
              if (rows.length === 0) break;
              got.push(...rows);
            }
            return got;
          };
          const [byA, byB] = await race(
            round,
            () => drain(a, "wa"),
            () => drain(b, "wb"),
          );
          const grants = [...byA, ...byB].map((r) => `${r.executionId}#${r.attempt}`);
          assert.equal(new Set(grants).size, grants.length, `round ${round}: an attempt was granted twice: ${grants.join(" ")}`);
          assert.deepEqual([...byA, ...byB].map((r) => r.executionId).sort(), ready.sort(), `round ${round}: every ready execution granted once`);
        }
      });

      pairTest("work created while leases across tenants run is never left behind by a tenant put to sleep", async (a, b) => {
        for (let round = 0; round < RACE_ROUNDS; round++) {
          const pool = `wake-${round}`;
          const created: string[] = [];
          const leased: LeasedRow[] = [];
          const create = async () => {
            for (let i = 0; i < 8; i++) {
              const nj = newJob({ tenantId: "late", target: { type: "queue", pool } });
              await a.jobCreateMany({ nodeId: "n1", jobs: [nj], now: CREATED });
              created.push(executionIdFor(nj.job.jobId, T0));
            }
          };
          // Each lease that finds the tenant's work gone puts it to sleep, while the next job may be committing.
          const drain = async () => {
            for (let i = 0; i < 16; i++) leased.push(...(await lease(b, T0, { pool, max: 1 })));
          };
          await race(round, create, drain);
          for (let i = 0; i < 8 && leased.length < created.length; i++) leased.push(...(await lease(b, T0, { pool, max: 8 })));
          assert.deepEqual(leased.map((r) => r.executionId).sort(), created.sort(), `round ${round}: every job created is leased once`);
        }
      });

      pairTest("reaper against a late complete: exactly one wins, and the execution ends as the winner left it", async (a, b) => {
        const epochs = await acquireAll(a, "n1");
        for (let round = 0; round < RACE_ROUNDS; round++) {
          const pool = `race-${round}`;
          const r = await runningExecution(a, epochs, { target: { type: "queue", pool } });
          const { leaseUntil } = r.leased;
          // The complete comes at the lease's last instant, the reaper one millisecond after it.
          const [[completed], reaped] = await race(
            round,
            () => a.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: leaseUntil }),
            () => b.executionReap({ now: leaseUntil + 1, limit: 10 }),
          );
          const reaperWon = reaped.some((x) => x.executionId === r.executionId);
          const attempt1 = attemptOf(await history(a, "t1", r.job.jobId), r.executionId, 1);
          const counts = countsOf(await a.poolCounts({ tenantId: "t1", pool, now: leaseUntil + 1 }), "t1", pool);
          if (reaperWon) {
            assert.deepEqual(unmarked(completed), { status: "lost" }, `round ${round}: the reaper won, so the complete is lost`);
            assert.equal(attempt1.state, "TIMED_OUT");
            assert.deepEqual(counts, { pending: 0, queued: 1, running: 0 }, `round ${round}: ready again for attempt 2`);
          } else {
            assertOk(completed, "SUCCEEDED");
            assert.deepEqual(reaped, [], `round ${round}: the complete won, so nothing was reaped`);
            assert.equal(attempt1.state, "SUCCEEDED");
            assert.deepEqual(counts, { pending: 0, queued: 0, running: 0 });
          }
        }
      });

      pairTest("dispatch against a shard takeover: each occurrence is dispatched once, by the owner of the current epoch", async (a, b) => {
        for (let round = 0; round < RACE_ROUNDS; round++) {
          const now = T0 + round * MINUTE;
          const nj = cronJob({ at: now });
          const shard = nj.job.shard;
          const later = jobOnShard(shard, { ...CRON, at: now });
          await a.jobCreateMany({ nodeId: "n1", jobs: [nj, later], now: CREATED });
          // node-a's lease has expired by `now`, so node-b may take the shard then.
          const [held] = await a.shardAcquire({ owner: "node-a", shards: [shard], leaseMs: SECOND, now: now - 2 * SECOND });
          assert.equal(held?.owner, "node-a");
          const oldEpochs = new Map([[shard, held.epoch]]);
          const items = [{ entry: entryOf(nj), next: null }];
          const [byA, byB] = await race(
            round,
            () => a.dispatchMany({ nodeId: "node-a", epochs: oldEpochs, now, items }),
            async () => {
              const [taken] = await b.shardAcquire({ owner: "node-b", shards: [shard], leaseMs: SECOND, now });
              assert.ok(taken && taken.owner === "node-b" && taken.epoch > held.epoch, `round ${round}: node-b took the shard with a new epoch`);
              // What node-b sees once it holds the shard: node-a's dispatch, if any, committed before the takeover.
              const seen = await history(b, "t1", nj.job.jobId);
              const dispatched = await b.dispatchMany({ nodeId: "node-b", epochs: new Map([[shard, taken.epoch]]), now, items });
              return { seen, dispatched };
            },
          );
          const aWon = byA.dispatched.length > 0;
          const rows = await history(a, "t1", nj.job.jobId);
          assert.equal(rows.length, 1, `round ${round}: one execution: ${JSON.stringify(rows)}`);
          if (aWon) {
            assert.equal(byB.seen.length, 1, `round ${round}: node-a dispatched after node-b had taken the shard`);
            assert.deepEqual(byB.dispatched, { dispatched: [], wouldRun: [], stale: [nj.job.jobId], fenced: [] });
            assert.equal(rows[0]!.dispatchedBy, "node-a");
          } else {
            assert.deepEqual(byA, { dispatched: [], wouldRun: [], stale: [], fenced: [nj.job.jobId] }, `round ${round}`);
            assert.deepEqual(
              byB.dispatched.dispatched.map((d) => d.executionId),
              [rows[0]!.executionId],
            );
            assert.equal(rows[0]!.dispatchedBy, "node-b");
          }
          // After the takeover, node-a's old epoch dispatches nothing.
          const stale = await a.dispatchMany({ nodeId: "node-a", epochs: oldEpochs, now, items: [{ entry: entryOf(later), next: null }] });
          assert.deepEqual(stale, { dispatched: [], wouldRun: [], stale: [], fenced: [later.job.jobId] });
          assert.deepEqual(await history(a, "t1", later.job.jobId), []);
        }
      });

      pairTest(
        "pause against a lease: a one-off's pending execution is either held, never leased after, or leased and left running",
        async (a, b) => {
          for (let round = 0; round < RACE_ROUNDS; round++) {
            const pool = `race-${round}`;
            const nj = newJob({ target: { type: "queue", pool } });
            await a.jobCreateMany({ nodeId: "n1", jobs: [nj], now: CREATED });
            const executionId = executionIdFor(nj.job.jobId, T0);
            const [paused, leased] = await race(
              round,
              () =>
                a.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: null, pending: { hold: T0 }, now: T0 }),
              () => lease(b, T0, { pool }),
            );
            assert.equal(paused?.state, "PAUSED", `round ${round}: the pause applies either way`);
            const state = attemptOf(await history(a, "t1", nj.job.jobId), executionId, leased.length).state;
            if (leased.length === 1) {
              assert.equal(state, "RUNNING", `round ${round}: leased first, it runs on`);
            } else {
              assert.equal(state, "PAUSED", `round ${round}: held first`);
              assert.deepEqual(await lease(b, T0 + HOUR, { pool }), [], `round ${round}: a held execution is never leased`);
            }
          }
        },
      );

      pairTest(
        "a flip to live against a dispatch: the occurrence is recorded once, as the mode the dispatch read; the next one runs",
        async (a, b) => {
          const epochs = await acquireAll(a, "n1");
          const orders = new Set<string>();
          for (let round = 0; round < RACE_ROUNDS; round++) {
            const nj = cronJob({ mode: "dry_run", target: { type: "queue", pool: `flip-${round}` } });
            await createOne(a, nj);
            const job = await getJob(b, nj);
            const { kind, name, target, payload, schedule, retry, timeoutSeconds, priority } = job;
            const live = { kind, name, target, payload, schedule, retry, timeoutSeconds, priority, mode: "live" as const };
            const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
            const [dispatch, flipped] = await race(
              round,
              () => a.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next }] }),
              () => b.jobUpdate({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: job.version, fields: live, due: "keep", nodeId: "n2", now: T0 }),
            );
            assert.equal(flipped?.mode, "live", `round ${round}: the flip applies either way`);
            const executionId = executionIdFor(nj.job.jobId, T0);
            const row = attemptOf(await history(a, "t1", nj.job.jobId), executionId, 0);
            orders.add(dispatch.wouldRun.length === 1 ? "dispatch first" : "flip first");
            if (dispatch.wouldRun.length === 1) {
              assert.deepEqual([dispatch.dispatched, row.state, row.error?.reason], [[], "SKIPPED", "dry_run"], `round ${round}: dispatched first`);
            } else {
              assert.deepEqual(
                [dispatch.dispatched.map((d) => d.executionId), row.state],
                [[executionId], "READY"],
                `round ${round}: flipped first, it runs`,
              );
            }
            const after = await a.dispatchMany({ nodeId: "n1", epochs, now: T0 + HOUR, items: [{ entry: { ...entryOf(nj), ...next }, next: null }] });
            assert.deepEqual([after.dispatched.length, after.wouldRun.length], [1, 0], `round ${round}: the next occurrence runs`);
          }
          // Both orders came up (about a third to a half of the rounds each where this was measured), so both were checked.
          assert.deepEqual([...orders].sort(), ["dispatch first", "flip first"]);
        },
      );

      pairTest("create with one idempotency key from two handles: one job, and both answers name it", async (a, b) => {
        for (let round = 0; round < RACE_ROUNDS; round++) {
          const idempotency = { key: `k-${round}`, requestHash: "h" };
          const [fromA, fromB] = [newJob({ idempotency }), newJob({ idempotency })];
          const [[outA], [outB]] = await race(
            round,
            () => a.jobCreateMany({ nodeId: "n1", jobs: [fromA], now: CREATED }),
            () => b.jobCreateMany({ nodeId: "n1", jobs: [fromB], now: CREATED }),
          );
          assert.ok(outA && outA.status !== "idempotency_mismatch" && outB && outB.status !== "idempotency_mismatch");
          assert.deepEqual([outA.status, outB.status].sort(), ["created", "existing"], `round ${round}`);
          assert.equal(outA.job.jobId, outB.job.jobId, `round ${round}: both answers name one job`);
          const loser = outA.job.jobId === fromA.job.jobId ? fromB : fromA;
          assert.equal(await a.jobGet({ tenantId: "t1", jobId: loser.job.jobId }), null, `round ${round}: the other job was not written`);
        }
      });

      // Cancelling "cancels READY executions and asks RUNNING ones to stop" (jobTransition):
      // no attempt is granted after the cancel commits, and one granted before
      // it sees cancelRequested and cannot go back to READY.
      pairTest("cancel against a lease: an attempt is granted only before the cancel, and then it is asked to stop", async (a, b) => {
        const epochs = await acquireAll(a, "n1");
        for (let round = 0; round < RACE_ROUNDS; round++) {
          const pool = `race-${round}`;
          const r = await readyExecution(a, epochs, { target: { type: "queue", pool } });
          const { version } = await getJob(a, r.job);
          const [cancelled, leased] = await race(
            round,
            () =>
              a.jobTransition({
                tenantId: "t1",
                jobId: r.job.jobId,
                fromVersion: version,
                state: "CANCELLED",
                due: null,
                cancelExecutions: true,
                now: T0,
              }),
            () => lease(b, T0, { pool }),
          );
          assert.equal(cancelled?.state, "CANCELLED", `round ${round}: a lease does not move the job's version`);
          if (leased.length > 0) {
            assert.deepEqual(
              leased.map((l) => [l.executionId, l.attempt]),
              [[r.executionId, 1]],
            );
            const beat = await b.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 1 });
            assert.deepEqual(
              beat,
              { status: "ok", leaseUntil: T0 + 1 + LEASE_MS, cancelRequested: true },
              `round ${round}: the running attempt is asked to stop`,
            );
            const [failed] = await b.executionFailMany({ items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })], now: T0 + 2 });
            assert.equal(failed?.status === "ok" && failed.state, "CANCELLED", `round ${round}: a cancelled job's attempt is not retried`);
          } else {
            assert.equal(attemptOf(await history(a, "t1", r.job.jobId), r.executionId, 0).state, "CANCELLED", `round ${round}`);
          }
          assert.deepEqual(await lease(b, T0 + MINUTE, { pool }), [], `round ${round}: nothing to lease after the cancel`);
        }
      });
    });

    describe("signals (two handles on one database)", () => {
      const dueSignal = (i: number): ClusterSignal => {
        const nj = newJob({ kind: "cron", schedule: CRON_SCHEDULE, due: { scheduledFor: T0 + i * SECOND, dueAt: T0 + i * SECOND } });
        return { kind: "due", entry: { ...entryOf(nj), schedule: CRON_SCHEDULE } };
      };

      pairTest("a batch published on one handle reaches the subscribers of both, whole, in order, with its sender", async (a, b) => {
        const onA = collectSignals(a);
        const onB = collectSignals(b);
        await Promise.all([onA.ready, onB.ready]);
        const sent: ClusterSignal[] = [dueSignal(1), { kind: "ready", tenantId: "t1", pool: "p1", at: T0 }, dueSignal(2)];
        await a.signalPublish({ from: "node-a", signals: sent });
        for (const heard of [await onA.until(3), await onB.until(3)])
          assert.deepEqual(
            heard,
            sent.map((signal) => ({ from: "node-a", signal })),
          );
        await Promise.all([onA.stop(), onB.stop()]);
      });

      pairTest("a batch larger than one notification arrives whole and in order", async (a, b) => {
        const onB = collectSignals(b);
        await onB.ready;
        const sent = Array.from({ length: 300 }, (_, i) => dueSignal(i)); // about 100 KB of JSON
        await a.signalPublish({ from: "node-a", signals: sent });
        assert.deepEqual(
          await onB.until(sent.length),
          sent.map((signal) => ({ from: "node-a", signal })),
        );
        await onB.stop();
      });

      pairTest("an unsubscribed handler hears nothing more", async (a, b) => {
        const gone = collectSignals(b);
        const stays = collectSignals(b);
        await Promise.all([gone.ready, stays.ready]);
        await gone.stop();
        await a.signalPublish({ from: "node-a", signals: [dueSignal(1)] });
        assert.equal((await stays.until(1)).length, 1, "the batch reached handle b");
        await stays.stop();
        assert.deepEqual(gone.heard, []);
      });
    });
  });
}

/** Records what a handle's subscription hears; until(n) waits (up to 10 s) for n signals. */
function collectSignals(store: Store): {
  ready: Promise<unknown>;
  heard: { from: string; signal: ClusterSignal }[];
  until(n: number): Promise<{ from: string; signal: ClusterSignal }[]>;
  stop(): Promise<void>;
} {
  const heard: { from: string; signal: ClusterSignal }[] = [];
  let wake = (): void => undefined;
  const subscribed = store.signalSubscribe((event) => {
    if ("resync" in event) return;
    for (const signal of event.signals) heard.push({ from: event.from, signal });
    wake();
  });
  return {
    ready: subscribed,
    heard,
    async until(n) {
      const deadline = Date.now() + 10_000;
      while (heard.length < n) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`heard ${heard.length} of ${n} signals in 10 s`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      return heard.slice(0, n);
    },
    async stop() {
      await (await subscribed)();
    },
  };
}
