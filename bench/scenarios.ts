// The four scenarios of the comparison. Each gets a contender that is set up
// (fresh store, nothing enqueued, no worker running) and returns its metrics;
// setup and teardown are the runner's business (run.ts). Every handler is the
// contender's no-op that reports its start (StartTracker), and every contender
// runs the same total concurrency.

import type { BenchJob, Contender } from "./contender.js";
import { pct, type Progress, quantiles, sleep, StartTracker } from "./measure.js";
import { cpuMs, cpuSampler, rssBytes } from "./procstat.js";

/** Jobs per enqueue call: the largest batch every contender accepts (duetime's HTTP batch limit). */
export const BATCH = 1_000;

export interface RunOutput {
  /** Figures by column key; NaN prints as "—". */
  metrics: Record<string, number>;
  /** Sorted start lags in ms (quantiles) for the chart, if the scenario has a lag distribution. */
  lagQuantiles?: number[];
  /** Why the run does not count (a broken contender); the harness exits non-zero. */
  failure?: string | undefined;
  /** Something worth writing under the table (e.g. duplicate starts). */
  note?: string | undefined;
}

export interface Column {
  key: string;
  label: string;
  unit: "ms" | "rate" | "count" | "decimal" | "bytes" | "percent" | "yesno";
  /** Shown only when a contender in the table reports it (a metric few contenders have, e.g. the Redis due index's). */
  optional?: boolean;
}

export interface Scenario {
  /** File name and table heading key, e.g. "herd-20000". */
  id: string;
  title: string;
  /** What the columns mean, printed under the table. */
  notes: string[];
  columns: Column[];
  /** Whether the results have a start-lag chart. */
  chart: boolean;
  defaultRuns: number;
  /** Only contenders that can create recurring jobs here (Contender.cron) run it. */
  needsCron?: boolean;
  /** Run only for these contenders (when they are in the run). */
  only?: readonly string[];
  run(contender: Contender, progress: Progress): Promise<RunOutput>;
}

const n = (x: number) => x.toLocaleString("en-US");

async function enqueueAll(
  contender: Contender,
  total: number,
  dueAt: (seq: number) => number,
  progress: Progress,
  what: string,
  recurring = false,
): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < total; i += BATCH) {
    const batch: BenchJob[] = [];
    for (let seq = i; seq < Math.min(total, i + BATCH); seq++)
      batch.push({ seq, dueAt: dueAt(seq), ...(recurring ? { recurring: true as const } : {}) });
    await contender.enqueue(batch);
    progress.set(`${what}: created ${n(Math.min(total, i + BATCH))}/${n(total)}`);
  }
  return performance.now() - t0;
}

function lagMetrics(lags: Float64Array): Record<string, number> {
  return { p50: pct(lags, 0.5), p90: pct(lags, 0.9), p99: pct(lags, 0.99), max: pct(lags, 1) };
}

const LAG_COLUMNS: Column[] = [
  { key: "p50", label: "lag p50", unit: "ms" },
  { key: "p90", label: "lag p90", unit: "ms" },
  { key: "p99", label: "lag p99", unit: "ms" },
  { key: "max", label: "lag max", unit: "ms" },
];

/** Waits for every start, showing progress; false at the deadline. */
async function awaitStarts(tracker: StartTracker, deadline: number, progress: Progress, what: string): Promise<boolean> {
  const ticker = setInterval(() => progress.set(`${what}: started ${n(tracker.seen)}/${n(tracker.total)}`), 200);
  try {
    return await tracker.all(deadline);
  } finally {
    clearInterval(ticker);
  }
}

/** Polls outstanding() until it reaches 0 (every started job acknowledged in the store); the time it did, or NaN. */
async function awaitAcked(contender: Contender, deadline: number): Promise<number> {
  while (Date.now() < deadline) {
    if ((await contender.outstanding()) === 0) return Date.now();
    await sleep(10);
  }
  return NaN;
}

