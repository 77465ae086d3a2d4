// Acknowledgements on SQLite: heartbeats, completions, failures, releases
// and the reaper, and the possible duplicates a lost answer records. Every
// write that ends or renews an attempt is a compare-and-set in its WHERE on
// (attempt, lease token, RUNNING, lease_until >= now), or < now for the
// reaper. Each function runs in the caller's write transaction (index.ts);
// leases.ts grants the attempts.

import type { ErrorRecord } from "@duetime/sdk/contract";
import { type AttemptEnd, endExpiredAttempt, endFailedAttempt, endReleasedAttempt, lastErrorOf, expiredAttemptError } from "../../core/retry.js";
import type { AckOutcome, CompleteInput, FailInput, PossibleDuplicateMark, PossibleDuplicateRow, StoreParams } from "../store.js";
import { attemptFacts, incarnationOf, toPossibleDuplicate } from "../rows.js";
import { dropOvertaken } from "./changes.js";
import { json, type Query, type Row } from "./db.js";

/** The lease fences: an attempt holds its lease up to and including leaseUntil. */
const LEASE_HELD = "state = 'RUNNING' AND lease_until >= @now";
const LEASE_EXPIRED = "state = 'RUNNING' AND lease_until < @now";

/** A call's lease token matches the grant (of alias `e`, or none): SQL over @token, from incarnationOf. */
const tokenHeld = (e = "") => `(@token IS NULL OR ${e}lease_incarnation = @token)`;

/**
 * The answer to a call whose attempt does not hold its lease: not_found, or
 * lost, recording the possible duplicate when the attempt was granted and
 * is later than the one recorded (a compare-and-set in the UPDATE;
 * core/attempt-rules.ts lostAnswerIsDuplicate says the rule).
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
 * holds its lease (a one-off's job is read as ended from it, core/states.ts
 * ONE_OFF_END); only the misses are looked at one by one.
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
       executions.pool AS pool, executions.once AS once,
       CASE WHEN executions.dup_reason = 'expired_then_succeeded' AND executions.dup_at = @now
         AND executions.dup_attempt = executions.expired_attempt THEN executions.dup_attempt END AS dup_new`,
  ).all({ now, input }) as {
    id: string;
    attempt: number;
    job_id: string;
    tenant_id: string;
    pool: string;
    once: number;
    dup_new: number | null;
  }[];
  // The succeeding attempt stays on the execution row (history reads it there).
  dropOvertaken(
    q,
    done.filter((d) => d.once === 1).map((d) => d.job_id),
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
      `SELECT * FROM executions WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant) AND attempt = @attempt AND ${tokenHeld()} AND ${LEASE_HELD}`,
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
  if (end.state === "DEAD" && e.once === 1) dropOvertaken(q, [e.job_id as string]);
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
  const rows = q(`SELECT * FROM executions WHERE ${LEASE_EXPIRED} ORDER BY lease_until LIMIT @limit`).all({ now, limit: p.limit }) as Row[];
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
