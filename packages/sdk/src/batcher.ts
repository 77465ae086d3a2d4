// Batcher: items waiting to be written in batches, so that many share one
// call. The one batcher of the project: the SDK's acknowledgements
// (AckBuffer), and the engine's HTTP-target acknowledgements and releases.
//
// A batch goes out delayMs after the first item arrived, at once when
// maxBatch items wait, or on flush(). A caller may take() items to carry on
// a call of its own (a lease call that acknowledges), and restore() them
// when that call failed; while held, the timer sends nothing (the caller is
// about to take them). A failed send puts back what keep() keeps and tries
// again after retryDelayMs; sends never overlap.

import { backoffDelay, realClock, type SdkClock } from "./backoff.js";

/** What a send left undone: the items to try again, and why. */
export interface SendFailure<T> {
  retry: T[];
  error: unknown;
}

export interface BatcherOptions<T> {
  /** Writes one batch; resolves to what failed of it (a partial failure), or nothing. A throw fails the whole batch. */
  send(batch: T[]): Promise<SendFailure<T> | undefined>;
  /** How long the first item waits for company (ms). */
  delayMs: number;
  /** A batch goes out at once when this many wait. */
  maxBatch: number;
  /** No send, and no take() by default, carries more than this (default maxBatch). */
  maxSend?: number;
  clock?: SdkClock;
  /** Whether a failed item is still worth sending again (default: always). */
  keep?(item: T): boolean;
  /** The wait before sending again after `failures` failures in a row (default: backoff from 200 ms up to 5 s). */
  retryDelayMs?(failures: number): number;
  /** A send failed: `count` items wait to go again after retryInMs. */
  onError?(error: unknown, count: number, retryInMs: number): void;
}

const DEFAULT_RETRY = { baseMs: 200, maxMs: 5_000 };

export class Batcher<T> {
  private items: T[] = [];
  private held = false;
  private closed = false;
  private failures = 0;
  private cancelTimer: (() => void) | undefined;
  private sending: Promise<void> = Promise.resolve();
  private readonly clock: SdkClock;

  constructor(private readonly options: BatcherOptions<T>) {
    this.clock = options.clock ?? realClock;
  }

  get size(): number {
    return this.items.length;
  }

  add(item: T): void {
    if (this.closed) return;
    this.items.push(item);
    this.schedule();
  }

  /** Removes up to `limit` items, oldest first, for a call of the caller's to carry. */
  take(limit = this.options.maxSend ?? this.options.maxBatch): T[] {
    const taken = this.items.splice(0, limit);
    if (this.items.length === 0) this.stopTimer();
    return taken;
  }

  /** Puts back items whose call failed, ahead of newer ones. */
  restore(items: readonly T[]): void {
    if (this.closed) return;
    this.items.unshift(...items);
    this.schedule();
  }

  /** Suspends timed sends (the caller is about to take the items). */
  hold(): void {
    this.held = true;
    this.stopTimer();
  }

  /** Resumes timed sends; what waits goes after delayMs. */
  release(): void {
    this.held = false;
    this.schedule();
  }

  /** Sends everything waiting now. Never rejects: failures are reported and tried again. */
  flush(): Promise<void> {
    this.stopTimer();
    this.sending = this.sending.then(() => this.sendAll()).catch((error: unknown) => this.options.onError?.(error, this.size, 0));
    return this.sending;
  }

  /** For shutdown: flushes until nothing waits, at most `attempts` times; timed sends stop. True when all went out. */
  async drain(attempts = 3): Promise<boolean> {
    this.hold();
    await this.sending;
    for (let i = 0; i < attempts && this.size > 0; i++) {
      if (i > 0) await new Promise<void>((resolve) => this.clock.setTimer(resolve, this.retryDelay(i)));
      await this.flush();
      this.stopTimer();
    }
    return this.size === 0;
  }

  /** Drops what waits and accepts nothing more (their leases expire instead). */
  close(): void {
    this.closed = true;
    this.stopTimer();
    this.items = [];
  }

  private retryDelay(failures: number): number {
    return this.options.retryDelayMs ? this.options.retryDelayMs(failures) : backoffDelay(failures - 1, DEFAULT_RETRY);
  }

  private schedule(delayMs?: number): void {
    if (this.held || this.closed || this.items.length === 0) return;
    if (this.items.length >= this.options.maxBatch && this.failures === 0) {
      void this.flush();
      return;
    }
    if (this.cancelTimer) return;
    const delay = delayMs ?? (this.failures === 0 ? this.options.delayMs : this.retryDelay(this.failures));
    const timer = this.clock.setTimer(() => {
      this.cancelTimer = undefined;
      void this.flush();
    }, delay);
    this.cancelTimer = () => timer.cancel();
  }

  private stopTimer(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }

  private async sendAll(): Promise<void> {
    while (this.items.length > 0) {
      const batch = this.take();
      let failure: SendFailure<T> | undefined;
      try {
        failure = await Promise.resolve().then(() => this.options.send(batch));
      } catch (error) {
        failure = { retry: batch, error };
      }
      if (!failure) {
        this.failures = 0;
        continue;
      }
      this.failures++;
      const keep = this.options.keep;
      const retry = keep ? failure.retry.filter((item) => keep(item)) : failure.retry;
      if (!this.closed) this.items.unshift(...retry);
      const retryInMs = this.retryDelay(this.failures);
      this.options.onError?.(failure.error, retry.length, retryInMs);
      this.stopTimer();
      this.schedule(retryInMs);
      return;
    }
  }
}
