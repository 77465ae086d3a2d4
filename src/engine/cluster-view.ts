// The cluster as this node sees it: live nodes and their shards (by the
// store's clock), the HTTP-target runner's origins, and readiness.

import type { ClusterView, TargetStatus } from "@duetime/sdk/contract";
import type { Clock, TimerHandle } from "../core/clock.js";
import { toIso } from "../core/time.js";
import type { Store } from "../store/store.js";
import { actsForEveryTenant, type RequestContext } from "./service.js";
import type { StoreHealth } from "./store-health.js";

export interface ClusterViewOptions {
  store: Store;
  clock: Clock;
  /** The HTTP-target runner's view of its origins, all tenants' or one's (empty without the runner). */
  targets?: (view: { tenantId?: string }) => TargetStatus[];
  /** Readiness: the store answers and takes writes. */
  storeHealth: Pick<StoreHealth, "ready">;
  /** Readiness: this node's membership has not lapsed (shard-keeper.ts); absent, the store alone decides. */
  membership?: { lapsesAt(): number | null };
}

export class ClusterService {
  private readonly store: Store;
  private readonly clock: Clock;

  constructor(private readonly o: ClusterViewOptions) {
    this.store = o.store;
    this.clock = o.clock;
  }

  /** The live nodes (heartbeat rows) with the shards each holds, and every shard lease. */
  async cluster(): Promise<ClusterView> {
    // Leases and heartbeats are the store's clock's (shard-keeper.ts), not this node's.
    const now = this.clock.storeNow() ?? (await this.store.storeTime());
    const seconds = (ms: number): number => Math.round(ms) / 1000;
    const nodes = await this.store.nodeList({ now });
    const shards = await this.store.shardList();
    const byOwner = new Map<string, number[]>();
    for (const s of shards) if (s.owner && s.leaseUntil >= now) byOwner.set(s.owner, [...(byOwner.get(s.owner) ?? []), s.shard]);
    return {
      storeTime: toIso(now),
      nodes: nodes.map((n) => ({
        nodeId: n.nodeId,
        address: n.address,
        shards: byOwner.get(n.nodeId) ?? [],
        lastHeartbeatAt: toIso(n.lastHeartbeatAt),
        heartbeatAgeSeconds: seconds(now - n.lastHeartbeatAt),
      })),
      shards: shards.map((s) => ({
        shard: s.shard,
        owner: s.owner,
        epoch: s.epoch,
        leaseUntil: toIso(s.leaseUntil),
        leaseRemainingSeconds: seconds(s.leaseUntil - now),
      })),
    };
  }

  /** A tenant's admin sees the origins its own jobs call; a bootstrap admin sees every tenant's, counted together. */
  async targets(ctx: RequestContext): Promise<{ items: TargetStatus[] }> {
    return { items: this.o.targets?.(actsForEveryTenant(ctx) ? {} : { tenantId: ctx.tenantId }) ?? [] };
  }

  /**
   * The store answers and takes writes, and this node's membership holds: a
   * node that has not renewed for a shard lease is not ready, at once, even
   * while its store calls hang on a half-open link (they give up only at the
   * client's read timeout, 35 s by default).
   */
  async ready(): Promise<boolean> {
    const lapsesAt = this.o.membership?.lapsesAt() ?? null;
    if (lapsesAt === null) return this.o.storeHealth.ready();
    const left = lapsesAt - this.clock.now();
    if (left <= 0) return false;
    let timer: TimerHandle | undefined;
    const lapsed = new Promise<boolean>((resolve) => {
      timer = this.clock.setTimer(() => resolve(false), left);
    });
    try {
      return await Promise.race([this.o.storeHealth.ready(), lapsed]);
    } finally {
      timer?.cancel();
    }
  }
}
