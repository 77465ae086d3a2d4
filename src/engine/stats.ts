// Pool statistics: how much work is pending (due later), queued (ready now)
// and running, per pool and per tenant.

import type { PoolStats, Stats } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import type { ReadStore } from "./read-routing.js";
import type { RequestContext } from "./service.js";

export class StatsService {
  constructor(
    private readonly reads: ReadStore,
    private readonly clock: Clock,
  ) {}

  async pool(ctx: RequestContext, pool: string): Promise<PoolStats> {
    const [row] = await this.reads.poolCounts({ tenantId: ctx.tenantId, pool, now: this.clock.now() });
    return { pending: row?.pending ?? 0, queued: row?.queued ?? 0, running: row?.running ?? 0 };
  }

  async all(ctx: RequestContext): Promise<Stats> {
    const rows = await this.reads.poolCounts({ tenantId: ctx.tenantId, now: this.clock.now() });
    const stats: Stats = { pools: {}, tenants: {} };
    for (const r of rows) {
      const counts = { pending: r.pending, queued: r.queued, running: r.running };
      stats.pools[r.pool] = addCounts(stats.pools[r.pool], counts);
      stats.tenants[r.tenantId] = addCounts(stats.tenants[r.tenantId], counts);
    }
    return stats;
  }
}

function addCounts(a: PoolStats | undefined, b: PoolStats): PoolStats {
  return { pending: (a?.pending ?? 0) + b.pending, queued: (a?.queued ?? 0) + b.queued, running: (a?.running ?? 0) + b.running };
}
