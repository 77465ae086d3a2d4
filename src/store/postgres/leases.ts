// Leases on PostgreSQL: grant (FOR UPDATE SKIP LOCKED), renew, and end
// attempts. Every write that ends or renews an attempt is a compare-and-set
// in its WHERE on (attempt, RUNNING, lease_until >= now), or < now for the
// reaper, which also claims its rows with SKIP LOCKED so two reapers never
// wait for each other. Times come from the caller when pinned, else from the
// database clock inside the statement (db.ts nowOr).

import type pg from "pg";
import type { ErrorRecord } from "@duetime/sdk/contract";
import { type AttemptEnd, endExpiredAttempt, endFailedAttempt, endReleasedAttempt, lastErrorOf, expiredAttemptError } from "../../core/retry.js";
import { LANES_PER_PICK, NO_WORK } from "../../core/fair-share.js";
import { jobChangeAfterExecution } from "../../core/states.js";
import type { AckOutcome, CompleteInput, FailInput, LeasedRow, LeaseParams, PossibleDuplicateMark, PossibleDuplicateRow } from "../store.js";
import { attemptFacts, jsonb, toLeasedRows } from "../rows.js";
import { toPossibleDuplicate } from "../replays.js";
import { changeJobs } from "./changes.js";
import { type Db, DB_NOW, executionKey, json, nowOr, one, type Row, rows } from "./db.js";

/** The lease fences, judged at $now: an attempt holds its lease up to and including lease_until. */
const LEASE_HELD = "e.state = 'RUNNING' AND e.lease_until >= t.now";
const LEASE_EXPIRED = "e.state = 'RUNNING' AND e.lease_until < t.now";

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
 * The grant of a lease: the picked rows RUNNING as a new attempt; `picked`
 * names (job_id, scheduled_for) pairs. Each records the wait its tenant's
 * dispatch rate imposed: since its lane was throttled, as the lease found it.
 */
const GRANT = `UPDATE executions e SET state = 'RUNNING', attempt = e.attempt + 1, worker_id = $4, cancel_requested = false,
  started_at = t.now, deadline = t.now + e.timeout_ms + $6, lease_ms = $5,
  lease_until = least(t.now + $5, t.now + e.timeout_ms + $6),
  throttled_ms = (SELECT CASE WHEN l.throttled_since IS NOT NULL THEN greatest(0, t.now - greatest(e.ready_at, l.throttled_since)) END
                  FROM lanes l WHERE l.pool = e.pool AND l.tenant_id = e.tenant_id)
FROM (SELECT array_agg(job_id) AS job_ids, array_agg(scheduled_for) AS fors FROM picked) k, unnest(k.job_ids, k.fors) AS p(job_id, scheduled_for), t
WHERE e.job_id = p.job_id AND e.scheduled_for = p.scheduled_for
RETURNING e.id, e.tenant_id, e.job_id, e.name, e.attempt, e.attempt_base, e.payload, e.scheduled_for, e.lease_until, e.timeout_ms, e.target,
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
const LEASE_TENANT = `
WITH RECURSIVE t AS (SELECT ${nowOr("$1")} AS now),
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
 * to twice its weighted share of $3, by priority level as a one-tenant lease
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
WITH RECURSIVE t AS (SELECT ${nowOr("$1")} AS now),
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
  const values = [p.now ?? null, p.pool, p.max, p.workerId, p.leaseMs, p.graceMs ?? 0];
  let granted: Row[];
  if (p.tenantId !== undefined) {
    granted = await rows(db, LEASE_TENANT, [...values, p.tenantId], "lease_tenant");
  } else {
    await rows(db, WAKE_LANES, [p.now ?? null, p.pool], "wake_lanes");
    granted = await rows(db, LEASE_ACROSS_TENANTS, [...values, LANES_PER_PICK, NO_WORK], "lease_fair");
  }
  return toLeasedRows(granted, p.pool, jsonb);
}

