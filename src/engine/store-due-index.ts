// The default due index: the store's due table, read a window at a time
// (windowMs ahead, every reloadMs) into the in-memory timer (timer.ts).
//
// Invariant: every due entry of an owned shard with dueAt <= horizon is in the
// timer (or being dispatched). Reloads extend the horizon; entries created or
// moved at or before the horizon are offered to the timer directly, so a
// 5-second delay is not missed between reloads.

import type { LoadedDueEntry, Store } from "../store/store.js";
import type { DueIndex, DueSettlement } from "./due-index.js";
import { DueTimer } from "./timer.js";

export interface StoreDueIndexOptions {
  store: Store;
  /** How far ahead due work is loaded into memory. */
  windowMs: number;
  /** How often the window is reloaded. */
  reloadMs: number;
  /** Most due entries loaded per reload; the horizon stops at the last one loaded. */
  loadLimit: number;
}

export class StoreDueIndex implements DueIndex {
  private readonly timer = new DueTimer();
  private shards: ReadonlySet<number> = new Set();
  private horizon = -Infinity;
  private horizonTruncated = false;
  private nextReloadAt = 0;

  constructor(private readonly o: StoreDueIndexOptions) {}

  get size(): number {
    return this.timer.size;
  }

  setShards(shards: readonly number[]): void {
    this.shards = new Set(shards);
    this.timer.clear();
    this.horizon = -Infinity;
    this.nextReloadAt = 0;
  }

  /** Held when inside the loaded window; later entries wait for a reload. */
  offer(entry: LoadedDueEntry): void {
    if (!this.shards.has(entry.shard)) return;
    if (entry.dueAt > this.horizon) this.timer.remove(entry.jobId);
    else this.timer.push(entry);
  }

  forget({ jobId }: { jobId: string }): void {
    this.timer.remove(jobId);
  }

  refreshAt(): number {
    // A truncated window that ran dry reloads at once: more is due behind it.
    return this.timer.size === 0 && this.horizonTruncated ? 0 : this.nextReloadAt;
  }

  invalidate(): void {
    this.nextReloadAt = 0;
  }

  async refresh(now: number): Promise<void> {
    const before = now + this.o.windowMs;
    const rows = await this.o.store.dueLoad({ shards: [...this.shards], before, limit: this.o.loadLimit });
    for (const row of rows) this.timer.push(row);
    this.horizonTruncated = rows.length === this.o.loadLimit;
    this.horizon = this.horizonTruncated ? rows[rows.length - 1]!.dueAt : before;
    this.nextReloadAt = now + this.o.reloadMs;
  }

  async take(now: number, max: number): Promise<LoadedDueEntry[]> {
    return this.timer.popDue(now, max);
  }

  /** A dispatched entry's next occurrence stays in memory when inside the window; stale and fenced ones are the store's (or the new owner's) to say. */
  async settle({ advanced }: DueSettlement): Promise<void> {
    for (const { entry, next } of advanced) {
      if (next && next.dueAt <= this.horizon) this.timer.push({ ...entry, ...next });
    }
  }

  nextAt(): number | null {
    return this.timer.peekTime();
  }

  async close(): Promise<void> {
    this.timer.clear();
  }
}
