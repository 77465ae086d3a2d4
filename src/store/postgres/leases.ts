// Leases on PostgreSQL: the grant (FOR UPDATE SKIP LOCKED), one tenant's or
// fair across tenants, and when a pool's next row is ready. Times come from
// the caller when pinned, else from the database clock inside the statement
// (db.ts nowOr). acks.ts renews and ends the attempts granted here.

import { LANES_PER_PICK, NO_WORK } from "../../core/fair-share.js";
import type { LeasedRow, LeaseParams } from "../store.js";
import { jsonb, toLeasedRows } from "../rows.js";
import { type Db, DB_NOW, nowOr, one, type Row, rows } from "./db.js";

/** The lease fences, judged at $now: an attempt holds its lease up to and including lease_until. */
export const LEASE_HELD = "e.state = 'RUNNING' AND e.lease_until >= t.now";
export const LEASE_EXPIRED = "e.state = 'RUNNING' AND e.lease_until < t.now";

/** READY rows of a pool, or of one tenant's: the scope of a lease, as a condition on alias `e` with its parameters. */
const readyIn = (e: string, pool: string, tenant: string | null): string =>
  `${e}.pool = ${pool} ${tenant ? `AND ${e}.tenant_id = ${tenant}` : ""} AND ${e}.state = 'READY'`;

/**
 * The priority levels that hold READY rows in scope, highest first: one index
 * seek each (a loose index scan). A pool's READY rows include every one-off
 * not yet due, so a lease or a next-ready look reads each level's index range
 * up to now, and never walks the rows beyond it.
 */
const levels = (pool: string, tenant: string | null): string => `levels AS (
  (SELECT e.priority FROM executions e WHERE ${readyIn("e", pool, tenant)} ORDER BY e.priority DESC LIMIT 1)
  UNION ALL
  SELECT (SELECT e.priority FROM executions e WHERE ${readyIn("e", pool, tenant)} AND e.priority < l.priority ORDER BY e.priority DESC LIMIT 1)
  FROM levels l WHERE l.priority IS NOT NULL)`;

/** A tenant's row of limits as one row (NULLs when it has none): weight, max_leased_attempts, dispatch rate and tat. */
const limitsOf = (tenant: string): string => `(SELECT max(weight) AS weight, max(max_leased_attempts) AS cap,
  max(dispatch_rate_per_second) AS rate, max(dispatch_tat) AS tat FROM tenants WHERE tenant_id = ${tenant})`;

/** What a tenant's dispatch rate allows at t.now, at most `max` (core/dispatch-rate.ts dispatchAllowance). */
const byRate = (g: string, max: string): string => `CASE WHEN ${g}.rate IS NULL THEN ${max}
  ELSE least(${max}, greatest(0, floor(greatest(1, ${g}.rate) - greatest(0, coalesce(${g}.tat, t.now) - t.now) * ${g}.rate / 1000 + 1e-9)))::int END`;

/**
 * How many more attempts a tenant may be granted, at most `max`: what its
 * dispatch rate allows, and its max_leased_attempts less its RUNNING
 * attempts. Two leases at once may each grant up to it (a batch's
 * overshoot; the rate charges both, so the tenant then waits longer).
 */
const allowance = (g: string, tenant: string, max: string): string => `least(${byRate(g, max)}, CASE WHEN ${g}.cap IS NULL THEN ${max}
  ELSE greatest(0, least(${max}, ${g}.cap - (SELECT count(*) FROM executions r WHERE r.tenant_id = ${tenant} AND r.state = 'RUNNING')))::int END)`;

/**
 * One row more than a tenant's allowance when its rate is what limits it:
 * offered, not granted, it shows the rate left work waiting. Only then, since
 * a row claimed and not granted is passed over by a concurrent lease.
 */
const RATE_PROBE = (g: string, allowed: string): string => `(CASE WHEN ${g}.rate IS NOT NULL AND ${g}.by_rate <= ${allowed} THEN 1 ELSE 0 END)`;