export async function heartbeat(db: Db, p: { tenantId: string | null; executionId: string; attempt: number; leaseMs?: number; now?: number }) {
  const key = executionKey(p.executionId);
  if (!key) return { status: "not_found" as const };
  const row = await one(
    db,
    `WITH t AS (SELECT ${nowOr("$5")} AS now)
     UPDATE executions e SET lease_until = least(t.now + coalesce($6::bigint, e.lease_ms), e.deadline) FROM t
     WHERE e.job_id = $1 AND e.scheduled_for = $2 AND ($3::text IS NULL OR e.tenant_id = $3::text) AND e.attempt = $4 AND ${LEASE_HELD}
     RETURNING e.lease_until, e.cancel_requested`,
    [key.jobId, key.scheduledFor, p.tenantId, p.attempt, p.now ?? null, p.leaseMs ?? null],
    "heartbeat",
  );
  if (row) return { status: "ok" as const, leaseUntil: row.lease_until as number, cancelRequested: row.cancel_requested as boolean };
  const found = await states(db, [{ executionId: p.executionId, tenantId: p.tenantId }]);
  if (!found[0]) return { status: "not_found" as const };
  const marked = await markLost(db, [p], p.now ?? null);
  return lostAnswer(marked, p);
}

/**
 * Records the possible duplicates of lost answers: an attempt the execution
 * granted (attempt <= its latest) that is later than the one recorded, a
 * compare-and-set in the UPDATE. Answers the executions newly marked, with
 * their tenant.
 */
async function markLost(
  db: Db,
  items: readonly { executionId: string; tenantId: string | null; attempt: number }[],
  now: number | null,
): Promise<Map<string, PossibleDuplicateMark>> {
  const keyed = items.flatMap((i) => {
    const key = executionKey(i.executionId);
    return key && i.attempt >= 1 ? [{ ...key, tenantId: i.tenantId, attempt: i.attempt }] : [];
  });
  if (keyed.length === 0) return new Map();
  const marked = await rows<{ id: string; tenant_id: string; dup_attempt: number }>(
    db,
    `WITH t AS (SELECT ${nowOr("$5")} AS now)
     UPDATE executions e SET dup_attempt = x.attempt, dup_reason = 'lease_lost', dup_at = t.now
     FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[]) AS x(job_id, scheduled_for, tenant_id, attempt), t
     WHERE e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for AND (x.tenant_id IS NULL OR e.tenant_id = x.tenant_id)
       AND (e.attempt > x.attempt OR (e.attempt = x.attempt AND e.state = 'RUNNING' AND e.lease_until < t.now))
       AND (e.dup_attempt IS NULL OR e.dup_attempt < x.attempt)
     RETURNING e.id, e.tenant_id, e.dup_attempt`,
    [keyed.map((k) => k.jobId), keyed.map((k) => k.scheduledFor), keyed.map((k) => k.tenantId), keyed.map((k) => k.attempt), now],
  );
  return new Map(marked.map((m) => [m.id, { tenantId: m.tenant_id, attempt: m.dup_attempt, reason: "lease_lost" as const }]));
}

function lostAnswer(
  marked: Map<string, PossibleDuplicateMark>,
  item: { executionId: string; attempt: number },
): { status: "lost"; possibleDuplicate?: PossibleDuplicateMark } {
  const mark = marked.get(item.executionId);
  return mark && mark.attempt === item.attempt ? { status: "lost", possibleDuplicate: mark } : { status: "lost" };
}

export async function possibleDuplicates(
  db: Db,
  p: { tenantId: string; limit: number; after?: { at: number; executionId: string } },
): Promise<PossibleDuplicateRow[]> {
  const cursor = p.after ? "AND (dup_at, id) < ($3::bigint, $4::text)" : "";
  const found = await rows(
    db,
    `SELECT id, tenant_id, job_id, name, pool, scheduled_for, state, attempt, dup_attempt, dup_reason, dup_at FROM executions
     WHERE tenant_id = $1 AND dup_at IS NOT NULL ${cursor} ORDER BY dup_at DESC, id DESC LIMIT $2`,
    [p.tenantId, p.limit, ...(p.after ? [p.after.at, p.after.executionId] : [])],
  );
  return found.map(toPossibleDuplicate);
}

