// The one token bucket: origins' call rates, broker relays' publish rates
// and tenants' create rates. Pure: the caller passes the time.

/** `rate` tokens a second, holding at most `burst`; it starts full. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly rate: number,
    private readonly burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.last = now;
  }

  /** Takes a token if one is there; otherwise returns when the next one will be. */
  take(now: number): { ok: true } | { ok: false; at: number } {
    this.refill(now);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, at: now + Math.ceil(((1 - this.tokens) * 1000) / this.rate) };
  }

  /** Takes up to max whole tokens; with none there, 0 and when the next one will be. */
  takeUpTo(max: number, now: number): { granted: number; at: number } {
    this.refill(now);
    const granted = Math.min(max, Math.floor(this.tokens));
    this.tokens -= granted;
    return { granted, at: granted > 0 ? now : now + Math.ceil(((1 - this.tokens) * 1000) / this.rate) };
  }

  /** Seconds until n tokens are there (0: now); 1 when n is more than the bucket ever holds (n at once can never pass). */
  waitFor(n: number, now: number): number {
    this.refill(now);
    if (this.tokens >= n) return 0;
    return n > this.burst ? 1 : (n - this.tokens) / this.rate;
  }

  /** Takes n tokens; call it once waitFor(n, now) answered 0 (admitting is all or nothing). */
  spend(n: number): void {
    this.tokens -= n;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.rate) / 1000);
    this.last = now;
  }
}
