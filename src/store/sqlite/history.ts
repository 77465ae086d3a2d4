// Executions as history on SQLite: a job's attempts, the run ledger's
// window, dead letters and their replay, and the audit trail's appends. A
// job's executions are one range of the executions primary key (db.ts
// jobRange).

import type { AttemptRow, AuditEntry, DeadLetterRow } from "../store.js";
import { toAttemptRow, toDeadLetter } from "../rows.js";
import { jobRange, json, OF_JOB, OF_JOB_NAMED, parse, type Query, type Row } from "./db.js";

/** An execution waiting for a grant whose last one left no attempt (handed back unused): history shows it as it waits. */
const WAITING_UNRECORDED =
  "e.state IN ('READY', 'PENDING', 'PAUSED') AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.execution_id = e.id AND a.attempt = e.attempt)";

/** A history row, its JSON columns parsed from text. */
const historyRow = (r: Row): AttemptRow => toAttemptRow(r, parse);

/** An execution as it waits for its next attempt (trigger, backfill, replay). */
export function attemptZero(q: Query, executionId: string): AttemptRow {
  const e = q("SELECT * FROM executions WHERE id = ?").get(executionId) as Row;
  return historyRow({ ...e, started_at: null, finished_at: null, error: null, worker_id: null, result: null });
}

/** Every execution of a job with scheduledFor in [from, to], by scheduledFor (the run ledger). */
export function inWindow(q: Query, p: { tenantId: string; jobId: string; from: number; to: number }): AttemptRow[] {
  const rows = q(`SELECT * FROM executions WHERE ${OF_JOB} AND tenant_id = ? AND scheduled_for BETWEEN ? AND ? ORDER BY scheduled_for`).all(
    ...jobRange(p.jobId),
    p.tenantId,
    p.from,
    p.to,
  ) as Row[];
  return rows.map((e) => historyRow({ ...e, error: e.last_error, result: null }));
}

/** Newest first by (scheduledFor, attempt): attempts that ended, the running or succeeded one, and attempt 0 of those never tried. */
export function history(
  q: Query,
  p: { tenantId: string; jobId: string; limit: number; after?: { scheduledFor: number; attempt: number } },
): AttemptRow[] {
  const cursor = p.after ? "AND (scheduled_for < @sf OR (scheduled_for = @sf AND attempt < @att))" : "";
  const rows = q(
    `SELECT * FROM (
         SELECT e.id, e.job_id, e.scheduled_for, a.attempt, a.state, e.ready_at, e.dispatched_at, e.dispatched_by,
                a.started_at, a.finished_at, a.error, a.worker_id, NULL AS result, a.throttled_ms
         FROM executions e JOIN attempts a ON a.execution_id = e.id
         WHERE ${OF_JOB_NAMED} AND e.tenant_id = @tenant
         UNION ALL
         SELECT e.id, e.job_id, e.scheduled_for, e.attempt, e.state, e.ready_at, e.dispatched_at, e.dispatched_by,
                e.started_at, e.finished_at, NULL, e.worker_id, e.result, e.throttled_ms
         FROM executions e WHERE ${OF_JOB_NAMED} AND e.tenant_id = @tenant AND e.state IN ('RUNNING', 'SUCCEEDED')
         UNION ALL
         SELECT e.id, e.job_id, e.scheduled_for, e.attempt, e.state, e.ready_at, e.dispatched_at, e.dispatched_by,
                NULL, e.finished_at, CASE WHEN e.state IN ('SKIPPED', 'CANCELLED') THEN e.last_error END, NULL, NULL, NULL
         FROM executions e WHERE ${OF_JOB_NAMED} AND e.tenant_id = @tenant AND (e.attempt = 0 OR (${WAITING_UNRECORDED}))
       ) WHERE 1 = 1 ${cursor}
       ORDER BY scheduled_for DESC, attempt DESC LIMIT @limit`,
  ).all({
    from: jobRange(p.jobId)[0],
    to: jobRange(p.jobId)[1],
    tenant: p.tenantId,
    sf: p.after?.scheduledFor ?? null,
    att: p.after?.attempt ?? null,
    limit: p.limit,
  }) as Row[];
  return rows.map(historyRow);
}

export function deadLetters(q: Query, p: { tenantId: string; limit: number; after?: { deadAt: number; executionId: string } }): DeadLetterRow[] {
  const cursor = p.after ? "AND (e.dead_at < @deadAt OR (e.dead_at = @deadAt AND e.id < @id))" : "";
  const rows = q(
    `SELECT e.* FROM executions e WHERE e.tenant_id = @tenant AND e.state = 'DEAD' ${cursor}
       ORDER BY e.dead_at DESC, e.id DESC LIMIT @limit`,
  ).all({ tenant: p.tenantId, deadAt: p.after?.deadAt ?? null, id: p.after?.executionId ?? null, limit: p.limit }) as Row[];
  return rows.map((e) => toDeadLetter(e, parse));
}

/** DEAD → READY now with a fresh retry budget (its one-off job is read as scheduled again: core/states.ts ONE_OFF_END) and the audit entry, in the caller's transaction. */
export function replay(q: Query, p: { tenantId: string; executionId: string; now: number; audit: AuditEntry }) {
  const row = q(
    `UPDATE executions SET state = 'READY', ready_at = ?, dead_at = NULL, finished_at = NULL, attempt_base = attempt
         WHERE id = ? AND tenant_id = ? AND state = 'DEAD' RETURNING job_id, pool`,
  ).get(p.now, p.executionId, p.tenantId) as Row | undefined;
  if (!row) return null;
  appendAudit(q, p.audit);
  return { pool: row.pool as string, row: attemptZero(q, p.executionId) };
}

export function appendAudit(q: Query, a: AuditEntry): void {
  q("INSERT INTO audit (tenant_id, at, actor, action, subject, details) VALUES (?, ?, ?, ?, ?, ?)").run(
    a.tenantId,
    a.at,
    a.actor,
    a.action,
    a.subject,
    json(a.details),
  );
}
