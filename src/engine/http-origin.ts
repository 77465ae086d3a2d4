// The HTTP-target runner's bookkeeping of origins (scheme://host:port): a
// leased execution's slot, each origin's queue of slots waiting for its gates
// (breaker, cap, rate), its usage counts (the origin's and each tenant's) and
// how GET /v1/targets shows them. Data only: the runner (http-target.ts)
// decides what moves through the gates.

import type { HttpTarget, TargetStatus } from "@duetime/sdk/contract";
import type { TimerHandle } from "../core/clock.js";
import { toIso } from "../core/time.js";
import type { TokenBucket } from "../core/token-bucket.js";
import type { LeasedRow } from "../store/store.js";
import type { CircuitBreaker } from "./circuit-breaker.js";
import type { ResolvedLimit } from "./origin-limits.js";

/** A leased execution from its lease until its outcome is handed to the ack batcher. */
export interface Slot {
  row: LeasedRow;
  target: HttpTarget;
  origin: OriginState;
  leaseUntil: number;
  /** Past this, a waiting execution is released rather than sent (MAX_WAIT_MS after its lease). */
  sendBy: number;
  phase: "waiting" | "calling" | "done";
}

/** What calls to one origin did: for the origin as a whole, and for each tenant (GET /v1/targets shows a tenant only its own). */
export interface OriginUsage {
  /** Slots in the queue still waiting (the queue drops finished ones lazily). */
  waiting: number;
  inFlight: number;
  calls: number;
  failures: number;
  lastStatus: number | null;
  lastError: string | null;
  lastCallAt: number | null;
  /** Leased calls handed back unused (open breaker, too long a wait, stop). */
  released: number;
}

export const newUsage = (): OriginUsage => ({
  waiting: 0,
  inFlight: 0,
  calls: 0,
  failures: 0,
  lastStatus: null,
  lastError: null,
  lastCallAt: null,
  released: 0,
});

export interface OriginState extends OriginUsage {
  origin: string;
  breaker: CircuitBreaker;
  limit: ResolvedLimit;
  bucket: TokenBucket | null;
  queue: Fifo<Slot>;
  wake: { at: number; handle: TimerHandle } | null;
  lastActiveAt: number;
  /** Forgotten with the origin, so bounded by the tenants that called it in the last IDLE_ORIGIN_MS. */
  tenants: Map<string, OriginUsage>;
}

export const isWaiting = (slot: Slot): boolean => slot.phase === "waiting";

/** An origin as GET /v1/targets shows it: its breaker and limits, with the counts of usage (the origin's, or one tenant's). */
export function targetStatus(o: OriginState, usage: OriginUsage, now: number): TargetStatus {
  const b = o.breaker.snapshot(now);
  return {
    origin: o.origin,
    breaker: b.state,
    inFlight: usage.inFlight,
    waiting: usage.waiting,
    consecutiveFailures: b.consecutiveFailures,
    openUntil: b.openUntil === null ? null : toIso(b.openUntil),
    opened: b.opened,
    lastOpenedAt: b.lastOpenedAt === null ? null : toIso(b.lastOpenedAt),
    limits: { concurrency: o.limit.concurrency, ratePerSecond: o.limit.ratePerSecond },
    calls: usage.calls,
    failures: usage.failures,
    lastStatus: usage.lastStatus,
    lastError: usage.lastError,
    lastCallAt: usage.lastCallAt === null ? null : toIso(usage.lastCallAt),
    released: usage.released,
  };
}

/** A FIFO queue with O(1) shift that skips entries the caller no longer wants. */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  /** The first item that is still live; dead ones before it are dropped. */
  peek(live: (item: T) => boolean): T | undefined {
    while (this.head < this.items.length) {
      const item = this.items[this.head]!;
      if (live(item)) return item;
      this.shift();
    }
    return undefined;
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}