/**
 * How long PostgreSQL 15's statistics may trail the writes: a backend adds
 * its counts to pg_stat_database when a transaction ends, at most once a
 * second (PGSTAT_MIN_INTERVAL), and what it holds back then is flushed once it
 * has been idle for 10 s (PGSTAT_IDLE_INTERVAL). pg_stat_force_next_flush()
 * flushes only the backend that calls it, never the contender's. So a count
 * is read this long after the moment it stands for: every write made before
 * that moment is in it, and so may be the contender's background writes of
 * the seconds after (heartbeats, lease renewals, maintenance; reported).
 */
export const STATS_SETTLE_MS = 11_000;

/** The contender's rows written, read settleMs from now (NaN at once when its store does not count them). */
async function settledRows(contender: Contender, settleMs: number, progress: Progress, what: string): Promise<number> {
  if (!contender.rowsWritten) return NaN;
  progress.set(`${what}: waiting ${settleMs / 1000} s for PostgreSQL's statistics`);
  await sleep(settleMs);
  return contender.rowsWritten();
}

interface ServiceCost {
  /** CPU of the service's processes over the window, % of one core (NaN when the contender uses none). */
  dbCpu: number;
  /** Rows written over the window per job (NaN unless the store counts them and every job was acknowledged). */
  rowsPerJob: number;
  /** CPU of the Redis server holding the contender's due index, % of one core (only with one). */
  indexCpu?: number;
  /** CPU ms per job of every process the contender uses (see contenderCpu; NaN unless every job was acknowledged). */
  cpuPerJob: number;
}

/**
 * CPU ms used since this call by every process a contender's jobs go through:
 * this benchmark process (it creates the jobs and runs the workers, and is
 * the scheduler of an in-process contender), the scheduler processes, and the
 * store's (PostgreSQL backends, Redis, a Redis due index). Read creation
 * through the last acknowledgement and divided by the jobs, it compares
 * contenders whose work sits in different processes.
 */
function contenderCpu(contender: Contender): () => number {
  return cpuSampler(() => [process.pid, ...contender.schedulerPids(), ...contender.servicePids(), ...(contender.indexPids?.() ?? [])]);
}

/**
 * Opens a window on what the shared service (the run's PostgreSQL database,
 * or Redis) spends: call it before the first enqueue, and the function it
 * answers once every job is acknowledged (with the job count) or once the
 * scenario gives up (without).
 */
async function meterService(
  contender: Contender,
  settleMs: number,
  progress: Progress,
  what: string,
): Promise<(jobs?: number) => Promise<ServiceCost>> {
  const rows0 = await settledRows(contender, settleMs, progress, what);
  const hasService = contender.servicePids().length > 0;
  const cpu = cpuSampler(() => contender.servicePids());
  const indexCpu = indexCpuSampler(contender);
  const everything = contenderCpu(contender);
  const t0 = Date.now();
  return async (jobs) => {
    const elapsed = Math.max(1, Date.now() - t0);
    const cpuPerJob = jobs === undefined ? NaN : everything() / jobs;
    const dbCpu = hasService ? (cpu() / elapsed) * 100 : NaN;
    const index = indexCpu ? { indexCpu: (indexCpu() / elapsed) * 100 } : {};
    if (jobs === undefined || Number.isNaN(rows0)) return { dbCpu, rowsPerJob: NaN, cpuPerJob, ...index };
    return { dbCpu, rowsPerJob: ((await settledRows(contender, settleMs, progress, what)) - rows0) / jobs, cpuPerJob, ...index };
  };
}

/** CPU of the Redis server holding the due index, apart from the store's (undefined without one). */
function indexCpuSampler(contender: Contender): (() => number) | undefined {
  const pids = contender.indexPids?.bind(contender);
  return pids ? cpuSampler(pids) : undefined;
}

const CPU_PER_JOB: Column = { key: "cpuPerJob", label: "CPU ms/job", unit: "decimal" };
const CPU_PER_JOB_NOTE =
  "CPU ms/job = CPU time of every process the jobs go through (this benchmark process, which creates them and runs the workers; the scheduler processes; PostgreSQL's backends or Redis) from the first create until every job is acknowledged, ÷ jobs.";

