// Jobs and the due index on PostgreSQL: batch creation with idempotency
// keys, reads, and the version compare-and-sets (jobTransition, jobUpdate).
//
// Lock order, kept by every transaction that takes more than one of them, so
// that concurrent calls wait for each other instead of deadlocking: a job's
// due row, then its executions, then the job row.

import type pg from "pg";
import type { JobState } from "@duetime/sdk/contract";
import { NOT_STARTED } from "../../core/states.js";
import type { JobCreateOutcome, JobRecord, NewJob, NextOccurrence, PendingChange, PendingReplace, StoreParams } from "../store.js";
import { poolOf } from "../../core/targets.js";
import { cancelInFlight, NOT_STARTED_SQL } from "./changes.js";
import { jobStateSql, jsonb, KIND_FILTER, ONE_OFF_ENDED, toJob } from "../rows.js";
import { type Db, json, one, Rollback, type Row, rows } from "./db.js";

/** A jobs row as its record. */
const jobRecord = (r: Row): JobRecord => toJob(r, jsonb);
import { insertExecutions, type NewExecution } from "./dispatch.js";

/** The first ended one-off execution of the job aliased `j` (core/states.ts ONE_OFF_END reads its state), by the job's primary-key range. */
const firstEnded = (j: string) => `SELECT x.state, x.finished_at FROM executions x
    WHERE ${j}.kind = 'once' AND x.job_id = ${j}.id AND x.once AND x.state || '' IN (${ONE_OFF_ENDED}) ORDER BY x.finished_at LIMIT 1`;

/**
 * A job with its next occurrence (store.ts JobRecord.nextRunAt): a recurring
 * job's due entry; a one-off's pending execution that is ready first.
 */
// A one-off's next run is read by its job's primary-key range. Its state is
// compared as an expression so that no partial index of READY rows matches:
// with statistics not yet analysed after a bulk load, the planner chose a
// bitmap of every READY row for each job (22 ms a job, 1.1 s a page of 50
// with a million one-offs) over the job's own range (0.6 ms the page).
// Its state is read over its first ended one-off execution f (rows.ts
// jobStateSql), found the same way.
const JOB_WITH_NEXT = `SELECT j.*, coalesce(d.scheduled_for, p.scheduled_for) AS next_run_at, coalesce(d.due_at, p.ready_at) AS next_due_at,
    ${jobStateSql()} AS job_state, f.finished_at AS ended_at
  FROM jobs j LEFT JOIN due d ON d.job_id = j.id
  LEFT JOIN LATERAL (
    SELECT x.scheduled_for, x.ready_at FROM executions x
    WHERE j.kind = 'once' AND x.job_id = j.id AND x.state || '' = '${NOT_STARTED.waiting}' AND x.attempt = ${NOT_STARTED.attempt}
    ORDER BY x.ready_at LIMIT 1) p ON true
  LEFT JOIN LATERAL (${firstEnded("j")}) f ON true`;

export async function getJob(db: Db, tenantId: string, jobId: string): Promise<JobRecord | null> {
  const row = await one(db, `${JOB_WITH_NEXT} WHERE j.id = $1 AND j.tenant_id = $2`, [jobId, tenantId], "job_get");
  return row ? jobRecord(row) : null;
}

async function jobsById(db: Db, jobIds: readonly string[]): Promise<Map<string, JobRecord>> {
  if (jobIds.length === 0) return new Map();
  const found = await rows(db, `${JOB_WITH_NEXT} WHERE j.id = ANY($1::text[])`, [jobIds]);
  return new Map(found.map((r) => [r.id as string, jobRecord(r)]));
}

export async function listJobs(db: Db, p: StoreParams<"jobList">): Promise<JobRecord[]> {
  const where = ["j.tenant_id = $1"];
  const values: unknown[] = [p.tenantId, p.limit];
  const bind = (value: unknown): string => `$${values.push(value)}`;
  if (p.state) where.push(`${jobStateSql()} = ${bind(p.state)}`);
  if (p.name) where.push(`j.name = ${bind(p.name)}`);
  if (p.pool) where.push(`j.pool = ${bind(p.pool)}`);
  if (p.kind) where.push(KIND_FILTER[p.kind]);
  if (p.after) where.push(`(j.created_at, j.id) < (${bind(p.after.createdAt)}::bigint, ${bind(p.after.jobId)}::text)`);
  const found = await rows(db, `${JOB_WITH_NEXT} WHERE ${where.join(" AND ")} ORDER BY j.created_at DESC, j.id DESC LIMIT $2`, values);
  return found.map(jobRecord);
}