/** A rate-limited tenant's tat, charged n grants at t.now (core/dispatch-rate.ts chargeDispatch): added to, so concurrent leases both count. */
const CHARGED_TAT = "greatest(coalesce(tn.dispatch_tat, t.now), t.now) + s.n * 1000.0 / tn.dispatch_rate_per_second";

/**
 * The lease token: the store's lease epoch, a value in an UNLOGGED table
 * (migration 14). PostgreSQL empties unlogged tables at every crash
 * recovery (a crash of the server, of the machine, a backend's crash that
 * makes the postmaster reinitialise) and a promoted standby starts with
 * them empty, which are the only ways a commit it acknowledged can be lost.
 * So a grant lost with its asynchronous commit is granted again under a
 * new epoch, and a worker holding the lost grant's token is refused
 * (LEASE_LOST). Read in the grant's own statement (`t`, from lease_epoch):
 * with no epoch, `t` has no row and nothing is granted until lease()
 * writes one (NEW_EPOCH): the database clock in ms, times 100, plus a
 * random 0–99, so it is later than every epoch before it while the clock
 * moves forward; of two nodes that write one at once, the primary key keeps
 * the first. Below 10^15, as incarnationOf reads tokens.
 */
const NEW_EPOCH = `INSERT INTO lease_epoch (token)
  VALUES ((extract(epoch FROM clock_timestamp()) * 1000)::bigint * 100 + floor(random() * 100)::bigint) ON CONFLICT DO NOTHING`;

/**
 * The lease's time and token, as the one row `t`. LIMIT 1 tells the planner
 * it is one row (the table holds at most one): a table never analysed is
 * estimated at thousands, and the grant then materialised every picked row
 * on disk once per supposed row of `t` (25 ms of a lease of 500).
 */
const EPOCH_NOW = `t AS (SELECT ${nowOr("$1")} AS now, token AS epoch FROM lease_epoch LIMIT 1)`;

/**
 * The grant of a lease: the picked rows RUNNING as a new attempt, under the
 * lease token t.epoch (the lease epoch); `picked`
 * names (job_id, scheduled_for) pairs. Each records the wait its tenant's
 * dispatch rate imposed: since its lane was throttled, as the lease found it.
 * Its deadline and lease end are core/attempt-rules.ts attemptDeadline and leaseEnd.
 */
const GRANT = `UPDATE executions e SET state = 'RUNNING', attempt = e.attempt + 1, lease_incarnation = t.epoch, worker_id = $4, cancel_requested = false,
  started_at = t.now, deadline = t.now + e.timeout_ms + $6, lease_ms = $5,
  lease_until = least(t.now + $5, t.now + e.timeout_ms + $6),
  throttled_ms = (SELECT CASE WHEN l.throttled_since IS NOT NULL THEN greatest(0, t.now - greatest(e.ready_at, l.throttled_since)) END
                  FROM lanes l WHERE l.pool = e.pool AND l.tenant_id = e.tenant_id)
FROM (SELECT array_agg(job_id) AS job_ids, array_agg(scheduled_for) AS fors FROM picked) k, unnest(k.job_ids, k.fors) AS p(job_id, scheduled_for), t
WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for
RETURNING e.id, e.tenant_id, e.job_id, e.name, e.attempt, e.attempt_base, e.lease_incarnation, e.payload, e.scheduled_for, e.lease_until, e.timeout_ms, e.target,
  e.priority, e.ready_at, e.trace_parent`;

/**
 * A lease of one tenant's work ($7): the claim and the grant in one
 * statement. Each level offers its earliest rows due by now, up to the
 * tenant's allowance (and RATE_PROBE),
 * claimed FOR UPDATE SKIP LOCKED (rows another lease holds are passed over,
 * not waited for); the highest levels' rows are granted, up to the
 * allowance. The granted rows are found again by their keys, unnested
 * from arrays of picked's: a function scan the planner joins by index
 * lookups whatever the table's statistics say. A join on picked alone may
 * read every partition whole and sort it (16 ms for a lease of 500 beside
 * 20,000 rows, 5 ms by the keys); `= ANY(ARRAY(...))` on each key column
 * flips, on a grown table never analysed, to a nested loop that walks the
 * arrays per row (117-188 ms per lease of 500; bench/lease-plan.ts). Then its rate is charged, and its lane marked throttled or not.
 */
