// Per-origin politeness: a cap on calls in flight (default 64) and an
// optional rate limit (a token bucket, off by default), so a herd cannot
// flood one receiver by accident and a user can protect a fragile one.

import { originOf } from "./egress.js";

export interface OriginLimit {
  /** Calls in flight to the origin at once. */
  concurrency?: number;
  /** Calls started per second; null or absent: no rate limit. */
  ratePerSecond?: number | null;
  /** Calls that may start back to back before the rate applies (default max(1, ratePerSecond)). */
  burst?: number;
}

export const DEFAULT_ORIGIN_CONCURRENCY = 64;

export interface ResolvedLimit {
  concurrency: number;
  ratePerSecond: number | null;
  burst: number;
}

/** The limits in force for each origin: an override for that origin, else the defaults. */
export class OriginLimits {
  private readonly overrides = new Map<string, OriginLimit>();
  private readonly defaults: OriginLimit;

  constructor(defaults: OriginLimit = {}, overrides: Record<string, OriginLimit> = {}) {
    this.defaults = defaults;
    for (const [origin, limit] of Object.entries(overrides)) this.overrides.set(originOf(origin), limit);
  }

  resolve(origin: string): ResolvedLimit {
    const o = this.overrides.get(origin) ?? {};
    const concurrency = o.concurrency ?? this.defaults.concurrency ?? DEFAULT_ORIGIN_CONCURRENCY;
    const rate = o.ratePerSecond !== undefined ? o.ratePerSecond : (this.defaults.ratePerSecond ?? null);
    const ratePerSecond = rate !== null && rate > 0 ? rate : null;
    return { concurrency, ratePerSecond, burst: o.burst ?? this.defaults.burst ?? Math.max(1, ratePerSecond ?? 1) };
  }

  /** The largest concurrency any origin may use (the connection pool's size per origin). */
  maxConcurrency(): number {
    let max = this.defaults.concurrency ?? DEFAULT_ORIGIN_CONCURRENCY;
    for (const o of this.overrides.values()) max = Math.max(max, o.concurrency ?? 0);
    return max;
  }
}
