// PostgreSQL's faults, classified once for the whole driver: the ones that
// pass (a lost or refused connection, a server shutting down, a full disk, a
// read-only standby, a statement past its timeout) become
// StoreUnavailableError; anything else (a constraint, a syntax error, a bug)
// is thrown as it is.

import { StoreUnavailableError, type StoreFaultKind } from "../../core/errors.js";

/** By SQLSTATE (https://www.postgresql.org/docs/current/errcodes-appendix.html). */
const BY_SQLSTATE: Record<string, StoreFaultKind> = {
  "53100": "full", // disk_full
  "53300": "connection", // too_many_connections
  "25006": "readonly", // read_only_sql_transaction: a standby, or default_transaction_read_only
  "57014": "timeout", // query_canceled: the statement timeout
  "57P01": "connection", // admin_shutdown (pg_terminate_backend, a fast shutdown)
  "57P02": "connection", // crash_shutdown
  "57P03": "connection", // cannot_connect_now (starting up, shutting down)
  "58030": "io", // io_error
  "40P01": "busy", // deadlock_detected, still after the transaction's retries
  "55P03": "busy", // lock_not_available
};

/** Socket errors of Node's net module while connecting or talking to the server. */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** pg's own errors for a connection that ended, never came, or stopped answering (query_timeout); they carry no code. */
const PG_CONNECTION_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout)/;

/** The kind of store fault a pg (or socket) error is, or null when it is not one. */
export function postgresFaultKind(error: unknown): StoreFaultKind | null {
  if (error instanceof AggregateError) {
    // Node tries each address of a host name; every one failed.
    for (const inner of error.errors) if (postgresFaultKind(inner) === "connection") return "connection";
  }
  if (!(error instanceof Error)) return null;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") {
    if (code in BY_SQLSTATE) return BY_SQLSTATE[code]!;
    if (/^08[0-9A-Z]{3}$/.test(code)) return "connection"; // class 08: connection exception
    if (SOCKET_CODES.has(code)) return "connection";
  }
  return PG_CONNECTION_MESSAGES.test(error.message) ? "connection" : null;
}

/** Throws what a caller of the store should see for a driver error. */
export function rethrowPostgresError(error: unknown): never {
  const kind = postgresFaultKind(error);
  throw kind ? new StoreUnavailableError(kind, error) : error;
}
