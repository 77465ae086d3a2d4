// Issue 12's workload metrics, on the engine's registry beside metrics.ts:
// - a cardinality guard (LabelGuard) for the tenant and pool labels;
// - dead letters and lease expiries by tenant and pool, dispatches per shard;
// - store call latency by method, event-loop delay;
// - gauges read from the store at scrape time (ready depth and oldest ready
//   age per pool, the due backlog, the next minutes' due buckets), cached for
//   a few seconds so many scrapers cost the store one read.
// docs/operations.md ("Metrics") explains each and when to worry.

import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import { Counter, Gauge, Histogram, type Metric, type Registry } from "prom-client";
import type { Clock } from "../core/clock.js";
import { SHARD_COUNT, shardOf } from "../core/ids.js";
import type { Store } from "../store/store.js";
import type { EngineEvents } from "./events.js";
import { Periodic } from "./periodic.js";
import { METRICS_MAX_POOLS_DEFAULT, METRICS_MAX_TENANTS_DEFAULT, OTHER_LABEL } from "./metrics-limits.js";

/** How long a scrape-time read of the store is reused. */
export const STORE_GAUGE_CACHE_MS = 5_000;
/** A read is reused for this many times its duration, when the read before it was as slow (Cached). */
export const STORE_GAUGE_COST_FACTOR = 50;
/** The longest a slow read stretches the cache to. */
export const STORE_GAUGE_MAX_CACHE_MS = 60_000;
/** The due backlog and the due buckets count at most this many due entries (one index range, never the whole table). */
export const DUE_COUNT_LIMIT = 5_000;
/** The next minutes whose due work is counted, one bucket each. */
export const DUE_BUCKET_MINUTES = 5;

const STORE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Bounds a label's values: the first `max` distinct values seen keep their
 * name, every later one is reported as "_other". The set never shrinks while
 * the process runs, so a series never changes its label.
 */
export class LabelGuard {
  private readonly seen = new Set<string>();

  constructor(readonly max: number) {}

  label(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return OTHER_LABEL;
    this.seen.add(value);
    return value;
  }
}

export interface LabelGuards {
  tenant: LabelGuard;
  pool: LabelGuard;
}

export function labelGuards(options: { maxTenants?: number; maxPools?: number } = {}): LabelGuards {
  return {
    tenant: new LabelGuard(options.maxTenants ?? METRICS_MAX_TENANTS_DEFAULT),
    pool: new LabelGuard(options.maxPools ?? METRICS_MAX_POOLS_DEFAULT),
  };
}

/**
 * A value computed at most once per ttl, shared by concurrent callers. Two
 * slow reads in a row stretch the ttl to STORE_GAUGE_COST_FACTOR times the
 * shorter of them (at most STORE_GAUGE_MAX_CACHE_MS), so reading the store
 * for /metrics takes about 2% of the time at most however large the tables
 * grow (on SQLite the read blocks the event loop: 300 ms for 200,000 pending
 * one-offs); one slow read (a cold connection) does not.
 */
export class Cached<T> {
  private at = Number.NEGATIVE_INFINITY;
  private ttl: number;
  private lastMs = 0;
  private value: Promise<T> | null = null;

  constructor(
    private readonly ttlMs: number,
    private readonly load: () => Promise<T>,
  ) {
    this.ttl = ttlMs;
  }

  get(): Promise<T> {
    const now = performance.now();
    if (this.value === null || now - this.at >= this.ttl) {
      this.at = now;
      const loading = this.load();
      this.value = loading;
      const took = () => {
        const ms = performance.now() - now;
        this.ttl = Math.min(STORE_GAUGE_MAX_CACHE_MS, Math.max(this.ttlMs, Math.min(ms, this.lastMs) * STORE_GAUGE_COST_FACTOR));
        this.lastMs = ms;
      };
      // A failed read is not kept: the next scrape tries again.
      loading.then(took, () => {
        took();
        if (this.value === loading) this.value = null;
      });
    }
    return this.value;
  }
}

interface StoreSnapshot {
  /** Per pool: READY executions due now (queued), and the earliest readyAt among them. */
  pools: Map<string, { ready: number; oldestReadyAt: number | null }>;
  /** Recurring due entries past their due time, not dispatched yet (capped at DUE_COUNT_LIMIT). */
  dueBacklog: number;
  /** Recurring due entries in each of the next DUE_BUCKET_MINUTES minutes. */
  dueBuckets: number[];
  /** The counts hit DUE_COUNT_LIMIT: the backlog or the later buckets are at least what they say. */
  dueCapped: boolean;
  now: number;
}

export interface WorkloadMetrics {
  /** A store call's method and duration (store-timing.ts observes every call). */
  observeStoreCall(op: string, ms: number): void;
  /** Puts the metrics on the registry; the store-backed gauges read `store` (the engine's) at scrape time. */
  register(registry: Registry, source: { clock: Clock; store: Store }): void;
  /** Starts the event-loop delay monitor. */
  start(): void;
  stop(): Promise<void>;
  /** Rotates the event-loop delay window now (what the loop does every DELAY_WINDOW_MS). */
  runOnce(): Promise<void>;
}

