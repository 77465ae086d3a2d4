// The engine runs on the store's clock, not the host's (DESIGN.md: due times
// and leases are judged by the store's clock). A node whose clock runs 30 s
// ahead must not dispatch 30 s early, nor stamp a `delaySeconds` job 30 s
// late: every time the engine reads is the host's clock plus an offset to the
// store's, measured when the engine opens and again on every shard round
// (shard-keeper.ts, every 3.3 s), halfway through the round trip that read
// it. Timers still run on the host's clock: a delay is the same on both.

import type { Clock, TimerHandle } from "../core/clock.js";
import type { Store } from "../store/store.js";

export class StoreClock implements Clock {
  private offsetMs = 0;

  constructor(
    private readonly base: Clock,
    private readonly store: Pick<Store, "storeTime">,
  ) {}

  now(): number {
    return this.base.now() + this.offsetMs;
  }

  setTimer(fn: () => void, ms: number): TimerHandle {
    return this.base.setTimer(fn, ms);
  }

  storeNow(): number | undefined {
    return this.base.storeNow();
  }

  /** How far the store's clock is ahead of this host's (negative: behind), as last measured. */
  get offset(): number {
    return this.offsetMs;
  }

  /**
   * Reads the store's clock, keeps the offset to it, and answers the store's
   * time. A clock that pins the store's time (a test's FakeClock) is the
   * store's clock already: the offset stays 0.
   */
  async sync(): Promise<number> {
    const pinned = this.base.storeNow();
    if (pinned !== undefined) return pinned;
    const sentAt = this.base.now();
    const storeTime = await this.store.storeTime();
    const receivedAt = this.base.now();
    this.offsetMs = Math.round(storeTime - (sentAt + receivedAt) / 2);
    return storeTime;
  }
}
