// The one store a cluster test's nodes share: a fresh SQLite file, or a fresh
// PostgreSQL schema on 127.0.0.1:5432, so tests run in parallel. clusterTest
// declares a scenario once per store.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { createSchema, POSTGRES_URL, postgresAvailable } from "./postgres.js";

export type StoreKind = "sqlite" | "postgres";

export interface ClusterStore {
  kind: StoreKind;
  /** The serve flags that name it: --store, and --schema on PostgreSQL. */
  args: string[];
  /** Extra environment of the nodes. */
  env: Record<string, string>;
  /** PostgreSQL: the schema, which is also the application_name of the nodes' connections. */
  schema?: string;
  drop(): Promise<void>;
}

async function sqliteStore(): Promise<ClusterStore> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-cluster-"));
  return {
    kind: "sqlite",
    args: ["--store", `sqlite:${join(dir, "duetime.db")}`],
    env: {},
    async drop() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresStore(): Promise<ClusterStore> {
  const schema = await createSchema();
  return {
    kind: "postgres",
    args: ["--store", POSTGRES_URL, "--schema", schema.name],
    // node-postgres names its connections after PGAPPNAME: the test can find its own nodes' connections.
    env: { PGAPPNAME: schema.name },
    schema: schema.name,
    drop: () => schema.drop(),
  };
}

const postgresUp = await postgresAvailable();

/**
 * Declares the scenario once per store, titled "[kind] title". Without a
 * reachable PostgreSQL its variant fails with CI=true and skips, loudly, elsewhere.
 */
export function clusterTest(title: string, kinds: readonly StoreKind[], fn: (t: TestContext, store: ClusterStore) => Promise<void>): void {
  for (const kind of kinds) {
    const name = `[${kind}] ${title}`;
    if (kind === "postgres" && !postgresUp) {
      const why = `PostgreSQL is not reachable at ${POSTGRES_URL}`;
      if (process.env.CI === "true") test(name, () => assert.fail(`${why} (CI=true: the cluster tests need it)`));
      else {
        console.warn(`\n*** SKIPPED: ${name}: ${why} ***\n`);
        test(name, { skip: why }, () => {});
      }
      continue;
    }
    test(name, async (t) => fn(t, kind === "sqlite" ? await sqliteStore() : await postgresStore()));
  }
}