/** Each item's execution as it is now (state, attempt), or undefined when the tenant (any, for null) has no such execution. */
async function states(
  db: Db,
  items: readonly { executionId: string; tenantId: string | null }[],
): Promise<({ state: string; attempt: number; tenant_id: string; pool: string } | undefined)[]> {
  const keys = items.map((i) => executionKey(i.executionId));
  const known = items.flatMap((i, n) => (keys[n] ? [{ ...keys[n]!, tenantId: i.tenantId }] : []));
  if (known.length === 0) return items.map(() => undefined);
  const found = await rows<{ id: string; tenant_id: string; pool: string; state: string; attempt: number }>(
    db,
    `SELECT e.id, e.tenant_id, e.pool, e.state, e.attempt FROM executions e
     JOIN unnest($1::text[], $2::bigint[], $3::text[]) AS x(job_id, scheduled_for, tenant_id)
       ON e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for AND (x.tenant_id IS NULL OR e.tenant_id = x.tenant_id)`,
    [known.map((k) => k.jobId), known.map((k) => k.scheduledFor), known.map((k) => k.tenantId)],
  );
  const byId = new Map(found.map((r) => [r.id, r]));
  return items.map((i) => {
    const row = byId.get(i.executionId);
    return row && (i.tenantId === null || row.tenant_id === i.tenantId) ? row : undefined;
  });
}

/**
 * Splits a batch into rounds in which each execution appears once: a batch
 * that names one twice is answered as if its items came one after another
 * (the second finds what the first left), as the port's per-item answers say.
 */
function rounds<T extends { executionId: string }>(items: readonly T[]): number[][] {
  const seen = new Map<string, number>();
  const out: number[][] = [];
  items.forEach((item, i) => {
    const n = seen.get(item.executionId) ?? 0;
    seen.set(item.executionId, n + 1);
    (out[n] ??= []).push(i);
  });
  return out;
}

/** Items with the (job_id, scheduled_for) their execution id names; those whose id names none are left out. */
function keyed<T extends { executionId: string }>(items: readonly T[]) {
  return items.flatMap((item) => {
    const key = executionKey(item.executionId);
    return key ? [{ item, ...key }] : [];
  });
}

/**
 * Succeeds every item that still holds its lease in one UPDATE, and ends
 * their one-off jobs in one more; only the misses are read, to answer them.
 */
export async function complete(db: Db, items: CompleteInput[], now: number | null): Promise<AckOutcome[]> {
  const out: AckOutcome[] = new Array(items.length);
  for (const round of rounds(items)) {
    const batch = keyed(round.map((i) => items[i]!));
    const done =
      batch.length === 0
        ? []
        : await rows<{
            id: string;
            job_id: string;
            tenant_id: string;
            pool: string;
            kind: "once" | "cron" | null;
            now: number;
            dup_new: number | null;
          }>(
            db,
            `WITH t AS (SELECT ${nowOr("$6")} AS now),
             x AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::text[])
               AS x(job_id, scheduled_for, tenant_id, attempt, result))
             UPDATE executions e SET state = 'SUCCEEDED', finished_at = t.now, result = x.result::jsonb, lease_until = NULL,
               -- an attempt reaped for an expired lease may have run too: a possible duplicate (once)
               dup_attempt = CASE WHEN e.expired_attempt > coalesce(e.dup_attempt, 0) THEN e.expired_attempt ELSE e.dup_attempt END,
               dup_reason = CASE WHEN e.expired_attempt > coalesce(e.dup_attempt, 0) THEN 'expired_then_succeeded' ELSE e.dup_reason END,
               dup_at = CASE WHEN e.expired_attempt > coalesce(e.dup_attempt, 0) THEN t.now ELSE e.dup_at END
             FROM x, t
             WHERE e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for AND (x.tenant_id IS NULL OR e.tenant_id = x.tenant_id)
               AND e.attempt = x.attempt AND ${LEASE_HELD}
             RETURNING e.id, e.job_id, e.tenant_id, e.pool, (SELECT kind FROM jobs WHERE jobs.id = e.job_id) AS kind, t.now,
               CASE WHEN e.dup_reason = 'expired_then_succeeded' AND e.dup_at = t.now AND e.dup_attempt = e.expired_attempt
                 THEN e.dup_attempt END AS dup_new`,
            [
              batch.map((b) => b.jobId),
              batch.map((b) => b.scheduledFor),
              batch.map((b) => b.item.tenantId),
              batch.map((b) => b.item.attempt),
              batch.map((b) => json(b.item.result)),
              now,
            ],
            "complete",
          );
    // The succeeding attempt stays on the execution row (history reads it there).
    await changeJobs(
      db,
      done.map((d) => ({ jobId: d.job_id, change: d.kind ? jobChangeAfterExecution(d.kind, "SUCCEEDED") : null })),
      done[0]?.now ?? now,
    );
    const succeeded = new Map(done.map((d) => [d.id, d]));
    const missed = round.filter((i) => !succeeded.has(items[i]!.executionId));
    const found = await states(
      db,
      missed.map((i) => items[i]!),
    );
    const duplicates = new Map(done.flatMap((d) => (d.dup_new !== null ? [[d.id, d.dup_new] as const] : [])));
    for (const i of round) {
      const row = succeeded.get(items[i]!.executionId);
      const dup = duplicates.get(items[i]!.executionId);
      if (row !== undefined) {
        const { tenant_id: tenantId, pool } = row;
        out[i] =
          dup !== undefined
            ? { status: "ok", state: "SUCCEEDED", pool, tenantId, possibleDuplicate: { tenantId, attempt: dup, reason: "expired_then_succeeded" } }
            : { status: "ok", state: "SUCCEEDED", pool, tenantId };
      }
    }
    const lostItems = missed.filter((i, n) => {
      const e = found[n];
      return e !== undefined && !(e.state === "SUCCEEDED" && e.attempt === items[i]!.attempt);
    });
    const marked = await markLost(
      db,
      lostItems.map((i) => items[i]!),
      now,
    );
    missed.forEach((i, n) => {
      const e = found[n];
      if (!e) out[i] = { status: "not_found" };
      else if (e.state === "SUCCEEDED" && e.attempt === items[i]!.attempt)
        out[i] = { status: "ok", state: "SUCCEEDED", pool: e.pool, tenantId: e.tenant_id };
      else out[i] = lostAnswer(marked, items[i]!);
    });
  }
  return out;
}

