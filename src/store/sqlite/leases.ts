// Leases on SQLite: grant (weighted fair queueing across tenants, gated by
// each tenant's caps and dispatch rate), renew, and end attempts. Every
// write that ends or renews an attempt is a compare-and-set in its WHERE on
// (attempt, lease token, RUNNING, lease_until >= now), or < now for the
// reaper. Each function runs in the caller's write transaction (index.ts).

import type { ErrorRecord } from "@duetime/sdk/contract";
import { dispatchAllowance, nextDispatchAt } from "../../core/dispatch-rate.js";
import { fairPick, NO_WORK, type Lane, type LaneGrant } from "../../core/fair-share.js";
import { type AttemptEnd, endExpiredAttempt, endFailedAttempt, endReleasedAttempt, lastErrorOf, expiredAttemptError } from "../../core/retry.js";
import { jobChangeAfterExecution } from "../../core/states.js";
import type {
  AckOutcome,
  CompleteInput,
  FailInput,
  LeasedRow,
  LeaseParams,
  PossibleDuplicateMark,
  PossibleDuplicateRow,
  StoreParams,
} from "../store.js";
import { HTTP_POOL } from "../store.js";
import { attemptFacts, toLeasedRows } from "../rows.js";
import { toPossibleDuplicate } from "../replays.js";
import { changeJobs } from "./changes.js";
import { json, parse, type Query, type Row } from "./db.js";

/** The lease fences: an attempt holds its lease up to and including leaseUntil. */
const LEASE_HELD = "state = 'RUNNING' AND lease_until >= @now";
const LEASE_EXPIRED = "state = 'RUNNING' AND lease_until < @now";

/** An execution row read to end its attempt, with its job's kind (a one-off ends with it). */
const ENDING_ROW = "*, (SELECT kind FROM jobs WHERE jobs.id = executions.job_id) AS job_kind FROM executions";

/**
 * A lease token (LeasedRow.leaseToken: the grant's incarnation) as the
 * column holds it; null when the call names none (the attempt alone fences),
 * and 0 (no incarnation is) for one no grant of this store gave.
 */
function incarnationOf(leaseToken: string | undefined): number | null {
  if (leaseToken === undefined) return null;
  return /^[1-9][0-9]{0,14}$/.test(leaseToken) ? Number(leaseToken) : 0;
}

/** A call's lease token matches the grant (of alias `e`, or none): SQL over @token, from incarnationOf. */
const tokenHeld = (e = "") => `(@token IS NULL OR ${e}lease_incarnation = @token)`;

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
 * imposed: the lane's throttled_since as the lease found it.
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
  // After the grant: a lane's next READY row is one not granted now.
  const wakes = chargeRates(q, p.pool, gates, rows, now);
  if (fair) settleLanes(q, p.pool, fair.lanes, wakes);
  return toLeasedRows(rows, p.pool, parse);
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
 * The answer to a call whose attempt does not hold its lease: not_found, or
 * lost, recording the possible duplicate when the attempt was granted and
 * is later than the one recorded (a compare-and-set in the UPDATE).
 */
function lostOrNotFound(
  q: Query,
  item: { executionId: string; tenantId: string | null; attempt: number; leaseToken?: string },
  now: number,
): { status: "lost"; possibleDuplicate?: PossibleDuplicateMark } | { status: "not_found" } {
  // A token that is not the grant's: the attempt was granted in an earlier incarnation, lost, and granted again.
  const marked = q(
    `UPDATE executions SET dup_attempt = @attempt, dup_reason = 'lease_lost', dup_at = @now
     WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant) AND @attempt >= 1
       AND (attempt > @attempt OR (attempt = @attempt AND state = 'RUNNING' AND lease_until < @now)
            OR (attempt = @attempt AND NOT ${tokenHeld()}))
       AND (dup_attempt IS NULL OR dup_attempt < @attempt)
     RETURNING tenant_id`,
  ).get({ id: item.executionId, tenant: item.tenantId, attempt: item.attempt, token: incarnationOf(item.leaseToken), now }) as Row | undefined;
  if (marked) return { status: "lost", possibleDuplicate: { tenantId: marked.tenant_id as string, attempt: item.attempt, reason: "lease_lost" } };
  return exists(q, item.tenantId, item.executionId) ? { status: "lost" } : { status: "not_found" };
}