/** The event-loop delay gauge's window. */
const DELAY_WINDOW_MS = 5_000;

/**
 * Creates the metrics and listens to the events; store calls are observed
 * before the registry exists, register() puts them on it (as backpressure.ts).
 * The delay window rotates on the host's clock.
 */
export function workloadMetrics(p: { events: EngineEvents; guards: LabelGuards; clock: Clock; cacheMs?: number }): WorkloadMetrics {
  const { events, guards } = p;
  const metrics: Metric[] = [];
  // prom-client registers a metric on each of `registers` at construction: collect them here until register().
  const registry = { registerMetric: (m: Metric) => metrics.push(m) } as unknown as Registry;
  let source: { clock: Clock; store: Store } | null = null;
  const tp = (tenantId: string, pool: string | undefined) => ({
    tenant: guards.tenant.label(tenantId),
    pool: pool === undefined ? "_unknown" : guards.pool.label(pool),
  });

  const deadLetters = new Counter({
    name: "duetime_dead_letters_total",
    help: "Executions that ended DEAD (a failed or timed-out last attempt), by tenant and pool (guarded: _other past the caps)",
    labelNames: ["tenant", "pool"],
    registers: [registry],
  });
  const leaseExpiries = new Counter({
    name: "duetime_lease_expiries_total",
    help: "Attempts ended TIMED_OUT by the reaper because their lease expired, by tenant and pool (guarded)",
    labelNames: ["tenant", "pool"],
    registers: [registry],
  });
  const shardDispatched = new Counter({
    name: "duetime_shard_dispatched_total",
    help: "Occurrences this node dispatched, by shard (0-255): the dispatch load of each shard",
    labelNames: ["shard"],
    registers: [registry],
  });
  events.on("execution:failed", (e) => {
    if (e.state === "DEAD") deadLetters.inc(tp(e.tenantId, e.pool));
  });
  events.on("execution:timed_out", (e) => {
    leaseExpiries.inc(tp(e.tenantId, e.pool));
    if (e.state === "DEAD") deadLetters.inc(tp(e.tenantId, e.pool));
  });
  events.on("execution:dispatched", (e) => shardDispatched.inc({ shard: String(shardOf(e.jobId)) }));

  const storeLatency = new Histogram({
    name: "duetime_store_operation_duration_seconds",
    help: "Duration of this node's store calls, by store method, failed ones included",
    labelNames: ["op"],
    buckets: STORE_BUCKETS,
    registers: [registry],
  });

  // Event-loop delay over the last few seconds, rotated on a timer so any number of scrapers read the same window.
  const loop: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  const delay = { p50: 0, p99: 0, max: 0 };
  const sample = () => {
    if (loop.count > 0) {
      delay.p50 = loop.percentile(50) / 1e9;
      delay.p99 = loop.percentile(99) / 1e9;
      delay.max = loop.max / 1e9;
    }
    loop.reset();
  };
  const rotating = new Periodic(p.clock, DELAY_WINDOW_MS, async () => sample());
  new Gauge({
    name: "duetime_event_loop_delay_seconds",
    help: "Event-loop delay of this node over the last 5 s, by quantile (0.5, 0.99, max)",
    labelNames: ["quantile"],
    registers: [registry],
    collect() {
      this.set({ quantile: "0.5" }, delay.p50);
      this.set({ quantile: "0.99" }, delay.p99);
      this.set({ quantile: "max" }, delay.max);
    },
  });

  const scrapeErrors = new Counter({
    name: "duetime_metrics_store_read_errors_total",
    help: "Scrapes whose store-backed gauges could not be read from the store (those gauges are left out of that scrape)",
    registers: [registry],
  });
  const snapshot = new Cached<StoreSnapshot>(p.cacheMs ?? STORE_GAUGE_CACHE_MS, async () => {
    try {
      if (source === null) throw new Error("workload metrics not registered");
      return await readSnapshot(source.store, source.clock.now());
    } catch (err) {
      scrapeErrors.inc();
      throw err;
    }
  });
  /** Each store-backed gauge's collect: resets it, then sets it from the (cached) snapshot; a failed read leaves it empty. */
  const fromSnapshot = (fill: (gauge: Gauge<string>, s: StoreSnapshot) => void) =>
    async function (this: Gauge<string>): Promise<void> {
      this.reset();
      let s: StoreSnapshot;
      try {
        s = await snapshot.get();
      } catch {
        return;
      }
      fill(this, s);
    };
  /** Per pool label (guarded): the ready count summed, the oldest age the largest. */
  const byPool = (s: StoreSnapshot) => {
    const out = new Map<string, { ready: number; oldest: number }>();
    for (const [pool, v] of s.pools) {
      const label = guards.pool.label(pool);
      const age = v.oldestReadyAt === null ? 0 : Math.max(0, s.now - v.oldestReadyAt) / 1000;
      const prev = out.get(label) ?? { ready: 0, oldest: 0 };
      out.set(label, { ready: prev.ready + v.ready, oldest: Math.max(prev.oldest, age) });
    }
    return out;
  };
  new Gauge({
    name: "duetime_ready_depth",
    help: "READY executions due now and not yet leased, by pool (guarded), every tenant's; read from the store at most every 5 s",
    labelNames: ["pool"],
    registers: [registry],
    collect: fromSnapshot((g, s) => {
      for (const [pool, v] of byPool(s)) g.set({ pool }, v.ready);
    }),
  });
  new Gauge({
    name: "duetime_oldest_ready_age_seconds",
    help: "How long the oldest READY execution of each pool (guarded) has waited since it became ready; 0 when none is",
    labelNames: ["pool"],
    registers: [registry],
    collect: fromSnapshot((g, s) => {
      for (const [pool, v] of byPool(s)) g.set({ pool }, v.oldest);
    }),
  });
  new Gauge({
    name: "duetime_due_backlog",
    help: `Recurring occurrences past their due time and not yet dispatched, all shards (counted up to ${DUE_COUNT_LIMIT})`,
    registers: [registry],
    collect: fromSnapshot((g, s) => g.set(s.dueBacklog)),
  });
  new Gauge({
    name: "duetime_due_upcoming",
    help: `Work due in each of the next ${DUE_BUCKET_MINUTES} minutes (minute="1": the next 60 s): recurring occurrences, and one-offs and retries becoming ready`,
    labelNames: ["minute"],
    registers: [registry],
    collect: fromSnapshot((g, s) => {
      for (const [i, n] of s.dueBuckets.entries()) g.set({ minute: String(i + 1) }, n);
    }),
  });
  new Gauge({
    name: "duetime_due_count_capped",
    help: `1 when the due backlog and buckets stopped counting at ${DUE_COUNT_LIMIT} due entries or ready executions (the real numbers are higher)`,
    registers: [registry],
    collect: fromSnapshot((g, s) => g.set(s.dueCapped ? 1 : 0)),
  });

  return {
    observeStoreCall(op, ms) {
      storeLatency.observe({ op }, ms / 1000);
    },
    register(target, from) {
      source = from;
      for (const m of metrics) target.registerMetric(m);
    },
    start() {
      loop.enable();
      rotating.start();
    },
    async stop() {
      await rotating.stop();
      loop.disable();
    },
    runOnce: () => rotating.runOnce(),
  };
}