const SERVICE_COLUMNS: Column[] = [
  CPU_PER_JOB,
  { key: "dbCpu", label: "DB/Redis CPU", unit: "percent" },
  { key: "rowsPerJob", label: "rows/job", unit: "decimal" },
  { key: "indexCpu", label: "Redis index CPU", unit: "percent", optional: true },
];

function serviceNotes(settleMs: number): string[] {
  return [
    CPU_PER_JOB_NOTE,
    "DB/Redis CPU = CPU time of the PostgreSQL backends connected to the run's database (or of the Redis server) from the first enqueue until every job is acknowledged, as a share of one core (100% = one core busy throughout); — for SQLite.",
    `rows/job = growth of tup_inserted + tup_updated + tup_deleted in pg_stat_database for the run's database (every table, catalogs too) over the same window, ÷ jobs; PostgreSQL only. Each end is read ${settleMs / 1000} s after the moment it stands for, because PostgreSQL flushes a backend's counts up to 10 s late; so it may include that many seconds of the contender's background writes.` +
      (settleMs < STATS_SETTLE_MS ? ` (${settleMs / 1000} s is too short to trust: a quick check only.)` : ""),
    INDEX_CPU_NOTE,
  ];
}

const INDEX_CPU_NOTE =
  "Redis index CPU (only contenders with `--due-index`) = CPU time of the Redis server over the same window, as a share of one core; it holds the due index of recurring jobs, and is not in DB/Redis CPU, which stays the store's (the Redis server is shared: another client's commands would count).";

/** At-least-once allows a duplicate after a lost lease; none should happen in seconds of no-op work, so it is reported (not a failure by itself). */
function duplicates(tracker: StartTracker): string | undefined {
  return tracker.duplicates ? `${n(tracker.duplicates)} duplicate starts` : undefined;
}

export interface HerdOptions {
  jobs: number;
  /** Time allowed for creation: due time = now + leadBaseMs + jobs × leadPerJobMs, rounded up to a second. */
  leadBaseMs: number;
  leadPerJobMs: number;
  timeoutMs: number;
  runs: number;
  /** Wait before reading PostgreSQL's row counts (STATS_SETTLE_MS, shorter only for a smoke test). */
  statsSettleMs: number;
  /** Recurring jobs whose occurrence falls in the due second (the top of the hour in production), instead of one-offs. */
  recurring?: boolean;
  /** A duplicate start fails the run (the CI smoke guard: a no-op herd has no reason to run a job twice). */
  exactlyOnce?: boolean;
  only?: readonly string[];
}

