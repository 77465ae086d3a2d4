export interface BackoffPolicy {
    /** Delay before the first retry, before jitter (ms). */
    baseMs: number;
    /** Upper bound of any computed delay (ms). */
    maxMs: number;
}
/**
 * Exponential backoff with "equal jitter": retry n (0-based) waits between
 * half and all of min(maxMs, baseMs × 2^n), so retries spread out but never
 * collapse to zero.
 */
export declare function backoffDelay(retry: number, policy: BackoffPolicy, random?: () => number): number;
/**
 * Parses a Retry-After header: delta-seconds or an HTTP date (relative to
 * nowMs). Returns seconds (≥ 0), or undefined when absent or unreadable.
 */
export declare function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined;
/** Resolves after ms, or rejects with signal.reason as soon as signal aborts. */
export declare function sleep(ms: number, signal?: AbortSignal): Promise<void>;
/** Like sleep, but resolves (never rejects) when signal aborts: for loops that check their own state after waking. */
export declare function pause(ms: number, signal?: AbortSignal): Promise<void>;
/** Runs fn after ms (a ref'd timer); returns a function that cancels it. */
export declare function later(fn: () => void, ms: number): () => void;
