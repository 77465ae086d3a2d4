// Finished HTTP-target attempts, buffered for a few milliseconds so that many
// share one store transaction: either the runner's next lease call takes them
// along (executionAckAndLease: acknowledge and lease in one commit), or the
// timer writes them. The short delay is what lets calls finishing a few ms
// apart share a commit; a commit per call is what made the herd slow.
// The buffering is the project's one Batcher; a failed write is not tried
// again: its leases expire and those calls are sent again.

import { Batcher } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import type { CompleteInput } from "../store/store.js";
import type { Executor, FailRequest } from "./executor.js";

type Outcome = { kind: "complete"; item: CompleteInput } | { kind: "fail"; item: FailRequest };

export class AckBuffer {
  private readonly batcher: Batcher<Outcome>;

  constructor(
    executor: Executor,
    clock: Clock,
    /** How long an outcome may wait for company (default 10 ms). */
    delayMs = 10,
    maxBatch = 500,
    /** A failed write: its leases expire and those calls are sent again. */
    onError: (error: unknown) => void = () => {},
  ) {
    this.batcher = new Batcher<Outcome>({
      send: async (batch) => {
        const { complete, fail } = split(batch);
        if (complete.length > 0) await executor.complete(complete);
        if (fail.length > 0) await executor.fail(fail);
        return undefined;
      },
      delayMs,
      maxBatch,
      clock,
      keep: () => false,
      onError: (error) => onError(error),
    });
  }

  get size(): number {
    return this.batcher.size;
  }

  complete(item: CompleteInput): void {
    this.batcher.add({ kind: "complete", item });
  }

  fail(item: FailRequest): void {
    this.batcher.add({ kind: "fail", item });
  }

  /** Takes up to maxBatch buffered outcomes, for a lease call that acknowledges them. */
  take(): { complete: CompleteInput[]; fail: FailRequest[] } {
    return split(this.batcher.take());
  }

  /** Puts back outcomes whose lease call failed: they are written by the next flush. */
  restore(items: { complete: CompleteInput[]; fail: FailRequest[] }): void {
    this.batcher.restore([
      ...items.complete.map((item): Outcome => ({ kind: "complete", item })),
      ...items.fail.map((item): Outcome => ({ kind: "fail", item })),
    ]);
  }

  /** Writes everything buffered; resolves when it is in the store (or the write failed, reported to onError). */
  flush(): Promise<void> {
    return this.batcher.flush();
  }
}

function split(outcomes: readonly Outcome[]): { complete: CompleteInput[]; fail: FailRequest[] } {
  const out = { complete: [] as CompleteInput[], fail: [] as FailRequest[] };
  for (const o of outcomes) {
    if (o.kind === "complete") out.complete.push(o.item);
    else out.fail.push(o.item);
  }
  return out;
}