/** N jobs due in the same second, all enqueued before it, workers already running. */
export function herd(o: HerdOptions): Scenario {
  return {
    id: o.recurring ? `cron-herd-${o.jobs}` : `herd-${o.jobs}`,
    title: o.recurring ? `cron herd: ${n(o.jobs)} recurring jobs firing in the same second` : `herd: ${n(o.jobs)} jobs due in the same second`,
    notes: [
      "Workers run from the start; every job is created (bulk API, batches of 1,000) before the due second begins.",
      ...(o.recurring
        ? [
            "Each job is recurring (duetime: a six-field cron, UTC, firing once a year at the due second): the scheduler dispatches all of them in that second, as at the top of an hour. Contenders without cron support in this harness are not run.",
          ]
        : []),
      "lag = handler start − due time; drain = last start − due time; jobs/s = jobs ÷ drain; create = jobs ÷ creation time.",
      ...serviceNotes(o.statsSettleMs),
    ],
    columns: [
      { key: "createRate", label: "create", unit: "rate" },
      { key: "drainMs", label: "drain", unit: "ms" },
      { key: "jobsPerSec", label: "jobs/s", unit: "rate" },
      ...LAG_COLUMNS,
      ...SERVICE_COLUMNS,
    ],
    chart: true,
    defaultRuns: o.runs,
    ...(o.recurring ? { needsCron: true } : {}),
    ...(o.only ? { only: o.only } : {}),
    async run(contender, progress): Promise<RunOutput> {
      const tracker = new StartTracker(o.jobs);
      await contender.startWorkers(tracker.started);
      const service = await meterService(contender, o.statsSettleMs, progress, "herd");
      const dueAt = Math.ceil((Date.now() + o.leadBaseMs + o.jobs * o.leadPerJobMs) / 1000) * 1000;
      const createMs = await enqueueAll(contender, o.jobs, () => dueAt, progress, "herd", o.recurring);
      if (Date.now() >= dueAt) {
        return { metrics: {}, failure: `creation took ${Math.round(createMs)} ms and overran the due time; raise --lead` };
      }
      if (tracker.seen > 0) return { metrics: {}, failure: `${tracker.seen} jobs started before their due time` };
      const all = await awaitStarts(tracker, dueAt + o.timeoutMs, progress, "herd");
      const lags = tracker.lags(() => dueAt);
      const early = lags.length ? lags.filter((l) => l < 0).length : 0;
      const drainMs = pct(lags, 1);
      const acked = all && !early ? await awaitAcked(contender, Date.now() + 60_000) : NaN;
      const cost = await service(Number.isNaN(acked) ? undefined : o.jobs);
      return {
        metrics: {
          createRate: (o.jobs / createMs) * 1000,
          drainMs,
          jobsPerSec: (o.jobs / Math.max(1, drainMs)) * 1000,
          ...lagMetrics(lags),
          ...cost,
        },
        lagQuantiles: quantiles(lags),
        failure: !all
          ? `only ${n(tracker.seen)}/${n(o.jobs)} started within ${o.timeoutMs / 1000} s of the due time`
          : early
            ? `${early} jobs started before their due time`
            : Number.isNaN(acked)
              ? "jobs still unfinished in the store 60 s after the last start"
              : o.exactlyOnce && tracker.duplicates
                ? `${n(tracker.duplicates)} jobs started more than once`
                : undefined,
        note: duplicates(tracker),
      };
    },
  };
}

export interface SteadyOptions {
  rate: number;
  durationMs: number;
  /** How long after the last due time unstarted jobs are waited for. */
  graceMs: number;
  runs: number;
  seed: number;
  /** As for the herd. */
  statsSettleMs: number;
  /** Recurring jobs created up front, `rate` of them firing in each second, instead of one-offs created as they go. */
  recurring?: boolean;
}

