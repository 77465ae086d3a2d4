// The Redis due index (--due-index redis://…): per shard, a sorted set of
// job ids scored by due time, claimed by an atomic script (store/redis/due-keys.ts,
// its lua/). The store stays the truth: a claimed id is read back from the store
// (dueGet) and dispatched only as the store holds it, by the same fenced
// dispatchMany as ever; the index only says when and where to look.
//
// Members are job ids, not execution ids: a job has at most one due entry,
// so its id names the entry, and an update or a pause re-scores or removes
// the member in O(log N) without knowing the occurrence it replaced (the
// store's entry says which occurrence; its execution id follows from it).
//
// Who writes what:
// - the node that writes a due entry to the store indexes it after the
//   commit (offer/forget; any node, for any shard: the write is idempotent,
//   and the store was written first, so a crash in between leaves work that
//   reconciliation finds);
// - claims, returns of expired claims and reconciliation touch only the
//   shards this node owns (the cluster's shard leases);
// - what a claim hands back (settle) goes in with NX: an update that
//   re-indexed the job since the claim knows better.

import type { DueRef, LoadedDueEntry, Store } from "../store/store.js";
import type { DueIndex, DueSettlement } from "./due-index.js";
import type { EngineEvents } from "./events.js";
import type { RedisDueKeys } from "../store/redis/due-keys.js";

/** How long to wait before claiming again from a shard whose head Redis's clock has not reached yet. */
const CLOCK_SLACK_MS = 10;

export interface RedisDueIndexOptions {
  keys: RedisDueKeys;
  store: Store;
  events: EngineEvents;
  /** How long a claim lasts before another pass may take it back (a node that died mid-dispatch). */
  claimMs?: number;
  /** How often each owned shard's head is re-read and expired claims are returned. */
  refreshMs?: number;
  /** Most expired claims returned per shard per refresh. */
  reapLimit?: number;
}

export class RedisDueIndex implements DueIndex {
  readonly size = 0;
  private owned: ReadonlySet<number> = new Set();
  /** The earliest known due time of each owned shard (from the last refresh, claims and offers). */
  private readonly heads = new Map<number, number>();
  private nextRefreshAt = 0;
  /** Index writes of this turn, in order (enqueue). */
  private readonly writes: { op: "offer" | "forget"; entries: (LoadedDueEntry | { jobId: string; shard: number })[] }[] = [];
  private readonly claimMs: number;
  private readonly refreshMs: number;

  constructor(private readonly o: RedisDueIndexOptions) {
    this.claimMs = o.claimMs ?? 30_000;
    this.refreshMs = o.refreshMs ?? 5_000;
  }

  get shards(): readonly number[] {
    return [...this.owned];
  }

  setShards(shards: readonly number[]): void {
    this.owned = new Set(shards);
    this.heads.clear();
    this.nextRefreshAt = 0;
  }

  offer(entry: LoadedDueEntry, written: boolean): void {
    if (written) this.enqueue("offer", entry);
    this.lowerHead(entry.shard, entry.dueAt);
  }

  /** Entries the reconciler put back (or moved earlier) in the index: the heads they lower. */
  repaired(refs: readonly DueRef[]): void {
    for (const ref of refs) this.lowerHead(ref.shard, ref.dueAt);
  }

  forget(entry: { jobId: string; shard: number }): void {
    this.enqueue("forget", entry);
  }

  refreshAt(): number {
    return this.nextRefreshAt;
  }

  invalidate(): void {
    this.nextRefreshAt = 0;
  }

  /** Returns expired claims of the owned shards, then reads every owned shard's head. */
  async refresh(now: number): Promise<void> {
    const shards = this.shards;
    await Promise.all(shards.map((s) => this.o.keys.reap(s, this.o.reapLimit ?? 1000)));
    const heads = await this.o.keys.head(shards);
    this.heads.clear();
    for (const [shard, at] of heads) this.heads.set(shard, at);
    this.nextRefreshAt = now + this.refreshMs;
  }

