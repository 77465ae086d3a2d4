// Cluster membership and shard handover for SQLite: the heartbeat rows of
// migration 5, and the release of shards fenced by their owner.

import type Database from "better-sqlite3";
import type { NodeRecord } from "../store.js";

type Row = Record<string, unknown>;
type Query = (sql: string) => Database.Statement;

export function heartbeat(q: Query, p: { nodeId: string; address: string | null; now: number; ttlMs: number }): void {
  q(
    `INSERT INTO nodes (node_id, address, last_heartbeat_at, expires_at) VALUES (@node, @address, @now, @until)
     ON CONFLICT (node_id) DO UPDATE SET address = @address, last_heartbeat_at = @now, expires_at = @until`,
  ).run({ node: p.nodeId, address: p.address, now: p.now, until: p.now + p.ttlMs });
}

export function liveNodes(q: Query, p: { now: number }): NodeRecord[] {
  const rows = q("SELECT * FROM nodes WHERE expires_at >= ? ORDER BY node_id").all(p.now) as Row[];
  return rows.map((r) => ({
    nodeId: r.node_id as string,
    address: (r.address as string | null) ?? null,
    lastHeartbeatAt: r.last_heartbeat_at as number,
    expiresAt: r.expires_at as number,
  }));
}

export function leave(q: Query, p: { nodeId: string }): void {
  q("DELETE FROM nodes WHERE node_id = ?").run(p.nodeId);
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