/** A small deterministic PRNG (mulberry32), so every contender gets the same due times. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Jobs created at a fixed rate, each due 1–5 s after its creation. */
export function steady(o: SteadyOptions): Scenario {
  if (o.recurring) return steadyRecurring(o);
  const total = Math.round((o.rate * o.durationMs) / 1000);
  return {
    id: `steady-${o.rate}`,
    title: `steady: ${n(o.rate)} jobs/s for ${o.durationMs / 1000} s, each due 1–5 s after creation`,
    notes: [
      "Jobs are created on a fixed schedule (every job has a planned creation time; whatever is due to be created is sent in one bulk call, at most 1,000) while the workers run; due = planned creation + uniform(1 s, 5 s), the same pseudo-random due times for every contender.",
      "lag = handler start − due time; a job that had not started by the end (last due time + grace) counts as ∞; started = share that started by then.",
      "kept up = creation never fell more than 1 s behind its schedule, every job started, and the jobs due in the last 5 s started with a median lag under 1 s (no backlog at the end).",
      ...serviceNotes(o.statsSettleMs),
      "A contender that did not start every job: its DB/Redis CPU runs to the end of the grace time, and rows/job is — (its jobs were not all worked).",
    ],
    columns: [
      { key: "keptUp", label: "kept up", unit: "yesno" },
      { key: "behindMs", label: "creation behind (max)", unit: "ms" },
      { key: "startedPct", label: "started", unit: "percent" },
      ...LAG_COLUMNS,
      ...SERVICE_COLUMNS,
    ],
    chart: true,
    defaultRuns: o.runs,
    async run(contender, progress): Promise<RunOutput> {
      const random = prng(o.seed);
      const createOffset = Float64Array.from({ length: total }, (_, i) => (i * 1000) / o.rate);
      const dueOffset = Float64Array.from(createOffset, (c) => c + 1000 + random() * 4000);
      const tracker = new StartTracker(total);
      await contender.startWorkers(tracker.started);
      const service = await meterService(contender, o.statsSettleMs, progress, `steady ${o.rate}/s`);
      const t0 = Date.now() + 100;
      let behindMs = 0;
      let next = 0;
      while (next < total) {
        const now = Date.now();
        if (t0 + createOffset[next]! > now) {
          await sleep(Math.min(10, t0 + createOffset[next]! - now));
          continue;
        }
        behindMs = Math.max(behindMs, now - (t0 + createOffset[next]!));
        const batch: BenchJob[] = [];
        while (next < total && batch.length < BATCH && t0 + createOffset[next]! <= now) {
          batch.push({ seq: next, dueAt: Math.round(t0 + dueOffset[next]!) });
          next++;
        }
        await contender.enqueue(batch);
        progress.set(`steady ${o.rate}/s: created ${n(next)}/${n(total)}, started ${n(tracker.seen)}, behind ${Math.round(behindMs)} ms`);
      }
      const lastDue = t0 + Math.max(...dueOffset);
      const all = await awaitStarts(tracker, lastDue + o.graceMs, progress, `steady ${o.rate}/s`);
      const acked = all && !Number.isNaN(await awaitAcked(contender, Date.now() + 60_000));
      const cost = await service(acked ? total : undefined);
      const due = (seq: number) => Math.round(t0 + dueOffset[seq]!);
      const lags = tracker.lags(due, undefined, true);
      const tail = tracker.lags(due, (seq) => due(seq) >= lastDue - 5_000, true);
      const keptUp = behindMs <= 1_000 && all && pct(tail, 0.5) < 1_000;
      return {
        metrics: { keptUp: keptUp ? 1 : 0, behindMs, startedPct: (tracker.seen / total) * 100, ...lagMetrics(lags), ...cost },
        lagQuantiles: quantiles(lags),
        // Falling behind is a result, not a failure; a stall that starts nothing is.
        failure: tracker.seen === 0 ? "no job started" : undefined,
        note: duplicates(tracker),
      };
    },
  };
}

