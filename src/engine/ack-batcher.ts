// Collects finished attempts and acknowledges them in batches: one store
// transaction per batch instead of one per job.

import type { CompleteInput, FailInput } from "../store/store.js";
import type { Executor } from "./executor.js";

export class AckBatcher {
  private completes: CompleteInput[] = [];
  private fails: FailInput[] = [];
  private scheduled = false;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly executor: Executor,
    private readonly maxBatch = 500,
  ) {}

  complete(item: CompleteInput): void {
    this.completes.push(item);
    this.schedule();
  }

  fail(item: FailInput): void {
    this.fails.push(item);
    this.schedule();
  }

  /** Writes everything buffered; resolves when it is in the store. */
  flush(): Promise<void> {
    const completes = this.completes;
    const fails = this.fails;
    this.completes = [];
    this.fails = [];
    this.flushing = this.flushing.catch(() => {}).then(async () => {
      for (let i = 0; i < completes.length; i += this.maxBatch) await this.executor.complete(completes.slice(i, i + this.maxBatch));
      for (let i = 0; i < fails.length; i += this.maxBatch) await this.executor.fail(fails.slice(i, i + this.maxBatch));
    });
    return this.flushing;
  }

  // Flush on the next turn of the event loop: calls finishing together share a batch.
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush().catch(() => {}); // a lost ack only means the lease expires and the call repeats
    });
  }
}
