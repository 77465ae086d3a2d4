// Leases on SQLite: the grant (weighted fair queueing across tenants, gated
// by each tenant's caps and dispatch rate, in the statement) and when a
// pool's next row is ready. Each function runs in the caller's write
// transaction (index.ts); acks.ts renews and ends the attempts granted here.

import { dispatchAllowance, nextDispatchAt } from "../../core/dispatch-rate.js";
import { fairPick, NO_WORK, type Lane, type LaneGrant } from "../../core/fair-share.js";
import type { LeasedRow, LeaseParams } from "../store.js";
import { HTTP_POOL } from "../store.js";
import { COUNT_HOUR_MS } from "../ready-counts.js";
import { toLeasedRows } from "../rows.js";
import { parse, type Query, type Row } from "./db.js";

/** A tenant's caps as one lease sees them: what it may still be granted, and its dispatch rate's state. */
interface TenantGate {
  left: number;
  rate: number | null;
  /** What the rate alone allowed when the lease began. */
  byRate: number;
  tat: number | null;
  /** How many of its rows this lease picked. */
  picked: number;
}

/** What a tenant's dispatch rate allows at @now, of tenants row `t` (core/dispatch-rate.ts dispatchAllowance, the same arithmetic). */
const ALLOWED_BY_RATE = `max(0, floor(max(1, t.dispatch_rate_per_second)
  - max(0, coalesce(t.dispatch_tat, @now) - @now) * t.dispatch_rate_per_second / 1000.0 + 1e-9))`;

/**
 * The grant: the picked rows (@ids) RUNNING as a new attempt, each a
 * compare-and-set on READY, and none of a tenant's when its picks (@gated:
 * [tenantId, picked] pairs) no longer fit its caps as they stand when the
 * statement runs: max_leased_attempts less its RUNNING attempts, and what
 * its dispatch rate allows (ALLOWED_BY_RATE). The subqueries see the table
 * as it was before the statement (an UPDATE whose WHERE has a subquery
 * collects its rows first). Each records the wait its tenant's rate
 * imposed: the lane's throttled_since as the lease found it. Its deadline and
 * lease end are core/attempt-rules.ts attemptDeadline and leaseEnd.
 */
const GRANT = `UPDATE executions SET state = 'RUNNING', attempt = attempt + 1, lease_incarnation = @incarnation, worker_id = @worker, cancel_requested = 0, started_at = @now,
    deadline = @now + timeout_ms + @grace, lease_ms = @leaseMs,
    lease_until = min(@now + @leaseMs, @now + timeout_ms + @grace),
    throttled_ms = (SELECT max(0, @now - max(executions.ready_at, l.throttled_since)) FROM lanes l
                    WHERE l.pool = executions.pool AND l.tenant_id = executions.tenant_id)
  WHERE id IN (SELECT value FROM json_each(@ids)) AND state = 'READY'
    AND tenant_id NOT IN (
      SELECT t.tenant_id FROM json_each(@gated) g JOIN tenants t ON t.tenant_id = g.value ->> 0
      WHERE (t.max_leased_attempts IS NOT NULL AND (g.value ->> 1)
               + (SELECT count(*) FROM executions r WHERE r.tenant_id = t.tenant_id AND r.state = 'RUNNING') > t.max_leased_attempts)
         OR (t.dispatch_rate_per_second IS NOT NULL AND (g.value ->> 1) > ${ALLOWED_BY_RATE}))
  RETURNING id, tenant_id, job_id, name, attempt, attempt_base, lease_incarnation, payload, scheduled_for, lease_until, timeout_ms, target,
    priority, ready_at, trace_parent`;

/** A rate-limited tenant's tat, charged @n grants at @now (core/dispatch-rate.ts chargeDispatch): added to the tat as it stands, so no charge is lost. */
const CHARGE = `UPDATE tenants SET dispatch_tat = max(coalesce(dispatch_tat, @now), @now) + @n * 1000.0 / dispatch_rate_per_second
  WHERE tenant_id = @tenant RETURNING dispatch_tat AS tat`;

