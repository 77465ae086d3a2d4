// SQLite's error codes, classified once for the whole driver: the faults of
// the file and its disk (full, locked, an I/O error, unreadable) become
// StoreUnavailableError; anything else (a constraint, a bug) is thrown as it
// is. SQLite reports an EIO on a read as SQLITE_CORRUPT (the unix VFS's
// SQLITE_IOERR_CORRUPTFS), so a failing disk and a damaged file share one
// code: either way the node cannot serve and must leave the load balancer.

import Database from "better-sqlite3";
import { StoreUnavailableError, type StoreFaultKind } from "../../core/errors.js";

/** By primary result code; extended codes (SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT, …) share their primary's kind. */
const KINDS: Record<string, StoreFaultKind> = {
  SQLITE_FULL: "full",
  SQLITE_IOERR: "io",
  SQLITE_CORRUPT: "corrupt",
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