/**
 * Creates jobs in one transaction, a handful of statements for the whole
 * batch: the jobs, the due entries of recurring ones, the executions of
 * one-offs (dispatched by nodeId at now). Idempotency: the first item of each key claims it with INSERT … ON
 * CONFLICT DO NOTHING (keys in one order, so two batches cannot deadlock);
 * a key another transaction holds uncommitted is waited for, then read as it
 * committed. Every other item of a key answers as the key does: existing
 * with the same request hash, idempotency_mismatch with another.
 */
export async function createJobs(c: pg.PoolClient, jobs: NewJob[], nodeId: string, now: number): Promise<JobCreateOutcome[]> {
  if (jobs.length === 0) return [];
  const keyed = jobs.flatMap((nj, i) => (nj.idempotency ? [{ i, tenantId: nj.job.tenantId, ...nj.idempotency }] : []));
  // A key whose job is gone (retention removed it first) no longer answers for a request with its hash.
  if (keyed.length > 0) {
    await c.query({
      name: "idempotency_drop_orphans",
      text: `DELETE FROM idempotency_keys k USING unnest($1::text[], $2::text[], $3::text[]) AS x(tenant_id, key, request_hash)
       WHERE k.tenant_id = x.tenant_id AND k.key = x.key AND k.request_hash = x.request_hash
         AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = k.job_id)`,
      values: [keyed.map((k) => k.tenantId), keyed.map((k) => k.key), keyed.map((k) => k.requestHash)],
    });
  }
  const keyOf = (k: { tenantId: string; key: string }): string => JSON.stringify([k.tenantId, k.key]);
  const claims = new Map<string, (typeof keyed)[number]>();
  for (const k of keyed) if (!claims.has(keyOf(k))) claims.set(keyOf(k), k);
  const ordered = [...claims.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, k]) => k);
  const won = new Set(
    (
      await rows<{ tenant_id: string; key: string }>(
        c,
        `INSERT INTO idempotency_keys (tenant_id, key, request_hash, job_id, created_at)
         SELECT *, $5::bigint FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
         ON CONFLICT (tenant_id, key) DO NOTHING RETURNING tenant_id, key`,
        [ordered.map((k) => k.tenantId), ordered.map((k) => k.key), ordered.map((k) => k.requestHash), ordered.map((k) => jobs[k.i]!.job.jobId), now],
        "idempotency_claim",
      )
    ).map((r) => keyOf({ tenantId: r.tenant_id, key: r.key })),
  );
  // Keys held by another job: read now, after the insert waited for whoever held them.
  const held = ordered.filter((k) => !won.has(keyOf(k)));
  const holders = new Map<string, { hash: string; job: JobRecord | null }>();
  if (held.length > 0) {
    const found = await rows<{ tenant_id: string; key: string; request_hash: string; job_id: string }>(
      c,
      `SELECT k.tenant_id, k.key, k.request_hash, k.job_id
       FROM idempotency_keys k JOIN unnest($1::text[], $2::text[]) AS x(tenant_id, key) ON k.tenant_id = x.tenant_id AND k.key = x.key`,
      [held.map((k) => k.tenantId), held.map((k) => k.key)],
      "idempotency_held",
    );
    const owners = await jobsById(
      c,
      found.map((r) => r.job_id),
    );
    for (const r of found) holders.set(keyOf({ tenantId: r.tenant_id, key: r.key }), { hash: r.request_hash, job: owners.get(r.job_id) ?? null });
  }

  const created: NewJob[] = [];
  const outcomes = jobs.map((nj, i): JobCreateOutcome => {
    const key = nj.idempotency ? keyOf({ tenantId: nj.job.tenantId, key: nj.idempotency.key }) : null;
    if (key === null || (won.has(key) && claims.get(key)!.i === i)) {
      const job = record(nj);
      if (key) holders.set(key, { hash: nj.idempotency!.requestHash, job });
      created.push(nj);
      return { status: "created", job };
    }
    const holder = holders.get(key);
    if (holder && holder.hash === nj.idempotency!.requestHash && holder.job) return { status: "existing", job: holder.job };
    // Another request's key; or one whose job retention removed while this batch ran.
    return { status: "idempotency_mismatch" };
  });
  await insertJobs(c, created);
  const executions = created.flatMap((nj) => (nj.execution ? [pendingExecution(nj.job.jobId, nj.execution, false)] : []));
  await insertExecutions(c, executions, now, nodeId, { anyJobState: true });
  return outcomes;
}

