// The scheduler: takes the due work of the shards this node owns
// (engine/shard-keeper.ts keeps those) from its due index (due-index.ts: the
// store's due table in memory, or Redis), and dispatches due occurrences in
// batches (one store transaction each). Only recurring jobs have due
// entries: a one-off's execution is written with the job, and the executor
// wakes long polls when it is due.

import type { Clock, TimerHandle } from "../core/clock.js";
import { completesAtDispatch, MISFIRE_THRESHOLD_MS, planCronDispatch } from "../core/misfire.js";
import { isCron } from "../core/schedule.js";
import type { DispatchItem, LoadedDueEntry, Store } from "../store/store.js";
import type { EngineEvents } from "./events.js";
import { ShardKeeper } from "./shard-keeper.js";
import type { DueIndex } from "./due-index.js";
import { StoreDueIndex } from "./store-due-index.js";
import { spanClock, type Tracing } from "./tracing.js";
import { toIso } from "../core/time.js";

export interface SchedulerOptions {
  store: Store;
  clock: Clock;
  nodeId: string;
  /** Where this node serves its API (host:port), shown by GET /v1/cluster. */
  address?: string | null;
  events: EngineEvents;
  /** Called after each committed batch with the pools that got ready work. */
  onDispatched: (ready: { tenantId: string; pool: string }[]) => void;
  /** How far ahead due work is loaded into memory. */
  windowMs?: number;
  /** How often the window is reloaded. */
  reloadMs?: number;
  /** Most occurrences dispatched in one transaction. */
  batchSize?: number;
  /** Most due entries loaded per reload; the horizon stops at the last one loaded. */
  loadLimit?: number;
  /** How long a shard lease (and node heartbeat) lasts unrenewed; renewed every third of it (default 10 s). */
  shardLeaseMs?: number;
  /** A recurring occurrence dispatched later than this after its due time is a misfire (default 60 s). */
  misfireThresholdMs?: number;
  /** How the shard keeper reads the store's clock (ShardKeeperOptions.storeTime). */
  storeTime?: () => Promise<number>;
  /** A span per occurrence dispatched (tracing.ts); null or absent: tracing is off. */
  tracing?: Tracing | null;
  /** Where due work is found (due-index.ts); default: the store's due table, a window in memory. */
  dueIndex?: DueIndex;
}

export class Scheduler {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly opts: Required<
    Omit<
      SchedulerOptions,
      "store" | "clock" | "events" | "onDispatched" | "nodeId" | "address" | "shardLeaseMs" | "storeTime" | "tracing" | "dueIndex"
    >
  >;
  /** This node's membership and shard leases, renewed on their own loop. */
  readonly shards: ShardKeeper;
  private readonly index: DueIndex;
  private epochs = new Map<number, number>();
  private armed: { at: number; handle: TimerHandle } | null = null;
  private running: Promise<void> | null = null;
  private rerun = false;
  private stopped = true;
  /** Passes failed in a row, and when the next may run. */
  private failures = 0;
  private retryAt = 0;

  constructor(private readonly options: SchedulerOptions) {
    this.store = options.store;
    this.clock = options.clock;
    this.opts = {
      windowMs: options.windowMs ?? 60_000,
      reloadMs: options.reloadMs ?? 15_000,
      batchSize: options.batchSize ?? 1000,
      loadLimit: options.loadLimit ?? 50_000,
      misfireThresholdMs: options.misfireThresholdMs ?? MISFIRE_THRESHOLD_MS,
    };
    this.index =
      options.dueIndex ??
      new StoreDueIndex({ store: options.store, windowMs: this.opts.windowMs, reloadMs: this.opts.reloadMs, loadLimit: this.opts.loadLimit });
    this.shards = new ShardKeeper({
      store: options.store,
      clock: options.clock,
      nodeId: options.nodeId,
      address: options.address ?? null,
      events: options.events,
      ...(options.shardLeaseMs !== undefined ? { leaseMs: options.shardLeaseMs } : {}),
      ...(options.storeTime ? { storeTime: options.storeTime } : {}),
      onShards: (epochs) => this.setShards(epochs),
    });
  }

  get ownedShards(): number[] {
    return [...this.epochs.keys()];
  }

  /** How far ahead due work is held in memory. */
  get windowMs(): number {
    return this.opts.windowMs;
  }

  /** Reloads the window at once (signals from other nodes may have been lost). */
  reloadNow(): void {
    this.index.invalidate();
    if (!this.stopped) void this.runOnce();
  }

  get loaded(): number {
    return this.index.size;
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.shards.start();
    await this.runOnce();
  }

  /** Stops dispatching, then hands the shards over, so another node (or this one restarted) takes them at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.armed?.handle.cancel();
    this.armed = null;
    await this.running;
    await this.shards.stop();
    this.epochs.clear();
    await this.index.close();
  }

  /** The keeper's word on which shards are this node's: a change drops the window and reloads it. */
  private setShards(epochs: Map<number, number>): void {
    const gained = shardsNotIn(epochs, this.epochs);
    const lost = shardsNotIn(this.epochs, epochs);
    if (gained === 0 && lost === 0) {
      // The store answers the keeper again: the pass held back by the failures' backoff (up to a reload interval) runs now.
      if (this.failures > 0 && !this.stopped) {
        this.retryAt = 0;
        void this.runOnce();
      }
      return;
    }
    this.epochs = epochs;
    this.index.setShards([...epochs.keys()]);
    this.options.events.emit("shards:changed", { owned: epochs.size, gained, lost });
    if (!this.stopped) void this.runOnce();
  }