/** Recurring jobs created before the first fires, then `rate` of them firing in each whole second: what a due index serves. */
function steadyRecurring(o: SteadyOptions): Scenario {
  const seconds = Math.round(o.durationMs / 1000);
  const total = o.rate * seconds;
  return {
    id: `steady-recurring-${o.rate}`,
    title: `steady, recurring: ${n(o.rate)} recurring jobs firing in each second for ${seconds} s`,
    notes: [
      `${n(total)} recurring jobs (duetime: a six-field cron, UTC, firing once a year at its second) are created (bulk API, batches of 1,000) before the first second; then ${n(o.rate)} of them fire in each second, the workers running throughout. Contenders without cron support in this harness are not run.`,
      "lag = handler start − the job's second; a job that had not started by the end (last second + grace) counts as ∞; started = share that started by then.",
      "kept up = every job started, and the jobs of the last 5 s started with a median lag under 1 s (no backlog at the end).",
      ...serviceNotes(o.statsSettleMs),
    ],
    columns: [
      { key: "keptUp", label: "kept up", unit: "yesno" },
      { key: "createRate", label: "create", unit: "rate" },
      { key: "startedPct", label: "started", unit: "percent" },
      ...LAG_COLUMNS,
      ...SERVICE_COLUMNS,
    ],
    chart: true,
    defaultRuns: o.runs,
    needsCron: true,
    async run(contender, progress): Promise<RunOutput> {
      const tracker = new StartTracker(total);
      await contender.startWorkers(tracker.started);
      const service = await meterService(contender, o.statsSettleMs, progress, `steady recurring ${o.rate}/s`);
      const first = Math.ceil((Date.now() + 3_000 + total * 0.25) / 1000) * 1000;
      const due = (seq: number) => first + Math.floor(seq / o.rate) * 1000;
      const createMs = await enqueueAll(contender, total, due, progress, "steady recurring", true);
      if (Date.now() >= first) return { metrics: {}, failure: `creation took ${Math.round(createMs)} ms and overran the first second` };
      const lastDue = due(total - 1);
      const all = await awaitStarts(tracker, lastDue + o.graceMs, progress, `steady recurring ${o.rate}/s`);
      const acked = all && !Number.isNaN(await awaitAcked(contender, Date.now() + 60_000));
      const cost = await service(acked ? total : undefined);
      const lags = tracker.lags(due, undefined, true);
      const tail = tracker.lags(due, (seq) => due(seq) >= lastDue - 5_000, true);
      const early = lags.filter((l) => l < 0).length;
      return {
        metrics: {
          keptUp: all && pct(tail, 0.5) < 1_000 ? 1 : 0,
          createRate: (total / createMs) * 1000,
          startedPct: (tracker.seen / total) * 100,
          ...lagMetrics(lags),
          ...cost,
        },
        lagQuantiles: quantiles(lags),
        failure: tracker.seen === 0 ? "no job started" : early ? `${early} jobs started before their second` : undefined,
        note: duplicates(tracker),
      };
    },
  };
}

export interface ImmediateOptions {
  jobs: number;
  timeoutMs: number;
  runs: number;
}

/** A backlog of N jobs due now, then the workers start: how fast they are worked off and acknowledged. */
export function immediate(o: ImmediateOptions): Scenario {
  return {
    id: `immediate-${o.jobs}`,
    title: `immediate: ${n(o.jobs)} jobs due now`,
    notes: [
      "All jobs are created due now (bulk API, batches of 1,000) before any worker runs; then the workers start.",
      "completions/s = jobs ÷ (time from worker start until the store holds no unfinished job: every completion acknowledged); end-to-end/s = jobs ÷ (creation time + that).",
      "lag = handler start − worker start.",
      CPU_PER_JOB_NOTE,
    ],
    columns: [
      { key: "createRate", label: "create", unit: "rate" },
      { key: "completionsPerSec", label: "completions/s", unit: "rate" },
      { key: "endToEndPerSec", label: "end-to-end/s", unit: "rate" },
      { key: "drainMs", label: "all acked after", unit: "ms" },
      { key: "p50", label: "lag p50", unit: "ms" },
      { key: "p99", label: "lag p99", unit: "ms" },
      CPU_PER_JOB,
    ],
    chart: true,
    defaultRuns: o.runs,
    async run(contender, progress): Promise<RunOutput> {
      const tracker = new StartTracker(o.jobs);
      const cpu = contenderCpu(contender);
      const createMs = await enqueueAll(contender, o.jobs, () => Date.now(), progress, "immediate");
      const w0 = Date.now();
      await contender.startWorkers(tracker.started);
      const all = await awaitStarts(tracker, w0 + o.timeoutMs, progress, "immediate");
      if (!all) return { metrics: {}, failure: `only ${n(tracker.seen)}/${n(o.jobs)} started within ${o.timeoutMs / 1000} s` };
      progress.set("immediate: waiting for the last acknowledgements");
      const acked = await awaitAcked(contender, Date.now() + 60_000);
      if (Number.isNaN(acked)) return { metrics: {}, failure: "jobs still unfinished in the store 60 s after the last start" };
      const drainMs = acked - w0;
      const lags = tracker.lags(() => w0);
      return {
        metrics: {
          createRate: (o.jobs / createMs) * 1000,
          completionsPerSec: (o.jobs / Math.max(1, drainMs)) * 1000,
          endToEndPerSec: (o.jobs / (createMs + drainMs)) * 1000,
          drainMs,
          p50: pct(lags, 0.5),
          p99: pct(lags, 0.99),
          cpuPerJob: cpu() / o.jobs,
        },
        lagQuantiles: quantiles(lags),
        note: duplicates(tracker),
      };
    },
  };
}

