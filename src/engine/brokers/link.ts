// What both broker drivers keep about their connection: whether it is up,
// who waits for it to come up, what onStatus hears, and the backoff between
// dials (250 ms doubling to 15 s, from the least again after a connection
// came up). The drivers own the dialling itself.

import { type Clock, systemClock, type TimerHandle } from "../../core/clock.js";
import type { BrokerConnectOptions } from "./broker.js";

const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 15_000;

export class Link {
  private isUp = false;
  private closed = false;
  private readonly waiters = new Set<() => void>();
  private retryMs = MIN_RETRY_MS;
  private retry: TimerHandle | undefined;

  constructor(
    private readonly onStatus: BrokerConnectOptions["onStatus"],
    readonly clock: Clock = systemClock,
  ) {}

  get up(): boolean {
    return this.isUp;
  }

  /** Up or down: onStatus hears of a change, and waiters are released when it comes up. A connection that came up resets the backoff. */
  set(up: boolean, error?: unknown): void {
    if (up) this.retryMs = MIN_RETRY_MS;
    if (up === this.isUp) return;
    this.isUp = up;
    this.tell(error === undefined ? { connected: up } : { connected: up, error });
    if (up) this.release();
  }

  /** Resolves when the connection is up (or the link closed), or after ms. */
  wait(ms: number): Promise<void> {
    if (this.isUp || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        timer.cancel();
        this.waiters.delete(done);
        resolve();
      };
      const timer = this.clock.setTimer(done, ms);
      this.waiters.add(done);
    });
  }

  /** A failed dial or a lost connection: dial again after the backoff, which doubles. */
  redial(dial: () => void): void {
    if (this.closed) return;
    this.retry = this.clock.setTimer(dial, this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }

  tell(event: { connected: boolean; error?: unknown }): void {
    try {
      this.onStatus?.(event);
    } catch {
      // A throwing listener must not break the connection's bookkeeping.
    }
  }

  /** No more dials; whoever waits is released. */
  close(): void {
    this.closed = true;
    this.retry?.cancel();
    this.release();
  }

  private release(): void {
    for (const done of [...this.waiters]) done();
  }
}
