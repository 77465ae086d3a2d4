// Retention for SQLite. Each kind has one rule of what is due (DUE), which
// every statement applies: retentionExpired reads with it, and retentionPurge
// deletes with it, either the oldest due rows (DELETE … WHERE key IN (SELECT …
// ORDER BY <time> LIMIT n)) or the listed ones still due (DELETE … WHERE key
// IN (json_each(@keys)) AND <rule>: a compare-and-set, so a row that came back
// to life since it was read stays). The statements search the retention
// indexes of migration 4 or primary keys (retention.test.ts checks the query
// plans), so a batch costs the rows it touches, however large the tables are.

import type { PurgedRow, RetentionKind } from "../store.js";
import { endedOneOffRow, readsItsEnd, toPurged } from "../rows.js";
import type { Query, Row } from "./db.js";

/** A kind's table, key columns, time column and rule of what is due at @before. */
const DUE: Record<RetentionKind, { table: string; key: string[]; time: string; rule: string; returns?: string }> = {
  executions: {
    table: "executions",
    key: ["id"],
    returns: "id, job_id, once",
    time: "finished_at",
    rule: "state IN ('SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED') AND finished_at < @before",
  },
  // A job's executions are the id range ("<jobId>-", "<jobId>.") of the executions primary key (db.ts jobRange).
  jobs: {
    table: "jobs",
    key: ["id"],
    time: "updated_at",
    rule: `state IN ('COMPLETED', 'DEAD', 'CANCELLED') AND updated_at < @before
      AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.id > jobs.id || '-' AND e.id < jobs.id || '.')`,
  },
  idempotency: { table: "idempotency_keys", key: ["tenant_id", "key"], time: "created_at", rule: "created_at < @before" },
  audit: { table: "audit", key: ["id"], time: "at", rule: "at < @before" },
};

const byKind = (sql: (d: (typeof DUE)[RetentionKind]) => string) =>
  Object.fromEntries(Object.entries(DUE).map(([kind, d]) => [kind, sql(d)])) as Record<RetentionKind, string>;

/** The due rows, oldest first, bounded by @limit. Exported (as are the others) for the query-plan test. */
export const EXPIRED_SQL = byKind((d) => `SELECT * FROM ${d.table} WHERE ${d.rule} ORDER BY ${d.time} LIMIT @limit`);

/** Deletes the oldest due rows, bounded by @limit. */
export const PURGE_SQL = byKind((d) => {
  const key = d.key.join(", ");
  return `DELETE FROM ${d.table} WHERE (${key}) IN (SELECT ${key} FROM ${d.table} WHERE ${d.rule} ORDER BY ${d.time} LIMIT @limit) RETURNING ${d.returns ?? key}`;
});

/** Deletes the rows listed in @keys that are still due: a JSON array of ids, or of [tenantId, key] pairs. */
export const PURGE_ONLY_SQL = byKind((d) => {
  const listed = d.key.length === 1 ? "value" : d.key.map((_, i) => `value ->> ${i}`).join(", ");
  return `DELETE FROM ${d.table} WHERE (${d.key.join(", ")}) IN (SELECT ${listed} FROM json_each(@keys)) AND ${d.rule} RETURNING ${d.returns ?? d.key.join(", ")}`;
});

/** Of the jobs @jobIds, the one-offs whose every execution is in @ids: their state is read from those (core/states.ts ONE_OFF_END). */
const ENDED_WITH = `FROM jobs WHERE id IN (SELECT value FROM json_each(@jobIds)) AND ${readsItsEnd("jobs")}
    AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.id > jobs.id || '-' AND e.id < jobs.id || '.'
      AND e.id NOT IN (SELECT value FROM json_each(@ids)))`;

/**
 * What goes with rows, by their ids: an execution's attempts, and a one-off's
 * job with its last execution (read, for the archive, with the executions,
 * and removed before them); a job's due entry.
 */
