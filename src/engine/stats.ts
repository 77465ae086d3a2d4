// Pool statistics: how much work is pending (due later), queued (ready now)
// and running, per pool and per tenant.

import type { PoolStats, Stats } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import type { ReadStore } from "./read-routing.js";
import { type RequestContext, tenantScope } from "./service.js";

export class StatsService {
  constructor(
    private readonly reads: ReadStore,
    private readonly clock: Clock,
  ) {}

  /** A pool's counts: the caller's tenant's, or every tenant's summed for a platform key. */
  async pool(ctx: RequestContext, pool: string): Promise<PoolStats> {
    const tenantId = tenantScope(ctx);
    const rows = await this.reads.poolCounts({ ...(tenantId !== undefined ? { tenantId } : {}), pool, now: this.clock.now() });
    return rows.reduce<PoolStats>((sum, r) => addCounts(sum, r), { pending: 0, queued: 0, running: 0 });
  }

  async all(ctx: RequestContext): Promise<Stats> {
    const tenantId = tenantScope(ctx);
    const rows = await this.reads.poolCounts({ ...(tenantId !== undefined ? { tenantId } : {}), now: this.clock.now() });
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
