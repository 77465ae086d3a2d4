// Retention for PostgreSQL. Each kind has one rule of what is due (DUE),
// which every statement applies: retentionExpired reads with it, and
// retentionPurge deletes with it, either the oldest due rows or the listed
// ones still due. The listed delete is a compare-and-set: the rule is in its
// WHERE, and PostgreSQL re-checks it on a row another transaction changed
// meanwhile, so a dead letter replayed since it was read stays. Each batch
// reads a retention index of migration 1 in time order, or a primary key.

import type { PurgedRow, RetentionKind } from "../store.js";
import { endedOneOffRow, readsItsEnd, toPurged } from "../rows.js";
import { type Db, executionKey, rows } from "./db.js";

/** A kind's table, key columns, time column and rule of what is due at $1 (before). */
const DUE: Record<RetentionKind, { table: string; key: string[]; time: string; rule: string; returns?: string }> = {
  executions: {
    table: "executions",
    key: ["job_id", "scheduled_for"],
    returns: "job_id, scheduled_for, once",
    time: "finished_at",
    rule: "state IN ('SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED') AND finished_at < $1",
  },
  jobs: {
    table: "jobs",
    key: ["id"],
    time: "updated_at",
    rule: `state IN ('COMPLETED', 'DEAD', 'CANCELLED') AND updated_at < $1
      AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.job_id = jobs.id)`,
  },
  idempotency: { table: "idempotency_keys", key: ["tenant_id", "key"], time: "created_at", rule: "created_at < $1" },
  audit: { table: "audit", key: ["id"], time: "at", rule: "at < $1" },
};

/** An execution's attempts as stored, oldest first, as one jsonb array. */
const ATTEMPTS_OF_E = `coalesce((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.attempt) FROM attempts a
  WHERE a.job_id = executions.job_id AND a.scheduled_for = executions.scheduled_for), '[]'::jsonb) AS attempts`;

/** Key columns of the listed rows, as unnest arrays ($2, $3): typed per kind. */
const LISTED: Record<RetentionKind, string> = {
  executions: "unnest($2::text[], $3::bigint[])",
  jobs: "unnest($2::text[])",
  idempotency: "unnest($2::text[], $3::text[])",
  audit: "unnest($2::bigint[])",
};

/**
 * Of the jobs of one-off executions in `gone` (job_id, scheduled_for, once),
 * those whose every execution is there: their state is read from them
 * (core/states.ts ONE_OFF_END), so they go with them.
 */
const endedWith = (gone: string) => `FROM jobs j WHERE j.id IN (SELECT job_id FROM ${gone} WHERE once) AND ${readsItsEnd("j")}
  AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.job_id = j.id
    AND NOT EXISTS (SELECT 1 FROM ${gone} g WHERE g.job_id = e.job_id AND g.scheduled_for = e.scheduled_for))`;

/**
 * What goes with removed rows: an execution's attempts, and a one-off's job
 * with the last of its executions (the statement's snapshot still sees the
 * removed executions, so endedWith leaves them out by key); a job's due entry.
 */
const CHILDREN: Partial<Record<RetentionKind, string[]>> = {
  executions: [
    "DELETE FROM attempts a USING gone WHERE a.job_id = gone.job_id AND a.scheduled_for = gone.scheduled_for",
    `DELETE ${endedWith("gone")} RETURNING 1`,
  ],
  jobs: ["DELETE FROM due d USING gone WHERE d.job_id = gone.id"],
};

/** The one-off jobs that go with the executions read ($1, $2: their keys; $3: the ones of one-offs), as the archive takes them. */
const JOBS_ENDED_WITH = `WITH read AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bool[]) AS g(job_id, scheduled_for, once))
  SELECT j.* ${endedWith("read")} ORDER BY j.updated_at, j.id`;

const byKind = (sql: (kind: RetentionKind) => string) =>
  Object.fromEntries(Object.keys(DUE).map((kind) => [kind, sql(kind as RetentionKind)])) as Record<RetentionKind, string>;

