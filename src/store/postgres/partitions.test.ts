// Time partitions of history on a real server (partitions.ts): any
// scheduled_for can be stored; maintenance creates the ranges ahead and moves
// their rows out of DEFAULT; retention drops a range whose rows all ended,
// answering them, and keeps one with a live row, removing its ended rows one
// by one; a lease racing the drop neither fails nor loses a row.

import assert from "node:assert/strict";
import { test } from "node:test";
import pg from "pg";
import type { Store } from "../store.js";
import { openPostgresStore } from "./index.js";
import { createAhead, createRange, PARTITION_MS, rangeStart } from "./partitions.js";
import { adminPool, freshPostgresSchema, oneOffJob, postgresAvailable } from "./test-support.js";

const NOW = Date.now();
const WEEK = PARTITION_MS;

/** A store on a fresh schema, and a pool of the test's own on that schema (for maintenance at a pinned time, and checks). */
async function open(): Promise<{ store: Store; pool: pg.Pool; schema: string; close: () => Promise<void> }> {
  const db = freshPostgresSchema();
  const store = await openPostgresStore({ ...db, poolSize: 4 });
  const pool = new pg.Pool({ connectionString: db.url, max: 2, options: `-c search_path="${db.schema}"` });
  return {
    store,
    pool,
    schema: db.schema,
    close: async () => {
      await store.close();
      await pool.end();
    },
  };
}

/** Which partition holds each execution scheduled at these times. */
async function homes(pool: pg.Pool, times: number[]): Promise<string[]> {
  const { rows } = await pool.query<{ home: string; scheduled_for: string }>(
    "SELECT tableoid::regclass::text AS home, scheduled_for FROM executions WHERE scheduled_for = ANY($1::bigint[]) ORDER BY scheduled_for",
    [times],
  );
  return rows.map((r) => r.home);
}

const exists = async (pool: pg.Pool, table: string): Promise<boolean> =>
  (await pool.query<{ r: string | null }>("SELECT to_regclass($1)::text AS r", [table])).rows[0]!.r !== null;

const nameOf = (table: string, from: number): string => `${table}_p${new Date(from).toISOString().slice(0, 10).replaceAll("-", "")}`;

/** Creates one-offs at these times, leases each at its time and completes it then: ended at `at + 2`. */
async function ended(store: Store, times: number[]): Promise<void> {
  await store.jobCreateMany({ nodeId: "n1", jobs: times.map((at) => oneOffJob(NOW, at)), now: NOW });
  for (const at of times) {
    const [leased] = await store.executionLease({ pool: "p", workerId: "w", max: 1, leaseMs: 30_000, now: at + 1 });
    assert.equal(leased!.scheduledFor, at);
    const [done] = await store.executionCompleteMany({
      items: [{ executionId: leased!.executionId, tenantId: "t1", attempt: leased!.attempt }],
      now: at + 2,
    });
    assert.equal(done!.status, "ok");
  }
}

