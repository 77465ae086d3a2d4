// The PostgreSQL driver's faults, on a real server: a refused connection, a
// connection the server ends (idle in the pool, or in the middle of a
// transaction), a statement past its timeout. Each is a typed store fault or
// nothing at all, never a crash, and the store serves again at once after.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { StoreUnavailableError } from "../../core/errors.js";
import { newId, shardOf } from "../../core/ids.js";
import type { Store } from "../store.js";
import { waitFor } from "../../../test/helpers.js";
import { postgresFaultKind } from "./errors.js";
import { openPostgresStore, type PostgresStoreOptions } from "./index.js";
import { adminPool, freshPostgresSchema, postgresAvailable } from "./test-support.js";

function isFault(kind: string, code?: string) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof StoreUnavailableError, `a StoreUnavailableError, got ${String(err)}`);
    assert.equal(err.kind, kind);
    assert.equal(err.status, 503);
    if (code !== undefined) assert.equal((err.cause as { code?: string }).code, code);
    return true;
  };
}

test("SQLSTATEs, socket errors and pg's connection errors that pass are store faults; others are not", () => {
  const withCode = (code: string): Error => Object.assign(new Error("m"), { code });
  const cases: [unknown, string | null][] = [
    [withCode("53100"), "full"],
    [withCode("53300"), "connection"],
    [withCode("25006"), "readonly"],
    [withCode("57014"), "timeout"],
    [withCode("57P01"), "connection"],
    [withCode("57P02"), "connection"],
    [withCode("57P03"), "connection"],
    [withCode("08006"), "connection"],
    [withCode("08001"), "connection"],
    [withCode("58030"), "io"],
    [withCode("40P01"), "busy"],
    [withCode("ECONNREFUSED"), "connection"],
    [withCode("ECONNRESET"), "connection"],
    [new Error("Connection terminated unexpectedly"), "connection"],
    [new Error("Query read timeout"), "connection"], // query_timeout: the link stopped answering
    [new Error("timeout exceeded when trying to connect"), "connection"],
    [new AggregateError([withCode("ECONNREFUSED"), withCode("ECONNREFUSED")]), "connection"],
    [withCode("23505"), null], // unique_violation: a bug, not a fault
    [withCode("42P01"), null], // undefined_table
    [withCode("22P02"), null],
    [new Error("boom"), null],
    ["57P01", null],
  ];
  for (const [error, kind] of cases) assert.equal(postgresFaultKind(error), kind, String((error as { code?: string }).code ?? error));
});

