// SQLite schema, as numbered migrations applied in order at open. Never edit
// a migration that has shipped; add the next one. A migration that moves
// rows does so in `data`, run in the same transaction after its `sql`.

import type Database from "better-sqlite3";
import { executionIdFor } from "../../core/ids.js";
import type { MigrateResult } from "../store.js";
import type { SqliteDb } from "./db.js";

export interface Migration {
  version: number;
  sql: string;
  data?: (db: Database.Database, now: number) => void;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
CREATE TABLE jobs (
  id              TEXT PRIMARY KEY,
  tenant_id       TEXT NOT NULL,
  shard           INTEGER NOT NULL,
  kind            TEXT NOT NULL,            -- once | cron
  name            TEXT NOT NULL,
  state           TEXT NOT NULL,
  target          TEXT NOT NULL,            -- JSON
  pool            TEXT NOT NULL,            -- queue pool, or $http
  payload         TEXT,                     -- JSON
  schedule        TEXT NOT NULL,            -- JSON, the effective schedule
  retry           TEXT NOT NULL,            -- JSON
  timeout_seconds INTEGER NOT NULL,
  priority        INTEGER NOT NULL,
  version         INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
);
CREATE INDEX jobs_by_tenant_created ON jobs (tenant_id, created_at DESC, id DESC);

-- The due index: the next occurrence of every job that has one.
CREATE TABLE due (
  job_id        TEXT PRIMARY KEY,
  tenant_id     TEXT NOT NULL,
  shard         INTEGER NOT NULL,
  scheduled_for INTEGER NOT NULL,
  due_at        INTEGER NOT NULL
) WITHOUT ROWID;
-- SQLite serves one node, which owns every shard: one time index, with the
-- shard filter (when a node owns fewer) applied on top of it.
CREATE INDEX due_by_time ON due (due_at);

CREATE TABLE idempotency_keys (
  tenant_id    TEXT NOT NULL,
  key          TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  job_id       TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, key)
) WITHOUT ROWID;

-- The id is "<jobId>-<scheduledFor base36>" (core/ids.ts): unique per
-- occurrence, and the primary key orders executions by job, so a job's
-- executions are one key range and no (job_id, scheduled_for) index is needed.
CREATE TABLE executions (
  id               TEXT PRIMARY KEY,
  tenant_id        TEXT NOT NULL,
  job_id           TEXT NOT NULL,
  pool             TEXT NOT NULL,
  name             TEXT NOT NULL,
  scheduled_for    INTEGER NOT NULL,
  priority         INTEGER NOT NULL,
  state            TEXT NOT NULL,           -- READY RUNNING SUCCEEDED DEAD CANCELLED SKIPPED
  attempt          INTEGER NOT NULL DEFAULT 0,
  attempt_base     INTEGER NOT NULL DEFAULT 0, -- attempts before the last replay
  max_attempts     INTEGER NOT NULL,
  backoff_seconds  REAL NOT NULL,
  max_backoff_seconds REAL NOT NULL,
  timeout_ms       INTEGER NOT NULL,
  ready_at         INTEGER,
  lease_until      INTEGER,
  lease_ms         INTEGER,
  deadline         INTEGER,
  worker_id        TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  payload          TEXT,
  target           TEXT NOT NULL,
  result           TEXT,
  last_error       TEXT,
  dispatched_at    INTEGER NOT NULL,
  dispatched_by    TEXT,
  finished_at      INTEGER,
  dead_at          INTEGER,
  started_at       INTEGER
);
CREATE INDEX executions_ready ON executions (pool, tenant_id, priority DESC, ready_at) WHERE state = 'READY';
-- The HTTP runner leases across tenants.
CREATE INDEX executions_ready_http ON executions (priority DESC, ready_at) WHERE state = 'READY' AND pool = '$http';
CREATE INDEX executions_running ON executions (lease_until) WHERE state = 'RUNNING';
CREATE INDEX executions_dead ON executions (tenant_id, dead_at DESC, id DESC) WHERE state = 'DEAD';