if (await postgresAvailable("PostgreSQL time partitions")) {
  test("an execution of any scheduled_for is stored: far past and far future land in DEFAULT, now in its week", async () => {
    const { store, pool, close } = await open();
    try {
      const times = [Date.parse("1971-01-01T00:00:00Z"), NOW, Date.parse("2200-01-01T00:00:00Z")];
      const created = await store.jobCreateMany({ nodeId: "n1", jobs: times.map((at) => oneOffJob(NOW, at)), now: NOW });
      assert.deepEqual(
        created.map((c) => c.status),
        ["created", "created", "created"],
      );
      assert.deepEqual(await homes(pool, times), ["executions_default", nameOf("executions", rangeStart(NOW)), "executions_default"]);
    } finally {
      await close();
    }
  });

  test("maintenance creates the ranges ahead and moves their rows out of DEFAULT", async () => {
    const { store, pool, schema, close } = await open();
    try {
      const later = rangeStart(NOW) + 5 * WEEK + 1000; // past the ranges migrate created
      await store.jobCreateMany({ nodeId: "n1", jobs: [oneOffJob(NOW, later)], now: NOW });
      assert.deepEqual(await homes(pool, [later]), ["executions_default"]);
      await createAhead(pool, schema, later - 2 * WEEK); // two weeks on, the range of `later` is due to be created
      assert.deepEqual(await homes(pool, [later]), [nameOf("executions", rangeStart(later))]);
      for (const table of ["executions", "attempts"]) assert.ok(await exists(pool, nameOf(table, rangeStart(later))), table);
      const { rows } = await pool.query("SELECT count(*)::int AS n FROM executions_default");
      assert.equal(rows[0].n, 0);
      // The row moved is the same execution: leased from its new home.
      const leased = await store.executionLease({ pool: "p", workerId: "w", max: 5, leaseMs: 30_000, now: later });
      assert.equal(leased.length, 1);
    } finally {
      await close();
    }
  });

  test("retention drops an old range whose rows all ended, and keeps one with a live row, removing its ended rows", async () => {
    const { store, pool, schema, close } = await open();
    try {
      const gone = rangeStart(NOW) - 10 * WEEK;
      const kept = gone + WEEK;
      for (const from of [gone, kept]) assert.ok(await createRange(pool, schema, from, from + WEEK));
      await ended(store, [gone + 1000, gone + 2000, gone + 3000, kept + 1000, kept + 2000]);
      // An attempt row in the range that goes: a failure, then a success.
      await store.jobCreateMany({ nodeId: "n1", jobs: [oneOffJob(NOW, gone + 4000)], now: NOW });
      const [first] = await store.executionLease({ pool: "p", workerId: "w", max: 1, leaseMs: 30_000, now: gone + 4001 });
      await store.executionFailMany({
        items: [{ executionId: first!.executionId, tenantId: "t1", attempt: 1, error: { message: "no" }, jitter: 0 }],
        now: gone + 4002,
      });
      const [second] = await store.executionLease({ pool: "p", workerId: "w", max: 1, leaseMs: 30_000, now: gone + 10_000 });
      await store.executionCompleteMany({ items: [{ executionId: second!.executionId, tenantId: "t1", attempt: 2 }], now: gone + 10_001 });
      // A live row in the range kept: a one-off backfilled there, not yet run.
      await store.jobCreateMany({ nodeId: "n1", jobs: [oneOffJob(NOW, kept + 3000)], now: NOW });
      assert.equal((await pool.query(`SELECT count(*)::int AS n FROM ${nameOf("attempts", gone)}`)).rows[0].n, 1);

      const before = kept + WEEK + 1; // both ranges ended before it
      // limit 1: the drop removes its four at once, then one row of the range kept goes by a delete; their one-offs' jobs with them.
      assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 1 }), { deleted: 4 + 1, jobs: 4 + 1 });
      for (const table of ["executions", "attempts"]) assert.equal(await exists(pool, nameOf(table, gone)), false, `${table} range dropped`);
      assert.ok(await exists(pool, nameOf("executions", kept)), "the range with a live row stays");
      assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 1 }), { deleted: 1, jobs: 1 });
      assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 1 }), { deleted: 0 });
      assert.equal((await pool.query("SELECT count(*)::int AS n FROM jobs")).rows[0].n, 1, "only the live one-off's job is left");
      const { rows } = await pool.query("SELECT scheduled_for::bigint AS at, state FROM executions WHERE scheduled_for < $1", [before]);
      assert.deepEqual(
        rows.map((r) => [Number(r.at), r.state]),
        [[kept + 3000, "READY"]],
      );
    } finally {
      await close();
    }
  });

  test("a lease racing a drop neither fails nor loses a row", async () => {
    const { store, pool, schema, close } = await open();
    try {
      const old = rangeStart(NOW) - 10 * WEEK;
      assert.ok(await createRange(pool, schema, old, old + WEEK));
      await ended(store, [old + 1000, old + 2000]);
      const due = Array.from({ length: 300 }, (_, i) => NOW - 60_000 + i);
      await store.jobCreateMany({ nodeId: "n1", jobs: due.map((at) => oneOffJob(NOW, at)), now: NOW });
      let dropping = true;
      const leased: string[] = [];
      const leasing = (async () => {
        // Leases of 3 until the range is gone and every due row is held.
        while (dropping || leased.length < due.length) {
          const got = await store.executionLease({ pool: "p", workerId: "w", max: 3, leaseMs: 60_000 });
          leased.push(...got.map((l) => l.executionId));
          if (got.length === 0 && !dropping) break;
        }
      })();
      let removed = 0;
      const deadline = Date.now() + 30_000;
      while (await exists(pool, nameOf("executions", old))) {
        assert.ok(Date.now() < deadline, "the range was dropped within 30 s");
        removed += (await store.retentionPurge({ kind: "executions", before: old + WEEK + 1, limit: 500 })).deleted;
      }
      dropping = false;
      await leasing;
      assert.equal(removed, 2);
      assert.equal(new Set(leased).size, due.length, "each due row leased once");
      assert.equal(leased.length, due.length);
      const { rows } = await pool.query("SELECT count(*)::int AS n FROM executions WHERE state = 'RUNNING'");
      assert.equal(rows[0].n, due.length);
      assert.equal((await adminPool().query(`SELECT count(*)::int AS n FROM "${schema}".executions`)).rows[0].n, due.length);
    } finally {
      await close();
    }
  });
}
