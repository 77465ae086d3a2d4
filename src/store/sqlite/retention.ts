// retentionPurge for SQLite: one bounded DELETE … WHERE id IN (SELECT …
// ORDER BY <time> LIMIT n) RETURNING * per table, inside the caller's
// transaction. The inner SELECTs read the retention indexes of migration 4
// (retention.test.ts checks the query plans), so a batch costs the rows it
// removes, however large the tables are.

import type Database from "better-sqlite3";
import type { PurgedRow, RetentionKind } from "../store.js";

type Row = Record<string, unknown>;

/** The main DELETE of each kind; @before and @limit bound it. Exported for the query-plan test. */
export const PURGE_SQL: Record<RetentionKind, string> = {
  executions: `DELETE FROM executions WHERE id IN (
      SELECT id FROM executions WHERE state IN ('SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED') AND finished_at < @before
      ORDER BY finished_at LIMIT @limit)
    RETURNING *`,
  // A job's executions are the id range ("<jobId>-", "<jobId>.") of the executions primary key (see index.ts).
  jobs: `DELETE FROM jobs WHERE id IN (
      SELECT j.id FROM jobs j WHERE j.state IN ('COMPLETED', 'DEAD', 'CANCELLED') AND j.updated_at < @before
        AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.id > j.id || '-' AND e.id < j.id || '.')
      ORDER BY j.updated_at LIMIT @limit)
    RETURNING *`,
  idempotency: `DELETE FROM idempotency_keys WHERE (tenant_id, key) IN (
      SELECT tenant_id, key FROM idempotency_keys WHERE created_at < @before ORDER BY created_at LIMIT @limit)
    RETURNING *`,
  audit: `DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < @before ORDER BY at LIMIT @limit) RETURNING *`,
};

/** What goes with the removed rows, by their ids: an execution's attempts, a job's due entry. */
export const PURGE_CHILDREN_SQL = {
  attempts: "DELETE FROM attempts WHERE execution_id IN (SELECT value FROM json_each(@ids)) RETURNING *",
  due: "DELETE FROM due WHERE job_id IN (SELECT value FROM json_each(@ids))",
} as const;

/** Columns stored as JSON text, parsed for the archive. */
const JSON_COLUMNS = new Set(["payload", "target", "result", "last_error", "error", "schedule", "retry", "details"]);

/** Runs one batch; the caller holds the transaction (so a throwing archive removes nothing). */
export function purgeBatch(
  q: (sql: string) => Database.Statement,
  p: { kind: RetentionKind; before: number; limit: number; archive?: (rows: PurgedRow[]) => void },
): { deleted: number } {
  const removed = q(PURGE_SQL[p.kind]).all({ before: p.before, limit: p.limit }) as Row[];
  if (removed.length === 0) return { deleted: 0 };
  const ids = JSON.stringify(removed.map((r) => r.id));
  let attempts = new Map<string, Row[]>();
  if (p.kind === "executions") attempts = groupBy(q(PURGE_CHILDREN_SQL.attempts).all({ ids }) as Row[], "execution_id");
  if (p.kind === "jobs") q(PURGE_CHILDREN_SQL.due).run({ ids });
  if (p.archive) {
    const rows = removed.map((r) => toPurged(p.kind, r, attempts.get(r.id as string)));
    p.archive(rows.sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1)));
  }
  return { deleted: removed.length };
}

function toPurged(kind: RetentionKind, r: Row, attempts: Row[] | undefined): PurgedRow {
  const row = parsed(r);
  if (kind === "executions") row.attempts = (attempts ?? []).map(parsed).sort((a, b) => (a.attempt as number) - (b.attempt as number));
  const common = { kind, tenantId: r.tenant_id as string, row };
  switch (kind) {
    case "executions":
      return { ...common, id: r.id as string, jobId: r.job_id as string, at: r.finished_at as number };
    case "jobs":
      return { ...common, id: r.id as string, jobId: r.id as string, at: r.updated_at as number };
    case "idempotency":
      return { ...common, id: r.key as string, jobId: r.job_id as string, at: r.created_at as number };
    case "audit":
      return { ...common, id: String(r.id), jobId: null, at: r.at as number };
  }
}

function parsed(r: Row): Row {
  const out: Row = {};
  for (const [column, value] of Object.entries(r)) {
    out[column] = JSON_COLUMNS.has(column) && typeof value === "string" ? JSON.parse(value) : value;
  }
  return out;
}

function groupBy(rows: Row[], column: string): Map<string, Row[]> {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const key = r[column] as string;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return groups;
}
