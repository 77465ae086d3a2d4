// Wire types of routes in docs/api.md that core/api.ts does not describe yet
// (admin and operations routes). They belong in core/api.ts; until they move
// there, the SDK declares them here, loosely where the contract is loose.

/** One entry of GET /v1/audit; the contract does not fix its fields yet. */
export interface AuditEntry {
  [key: string]: unknown;
}

/** GET /v1/cluster. */
export interface ClusterInfo {
  nodes: { nodeId: string; address: string; shards: number[]; lastHeartbeatAt: string }[];
  shards: { shard: number; owner: string | null; epoch: number; leaseUntil: string | null }[];
}
