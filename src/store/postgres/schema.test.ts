// Migrations on PostgreSQL: applied once into the named schema, created if
// absent, even when several nodes open a fresh database at the same moment;
// and a schema name that is not one is refused, naming the option.

import assert from "node:assert/strict";
import { test } from "node:test";
import { DuetimeError } from "../../core/errors.js";
import { openStore } from "../factory.js";
import { openPostgresStore } from "./index.js";
import { MIGRATIONS } from "./schema.js";
import { adminPool, freshPostgresSchema, postgresAvailable } from "./test-support.js";

test("a schema name that is not [a-z_][a-z0-9_]{0,62} is InvalidArgument naming schema, before any connection", async () => {
  for (const schema of ["", "Duetime", "1abc", "due-time", 'x"; DROP SCHEMA public; --', "a".repeat(64), "dué"]) {
    await assert.rejects(openPostgresStore({ url: "postgres://postgres@127.0.0.1:1/none", schema }), (err: unknown) => {
      assert.ok(err instanceof DuetimeError, String(err));
      assert.equal(err.code, "INVALID_ARGUMENT");
      assert.equal(err.details?.field, "schema");
      return true;
    }, JSON.stringify(schema));
  }
});

if (await postgresAvailable("PostgreSQL migrations")) {
  test("nodes opening one fresh schema at once all succeed, and each migration is applied once", async () => {
    const { url, schema } = freshPostgresSchema();
    // Through the factory, as `duetime serve --store postgres://…` opens it.
    const stores = await Promise.all(Array.from({ length: 4 }, () => openStore(url, { schema })));
    try {
      const { rows } = await adminPool().query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
      assert.deepEqual(rows.map((r: { version: number }) => r.version), MIGRATIONS.map((m) => m.version));
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

}