/** Whether the execution exists (as the tenant's, unless tenantId is null). */
function exists(q: Query, tenantId: string | null, executionId: string): boolean {
  return (
    q("SELECT 1 FROM executions WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant)").get({ id: executionId, tenant: tenantId }) !== undefined
  );
}

/**
 * Set-based: one UPDATE … FROM json_each succeeds every item that still
 * holds its lease, one UPDATE ends their one-off jobs; only the misses are
 * looked at one by one.
 */
export function complete(q: Query, items: CompleteInput[], now: number): AckOutcome[] {
  if (items.length === 0) return [];
  const input = JSON.stringify(items.map((i) => [i.executionId, i.tenantId, i.attempt, json(i.result), incarnationOf(i.leaseToken)]));
  const done = q(
    `UPDATE executions SET state = 'SUCCEEDED', finished_at = @now, result = x.result, lease_until = NULL,
       -- an attempt reaped for an expired lease may have run too: a possible duplicate (once)
       dup_attempt = CASE WHEN expired_attempt > coalesce(dup_attempt, 0) THEN expired_attempt ELSE dup_attempt END,
       dup_reason = CASE WHEN expired_attempt > coalesce(dup_attempt, 0) THEN 'expired_then_succeeded' ELSE dup_reason END,
       dup_at = CASE WHEN expired_attempt > coalesce(dup_attempt, 0) THEN @now ELSE dup_at END
     FROM (SELECT value ->> 0 AS id, value ->> 1 AS tenant, value ->> 2 AS attempt, value ->> 3 AS result, value ->> 4 AS token
           FROM json_each(@input)) AS x
     WHERE executions.id = x.id AND (x.tenant IS NULL OR executions.tenant_id = x.tenant) AND executions.attempt = x.attempt
       AND (x.token IS NULL OR executions.lease_incarnation = x.token)
       AND executions.state = 'RUNNING' AND executions.lease_until >= @now
     RETURNING executions.id AS id, executions.attempt AS attempt, executions.job_id AS job_id, executions.tenant_id AS tenant_id,
       executions.pool AS pool, (SELECT kind FROM jobs WHERE jobs.id = executions.job_id) AS kind,
       CASE WHEN executions.dup_reason = 'expired_then_succeeded' AND executions.dup_at = @now
         AND executions.dup_attempt = executions.expired_attempt THEN executions.dup_attempt END AS dup_new`,
  ).all({ now, input }) as {
    id: string;
    attempt: number;
    job_id: string;
    tenant_id: string;
    pool: string;
    kind: "once" | "cron";
    dup_new: number | null;
  }[];
  // The succeeding attempt stays on the execution row (history reads it there).
  changeJobs(
    q,
    done.map((d) => ({ jobId: d.job_id, change: jobChangeAfterExecution(d.kind, "SUCCEEDED") })),
    now,
  );
  // By execution and attempt: a batch naming one execution twice answers a stale attempt lost, not with the holder's success.
  const succeeded = new Map(done.map((d) => [`${d.id}\u0000${d.attempt}`, d]));
  const duplicates = new Map(done.flatMap((d) => (d.dup_new !== null ? [[d.id, d.dup_new] as const] : [])));
  return items.map((item): AckOutcome => {
    const row = succeeded.get(`${item.executionId}\u0000${item.attempt}`);
    const dup = duplicates.get(item.executionId);
    if (row !== undefined && dup !== undefined) duplicates.delete(item.executionId);
    if (row !== undefined) {
      const { tenant_id: tenantId, pool } = row;
      return dup !== undefined
        ? { status: "ok", state: "SUCCEEDED", pool, tenantId, possibleDuplicate: { tenantId, attempt: dup, reason: "expired_then_succeeded" } }
        : { status: "ok", state: "SUCCEEDED", pool, tenantId };
    }
    const e = q(
      `SELECT state, attempt, tenant_id, pool, ${tokenHeld()} AS token_held FROM executions WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant)`,
    ).get({
      id: item.executionId,
      tenant: item.tenantId,
      token: incarnationOf(item.leaseToken),
    }) as Row | undefined;
    if (!e) return { status: "not_found" };
    if (e.state === "SUCCEEDED" && e.attempt === item.attempt && e.token_held === 1)
      return { status: "ok", state: "SUCCEEDED", pool: e.pool as string, tenantId: e.tenant_id as string };
    return lostOrNotFound(q, item, now);
  });
}

/**
 * Records an attempt that did not succeed. The running attempt, and the one
 * that succeeded, live on the execution row (worker, start and finish
 * times), so the hot path (lease, complete) writes no attempt rows. Call it
 * before the execution row moves on.
 */
