// Executions as history on PostgreSQL: a job's attempts, the run ledger's
// window, dead letters and their replay. A job's executions are one range of
// the primary key (job_id, scheduled_for).

import type pg from "pg";
import type { AttemptRow, AuditEntry, DeadLetterRow } from "../store.js";
import { jsonb, toAttemptRow, toDeadLetter } from "../rows.js";
import { type Db, executionKey, json, one, type Row, rows } from "./db.js";

/** A history row; jsonb columns arrive parsed. */
/** An execution waiting for a grant whose last one left no attempt (handed back unused): history shows it as it waits. */
const WAITING_UNRECORDED = `e.state IN ('READY', 'PENDING', 'PAUSED') AND NOT EXISTS
  (SELECT 1 FROM attempts a WHERE a.job_id = e.job_id AND a.scheduled_for = e.scheduled_for AND a.attempt = e.attempt)`;

const historyRow = (r: Row): AttemptRow => toAttemptRow(r, jsonb);

/** Executions as they wait for their next attempt (trigger, backfill, replay), by id. */
export async function attemptZeros(db: Db, ids: readonly string[]): Promise<Map<string, AttemptRow>> {
  const keys = ids.flatMap((id) => executionKey(id) ?? []);
  if (keys.length === 0) return new Map();
  const found = await rows(
    db,
    `SELECT e.* FROM executions e JOIN unnest($1::text[], $2::bigint[]) AS x(job_id, scheduled_for)
       ON e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for`,
    [keys.map((k) => k.jobId), keys.map((k) => k.scheduledFor)],
  );
  return new Map(
    found.map((e) => [e.id as string, historyRow({ ...e, started_at: null, finished_at: null, error: null, worker_id: null, result: null })]),
  );
}

/** Newest first by (scheduledFor, attempt): attempts that ended, the running or succeeded one, and attempt 0 of those never tried. */
export async function history(
  db: Db,
  p: { tenantId: string; jobId: string; limit: number; after?: { scheduledFor: number; attempt: number } },
): Promise<AttemptRow[]> {
  const cursor = p.after ? "WHERE (scheduled_for, attempt) < ($4::bigint, $5::int)" : "";
  const found = await rows(
    db,
    `SELECT * FROM (
       SELECT e.id, e.job_id, e.scheduled_for, a.attempt, a.state, e.ready_at, e.dispatched_at, e.dispatched_by,
              a.started_at, a.finished_at, a.error, a.worker_id, NULL::jsonb AS result, a.throttled_ms
       FROM executions e JOIN attempts a ON a.job_id = e.job_id AND a.scheduled_for = e.scheduled_for
       WHERE e.job_id = $1 AND e.tenant_id = $2
       UNION ALL
       SELECT e.id, e.job_id, e.scheduled_for, e.attempt, e.state, e.ready_at, e.dispatched_at, e.dispatched_by,
              e.started_at, e.finished_at, NULL, e.worker_id, e.result, e.throttled_ms
       FROM executions e WHERE e.job_id = $1 AND e.tenant_id = $2 AND e.state IN ('RUNNING', 'SUCCEEDED')
       UNION ALL
       SELECT e.id, e.job_id, e.scheduled_for, e.attempt, e.state, e.ready_at, e.dispatched_at, e.dispatched_by,
              NULL, e.finished_at, CASE WHEN e.state IN ('SKIPPED', 'CANCELLED') THEN e.last_error END, NULL, NULL, NULL::bigint
       FROM executions e WHERE e.job_id = $1 AND e.tenant_id = $2 AND (e.attempt = 0 OR (${WAITING_UNRECORDED}))
     ) h ${cursor}
     ORDER BY scheduled_for DESC, attempt DESC LIMIT $3`,
    [p.jobId, p.tenantId, p.limit, ...(p.after ? [p.after.scheduledFor, p.after.attempt] : [])],
  );
  return found.map(historyRow);
}

/** Every execution of a job with scheduledFor in [from, to], by scheduledFor (the run ledger). */
export async function inWindow(db: Db, p: { tenantId: string; jobId: string; from: number; to: number }): Promise<AttemptRow[]> {
  const found = await rows(
    db,
    "SELECT * FROM executions WHERE job_id = $1 AND tenant_id = $2 AND scheduled_for BETWEEN $3 AND $4 ORDER BY scheduled_for",
    [p.jobId, p.tenantId, p.from, p.to],
  );
  return found.map((e) => historyRow({ ...e, error: e.last_error, result: null }));
}

export async function deadLetters(
  db: Db,
  p: { tenantId: string; limit: number; after?: { deadAt: number; executionId: string } },
): Promise<DeadLetterRow[]> {
  const cursor = p.after ? "AND (dead_at, id) < ($3::bigint, $4::text)" : "";
  const found = await rows(db, `SELECT * FROM executions WHERE tenant_id = $1 AND state = 'DEAD' ${cursor} ORDER BY dead_at DESC, id DESC LIMIT $2`, [
    p.tenantId,
    p.limit,
    ...(p.after ? [p.after.deadAt, p.after.executionId] : []),
  ]);
  return found.map((e) => toDeadLetter(e, jsonb));
}

/** DEAD → READY now with a fresh retry budget (its one-off job is read as scheduled again: core/states.ts ONE_OFF_END) and the audit entry, in the caller's transaction. */
export async function replay(c: pg.PoolClient, p: { tenantId: string; executionId: string; now: number; audit: AuditEntry }) {
  const key = executionKey(p.executionId);
  if (!key) return null;
  const row = await one<{ job_id: string; pool: string }>(
    c,
    `UPDATE executions SET state = 'READY', ready_at = $1, dead_at = NULL, finished_at = NULL, attempt_base = attempt
     WHERE job_id = $2 AND scheduled_for = $3 AND tenant_id = $4 AND state = 'DEAD' RETURNING job_id, pool`,
    [p.now, key.jobId, key.scheduledFor, p.tenantId],
  );
  if (!row) return null;
  await appendAudit(c, p.audit);
  const replayed = (await attemptZeros(c, [p.executionId])).get(p.executionId)!;
  return { pool: row.pool, row: replayed };
}

export async function appendAudit(db: Db, a: AuditEntry): Promise<void> {
  await db.query({
    name: "audit_append",
    text: "INSERT INTO audit (tenant_id, at, actor, action, subject, details) VALUES ($1, $2, $3, $4, $5, $6::jsonb)",
    values: [a.tenantId, a.at, a.actor, a.action, a.subject, json(a.details)],
  });
}
