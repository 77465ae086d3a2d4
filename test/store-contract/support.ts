// What the store contract's sections share (index.ts runs them): the fixed
// times the tests pin `now` to, record factories, store helpers that set up
// jobs, executions and leases, bulk dead-letter replays and the race driver.
// A helper only one section uses lives in that section's file.

import assert from "node:assert/strict";

import type { ErrorRecord } from "@duetime/sdk/contract";
import { newId, executionIdFor, SHARD_COUNT, shardOf } from "../../src/core/ids.js";
import { poolOf } from "../../src/core/targets.js";
import type {
  AckOutcome,
  AttemptRow,
  DueEntry,
  FailInput,
  JobRecord,
  LeasedRow,
  NewJob,
  NextOccurrence,
  PoolCounts,
  ReplaySelection,
  Store,
} from "../../src/store/store.js";

// ---- fixed time ----------------------------------------------------------

// Times are pinned (now given) unless a test says otherwise: every driver
// honours a given now, lease methods included (store.ts, "Lease time"), so
// exact deadlines such as leaseUntil = now + leaseMs hold for a networked
// driver too. T0 lies in the past: the tests that leave now to the store's
// own clock see leases pinned at T0 as long expired.
export const T0 = Date.parse("2026-03-01T00:00:00Z");
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
/** Jobs are created an hour before T0 unless a test says otherwise. */
export const CREATED = T0 - HOUR;
export const LEASE_MS = 30 * SECOND;

export const iso = (ms: number): string => new Date(ms).toISOString();

// ---- record factories ----------------------------------------------------

export const RETRY = { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 3600 };
export const CRON_SCHEDULE = { cron: "0 * * * *", tz: "UTC", jitterSeconds: 0, misfire: "run_once", overlap: "allow" } as const;
const BOOM: ErrorRecord = { message: "boom", class: "transient" };
/** A permanent error: dead at once. */
export const FATAL: ErrorRecord = { message: "fatal", class: "permanent" };

type JobFields = NewJob["job"];

export interface JobOverrides extends Partial<JobFields> {
  /** The first occurrence's scheduledFor and dueAt (default T0); ignored when `due` (recurring) or `execution` (one-off) is given. */
  at?: number;
  /** A recurring job's first due entry (default at `at`); a one-off has none unless given. */
  due?: NextOccurrence | null;
  /** A one-off's execution (default at `at`; null: none); a recurring job has none. */
  execution?: NextOccurrence | null;
  idempotency?: NewJob["idempotency"];
}

