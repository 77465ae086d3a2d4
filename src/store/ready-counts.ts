// poolCounts from counters, in both drivers. Triggers keep ready_counts: the
// READY executions per lane, priority and the hour their ready_at falls in
// (SQLite migration 10, PostgreSQL migration 5). Hours before the current
// one are due (queued), later ones pending; only the current hour is split
// by an exact count of its rows already due, an index range of
// executions_ready that the queue bounds, not the future. RUNNING
// executions are counted from their own partial index: the workers'
// concurrency bounds them.

import type { PoolCounts } from "./store.js";

export const COUNT_HOUR_MS = 3_600_000;

/** One row of a driver's count query (countsSql): a READY bucket, or a lane's RUNNING count (hour null). */
export interface CountRow {
  tenant_id: string;
  pool: string;
  hour: number | string | null;
  n: number | string;
  /** The bucket's rows already due: counted for the current hour only. */
  due_now: number | string | null;
}

/**
 * The count query's text. `buckets` is the source of the READY buckets
 * (the table, or the table and its unfolded deltas); named parameters are
 * @tenant, @pool, @hour, @from (the current hour's start) and @now,
 * written by `param` in the driver's own syntax.
 */
export function countsSql(buckets: string, param: (name: "tenant" | "pool" | "hour" | "from" | "now") => string): string {
  const filter = (alias: string) =>
    `(${param("tenant")} IS NULL OR ${alias}.tenant_id = ${param("tenant")}) AND (${param("pool")} IS NULL OR ${alias}.pool = ${param("pool")})`;
  return `SELECT b.tenant_id, b.pool, b.hour, b.n,
       CASE WHEN b.hour = ${param("hour")} THEN (SELECT count(*) FROM executions x
         WHERE x.pool = b.pool AND x.tenant_id = b.tenant_id AND x.state = 'READY' AND x.priority = b.priority
           AND x.ready_at >= ${param("from")} AND x.ready_at <= ${param("now")}) END AS due_now
     FROM (SELECT tenant_id, pool, priority, hour, sum(n) AS n FROM ${buckets} c WHERE ${filter("c")}
           GROUP BY tenant_id, pool, priority, hour HAVING sum(n) <> 0) b
   UNION ALL
   SELECT r.tenant_id, r.pool, NULL, count(*), NULL FROM executions r
     WHERE r.state = 'RUNNING' AND ${filter("r")} GROUP BY r.tenant_id, r.pool`;
}

/** The current hour and its start, for countsSql's @hour and @from. */
export function countHour(now: number): { hour: number; from: number } {
  const hour = Math.floor(now / COUNT_HOUR_MS);
  return { hour, from: hour * COUNT_HOUR_MS };
}

/** Sums a count query's rows into each lane's counts; lanes with nothing are left out. */
export function toPoolCounts(rows: CountRow[], now: number): PoolCounts[] {
  const { hour } = countHour(now);
  const lanes = new Map<string, PoolCounts>();
  for (const r of rows) {
    const key = `${r.tenant_id}\u0000${r.pool}`;
    let lane = lanes.get(key);
    if (!lane) {
      lane = { tenantId: r.tenant_id, pool: r.pool, pending: 0, queued: 0, running: 0 };
      lanes.set(key, lane);
    }
    const n = Number(r.n);
    if (r.hour === null) lane.running += n;
    else if (Number(r.hour) < hour) lane.queued += n;
    else if (Number(r.hour) > hour) lane.pending += n;
    else {
      // One statement, one snapshot: the bucket holds every row its count found.
      const due = Number(r.due_now ?? 0);
      lane.queued += due;
      lane.pending += n - due;
    }
  }
  return [...lanes.values()].filter((l) => l.pending + l.queued + l.running > 0);
}

/**
 * The READY executions that become due in each of the next `minutes`
 * minutes (minute i: (now + i min, now + (i + 1) min]), counted up to
 * @limit rows: one-offs and retries, found per lane and priority that has
 * them in those hours (the buckets), each an index range of executions_ready.
 * Parameters: @now, @horizon (now + minutes), @fromHour, @toHour, @limit.
 */
export function upcomingSql(buckets: string, param: (name: "now" | "horizon" | "fromHour" | "toHour" | "limit") => string): string {
  return `SELECT (r.ready_at - ${param("now")} - 1) / 60000 AS minute, count(*) AS n FROM (
      SELECT x.ready_at FROM (SELECT DISTINCT tenant_id, pool, priority FROM ${buckets} c
          WHERE c.hour >= ${param("fromHour")} AND c.hour <= ${param("toHour")}) l
        JOIN executions x ON x.pool = l.pool AND x.tenant_id = l.tenant_id AND x.priority = l.priority
          AND x.state = 'READY' AND x.ready_at > ${param("now")} AND x.ready_at <= ${param("horizon")}
        LIMIT ${param("limit")}) r
    GROUP BY 1`;
}

/** upcomingSql's parameters. */
export function upcomingWindow(now: number, minutes: number): { horizon: number; fromHour: number; toHour: number } {
  const horizon = now + minutes * 60_000;
  return { horizon, fromHour: Math.floor(now / COUNT_HOUR_MS), toHour: Math.floor(horizon / COUNT_HOUR_MS) };
}

/** upcomingSql's rows as a count per minute. */
export function toUpcoming(rows: { minute: number | string; n: number | string }[], minutes: number): number[] {
  const counts = new Array<number>(minutes).fill(0);
  for (const r of rows) counts[Math.min(minutes - 1, Math.floor(Number(r.minute)))]! += Number(r.n);
  return counts;
}
