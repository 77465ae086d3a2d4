// Shard leases and cluster membership for PostgreSQL. A shard row is the
// dispatch fence: dispatchMany holds it FOR SHARE while it consumes due
// entries (index.ts), so a takeover (the UPDATE here) waits for a dispatch in
// flight, and a dispatch after a takeover sees the new owner and epoch.

import type { NodeRecord, ShardLease } from "../store.js";
import { toNode, toShard } from "../rows.js";
import { type Db, nowOr, rows } from "./db.js";

/**
 * Takes the listed shards that are free, expired or already owner's, in one
 * statement; the epoch grows on a change of owner. Shards are taken in
 * order, so two nodes acquiring overlapping sets cannot deadlock.
 */
export async function acquireShards(db: Db, p: { owner: string; shards: readonly number[]; leaseMs: number; now?: number }): Promise<ShardLease[]> {
  if (p.shards.length === 0) return [];
  const sorted = [...new Set(p.shards)].sort((a, b) => a - b);
  const taken = await rows(
    db,
    `WITH t AS (SELECT ${nowOr("$4")} AS now)
     INSERT INTO shards (shard, owner, epoch, lease_until)
     SELECT s, $2, 1, t.now + $3 FROM unnest($1::int[]) AS s, t
     ON CONFLICT (shard) DO UPDATE SET
       epoch = CASE WHEN shards.owner IS NOT DISTINCT FROM excluded.owner THEN shards.epoch ELSE shards.epoch + 1 END,
       owner = excluded.owner, lease_until = excluded.lease_until
     -- excluded.lease_until - leaseMs is the call's now: a lease holds up to and including lease_until.
     WHERE shards.owner IS NOT DISTINCT FROM excluded.owner OR shards.owner IS NULL
       OR shards.lease_until < excluded.lease_until - $3
     RETURNING shard, owner, epoch, lease_until`,
    [sorted, p.owner, p.leaseMs, p.now ?? null],
    "shard_acquire",
  );
  return taken.map(toShard);
}

/** All of owner's shards, or only the listed ones; never another owner's. */
export async function releaseShards(db: Db, p: { owner: string; shards?: readonly number[] }): Promise<void> {
  if (p.shards === undefined) await db.query("UPDATE shards SET owner = NULL, lease_until = 0 WHERE owner = $1", [p.owner]);
  else await db.query("UPDATE shards SET owner = NULL, lease_until = 0 WHERE owner = $1 AND shard = ANY($2::int[])", [p.owner, p.shards]);
}

export async function listShards(db: Db): Promise<ShardLease[]> {
  return (await rows(db, "SELECT * FROM shards ORDER BY shard")).map(toShard);
}

export async function heartbeat(db: Db, p: { nodeId: string; address: string | null; now: number; ttlMs: number }): Promise<void> {
  await db.query(
    `INSERT INTO nodes (node_id, address, last_heartbeat_at, expires_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (node_id) DO UPDATE SET address = excluded.address, last_heartbeat_at = excluded.last_heartbeat_at,
       expires_at = excluded.expires_at`,
    [p.nodeId, p.address, p.now, p.now + p.ttlMs],
  );
}

export async function liveNodes(db: Db, p: { now: number }): Promise<NodeRecord[]> {
  const live = await rows(db, "SELECT * FROM nodes WHERE expires_at >= $1 ORDER BY node_id", [p.now]);
  return live.map(toNode);
}

export async function leave(db: Db, p: { nodeId: string }): Promise<void> {
  await db.query("DELETE FROM nodes WHERE node_id = $1", [p.nodeId]);
}
