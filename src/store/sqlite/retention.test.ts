// Retention never reads a whole table: every statement of
// sqlite/retention.ts searches an index (migration 4) in time order, or a
// primary key for the rows it was given, so a batch of 500 costs 500 rows on
// a table of a billion. SQLite-specific by nature (query plans); the
// behaviour itself is in the store contract.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";

import { openSqliteStore } from "./index.js";
import { CHILDREN_SQL, EXPIRED_SQL, PURGE_ONLY_SQL, PURGE_SQL } from "./retention.js";

test("every retention statement searches an index (in time order, or by key), never scans or sorts a table", async () => {
  const dir = await mkdtemp(join(tmpdir(), "duetime-retention-plan-"));
  try {
    const path = join(dir, "duetime.db");
    await (await openSqliteStore({ path })).close(); // migrated
    const db = new Database(path, { readonly: true });
    try {
      const statements = Object.entries({ EXPIRED_SQL, PURGE_SQL, PURGE_ONLY_SQL, CHILDREN_SQL }).flatMap(([group, sqls]) =>
        Object.entries(sqls).map(([kind, sql]) => [`${group}.${kind}`, sql] as const),
      );
      for (const [name, sql] of statements) {
        const plan = (
          db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ before: 0, limit: 1, ids: "[]", keys: "[]", jobIds: "[]" }) as { detail: string }[]
        ).map((r) => r.detail);
        const bad = plan.filter((step) => (/^SCAN /.test(step) && !/^SCAN json_each/.test(step)) || /TEMP B-TREE/.test(step));
        assert.deepEqual(bad, [], `${name}: ${plan.join(" | ")}`);
        assert.ok(
          plan.some((step) => /^SEARCH .* USING .*(INDEX|PRIMARY KEY)/.test(step)),
          `${name} searches an index: ${plan.join(" | ")}`,
        );
      }
    } finally {
      db.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
