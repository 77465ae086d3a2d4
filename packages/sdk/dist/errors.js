// Errors of the SDK: what the client throws for an API or network failure,
// what a handler throws to steer retries, and coerceError(), the one function
// that turns any thrown value into the ErrorRecord a fail call carries.
/**
 * An API call that did not succeed. `code` is the envelope's error code (one
 * of core/errors.ts's ErrorCode, or a newer code this SDK does not know yet);
 * `status` is the HTTP status, or 0 when no response arrived (network error,
 * timeout: then `code` is "UNAVAILABLE").
 */
export class DuetimeApiError extends Error {
    code;
    status;
    details;
    /** From the Retry-After header (429, 503), in seconds. */
    retryAfterSeconds;
    constructor(code, message, init) {
        super(message, init.cause === undefined ? undefined : { cause: init.cause });
        this.name = "DuetimeApiError";
        this.code = code;
        this.status = init.status;
        if (init.details !== undefined)
            this.details = init.details;
        if (init.retryAfterSeconds !== undefined)
            this.retryAfterSeconds = init.retryAfterSeconds;
    }
}
/** True when err carries the given error code (a DuetimeApiError, or the engine's DuetimeError in embedded mode). */
export function hasErrorCode(err, code) {
    return typeof err === "object" && err !== null && err.code === code;
}
/** Throw from a handler to fail the attempt for good: the execution is DEAD at once. */
export class NonRetryableError extends Error {
    nonRetryable = true;
    constructor(message, options) {
        super(message, options);
        this.name = "NonRetryableError";
    }
}
/** Throw from a handler when the downstream asked to slow down: the retry waits at least retryAfterSeconds. */
export class ThrottledError extends Error {
    retryAfterSeconds;
    constructor(message, retryAfterSeconds, options) {
        super(message, options);
        this.name = "ThrottledError";
        if (!Number.isFinite(retryAfterSeconds) || retryAfterSeconds < 0) {
            throw new RangeError(`ThrottledError: retryAfterSeconds must be a number >= 0, got ${retryAfterSeconds}`);
        }
        this.retryAfterSeconds = retryAfterSeconds;
    }
}
/** The signal.reason a handler sees when the Worker aborts its attempt. */
export class AttemptAbortedError extends Error {
    reason;
    constructor(reason, message) {
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
export function coerceError(err) {
    if (err instanceof Error) {
        const record = { message: truncate(err.message || err.name || "Error"), class: "transient" };
        if (err.name && err.name !== "Error")
            record.name = err.name;
        const shaped = err;
        if (err instanceof NonRetryableError || shaped.nonRetryable === true) {
            record.class = "permanent";
        }
        else if (err instanceof ThrottledError || (err.name === "ThrottledError" && typeof shaped.retryAfterSeconds === "number")) {
            record.class = "throttled";
            record.retryAfterSeconds = shaped.retryAfterSeconds;
        }
        return record;
    }
    if (typeof err === "string")
        return { message: truncate(err || "(empty error string)"), class: "transient" };
    return { message: truncate(`non-error thrown: ${describe(err)}`), class: "transient" };
}
function describe(value) {
    if (value === undefined)
        return "undefined";
    try {
        return JSON.stringify(value) ?? String(value);
    }
    catch {
        return String(value);
    }
}
function truncate(message) {
    return message.length <= MAX_ERROR_MESSAGE ? message : `${message.slice(0, MAX_ERROR_MESSAGE - 1)}…`;
}
//# sourceMappingURL=errors.js.map