/** An attempt to end as core decided on the row `e` was read at. */
interface Ending {
  e: Row;
  end: AttemptEnd;
  attemptState: string;
  error: ErrorRecord;
  lastError: ErrorRecord;
}

/**
 * Ends attempts as decided, in one statement: a compare-and-set on each
 * one's attempt, its lease (held, or expired for the reaper) and the facts
 * the decision read (attempt_base, cancel_requested); the attempt row is
 * recorded for each one that ended. Answers the ids that ended: one whose
 * facts moved meanwhile is left alone. Dead ones change their job.
 */
async function endAttempts(db: Db, endings: Ending[], now: number, lease: typeof LEASE_HELD | typeof LEASE_EXPIRED): Promise<Set<string>> {
  if (endings.length === 0) return new Set();
  const col = <T>(f: (x: Ending) => T): T[] => endings.map(f);
  const ended = await rows<{ job_id: string; scheduled_for: number }>(
    db,
    `WITH t AS (SELECT $1::bigint AS now),
     u AS (SELECT * FROM unnest($2::text[], $3::bigint[], $4::int[], $5::int[], $6::bool[], $7::text[], $8::bigint[], $9::text[],
       $10::text[], $11::text[]) AS u(job_id, scheduled_for, attempt, base, cancel, state, ready_at, last_error, attempt_state, error)),
     ended AS (
       UPDATE executions e SET state = u.state, ready_at = coalesce(u.ready_at, e.ready_at),
         dead_at = CASE WHEN u.state = 'DEAD' THEN t.now END, finished_at = CASE WHEN u.state <> 'READY' THEN t.now END,
         last_error = u.last_error::jsonb, lease_until = NULL${lease === LEASE_EXPIRED ? ", expired_attempt = e.attempt" : ""}
       FROM u, t
       WHERE e.job_id = u.job_id AND e.scheduled_for = u.scheduled_for AND e.attempt = u.attempt AND ${lease}
         AND e.attempt_base = u.base AND e.cancel_requested = u.cancel
       RETURNING e.job_id, e.scheduled_for, e.attempt, e.worker_id, e.started_at, e.throttled_ms, u.attempt_state, u.error, t.now)
     INSERT INTO attempts (job_id, scheduled_for, attempt, state, worker_id, started_at, finished_at, error, throttled_ms)
     SELECT job_id, scheduled_for, attempt, attempt_state, worker_id, started_at, now, error::jsonb, throttled_ms FROM ended
     ON CONFLICT (job_id, scheduled_for, attempt) DO UPDATE SET state = excluded.state, worker_id = excluded.worker_id,
       started_at = excluded.started_at, finished_at = excluded.finished_at, error = excluded.error, throttled_ms = excluded.throttled_ms
     RETURNING job_id, scheduled_for`,
    [
      now,
      col((x) => x.e.job_id),
      col((x) => x.e.scheduled_for),
      col((x) => x.e.attempt),
      col((x) => x.e.attempt_base),
      col((x) => x.e.cancel_requested),
      col((x) => x.end.state),
      col((x) => (x.end.state === "READY" ? x.end.readyAt : null)),
      col((x) => json(x.lastError)),
      col((x) => x.attemptState),
      col((x) => json(x.error)),
    ],
    lease === LEASE_HELD ? "end_attempts_held" : "end_attempts_expired",
  );
  const ids = new Set(ended.map((r) => `${r.job_id}\n${r.scheduled_for}`));
  const done = endings.filter((x) => ids.has(`${x.e.job_id}\n${x.e.scheduled_for}`));
  const dead = done.filter((x) => x.end.state === "DEAD");
  await changeJobs(
    db,
    dead.map((x) => ({ jobId: x.e.job_id as string, change: jobChangeAfterExecution(x.e.job_kind as "once" | "cron", "DEAD") })),
    now,
  );
  return new Set(done.map((x) => x.e.id as string));
}

