// The error catalog: every code the API can answer, its HTTP status and what
// a user should do about it. docs/errors.md is checked against this table by
// a test, so the two cannot drift apart.

export const ERROR_CODES = {
  INVALID_ARGUMENT: { status: 400, hint: "Fix the field named in details.field and send the request again." },
  UNAUTHENTICATED: { status: 401, hint: "Send Authorization: Bearer <key> with a valid API key." },
  PERMISSION_DENIED: { status: 403, hint: "Use a key whose role allows this call." },
  NOT_FOUND: { status: 404, hint: "Check the id; ids of other tenants are not visible." },
  IDEMPOTENCY_MISMATCH: { status: 409, hint: "Use a new Idempotency-Key for a different request body." },
  LEASE_LOST: { status: 409, hint: "The attempt's lease expired or was superseded; stop working on it." },
  INVALID_STATE: { status: 409, hint: "The resource's state does not allow this action; GET it to see its state." },
  VERSION_CONFLICT: { status: 409, hint: "Someone changed the resource; GET it and retry with the new version." },
  PAYLOAD_TOO_LARGE: { status: 413, hint: "Send a smaller body, or raise the server's body limit." },
  RESOURCE_EXHAUSTED: { status: 429, hint: "Slow down and retry after the Retry-After header." },
  INTERNAL: { status: 500, hint: "A bug in duetime; the server log has the details." },
  // Before UNAVAILABLE: a client that maps a bare 503 back to a code (sdk/http.ts) keeps UNAVAILABLE.
  STORE_UNAVAILABLE: {
    status: 503,
    hint: "The store cannot write for now (disk full, I/O error, locked, read-only); retry after the Retry-After header and tell the operator.",
  },
  UNAVAILABLE: { status: 503, hint: "The store is unreachable; retry after the Retry-After header." },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetails {
  field?: string;
  [key: string]: unknown;
}

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
export type StoreFaultKind = "full" | "io" | "busy" | "readonly" | "cantopen" | "connection" | "timeout";

const STORE_FAULTS: Record<StoreFaultKind, string> = {
  full: "the disk holding the database is full",
  io: "the database had an I/O error",
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

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(ERROR_CODES, value);
}