CREATE TABLE attempts (
  execution_id TEXT NOT NULL,
  attempt      INTEGER NOT NULL,
  state        TEXT NOT NULL,
  worker_id    TEXT,
  started_at   INTEGER NOT NULL,
  finished_at  INTEGER,
  error        TEXT,
  PRIMARY KEY (execution_id, attempt)
) WITHOUT ROWID;

CREATE TABLE shards (
  shard       INTEGER PRIMARY KEY,
  owner       TEXT,
  epoch       INTEGER NOT NULL,
  lease_until INTEGER NOT NULL
);

CREATE TABLE audit (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant_id TEXT NOT NULL,
  at        INTEGER NOT NULL,
  actor     TEXT NOT NULL,
  action    TEXT NOT NULL,
  subject   TEXT NOT NULL,
  details   TEXT
);
CREATE INDEX audit_by_tenant ON audit (tenant_id, at DESC, id DESC);
`,
  },
  {
    version: 2,
    sql: `
-- API keys managed at run time (duetime keys create|list|revoke): only the
-- SHA-256 digest of each secret is kept. Revoked keys stay, for the record.
CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
  tenant_id  TEXT NOT NULL,
  role       TEXT NOT NULL,               -- admin | client | worker
  digest     TEXT NOT NULL UNIQUE,        -- hex SHA-256 of the secret
  name       TEXT,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
);
CREATE INDEX api_keys_by_tenant_created ON api_keys (tenant_id, created_at DESC, id DESC);
CREATE INDEX api_keys_by_created ON api_keys (created_at DESC, id DESC);
`,
  },
  {
    version: 3,
    sql: `
-- Callback signing secrets generated by the engine, one per tenant (the
-- default tenant's when no --signing-secret is configured). Created once,
-- never replaced: every node signs with the same one.
CREATE TABLE signing_secrets (
  tenant_id  TEXT PRIMARY KEY,
  secret     TEXT NOT NULL,
  created_at INTEGER NOT NULL
) WITHOUT ROWID;
`,
  },
  {
    version: 4,
    sql: `
-- Retention (engine/retention.ts, sqlite/retention.ts) removes old rows in
-- bounded batches, oldest first: each index lets a batch read only the rows
-- it removes, never the whole table. The partial indexes hold ended rows only,
-- so the hot paths (READY and RUNNING executions, live jobs) do not pay for them.
CREATE INDEX executions_ended ON executions (finished_at) WHERE state IN ('SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED');
CREATE INDEX jobs_ended ON jobs (updated_at) WHERE state IN ('COMPLETED', 'DEAD', 'CANCELLED');
CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);
CREATE INDEX audit_by_at ON audit (at);
`,
  },
  {
    version: 5,
    sql: `
-- Cluster membership (sqlite/nodes.ts): one heartbeat row per node; a node
-- is live until expires_at. Node ids are stable across restarts.
CREATE TABLE nodes (
  node_id           TEXT PRIMARY KEY,
  address           TEXT,
  last_heartbeat_at INTEGER NOT NULL,
  expires_at        INTEGER NOT NULL
) WITHOUT ROWID;
`,
  },
  {
    version: 6,
    sql: `
-- One-off jobs get their execution at submit time (docs/design-notes.md):
-- only recurring jobs keep due entries. The data step gives every one-off
-- that has not run yet its execution; leases and a long poll's next look
-- read the READY indexes by priority level, so no index is added.
`,
    data: oneOffExecutions,
  },
  {
    version: 7,
    sql: `