export const LEASE_TENANT = `
WITH RECURSIVE ${EPOCH_NOW},
${levels("$2", "$7")},
gate AS MATERIALIZED (SELECT g.rate, ${byRate("g", "$3::int")} AS by_rate, ${allowance("g", "$7", "$3::int")} AS n FROM t, ${limitsOf("$7")} g),
offered AS MATERIALIZED (
  SELECT c.job_id, c.scheduled_for, c.priority, c.ready_at FROM levels l, t, gate, LATERAL (
    SELECT x.job_id, x.scheduled_for, x.priority, x.ready_at FROM executions x
    WHERE ${readyIn("x", "$2", "$7")} AND x.priority = l.priority AND x.ready_at <= t.now
    ORDER BY x.ready_at LIMIT gate.n + ${RATE_PROBE("gate", "gate.n")}
    FOR UPDATE OF x SKIP LOCKED) c
  WHERE l.priority IS NOT NULL),
picked AS MATERIALIZED (SELECT job_id, scheduled_for FROM offered ORDER BY priority DESC, ready_at LIMIT (SELECT n FROM gate)),
granted AS (${GRANT}),
served AS (
  SELECT s.n, gate.rate IS NOT NULL AND gate.by_rate - s.n < 1 AND (SELECT count(*) FROM offered) > s.n AS throttled
  FROM gate, (SELECT count(*) AS n FROM picked) s),
charged AS (
  UPDATE tenants tn SET dispatch_tat = ${CHARGED_TAT} FROM served s, t
  WHERE tn.tenant_id = $7 AND tn.dispatch_rate_per_second IS NOT NULL AND s.n > 0),
marked AS (
  UPDATE lanes l SET throttled_since = CASE WHEN s.throttled THEN coalesce(l.throttled_since, t.now) END FROM served s, t
  WHERE l.pool = $2 AND l.tenant_id = $7 AND (s.throttled OR l.throttled_since IS NOT NULL))
SELECT * FROM granted`;

/** The least of each level's earliest ready_at: a seek per level. */
const nextReadySql = (tenant: string | null): string => `
WITH RECURSIVE ${levels("$1", tenant)}
SELECT min((SELECT x.ready_at FROM executions x WHERE ${readyIn("x", "$1", tenant)} AND x.priority = l.priority
            ORDER BY x.ready_at LIMIT 1)) AS next
FROM levels l WHERE l.priority IS NOT NULL`;
export const NEXT_READY_POOL = nextReadySql(null);
const NEXT_READY_TENANT = nextReadySql("$2");

/** When a pool's work (one tenant's, or all) is next ready; null when it has none READY. */
export async function nextReady(db: Db, p: { pool: string; tenantId?: string }): Promise<number | null> {
  const row =
    p.tenantId === undefined
      ? await one<{ next: number | null }>(db, NEXT_READY_POOL, [p.pool], "next_ready_pool")
      : await one<{ next: number | null }>(db, NEXT_READY_TENANT, [p.pool, p.tenantId], "next_ready_tenant");
  return row?.next ?? null;
}

/**
 * The first statement of a lease across tenants: lanes whose wake rows are
 * due, or whose idle_until has come, rejoin the rotation at the vtime of the
 * lanes in it (no credit for the time they had no work). Wake rows another
 * lease is taking are skipped, not waited for.
 */
const WAKE_LANES = `
WITH t AS (SELECT ${nowOr("$1")} AS now),
fired AS (
  DELETE FROM lane_wakes w USING (SELECT x.ctid FROM lane_wakes x, t WHERE x.pool = $2 AND x.ready_at <= t.now FOR UPDATE OF x SKIP LOCKED) d
  WHERE w.ctid = d.ctid RETURNING w.tenant_id),
fl AS (SELECT coalesce((SELECT min(vtime) FROM lanes WHERE pool = $2 AND idle_until IS NULL),
                       (SELECT max(vtime) FROM lanes WHERE pool = $2), 0) AS v)
UPDATE lanes l SET idle_until = NULL, vtime = greatest(l.vtime, fl.v) FROM fl, t
WHERE l.pool = $2 AND l.idle_until IS NOT NULL AND (l.idle_until <= t.now OR l.tenant_id IN (SELECT tenant_id FROM fired))`;

