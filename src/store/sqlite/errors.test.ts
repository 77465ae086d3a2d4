// The SQLite driver's fault classification, on real files: a lock held by
// another connection past the busy timeout is a typed store fault, and so
// is every code of the file and its disk; other errors pass through as they are.
// A full disk is test/store-full.test.ts.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { StoreUnavailableError } from "../../core/errors.js";
import { openSqliteStore } from "./index.js";
import { sqliteFaultKind } from "./errors.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-faults-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a write lock held by another connection past the busy timeout is StoreUnavailableError busy; released, writes go on", async () => {
  const path = join(dir, "locked.db");
  const store = await openSqliteStore({ path, busyTimeoutMs: 50 });
  const other = new Database(path);
  try {
    other.exec("BEGIN EXCLUSIVE");
    await assert.rejects(store.pingWrite(), (err: unknown) => {
      assert.ok(err instanceof StoreUnavailableError, `a StoreUnavailableError, got ${String(err)}`);
      assert.equal(err.kind, "busy");
      assert.equal(err.code, "STORE_UNAVAILABLE");
      assert.equal(err.status, 503);
      assert.equal((err.cause as { code?: string }).code, "SQLITE_BUSY");
      return true;
    });
    await store.ping(); // reads go on under WAL
    other.exec("COMMIT");
    await store.pingWrite();
  } finally {
    other.close();
    await store.close();
  }
});

test("SQLite's codes of the file and its disk, extended ones included, are store faults; others are not", () => {
  const cases: [string, string | null][] = [
    ["SQLITE_FULL", "full"],
    ["SQLITE_IOERR", "io"],
    ["SQLITE_IOERR_WRITE", "io"],
    ["SQLITE_IOERR_FSYNC", "io"],
    ["SQLITE_BUSY", "busy"],
    ["SQLITE_BUSY_SNAPSHOT", "busy"],
    ["SQLITE_LOCKED", "busy"],
    ["SQLITE_READONLY", "readonly"],
    ["SQLITE_READONLY_DBMOVED", "readonly"],
    ["SQLITE_CANTOPEN", "cantopen"],
    ["SQLITE_CONSTRAINT_UNIQUE", null],
    ["SQLITE_CORRUPT", "corrupt"],
    ["SQLITE_CORRUPT_INDEX", "corrupt"],
    ["SQLITE_NOTADB", null],
    ["SQLITE_ERROR", null],
  ];
  for (const [code, kind] of cases) assert.equal(sqliteFaultKind(new Database.SqliteError("m", code)), kind, code);
  assert.equal(sqliteFaultKind(Object.assign(new Error("m"), { code: "SQLITE_FULL" })), null, "only better-sqlite3's errors");
});