-- Fair leasing across tenants (docs/design-notes.md "Fair leasing"). A lane
-- is a pool's work of one tenant. vtime is the work leased from it across
-- tenants divided by its tenant's weight; a cross-tenant lease serves the
-- lanes whose next grant would finish first. idle_until is NULL while the
-- lane may have work due (it is in the rotation); otherwise none of its
-- READY rows is due before then. The triggers keep that true for every row
-- that becomes READY, whichever statement makes it so.
CREATE TABLE tenants (
  tenant_id              TEXT PRIMARY KEY,
  weight                 REAL NOT NULL DEFAULT 1,
  max_pending_jobs       INTEGER,
  create_rate_per_second REAL,
  max_leased_attempts    INTEGER,
  max_payload_bytes      INTEGER,
  updated_at             INTEGER NOT NULL
) WITHOUT ROWID;
-- A tenant's RUNNING attempts, counted against its max_leased_attempts, and its pending jobs against max_pending_jobs.
CREATE INDEX executions_running_by_tenant ON executions (tenant_id) WHERE state = 'RUNNING';
CREATE INDEX jobs_pending_by_tenant ON jobs (tenant_id) WHERE state IN ('SCHEDULED', 'PAUSED');
-- A tenant's recurring work due in one minute (the spike warning at submit time).
CREATE INDEX due_by_tenant ON due (tenant_id, due_at);

-- retry.deadlineSeconds, copied to each execution like the rest of its retry policy (core/retry.ts).
ALTER TABLE executions ADD COLUMN retry_deadline_seconds REAL;

CREATE TABLE lanes (
  pool       TEXT NOT NULL,
  tenant_id  TEXT NOT NULL,
  vtime      REAL NOT NULL DEFAULT 0,
  idle_until INTEGER,
  PRIMARY KEY (pool, tenant_id)
) WITHOUT ROWID;
CREATE INDEX lanes_active ON lanes (pool, vtime, tenant_id) WHERE idle_until IS NULL;
CREATE INDEX lanes_idle ON lanes (pool, idle_until) WHERE idle_until IS NOT NULL;
CREATE INDEX lanes_by_vtime ON lanes (pool, vtime);

INSERT INTO lanes (pool, tenant_id, idle_until)
  SELECT pool, tenant_id, min(ready_at) FROM executions WHERE state = 'READY' GROUP BY pool, tenant_id;

CREATE TRIGGER executions_ready_wakes_insert AFTER INSERT ON executions WHEN NEW.state = 'READY' BEGIN
  INSERT INTO lanes (pool, tenant_id, idle_until) VALUES (NEW.pool, NEW.tenant_id, NEW.ready_at) ON CONFLICT DO NOTHING;
  UPDATE lanes SET idle_until = NEW.ready_at WHERE pool = NEW.pool AND tenant_id = NEW.tenant_id AND idle_until > NEW.ready_at;
END;
CREATE TRIGGER executions_ready_wakes_update AFTER UPDATE OF state, ready_at, pool ON executions WHEN NEW.state = 'READY' BEGIN
  INSERT INTO lanes (pool, tenant_id, idle_until) VALUES (NEW.pool, NEW.tenant_id, NEW.ready_at) ON CONFLICT DO NOTHING;
  UPDATE lanes SET idle_until = NEW.ready_at WHERE pool = NEW.pool AND tenant_id = NEW.tenant_id AND idle_until > NEW.ready_at;
END;
`,
  },
  {
    version: 8,
    sql: `
-- A tenant's dispatch rate (core/dispatch-rate.ts): the rate, and the GCRA's
-- theoretical arrival time (ms, fractional) that each lease charges. A lane
-- is throttled since the first lease that left its due work waiting for the
-- rate; the attempts then granted record how long that made them wait.
ALTER TABLE tenants ADD COLUMN dispatch_rate_per_second REAL;
ALTER TABLE tenants ADD COLUMN dispatch_tat REAL;
ALTER TABLE lanes ADD COLUMN throttled_since INTEGER;
ALTER TABLE executions ADD COLUMN throttled_ms INTEGER;
ALTER TABLE attempts ADD COLUMN throttled_ms INTEGER;
`,
  },
  {
    version: 9,
    sql: `
