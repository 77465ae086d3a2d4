// Acknowledgements on PostgreSQL: heartbeats, completions, failures, releases
// and the reaper, and the possible duplicates a lost answer records. Every
// write that ends or renews an attempt is a compare-and-set in its WHERE on
// (attempt, lease token, RUNNING, lease_until >= now), or < now for the reaper, which
// claims its rows with SKIP LOCKED so two reapers never wait for each other.
// Times come from the caller when pinned, else from the database clock
// inside the statement (db.ts nowOr). leases.ts grants the attempts.

import type pg from "pg";
import type { ErrorRecord } from "@duetime/sdk/contract";
import { type AttemptEnd, endExpiredAttempt, endFailedAttempt, endReleasedAttempt, lastErrorOf, expiredAttemptError } from "../../core/retry.js";
import type { AckOutcome, CompleteInput, FailInput, PossibleDuplicateMark, PossibleDuplicateRow } from "../store.js";
import { attemptFacts, incarnationOf, toPossibleDuplicate } from "../rows.js";
import { dropOvertaken } from "./changes.js";
import { type Db, executionKey, json, nowOr, one, type Row, rows } from "./db.js";
import { LEASE_EXPIRED, LEASE_HELD } from "./leases.js";

/** A call's lease token (`token`, a bigint from incarnationOf, NULL for none) matches the grant's of alias `e`. */
const tokenHeld = (token: string): string => `(${token} IS NULL OR e.lease_incarnation = ${token})`;

/** What a call about an attempt names: its execution, the caller's tenant (null: any), the attempt and the grant's token. */
interface AttemptCall {
  executionId: string;
  tenantId: string | null;
  attempt: number;
  leaseToken?: string;
}

export async function heartbeat(db: Db, p: AttemptCall & { leaseMs?: number; now?: number }) {
  const key = executionKey(p.executionId);
  if (!key) return { status: "not_found" as const };
  const row = await one(
    db,
    `WITH t AS (SELECT ${nowOr("$5")} AS now)
     UPDATE executions e SET lease_until = least(t.now + coalesce($6::bigint, e.lease_ms), e.deadline) FROM t
     WHERE e.job_id = $1 AND e.scheduled_for = $2 AND ($3::text IS NULL OR e.tenant_id = $3::text) AND e.attempt = $4
       AND ${tokenHeld("$7::bigint")} AND ${LEASE_HELD}
     RETURNING e.lease_until, e.cancel_requested`,
    [key.jobId, key.scheduledFor, p.tenantId, p.attempt, p.now ?? null, p.leaseMs ?? null, incarnationOf(p.leaseToken)],
    "heartbeat",
  );
  if (row) return { status: "ok" as const, leaseUntil: row.lease_until as number, cancelRequested: row.cancel_requested as boolean };
  const found = await states(db, [p]);
  if (!found[0]) return { status: "not_found" as const };
  const marked = await markLost(db, [p], p.now ?? null);
  return lostAnswer(marked, p);
}

/**
 * Records the possible duplicates of lost answers: an attempt the execution
 * granted (attempt <= its latest; or its latest under another token: granted
 * on a primary a failover lost, and granted again) that is later than the one
 * recorded, a compare-and-set in the UPDATE (core/attempt-rules.ts
 * lostAnswerIsDuplicate says the rule). Answers the executions newly marked,
 * with their tenant.
 */