/** The record a created job answers with: version 1, as it will read back. */
function record({ job, due, execution }: NewJob): JobRecord {
  const next = due ?? execution ?? null;
  return { ...job, version: 1, updatedAt: job.createdAt, nextRunAt: next?.scheduledFor ?? null, nextDueAt: next?.dueAt ?? null };
}

/** A one-off's pending execution (store.ts NewJob.execution), held when its job is paused. */
function pendingExecution(jobId: string, at: NextOccurrence, held: boolean): NewExecution {
  const state = held ? NOT_STARTED.held : NOT_STARTED.waiting;
  return { jobId, scheduledFor: at.scheduledFor, readyAt: at.dueAt, state, lastError: null, whenIdle: false };
}

async function insertJobs(c: pg.PoolClient, created: NewJob[]): Promise<void> {
  if (created.length === 0) return;
  const col = <T>(f: (nj: NewJob) => T): T[] => created.map(f);
  await c.query({
    name: "jobs_insert",
    text: `INSERT INTO jobs (id, tenant_id, shard, kind, name, state, target, pool, payload, schedule, retry,
       timeout_seconds, priority, version, created_at, updated_at, trace_parent, mode)
     SELECT id, tenant_id, shard, kind, name, state, target::jsonb, pool, payload::jsonb, schedule::jsonb, retry::jsonb,
       timeout_seconds, priority, 1, created_at, created_at, trace_parent, mode
     FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
       $10::text[], $11::text[], $12::float8[], $13::int[], $14::bigint[], $15::text[], $16::text[])
       AS x(id, tenant_id, shard, kind, name, state, target, pool, payload, schedule, retry, timeout_seconds, priority, created_at, trace_parent, mode)`,
    values: [
      col((nj) => nj.job.jobId),
      col((nj) => nj.job.tenantId),
      col((nj) => nj.job.shard),
      col((nj) => nj.job.kind),
      col((nj) => nj.job.name),
      col((nj) => nj.job.state),
      col((nj) => json(nj.job.target)),
      col((nj) => poolOf(nj.job.target)),
      col((nj) => json(nj.job.payload)),
      col((nj) => json(nj.job.schedule)),
      col((nj) => json(nj.job.retry)),
      col((nj) => nj.job.timeoutSeconds),
      col((nj) => nj.job.priority),
      col((nj) => nj.job.createdAt),
      col((nj) => nj.traceParent ?? null),
      col((nj) => nj.job.mode),
    ],
  });
  const due = created.filter((nj) => nj.due !== null);
  if (due.length > 0) {
    await c.query({
      name: "due_insert",
      text: `INSERT INTO due (job_id, tenant_id, shard, scheduled_for, due_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::bigint[])`,
      values: [
        due.map((nj) => nj.job.jobId),
        due.map((nj) => nj.job.tenantId),
        due.map((nj) => nj.job.shard),
        due.map((nj) => nj.due!.scheduledFor),
        due.map((nj) => nj.due!.dueAt),
      ],
    });
  }
}

/**
 * Locks the job's due row, if any, before anything else of the job: a
 * dispatch consuming it meanwhile commits first (and what it inserted is seen
 * by the statements that follow), or waits for this transaction and then
 * sees the job as it leaves it.
 */
async function lockDue(c: pg.PoolClient, jobId: string): Promise<void> {
  await c.query({ name: "due_lock", text: "SELECT 1 FROM due WHERE job_id = $1 FOR UPDATE", values: [jobId] });
}

/**
 * Locks the job's executions not yet ended, after its due row (the lock
 * order): a one-off's end is not written on its job (core/states.ts
 * ONE_OFF_END), so a change of the job waits for a completion in flight and
 * then sees its end (NOT_ENDED refuses it), or the completion waits and
 * then drops what this change left not started.
 */
async function lockLive(c: pg.PoolClient, jobId: string): Promise<void> {
  await c.query({ name: "live_lock", text: "SELECT 1 FROM executions WHERE job_id = $1 AND finished_at IS NULL FOR UPDATE", values: [jobId] });
}

/** A compare-and-set of a jobs row's write: the job is not a one-off that ended (read from its execution, which moves without the job). */
const NOT_ENDED = `NOT EXISTS (${firstEnded("jobs")})`;