/** Running rows of the items that still hold their lease, with their job's kind and the call's time. */
const HELD_ROWS = `
WITH t AS (SELECT ${nowOr("$5")} AS now)
SELECT e.*, (SELECT kind FROM jobs WHERE jobs.id = e.job_id) AS job_kind, t.now AS call_now
FROM executions e JOIN unnest($1::text[], $2::bigint[], $3::text[], $4::int[]) AS x(job_id, scheduled_for, tenant_id, attempt)
  ON e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for AND (x.tenant_id IS NULL OR e.tenant_id = x.tenant_id) AND e.attempt = x.attempt, t
WHERE ${LEASE_HELD}`;

/**
 * Fails items while their attempt holds the lease: each row is read, core
 * decides (core/retry.ts endFailedAttempt), and the write is a
 * compare-and-set on what the decision read; the items whose facts moved
 * meanwhile (a cancel) are read and decided again.
 */
export async function fail(db: Db, items: FailInput[], pinned: number | null): Promise<AckOutcome[]> {
  const out: AckOutcome[] = new Array(items.length);
  for (const round of rounds(items)) {
    let pending = round;
    while (pending.length > 0) {
      const batch = keyed(pending.map((i) => items[i]!));
      const read =
        batch.length === 0
          ? []
          : await rows(
              db,
              HELD_ROWS,
              [
                batch.map((b) => b.jobId),
                batch.map((b) => b.scheduledFor),
                batch.map((b) => b.item.tenantId),
                batch.map((b) => b.item.attempt),
                pinned,
              ],
              "fail_read",
            );
      const byId = new Map(read.map((e) => [e.id as string, e]));
      const lost = pending.filter((i) => !byId.has(items[i]!.executionId));
      const found = await states(
        db,
        lost.map((i) => items[i]!),
      );
      const marked = await markLost(
        db,
        lost.filter((_i, n) => found[n] !== undefined).map((i) => items[i]!),
        pinned,
      );
      lost.forEach((i, n) => {
        out[i] = found[n] ? lostAnswer(marked, items[i]!) : { status: "not_found" };
      });
      const held = pending.filter((i) => byId.has(items[i]!.executionId));
      if (held.length === 0) break;
      const now = byId.get(items[held[0]!]!.executionId)!.call_now as number;
      const endings = held.map((i): Ending => {
        const item = items[i]!;
        const e = byId.get(item.executionId)!;
        const failure = { errorClass: item.error.class ?? "transient", retryAfterSeconds: item.error.retryAfterSeconds };
        const end = endFailedAttempt(attemptFacts(e), failure, now, item.jitter);
        const attemptState = end.state === "DEAD" ? "DEAD" : item.timedOut ? "TIMED_OUT" : "FAILED";
        return { e, end, attemptState, error: item.error, lastError: lastErrorOf(item.error, end, false) };
      });
      const ended = await endAttempts(db, endings, now, LEASE_HELD);
      held.forEach((i, n) => {
        const { e, end } = endings[n]!;
        if (!ended.has(e.id as string)) return;
        const pool = e.pool as string;
        const tenantId = e.tenant_id as string;
        out[i] =
          end.state === "READY"
            ? { status: "ok", state: "READY", readyAt: end.readyAt, pool, tenantId }
            : { status: "ok", state: end.state, pool, tenantId };
      });
      pending = held.filter((i) => !ended.has(items[i]!.executionId));
    }
  }
  return out;
}

