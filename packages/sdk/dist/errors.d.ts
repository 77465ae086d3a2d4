import type { ErrorRecord } from "./api.js";
import type { ErrorCode, ErrorDetails } from "./error-codes.js";
/**
 * An API call that did not succeed. `code` is the envelope's error code (one
 * of core/errors.ts's ErrorCode, or a newer code this SDK does not know yet);
 * `status` is the HTTP status, or 0 when no response arrived (network error,
 * timeout: then `code` is "UNAVAILABLE").
 */
export declare class DuetimeApiError extends Error {
    readonly code: ErrorCode | (string & {});
    readonly status: number;
    readonly details?: ErrorDetails;
    /** From the Retry-After header (429, 503), in seconds. */
    readonly retryAfterSeconds?: number;
    constructor(code: ErrorCode | (string & {}), message: string, init: {
        status: number;
        details?: ErrorDetails;
        retryAfterSeconds?: number;
        cause?: unknown;
    });
}
/** True when err carries the given error code (a DuetimeApiError, or the engine's DuetimeError in embedded mode). */
export declare function hasErrorCode(err: unknown, code: ErrorCode): boolean;
/** Throw from a handler to fail the attempt for good: the execution is DEAD at once. */
export declare class NonRetryableError extends Error {
    readonly nonRetryable = true;
    constructor(message: string, options?: {
        cause?: unknown;
    });
}
/** Throw from a handler when the downstream asked to slow down: the retry waits at least retryAfterSeconds. */
export declare class ThrottledError extends Error {
    readonly retryAfterSeconds: number;
    constructor(message: string, retryAfterSeconds: number, options?: {
        cause?: unknown;
    });
}
/** Why the Worker aborted a handler's signal. */
export type AbortReason = "lease_lost" | "cancelled" | "timeout" | "shutdown";
/** The signal.reason a handler sees when the Worker aborts its attempt. */
export declare class AttemptAbortedError extends Error {
    readonly reason: AbortReason;
    constructor(reason: AbortReason, message: string);
}
/** Longest message kept in an ErrorRecord; the server stores it with every attempt. */
export declare const MAX_ERROR_MESSAGE = 2000;
/**
 * Normalises anything a handler threw into an ErrorRecord:
 * NonRetryableError → "permanent", ThrottledError → "throttled" (with
 * retryAfterSeconds), everything else → "transient". Errors from another copy
 * of this SDK are recognised by shape (`nonRetryable: true`, name
 * "ThrottledError").
 */
export declare function coerceError(err: unknown): ErrorRecord;
