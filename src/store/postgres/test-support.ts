// What every test that needs PostgreSQL shares: the server's URL (env
// DUETIME_TEST_PG_URL, default the local one: trust auth, user postgres,
// database test), whether it answers, and a fresh schema per store so tests
// run in parallel. A missing server FAILS the file's tests with CI=true (CI
// must never skip them); elsewhere they skip, with a loud message.
//
//   if (await postgresAvailable("my feature")) {
//     test("…", async () => {
//       const db = await freshPostgresSchema();
//       const store = await openPostgresStore({ url: db.url, schema: db.schema });
//     });
//   }

import { randomBytes } from "node:crypto";
import { after, test } from "node:test";
import pg from "pg";
import { newId, shardOf } from "../../core/ids.js";
import type { NewJob } from "../store.js";

export const TEST_PG_URL = process.env.DUETIME_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

let answer: Promise<string | null> | undefined;

/** Null when the test server answers, else why not (checked once per process). */
function unreachable(): Promise<string | null> {
  answer ??= (async () => {
    const client = new pg.Client({ connectionString: TEST_PG_URL, connectionTimeoutMillis: 3_000 });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("SELECT 1");
      return null;
    } catch (error) {
      return error instanceof Error ? error.message || String((error as { code?: string }).code) : String(error);
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return answer;
}

/**
 * Gate for a test file's PostgreSQL tests: true when the server answers.
 * Otherwise registers one test named after `what` that fails with CI=true
 * and is skipped elsewhere (with a banner on stderr), and answers false.
 */
export async function postgresAvailable(what: string): Promise<boolean> {
  const reason = await unreachable();
  if (reason === null) return true;
  const message = `PostgreSQL at ${TEST_PG_URL} is not reachable (${reason}): ${what} cannot run`;
  if (process.env.CI === "true") {
    test(`${what}: PostgreSQL is required with CI=true`, () => {
      throw new Error(`${message}. Start PostgreSQL or set DUETIME_TEST_PG_URL.`);
    });
  } else {
    process.stderr.write(
      `\n${"!".repeat(78)}\n!! SKIPPED: ${message}.\n!! Start PostgreSQL (or set DUETIME_TEST_PG_URL) to run them; CI=true fails instead.\n${"!".repeat(78)}\n\n`,
    );
    test(`${what} (skipped: PostgreSQL not reachable)`, { skip: message }, () => {});
  }
  return false;
}

let admin: pg.Pool | undefined;
const schemas: string[] = [];

// Registered when this module loads, so at the file's root: an after() called
// from inside a before() hook would run as soon as that hook ends, dropping
// the schema a suite's server is about to use.
after(async () => {
  const pool = admin;
  admin = undefined;
  if (!pool) return;
  for (const schema of schemas.splice(0)) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

/** A pool of the test process's own, for setup and checks beside the store under test. */
export function adminPool(): pg.Pool {
  if (!admin) {
    admin = new pg.Pool({ connectionString: TEST_PG_URL, max: 2, allowExitOnIdle: true });
    admin.on("error", () => {});
  }
  return admin;
}

/**
 * A schema name no other test uses, for a store to create (openPostgresStore
 * migrates into it); dropped with everything in it when the file's tests end.
 */
export function freshPostgresSchema(): { url: string; schema: string } {
  adminPool(); // the drop at the file's end uses it
  const schema = `duetime_test_${randomBytes(6).toString("hex")}`;
  schemas.push(schema);
  return { url: TEST_PG_URL, schema };
}

/** A queue one-off of tenant t1, pool p, created at createdAt, its execution due at `at`. */
export function oneOffJob(createdAt: number, at: number, priority = 0): NewJob {
  const jobId = newId(createdAt);
  return {
    job: {
      tenantId: "t1",
      jobId,
      shard: shardOf(jobId),
      kind: "once",
      name: "j",
      state: "SCHEDULED",
      target: { type: "queue", pool: "p" },
      payload: null,
      schedule: { runAt: new Date(at).toISOString() },
      retry: { maxAttempts: 3, backoffSeconds: 1, maxBackoffSeconds: 1 },
      timeoutSeconds: 30,
      priority,
      mode: "live",
      createdAt,
    },
    due: null,
    execution: { scheduledFor: at, dueAt: at },
  };
}