/**
 * Grants up to max READY executions due by now. The pool's READY rows
 * include every one-off not yet due, so the pick never walks them: it
 * visits the priority levels that hold READY rows, highest first, and in
 * each reads the index range up to now, earliest first.
 */
export function lease(q: Query, p: LeaseParams, now: number, incarnation: number): LeasedRow[] {
  const gates = new Map<string, TenantGate>();
  const gate = (tenantId: string): TenantGate => {
    let g = gates.get(tenantId);
    if (!g) gates.set(tenantId, (g = gateOf(q, tenantId, now)));
    return g;
  };
  const fair = p.tenantId === undefined ? fairShares(q, p.pool, now, p.max, gate) : undefined;
  const ids = fair ? fair.ids : dueIds(q, { pool: p.pool, tenantId: p.tenantId as string }, now, Math.min(p.max, gate(p.tenantId as string).left));
  if (!fair && ids.length > 0) gate(p.tenantId as string).picked = ids.length;
  const gated = [...gates].flatMap(([tenantId, g]) => (g.picked > 0 ? [[tenantId, g.picked]] : []));
  const rows =
    ids.length === 0
      ? []
      : (q(GRANT).all({
          ids: JSON.stringify(ids),
          gated: JSON.stringify(gated),
          now,
          worker: p.workerId,
          leaseMs: p.leaseMs,
          grace: p.graceMs ?? 0,
          incarnation,
        }) as Row[]);
  leaveReadyCounts(q, p.pool, rows);
  // After the grant: a lane's next READY row is one not granted now.
  const wakes = chargeRates(q, p.pool, gates, rows, now);
  if (fair) settleLanes(q, p.pool, fair.lanes, wakes);
  return toLeasedRows(rows, p.pool, parse);
}

/**
 * The granted rows leave ready_counts: one UPDATE per bucket (tenant,
 * priority, the hour of ready_at, as the triggers of migration 10 compute
 * it), not a trigger per row (migration 19 leaves READY → RUNNING to this).
 */
function leaveReadyCounts(q: Query, pool: string, granted: readonly Row[]): void {
  const buckets = new Map<string, { tenant: string; priority: number; hour: number; n: number }>();
  for (const r of granted) {
    const [tenant, priority, hour] = [r.tenant_id as string, r.priority as number, Math.floor((r.ready_at as number) / COUNT_HOUR_MS)];
    const key = `${tenant}\u0000${priority}\u0000${hour}`;
    const bucket = buckets.get(key);
    if (bucket) bucket.n++;
    else buckets.set(key, { tenant, priority, hour, n: 1 });
  }
  const leave = q("UPDATE ready_counts SET n = n - @n WHERE tenant_id = @tenant AND pool = @pool AND priority = @priority AND hour = @hour");
  for (const bucket of buckets.values()) leave.run({ ...bucket, pool });
}

/** Up to max READY executions of one tenant's pool due by now, highest priority first, then earliest; `skip` are passed over. */
function dueIds(q: Query, p: { pool: string; tenantId: string }, now: number, max: number, skip?: ReadonlySet<string>): string[] {
  const scope = readyScope(p);
  const ids: string[] = [];
  for (const priority of priorityLevels(q, scope, p)) {
    if (ids.length >= max) break;
    const rows = q(`SELECT id FROM ${scope} AND state = 'READY' AND priority = @priority AND ready_at <= @now ORDER BY ready_at LIMIT @n`).all({
      ...scopeParams(p),
      priority,
      now,
      n: max - ids.length + (skip?.size ?? 0),
    }) as { id: string }[];
    for (const r of rows) if (ids.length < max && !skip?.has(r.id)) ids.push(r.id);
  }
  return ids;
}