  /**
   * A new or moved due entry (`written` by this node, or heard of from
   * another): to the index, and the timer is re-armed if it is due sooner.
   */
  offer(entry: LoadedDueEntry, written = true): void {
    this.index.offer(entry, written);
    if (!this.stopped && this.epochs.has(entry.shard) && (!this.armed || entry.dueAt < this.armed.at)) this.arm();
  }

  /** The index learned of an earlier due time by itself (a reconciler's repair): re-arm the timer for it. */
  rearm(): void {
    if (!this.stopped && !this.running) this.arm();
  }

  forget(entry: { jobId: string; shard: number }): void {
    this.index.forget(entry);
  }

  /**
   * One pass: renews shards and reloads the window when due, then dispatches
   * everything due now. Concurrent calls coalesce into one more pass.
   */
  runOnce(): Promise<void> {
    if (this.running) {
      this.rerun = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.rerun = false;
          await this.pass();
        } while (this.rerun && !this.stopped);
        this.failures = 0;
      } catch (err) {
        this.options.events.emit("error", { where: "scheduler", error: err });
        // A failing store (a full disk) is retried with backoff, not at once
        // and forever; the retry reloads, which puts a failed batch back in the window.
        this.retryAt = this.clock.now() + Math.min(1000 * 2 ** this.failures++, this.opts.reloadMs);
        this.index.invalidate();
      } finally {
        this.running = null;
        if (!this.stopped) this.arm();
      }
    })();
    return this.running;
  }

  private async pass(): Promise<void> {
    if (this.clock.now() >= this.index.refreshAt()) {
      await this.shards.ensure();
      await this.index.refresh(this.clock.now());
    }
    for (;;) {
      const batch = await this.index.take(this.clock.now(), this.opts.batchSize);
      if (batch.length === 0) return;
      await this.dispatch(batch);
      // The SQLite store answers synchronously: without a turn of the event
      // loop here, no lease is served until a whole herd is dispatched.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private async dispatch(batch: LoadedDueEntry[]): Promise<void> {
    const now = this.clock.now();
    const items = batch.map((entry) => planDispatch(entry, now, this.opts.misfireThresholdMs));
    const startedAt = this.options.tracing ? spanClock() : 0;
    const result = await this.store.dispatchMany({ nodeId: this.options.nodeId, epochs: this.epochs, now, items });
    this.options.onDispatched(result.dispatched);
    const ran = new Map(items.map((i) => [i.entry.jobId, i.run ?? i.entry.scheduledFor]));
    for (const d of result.dispatched) {
      this.options.events.emit("execution:dispatched", { ...d, lagMs: now - ran.get(d.jobId)! });
    }
    for (const d of result.wouldRun) this.options.events.emit("execution:would_run", { ...d, lagMs: now - ran.get(d.jobId)! });
    if (this.options.tracing && result.dispatched.length > 0) {
      const parents = new Map(batch.map((e) => [e.jobId, e.traceParent]));
      this.options.tracing.dispatched(
        startedAt,
        result.dispatched.map((d) => ({ ...d, scheduledFor: toIso(ran.get(d.jobId)!), traceParent: parents.get(d.jobId) })),
      );
    }
    const stale = new Set(result.stale);
    const fenced = new Set(result.fenced);
    await this.index.settle({
      advanced: batch.flatMap((entry, i) => (stale.has(entry.jobId) || fenced.has(entry.jobId) ? [] : [{ entry, next: items[i]!.next }])),
      stale: batch.filter((e) => stale.has(e.jobId)),
      fenced: batch.filter((e) => fenced.has(e.jobId)),
    });
    if (result.fenced.length > 0) void this.shards.runOnce(); // lost a shard: re-read who owns what
  }

  private arm(): void {
    const next = this.index.nextAt();
    const at = Math.max(Math.min(next ?? Infinity, this.index.refreshAt()), this.retryAt);
    if (this.armed && this.armed.at === at) return;
    this.armed?.handle.cancel();
    const handle = this.clock.setTimer(() => {
      this.armed = null;
      void this.runOnce();
    }, at - this.clock.now());
    this.armed = { at, handle };
  }
}

/**
 * A recurring job's plan applies its misfire and overlap policies
 * (core/misfire.ts), and its last occurrence completes it. (A due entry of
 * another kind runs its occurrence as it is.)
 */
function planDispatch(entry: LoadedDueEntry, now: number, misfireThresholdMs: number): DispatchItem {
  const item = planOccurrence(entry, now, misfireThresholdMs);
  return { ...item, completeJob: completesAtDispatch(entry.kind, item.next !== null) };
}

function planOccurrence(entry: LoadedDueEntry, now: number, misfireThresholdMs: number): DispatchItem {
  if (entry.kind !== "cron" || !isCron(entry.schedule)) return { entry, next: null };
  const threshold = entry.schedule.misfireThresholdSeconds;
  const plan = planCronDispatch(
    entry.schedule,
    entry.jobId,
    entry.scheduledFor,
    now,
    threshold === undefined ? misfireThresholdMs : threshold * 1000,
  );
  return { entry, next: plan.next, run: plan.run, skipped: plan.skipped, overlap: entry.schedule.overlap };
}

/** How many shards of `a` are not in `b` at the same epoch. */
function shardsNotIn(a: Map<number, number>, b: Map<number, number>): number {
  let n = 0;
  for (const [shard, epoch] of a) if (b.get(shard) !== epoch) n++;
  return n;
}
