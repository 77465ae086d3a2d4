// Backoff arithmetic and the SDK's one abortable sleep. This file is the SDK's
// runtime wiring for timers: core's systemClock unrefs its timers (right for
// the engine), but a worker backing off while the server restarts must keep
// its process alive, so the SDK owns a ref'd sleep here.
/**
 * Exponential backoff with "equal jitter": retry n (0-based) waits between
 * half and all of min(maxMs, baseMs × 2^n), so retries spread out but never
 * collapse to zero.
 */
export function backoffDelay(retry, policy, random = Math.random) {
    const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(retry, 30));
    return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
/**
 * Parses a Retry-After header: delta-seconds or an HTTP date (relative to
 * nowMs). Returns seconds (≥ 0), or undefined when absent or unreadable.
 */
export function parseRetryAfter(value, nowMs) {
    const raw = Array.isArray(value) ? value[0] : value;
    if (raw === undefined)
        return undefined;
    const text = raw.trim();
    if (/^\d+(\.\d+)?$/.test(text))
        return Number(text);
    const at = Date.parse(text);
    if (Number.isNaN(at))
        return undefined;
    return Math.max(0, Math.ceil((at - nowMs) / 1000));
}
/** Resolves after ms, or rejects with signal.reason as soon as signal aborts. */
export function sleep(ms, signal) {
    if (signal?.aborted)
        return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
        const onAbort = () => {
            clearTimeout(timer);
            reject(signal?.reason);
        };
        const timer = setTimeout(() => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
        }, Math.max(0, ms));
        signal?.addEventListener("abort", onAbort, { once: true });
    });
}
/** Like sleep, but resolves (never rejects) when signal aborts: for loops that check their own state after waking. */
export async function pause(ms, signal) {
    try {
        await sleep(ms, signal);
    }
    catch {
        // aborted: the caller looks at its state
    }
}
/** Runs fn after ms (a ref'd timer); returns a function that cancels it. */
export function later(fn, ms) {
    const timer = setTimeout(fn, Math.max(0, ms));
    return () => clearTimeout(timer);
}
//# sourceMappingURL=backoff.js.map