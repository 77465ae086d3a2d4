// Migration 6 on a database written by an earlier version: one-offs waiting
// in the due index, or paused before they ran, get the execution that a
// one-off now has from its submit, so none is lost by the upgrade.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { executionIdFor, newId, shardOf } from "../../core/ids.js";
import { openSqliteStore } from "./index.js";
import { MIGRATIONS } from "./schema.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-migrate-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.parse("2026-03-01T00:00:00Z");

/** A database at schema version 5, as the release before one-offs got their execution at submit left it. */
function version5(path: string): Database.Database {
  const db = new Database(path);
  db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)");
  for (const m of MIGRATIONS.filter((x) => x.version <= 5)) {
    db.exec(m.sql);
    db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(m.version, T0);
  }
  return db;
}

function insertJob(db: Database.Database, kind: "once" | "cron", state: string, runAt: number): string {
  const id = newId(T0);
  const schedule =
    kind === "once"
      ? { runAt: new Date(runAt).toISOString() }
      : { cron: "0 * * * *", tz: "UTC", jitterSeconds: 0, misfire: "run_once", overlap: "allow" };
  db.prepare(
    `INSERT INTO jobs (id, tenant_id, shard, kind, name, state, target, pool, payload, schedule, retry, timeout_seconds, priority, version, created_at, updated_at)
     VALUES (?, 't1', ?, ?, 'legacy', ?, '{"type":"queue","pool":"p1"}', 'p1', '{"n":1}', ?, '{"maxAttempts":3,"backoffSeconds":10,"maxBackoffSeconds":3600}', 300, 0, 1, ?, ?)`,
  ).run(id, shardOf(id), kind, state, JSON.stringify(schedule), T0, T0);
  return id;
}

function insertDue(db: Database.Database, jobId: string, at: number): void {
  db.prepare("INSERT INTO due (job_id, tenant_id, shard, scheduled_for, due_at) VALUES (?, 't1', ?, ?, ?)").run(jobId, shardOf(jobId), at, at);
}

test("migration 6 gives waiting one-offs their execution (READY at the due time) and paused ones theirs held; recurring jobs keep their due entries", async () => {
  const path = join(dir, "legacy.db");
  const db = version5(path);
  const waiting = insertJob(db, "once", "SCHEDULED", T0 + 60_000);
  insertDue(db, waiting, T0 + 60_000);
  const paused = insertJob(db, "once", "PAUSED", T0 + 120_000);
  const cron = insertJob(db, "cron", "SCHEDULED", T0 + 3_600_000);
  insertDue(db, cron, T0 + 3_600_000);
  db.close();

  const store = await openSqliteStore({ path });
  try {
    const [row] = await store.executionHistory({ tenantId: "t1", jobId: waiting, limit: 10 });
    assert.deepEqual([row?.executionId, row?.state, row?.readyAt], [executionIdFor(waiting, T0 + 60_000), "READY", T0 + 60_000]);
    assert.equal((await store.jobGet({ tenantId: "t1", jobId: waiting }))?.nextRunAt, T0 + 60_000);
    const [held] = await store.executionHistory({ tenantId: "t1", jobId: paused, limit: 10 });
    assert.deepEqual([held?.executionId, held?.state], [executionIdFor(paused, T0 + 120_000), "PAUSED"]);
    const due = await store.dueLoad({ shards: [shardOf(waiting), shardOf(cron)], before: T0 + 10 * 3_600_000, limit: 10 });
    assert.deepEqual(
      due.map((d) => d.jobId),
      [cron],
      "only the recurring job keeps a due entry",
    );
    // Migration 10 counted the READY row it found (poolCounts reads the counters).
    assert.deepEqual(await store.poolCounts({ now: T0 }), [{ tenantId: "t1", pool: "p1", pending: 1, queued: 0, running: 0 }]);
    const leased = await store.executionLease({ tenantId: "t1", pool: "p1", workerId: "w", max: 10, leaseMs: 30_000, now: T0 + 60_000 });
    assert.deepEqual(
      leased.map((l) => [l.jobId, l.payload]),
      [[waiting, { n: 1 }]],
    );
  } finally {
    await store.close();
  }
});
