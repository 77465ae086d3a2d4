// PostgreSQL schema, as numbered migrations applied in order at open, in the
// store's own schema (search_path). Never edit a migration that has shipped;
// add the next one. (Migration 1 was edited in place to partition history:
// nothing had shipped on PostgreSQL yet.)
//
// Times are bigint epoch ms; JSON is jsonb. Executions and their attempts are
// keyed by (job_id, scheduled_for[, attempt]): the execution id is a function
// of that pair (core/ids.ts), lookups by id use it, and both tables are
// partitioned by range of scheduled_for (partitions.ts creates and drops the
// ranges; the DEFAULT partition takes a row no range holds, so no insert fails).

import type pg from "pg";
import type { MigrateResult } from "../store.js";
import { DB_NOW, ident, transaction } from "./db.js";
import { createAhead } from "./partitions.js";

export const MIGRATIONS: readonly { version: number; sql: string }[] = [
  {
    version: 1,
    sql: `
CREATE TABLE jobs (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  shard           integer NOT NULL,
  kind            text NOT NULL,              -- once | cron
  name            text NOT NULL,
  state           text NOT NULL,
  target          jsonb NOT NULL,
  pool            text NOT NULL,              -- queue pool, or $http
  payload         jsonb,
  schedule        jsonb NOT NULL,             -- the effective schedule
  retry           jsonb NOT NULL,
  timeout_seconds double precision NOT NULL, -- the API takes fractions
  priority        integer NOT NULL,
  version         integer NOT NULL,
  created_at      bigint NOT NULL,
  updated_at      bigint NOT NULL
);
CREATE INDEX jobs_by_tenant_created ON jobs (tenant_id, created_at DESC, id DESC);
CREATE INDEX jobs_ended ON jobs (updated_at) WHERE state IN ('COMPLETED', 'DEAD', 'CANCELLED');

-- The due index: the next occurrence of every job that has one. A node loads
-- the shards it owns in due order; the shard filter is read from the index.
CREATE TABLE due (
  job_id        text PRIMARY KEY,
  tenant_id     text NOT NULL,
  shard         integer NOT NULL,
  scheduled_for bigint NOT NULL,
  due_at        bigint NOT NULL
);
CREATE INDEX due_by_time ON due (due_at, shard);

CREATE TABLE idempotency_keys (
  tenant_id    text NOT NULL,
  key          text NOT NULL,
  request_hash text NOT NULL,
  job_id       text NOT NULL,
  created_at   bigint NOT NULL,
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);

CREATE TABLE executions (
  id                  text NOT NULL,      -- executionIdFor(job_id, scheduled_for)
  tenant_id           text NOT NULL,
  job_id              text NOT NULL,
  scheduled_for       bigint NOT NULL,
  pool                text NOT NULL,
  name                text NOT NULL,
  priority            integer NOT NULL,
  state               text NOT NULL,      -- READY RUNNING SUCCEEDED DEAD CANCELLED SKIPPED
  attempt             integer NOT NULL DEFAULT 0,
  attempt_base        integer NOT NULL DEFAULT 0, -- attempts before the last replay
  max_attempts        integer NOT NULL,
  backoff_seconds     double precision NOT NULL,
  max_backoff_seconds double precision NOT NULL,
  timeout_ms          bigint NOT NULL,
  ready_at            bigint,
  lease_until         bigint,
  lease_ms            bigint,
  deadline            bigint,
  worker_id           text,
  cancel_requested    boolean NOT NULL DEFAULT false,
  payload             jsonb,
  target              jsonb NOT NULL,
  result              jsonb,
  last_error          jsonb,
  dispatched_at       bigint NOT NULL,
  dispatched_by       text,
  finished_at         bigint,
  dead_at             bigint,
  started_at          bigint,
  -- One execution per occurrence: a second dispatch of it inserts nothing (ON CONFLICT DO NOTHING).
  CONSTRAINT executions_occurrence PRIMARY KEY (job_id, scheduled_for)
) PARTITION BY RANGE (scheduled_for);
CREATE TABLE executions_default PARTITION OF executions DEFAULT;
-- Leasing: a pool across tenants (workers without a tenant, the HTTP runner), or one tenant's.
CREATE INDEX executions_ready ON executions (pool, priority DESC, ready_at) WHERE state = 'READY';
CREATE INDEX executions_ready_tenant ON executions (pool, tenant_id, priority DESC, ready_at) WHERE state = 'READY';
CREATE INDEX executions_running ON executions (lease_until) WHERE state = 'RUNNING';
CREATE INDEX executions_dead ON executions (tenant_id, dead_at DESC, id DESC) WHERE state = 'DEAD';
CREATE INDEX executions_ended ON executions (finished_at) WHERE state IN ('SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED');
-- A paused one-off's held execution: with the two above, retention's probe of whether a partition still holds a live row.
CREATE INDEX executions_paused ON executions (job_id) WHERE state = 'PAUSED';

-- Attempts that did not succeed; the running and the succeeding attempt live on the execution row.
CREATE TABLE attempts (
  job_id        text NOT NULL,
  scheduled_for bigint NOT NULL,
  attempt       integer NOT NULL,
  state         text NOT NULL,
  worker_id     text,
  started_at    bigint NOT NULL,
  finished_at   bigint,
  error         jsonb,
  PRIMARY KEY (job_id, scheduled_for, attempt)
) PARTITION BY RANGE (scheduled_for);
CREATE TABLE attempts_default PARTITION OF attempts DEFAULT;

CREATE TABLE shards (
  shard       integer PRIMARY KEY,
  owner       text,
  epoch       bigint NOT NULL,
  lease_until bigint NOT NULL
);

CREATE TABLE audit (
  id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id text NOT NULL,
  at        bigint NOT NULL,
  actor     text NOT NULL,
  action    text NOT NULL,
  subject   text NOT NULL,
  details   jsonb
);
CREATE INDEX audit_by_tenant ON audit (tenant_id, at DESC, id DESC);
CREATE INDEX audit_by_at ON audit (at);

-- API keys: only the SHA-256 digest of each secret. Revoked keys stay, for the record.
CREATE TABLE api_keys (
  id         text PRIMARY KEY,
  tenant_id  text NOT NULL,
  role       text NOT NULL,
  digest     text NOT NULL UNIQUE,
  name       text,
  created_at bigint NOT NULL,
  revoked_at bigint
);
CREATE INDEX api_keys_by_tenant_created ON api_keys (tenant_id, created_at DESC, id DESC);
CREATE INDEX api_keys_by_created ON api_keys (created_at DESC, id DESC);

-- Callback signing secrets, one per tenant: created once, never replaced.
CREATE TABLE signing_secrets (
  tenant_id  text PRIMARY KEY,
  secret     text NOT NULL,
  created_at bigint NOT NULL
);

-- Cluster membership: one heartbeat row per node, live until expires_at.
CREATE TABLE nodes (
  node_id           text PRIMARY KEY,
  address           text,
  last_heartbeat_at bigint NOT NULL,
  expires_at        bigint NOT NULL
);
`,
  },
  {
    version: 2,
    sql: `
-- Fair leasing across tenants (docs/design-notes.md "Fair leasing"). A lane
-- is a pool's work of one tenant. vtime is the work leased from it across
-- tenants divided by its tenant's weight; a cross-tenant lease serves the
-- lanes whose next grant would finish first. idle_until is NULL while the
-- lane may have work due (it is in the rotation); otherwise it is a hint of
-- when its next READY row is due.
--
-- Waking is by lane_wakes: every statement that makes rows READY leaves one
-- row per lane there (the trigger below), and a lease wakes the lanes whose
-- wake rows are due. Unlike SQLite, a lease cannot trust idle_until alone:
-- a lease that finds a lane empty may not yet see a row another transaction
-- is committing, and the insert cannot see that the lane is going to sleep;
-- the wake row outlives both, so no lane sleeps past its work.
CREATE TABLE tenants (
  tenant_id              text PRIMARY KEY,
  weight                 double precision NOT NULL DEFAULT 1,
  max_pending_jobs       bigint,
  create_rate_per_second double precision,
  max_leased_attempts    integer,
  max_payload_bytes      integer,
  updated_at             bigint NOT NULL
);
-- A tenant's RUNNING attempts, counted against its max_leased_attempts, and its pending jobs against max_pending_jobs.
CREATE INDEX executions_running_by_tenant ON executions (tenant_id) WHERE state = 'RUNNING';
CREATE INDEX jobs_pending_by_tenant ON jobs (tenant_id) WHERE state IN ('SCHEDULED', 'PAUSED');
-- A tenant's recurring work due in one minute (the spike warning at submit time).
CREATE INDEX due_by_tenant ON due (tenant_id, due_at);

-- retry.deadlineSeconds, copied to each execution like the rest of its retry policy (core/retry.ts).
ALTER TABLE executions ADD COLUMN retry_deadline_seconds double precision;

CREATE TABLE lanes (
  pool       text NOT NULL,
  tenant_id  text NOT NULL,
  vtime      double precision NOT NULL DEFAULT 0,
  idle_until bigint,
  PRIMARY KEY (pool, tenant_id)
);
CREATE INDEX lanes_active ON lanes (pool, vtime, tenant_id) WHERE idle_until IS NULL;
CREATE INDEX lanes_idle ON lanes (pool, idle_until) WHERE idle_until IS NOT NULL;
CREATE INDEX lanes_by_vtime ON lanes (pool, vtime);

CREATE TABLE lane_wakes (
  pool       text NOT NULL,
  tenant_id  text NOT NULL,
  ready_at   bigint NOT NULL,
  -- When it was written (retention settles those a cross-tenant lease never took).
  written_at bigint NOT NULL DEFAULT floor(extract(epoch from clock_timestamp()) * 1000)::bigint
);
CREATE INDEX lane_wakes_due ON lane_wakes (pool, ready_at);

INSERT INTO lanes (pool, tenant_id, idle_until)
  SELECT pool, tenant_id, min(ready_at) FROM executions WHERE state = 'READY' GROUP BY pool, tenant_id;

CREATE FUNCTION executions_ready_wakes() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$
BEGIN
  INSERT INTO lanes (pool, tenant_id, idle_until)
    SELECT pool, tenant_id, min(ready_at) FROM fresh WHERE state = 'READY' GROUP BY pool, tenant_id
    ON CONFLICT DO NOTHING;
  INSERT INTO lane_wakes (pool, tenant_id, ready_at)
    SELECT pool, tenant_id, min(ready_at) FROM fresh WHERE state = 'READY' GROUP BY pool, tenant_id;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER executions_ready_wakes_insert AFTER INSERT ON executions
  REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION executions_ready_wakes();
CREATE TRIGGER executions_ready_wakes_update AFTER UPDATE ON executions
  REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION executions_ready_wakes();
`,
  },
  {
    version: 3,
    sql: `
-- A tenant's dispatch rate (core/dispatch-rate.ts): the rate, and the GCRA's
-- theoretical arrival time (ms, fractional) that each lease adds its grants
-- to. A lane is throttled since the first lease that left its due work
-- waiting for the rate; the attempts then granted record how long that made
-- them wait.
ALTER TABLE tenants ADD COLUMN dispatch_rate_per_second double precision;
ALTER TABLE tenants ADD COLUMN dispatch_tat double precision;
ALTER TABLE lanes ADD COLUMN throttled_since bigint;
ALTER TABLE executions ADD COLUMN throttled_ms bigint;
ALTER TABLE attempts ADD COLUMN throttled_ms bigint;
`,
  },
  {
    version: 4,
    sql: `
-- Bulk dead-letter replays (engine/dead-letter-replays.ts): the selection
-- (ids, or a filter bounded by dead_before), the rate and the next slot it
-- allows, progress, and the lease of the node driving it (judged by the
-- store's clock).
CREATE TABLE dead_letter_replays (
  id            text PRIMARY KEY,
  tenant_id     text NOT NULL,
  selection     jsonb NOT NULL,
  rate          double precision NOT NULL,
  actor         text NOT NULL,
  state         text NOT NULL,            -- RUNNING DONE CANCELLED
  total         integer,
  replayed      integer NOT NULL DEFAULT 0,
  skipped       integer NOT NULL DEFAULT 0,
  cursor        jsonb,
  next_at       double precision NOT NULL,
  created_at    bigint NOT NULL,
  updated_at    bigint NOT NULL,
  finished_at   bigint,
  owner         text,
  lease_until   bigint
);
CREATE INDEX dead_letter_replays_by_tenant ON dead_letter_replays (tenant_id, created_at DESC, id DESC);
CREATE INDEX dead_letter_replays_running ON dead_letter_replays (lease_until) WHERE state = 'RUNNING';

-- Possible duplicates: an attempt whose worker called (complete, fail,
-- heartbeat) after losing its lease, so it ran on while the execution moved
-- on (lease_lost), or whose expired lease was reaped before a later attempt
-- succeeded (expired_then_succeeded). The latest such attempt, why, and when.
ALTER TABLE executions ADD COLUMN dup_attempt integer;
ALTER TABLE executions ADD COLUMN dup_reason text;
ALTER TABLE executions ADD COLUMN dup_at bigint;
-- The latest attempt the reaper ended for an expired lease: when a later one succeeds, that one may have run too.
ALTER TABLE executions ADD COLUMN expired_attempt integer;
CREATE INDEX executions_possible_duplicate ON executions (tenant_id, dup_at DESC, id DESC) WHERE dup_at IS NOT NULL;
`,
  },
  {
    version: 5,
    sql: `
-- READY executions counted as the rows change, per lane, priority and the
-- hour their ready_at falls in (store.ts poolCounts): /v1/stats and the
-- metrics read these few rows instead of every READY row, and count exactly
-- only the due part of the current hour, an index range bounded by the
-- queue. A counter row updated by every transaction would serialise them
-- all on its lock, so the triggers only append deltas, one row per lane,
-- priority and hour that a statement changed; executionCountsFold moves
-- them into ready_counts, and a read adds what is not folded yet.
CREATE TABLE ready_counts (
  tenant_id text NOT NULL,
  pool      text NOT NULL,
  priority  integer NOT NULL,
  hour      bigint NOT NULL,
  n         bigint NOT NULL,
  PRIMARY KEY (tenant_id, pool, priority, hour)
);
CREATE TABLE ready_count_deltas (
  tenant_id text NOT NULL,
  pool      text NOT NULL,
  priority  integer NOT NULL,
  hour      bigint NOT NULL,
  n         bigint NOT NULL
);

INSERT INTO ready_counts (tenant_id, pool, priority, hour, n)
  SELECT tenant_id, pool, priority, coalesce(ready_at, 0) / 3600000, count(*) FROM executions WHERE state = 'READY' GROUP BY 1, 2, 3, 4;

CREATE FUNCTION executions_ready_count() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $fn$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO ready_count_deltas SELECT tenant_id, pool, priority, coalesce(ready_at, 0) / 3600000, count(*)
      FROM fresh WHERE state = 'READY' GROUP BY 1, 2, 3, 4;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO ready_count_deltas SELECT tenant_id, pool, priority, coalesce(ready_at, 0) / 3600000, -count(*)
      FROM gone WHERE state = 'READY' GROUP BY 1, 2, 3, 4;
  ELSE
    INSERT INTO ready_count_deltas SELECT tenant_id, pool, priority, hour, sum(n) FROM (
        SELECT tenant_id, pool, priority, coalesce(ready_at, 0) / 3600000 AS hour, -1 AS n FROM gone WHERE state = 'READY'
        UNION ALL
        SELECT tenant_id, pool, priority, coalesce(ready_at, 0) / 3600000, 1 FROM fresh WHERE state = 'READY'
      ) d GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0;
  END IF;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER executions_ready_count_insert AFTER INSERT ON executions
  REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION executions_ready_count();
CREATE TRIGGER executions_ready_count_update AFTER UPDATE ON executions
  REFERENCING OLD TABLE AS gone NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION executions_ready_count();
CREATE TRIGGER executions_ready_count_delete AFTER DELETE ON executions
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION executions_ready_count();

-- The workload per minute, tenant and pool that GET /v1/stats/history reads
-- (store/workload-minutes.ts): every node adds what it saw; the depth is the
-- counts sampled in the minute. lag_0..lag_11 are a start-lag histogram
-- (LAG_BOUNDS_MS). Kept a day.
CREATE TABLE workload_minutes (
  minute    bigint NOT NULL,
  tenant_id text NOT NULL,
  pool      text NOT NULL,
  started   integer NOT NULL DEFAULT 0,
  succeeded integer NOT NULL DEFAULT 0,
  failed    integer NOT NULL DEFAULT 0,
  dead      integer NOT NULL DEFAULT 0,
  lag_0     integer NOT NULL DEFAULT 0,
  lag_1     integer NOT NULL DEFAULT 0,
  lag_2     integer NOT NULL DEFAULT 0,
  lag_3     integer NOT NULL DEFAULT 0,
  lag_4     integer NOT NULL DEFAULT 0,
  lag_5     integer NOT NULL DEFAULT 0,
  lag_6     integer NOT NULL DEFAULT 0,
  lag_7     integer NOT NULL DEFAULT 0,
  lag_8     integer NOT NULL DEFAULT 0,
  lag_9     integer NOT NULL DEFAULT 0,
  lag_10    integer NOT NULL DEFAULT 0,
  lag_11    integer NOT NULL DEFAULT 0,
  pending   integer,
  queued    integer,
  running   integer,
  PRIMARY KEY (minute, tenant_id, pool)
);
CREATE INDEX workload_minutes_by_tenant ON workload_minutes (tenant_id, minute);
`,
  },
  {
    version: 6,
    sql: `
-- Tracing (engine/tracing.ts, on with --tracing): the W3C traceparent of the
-- span that created the job; its executions copy it when they are written,
-- so every later span of the job (dispatch, lease, HTTP call, complete) and
-- the worker's handler reach the create span. NULL while tracing is off.
ALTER TABLE jobs ADD COLUMN trace_parent text;
ALTER TABLE executions ADD COLUMN trace_parent text;
`,
  },
  {
    version: 7,
    sql: `
-- The jobs list's pool and kind filters (GET /v1/jobs?pool=&kind=): a range
-- of an index in the list's order, not a walk of every job of the tenant.
CREATE INDEX jobs_by_tenant_pool_created ON jobs (tenant_id, pool, created_at DESC, id DESC);
CREATE INDEX jobs_cron_by_tenant_created ON jobs (tenant_id, created_at DESC, id DESC) WHERE kind = 'cron';
`,
  },
  {
    version: 8,
    sql: `
-- An external due index (--due-index redis://) is reconciled one shard at a
-- time, paging its due entries by job id (dueScan): a range of this index.
CREATE INDEX due_by_shard ON due (shard, job_id);
`,
  },
  {
    version: 9,
    sql: `
-- A recurring job in dry run (mode dry_run) has each occurrence recorded
-- SKIPPED (reason dry_run) by dispatch, never run. A constant default: no rewrite.
ALTER TABLE jobs ADD COLUMN mode text NOT NULL DEFAULT 'live';
`,
  },
  {
    version: 10,
    sql: `
-- The lease token (leases.ts LEASE_TIMELINE): the server's WAL timeline when
-- the attempt was granted. A promotion starts a new timeline, so an attempt
-- granted on the old primary and lost with it, then granted again under the
-- same number, carries another token. NULL on attempts granted before it.
ALTER TABLE executions ADD COLUMN lease_incarnation bigint;
`,
  },
  {
    version: 11,
    sql: `
-- A one-off's end is read from its execution, not written on its job
-- (core/states.ts ONE_OFF_END): executions say which are a one-off's, a
-- one-off's end written by an earlier version is read from its execution
-- again, and the pending-jobs quota counts a one-off by its executions not
-- yet ended and a recurring job by its own state.
ALTER TABLE executions ADD COLUMN once boolean NOT NULL DEFAULT false;
UPDATE executions e SET once = true FROM jobs j WHERE j.id = e.job_id AND j.kind = 'once';
UPDATE jobs j SET state = 'SCHEDULED' WHERE j.kind = 'once' AND j.state IN ('COMPLETED', 'DEAD')
  AND EXISTS (SELECT 1 FROM executions e WHERE e.job_id = j.id AND e.state IN ('SUCCEEDED', 'DEAD'));
DROP INDEX jobs_pending_by_tenant;
CREATE INDEX jobs_pending_by_tenant ON jobs (tenant_id) WHERE kind = 'cron' AND state IN ('SCHEDULED', 'PAUSED');
CREATE INDEX executions_once_pending ON executions (tenant_id, job_id) WHERE once AND finished_at IS NULL;
`,
  },
  {
    version: 12,
    sql: `
-- Payloads larger than the inline limit are kept by reference (blobs.ts):
-- the index of every blob, whatever holds its bytes, and the bytes of the
-- default backend in chunks of 256 KiB, so no row or statement holds a whole
-- payload. Blobs not attached to their job are few (in-flight creates, what a
-- crash or retention left): the sweep reads them through a partial index.
CREATE TABLE blobs (
  blob_id    text PRIMARY KEY,
  tenant_id  text NOT NULL,
  job_id     text NOT NULL,
  backend    text NOT NULL,
  state      text NOT NULL,
  bytes      bigint,
  sha256     text,
  chunks     integer,
  created_at bigint NOT NULL
);
CREATE INDEX blobs_by_job ON blobs (job_id);
CREATE INDEX blobs_unattached ON blobs (created_at) WHERE state <> 'attached';
CREATE TABLE blob_chunks (
  blob_id text NOT NULL,
  seq     integer NOT NULL,
  data    bytea NOT NULL,
  PRIMARY KEY (blob_id, seq)
);
-- A job's blobs go with it, however it is removed (retention of jobs, or of
-- a one-off with its last execution): gone, in the deleting statement, once
-- per statement; the sweep deletes their bytes.
CREATE FUNCTION blobs_of_removed_jobs() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  UPDATE blobs b SET state = 'gone' FROM removed r WHERE b.job_id = r.id AND b.state <> 'gone';
  RETURN NULL;
END $$;
CREATE TRIGGER jobs_delete_blobs_gone AFTER DELETE ON jobs REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION blobs_of_removed_jobs();
`,
  },
  {
    version: 13,
    sql: `
-- One running index instead of two, keyed by tenant first: it also counts a
-- tenant's RUNNING attempts for its max_leased_attempts (the reaper reads all
-- of it, bounded by the workers' concurrency), so a lease and a completion
-- each write one index entry less.
DROP INDEX executions_running_by_tenant;
DROP INDEX executions_running;
CREATE INDEX executions_running ON executions (tenant_id, lease_until) WHERE state = 'RUNNING';
`,
  },
  {
    version: 14,
    sql: `
-- The lease epoch (leases.ts), the lease token from now on: a row of an
-- UNLOGGED table, which crash recovery and a promotion empty, so a lease
-- grant may commit without waiting for its flush (durability "accepted"):
-- one that a crash loses is granted again under a new epoch. Attempts
-- granted before keep the timeline token they were granted under.
CREATE UNLOGGED TABLE lease_epoch (
  one   boolean PRIMARY KEY DEFAULT true CHECK (one),
  token bigint NOT NULL
);
`,
  },
];