if (await postgresAvailable("PostgreSQL store faults")) {
  /** A store in a fresh schema, with a name of its own in pg_stat_activity. */
  async function openTagged(options: Partial<PostgresStoreOptions> = {}): Promise<{ store: Store; app: string; schema: string }> {
    const app = `duetime-faults-${randomBytes(4).toString("hex")}`;
    const db = freshPostgresSchema();
    const store = await openPostgresStore({ ...db, applicationName: app, poolSize: 4, ...options });
    return { store, app, schema: db.schema };
  }

  const backends = async (app: string): Promise<{ pid: number; state: string; wait: string | null }[]> =>
    (await adminPool().query("SELECT pid, state, wait_event_type AS wait FROM pg_stat_activity WHERE application_name = $1", [app])).rows;

  /** Ends the store's backends from outside, as a restart would, and waits until the server has closed them. */
  async function terminate(app: string, which: (b: { state: string; wait: string | null }) => boolean = () => true): Promise<number> {
    const targets = (await backends(app)).filter(which).map((b) => b.pid);
    for (const pid of targets) await adminPool().query("SELECT pg_terminate_backend($1)", [pid]);
    await waitFor(async () => (await backends(app)).every((b) => !targets.includes(b.pid)), "the ended backends are gone", 10_000);
    return targets.length;
  }

  const job = () => {
    const jobId = newId(Date.now());
    return {
      job: {
        tenantId: "t1",
        jobId,
        shard: shardOf(jobId),
        kind: "once" as const,
        name: "j",
        state: "SCHEDULED" as const,
        target: { type: "queue" as const, pool: "p1" },
        payload: null,
        schedule: { runAt: new Date().toISOString() },
        retry: { maxAttempts: 3, backoffSeconds: 1, maxBackoffSeconds: 1 },
        timeoutSeconds: 30,
        priority: 0,
        mode: "live" as const,
        createdAt: Date.now(),
      },
      due: null,
      execution: { scheduledFor: Date.now(), dueAt: Date.now() },
    };
  };

  test("a store pointed at a closed port fails to open with StoreUnavailableError connection, and nothing crashes", async () => {
    await assert.rejects(
      openPostgresStore({ url: "postgres://postgres@127.0.0.1:1/test", schema: "duetime_unreachable", connectTimeoutMs: 2_000 }),
      isFault("connection", "ECONNREFUSED"),
    );
    const store = await openPostgresStore({ url: "postgres://postgres@127.0.0.1:1/test", migrate: false, connectTimeoutMs: 2_000 });
    try {
      await assert.rejects(store.ping(), isFault("connection"));
      await assert.rejects(store.jobGet({ tenantId: "t1", jobId: "x" }), isFault("connection"));
    } finally {
      await store.close();
    }
  });

  test("idle connections the server ends are dropped from the pool: the next calls succeed, the process does not crash", async () => {
    const { store, app } = await openTagged();
    try {
      await Promise.all([store.ping(), store.ping(), store.ping()]); // several idle connections in the pool
      // The driver's pool (private): the test waits until it has seen the connections end, as pg reports them.
      const pool = (store as unknown as { pool: { totalCount: number } }).pool;
      const before = pool.totalCount;
      const ended = await terminate(app);
      assert.ok(ended >= 2, "idle backends to end");
      await waitFor(() => pool.totalCount <= before - ended, "the pool has dropped the ended connections", 10_000);
      await store.ping();
      const nj = job();
      const [created] = await store.jobCreateMany({ jobs: [nj], nodeId: "n1", now: Date.now() });
      assert.equal(created?.status, "created");
      assert.equal((await store.jobGet({ tenantId: "t1", jobId: nj.job.jobId }))?.jobId, nj.job.jobId);
    } finally {
      await store.close();
    }
  });

  test("a connection ended in the middle of a transaction fails that call with StoreUnavailableError connection; the next call succeeds", async () => {
    const { store, app, schema } = await openTagged();
    const blocker = await adminPool().connect();
    try {
      const nj = job();
      await store.jobCreateMany({ jobs: [nj], nodeId: "n1", now: Date.now() });
      // Hold the due table so the store's transaction waits inside it, then end its connection.
      await blocker.query("BEGIN");
      await blocker.query(`LOCK TABLE "${schema}".due IN ACCESS EXCLUSIVE MODE`);
      // The assertion is attached at once: the rejection may arrive while this test still awaits the terminate.
      const transitionFails = assert.rejects(
        store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: Date.now() }),
        isFault("connection", "57P01"),
      );
      await waitFor(async () => (await backends(app)).some((b) => b.wait === "Lock"), "the store's transaction waits for the lock", 10_000);
      assert.equal(await terminate(app, (b) => b.wait === "Lock"), 1);
      await transitionFails;
      await blocker.query("ROLLBACK");
      const paused = await store.jobTransition({
        tenantId: "t1",
        jobId: nj.job.jobId,
        fromVersion: 1,
        state: "PAUSED",
        due: "keep",
        now: Date.now(),
      });
      assert.equal(paused?.state, "PAUSED", "nothing of the ended transaction was kept, and the store serves again");
    } finally {
      await blocker.query("ROLLBACK").catch(() => {});
      blocker.release();
      await store.close();
    }
  });

  test("a statement past statementTimeoutMs is StoreUnavailableError timeout; the next call succeeds", async () => {
    const schema = freshPostgresSchema();
    const store = await openPostgresStore({ ...schema, statementTimeoutMs: 300, poolSize: 2 });
    const blocker = await adminPool().connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query(`LOCK TABLE "${schema.schema}".jobs IN ACCESS EXCLUSIVE MODE`);
      await assert.rejects(store.jobGet({ tenantId: "t1", jobId: "x" }), isFault("timeout", "57014"));
      await blocker.query("ROLLBACK");
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: "x" }), null);
    } finally {
      await blocker.query("ROLLBACK").catch(() => {});
      blocker.release();
      await store.close();
    }
  });
}