function finishAttempt(q: Query, executionId: string, attempt: number, state: string, now: number, error: ErrorRecord | null): void {
  q(
    `INSERT OR REPLACE INTO attempts (execution_id, attempt, state, worker_id, started_at, finished_at, error, throttled_ms)
     SELECT id, ?, ?, worker_id, started_at, ?, ?, throttled_ms FROM executions WHERE id = ?`,
  ).run(attempt, state, now, json(error ?? undefined), executionId);
}

export function fail(q: Query, items: FailInput[], now: number): AckOutcome[] {
  return items.map((item) => failOne(q, item, now));
}

function failOne(q: Query, item: FailInput, now: number): AckOutcome {
  const failure = { errorClass: item.error.class ?? "transient", retryAfterSeconds: item.error.retryAfterSeconds };
  // Decide on the row as read, then write only if the attempt still holds
  // its lease and the facts decided on still hold; a cancel that landed in
  // between (another handle) is the one fact that can move: decide again.
  for (;;) {
    const e = q(
      `SELECT ${ENDING_ROW} WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant) AND attempt = @attempt AND ${tokenHeld()} AND ${LEASE_HELD}`,
    ).get({
      id: item.executionId,
      tenant: item.tenantId,
      attempt: item.attempt,
      token: incarnationOf(item.leaseToken),
      now,
    }) as Row | undefined;
    if (!e) return lostOrNotFound(q, item, now);
    const end = endFailedAttempt(attemptFacts(e), failure, now, item.jitter);
    const attemptState = end.state === "DEAD" ? "DEAD" : item.timedOut ? "TIMED_OUT" : "FAILED";
    if (!endAttempt(q, e, end, { attemptState, error: item.error, lastError: lastErrorOf(item.error, end, false), now, lease: LEASE_HELD })) continue;
    const pool = e.pool as string;
    const tenantId = e.tenant_id as string;
    return end.state === "READY"
      ? { status: "ok", state: "READY", readyAt: end.readyAt, pool, tenantId }
      : { status: "ok", state: end.state, pool, tenantId };
  }
}

/**
 * Ends the attempt the row `e` was read at, as `end` says: a compare-and-set
 * on the attempt, its lease (held, or expired for the reaper) and the facts
 * `end` was decided on. False, writing nothing, when any of them moved.
 */
function endAttempt(
  q: Query,
  e: Row,
  end: AttemptEnd,
  o: { attemptState: string; error: ErrorRecord; lastError: ErrorRecord; now: number; lease: typeof LEASE_HELD | typeof LEASE_EXPIRED },
): boolean {
  const id = e.id as string;
  const attempt = e.attempt as number;
  const ended =
    q(
      `UPDATE executions SET state = @state, ready_at = coalesce(@readyAt, ready_at), dead_at = @deadAt, finished_at = @finishedAt,
         last_error = @lastError, lease_until = NULL${o.lease === LEASE_EXPIRED ? ", expired_attempt = attempt" : ""}
       WHERE id = @id AND attempt = @attempt AND lease_incarnation IS @incarnation AND ${o.lease} AND attempt_base = @base
         AND cancel_requested = @cancel`,
    ).run({
      state: end.state,
      readyAt: end.state === "READY" ? end.readyAt : null,
      deadAt: end.state === "DEAD" ? o.now : null,
      finishedAt: end.state === "READY" ? null : o.now,
      lastError: json(o.lastError),
      id,
      attempt,
      incarnation: e.lease_incarnation,
      now: o.now,
      base: e.attempt_base,
      cancel: e.cancel_requested,
    }).changes === 1;
  if (!ended) return false;
  finishAttempt(q, id, attempt, o.attemptState, o.now, o.error);
  if (end.state === "DEAD")
    changeJobs(q, [{ jobId: e.job_id as string, change: jobChangeAfterExecution(e.job_kind as "once" | "cron", "DEAD") }], o.now);
  return true;
}

export function traceParents(q: Query, p: { executionIds: readonly string[] }): Map<string, string> {
  if (p.executionIds.length === 0) return new Map();
  const rows = q("SELECT id, trace_parent FROM executions WHERE id IN (SELECT value FROM json_each(?)) AND trace_parent IS NOT NULL").all(
    JSON.stringify(p.executionIds),
  ) as { id: string; trace_parent: string }[];
  return new Map(rows.map((r) => [r.id, r.trace_parent]));
}