/**
 * The second: weighted fair queueing over the $7 active lanes of least
 * vtime (core/fair-share.ts says the rule). Each lane offers its due rows up
 * to twice its weighted share of $3 (laneOfferLimit), by priority level as a one-tenant lease
 * does (claimed FOR UPDATE SKIP LOCKED); each row's finish tag is the lane's
 * vtime plus its rank over the weight, and the least tags are granted. Then
 * each lane is charged its grants, and a lane that offered nothing sleeps
 * until its next READY row is due (a hint; wake rows keep it honest); a
 * tenant with a dispatch rate is charged its grants, and its lane, when the
 * rate left work waiting, is marked throttled and sleeps until the rate
 * allows its next grant.
 * Twice the share lets the others fill most of what a short lane leaves,
 * while a lease claims at most twice the rows it grants.
 */
export const LEASE_ACROSS_TENANTS = `
WITH RECURSIVE ${EPOCH_NOW},
chosen AS MATERIALIZED (
  SELECT l.tenant_id, l.vtime, coalesce(g.weight, 1)::float8 AS weight, g.rate, g.tat, ${byRate("g", "$3::int")} AS by_rate,
    ${allowance("g", "l.tenant_id", "$3::int")} AS allowed
  FROM (SELECT tenant_id, vtime FROM lanes WHERE pool = $2 AND idle_until IS NULL ORDER BY vtime, tenant_id LIMIT $7) l
  CROSS JOIN t CROSS JOIN LATERAL ${limitsOf("l.tenant_id")} g),
total AS (SELECT sum(weight) AS w FROM chosen),
levels(tenant_id, priority) AS (
  SELECT c.tenant_id, (SELECT x.priority FROM executions x WHERE ${readyIn("x", "$2", "c.tenant_id")} ORDER BY x.priority DESC LIMIT 1)
  FROM chosen c
  UNION ALL
  SELECT v.tenant_id, (SELECT x.priority FROM executions x WHERE ${readyIn("x", "$2", "v.tenant_id")} AND x.priority < v.priority
                       ORDER BY x.priority DESC LIMIT 1)
  FROM levels v WHERE v.priority IS NOT NULL),
offered AS MATERIALIZED (
  SELECT z.job_id, z.scheduled_for, z.tenant_id, z.priority, z.ready_at
  FROM levels v JOIN chosen c ON c.tenant_id = v.tenant_id, total, t, LATERAL (
    SELECT x.job_id, x.scheduled_for, x.tenant_id, x.priority, x.ready_at FROM executions x
    WHERE ${readyIn("x", "$2", "v.tenant_id")} AND x.priority = v.priority AND x.ready_at <= t.now
    ORDER BY x.ready_at LIMIT least(c.allowed + ${RATE_PROBE("c", "c.allowed")}, 2 * ceil($3::int * c.weight / total.w)::int)
    FOR UPDATE OF x SKIP LOCKED) z
  WHERE v.priority IS NOT NULL),
ranked AS (
  SELECT o.job_id, o.scheduled_for, o.tenant_id, c.vtime, c.weight, c.allowed,
    row_number() OVER (PARTITION BY o.tenant_id ORDER BY o.priority DESC, o.ready_at, o.job_id) AS rn
  FROM offered o JOIN chosen c ON c.tenant_id = o.tenant_id),
picked AS MATERIALIZED (
  SELECT job_id, scheduled_for, tenant_id FROM ranked WHERE rn <= allowed ORDER BY vtime + rn / weight, tenant_id LIMIT $3::int),
granted AS (${GRANT}),
counted AS (
  SELECT c.tenant_id, c.weight, c.rate, c.tat, c.by_rate,
    (SELECT count(*) FROM picked p WHERE p.tenant_id = c.tenant_id) AS n,
    (SELECT count(*) FROM offered o WHERE o.tenant_id = c.tenant_id) AS found
  FROM chosen c),
served AS (SELECT c.*, c.rate IS NOT NULL AND c.by_rate - c.n < 1 AND c.found > c.n AS throttled FROM counted c),
charged AS (
  UPDATE tenants tn SET dispatch_tat = ${CHARGED_TAT} FROM served s, t
  WHERE tn.tenant_id = s.tenant_id AND tn.dispatch_rate_per_second IS NOT NULL AND s.n > 0),
settled AS (
  UPDATE lanes l SET vtime = l.vtime + s.n / s.weight,
    throttled_since = CASE WHEN s.throttled THEN coalesce(l.throttled_since, t.now) END,
    idle_until = CASE
      WHEN s.throttled THEN ceil(greatest(coalesce(s.tat, t.now), t.now) + (s.n * 1000.0 - (greatest(1, s.rate) - 1) * 1000) / s.rate)::bigint
      WHEN s.found > 0 THEN l.idle_until
      ELSE coalesce((
        SELECT min(f.ready_at) FROM levels v, LATERAL (
          SELECT x.ready_at FROM executions x WHERE ${readyIn("x", "$2", "v.tenant_id")} AND x.priority = v.priority ORDER BY x.ready_at LIMIT 1) f
        WHERE v.tenant_id = s.tenant_id AND v.priority IS NOT NULL), $8) END
  FROM served s, t
  WHERE l.pool = $2 AND l.tenant_id = s.tenant_id AND (s.n > 0 OR s.found = 0 OR s.throttled OR l.throttled_since IS NOT NULL))
SELECT * FROM granted`;

