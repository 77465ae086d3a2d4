// AckBuffer: the worker's finished attempts waiting to be acknowledged.
//
// Two ways out, both batched (by the project's one Batcher):
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
import { backoffDelay, type BackoffPolicy, type SdkClock } from "./backoff.js";
import { Batcher, type SendFailure } from "./batcher.js";

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

type Ack = { kind: "complete"; item: CompleteItem } | { kind: "fail"; item: FailItem };

/** Splits acks by kind, keeping their order within each. */
function byKind(acks: readonly Ack[]): PendingAcks {
  const out: PendingAcks = { complete: [], fail: [] };
  for (const a of acks) {
    if (a.kind === "complete") out.complete.push(a.item);
    else out.fail.push(a.item);
  }
  return out;
}

const asAcks = (pending: PendingAcks): Ack[] => [
  ...pending.complete.map((item): Ack => ({ kind: "complete", item })),
  ...pending.fail.map((item): Ack => ({ kind: "fail", item })),
];

export class AckBuffer {
  private readonly batcher: Batcher<Ack>;

  constructor(private readonly options: AckBufferOptions) {
    const backoff = options.backoff ?? { baseMs: 200, maxMs: 5_000 };
    this.batcher = new Batcher<Ack>({
      send: (batch) => this.send(batch),
      delayMs: options.delayMs,
      maxBatch: options.maxBatch,
      maxSend: MAX_ACKS_PER_CALL,
      ...(options.clock ? { clock: options.clock } : {}),
      retryDelayMs: (failures) => backoffDelay(failures - 1, backoff),
      ...(options.onError ? { onError: options.onError } : {}),
    });
  }

  get size(): number {
    return this.batcher.size;
  }

  addComplete(item: CompleteItem): void {
    this.batcher.add({ kind: "complete", item });
  }

  addFail(item: FailItem): void {
    this.batcher.add({ kind: "fail", item });
  }

  /** Suspends timed flushes (the lease loop is about to take the acks). */
  hold(): void {
    this.batcher.hold();
  }

  /** Resumes timed flushes; what is pending goes after delayMs. */
  release(): void {
    this.batcher.release();
  }

  /** Removes up to `limit` acks, oldest first, for a lease call to carry. */
  take(limit = MAX_ACKS_PER_CALL): PendingAcks {
    return byKind(this.batcher.take(limit));
  }

  /** Puts acks back (their lease call failed), ahead of newer ones. */
  restore(acks: PendingAcks): void {
    this.batcher.restore(asAcks(acks));
  }

  /** Sends everything pending now, through the batch routes. Never rejects; failures are reported and retried. */
  flush(): Promise<void> {
    return this.batcher.flush();
  }

  /**
   * For shutdown: flushes until nothing is pending, trying at most `attempts`
   * times; timed flushes stop. Resolves true when everything was acknowledged.
   */
  drain(attempts = 3): Promise<boolean> {
    return this.batcher.drain(attempts);
  }

  /** One batch: completes and fails go out side by side; what failed of them is tried again. */
  private async send(batch: Ack[]): Promise<SendFailure<Ack> | undefined> {
    const pending = byKind(batch);
    const { sink } = this.options;
    const [completed, failed] = await Promise.allSettled([
      pending.complete.length > 0 ? Promise.resolve().then(() => sink.completeMany(pending.complete)) : [],
      pending.fail.length > 0 ? Promise.resolve().then(() => sink.failMany(pending.fail)) : [],
    ]);
    const sent: PendingAcks = { complete: [], fail: [] };
    const answers: AckItem[] = [];
    const retry: PendingAcks = { complete: [], fail: [] };
    let error: unknown;
    if (completed.status === "fulfilled") {
      sent.complete = pending.complete;
      answers.push(...completed.value);
    } else {
      retry.complete = pending.complete;
      error = completed.reason;
    }
    if (failed.status === "fulfilled") {
      sent.fail = pending.fail;
      answers.push(...failed.value);
    } else {
      retry.fail = pending.fail;
      error = failed.reason;
    }
    if (sent.complete.length + sent.fail.length > 0) this.options.onAnswers?.(sent, answers);
    return error === undefined ? undefined : { retry: asAcks(retry), error };
  }
}
