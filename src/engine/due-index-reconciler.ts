// Reconciles the Redis due index with the store, one shard at a time, a page
// of each side per step (dueScan by job id, ZSCAN of the scheduled set):
// - store → index: each due entry of the shard that the index holds neither
//   scheduled nor claimed is added; one the index holds later than the store
//   is lowered (repair.lua, which skips an id claimed meanwhile: an index that
//   says "later" makes a job late, one that says "earlier" costs only a claim
//   that the store answers);
// - index → store: each member of the shard that the store has no due entry
//   for is removed, if its score is still the one read (a re-add since is
//   kept).
// Both sides' pages of the shard are held until both cursors come round (one
// shard's ids at a time: about 4,000 per million recurring jobs) and
// compared in memory; only the ids they disagree on are read again (ZMSCORE,
// dueRefs) before a repair. So a pass over a shard where both agree, which is
// every pass of an idle index, reads each side once and writes nothing. The
// shard is done when both cursors come round and its differences are
// settled; a cycle when every owned shard is done. The lag (the age of the oldest owned shard's last pass) is
// what an index that lost writes may be behind the store, at most.
//
// Paced slowly (a page a second: a full pass over a million recurring jobs
// is about half an hour), since lost writes are rare. But a shard that no
// full pass has covered in the index's current generation is hurried
// through: the index is new, or Redis lost its data (a flush, a restart
// without persistence), which changes the generation. Each shard's last
// full pass is marked in Redis with its generation, so a node that restarts
// or takes a shard over against an intact index does not hurry.

import { randomUUID } from "node:crypto";
import type { Clock, TimerHandle } from "../core/clock.js";
import type { DueRef, Store } from "../store/store.js";
import type { EngineEvents } from "./events.js";
import type { RedisDueKeys } from "../store/redis/due-keys.js";

export interface ReconcilerOptions {
  keys: RedisDueKeys;
  store: Store;
  clock: Clock;
  events: EngineEvents;
  /** The shards this node owns now. */
  shards: () => readonly number[];
  /** Entries it added back or moved earlier: the scheduler's idea of when a shard is next due may be later. */
  onRepaired?: (refs: readonly DueRef[]) => void;
  /** Entries (and members) per step. */
  pageSize?: number;
  /** Pause between steps: paces the reconciler's load on both stores (default 1 s). */
  stepMs?: number;
  /** Pause between steps while a shard waits for its first full pass in this generation (default 10 ms). */
  hurryStepMs?: number;
}

/** How often the index's generation is read while not hurrying. */
const GENERATION_CHECK_MS = 2000;

interface ShardCursor {
  store: string;
  index: string;
  storeDone: boolean;
  indexDone: boolean;
  /** The shard's due entries read from the store so far in this pass. */
  stored: Map<string, DueRef>;
  /** The shard's scheduled members (and scores) read from the index so far in this pass. */
  indexed: Map<string, number>;
}

export class DueIndexReconciler {
  private readonly cursors = new Map<number, ShardCursor>();
  /** When each shard's last full pass ended. */
  private readonly passedAt = new Map<number, number>();
  private readonly startedAt: number;
  private queue: number[] = [];
  /** The index generation last seen (RedisDueKeys.generation); null before the first step. */
  private generation: string | null = null;
  /** Whether each owned shard has had a full pass in this generation (its mark in Redis, or a pass of ours). */
  private readonly built = new Map<number, boolean>();
  private lastPageAt = -Infinity;
  private timer: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;

  constructor(private readonly o: ReconcilerOptions) {
    this.startedAt = o.clock.now();
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    await this.running;
  }

  /** How far behind the store the index may be: the age of the oldest owned shard's last full pass (ms). */
  lagMs(now = this.o.clock.now()): number {
    let oldest = now;
    for (const shard of this.o.shards()) oldest = Math.min(oldest, this.passedAt.get(shard) ?? this.startedAt);
    return now - oldest;
  }

  /** Owned shards known to wait for their first full pass in this generation: hurried through, one after another. */
  rebuildingShards(): number {
    let n = 0;
    for (const done of this.built.values()) if (!done) n++;
    return n;
  }

  /** One step: a page of the next owned shard. Answers what it repaired. */
  async runOnce(): Promise<{ shard: number | null; added: number; removed: number }> {
    await this.checkGeneration();
    return this.page();
  }

  private async page(): Promise<{ shard: number | null; added: number; removed: number }> {
    const shard = this.nextShard();
    if (shard === null) return { shard, added: 0, removed: 0 };
    const cursor = this.cursors.get(shard) ?? { store: "", index: "0", storeDone: false, indexDone: false, stored: new Map(), indexed: new Map() };
    this.cursors.set(shard, cursor);
    await Promise.all([cursor.storeDone ? null : this.readStore(shard, cursor), cursor.indexDone ? null : this.readIndex(shard, cursor)]);
    let added = 0;
    let removed = 0;
    if (cursor.storeDone && cursor.indexDone) {
      added = await this.storeToIndex(shard, cursor);
      removed = await this.indexToStore(shard, cursor);
      this.cursors.delete(shard);
      this.passedAt.set(shard, this.o.clock.now());
      this.queue = this.queue.filter((s) => s !== shard);
      if (this.built.get(shard) !== true && this.generation !== null) {
        await this.o.keys.markBuilt(shard, this.generation);
        this.built.set(shard, true);
      }
    }
    if (added + removed > 0) this.o.events.emit("due-index:repaired", { shard, added, removed });
    return { shard, added, removed };
  }