/** Wake rows written longer ago than this are settled by retention: every lease running now began after they were committed. */
const STALE_WAKE_MS = 60_000;

/**
 * A pool leased only by its tenants' own workers has no cross-tenant lease
 * to take its wake rows. Retention settles those written over a minute ago:
 * their lanes' idle_until moves up to the wake (so a cross-tenant lease
 * would wake them), and the rows go. A lease that could still be deciding to
 * put such a lane to sleep began after the row was committed, so it saw its
 * work (a transaction open for over a minute is the exception).
 */
export async function settleStaleWakes(db: Db): Promise<void> {
  await rows(
    db,
    `WITH stale AS (DELETE FROM lane_wakes WHERE written_at < ${DB_NOW} - $1 RETURNING pool, tenant_id, ready_at),
     firsts AS (SELECT pool, tenant_id, min(ready_at) AS ready_at FROM stale GROUP BY pool, tenant_id)
     UPDATE lanes l SET idle_until = f.ready_at FROM firsts f
     WHERE l.pool = f.pool AND l.tenant_id = f.tenant_id AND l.idle_until > f.ready_at`,
    [STALE_WAKE_MS],
    "settle_stale_wakes",
  );
}

export async function lease(db: Db, p: LeaseParams): Promise<LeasedRow[]> {
  let granted = await grant(db, p);
  // Nothing granted: maybe nothing is ready, maybe the epoch is gone (a crash recovery). A new one, and the lease once more.
  if (granted.length === 0 && (await db.query(NEW_EPOCH)).rowCount === 1) granted = await grant(db, p);
  return toLeasedRows(granted, p.pool, jsonb);
}

async function grant(db: Db, p: LeaseParams): Promise<Row[]> {
  const values = [p.now ?? null, p.pool, p.max, p.workerId, p.leaseMs, p.graceMs ?? 0];
  if (p.tenantId !== undefined) return rows(db, LEASE_TENANT, [...values, p.tenantId], "lease_tenant");
  await rows(db, WAKE_LANES, [p.now ?? null, p.pool], "wake_lanes");
  return rows(db, LEASE_ACROSS_TENANTS, [...values, LANES_PER_PICK, NO_WORK], "lease_fair");
}

/** The database clock, epoch ms. */
export async function storeTime(db: Db): Promise<number> {
  return (await one<{ now: number }>(db, `SELECT ${DB_NOW} AS now`))!.now;
}