export async function transitionJob(c: pg.PoolClient, p: StoreParams<"jobTransition">): Promise<JobRecord | null> {
  await lockDue(c, p.jobId);
  await lockLive(c, p.jobId);
  // Executions before the job row (the lock order); undone below when the version moved.
  if (p.cancelExecutions) await cancelInFlight(c, [p.jobId], p.now, null);
  if (p.pending) await changePending(c, p.jobId, p.pending);
  const row = await one<{ shard: number }>(
    c,
    `UPDATE jobs SET state = $1, version = version + 1, updated_at = $2
     WHERE id = $3 AND tenant_id = $4 AND version = $5 AND ${NOT_ENDED} RETURNING shard`,
    [p.state, p.now, p.jobId, p.tenantId, p.fromVersion],
    "job_transition",
  );
  if (!row) throw new Rollback(null);
  await replaceDue(c, p.jobId, p.tenantId, row.shard, p.due);
  return getJob(c, p.tenantId, p.jobId);
}

export async function updateJob(c: pg.PoolClient, p: StoreParams<"jobUpdate">): Promise<JobRecord | null> {
  await lockDue(c, p.jobId);
  await lockLive(c, p.jobId);
  const f = p.fields;
  const row = await one<{ shard: number; state: JobState }>(
    c,
    `UPDATE jobs SET kind = $1, name = $2, target = $3::jsonb, pool = $4, payload = $5::jsonb, schedule = $6::jsonb,
       retry = $7::jsonb, timeout_seconds = $8, priority = $9, version = version + 1, updated_at = $10, mode = $14
     WHERE id = $11 AND tenant_id = $12 AND version = $13 AND ${NOT_ENDED} RETURNING shard, state`,
    [
      f.kind,
      f.name,
      json(f.target),
      poolOf(f.target),
      json(f.payload),
      json(f.schedule),
      json(f.retry),
      f.timeoutSeconds,
      f.priority,
      p.now,
      p.jobId,
      p.tenantId,
      p.fromVersion,
      f.mode,
    ],
  );
  if (!row) return null;
  await replaceDue(c, p.jobId, p.tenantId, row.shard, p.due);
  if (p.pending) await replacePending(c, p.jobId, row.state, p.pending, p.now, p.nodeId);
  return getJob(c, p.tenantId, p.jobId);
}

/**
 * Holds or releases a one-off's pending execution, a compare-and-set on its
 * state: a lease that took it first wins (the hold then finds it RUNNING),
 * and one that comes after finds it PAUSED.
 */
async function changePending(c: pg.PoolClient, jobId: string, change: PendingChange): Promise<void> {
  if ("hold" in change) {
    await c.query({
      name: "pending_hold",
      text: `UPDATE executions SET state = '${NOT_STARTED.held}'
             WHERE job_id = $1 AND scheduled_for = $2 AND state = '${NOT_STARTED.waiting}' AND attempt = ${NOT_STARTED.attempt}`,
      values: [jobId, change.hold],
    });
    return;
  }
  await c.query({
    name: "pending_release",
    text: `UPDATE executions SET state = '${NOT_STARTED.waiting}', ready_at = $3 WHERE job_id = $1 AND scheduled_for = $2 AND state = '${NOT_STARTED.held}'`,
    values: [jobId, change.release.scheduledFor, change.release.readyAt],
  });
}

/**
 * Replaces a one-off's pending execution (store.ts PendingReplace): removing
 * the old one while it has not started is the compare-and-set; the new one is
 * built from the job as it now is, held when the job is paused. It only ever
 * touches a row no attempt holds, so it may come after the job row.
 */
async function replacePending(c: pg.PoolClient, jobId: string, jobState: JobState, r: PendingReplace, now: number, nodeId: string): Promise<void> {
  if (r.from !== null) {
    const removed = await c.query(`DELETE FROM executions WHERE job_id = $1 AND scheduled_for = $2 AND ${NOT_STARTED_SQL}`, [jobId, r.from]);
    if (removed.rowCount === 0) return;
  }
  if (r.to) await insertExecutions(c, [pendingExecution(jobId, r.to, jobState === NOT_STARTED.held)], now, nodeId, { anyJobState: true });
}

async function replaceDue(c: pg.PoolClient, jobId: string, tenantId: string, shard: number, due: NextOccurrence | null | "keep"): Promise<void> {
  if (due === "keep") return;
  if (due === null) {
    await c.query({ name: "due_delete", text: "DELETE FROM due WHERE job_id = $1", values: [jobId] });
    return;
  }
  await c.query({
    name: "due_put",
    text: `INSERT INTO due (job_id, tenant_id, shard, scheduled_for, due_at) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (job_id) DO UPDATE SET scheduled_for = excluded.scheduled_for, due_at = excluded.due_at`,
    values: [jobId, tenantId, shard, due.scheduledFor, due.dueAt],
  });
}
