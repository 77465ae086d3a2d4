import { type Dispatcher } from "undici";
import { type BackoffPolicy } from "./backoff.js";
import { DuetimeApiError } from "./errors.js";
export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE";
/** Per-call options every client method accepts as its last argument. */
export interface CallOptions {
    /** Aborts the call (and its retries); the promise rejects with signal.reason. */
    signal?: AbortSignal;
    /** Overrides the client's per-attempt timeout. */
    timeoutMs?: number;
}
export interface RetryInfo {
    method: HttpMethod;
    path: string;
    /** 1 for the first retry. */
    retry: number;
    delayMs: number;
    error: DuetimeApiError;
}
export interface TransportOptions {
    url: string;
    token?: string;
    timeoutMs: number;
    retries: number;
    backoff: BackoffPolicy;
    /** A Retry-After longer than this is not waited for: the call fails with retryAfterSeconds set. */
    maxRetryAfterMs: number;
    dispatcher?: Dispatcher;
    userAgent: string;
    onRetry?: (info: RetryInfo) => void;
}
export interface HttpCall {
    method: HttpMethod;
    /** Path with ids already encoded, e.g. `/v1/jobs/abc:pause`. */
    path: string;
    query?: Record<string, string | number | undefined>;
    body?: unknown;
    headers?: Record<string, string>;
    /** Whether repeating the call is harmless (see client.ts for the reasoning per route). */
    idempotent: boolean;
    /** Added to the per-attempt timeout (a long poll's wait). */
    extraTimeoutMs?: number;
    options?: CallOptions;
}
export interface HttpReply {
    status: number;
    body: unknown;
}
export declare class Transport {
    private readonly options;
    private readonly base;
    private readonly dispatcher;
    private readonly ownsDispatcher;
    constructor(options: TransportOptions);
    get url(): string;
    close(): Promise<void>;
    send(call: HttpCall): Promise<HttpReply>;
    private retryDelay;
    private once;
}