-- Bulk dead-letter replays (engine/dead-letter-replays.ts): the selection
-- (ids, or a filter bounded by dead_before), the rate and the next slot it
-- allows, progress, and the lease of the node driving it (judged by the
-- store's clock).
CREATE TABLE dead_letter_replays (
  id            TEXT PRIMARY KEY,
  tenant_id     TEXT NOT NULL,
  selection     TEXT NOT NULL,
  rate          REAL NOT NULL,
  actor         TEXT NOT NULL,
  state         TEXT NOT NULL,            -- RUNNING DONE CANCELLED
  total         INTEGER,
  replayed      INTEGER NOT NULL DEFAULT 0,
  skipped       INTEGER NOT NULL DEFAULT 0,
  cursor        TEXT,
  next_at       REAL NOT NULL,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  finished_at   INTEGER,
  owner         TEXT,
  lease_until   INTEGER
);
CREATE INDEX dead_letter_replays_by_tenant ON dead_letter_replays (tenant_id, created_at DESC, id DESC);
CREATE INDEX dead_letter_replays_running ON dead_letter_replays (lease_until) WHERE state = 'RUNNING';

-- Possible duplicates: an attempt whose worker called (complete, fail,
-- heartbeat) after losing its lease, so it ran on while the execution moved
-- on (lease_lost), or whose expired lease was reaped before a later attempt
-- succeeded (expired_then_succeeded). The latest such attempt, why, and when.
ALTER TABLE executions ADD COLUMN dup_attempt INTEGER;
ALTER TABLE executions ADD COLUMN dup_reason TEXT;
ALTER TABLE executions ADD COLUMN dup_at INTEGER;
-- The latest attempt the reaper ended for an expired lease: when a later one succeeds, that one may have run too.
ALTER TABLE executions ADD COLUMN expired_attempt INTEGER;
CREATE INDEX executions_possible_duplicate ON executions (tenant_id, dup_at DESC, id DESC) WHERE dup_at IS NOT NULL;
`,
  },
  {
    version: 10,
    sql: `
-- READY executions counted as the rows change, per lane, priority and the
-- hour their ready_at falls in (store.ts poolCounts): /v1/stats and the
-- metrics read these few rows instead of every READY row, and count exactly
-- only the due part of the current hour, an index range bounded by the
-- queue. Rows left at zero are swept by executionCountsFold.
CREATE TABLE ready_counts (
  tenant_id TEXT NOT NULL,
  pool      TEXT NOT NULL,
  priority  INTEGER NOT NULL,
  hour      INTEGER NOT NULL,
  n         INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, pool, priority, hour)
) WITHOUT ROWID;

INSERT INTO ready_counts (tenant_id, pool, priority, hour, n)
  SELECT tenant_id, pool, priority, CAST(coalesce(ready_at, 0) / 3600000 AS INTEGER), count(*) FROM executions WHERE state = 'READY' GROUP BY 1, 2, 3, 4;

