// The due index: where the scheduler learns what is due when. The store's
// due table is the truth in every implementation; an index only says where
// to look, and every dispatch is checked against the store (dispatchMany's
// compare-and-set on the due entry and the shard epoch). So an index that
// loses an entry delays it (until reconciliation or a reload finds it), and
// one that holds a stale entry costs a wasted claim, never a wrong dispatch.
//
// Two implementations:
// - StoreDueIndex (store-due-index.ts, the default): the store's due table
//   read a window at a time into the in-memory timer (timer.ts);
// - RedisDueIndex (redis-due-index.ts, --due-index redis://…): a sorted set
//   per shard, claimed by an atomic script, reconciled with the store.

import type { LoadedDueEntry, NextOccurrence } from "../store/store.js";

/** What dispatch did with an entry the index handed out (DueIndex.take). */
export interface DueSettlement {
  /** Dispatched: the job's next occurrence, or null when it has none (its due entry is gone). */
  advanced: { entry: LoadedDueEntry; next: NextOccurrence | null }[];
  /** The store's entry had moved (an update, a pause) between take and dispatch: the store has the truth. */
  stale: LoadedDueEntry[];
  /** The shard is no longer this node's: its new owner dispatches. */
  fenced: LoadedDueEntry[];
}

export interface DueIndex {
  /** Entries held in memory (the store index's window; Redis: none). */
  readonly size: number;
  /** The shards this node owns changed: forget others' entries; the next refresh reloads. */
  setShards(shards: readonly number[]): void;
  /**
   * A due entry the store now holds for its job (created or moved). `written`:
   * this node wrote it (an index kept outside the process must record it);
   * false: heard of from another node (a hint, to wake on time).
   */
  offer(entry: LoadedDueEntry, written: boolean): void;
  /** The job has no due entry any more (cancelled, paused, deleted, ended). */
  forget(entry: { jobId: string; shard: number }): void;
  /** When refresh must run next (epoch ms). */
  refreshAt(): number;
  /** Makes the next refresh run at once (a failed pass, lost signals). */
  invalidate(): void;
  /** Periodic upkeep at `now`: the store index reloads its window; Redis returns expired claims and reads each shard's head. */
  refresh(now: number): Promise<void>;
  /** Up to `max` entries due at `now`, now claimed by this node for dispatch, as the store holds them. */
  take(now: number, max: number): Promise<LoadedDueEntry[]>;
  /** Ends the claims of taken entries (see DueSettlement). */
  settle(outcome: DueSettlement): Promise<void>;
  /** The earliest time something known is due, or null. */
  nextAt(): number | null;
  close(): Promise<void>;
}