/** A valid NewJob: tenant t1, a one-off queue job in pool p1 due at T0, created with its execution. */
export function newJob(overrides: JobOverrides = {}): NewJob {
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
export function cronJob(overrides: JobOverrides = {}): NewJob {
  return newJob({ ...CRON, ...overrides });
}

export const CRON: JobOverrides = { kind: "cron", schedule: { ...CRON_SCHEDULE } };

/** A one-off's definition as jobUpdate takes it, with a new runAt. */
export function rescheduled(job: JobRecord, at: number) {
  const { kind, name, target, payload, retry, timeoutSeconds, priority, mode } = job;
  return { kind, name, target, payload, schedule: { runAt: iso(at) }, retry, timeoutSeconds, priority, mode };
}

/** A job whose shard is not in `avoid`. */
export function jobOutsideShards(avoid: ReadonlySet<number>, overrides: JobOverrides = {}): NewJob {
  for (;;) {
    const nj = newJob(overrides);
    if (!avoid.has(nj.job.shard)) return nj;
  }
}

export function entryOf(nj: NewJob): DueEntry {
  assert.ok(nj.due, "the job has a due entry");
  return { jobId: nj.job.jobId, tenantId: nj.job.tenantId, shard: nj.job.shard, kind: nj.job.kind, ...nj.due };
}

// ---- store helpers ---------------------------------------------------------

/** Takes all SHARD_COUNT shards for owner; answers shard → epoch. */
export async function acquireAll(store: Store, owner: string, now = T0 - 2 * HOUR, leaseMs = 24 * HOUR): Promise<Map<number, number>> {
  const all = Array.from({ length: SHARD_COUNT }, (_, i) => i);
  const leases = await store.shardAcquire({ owner, shards: all, leaseMs, now });
  const epochs = new Map<number, number>();
  for (const l of leases) if (l.owner === owner) epochs.set(l.shard, l.epoch);
  assert.equal(epochs.size, SHARD_COUNT, `${owner} holds every shard`);
  return epochs;
}

export async function createOne(store: Store, nj: NewJob, now = CREATED): Promise<JobRecord> {
  const [outcome] = await store.jobCreateMany({ nodeId: "n1", jobs: [nj], now });
  assert.ok(outcome && outcome.status === "created", `created, got ${JSON.stringify(outcome)}`);
  return outcome.job;
}

export async function getJob(store: Store, nj: NewJob | JobRecord): Promise<JobRecord> {
  const j = "job" in nj ? nj.job : nj;
  const got = await store.jobGet({ tenantId: j.tenantId, jobId: j.jobId });
  assert.ok(got, `job ${j.jobId} exists`);
  return got;
}

export interface Ready {
  nj: NewJob;
  job: JobRecord;
  executionId: string;
  scheduledFor: number;
}

/**
 * A READY execution of a job due at `at` (default T0): a one-off's, created
 * with it; a recurring job's, dispatched at its due time.
 */
export async function readyExecution(
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

export async function lease(store: Store, now: number, o: LeaseOptions = {}): Promise<LeasedRow[]> {
  return store.executionLease({
    pool: o.pool ?? "p1",
    workerId: o.workerId ?? "w1",
    max: o.max ?? 100,
    leaseMs: o.leaseMs ?? LEASE_MS,
    now,
    ...(o.tenantId !== undefined ? { tenantId: o.tenantId } : {}),
  });
}

export async function leaseOne(store: Store, now: number, o: LeaseOptions = {}): Promise<LeasedRow> {
  const rows = await lease(store, now, { ...o, max: 1 });
  assert.equal(rows.length, 1, "one execution leased");
  return rows[0]!;
}

/** A RUNNING attempt: a ready execution leased at T0 with a 30 s lease. */
export async function runningExecution(
  store: Store,
  epochs: ReadonlyMap<number, number>,
  overrides: JobOverrides = {},
): Promise<Ready & { leased: LeasedRow }> {
  const ready = await readyExecution(store, epochs, overrides);
  const leased = await leaseOne(store, T0, { pool: poolOf(ready.job.target), tenantId: ready.job.tenantId });
  assert.equal(leased.executionId, ready.executionId);
  return { ...ready, leased };
}

export async function history(store: Store, tenantId: string, jobId: string): Promise<AttemptRow[]> {
  return store.executionHistory({ tenantId, jobId, limit: 1000 });
}

export function attemptOf(rows: AttemptRow[], executionId: string, attempt: number): AttemptRow {
  const row = rows.find((r) => r.executionId === executionId && r.attempt === attempt);
  assert.ok(row, `history has attempt ${attempt} of ${executionId}: ${JSON.stringify(rows)}`);
  return row;
}

/** A failed attempt; by default a transient error and jitter 0.5 (none): attempt n retries after RETRY's 10 s × 2^(n-1). */
export function fail(item: Omit<FailInput, "error" | "jitter"> & { error?: ErrorRecord; jitter?: number }): FailInput {
  return { error: BOOM, jitter: 0.5, ...item };
}

export function countsOf(rows: PoolCounts[], tenantId: string, pool: string): { pending: number; queued: number; running: number } {
  const matching = rows.filter((r) => r.tenantId === tenantId && r.pool === pool);
  assert.ok(matching.length <= 1, "one row per tenant and pool");
  const row = matching[0];
  return { pending: row?.pending ?? 0, queued: row?.queued ?? 0, running: row?.running ?? 0 };
}

export function nonZero(rows: PoolCounts[]): PoolCounts[] {
  return rows.filter((r) => r.pending + r.queued + r.running > 0);
}

export function assertOk(outcome: AckOutcome | undefined, state: "SUCCEEDED" | "READY" | "DEAD"): void {
  assert.ok(outcome && outcome.status === "ok", `ok, got ${JSON.stringify(outcome)}`);
  assert.equal(outcome.state, state);
}

// ---- bulk dead-letter replays ----------------------------------------------

/**
 * n dead letters of one tenant and pool, dying one second apart from
 * `deadFrom` (oldest first in the answer), each failed with `error`.
 */
export async function deadLetters(
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

export const REPLAY_AT = T0 + HOUR;
let replayCount = 0;

export function bulkReplay(selection: ReplaySelection, o: { tenantId?: string; ratePerSecond?: number } = {}) {
  const tenantId = o.tenantId ?? "t1";
  const replayId = `rp_${++replayCount}_${newId(T0)}`;
  return {
    replay: { replayId, tenantId, selection, ratePerSecond: o.ratePerSecond ?? 2, actor: "admin-key", createdAt: REPLAY_AT },
    audit: { tenantId, at: REPLAY_AT, actor: "admin-key", action: "dead-letter.replay-bulk", subject: replayId, details: { selection } },
  };
}

/** Steps a replay at `at` until it is done, at most `steps` times; answers every execution it replayed, in order. */
export async function driveReplay(store: Store, replayId: string, o: { owner?: string; at?: number; limit?: number; steps?: number } = {}) {
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
export function unmarked<T>(outcome: T): T {
  if (Array.isArray(outcome)) return outcome.map((o) => unmarked(o)) as T;
  if (outcome && typeof outcome === "object" && (outcome as { status?: unknown }).status === "lost") return { status: "lost" } as T;
  return outcome;
}

// ---- races -----------------------------------------------------------------

/** Rounds of each race: enough for the arms to meet in every order. */
export const RACE_ROUNDS = 50;

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs two arms at once. A driver that serialises them (SQLite's one writer
 * answers each call before the next starts) would always run them in call
 * order, so the round picks which arm starts first and how many event-loop
 * turns the other waits: over the rounds, the arms' steps interleave in
 * every order. A networked driver races them for real.
 */
export async function race<A, B>(round: number, a: () => Promise<A>, b: () => Promise<B>): Promise<[A, B]> {
  const lag = Math.floor(round / 2) % 3;
  const late = async <T>(arm: () => Promise<T>): Promise<T> => {
    for (let i = 0; i < lag; i++) await turn();
    return arm();
  };
  return round % 2 === 0 ? Promise.all([a(), late(b)]) : Promise.all([late(a), b()]);
}

// ---- how sections register tests --------------------------------------------

/** What index.ts hands each section: its ways to register a test on the driver under test. */
export interface ContractTests {
  /** A test with its own fresh store, closed whatever happens. */
  storeTest(title: string, fn: (store: Store) => Promise<void>): void;
  /** A test with two handles on one fresh database, both closed whatever happens. */
  pairTest(title: string, fn: (a: Store, b: Store) => Promise<void>): void;
}
