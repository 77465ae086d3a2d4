// The server's errors: DuetimeError (the one error type that crosses layers;
// the server maps it to the envelope), store faults and their helpers. The
// catalog of codes is part of the wire contract and lives with it in the SDK
// package (@duetime/sdk/contract, error-codes.ts).

import { ERROR_CODES, type ErrorCode, type ErrorDetails } from "@duetime/sdk/contract";

export { ERROR_CODES, isErrorCode, type ErrorCode, type ErrorDetails } from "@duetime/sdk/contract";

/** The one error type that crosses layers; the server maps it to the envelope. */
export class DuetimeError extends Error {
  readonly code: ErrorCode;
  readonly details?: ErrorDetails;
  /** Seconds a client should wait before retrying (429, 503). */
  readonly retryAfterSeconds?: number;

  constructor(code: ErrorCode, message: string, details?: ErrorDetails, retryAfterSeconds?: number) {
    super(message);
    this.name = "DuetimeError";
    this.code = code;
    if (details !== undefined) this.details = details;
    if (retryAfterSeconds !== undefined) this.retryAfterSeconds = retryAfterSeconds;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  toJSON(): { error: { code: ErrorCode; message: string; details?: ErrorDetails } } {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}

/** Why a store cannot serve for now; the `kind` label of duetime_store_failures_total. */
export type StoreFaultKind = "full" | "io" | "corrupt" | "busy" | "readonly" | "cantopen" | "connection" | "timeout";

const STORE_FAULTS: Record<StoreFaultKind, string> = {
  full: "the disk holding the database is full",
  io: "the database had an I/O error",
  corrupt: "the database file could not be read (a read I/O error from a failing disk, or a damaged file)",
  busy: "the database stayed locked by another connection past the busy timeout",
  readonly: "the database is read-only",
  cantopen: "the database file cannot be opened",
  connection: "the connection to the database was lost or refused",
  timeout: "a statement ran past the store's statement timeout",
};

/**
 * A store fault that should pass (a full disk, a lock, a lost connection),
 * not a bug: drivers throw it (store/store.ts), the engine counts it and
 * turns readiness off, the API answers 503 STORE_UNAVAILABLE.
 */
export class StoreUnavailableError extends DuetimeError {
  readonly kind: StoreFaultKind;

  constructor(kind: StoreFaultKind, cause: unknown) {
    super("STORE_UNAVAILABLE", `the store cannot serve this now: ${STORE_FAULTS[kind]}; retry later`, { kind });
    this.name = "StoreUnavailableError";
    this.kind = kind;
    this.cause = cause;
  }
}

export function invalidArgument(field: string, message: string, extra?: ErrorDetails): DuetimeError {
  return new DuetimeError("INVALID_ARGUMENT", `${field}: ${message}`, { field, ...extra });
}

export function notFound(what: string, id: string): DuetimeError {
  return new DuetimeError("NOT_FOUND", `${what} ${JSON.stringify(id)} not found`);
}
