// @duetime/sdk: the HTTP client, the worker, their errors, and the wire types.
// No database driver and no server framework (a test checks what it loads).
export * from "./api.js";
export { ERROR_CODES } from "./error-codes.js";
export { DuetimeClient } from "./client.js";
export { Worker } from "./worker.js";
export { AckBuffer } from "./acks.js";
export { DuetimeApiError, NonRetryableError, ThrottledError, AttemptAbortedError, coerceError, hasErrorCode, } from "./errors.js";
// Receivers of HTTP callbacks check Duetime-Signature with this.
export { verifySignature } from "./signing.js";
//# sourceMappingURL=index.js.map