// AckBuffer: the worker's finished attempts waiting to be acknowledged.
//
// Two ways out, both batched:
// - the lease loop take()s everything pending and sends it piggy-backed on its
//   next lease call (one round trip acks a batch and fetches the next);
// - otherwise (a long poll is in flight, or shutdown) a timer sends what is
//   pending through completeMany/failMany ackDelayMs after the first ack
//   arrived, or at once when maxBatch acks are waiting.
// While the loop is about to lease it hold()s the buffer, so the timer does not
// steal acks the lease call would carry for free.
// A failed send puts its acks back and retries with backoff: acks are
// idempotent by contract, so sending one twice is harmless.

import type { AckItem, CompleteItem, FailItem } from "./api.js";
import { backoffDelay, later, realClock, type BackoffPolicy, type SdkClock } from "./backoff.js";

/** The server takes at most this many items per batch call or per lease array. */
export const MAX_ACKS_PER_CALL = 1000;

export interface PendingAcks {
  complete: CompleteItem[];
  fail: FailItem[];
}

export interface AckSink {
  completeMany(items: CompleteItem[]): Promise<AckItem[]>;
  failMany(items: FailItem[]): Promise<AckItem[]>;
}

export interface AckBufferOptions {
  sink: AckSink;
  /** How long the first pending ack waits for company before a batch call (ms). */
  delayMs: number;
  /** A batch call goes out at once when this many acks are pending. */
  maxBatch: number;
  /** Every answer of a batch call, in the order of `sent`. */
  onAnswers?: (sent: PendingAcks, answers: AckItem[]) => void;
  /** A batch call failed; its acks are back in the buffer and go again after retryInMs. */
  onError?: (error: unknown, count: number, retryInMs: number) => void;
  backoff?: BackoffPolicy;
  /** The clock of its timers (default real time). */
  clock?: SdkClock;
}

export class AckBuffer {
  private complete: CompleteItem[] = [];
  private fail: FailItem[] = [];
  private held = false;
  private failures = 0;
  private cancelTimer: (() => void) | undefined;
  private sending: Promise<void> = Promise.resolve();
  private readonly backoff: BackoffPolicy;
  private readonly clock: SdkClock;

  constructor(private readonly options: AckBufferOptions) {
    this.backoff = options.backoff ?? { baseMs: 200, maxMs: 5_000 };
    this.clock = options.clock ?? realClock;
  }

  get size(): number {
    return this.complete.length + this.fail.length;
  }

  addComplete(item: CompleteItem): void {
    this.complete.push(item);
    this.schedule();
  }

  addFail(item: FailItem): void {
    this.fail.push(item);
    this.schedule();
  }

  /** Suspends timed flushes (the lease loop is about to take the acks). */
  hold(): void {
    this.held = true;
    this.stopTimer();
  }

  /** Resumes timed flushes; what is pending goes after delayMs. */
  release(): void {
    this.held = false;
    this.schedule();
  }

  /** Removes up to `limit` acks of each kind, oldest first, for a lease call to carry. */
  take(limit = MAX_ACKS_PER_CALL): PendingAcks {
    const taken = { complete: this.complete.splice(0, limit), fail: this.fail.splice(0, limit) };
    if (this.size === 0) this.stopTimer();
    return taken;
  }

  /** Puts acks back (their lease call failed), ahead of newer ones. */
  restore(acks: PendingAcks): void {
    this.complete.unshift(...acks.complete);
    this.fail.unshift(...acks.fail);
    this.schedule();
  }

  /** Sends everything pending now, through the batch routes. Never rejects; failures are reported and retried. */
  flush(): Promise<void> {
    this.stopTimer();
    // sendPending reports its own failures; the catch keeps the chain alive whatever happens
    this.sending = this.sending.then(() => this.sendPending()).catch((error: unknown) => this.options.onError?.(error, this.size, 0));
    return this.sending;
  }

  /**
   * For shutdown: flushes until nothing is pending, trying at most `attempts`
   * times; timed flushes stop. Resolves true when everything was acknowledged.
   */
  async drain(attempts = 3): Promise<boolean> {
    this.held = true;
    this.stopTimer();
    await this.sending;
    for (let i = 0; i < attempts && this.size > 0; i++) {
      if (i > 0) await new Promise<void>((resolve) => later(resolve, backoffDelay(i - 1, this.backoff), this.clock));
      this.stopTimer();
      await this.flush();
      this.stopTimer();
    }
    return this.size === 0;
  }

  private schedule(delayMs?: number): void {
    if (this.held || this.size === 0) return;
    if (this.size >= this.options.maxBatch && this.failures === 0) {
      void this.flush();
      return;
    }
    if (this.cancelTimer) return;
    const delay = delayMs ?? (this.failures === 0 ? this.options.delayMs : backoffDelay(this.failures - 1, this.backoff));
    this.cancelTimer = later(
      () => {
        this.cancelTimer = undefined;
        void this.flush();
      },
      delay,
      this.clock,
    );
  }

  private stopTimer(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }

  private async sendPending(): Promise<void> {
    while (this.size > 0) {
      const batch = this.take(MAX_ACKS_PER_CALL);
      const { sink } = this.options;
      const [completed, failed] = await Promise.allSettled([
        batch.complete.length > 0 ? Promise.resolve().then(() => sink.completeMany(batch.complete)) : [],
        batch.fail.length > 0 ? Promise.resolve().then(() => sink.failMany(batch.fail)) : [],
      ]);
      const sent: PendingAcks = { complete: [], fail: [] };
      const answers: AckItem[] = [];
      const retry: PendingAcks = { complete: [], fail: [] };
      let error: unknown;
      if (completed.status === "fulfilled") {
        sent.complete = batch.complete;
        answers.push(...completed.value);
      } else {
        retry.complete = batch.complete;
        error = completed.reason;
      }
      if (failed.status === "fulfilled") {
        sent.fail = batch.fail;
        answers.push(...failed.value);
      } else {
        retry.fail = batch.fail;
        error = failed.reason;
      }
      if (sent.complete.length + sent.fail.length > 0) this.options.onAnswers?.(sent, answers);
      if (error !== undefined) {
        this.failures++;
        this.complete.unshift(...retry.complete);
        this.fail.unshift(...retry.fail);
        const retryInMs = backoffDelay(this.failures - 1, this.backoff);
        this.options.onError?.(error, retry.complete.length + retry.fail.length, retryInMs);
        this.stopTimer();
        this.schedule(retryInMs);
        return;
      }
      this.failures = 0;
    }
  }
}
