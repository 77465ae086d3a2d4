// Cluster membership and shard leases for SQLite: the heartbeat rows of
// migration 5, and the shards, taken and released fenced by their owner. A
// shard row is the dispatch fence (dispatch.ts): its owner and epoch are
// checked by the statements that consume due entries.

import type { NodeRecord, ShardLease } from "../store.js";
import { toNode, toShard } from "../rows.js";
import type { Query, Row } from "./db.js";

/** Takes the listed shards that are free, expired or already owner's; the epoch grows on a change of owner. The caller holds the write transaction. */
export function acquireShards(q: Query, p: { owner: string; shards: readonly number[]; leaseMs: number }, now: number): ShardLease[] {
  const until = now + p.leaseMs;
  const take = q(
    `INSERT INTO shards (shard, owner, epoch, lease_until) VALUES (@shard, @owner, 1, @until)
         ON CONFLICT (shard) DO UPDATE SET
           epoch = CASE WHEN shards.owner IS @owner THEN shards.epoch ELSE shards.epoch + 1 END,
           owner = @owner, lease_until = @until
         WHERE shards.owner IS @owner OR shards.owner IS NULL OR shards.lease_until < @now
         RETURNING shard, owner, epoch, lease_until`,
  );
  const held: ShardLease[] = [];
  for (const shard of p.shards) {
    const r = take.get({ shard, owner: p.owner, until, now }) as Row | undefined;
    if (r) held.push(toShard(r));
  }
  return held;
}

/** All of owner's shards, or only the listed ones; never another owner's. */
export function releaseShards(q: Query, p: { owner: string; shards?: readonly number[] }): void {
  if (p.shards === undefined) q("UPDATE shards SET owner = NULL, lease_until = 0 WHERE owner = ?").run(p.owner);
  else
    q("UPDATE shards SET owner = NULL, lease_until = 0 WHERE owner = ? AND shard IN (SELECT value FROM json_each(?))").run(
      p.owner,
      JSON.stringify(p.shards),
    );
}

export function listShards(q: Query): ShardLease[] {
  return (q("SELECT * FROM shards ORDER BY shard").all() as Row[]).map(toShard);
}

export function heartbeat(q: Query, p: { nodeId: string; address: string | null; now: number; ttlMs: number }): void {
  q(
    `INSERT INTO nodes (node_id, address, last_heartbeat_at, expires_at) VALUES (@node, @address, @now, @until)
     ON CONFLICT (node_id) DO UPDATE SET address = @address, last_heartbeat_at = @now, expires_at = @until`,
  ).run({ node: p.nodeId, address: p.address, now: p.now, until: p.now + p.ttlMs });
}

export function liveNodes(q: Query, p: { now: number }): NodeRecord[] {
  const rows = q("SELECT * FROM nodes WHERE expires_at >= ? ORDER BY node_id").all(p.now) as Row[];
  return rows.map(toNode);
}

export function leave(q: Query, p: { nodeId: string }): void {
  q("DELETE FROM nodes WHERE node_id = ?").run(p.nodeId);
}
