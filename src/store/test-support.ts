// Jobs as the store takes them (NewJob), for tests and benchmarks that talk
// to a store directly, without the engine's validation in front.

import { newId, shardOf } from "../core/ids.js";
import type { NewJob } from "./store.js";

/**
 * `count` hourly recurring queue jobs of tenant `default`, pool p, each with
 * its next occurrence due at `dueAt`; all in `shard` when one is given (ids
 * are drawn until they fall in it).
 */
export function recurringJobs(count: number, { createdAt, dueAt, shard }: { createdAt: number; dueAt: number; shard?: number }): NewJob[] {
  const jobs: NewJob[] = [];
  while (jobs.length < count) {
    const jobId = newId(createdAt);
    if (shard !== undefined && shardOf(jobId) !== shard) continue;
    jobs.push({
      job: {
        tenantId: "default",
        jobId,
        shard: shardOf(jobId),
        kind: "cron",
        name: `recurring-${jobs.length}`,
        state: "SCHEDULED",
        target: { type: "queue", pool: "p" },
        payload: null,
        schedule: { cron: "0 * * * *", tz: "UTC", jitterSeconds: 0, misfire: "run_once", overlap: "allow" },
        retry: { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 3600 },
        timeoutSeconds: 60,
        priority: 0,
        mode: "live",
        createdAt,
      },
      due: { scheduledFor: dueAt, dueAt },
    });
  }
  return jobs;
}