export interface IdleOptions {
  jobs: number;
  settleMs: number;
  windowMs: number;
  runs: number;
  /** Recurring jobs whose next occurrence is next week, instead of one-offs (what a due index holds). */
  recurring?: boolean;
}

/** N jobs due next week; what holding them costs while nothing is due. */
const INDEX_WAIT_MS = 600_000;

/** Polls the contender's due-index state until `done`; the time it took, or NaN after INDEX_WAIT_MS. */
async function awaitIndex(
  contender: Contender,
  done: (s: { rebuilding: number; added: number }) => boolean,
  progress: Progress,
  what: string,
): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < INDEX_WAIT_MS) {
    const state = await contender.indexState!();
    if (done(state)) return Date.now() - t0;
    progress.set(`${what}: ${state.rebuilding} shards waiting, ${n(state.added)} entries re-added`);
    await sleep(100);
  }
  return NaN;
}

/** Deletes the index's keys and times its rebuild from the store, with the scheduler's and the store's CPU meanwhile. */
async function rebuildAfterLoss(contender: Contender, jobs: number, progress: Progress): Promise<Record<string, number>> {
  const before = await contender.indexState!();
  const scheduler = cpuSampler(() => contender.schedulerPids());
  const service = cpuSampler(() => contender.servicePids());
  const t0 = Date.now();
  await contender.dropIndex!();
  const waited = await awaitIndex(contender, (s) => s.rebuilding === 0 && s.added - before.added >= jobs, progress, "idle: index lost, rebuilding");
  const ms = Date.now() - t0;
  return {
    rebuildMs: Number.isNaN(waited) ? NaN : ms,
    rebuildSchedulerCpu: (scheduler() / ms) * 100,
    rebuildServiceCpu: contender.servicePids().length > 0 ? (service() / ms) * 100 : NaN,
  };
}

