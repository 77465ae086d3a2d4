// SQLite schema, as numbered migrations applied in order at open. Never edit
// a migration that has shipped; add the next one.

export const MIGRATIONS: readonly { version: number; sql: string }[] = [
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
];
