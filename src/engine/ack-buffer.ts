// Finished HTTP-target attempts, buffered for a few milliseconds so that many
// share one store transaction: either the runner's next lease call takes them
// along (executionAckAndLease: acknowledge and lease in one commit), or the
// timer writes them. The short delay is what lets calls finishing a few ms
// apart share a commit; a commit per call is what made the herd slow.

import type { Clock, TimerHandle } from "../core/clock.js";
import type { CompleteInput } from "../store/store.js";
import type { Executor, FailRequest } from "./executor.js";

export class AckBuffer {
  private completes: CompleteInput[] = [];
  private fails: FailRequest[] = [];
  private timer: TimerHandle | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly executor: Executor,
    private readonly clock: Clock,
    /** How long an outcome may wait for company (default 10 ms). */
    private readonly delayMs = 10,
    private readonly maxBatch = 500,
    /** A failed write: its leases expire and those calls are sent again. */
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  get size(): number {
    return this.completes.length + this.fails.length;
  }

  complete(item: CompleteInput): void {
    this.completes.push(item);
    this.schedule();
  }

  fail(item: FailRequest): void {
    this.fails.push(item);
    this.schedule();
  }

  /** Takes up to maxBatch buffered outcomes, for a lease call that acknowledges them. */
  take(): { complete: CompleteInput[]; fail: FailRequest[] } {
    const complete = this.completes.splice(0, this.maxBatch);
    const fail = this.fails.splice(0, Math.max(0, this.maxBatch - complete.length));
    if (this.size === 0) {
      this.timer?.cancel();
      this.timer = null;
    }
    return { complete, fail };
  }

  /** Puts back outcomes whose lease call failed: they are written by the next flush. */
  restore(items: { complete: CompleteInput[]; fail: FailRequest[] }): void {
    this.completes.unshift(...items.complete);
    this.fails.unshift(...items.fail);
    if (this.size > 0) this.schedule();
  }

  /** Writes everything buffered; resolves when it is in the store. */
  flush(): Promise<void> {
    this.timer?.cancel();
    this.timer = null;
    const completes = this.completes;
    const fails = this.fails;
    this.completes = [];
    this.fails = [];
    this.writing = this.writing
      .catch(() => {})
      .then(async () => {
        for (let i = 0; i < completes.length; i += this.maxBatch) await this.executor.complete(completes.slice(i, i + this.maxBatch));
        for (let i = 0; i < fails.length; i += this.maxBatch) await this.executor.fail(fails.slice(i, i + this.maxBatch));
      });
    return this.writing;
  }

  private schedule(): void {
    if (this.size >= this.maxBatch) {
      void this.flush().catch(this.onError);
      return;
    }
    if (this.timer) return;
    this.timer = this.clock.setTimer(() => {
      this.timer = null;
      void this.flush().catch(this.onError);
    }, this.delayMs);
  }
}