/**
 * A cross-tenant lease's picks: weighted fair queueing over the pool's
 * lanes (core/fair-share.ts). Lanes come in vtime order, a few at a time;
 * a lane whose rows run out leaves the batch, and the next lane comes in.
 * Cost: a seek per lane served, never a walk over every tenant.
 */
function fairShares(q: Query, pool: string, now: number, max: number, gate: (tenantId: string) => TenantGate): { ids: string[]; lanes: LaneGrant[] } {
  wakeLanes(q, pool, now);
  const next = q(
    `SELECT l.tenant_id, l.vtime, coalesce(t.weight, 1) AS weight FROM lanes l LEFT JOIN tenants t USING (tenant_id)
     WHERE l.pool = @pool AND l.idle_until IS NULL AND (l.vtime, l.tenant_id) > (@vtime, @tenant)
     ORDER BY l.vtime, l.tenant_id LIMIT @k`,
  );
  let after = { vtime: -Infinity, tenant: "" };
  const more = (k: number): Lane[] => {
    const rows = next.all({ pool, vtime: after.vtime, tenant: after.tenant, k }) as { tenant_id: string; vtime: number; weight: number }[];
    const last = rows.at(-1);
    if (last) after = { vtime: last.vtime, tenant: last.tenant_id };
    return rows.map((r) => ({ tenantId: r.tenant_id, vtime: r.vtime, weight: r.weight }));
  };
  const taken = new Set<string>();
  return fairPick(max, more, (lane, n) => {
    const g = gate(lane.tenantId);
    const ids = dueIds(q, { pool, tenantId: lane.tenantId }, now, Math.min(n, g.left), taken);
    for (const id of ids) taken.add(id);
    g.left -= ids.length;
    g.picked += ids.length;
    return ids;
  });
}

/**
 * What a tenant may still be granted in this lease: its maxLeasedAttempts
 * less its RUNNING attempts, and what its dispatch rate allows now
 * (Infinity for either without a limit).
 */
function gateOf(q: Query, tenantId: string, now: number): TenantGate {
  const row = q("SELECT max_leased_attempts AS cap, dispatch_rate_per_second AS rate, dispatch_tat AS tat FROM tenants WHERE tenant_id = ?").get(
    tenantId,
  ) as { cap: number | null; rate: number | null; tat: number | null } | undefined;
  let left = Number.POSITIVE_INFINITY;
  if (row?.cap != null) {
    const running = q("SELECT count(*) AS n FROM executions WHERE tenant_id = ? AND state = 'RUNNING'").get(tenantId) as { n: number };
    left = Math.max(0, row.cap - running.n);
  }
  const rate = row?.rate ?? null;
  const byRate = dispatchAllowance(rate, row?.tat ?? null, now);
  return { left: Math.min(left, byRate), rate, byRate, tat: row?.tat ?? null, picked: 0 };
}

/**
 * Charges each rate-limited tenant's grants to its dispatch rate, and marks
 * its lane throttled while the rate leaves due work waiting (unmarked once
 * it does not). Answers when each throttled lane may be served again.
 */
function chargeRates(q: Query, pool: string, gates: ReadonlyMap<string, TenantGate>, granted: readonly Row[], now: number): Map<string, number> {
  const wakes = new Map<string, number>();
  for (const [tenantId, g] of gates) {
    if (g.rate === null) continue;
    const n = granted.filter((r) => r.tenant_id === tenantId).length;
    const tat = n > 0 ? (q(CHARGE).get({ tenant: tenantId, n, now }) as { tat: number }).tat : g.tat;
    const next = g.byRate - n < 1 ? nextReadyAt(q, { pool, tenantId }) : null;
    if (next !== null && next <= now) {
      q("UPDATE lanes SET throttled_since = coalesce(throttled_since, @now) WHERE pool = @pool AND tenant_id = @tenant").run({
        pool,
        tenant: tenantId,
        now,
      });
      wakes.set(tenantId, nextDispatchAt(g.rate, tat, now));
    } else {
      q("UPDATE lanes SET throttled_since = NULL WHERE pool = @pool AND tenant_id = @tenant AND throttled_since IS NOT NULL").run({
        pool,
        tenant: tenantId,
      });
    }
  }
  return wakes;
}

