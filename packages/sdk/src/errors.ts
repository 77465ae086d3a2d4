// Errors of the SDK: what the client throws for an API or network failure,
// what a handler throws to steer retries, and coerceError(), the one function
// that turns any thrown value into the ErrorRecord a fail call carries.

import type { ErrorRecord } from "./api.js";
import type { ErrorCode, ErrorDetails } from "./error-codes.js";

/**
 * An API call that did not succeed. `code` is the envelope's error code (one
 * of core/errors.ts's ErrorCode, or a newer code this SDK does not know yet);
 * `status` is the HTTP status, or 0 when no response arrived (network error,
 * timeout: then `code` is "UNAVAILABLE").
 */
export class DuetimeApiError extends Error {
  readonly code: ErrorCode | (string & {});
  readonly status: number;
  readonly details?: ErrorDetails;
  /** From the Retry-After header (429, 503), in seconds. */
  readonly retryAfterSeconds?: number;

  constructor(
    code: ErrorCode | (string & {}),
    message: string,
    init: { status: number; details?: ErrorDetails; retryAfterSeconds?: number; cause?: unknown },
  ) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "DuetimeApiError";
    this.code = code;
    this.status = init.status;
    if (init.details !== undefined) this.details = init.details;
    if (init.retryAfterSeconds !== undefined) this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

/** True when err carries the given error code (a DuetimeApiError, or the engine's DuetimeError in embedded mode). */
export function hasErrorCode(err: unknown, code: ErrorCode): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === code;
}

/** Throw from a handler to fail the attempt for good: the execution is DEAD at once. */
export class NonRetryableError extends Error {
  readonly nonRetryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

/** Throw from a handler when the downstream asked to slow down: the retry waits at least retryAfterSeconds. */
export class ThrottledError extends Error {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ThrottledError";
    if (!Number.isFinite(retryAfterSeconds) || retryAfterSeconds < 0) {
      throw new RangeError(`ThrottledError: retryAfterSeconds must be a number >= 0, got ${retryAfterSeconds}`);
    }
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Why the Worker aborted a handler's signal. */
export type AbortReason = "lease_lost" | "cancelled" | "timeout" | "shutdown";

/** The signal.reason a handler sees when the Worker aborts its attempt. */
export class AttemptAbortedError extends Error {
  readonly reason: AbortReason;
  constructor(reason: AbortReason, message: string) {
    super(message);
    this.name = "AttemptAbortedError";
    this.reason = reason;
  }
}

/** Longest message kept in an ErrorRecord; the server stores it with every attempt. */
export const MAX_ERROR_MESSAGE = 2000;

/**
 * Normalises anything a handler threw into an ErrorRecord:
 * NonRetryableError → "permanent", ThrottledError → "throttled" (with
 * retryAfterSeconds), everything else → "transient". Errors from another copy
 * of this SDK are recognised by shape (`nonRetryable: true`, name
 * "ThrottledError").
 */
export function coerceError(err: unknown): ErrorRecord {
  if (err instanceof Error) {
    const record: ErrorRecord = { message: truncate(err.message || err.name || "Error"), class: "transient" };
    if (err.name && err.name !== "Error") record.name = err.name;
    const shaped = err as { nonRetryable?: unknown; retryAfterSeconds?: unknown };
    if (err instanceof NonRetryableError || shaped.nonRetryable === true) {
      record.class = "permanent";
    } else if (err instanceof ThrottledError || (err.name === "ThrottledError" && typeof shaped.retryAfterSeconds === "number")) {
      record.class = "throttled";
      record.retryAfterSeconds = shaped.retryAfterSeconds as number;
    }
    return record;
  }
  if (typeof err === "string") return { message: truncate(err || "(empty error string)"), class: "transient" };
  return { message: truncate(`non-error thrown: ${describe(err)}`), class: "transient" };
}

function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function truncate(message: string): string {
  return message.length <= MAX_ERROR_MESSAGE ? message : `${message.slice(0, MAX_ERROR_MESSAGE - 1)}…`;
}