  /**
   * Claims due ids from the shards whose head has come (Redis's clock
   * decides), and reads them back from the store. An id the store has no
   * entry for is dropped; one the store says is not due yet goes back with
   * the store's time.
   */
  async take(now: number, max: number): Promise<LoadedDueEntry[]> {
    const claimed: { shard: number; ids: string[] }[] = [];
    let room = max;
    for (const shard of this.dueShards(now)) {
      if (room <= 0) break;
      const { ids, next } = await this.o.keys.claim(shard, room, this.claimMs);
      if (next === null) this.heads.delete(shard);
      // Nothing due yet by Redis's clock (this host's runs ahead): ask again shortly, not in a loop.
      else this.heads.set(shard, ids.length === 0 && next <= now ? now + CLOCK_SLACK_MS : next);
      if (ids.length > 0) claimed.push({ shard, ids });
      room -= ids.length;
    }
    if (claimed.length === 0) return [];
    const entries = await this.o.store.dueGet({ jobIds: claimed.flatMap((c) => c.ids) });
    const byId = new Map(entries.map((e) => [e.jobId, e]));
    const ready: LoadedDueEntry[] = [];
    const back: { jobId: string; shard: number; next: number | null }[] = [];
    for (const { shard, ids } of claimed) {
      for (const jobId of ids) {
        const entry = byId.get(jobId);
        if (entry && entry.shard === shard && entry.dueAt <= now) ready.push(entry);
        else back.push({ jobId, shard, next: entry && entry.shard === shard ? entry.dueAt : null });
      }
    }
    await this.handBack(back);
    return ready;
  }

  async settle({ advanced, stale, fenced }: DueSettlement): Promise<void> {
    const back: { jobId: string; shard: number; next: number | null }[] = [];
    for (const { entry, next } of advanced) back.push({ jobId: entry.jobId, shard: entry.shard, next: next?.dueAt ?? null });
    // The new owner claims a fenced entry once it is back in its set.
    for (const entry of fenced) back.push({ jobId: entry.jobId, shard: entry.shard, next: entry.dueAt });
    if (stale.length > 0) {
      const now = new Map((await this.o.store.dueGet({ jobIds: stale.map((e) => e.jobId) })).map((e) => [e.jobId, e]));
      for (const entry of stale) back.push({ jobId: entry.jobId, shard: entry.shard, next: now.get(entry.jobId)?.dueAt ?? null });
    }
    await this.handBack(back);
  }

  nextAt(): number | null {
    let min: number | null = null;
    for (const at of this.heads.values()) if (min === null || at < min) min = at;
    return min;
  }

  async close(): Promise<void> {
    await this.o.keys.close();
  }

  /** Ends claims: each id leaves the claimed set and, with a next time, goes back (NX) to be claimed then. */
  private async handBack(items: { jobId: string; shard: number; next: number | null }[]): Promise<void> {
    const byShard = new Map<number, { jobId: string; next: number | null }[]>();
    for (const { shard, jobId, next } of items) {
      let list = byShard.get(shard);
      if (!list) byShard.set(shard, (list = []));
      list.push({ jobId, next });
      if (next !== null) this.lowerHead(shard, next);
    }
    await Promise.all([...byShard].map(([shard, list]) => this.o.keys.advance(shard, list)));
  }

  /** Owned shards whose earliest known entry is due, earliest first. */
  private dueShards(now: number): number[] {
    return [...this.heads]
      .filter(([, at]) => at <= now)
      .sort((a, b) => a[1] - b[1])
      .map(([shard]) => shard);
  }

  private lowerHead(shard: number, at: number): void {
    if (!this.owned.has(shard)) return;
    const head = this.heads.get(shard);
    if (head === undefined || at < head) this.heads.set(shard, at);
  }

  /**
   * Index writes after a store commit: gathered until the current turn ends
   * (a create of 1,000 jobs is one ZADD per shard, not one per job), sent in
   * the order made, and not awaited by the caller: a failure is reported,
   * and reconciliation repairs it.
   */
  private enqueue(op: "offer" | "forget", entry: LoadedDueEntry | { jobId: string; shard: number }): void {
    const last = this.writes.at(-1);
    if (last?.op === op) last.entries.push(entry);
    else this.writes.push({ op, entries: [entry] });
    if (this.writes.length === 1 && last === undefined) queueMicrotask(() => this.sendWrites());
  }

  private sendWrites(): void {
    for (const { op, entries } of this.writes.splice(0)) {
      const done = op === "offer" ? this.o.keys.add(entries as LoadedDueEntry[]) : this.o.keys.remove(entries);
      done.catch((error: unknown) => this.o.events.emit("error", { where: `due-index:${op}`, error }));
    }
  }
}
