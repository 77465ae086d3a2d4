// Retry budgets (as Finagle's RetryBudget and gRPC's retry throttling): per
// key (`tenant:<id>`, `origin:<scheme://host:port>`), retries may be at most
// a share of the recent first attempts, plus a small floor, so a failing
// dependency sees a bounded retry rate however many jobs fail at once:
//
//   a retry passes when  retries in window + 1 <= minPerSecond * windowSeconds + ratio * first attempts in window
//
// Pure: the caller passes the time. Counts live in a ring of one-second
// buckets per key (memory bounded per key), and a key whose window has
// emptied is forgotten (it is the same as a new one), so memory follows the
// keys active in the last window, not every tenant or origin ever seen.
// Budgets are per process: a cluster of N nodes allows up to N times as many.

export interface RetryBudgetSettings {
  /** Retries allowed per first attempt in the window (default 0.2). */
  ratio: number;
  /** Retries allowed per second whatever the first attempts (default 10): a key with little traffic can still retry. */
  minPerSecond: number;
  /** The sliding window, in whole seconds (default 10). */
  windowSeconds: number;
}

export const RETRY_BUDGET_DEFAULTS: RetryBudgetSettings = { ratio: 0.2, minPerSecond: 10, windowSeconds: 10 };

/** What each setting may be; the window sizes every key's ring. */
export const RETRY_BUDGET_BOUNDS = {
  ratio: { min: 0, max: 100 },
  minPerSecond: { min: 0, max: 1_000_000 },
  windowSeconds: { min: 1, max: 60 },
} as const;

/** What is wrong with the settings, naming the field; null when nothing. (No imports: the CLI checks its flags with it.) */
export function retryBudgetProblem(settings: Partial<RetryBudgetSettings>): string | null {
  for (const field of ["ratio", "minPerSecond", "windowSeconds"] as const) {
    const value = settings[field];
    if (value === undefined) continue;
    const { min, max } = RETRY_BUDGET_BOUNDS[field];
    const whole = field === "windowSeconds";
    if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max || (whole && !Number.isInteger(value)))
      return `${field}: expected ${whole ? "an integer" : "a number"} from ${min} to ${max}, got ${String(value)}`;
  }
  return null;
}

export type RetryDecision = { ok: true } | { ok: false; at: number; key: string };

/** One key's window: counts per second in a ring, their sums, and where the next deferred retry is sent back. */
interface KeyWindow {
  firsts: Uint32Array;
  retries: Uint32Array;
  /** The epoch second of the newest bucket. */
  second: number;
  firstSum: number;
  retrySum: number;
  /** The next deferred retry is told to come back no earlier than this (epoch ms): deferred retries come back spaced. */
  nextSlot: number;
}

export class RetryBudget {
  readonly settings: RetryBudgetSettings;
  private readonly size: number;
  private readonly keys = new Map<string, KeyWindow>();
  private nextSweep = 0;

  constructor(settings: Partial<RetryBudgetSettings> = {}) {
    const problem = retryBudgetProblem(settings);
    if (problem) throw new RangeError(`retryBudget.${problem}`);
    this.settings = { ...RETRY_BUDGET_DEFAULTS, ...settings };
    this.size = this.settings.windowSeconds;
  }

  /** Records a first attempt under each key: it raises their budgets by ratio. */
  first(keys: readonly string[], now: number): void {
    this.sweep(now);
    for (const key of keys) {
      const w = this.window(key, now);
      w.firsts[w.second % this.size]!++;
      w.firstSum++;
    }
  }

  /**
   * A retry: taken from every key's budget when all have room, else from
   * none, with `at`, when to try again: when the oldest retry leaves the
   * refusing key's window, or after the retries deferred before it, spaced
   * at the key's rate, so a backlog comes back at about the pace it can pass
   * rather than all at once. `key` is the (first) key that refused.
   */
  take(keys: readonly string[], now: number): RetryDecision {
    this.sweep(now);
    const windows = keys.map((key) => this.window(key, now));
    const refused = windows.flatMap((w, i) => (w.retrySum + 1 > this.limit(w) ? [i] : []));
    if (refused.length === 0) {
      for (const w of windows) {
        w.retries[w.second % this.size]!++;
        w.retrySum++;
      }
      return { ok: true };
    }
    let at = 0;
    for (const i of refused) {
      const w = windows[i]!;
      const slot = Math.max(this.roomAt(w), w.nextSlot);
      // The budget lets `limit` retries through a window: one every window / limit. Below one, no retry frees
      // room; look again a window later (new first attempts may have raised it).
      const limit = this.limit(w);
      w.nextSlot = slot + (this.size * 1000) / Math.max(1, limit);
      at = Math.max(at, slot);
    }
    return { ok: false, at: Math.ceil(at), key: keys[refused[0]!]! }; // whole ms: stores keep times as integers
  }

  /** How many keys are held (idle ones are forgotten). */
  get keyCount(): number {
    return this.keys.size;
  }

  private limit(w: KeyWindow): number {
    return this.settings.minPerSecond * this.size + this.settings.ratio * w.firstSum;
  }

  /** When the oldest retry in the window leaves it (the start of the next second when there is none). */
  private roomAt(w: KeyWindow): number {
    for (let s = Math.max(0, w.second - this.size + 1); s <= w.second; s++) {
      if (w.retries[s % this.size]! > 0) return (s + this.size) * 1000;
    }
    return (w.second + 1) * 1000;
  }

  /** The key's window moved up to now: buckets of seconds that left it are emptied. */
  private window(key: string, now: number): KeyWindow {
    const second = Math.floor(now / 1000);
    let w = this.keys.get(key);
    if (!w) {
      w = { firsts: new Uint32Array(this.size), retries: new Uint32Array(this.size), second, firstSum: 0, retrySum: 0, nextSlot: 0 };
      this.keys.set(key, w);
      return w;
    }
    // A clock that stepped back counts in the newest bucket.
    const steps = Math.min(second - w.second, this.size);
    for (let i = 1; i <= steps; i++) {
      const b = (w.second + i) % this.size;
      w.firstSum -= w.firsts[b]!;
      w.retrySum -= w.retries[b]!;
      w.firsts[b] = 0;
      w.retries[b] = 0;
    }
    if (second > w.second) w.second = second;
    return w;
  }

  /** Once a window: forgets the keys whose window has emptied and that hold back no deferred retry. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + this.size * 1000;
    const oldest = Math.floor(now / 1000) - this.size;
    for (const [key, w] of this.keys) if (w.second <= oldest && w.nextSlot <= now) this.keys.delete(key);
  }
}