async function markLost(db: Db, items: readonly AttemptCall[], now: number | null): Promise<Map<string, PossibleDuplicateMark>> {
  const keyed = items.flatMap((i) => {
    const key = executionKey(i.executionId);
    return key && i.attempt >= 1 ? [{ ...key, tenantId: i.tenantId, attempt: i.attempt, token: incarnationOf(i.leaseToken) }] : [];
  });
  if (keyed.length === 0) return new Map();
  const marked = await rows<{ id: string; tenant_id: string; dup_attempt: number }>(
    db,
    `WITH t AS (SELECT ${nowOr("$5")} AS now)
     UPDATE executions e SET dup_attempt = x.attempt, dup_reason = 'lease_lost', dup_at = t.now
     FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $6::bigint[]) AS x(job_id, scheduled_for, tenant_id, attempt, token), t
     WHERE e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for AND (x.tenant_id IS NULL OR e.tenant_id = x.tenant_id)
       AND (e.attempt > x.attempt OR (e.attempt = x.attempt AND e.state = 'RUNNING' AND e.lease_until < t.now)
            OR (e.attempt = x.attempt AND NOT ${tokenHeld("x.token")}))
       AND (e.dup_attempt IS NULL OR e.dup_attempt < x.attempt)
     RETURNING e.id, e.tenant_id, e.dup_attempt`,
    [
      keyed.map((k) => k.jobId),
      keyed.map((k) => k.scheduledFor),
      keyed.map((k) => k.tenantId),
      keyed.map((k) => k.attempt),
      now,
      keyed.map((k) => k.token),
    ],
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

/**
 * Each item's execution as it is now (state, attempt, whether the item's lease
 * token is its grant's), or undefined when the tenant (any, for null) has no
 * such execution. Each execution once: a batch's rounds (rounds) name it once.
 */
async function states(
  db: Db,
  items: readonly { executionId: string; tenantId: string | null; leaseToken?: string }[],
): Promise<({ state: string; attempt: number; tenant_id: string; pool: string; token_held: boolean } | undefined)[]> {
  const keys = items.map((i) => executionKey(i.executionId));
  const known = items.flatMap((i, n) => (keys[n] ? [{ ...keys[n]!, tenantId: i.tenantId, token: incarnationOf(i.leaseToken) }] : []));
  if (known.length === 0) return items.map(() => undefined);
  const found = await rows<{ id: string; tenant_id: string; pool: string; state: string; attempt: number; token_held: boolean }>(
    db,
    `SELECT e.id, e.tenant_id, e.pool, e.state, e.attempt, coalesce(${tokenHeld("x.token")}, false) AS token_held FROM executions e
     JOIN unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[]) AS x(job_id, scheduled_for, tenant_id, token)
       ON e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for AND (x.tenant_id IS NULL OR e.tenant_id = x.tenant_id)`,
    [known.map((k) => k.jobId), known.map((k) => k.scheduledFor), known.map((k) => k.tenantId), known.map((k) => k.token)],
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
 * Succeeds every item that still holds its lease in one UPDATE (a one-off's
 * job is read as ended from it); only the misses are read, to answer them.
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
            once: boolean;
            now: number;
            dup_new: number | null;
          }>(
            db,
            `WITH t AS (SELECT ${nowOr("$6")} AS now),
             x AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::text[], $7::bigint[])
               AS x(job_id, scheduled_for, tenant_id, attempt, result, token))
             UPDATE executions e SET state = 'SUCCEEDED', finished_at = t.now, result = x.result::jsonb, lease_until = NULL,
               -- an attempt reaped for an expired lease may have run too: a possible duplicate (once)
               dup_attempt = CASE WHEN e.expired_attempt > coalesce(e.dup_attempt, 0) THEN e.expired_attempt ELSE e.dup_attempt END,
               dup_reason = CASE WHEN e.expired_attempt > coalesce(e.dup_attempt, 0) THEN 'expired_then_succeeded' ELSE e.dup_reason END,
               dup_at = CASE WHEN e.expired_attempt > coalesce(e.dup_attempt, 0) THEN t.now ELSE e.dup_at END
             FROM x, t
             WHERE e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for AND (x.tenant_id IS NULL OR e.tenant_id = x.tenant_id)
               AND e.attempt = x.attempt AND ${tokenHeld("x.token")} AND ${LEASE_HELD}
             RETURNING e.id, e.job_id, e.tenant_id, e.pool, e.once, t.now,
               CASE WHEN e.dup_reason = 'expired_then_succeeded' AND e.dup_at = t.now AND e.dup_attempt = e.expired_attempt
                 THEN e.dup_attempt END AS dup_new`,
            [
              batch.map((b) => b.jobId),
              batch.map((b) => b.scheduledFor),
              batch.map((b) => b.item.tenantId),
              batch.map((b) => b.item.attempt),
              batch.map((b) => json(b.item.result)),
              now,
              batch.map((b) => incarnationOf(b.item.leaseToken)),
            ],
            "complete",
          );
    // The succeeding attempt stays on the execution row (history reads it there).
    // A one-off's job is read as COMPLETED from it (core/states.ts ONE_OFF_END). A statement of its own, not a CTE of the
    // UPDATE: it must see what a change of the job that the UPDATE waited for left (jobs.ts lockLive).
    await dropOvertaken(
      db,
      done.filter((d) => d.once).map((d) => d.job_id),
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
      return e !== undefined && !(e.state === "SUCCEEDED" && e.attempt === items[i]!.attempt && e.token_held);
    });
    const marked = await markLost(
      db,
      lostItems.map((i) => items[i]!),
      now,
    );
    missed.forEach((i, n) => {
      const e = found[n];
      if (!e) out[i] = { status: "not_found" };
      else if (e.state === "SUCCEEDED" && e.attempt === items[i]!.attempt && e.token_held)
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
 * one's attempt and lease token, its lease (held, or expired for the reaper) and the facts
 * the decision read (attempt_base, cancel_requested); the attempt row is
 * recorded for each one that ended. Answers the ids that ended: one whose
 * facts moved meanwhile is left alone. A dead one-off drops what a trigger overtook.
 */
async function endAttempts(db: Db, endings: Ending[], now: number, lease: typeof LEASE_HELD | typeof LEASE_EXPIRED): Promise<Set<string>> {
  if (endings.length === 0) return new Set();
  const col = <T>(f: (x: Ending) => T): T[] => endings.map(f);
  const ended = await rows<{ job_id: string; scheduled_for: number }>(
    db,
    `WITH t AS (SELECT $1::bigint AS now),
     u AS (SELECT * FROM unnest($2::text[], $3::bigint[], $4::int[], $5::int[], $6::bool[], $7::text[], $8::bigint[], $9::text[],
       $10::text[], $11::text[], $12::bigint[]) AS u(job_id, scheduled_for, attempt, base, cancel, state, ready_at, last_error, attempt_state, error,
       incarnation)),
     ended AS (
       UPDATE executions e SET state = u.state, ready_at = coalesce(u.ready_at, e.ready_at),
         dead_at = CASE WHEN u.state = 'DEAD' THEN t.now END, finished_at = CASE WHEN u.state <> 'READY' THEN t.now END,
         last_error = u.last_error::jsonb, lease_until = NULL${lease === LEASE_EXPIRED ? ", expired_attempt = e.attempt" : ""}
       FROM u, t
       WHERE e.job_id = u.job_id AND e.scheduled_for = u.scheduled_for AND e.attempt = u.attempt
         AND e.lease_incarnation IS NOT DISTINCT FROM u.incarnation AND ${lease}
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
      col((x) => x.e.lease_incarnation),
    ],
    lease === LEASE_HELD ? "end_attempts_held" : "end_attempts_expired",
  );
  const ids = new Set(ended.map((r) => `${r.job_id}\n${r.scheduled_for}`));
  const done = endings.filter((x) => ids.has(`${x.e.job_id}\n${x.e.scheduled_for}`));
  const dead = done.filter((x) => x.end.state === "DEAD");
  await dropOvertaken(
    db,
    dead.filter((x) => x.e.once === true).map((x) => x.e.job_id as string),
  );
  return new Set(done.map((x) => x.e.id as string));
}

/** Running rows of the items that still hold their lease (attempt and token), with the call's time. */
const HELD_ROWS = `
WITH t AS (SELECT ${nowOr("$5")} AS now)
SELECT e.*, t.now AS call_now
FROM executions e JOIN unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $6::bigint[]) AS x(job_id, scheduled_for, tenant_id, attempt, token)
  ON e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for AND (x.tenant_id IS NULL OR e.tenant_id = x.tenant_id) AND e.attempt = x.attempt, t
WHERE ${tokenHeld("x.token")} AND ${LEASE_HELD}`;

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
                batch.map((b) => incarnationOf(b.item.leaseToken)),
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
     SELECT e.*, t.now AS call_now
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
