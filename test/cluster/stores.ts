// The one store a cluster test's nodes share: a fresh SQLite file, or a fresh
// PostgreSQL schema on 127.0.0.1:5432, so tests run in parallel. clusterTest
// declares a scenario once per store.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { adminPool, freshPostgresSchema, postgresAvailable } from "../../src/store/postgres/test-support.js";

export type StoreKind = "sqlite" | "postgres";

export interface ClusterStore {
  kind: StoreKind;
  /** The serve flags that name it: --store, and --schema on PostgreSQL. */
  args: string[];
  /** PostgreSQL: the schema, which is also the application_name of the nodes' connections. */
  schema?: string;
  drop(): Promise<void>;
}

async function sqliteStore(): Promise<ClusterStore> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-cluster-"));
  return {
    kind: "sqlite",
    args: ["--store", `sqlite:${join(dir, "duetime.db")}`],
    async drop() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresStore(): ClusterStore {
  // Created by the first node's migration; dropped with everything in it when the file's tests end.
  const { url, schema } = freshPostgresSchema();
  const named = new URL(url);
  // The nodes' connections carry the schema's name (a URL parameter wins over the driver's default name).
  named.searchParams.set("application_name", schema);
  return { kind: "postgres", args: ["--store", named.toString(), "--schema", schema], schema, drop: async () => {} };
}

/**
 * Declares the scenario once per store, titled "[kind] title". Without a
 * reachable PostgreSQL its variant fails with CI=true and skips, loudly,
 * elsewhere (test-support.ts's postgresAvailable).
 */
export async function clusterTest(
  title: string,
  kinds: readonly StoreKind[],
  fn: (t: TestContext, store: ClusterStore) => Promise<void>,
): Promise<void> {
  for (const kind of kinds) {
    const name = `[${kind}] ${title}`;
    if (kind === "postgres") {
      if (!(await postgresAvailable(name))) continue;
      adminPool(); // now, at the file's top level: the schemas are dropped when the file ends, after its nodes
    }
    test(name, async (t) => fn(t, kind === "sqlite" ? await sqliteStore() : postgresStore()));
  }
}
