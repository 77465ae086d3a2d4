// SQLite's error codes, classified once for the whole driver: the faults that
// pass (a full disk, a lock, an I/O error) become StoreUnavailableError;
// anything else (a constraint, corruption, a bug) is thrown as it is.

import Database from "better-sqlite3";
import { StoreUnavailableError, type StoreFaultKind } from "../../core/errors.js";

/** By primary result code; extended codes (SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT, …) share their primary's kind. */
const KINDS: Record<string, StoreFaultKind> = {
  SQLITE_FULL: "full",
  SQLITE_IOERR: "io",
  SQLITE_BUSY: "busy",
  SQLITE_LOCKED: "busy",
  SQLITE_READONLY: "readonly",
  SQLITE_CANTOPEN: "cantopen",
};

/** The kind of store fault a better-sqlite3 error is, or null when it is not one. */
export function sqliteFaultKind(error: unknown): StoreFaultKind | null {
  if (!(error instanceof Database.SqliteError)) return null;
  const primary = error.code.split("_", 2).join("_");
  return KINDS[primary] ?? null;
}

/** Throws what a caller of the store should see for a driver error. */
export function rethrowSqliteError(error: unknown): never {
  const kind = sqliteFaultKind(error);
  throw kind ? new StoreUnavailableError(kind, error) : error;
}
