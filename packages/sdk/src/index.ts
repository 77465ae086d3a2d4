// @duetime/sdk: the HTTP client, the worker, their errors, and the wire types.
// No database driver and no server framework (a test checks what it loads).

export * from "./api.js";
export { ERROR_CODES, type ErrorCode, type ErrorDetails } from "./error-codes.js";
export { DuetimeClient, type ClientOptions, type RetryInfo } from "./client.js";
export type { DuetimeApi, WorkerApi, CallOptions, AttemptOptions, CreateJobOptions, CreateJobsOptions, UpdateJobOptions } from "./operations.js";
export { Worker, type WorkerOptions, type Handler, type HandlerContext } from "./worker.js";
export type { WorkerEvent, WorkerEventType, WorkerState } from "./events.js";
export type { SdkClock } from "./backoff.js";
export { AckBuffer, type AckBufferOptions, type AckSink, type PendingAcks } from "./acks.js";
export {
  DuetimeApiError,
  NonRetryableError,
  ThrottledError,
  AttemptAbortedError,
  coerceError,
  hasErrorCode,
  type AbortReason,
} from "./errors.js";
// Receivers of HTTP callbacks check Duetime-Signature with this.
export { verifySignature, type VerifyOptions } from "./signing.js";
