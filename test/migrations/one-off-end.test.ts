// The migration that stops writing a one-off's end on its job (SQLite 17,
// PostgreSQL 11), on a database an earlier version wrote: its one-offs read
// as they did, a replay revives a dead one, and the pending-jobs quota
// counts what is still to run. The earlier version is rebuilt from the
// current schema by undoing the migration's own changes and writing the
// job's end as that version did.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";

import { openPostgresStore } from "../../src/store/postgres/index.js";
import { adminPool, freshPostgresSchema, postgresAvailable } from "../../src/store/postgres/test-support.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import type { Store } from "../../src/store/store.js";
import { T0, SECOND, HOUR, FATAL, newJob, cronJob, createOne, lease, fail, assertOk } from "../store-contract/support.js";

interface Written {
  done: string;
  dead: string;
  deadExecution: string;
  live: string;
}

/** What the earlier version left: a one-off completed, one dead, one waiting, a recurring job. */
async function writeJobs(store: Store): Promise<Written> {
  const ids = await Promise.all(
    ["p-done", "p-dead"].map(async (pool) => (await createOne(store, newJob({ target: { type: "queue", pool } }))).jobId),
  );
  const live = await createOne(store, newJob({ at: T0 + HOUR }));
  await createOne(store, cronJob());
  const [doneLease] = await lease(store, T0, { pool: "p-done" });
  const [deadLease] = await lease(store, T0, { pool: "p-dead" });
  assertOk(
    (await store.executionCompleteMany({ items: [{ executionId: doneLease!.executionId, tenantId: "t1", attempt: 1 }], now: T0 + SECOND }))[0],
    "SUCCEEDED",
  );
  assertOk(
    (
      await store.executionFailMany({
        items: [fail({ executionId: deadLease!.executionId, tenantId: "t1", attempt: 1, error: FATAL })],
        now: T0 + SECOND,
      })
    )[0],
    "DEAD",
  );
  return { done: ids[0]!, dead: ids[1]!, deadExecution: deadLease!.executionId, live: live.jobId };
}

/** The reads the migration must keep, and the replay and quota it must make right. */
async function checkMigrated(store: Store, w: Written, rowStates: () => Promise<Record<string, string>>): Promise<void> {
  const stateOf = async (jobId: string) => (await store.jobGet({ tenantId: "t1", jobId }))?.state;
  const states = async () => Object.fromEntries(await Promise.all([w.done, w.dead, w.live].map(async (id) => [id, await stateOf(id)])));
  assert.deepEqual(await states(), { [w.done]: "COMPLETED", [w.dead]: "DEAD", [w.live]: "SCHEDULED" });
  assert.deepEqual(
    await rowStates(),
    { [w.done]: "SCHEDULED", [w.dead]: "SCHEDULED", [w.live]: "SCHEDULED" },
    "the ends are read from the executions now",
  );
  assert.equal(await store.jobCountPending({ tenantId: "t1" }), 2, "the waiting one-off and the recurring job");
  const audit = { tenantId: "t1", at: T0 + HOUR, actor: "admin", action: "dead_letter.replay", subject: w.deadExecution };
  assert.ok(await store.deadLetterReplay({ tenantId: "t1", executionId: w.deadExecution, now: T0 + HOUR, audit }));
  assert.equal(await stateOf(w.dead), "SCHEDULED", "a replay revives a dead one-off");
  assert.equal(await store.jobCountPending({ tenantId: "t1" }), 3, "and it is pending again");
}

const dir = mkdtempSync(join(tmpdir(), "duetime-one-off-end-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("SQLite migration 17: one-offs an earlier version ended on their job read the same, and the quota counts what is left", async () => {
  const path = join(dir, "legacy.db");
  let store = await openSqliteStore({ path });
  const w = await writeJobs(store);
  await store.close();
  const db = new Database(path);
  db.exec(`
    DROP INDEX executions_once_pending;
    ALTER TABLE executions DROP COLUMN once;
    DROP INDEX jobs_pending_by_tenant;
    CREATE INDEX jobs_pending_by_tenant ON jobs (tenant_id) WHERE state IN ('SCHEDULED', 'PAUSED');
    DELETE FROM schema_migrations WHERE version = 17;`);
  db.prepare("UPDATE jobs SET state = 'COMPLETED', version = version + 1 WHERE id = ?").run(w.done);
  db.prepare("UPDATE jobs SET state = 'DEAD', version = version + 1 WHERE id = ?").run(w.dead);
  db.close();

  store = await openSqliteStore({ path });
  try {
    const raw = new Database(path, { readonly: true });
    const rowStates = async () =>
      Object.fromEntries(
        (raw.prepare("SELECT id, state FROM jobs WHERE kind = 'once'").all() as { id: string; state: string }[]).map((r) => [r.id, r.state]),
      );
    await checkMigrated(store, w, rowStates);
    raw.close();
  } finally {
    await store.close();
  }
});

if (await postgresAvailable("the PostgreSQL one-off end migration")) {
  test("PostgreSQL migration 11: one-offs an earlier version ended on their job read the same, and the quota counts what is left", async () => {
    const { url, schema } = freshPostgresSchema();
    let store = await openPostgresStore({ url, schema });
    const w = await writeJobs(store);
    await store.close();
    const admin = adminPool();
    await admin.query(`
      SET search_path TO "${schema}";
      DROP INDEX executions_once_pending;
      ALTER TABLE executions DROP COLUMN once;
      DROP INDEX jobs_pending_by_tenant;
      CREATE INDEX jobs_pending_by_tenant ON jobs (tenant_id) WHERE state IN ('SCHEDULED', 'PAUSED');
      DELETE FROM schema_migrations WHERE version = 11;
      RESET search_path;`);
    await admin.query(`UPDATE "${schema}".jobs SET state = 'COMPLETED', version = version + 1 WHERE id = $1`, [w.done]);
    await admin.query(`UPDATE "${schema}".jobs SET state = 'DEAD', version = version + 1 WHERE id = $1`, [w.dead]);

    store = await openPostgresStore({ url, schema });
    try {
      const rowStates = async () =>
        Object.fromEntries(
          (await admin.query<{ id: string; state: string }>(`SELECT id, state FROM "${schema}".jobs WHERE kind = 'once'`)).rows.map((r) => [
            r.id,
            r.state,
          ]),
        );
      await checkMigrated(store, w, rowStates);
    } finally {
      await store.close();
    }
  });
}