CREATE TRIGGER executions_ready_count_insert AFTER INSERT ON executions WHEN NEW.state = 'READY' BEGIN
  INSERT INTO ready_counts VALUES (NEW.tenant_id, NEW.pool, NEW.priority, CAST(coalesce(NEW.ready_at, 0) / 3600000 AS INTEGER), 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER executions_ready_count_leave AFTER UPDATE OF state, ready_at, priority, pool ON executions WHEN OLD.state = 'READY' BEGIN
  UPDATE ready_counts SET n = n - 1
    WHERE tenant_id = OLD.tenant_id AND pool = OLD.pool AND priority = OLD.priority AND hour = CAST(coalesce(OLD.ready_at, 0) / 3600000 AS INTEGER);
END;
CREATE TRIGGER executions_ready_count_enter AFTER UPDATE OF state, ready_at, priority, pool ON executions WHEN NEW.state = 'READY' BEGIN
  INSERT INTO ready_counts VALUES (NEW.tenant_id, NEW.pool, NEW.priority, CAST(coalesce(NEW.ready_at, 0) / 3600000 AS INTEGER), 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER executions_ready_count_delete AFTER DELETE ON executions WHEN OLD.state = 'READY' BEGIN
  UPDATE ready_counts SET n = n - 1
    WHERE tenant_id = OLD.tenant_id AND pool = OLD.pool AND priority = OLD.priority AND hour = CAST(coalesce(OLD.ready_at, 0) / 3600000 AS INTEGER);
END;

-- The workload per minute, tenant and pool that GET /v1/stats/history reads
-- (store/workload-minutes.ts): every node adds what it saw; the depth is the
-- counts sampled in the minute. lag_0..lag_11 are a start-lag histogram
-- (LAG_BOUNDS_MS). Kept a day.
CREATE TABLE workload_minutes (
  minute    INTEGER NOT NULL,
  tenant_id TEXT NOT NULL,
  pool      TEXT NOT NULL,
  started   INTEGER NOT NULL DEFAULT 0,
  succeeded INTEGER NOT NULL DEFAULT 0,
  failed    INTEGER NOT NULL DEFAULT 0,
  dead      INTEGER NOT NULL DEFAULT 0,
  lag_0     INTEGER NOT NULL DEFAULT 0,
  lag_1     INTEGER NOT NULL DEFAULT 0,
  lag_2     INTEGER NOT NULL DEFAULT 0,
  lag_3     INTEGER NOT NULL DEFAULT 0,
  lag_4     INTEGER NOT NULL DEFAULT 0,
  lag_5     INTEGER NOT NULL DEFAULT 0,
  lag_6     INTEGER NOT NULL DEFAULT 0,
  lag_7     INTEGER NOT NULL DEFAULT 0,
  lag_8     INTEGER NOT NULL DEFAULT 0,
  lag_9     INTEGER NOT NULL DEFAULT 0,
  lag_10    INTEGER NOT NULL DEFAULT 0,
  lag_11    INTEGER NOT NULL DEFAULT 0,
  pending   INTEGER,
  queued    INTEGER,
  running   INTEGER,
  PRIMARY KEY (minute, tenant_id, pool)
) WITHOUT ROWID;
CREATE INDEX workload_minutes_by_tenant ON workload_minutes (tenant_id, minute);
`,
  },
  {
    version: 11,
    sql: `
-- Tracing (engine/tracing.ts, on with --tracing): the W3C traceparent of the
-- span that created the job; its executions copy it when they are written,
-- so every later span of the job (dispatch, lease, HTTP call, complete) and
-- the worker's handler reach the create span. NULL while tracing is off.
ALTER TABLE jobs ADD COLUMN trace_parent TEXT;
ALTER TABLE executions ADD COLUMN trace_parent TEXT;
`,
  },
  {
    version: 12,
    sql: `
-- The jobs list's pool and kind filters (GET /v1/jobs?pool=&kind=): a range
-- of an index in the list's order, not a walk of every job of the tenant.
CREATE INDEX jobs_by_tenant_pool_created ON jobs (tenant_id, pool, created_at DESC, id DESC);
CREATE INDEX jobs_cron_by_tenant_created ON jobs (tenant_id, created_at DESC, id DESC) WHERE kind = 'cron';
`,
  },
  {
    version: 13,
    sql: `
-- Executions are inserted in batches (a create of 1,000 jobs, a dispatch of
-- 1,000 occurrences) by one statement, insertExecutions, which now wakes the
-- lanes and adds to the ready counters once per lane and counter: these row
-- triggers ran three statements per row (a third of a one-off's create).
DROP TRIGGER executions_ready_wakes_insert;
DROP TRIGGER executions_ready_count_insert;
`,
  },
  {
    version: 14,
    sql: `
-- An external due index (--due-index redis://) is reconciled one shard at a
-- time, paging its due entries by job id (dueScan): a range of this index.
CREATE INDEX due_by_shard ON due (shard, job_id);
`,
  },
  {
    version: 15,
    sql: `
-- A recurring job in dry run (mode dry_run) has each occurrence recorded
-- SKIPPED (reason dry_run) by dispatch, never run.
ALTER TABLE jobs ADD COLUMN mode TEXT NOT NULL DEFAULT 'live';
`,
  },
  {
    version: 16,
    sql: `
-- Durability (docs/operations.md "Durability"): lease grants may commit
-- without their own flush, so a power loss can lose one and the attempt be
-- granted again. Each store handle takes a new incarnation, flushed before
-- its first grant; a grant records it, and a call must name it (the lease
-- token) to match, so a token from before the loss never matches a grant
-- made after. flushed_at is what the periodic flush writes.
CREATE TABLE store_meta (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  incarnation INTEGER NOT NULL,
  flushed_at  INTEGER
);
INSERT INTO store_meta (id, incarnation) VALUES (1, 0);
ALTER TABLE executions ADD COLUMN lease_incarnation INTEGER;
`,
  },
  {
    version: 17,
    sql: `
-- A one-off's end is read from its execution, not written on its job
-- (core/states.ts ONE_OFF_END): executions say which are a one-off's, a
-- one-off's end written by an earlier version is read from its execution
-- again, and the pending-jobs quota counts a one-off by its executions not
-- yet ended (an index the lease does not touch: finished_at is set at the
-- end) and a recurring job by its own state.
ALTER TABLE executions ADD COLUMN once INTEGER NOT NULL DEFAULT 0;
UPDATE executions SET once = 1 WHERE job_id IN (SELECT id FROM jobs WHERE kind = 'once');
UPDATE jobs SET state = 'SCHEDULED' WHERE kind = 'once' AND state IN ('COMPLETED', 'DEAD')
  AND EXISTS (SELECT 1 FROM executions e WHERE e.id > jobs.id || '-' AND e.id < jobs.id || '.' AND e.state IN ('SUCCEEDED', 'DEAD'));
DROP INDEX jobs_pending_by_tenant;
CREATE INDEX jobs_pending_by_tenant ON jobs (tenant_id) WHERE kind = 'cron' AND state IN ('SCHEDULED', 'PAUSED');
CREATE INDEX executions_once_pending ON executions (tenant_id, job_id) WHERE once = 1 AND finished_at IS NULL;
`,
  },
  {
    version: 18,
    sql: `
-- Payloads larger than the inline limit are kept by reference (blobs.ts):
-- the index of every blob, whatever holds its bytes, and the bytes of the
-- default backend in chunks of 256 KiB, so no row or statement holds a whole
-- payload. Blobs not attached to their job are few (in-flight creates, what a
-- crash or retention left): the sweep reads them through a partial index.
CREATE TABLE blobs (
  blob_id    TEXT PRIMARY KEY,
  tenant_id  TEXT NOT NULL,
  job_id     TEXT NOT NULL,
  backend    TEXT NOT NULL,
  state      TEXT NOT NULL,
  bytes      INTEGER,
  sha256     TEXT,
  chunks     INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX blobs_by_job ON blobs (job_id);
CREATE INDEX blobs_unattached ON blobs (created_at) WHERE state <> 'attached';
CREATE TABLE blob_chunks (
  blob_id TEXT NOT NULL,
  seq     INTEGER NOT NULL,
  data    BLOB NOT NULL,
  PRIMARY KEY (blob_id, seq)
);
-- A job's blobs go with it, however it is removed (retention of jobs, or of
-- a one-off with its last execution): gone, in the deleting transaction; the
-- sweep deletes their bytes.
CREATE TRIGGER jobs_delete_blobs_gone AFTER DELETE ON jobs
BEGIN
  UPDATE blobs SET state = 'gone' WHERE job_id = OLD.id AND state <> 'gone';
END;
`,
  },
  {
    version: 19,
    sql: `
-- A lease writes one index entry per attempt and no counter row per
-- attempt: the running index, keyed by tenant first, also counts a
-- tenant's RUNNING attempts for its max_leased_attempts (the reaper reads
-- all of it, bounded by the workers' concurrency), and the lease takes its
-- rows out of ready_counts itself, once per bucket (leases.ts), so the
-- per-row trigger leaves READY rows that become RUNNING to it.
DROP INDEX executions_running_by_tenant;
DROP INDEX executions_running;
CREATE INDEX executions_running ON executions (tenant_id, lease_until) WHERE state = 'RUNNING';
DROP TRIGGER executions_ready_count_leave;
CREATE TRIGGER executions_ready_count_leave AFTER UPDATE OF state, ready_at, priority, pool ON executions
  WHEN OLD.state = 'READY' AND NEW.state IS NOT 'RUNNING' BEGIN
  UPDATE ready_counts SET n = n - 1
    WHERE tenant_id = OLD.tenant_id AND pool = OLD.pool AND priority = OLD.priority AND hour = CAST(coalesce(OLD.ready_at, 0) / 3600000 AS INTEGER);
END;
`,
  },
];

/**
 * Migration 6's data: a one-off still in the due index gets its execution,
 * READY from its due time; a paused one that never ran (the pause removed
 * its due entry) gets it held (PAUSED), for resume to release. Executions
 * copy the job's fields as dispatch did; dispatched_by is null (no node).
 */
function oneOffExecutions(db: Database.Database, now: number): void {
  const insert = db.prepare(
    `INSERT INTO executions (id, tenant_id, job_id, pool, name, scheduled_for, priority, state, max_attempts,
       backoff_seconds, max_backoff_seconds, timeout_ms, ready_at, payload, target, dispatched_at, dispatched_by)
     SELECT @id, j.tenant_id, j.id, j.pool, j.name, @scheduledFor, j.priority, @state,
       j.retry ->> '$.maxAttempts', j.retry ->> '$.backoffSeconds', j.retry ->> '$.maxBackoffSeconds',
       j.timeout_seconds * 1000, @readyAt, j.payload, j.target, @now, NULL
     FROM jobs j WHERE j.id = @job
     ON CONFLICT (id) DO NOTHING`,
  );
  const add = (job: string, scheduledFor: number, readyAt: number, state: "READY" | "PAUSED") =>
    insert.run({ id: executionIdFor(job, scheduledFor), job, scheduledFor, readyAt, state, now });
  const waiting = db.prepare("SELECT d.job_id, d.scheduled_for, d.due_at FROM due d JOIN jobs j ON j.id = d.job_id WHERE j.kind = 'once'").all() as {
    job_id: string;
    scheduled_for: number;
    due_at: number;
  }[];
  for (const w of waiting) add(w.job_id, w.scheduled_for, w.due_at, "READY");
  db.exec("DELETE FROM due WHERE job_id IN (SELECT id FROM jobs WHERE kind = 'once')");
  const paused = db
    .prepare(
      `SELECT j.id, j.schedule ->> '$.runAt' AS run_at FROM jobs j WHERE j.kind = 'once' AND j.state = 'PAUSED'
         AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.id > j.id || '-' AND e.id < j.id || '.')`,
    )
    .all() as { id: string; run_at: string }[];
  for (const p of paused) add(p.id, Date.parse(p.run_at), Date.parse(p.run_at), "PAUSED");
}

/** Applies the migrations the file lacks, each in a write transaction of its own. */
export function migrate(d: SqliteDb): MigrateResult {
  const db = d.handle;
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)");
  const done = new Set((db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((r) => r.version));
  const applied: number[] = [];
  for (const m of MIGRATIONS) {
    if (done.has(m.version)) continue;
    // Another process on the file may apply it between that read and this write lock: the check that counts is under the lock.
    const ran = d.tx(() => {
      if (db.prepare("SELECT 1 FROM schema_migrations WHERE version = ?").get(m.version)) return false;
      db.exec(m.sql);
      m.data?.(db, Date.now());
      db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(m.version, Date.now());
      return true;
    });
    if (ran) applied.push(m.version);
  }
  return { applied, version: MIGRATIONS[MIGRATIONS.length - 1]!.version };
}
