// The PostgreSQL the cluster tests run against: 127.0.0.1:5432, user
// postgres, database test (CONTRIBUTING.md). Each test gets its own schema,
// and its nodes connect under an application_name of that schema's name, so
// a test can cut its own nodes' connections without touching anyone else's.

import { randomBytes } from "node:crypto";
import pg from "pg";

export const POSTGRES_URL = process.env.DUETIME_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Whether PostgreSQL answers; with CI=true a missing one fails the tests instead of skipping them. */
export async function postgresAvailable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Runs one statement on a connection of its own (not a duetime node's). */
export async function adminQuery<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, application_name: "duetime-cluster-test-admin" });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

export interface TestSchema {
  name: string;
  drop(): Promise<void>;
}

export async function createSchema(): Promise<TestSchema> {
  const name = `cluster_${randomBytes(6).toString("hex")}`;
  await adminQuery(`CREATE SCHEMA ${name}`);
  return {
    name,
    async drop() {
      await terminateConnections(name);
      await adminQuery(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    },
  };
}

/** pg_terminate_backend of every connection whose application_name is this one; answers how many. */
export async function terminateConnections(applicationName: string): Promise<number> {
  const rows = await adminQuery<{ terminated: boolean }>(
    "SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()",
    [applicationName],
  );
  return rows.filter((r) => r.terminated).length;
}

/** The database's clock, epoch ms. */
export async function databaseNow(): Promise<number> {
  const [row] = await adminQuery<{ now: Date }>("SELECT clock_timestamp() AS now");
  return row!.now.getTime();
}
