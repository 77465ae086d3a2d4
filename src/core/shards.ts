// Shard balance: which shards one node gives up and which it tries to take,
// from the shard leases and the live nodes every node reads alike. Each node
// decides alone; the store's compare-and-set acquire settles any race, and
// repeated rounds converge on every shard owned, each node holding
// floor(256/N) or ceil(256/N) of them.

import { SHARD_COUNT } from "./ids.js";

export interface ShardView {
  shard: number;
  owner: string | null;
  leaseUntil: number;
}

export interface ShardPlan {
  /** Shards this node holds and keeps: renew them. */
  keep: number[];
  /** Shards this node holds beyond its target: hand them over. */
  release: number[];
  /** Free or expired shards to try to take, up to the target. */
  acquire: number[];
}

/**
 * How many shards a node aims at: ceil(256/N) for the first 256 mod N live
 * nodes in id order, floor(256/N) for the rest, so the targets add up to
 * exactly 256 and no shard is left over.
 */
export function shardTarget(liveNodes: readonly string[], self: string): number {
  const nodes = ranked(liveNodes, self);
  const base = Math.floor(SHARD_COUNT / nodes.length);
  return nodes.indexOf(self) < SHARD_COUNT % nodes.length ? base + 1 : base;
}

export function planShards(p: { leases: readonly ShardView[]; liveNodes: readonly string[]; self: string; now: number }): ShardPlan {
  const target = shardTarget(p.liveNodes, p.self);
  const owners = new Map(p.leases.map((l) => [l.shard, l]));
  const mine: number[] = [];
  const free: number[] = [];
  for (let shard = 0; shard < SHARD_COUNT; shard++) {
    const lease = owners.get(shard);
    if (lease?.owner === p.self) mine.push(shard);
    else if (!lease || lease.owner === null || lease.leaseUntil < p.now) free.push(shard);
  }
  if (mine.length >= target) return { keep: mine.slice(0, target), release: mine.slice(target), acquire: [] };
  // Each node starts its search at its own offset, so joining nodes rarely race for the same shards.
  const nodes = ranked(p.liveNodes, p.self);
  const start = Math.floor((nodes.indexOf(p.self) * SHARD_COUNT) / nodes.length);
  const rotated = [...free.filter((s) => s >= start), ...free.filter((s) => s < start)];
  return { keep: mine, release: [], acquire: rotated.slice(0, target - mine.length) };
}

/** The live nodes in id order, this node among them (it is live while it asks). */
function ranked(liveNodes: readonly string[], self: string): string[] {
  return [...new Set([...liveNodes, self])].sort();
}