/**
 * Lanes whose first READY row is due by now rejoin the rotation, at the
 * vtime of the lanes in it (no credit for the time they had no work).
 */
function wakeLanes(q: Query, pool: string, now: number): void {
  const floor = q(
    `SELECT coalesce((SELECT min(vtime) FROM lanes WHERE pool = @pool AND idle_until IS NULL),
                     (SELECT max(vtime) FROM lanes WHERE pool = @pool), 0) AS floor`,
  ).get({ pool }) as { floor: number };
  q("UPDATE lanes SET idle_until = NULL, vtime = max(vtime, @floor) WHERE pool = @pool AND idle_until <= @now").run({
    pool,
    now,
    floor: floor.floor,
  });
}

/**
 * Charges each lane its grants; a lane that ran out sleeps until its next
 * READY row is due, or a throttled one until its rate allows (`wakes`).
 */
function settleLanes(q: Query, pool: string, lanes: readonly LaneGrant[], wakes: ReadonlyMap<string, number>): void {
  for (const lane of lanes) {
    if (lane.granted > 0)
      q("UPDATE lanes SET vtime = @vtime WHERE pool = @pool AND tenant_id = @tenant").run({ pool, tenant: lane.tenantId, vtime: lane.vtime });
    if (!lane.exhausted) continue;
    const next = wakes.get(lane.tenantId) ?? nextReadyAt(q, { pool, tenantId: lane.tenantId });
    q("UPDATE lanes SET idle_until = @until WHERE pool = @pool AND tenant_id = @tenant").run({
      pool,
      tenant: lane.tenantId,
      until: next ?? NO_WORK,
    });
  }
}

/** The priorities that hold READY executions in scope, highest first: one index seek each. */
function* priorityLevels(q: Query, scope: string, p: { pool: string; tenantId?: string }): Generator<number> {
  const below = q(`SELECT priority FROM ${scope} AND state = 'READY' AND priority < @below ORDER BY priority DESC LIMIT 1`);
  for (let level = below.get({ ...scopeParams(p), below: Infinity }) as { priority: number } | undefined; level; ) {
    yield level.priority;
    level = below.get({ ...scopeParams(p), below: level.priority }) as { priority: number } | undefined;
  }
}

export function nextReadyAt(q: Query, p: { pool: string; tenantId?: string }): number | null {
  const scope = readyScope(p);
  const first = q(`SELECT ready_at FROM ${scope} AND state = 'READY' AND priority = @priority ORDER BY ready_at LIMIT 1`);
  let next: number | null = null;
  for (const priority of priorityLevels(q, scope, p)) {
    const { ready_at: at } = first.get({ ...scopeParams(p), priority }) as { ready_at: number };
    if (next === null || at < next) next = at;
  }
  return next;
}

/**
 * "executions WHERE …" of the READY rows a lease (or a long poll's next
 * look) may take, each kind served by its index: one tenant's pool
 * (executions_ready), the HTTP runner's pool across tenants
 * (executions_ready_http, named: the planner would take the other).
 */
function readyScope(p: { pool: string; tenantId?: string }): string {
  if (p.tenantId !== undefined) return "executions WHERE pool = @pool AND tenant_id = @tenant";
  return p.pool === HTTP_POOL ? "executions INDEXED BY executions_ready_http WHERE pool = '$http'" : "executions WHERE pool = @pool";
}

function scopeParams(p: { pool: string; tenantId?: string }): { pool: string; tenant: string | null } {
  return { pool: p.pool, tenant: p.tenantId ?? null };
}