/** Classid of the migration lock (pg_advisory_xact_lock(classid, objid)): "duet". */
const MIGRATION_LOCK = 0x64756574;

/**
 * Creates the schema if absent and applies the migrations it lacks, in one
 * transaction under an advisory lock keyed on the schema's name: nodes that
 * start together take turns, and the later ones find nothing left to do;
 * then creates the time partitions ahead (partitions.ts). Answers what this
 * call applied and the version the schema is at.
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<MigrateResult> {
  const result = await applyMigrations(pool, schema);
  // At every start, not only the first: a node back after a long stop finds the current range. Left to retention if refused.
  await createAhead(pool, schema);
  return result;
}

async function applyMigrations(pool: pg.Pool, schema: string): Promise<MigrateResult> {
  return transaction(pool, async (c) => {
    await c.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [MIGRATION_LOCK, schema]);
    await c.query(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
    await c.query(`SET LOCAL search_path TO ${ident(schema)}`);
    await c.query("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)");
    const { rows } = await c.query<{ version: number }>("SELECT version FROM schema_migrations");
    const done = new Set(rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await c.query(m.sql);
      await c.query(`INSERT INTO schema_migrations (version, applied_at) VALUES ($1, ${DB_NOW})`, [m.version]);
      applied.push(m.version);
    }
    return { applied, version: MIGRATIONS[MIGRATIONS.length - 1]!.version };
  });
}
