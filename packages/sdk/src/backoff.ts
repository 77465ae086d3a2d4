// Backoff arithmetic, the SDK's clock and its one abortable sleep. This file
// is the SDK's runtime wiring for timers: every wait of the Worker and its
// AckBuffer goes through an SdkClock, the real one here (ref'd timers: a
// worker backing off while the server restarts must keep its process alive)
// or a fake one in tests (duetime/testing passes the engine's FakeClock).

/** What the SDK needs of time. core's Clock (and its FakeClock) fits it. */
export interface SdkClock {
  /** Milliseconds; only differences are used. */
  now(): number;
  /** Runs fn after ms milliseconds. */
  setTimer(fn: () => void, ms: number): { cancel(): void };
}

/** Real time: performance.now() and ref'd setTimeout. */
export const realClock: SdkClock = {
  now: () => performance.now(),
  setTimer(fn, ms) {
    const timer = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(timer) };
  },
};

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
export function backoffDelay(retry: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(retry, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * Parses a Retry-After header: delta-seconds or an HTTP date (relative to
 * nowMs). Returns seconds (≥ 0), or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** Resolves after ms, or rejects with signal.reason as soon as signal aborts. */
export function sleep(ms: number, signal?: AbortSignal, clock: SdkClock = realClock): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      timer.cancel();
      reject(signal?.reason);
    };
    const timer = clock.setTimer(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Like sleep, but resolves (never rejects) when signal aborts: for loops that check their own state after waking. */
export async function pause(ms: number, signal?: AbortSignal, clock: SdkClock = realClock): Promise<void> {
  try {
    await sleep(ms, signal, clock);
  } catch {
    // aborted: the caller looks at its state
  }
}

/** Runs fn after ms; returns a function that cancels it. */
export function later(fn: () => void, ms: number, clock: SdkClock = realClock): () => void {
  const timer = clock.setTimer(fn, Math.max(0, ms));
  return () => timer.cancel();
}
