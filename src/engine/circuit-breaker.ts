// A circuit breaker per target origin. Pure: the caller passes the time.
//
//   closed ──(failureThreshold consecutive unhealthy calls)──► open
//   open ──(openUntil passes)──► half_open: exactly one call, the probe
//   half_open ──probe healthy──► closed      half_open ──probe unhealthy──► open (open time doubles, up to maxOpenSeconds)
//
// "Unhealthy" means the origin did not answer usefully: a network error, a
// timeout, a 5xx, 408, 429 or 503. Any other answer (2xx, 3xx, 4xx) shows the
// origin is up. Results of calls that started under an earlier state
// (generation) are ignored, so stragglers of a burst cannot flip a fresh
// state.

export interface BreakerSettings {
  /** Consecutive unhealthy calls that open the breaker (default 5). */
  failureThreshold?: number;
  /** How long the breaker stays open the first time (default 5 s). */
  openSeconds?: number;
  /** The open time doubles after each failed probe, up to this (default 60 s). */
  maxOpenSeconds?: number;
}

export const DEFAULT_BREAKER: Required<BreakerSettings> = { failureThreshold: 5, openSeconds: 5, maxOpenSeconds: 60 };

export type BreakerState = "closed" | "open" | "half_open";
export type CallHealth = "healthy" | "unhealthy" | "unknown";

export type Permit = { kind: "call" | "probe"; generation: number } | { kind: "wait"; until: number | null };

export interface BreakerSnapshot {
  state: BreakerState;
  consecutiveFailures: number;
  /** When an open breaker lets its next probe through (epoch ms), else null. */
  openUntil: number | null;
  /** How many times it opened. */
  opened: number;
  lastOpenedAt: number | null;
}

export class CircuitBreaker {
  private state: BreakerState = "closed";
  private generation = 0;
  private failures = 0;
  private openUntil = 0;
  private openMs: number;
  private probing = false;
  private opened = 0;
  private lastOpenedAt: number | null = null;
  private readonly settings: Required<BreakerSettings>;

  constructor(settings: BreakerSettings = {}) {
    this.settings = { ...DEFAULT_BREAKER, ...settings };
    this.openMs = this.settings.openSeconds * 1000;
  }

  /** May a call go now? An open breaker whose time is up becomes half-open and grants one probe. */
  permit(now: number): Permit {
    if (this.state === "open" && now >= this.openUntil) this.enter("half_open");
    if (this.state === "closed") return { kind: "call", generation: this.generation };
    if (this.state === "open") return { kind: "wait", until: this.openUntil };
    if (this.probing) return { kind: "wait", until: null }; // the probe's result decides
    this.probing = true;
    return { kind: "probe", generation: this.generation };
  }

  /** Records a finished call; returns the new state when it changed. */
  record(generation: number, health: CallHealth, now: number, retryAfterMs?: number): BreakerState | null {
    if (generation !== this.generation) return null;
    const before = this.state;
    if (health === "unknown") {
      if (this.state === "half_open") this.probing = false; // no verdict: let another probe go
      return null;
    }
    if (health === "healthy") {
      this.failures = 0;
      if (this.state !== "closed") {
        this.openMs = this.settings.openSeconds * 1000;
        this.enter("closed");
      }
    } else if (this.state === "closed") {
      this.failures++;
      if (this.failures >= this.settings.failureThreshold) this.open(now, retryAfterMs);
    } else if (this.state === "half_open") {
      this.failures++;
      this.openMs = Math.min(this.settings.maxOpenSeconds * 1000, this.openMs * 2);
      this.open(now, retryAfterMs);
    }
    return this.state === before ? null : this.state;
  }

  snapshot(now: number): BreakerSnapshot {
    if (this.state === "open" && now >= this.openUntil) this.enter("half_open");
    return {
      state: this.state,
      consecutiveFailures: this.failures,
      openUntil: this.state === "open" ? this.openUntil : null,
      opened: this.opened,
      lastOpenedAt: this.lastOpenedAt,
    };
  }

  private open(now: number, retryAfterMs = 0): void {
    const maxMs = this.settings.maxOpenSeconds * 1000;
    this.openUntil = now + Math.max(this.openMs, Math.min(retryAfterMs, maxMs));
    this.opened++;
    this.lastOpenedAt = now;
    this.enter("open");
  }

  private enter(state: BreakerState): void {
    this.state = state;
    this.generation++;
    this.probing = false;
  }
}