const ALL_SHARDS = Array.from({ length: SHARD_COUNT }, (_, i) => i);

/**
 * The store-backed gauges' facts, from calls whose cost is bounded by what
 * they count: poolCounts (counters and the queue, as /v1/stats),
 * executionNextReady per pool with work due (an index's first row),
 * dueLoad over every shard up to DUE_COUNT_LIMIT entries (an index range on
 * due time), and readyUpcoming up to as many executions (an index range per
 * lane with work in the next hours).
 */
async function readSnapshot(store: Store, now: number): Promise<StoreSnapshot> {
  const counts = await store.poolCounts({ now });
  const pools = new Map<string, { ready: number; oldestReadyAt: number | null }>();
  for (const c of counts) {
    const prev = pools.get(c.pool);
    pools.set(c.pool, { ready: (prev?.ready ?? 0) + c.queued, oldestReadyAt: null });
  }
  await Promise.all(
    [...pools].map(async ([pool, v]) => {
      if (v.ready === 0) return;
      const next = await store.executionNextReady({ pool });
      v.oldestReadyAt = next !== null && next <= now ? next : null;
    }),
  );
  const horizon = now + DUE_BUCKET_MINUTES * 60_000;
  const due = await store.dueLoad({ shards: ALL_SHARDS, before: horizon, limit: DUE_COUNT_LIMIT });
  const dueBuckets = new Array<number>(DUE_BUCKET_MINUTES).fill(0);
  let dueBacklog = 0;
  for (const d of due) {
    if (d.dueAt <= now) dueBacklog++;
    else dueBuckets[Math.min(DUE_BUCKET_MINUTES - 1, Math.floor((d.dueAt - now - 1) / 60_000))]! += 1;
  }
  // One-offs and retries becoming due: executions already, not due entries.
  const ready = await store.readyUpcoming({ now, minutes: DUE_BUCKET_MINUTES, limit: DUE_COUNT_LIMIT });
  ready.forEach((n, i) => {
    dueBuckets[i]! += n;
  });
  const readyCapped = ready.reduce((a, b) => a + b, 0) >= DUE_COUNT_LIMIT;
  return { pools, dueBacklog, dueBuckets, dueCapped: due.length >= DUE_COUNT_LIMIT || readyCapped, now };
}