  /** Runs steps until every owned shard has had a full pass (tests step the reconciler with it). */
  async runCycle(): Promise<{ added: number; removed: number }> {
    const total = { added: 0, removed: 0 };
    const pending = new Set(this.o.shards());
    while (pending.size > 0) {
      const step = await this.runOnce();
      if (step.shard === null) break;
      total.added += step.added;
      total.removed += step.removed;
      if (!this.cursors.has(step.shard)) pending.delete(step.shard);
    }
    return total;
  }

  /** A new generation starts every owned shard's pass over; a shard newly owned has its mark read. */
  private async checkGeneration(): Promise<void> {
    const seen = await this.o.keys.generation(randomUUID());
    if (seen !== this.generation) {
      this.generation = seen;
      this.built.clear();
      this.queue = [];
      this.cursors.clear(); // entries behind a cursor may be lost too
    }
    const owned = new Set(this.o.shards());
    for (const shard of this.built.keys()) if (!owned.has(shard)) this.built.delete(shard);
    // A shard given up mid-pass drops what its pass held (its new owner passes it).
    for (const shard of this.cursors.keys()) if (!owned.has(shard)) this.cursors.delete(shard);
    const unknown = [...owned].filter((s) => !this.built.has(s));
    if (unknown.length === 0) return;
    const built = await this.o.keys.builtIn(unknown, seen);
    for (const shard of unknown) this.built.set(shard, built.has(shard));
  }

  private hurrying(): boolean {
    return this.rebuildingShards() > 0;
  }

  /** While hurrying, the shards not built yet, one after another; then every owned shard, least recently passed first. */
  private nextShard(): number | null {
    const owned = this.o.shards();
    const unbuilt = new Set(owned.filter((s) => this.built.get(s) === false));
    const eligible = unbuilt.size > 0 ? unbuilt : new Set(owned);
    this.queue = this.queue.filter((s) => eligible.has(s));
    if (this.queue.length === 0) this.queue = [...eligible].sort((a, b) => (this.passedAt.get(a) ?? 0) - (this.passedAt.get(b) ?? 0));
    return this.queue[0] ?? null;
  }

  private async readStore(shard: number, cursor: ShardCursor): Promise<void> {
    const page = this.o.pageSize ?? 500;
    const entries = await this.o.store.dueScan({ shard, after: cursor.store, limit: page });
    if (entries.length < page) cursor.storeDone = true;
    for (const e of entries) cursor.stored.set(e.jobId, e);
    if (entries.length > 0) cursor.store = entries[entries.length - 1]!.jobId;
  }

  private async readIndex(shard: number, cursor: ShardCursor): Promise<void> {
    const { cursor: next, members } = await this.o.keys.scan(shard, cursor.index, this.o.pageSize ?? 500);
    cursor.index = next;
    if (next === "0") cursor.indexDone = true;
    for (const m of members) cursor.indexed.set(m.jobId, m.score);
  }

  /** The shard's store entries the index did not hold scheduled at or before their time: read again, then added or lowered unless claimed. */
  private async storeToIndex(shard: number, cursor: ShardCursor): Promise<number> {
    const differing = [...cursor.stored.values()].filter((e) => {
      const held = cursor.indexed.get(e.jobId);
      return held === undefined || held > e.dueAt;
    });
    let repaired = 0;
    for (const entries of slices(differing, this.o.pageSize ?? 500)) {
      // Read again: the scan may have missed a member added meanwhile, and a claimed one sits in leased.
      const { scheduled, leased } = await this.o.keys.scores(
        shard,
        entries.map((e) => e.jobId),
      );
      const candidates = entries.filter((e, i) => leased[i] === null && (scheduled[i] === null || scheduled[i]! > e.dueAt));
      if (candidates.length === 0) continue;
      const n = await this.o.keys.repair(candidates);
      if (n > 0) this.o.onRepaired?.(candidates);
      repaired += n;
    }
    return repaired;
  }

  /** The shard's members the store pass did not meet: read back from the store, and removed (if their score is unchanged) when it has no entry. */
  private async indexToStore(shard: number, cursor: ShardCursor): Promise<number> {
    const unmatched = [...cursor.indexed].filter(([jobId]) => !cursor.stored.has(jobId)).map(([jobId, score]) => ({ jobId, score }));
    let removed = 0;
    for (const members of slices(unmatched, this.o.pageSize ?? 500)) {
      // Read again: an entry written after the store's cursor passed its place is kept.
      const held = new Set((await this.o.store.dueRefs({ jobIds: members.map((m) => m.jobId) })).map((e) => e.jobId));
      const orphans = members.filter((m) => !held.has(m.jobId));
      if (orphans.length > 0) removed += await this.o.keys.removeIf(shard, orphans);
    }
    return removed;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.o.clock.setTimer(() => {
      this.running = this.tick()
        .catch((error: unknown) => this.o.events.emit("error", { where: "due-index:reconcile", error }))
        .finally(() => {
          this.running = null;
          const stepMs = this.o.stepMs ?? 1000;
          this.schedule(this.hurrying() ? (this.o.hurryStepMs ?? 10) : Math.min(stepMs, GENERATION_CHECK_MS));
        });
    }, ms);
  }

  /** Checks the generation often (a lost index is found within seconds), and runs a page when hurrying or a step is due. */
  private async tick(): Promise<void> {
    await this.checkGeneration();
    const now = this.o.clock.now();
    if (!this.hurrying() && now - this.lastPageAt < (this.o.stepMs ?? 1000)) return;
    this.lastPageAt = now;
    await this.page();
  }
}

function slices<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
