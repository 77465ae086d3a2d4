// Pool statistics: how much work is pending (due later), queued (ready now)
// and running, per pool and per tenant; and their history by the minute
// (workload-history.ts writes it).

import type { PoolStats, Stats, StatsHistory, StatsHistoryQuery, StatsSeries } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { invalidArgument } from "../core/errors.js";
import { LAG_BOUNDS_MS, LAG_COLUMNS, type WorkloadMinute } from "../store/workload-minutes.js";
import type { ReadStore } from "./read-routing.js";
import { type RequestContext, tenantScope } from "./service.js";
import { WORKLOAD_KEPT_MS } from "./workload-history.js";

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

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

  /** Each minute since query.since (default an hour ago) up to the current one, summed per pool or per tenant. */
  async history(ctx: RequestContext, query: StatsHistoryQuery = {}): Promise<StatsHistory> {
    const tenantId = tenantScope(ctx);
    const now = this.clock.now();
    const current = now - (now % MINUTE_MS);
    const since = query.since === undefined ? current - HOUR_MS : Date.parse(query.since);
    if (since < now - WORKLOAD_KEPT_MS) throw invalidArgument("since", "must be within the last 24 hours (the history kept)");
    if (since > now) throw invalidArgument("since", "must not be in the future");
    const first = since - (since % MINUTE_MS);
    const minutes = Array.from({ length: (current - first) / MINUTE_MS + 1 }, (_, i) => first + i * MINUTE_MS);
    const by = query.by ?? "pool";
    const rows = await this.reads.workloadMinutes({ ...(tenantId !== undefined ? { tenantId } : {}), from: first });
    const grouped = new Map<string, WorkloadMinute[][]>();
    for (const r of rows) {
      const i = (r.minute - first) / MINUTE_MS;
      if (i >= minutes.length) continue;
      const key = by === "pool" ? r.pool : r.tenantId;
      let cells = grouped.get(key);
      if (!cells) {
        cells = minutes.map(() => []);
        grouped.set(key, cells);
      }
      cells[i]!.push(r);
    }
    const series: Record<string, StatsSeries> = {};
    for (const [key, cells] of grouped) series[key] = toSeries(cells);
    return { by, minutes: minutes.map((m) => new Date(m).toISOString()), series };
  }
}

/** One pool's or tenant's minutes, each cell the rows (tenants or pools) it sums. */
function toSeries(cells: WorkloadMinute[][]): StatsSeries {
  const total = (pick: (r: WorkloadMinute) => number) => cells.map((rows) => rows.reduce((n, r) => n + pick(r), 0));
  // A depth is known for a minute only when some row of it was sampled.
  const depth = (pick: (r: WorkloadMinute) => number | null | undefined) =>
    cells.map((rows) => (rows.some((r) => pick(r) != null) ? rows.reduce((n, r) => n + (pick(r) ?? 0), 0) : null));
  const lags = cells.map((rows) => LAG_COLUMNS.map((_, i) => rows.reduce((n, r) => n + (r.lag[i] ?? 0), 0)));
  return {
    started: total((r) => r.started),
    succeeded: total((r) => r.succeeded),
    failed: total((r) => r.failed),
    dead: total((r) => r.dead),
    startLagMs: { p50: lags.map((h) => percentile(h, 0.5)), p90: lags.map((h) => percentile(h, 0.9)), p99: lags.map((h) => percentile(h, 0.99)) },
    pending: depth((r) => r.pending),
    queued: depth((r) => r.queued),
    running: depth((r) => r.running),
  };
}

/**
 * The q-quantile of a LAG_BOUNDS_MS histogram, interpolated linearly within
 * its bucket as Prometheus's histogram_quantile does; the open last bucket
 * answers its lower bound. Null for an empty histogram.
 */
export function percentile(counts: readonly number[], q: number): number | null {
  const n = counts.reduce((a, b) => a + b, 0);
  if (n === 0) return null;
  const rank = q * n;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const c = counts[i]!;
    if (c > 0 && seen + c >= rank) {
      if (i === LAG_BOUNDS_MS.length) return LAG_BOUNDS_MS[i - 1]!;
      const lower = i === 0 ? 0 : LAG_BOUNDS_MS[i - 1]!;
      return lower + (LAG_BOUNDS_MS[i]! - lower) * ((rank - seen) / c);
    }
    seen += c;
  }
  return LAG_BOUNDS_MS[LAG_BOUNDS_MS.length - 1]!;
}

function addCounts(a: PoolStats | undefined, b: PoolStats): PoolStats {
  return { pending: (a?.pending ?? 0) + b.pending, queued: (a?.queued ?? 0) + b.queued, running: (a?.running ?? 0) + b.running };
}
