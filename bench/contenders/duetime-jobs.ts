// The job every duetime contender creates: a queue job due at the herd's second.
import type { BatchCreateItem, BatchCreateResult } from "../../src/core/api.js";
import type { BenchJob } from "../contender.js";

export const BENCH_POOL = "bench";

export function benchJobs(jobs: BenchJob[]): BatchCreateItem[] {
  return jobs.map((j) => ({
    name: "bench",
    target: { type: "queue", pool: BENCH_POOL },
    payload: { seq: j.seq },
    schedule: { runAt: new Date(j.dueAt).toISOString() },
  }));
}

export function assertCreated(results: BatchCreateResult[]): void {
  const failed = results.find((r) => "error" in r);
  if (failed) throw new Error(`createJobs failed: ${JSON.stringify(failed)}`);
}