export function idle(o: IdleOptions): Scenario {
  return {
    id: o.recurring ? `idle-recurring-${o.jobs}` : `idle-${o.jobs}`,
    title: o.recurring ? `idle: ${n(o.jobs)} recurring jobs next due next week` : `idle: ${n(o.jobs)} jobs due next week`,
    notes: [
      "Workers run from the start; jobs are due 7 days ahead, spread over one day; created in bulk (batches of 1,000).",
      ...(o.recurring
        ? [
            "Each job is recurring (duetime: a six-field cron, UTC, firing once a year at its due second), so each is a due entry, which a `--due-index` contender also holds in Redis; contenders without cron support in this harness are not run.",
            "Redis index = MEMORY USAGE (SAMPLES 0) summed over the run's due-index keys at the end of the window; Redis CPU idle = the Redis server over the window (not in DB/Redis CPU).",
            "With `--due-index`, the settling waits first until every node's reconciler has covered its shards (index built = how long after the last create that took: a new index is hurried through while the jobs are created). After the window the index's keys are deleted, as a Redis that lost its data would have them: rebuild = time until every entry is back (the nodes' repaired counts) and no shard waits for its pass, with the scheduler's and the store's CPU over that time.",
          ]
        : []),
      `Then ${o.settleMs / 1000} s to settle, then ${o.windowMs / 1000} s of measurement while nothing is due.`,
      "scheduler = the process holding the scheduler (duetime-server: the `duetime serve` child; others: the benchmark process, which also runs the workers); worker process = the benchmark process where it is separate.",
      "CPU = share of one core over the window; DB/Redis CPU = the PostgreSQL backends connected to the run's database, or the Redis server, over the window.",
    ],
    columns: [
      { key: "createMs", label: "create time", unit: "ms" },
      { key: "createRate", label: "create", unit: "rate" },
      { key: "storeBytes", label: "store size", unit: "bytes" },
      { key: "schedulerRss", label: "scheduler RSS", unit: "bytes" },
      { key: "workerRss", label: "worker process RSS", unit: "bytes" },
      { key: "schedulerCpu", label: "scheduler CPU idle", unit: "percent" },
      { key: "workerCpu", label: "worker process CPU idle", unit: "percent" },
      { key: "serviceCpu", label: "DB/Redis CPU idle", unit: "percent" },
      { key: "indexBytes", label: "Redis index", unit: "bytes", optional: true },
      { key: "indexCpu", label: "Redis CPU idle", unit: "percent", optional: true },
      { key: "indexBuiltMs", label: "index built", unit: "ms", optional: true },
      { key: "rebuildMs", label: "rebuild", unit: "ms", optional: true },
      { key: "rebuildSchedulerCpu", label: "scheduler CPU rebuilding", unit: "percent", optional: true },
      { key: "rebuildServiceCpu", label: "DB CPU rebuilding", unit: "percent", optional: true },
    ],
    chart: false,
    defaultRuns: o.runs,
    ...(o.recurring ? { needsCron: true } : {}),
    async run(contender, progress): Promise<RunOutput> {
      let started = 0;
      await contender.startWorkers(() => void started++);
      const base = Date.now() + 7 * 86_400_000;
      const dueAt = (seq: number) => base + ((seq * 7919) % 86_400) * 1000;
      const createMs = await enqueueAll(contender, o.jobs, dueAt, progress, "idle", o.recurring);
      // One-offs never touch a due index: only recurring jobs have it built, and rebuilt.
      const indexed = o.recurring && contender.indexState !== undefined;
      const indexBuiltMs = indexed ? await awaitIndex(contender, (s) => s.rebuilding === 0, progress, "idle: index building") : NaN;
      progress.set(`idle: created ${n(o.jobs)}, settling`);
      await sleep(o.settleMs);
      const children = contender.schedulerPids();
      const serverCpu = cpuSampler(() => children);
      const selfCpu0 = cpuMs(process.pid);
      const hasService = contender.servicePids().length > 0;
      const serviceCpu = cpuSampler(() => contender.servicePids());
      const indexCpu = indexCpuSampler(contender);
      const t0 = Date.now();
      const ticker = setInterval(() => progress.set(`idle: measuring, ${Math.round((Date.now() - t0) / 1000)}/${o.windowMs / 1000} s`), 500);
      await sleep(o.windowMs);
      clearInterval(ticker);
      const elapsed = Date.now() - t0;
      const selfCpu = ((cpuMs(process.pid) - selfCpu0) / elapsed) * 100;
      const separate = children.length > 0;
      const metrics: Record<string, number> = {
        createMs,
        createRate: (o.jobs / createMs) * 1000,
        storeBytes: await contender.storeBytes(),
        schedulerRss: separate ? children.reduce((s, pid) => s + rssBytes(pid), 0) : rssBytes(process.pid),
        workerRss: separate ? rssBytes(process.pid) : NaN,
        schedulerCpu: separate ? (serverCpu() / elapsed) * 100 : selfCpu,
        workerCpu: separate ? selfCpu : NaN,
        serviceCpu: hasService ? (serviceCpu() / elapsed) * 100 : NaN,
        ...(indexCpu && contender.indexBytes ? { indexCpu: (indexCpu() / elapsed) * 100, indexBytes: await contender.indexBytes() } : {}),
        ...(indexed ? { indexBuiltMs, ...(await rebuildAfterLoss(contender, o.jobs, progress)) } : {}),
      };
      const unbuilt = Number.isNaN(metrics.indexBuiltMs ?? 0) || Number.isNaN(metrics.rebuildMs ?? 0);
      return {
        metrics,
        failure: started
          ? `${started} jobs due next week started now`
          : unbuilt
            ? `the due index was not whole within ${INDEX_WAIT_MS / 1000} s`
            : undefined,
      };
    },
  };
}