/** Removes the rows `remove` (a DELETE … RETURNING the key) answers, with what goes with them; answers their count. */
const withChildren = (kind: RetentionKind, remove: string): string => {
  const children = (CHILDREN[kind] ?? []).map((sql, i) => `, children_${i} AS (${sql})`).join("");
  const jobs = kind === "executions" ? ", (SELECT count(*) FROM children_1)::int AS jobs" : "";
  return `WITH gone AS (${remove})${children} SELECT count(*)::int AS n${jobs} FROM gone`;
};

/** The due rows at $1, oldest first, at most $2; executions with their attempts. Exported (as are the others) for the plan test. */
export const EXPIRED_SQL = byKind((kind) => {
  const d = DUE[kind];
  const extra = kind === "executions" ? `, ${ATTEMPTS_OF_E}` : "";
  return `SELECT *${extra} FROM ${d.table} WHERE ${d.rule} ORDER BY ${d.time}, ${d.key.join(", ")} LIMIT $2`;
});

/** Deletes the oldest due rows at $1, at most $2 (rows another purge holds are left to it). */
export const PURGE_SQL = byKind((kind) => {
  const d = DUE[kind];
  const key = d.key.join(", ");
  return withChildren(
    kind,
    `DELETE FROM ${d.table} WHERE (${key}) IN (
      SELECT ${key} FROM ${d.table} WHERE ${d.rule} ORDER BY ${d.time} LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING ${d.returns ?? key}`,
  );
});

/** Deletes the listed rows ($2, $3: key columns) that are still due at $1. */
export const PURGE_ONLY_SQL = byKind((kind) => {
  const d = DUE[kind];
  const key = d.key.join(", ");
  return withChildren(kind, `DELETE FROM ${d.table} WHERE (${key}) IN (SELECT * FROM ${LISTED[kind]}) AND ${d.rule} RETURNING ${d.returns ?? key}`);
});

/**
 * Reads up to `limit` due rows, oldest first, in one statement (one
 * snapshot); for executions, then the one-off jobs that go with them.
 */
export async function expiredRows(db: Db, p: { kind: RetentionKind; before: number; limit: number }): Promise<PurgedRow[]> {
  const found = await rows(db, EXPIRED_SQL[p.kind], [p.before, p.limit]);
  const due = found.map((r) => toPurged(p.kind, r)).sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1));
  if (p.kind !== "executions" || found.length === 0) return due;
  const jobs = await rows(db, JOBS_ENDED_WITH, [found.map((r) => r.job_id), found.map((r) => r.scheduled_for), found.map((r) => r.once)]);
  return [...due, ...jobs.map((j) => toPurged("jobs", endedOneOffRow(j, found)))];
}

/** Deletes one batch with what goes with it, in one statement; answers how many rows of the kind went. */
export async function purgeBatch(
  db: Db,
  p: { kind: RetentionKind; before: number; limit: number; only?: readonly { tenantId: string; id: string }[] },
): Promise<{ deleted: number; jobs?: number }> {
  let counted: { n: number; jobs?: number } | undefined;
  if (p.only === undefined) {
    counted = (await rows<{ n: number; jobs?: number }>(db, PURGE_SQL[p.kind], [p.before, p.limit]))[0];
  } else {
    const listed = listedKeys(p.kind, p.only.slice(0, p.limit));
    if (listed[0]!.length === 0) return { deleted: 0 };
    counted = (await rows<{ n: number; jobs?: number }>(db, PURGE_ONLY_SQL[p.kind], [p.before, ...listed]))[0];
  }
  const deleted = counted?.n ?? 0;
  return counted?.jobs ? { deleted, jobs: counted.jobs } : { deleted };
}

/** The listed rows' keys as columns; ids that name no row of the kind are left out. */
function listedKeys(kind: RetentionKind, only: readonly { tenantId: string; id: string }[]): unknown[][] {
  switch (kind) {
    case "executions": {
      const keys = only.flatMap((r) => executionKey(r.id) ?? []);
      return [keys.map((k) => k.jobId), keys.map((k) => k.scheduledFor)];
    }
    case "idempotency":
      return [only.map((r) => r.tenantId), only.map((r) => r.id)];
    case "audit":
      return [only.map((r) => Number(r.id)).filter(Number.isSafeInteger)];
    case "jobs":
      return [only.map((r) => r.id)];
  }
}
