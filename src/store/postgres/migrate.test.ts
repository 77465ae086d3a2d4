// Migrations on PostgreSQL: applied once into the named schema, created if
// absent, even when several nodes open a fresh database at the same moment,
// and by `duetime migrate` (a real child process); a schema name that is not
// one is refused, naming the option.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { test } from "node:test";
import { DuetimeError } from "../../core/errors.js";
import { openStore } from "../factory.js";
import { openPostgresStore } from "./index.js";
import { MIGRATIONS } from "./schema.js";
import { adminPool, freshPostgresSchema, postgresAvailable } from "./test-support.js";

test("a schema name that is not [a-z_][a-z0-9_]{0,62} is InvalidArgument naming schema, before any connection", async () => {
  for (const schema of ["", "Duetime", "1abc", "due-time", 'x"; DROP SCHEMA public; --', "a".repeat(64), "dué"]) {
    await assert.rejects(
      openPostgresStore({ url: "postgres://postgres@127.0.0.1:1/none", schema }),
      (err: unknown) => {
        assert.ok(err instanceof DuetimeError, String(err));
        assert.equal(err.code, "INVALID_ARGUMENT");
        assert.equal(err.details?.field, "schema");
        return true;
      },
      JSON.stringify(schema),
    );
  }
});

if (await postgresAvailable("PostgreSQL migrations")) {
  test("nodes opening one fresh schema at once all succeed, and each migration is applied once", async () => {
    const { url, schema } = freshPostgresSchema();
    // Through the factory, as `duetime serve --store postgres://…` opens it.
    const stores = await Promise.all(Array.from({ length: 4 }, () => openStore(url, { schema })));
    try {
      const { rows } = await adminPool().query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
      assert.ok(rows.length > 0);
      assert.deepEqual(
        rows.map((r: { version: number }) => r.version),
        MIGRATIONS.map((m) => m.version),
      );
      for (const store of stores) await store.ping();
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  test("migrate: false opens without creating anything; migrate() then creates the schema and its tables", async () => {
    const { url, schema } = freshPostgresSchema();
    const store = await openStore(url, { schema, migrate: false });
    try {
      const exists = async () => (await adminPool().query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rowCount === 1;
      assert.equal(await exists(), false);
      await store.migrate();
      assert.equal(await exists(), true);
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: "x" }), null, "the tables are there");
    } finally {
      await store.close();
    }
  });

  test("duetime migrate --schema applies the migrations once, and a second run finds the store current", async () => {
    const { url, schema } = freshPostgresSchema();
    const bin = fileURLToPath(new URL("../../../bin/duetime.js", import.meta.url));
    const migrate = async () => {
      const { stdout } = await promisify(execFile)(process.execPath, [bin, "migrate", "--store", url, "--schema", schema, "--json"], {
        timeout: 60_000,
      });
      return JSON.parse(stdout) as { applied: number[]; version: number };
    };
    const latest = MIGRATIONS[MIGRATIONS.length - 1]!.version;
    assert.deepEqual(await migrate(), { applied: MIGRATIONS.map((m) => m.version), version: latest });
    assert.deepEqual(await migrate(), { applied: [], version: latest });
  });
}