/** Renews a lease the attempt still holds; else lost or not_found (lostOrNotFound). */
export function heartbeat(q: Query, p: StoreParams<"executionHeartbeat">, now: number) {
  const row = q(
    `UPDATE executions SET lease_until = min(@now + coalesce(@leaseMs, lease_ms), deadline)
       WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant) AND attempt = @attempt AND ${tokenHeld()} AND ${LEASE_HELD}
       RETURNING lease_until, cancel_requested`,
  ).get({ id: p.executionId, tenant: p.tenantId, attempt: p.attempt, token: incarnationOf(p.leaseToken), now, leaseMs: p.leaseMs ?? null }) as
    | Row
    | undefined;
  if (row) return { status: "ok" as const, leaseUntil: row.lease_until as number, cancelRequested: row.cancel_requested === 1 };
  return lostOrNotFound(q, p, now);
}

export function possibleDuplicates(q: Query, p: StoreParams<"executionPossibleDuplicates">): PossibleDuplicateRow[] {
  const cursor = p.after ? "AND (dup_at < @at OR (dup_at = @at AND id < @id))" : "";
  const found = q(
    `SELECT id, tenant_id, job_id, name, pool, scheduled_for, state, attempt, dup_attempt, dup_reason, dup_at FROM executions
     WHERE tenant_id = @tenant AND dup_at IS NOT NULL ${cursor} ORDER BY dup_at DESC, id DESC LIMIT @limit`,
  ).all({ tenant: p.tenantId, at: p.after?.at ?? null, id: p.after?.executionId ?? null, limit: p.limit }) as Row[];
  return found.map(toPossibleDuplicate);
}

/**
 * Hands leases back unused. core/retry.ts endReleasedAttempt decides on one
 * fact of the row, cancel_requested: both of its answers go into the one
 * UPDATE, which picks by the fact as it is then.
 */
export function release(
  q: Query,
  items: { executionId: string; tenantId: string; attempt: number; readyAt: number }[],
  now: number,
): ("ok" | "lost")[] {
  return items.map((i) => {
    const live = endReleasedAttempt(false, i.readyAt);
    const cancelled = endReleasedAttempt(true, i.readyAt);
    const finished = (end: AttemptEnd) => (end.state === "READY" ? null : now);
    return q(
      `UPDATE executions SET
           state = CASE cancel_requested WHEN 1 THEN @cancelledState ELSE @liveState END,
           finished_at = CASE cancel_requested WHEN 1 THEN @cancelledFinished ELSE @liveFinished END,
           ready_at = @readyAt, lease_until = NULL, attempt_base = attempt_base + 1
         WHERE id = @id AND tenant_id = @tenant AND attempt = @attempt AND ${LEASE_HELD}`,
    ).run({
      cancelledState: cancelled.state,
      liveState: live.state,
      cancelledFinished: finished(cancelled),
      liveFinished: finished(live),
      readyAt: i.readyAt,
      id: i.executionId,
      tenant: i.tenantId,
      attempt: i.attempt,
      now,
    }).changes === 1
      ? "ok"
      : "lost";
  });
}

/** Ends attempts whose lease expired, as core/retry.ts endExpiredAttempt says, oldest lease first. */
export function reap(q: Query, p: { limit: number }, now: number) {
  const rows = q(`SELECT ${ENDING_ROW} WHERE ${LEASE_EXPIRED} ORDER BY lease_until LIMIT @limit`).all({ now, limit: p.limit }) as Row[];
  const reaped: { executionId: string; tenantId: string; pool: string; state: "READY" | "DEAD" | "CANCELLED" }[] = [];
  for (const e of rows) {
    const error = expiredAttemptError({
      leaseUntil: e.lease_until as number,
      deadline: e.deadline as number,
      timeoutMs: e.timeout_ms as number,
    });
    const end = endExpiredAttempt(attemptFacts(e), now);
    const attemptState = end.state === "DEAD" ? "DEAD" : "TIMED_OUT";
    const lastError = lastErrorOf(error, end, true);
    // A miss: the owner acknowledged, or another reaper ended it, since the read.
    if (!endAttempt(q, e, end, { attemptState, error, lastError, now, lease: LEASE_EXPIRED })) continue;
    reaped.push({ executionId: e.id as string, tenantId: e.tenant_id as string, pool: e.pool as string, state: end.state });
  }
  return reaped;
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