export const CHILDREN_SQL = {
  attempts: "SELECT * FROM attempts WHERE execution_id IN (SELECT value FROM json_each(@ids))",
  deleteAttempts: "DELETE FROM attempts WHERE execution_id IN (SELECT value FROM json_each(@ids))",
  jobsEndedWith: `SELECT * ${ENDED_WITH}`,
  deleteJobsEndedWith: `DELETE ${ENDED_WITH}`,
  deleteDue: "DELETE FROM due WHERE job_id IN (SELECT value FROM json_each(@ids))",
} as const;

/** Columns stored as JSON text, parsed for the archive. */
const JSON_COLUMNS = new Set(["payload", "target", "result", "last_error", "error", "schedule", "retry", "details"]);

/**
 * Reads up to `limit` due rows, executions with their attempts, and after
 * them the one-off jobs that go with them; the caller holds a read
 * transaction (one snapshot).
 */
export function expiredRows(q: Query, p: { kind: RetentionKind; before: number; limit: number }): PurgedRow[] {
  const rows = q(EXPIRED_SQL[p.kind]).all({ before: p.before, limit: p.limit }) as Row[];
  let attempts = new Map<string, Row[]>();
  let jobs: Row[] = [];
  if (p.kind === "executions" && rows.length > 0) {
    const ids = JSON.stringify(rows.map((r) => r.id));
    attempts = groupBy(q(CHILDREN_SQL.attempts).all({ ids }) as Row[], "execution_id");
    jobs = q(CHILDREN_SQL.jobsEndedWith).all({ ids, jobIds: JSON.stringify(oneOffJobIds(rows)) }) as Row[];
  }
  const ordered = (a: PurgedRow, b: PurgedRow) => a.at - b.at || (a.id < b.id ? -1 : 1);
  return [
    ...rows.map((r) => purged(p.kind, r, attempts.get(r.id as string))).sort(ordered),
    ...jobs.map((j) => purged("jobs", endedOneOffRow(j, rows), undefined)).sort(ordered),
  ];
}

/** Deletes one batch with what goes with it; the caller holds the write transaction. */
export function purgeBatch(
  q: Query,
  p: { kind: RetentionKind; before: number; limit: number; only?: readonly { tenantId: string; id: string }[] },
): { deleted: number; jobs?: number } {
  let removed: Row[];
  if (p.only === undefined) {
    removed = q(PURGE_SQL[p.kind]).all({ before: p.before, limit: p.limit }) as Row[];
  } else {
    const only = p.only.slice(0, p.limit);
    if (only.length === 0) return { deleted: 0 };
    const keys = p.kind === "idempotency" ? only.map((r) => [r.tenantId, r.id]) : only.map((r) => r.id);
    removed = q(PURGE_ONLY_SQL[p.kind]).all({ before: p.before, keys: JSON.stringify(keys) }) as Row[];
  }
  if (removed.length === 0) return { deleted: 0 };
  const ids = JSON.stringify(removed.map((r) => r.id));
  let jobs: number | undefined;
  if (p.kind === "executions") {
    q(CHILDREN_SQL.deleteAttempts).run({ ids });
    jobs = q(CHILDREN_SQL.deleteJobsEndedWith).run({ ids, jobIds: JSON.stringify(oneOffJobIds(removed)) }).changes;
  }
  if (p.kind === "jobs") q(CHILDREN_SQL.deleteDue).run({ ids });
  return jobs ? { deleted: removed.length, jobs } : { deleted: removed.length };
}

/** The jobs of one-off executions among rows (with job_id and once). */
const oneOffJobIds = (rows: Row[]): string[] => [...new Set(rows.filter((r) => r.once === 1).map((r) => r.job_id as string))];

/** A removed row as the archive sees it: its JSON columns parsed, an execution with its attempts in order. */
function purged(kind: RetentionKind, r: Row, attempts: Row[] | undefined): PurgedRow {
  const row = parsed(r);
  if (kind === "executions") row.attempts = (attempts ?? []).map(parsed).sort((a, b) => (a.attempt as number) - (b.attempt as number));
  return toPurged(kind, row);
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