/**
 * Ends attempts whose lease expired, as core/retry.ts endExpiredAttempt says.
 * The rows are claimed FOR UPDATE SKIP LOCKED: a complete or another reaper
 * holding one is passed over (the complete wins), and a complete that comes
 * after waits and then finds the attempt ended.
 */
export async function reap(c: pg.PoolClient, p: { now?: number; limit: number }) {
  const expired = await rows(
    c,
    `WITH t AS (SELECT ${nowOr("$1")} AS now)
     SELECT e.*, (SELECT kind FROM jobs WHERE jobs.id = e.job_id) AS job_kind, t.now AS call_now
     FROM executions e, t WHERE ${LEASE_EXPIRED}
     ORDER BY e.lease_until LIMIT $2
     FOR UPDATE OF e SKIP LOCKED`,
    [p.now ?? null, p.limit],
    "reap_claim",
  );
  if (expired.length === 0) return [];
  const now = expired[0]!.call_now as number;
  const endings = expired.map((e): Ending => {
    const error = expiredAttemptError({ leaseUntil: e.lease_until as number, deadline: e.deadline as number, timeoutMs: e.timeout_ms as number });
    const end = endExpiredAttempt(attemptFacts(e), now);
    return {
      e,
      end,
      attemptState: end.state === "DEAD" ? "DEAD" : "TIMED_OUT",
      error,
      lastError: lastErrorOf(error, end, true),
    };
  });
  const ended = await endAttempts(c, endings, now, LEASE_EXPIRED);
  return endings
    .filter((x) => ended.has(x.e.id as string))
    .map((x) => ({ executionId: x.e.id as string, tenantId: x.e.tenant_id as string, pool: x.e.pool as string, state: x.end.state }));
}

/**
 * Hands leases back unused. core/retry.ts endReleasedAttempt decides on one
 * fact of the row, cancel_requested: both of its answers are bound per item,
 * and the one UPDATE picks by the fact as it is then.
 */
export async function release(db: Db, items: { executionId: string; tenantId: string; attempt: number; readyAt: number }[], now: number | null) {
  const out: ("ok" | "lost")[] = items.map(() => "lost");
  for (const round of rounds(items)) {
    const batch = keyed(round.map((i) => items[i]!));
    if (batch.length === 0) continue;
    const col = <T>(f: (b: (typeof batch)[number]) => T): T[] => batch.map(f);
    const live = col((b) => endReleasedAttempt(false, b.item.readyAt));
    const cancelled = col((b) => endReleasedAttempt(true, b.item.readyAt));
    const released = await rows<{ id: string }>(
      db,
      `WITH t AS (SELECT ${nowOr("$10")} AS now),
       x AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::bigint[], $6::text[], $7::bool[], $8::text[], $9::bool[])
         AS x(job_id, scheduled_for, tenant_id, attempt, ready_at, live_state, live_ends, cancelled_state, cancelled_ends))
       UPDATE executions e SET
         state = CASE WHEN e.cancel_requested THEN x.cancelled_state ELSE x.live_state END,
         finished_at = CASE WHEN (CASE WHEN e.cancel_requested THEN x.cancelled_ends ELSE x.live_ends END) THEN t.now END,
         ready_at = x.ready_at, lease_until = NULL, attempt_base = e.attempt_base + 1
       FROM x, t
       WHERE e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for AND e.tenant_id = x.tenant_id AND e.attempt = x.attempt
         AND ${LEASE_HELD}
       RETURNING e.id`,
      [
        col((b) => b.jobId),
        col((b) => b.scheduledFor),
        col((b) => b.item.tenantId),
        col((b) => b.item.attempt),
        col((b) => b.item.readyAt),
        live.map((end) => end.state),
        live.map((end) => end.state !== "READY"),
        cancelled.map((end) => end.state),
        cancelled.map((end) => end.state !== "READY"),
        now,
      ],
      "release",
    );
    const ok = new Set(released.map((r) => r.id));
    for (const i of round) if (ok.has(items[i]!.executionId)) out[i] = "ok";
  }
  return out;
}

/** The database clock, epoch ms. */
export async function storeTime(db: Db): Promise<number> {
  return (await one<{ now: number }>(db, `SELECT ${DB_NOW} AS now`))!.now;
}
