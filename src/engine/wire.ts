// Records of the store as the API's wire types, and the errors every part
// of the service words the same way.

import type { ExecutionItem, Job } from "@duetime/sdk/contract";
import { DuetimeError } from "../core/errors.js";
import { isCron, localTime } from "../core/schedule.js";
import { toIso, toIsoOrNull } from "../core/time.js";
import type { AttemptRow, JobRecord } from "../store/store.js";
import { wirePayload } from "./payload-blobs.js";

/** A page's size when the request names none. */
export const DEFAULT_LIMIT = 50;

export function toJob(r: JobRecord): Job {
  return {
    jobId: r.jobId,
    name: r.name,
    state: r.state,
    target: r.target,
    ...wirePayload(r.payload),
    schedule: r.schedule,
    retry: r.retry,
    timeoutSeconds: r.timeoutSeconds,
    priority: r.priority,
    mode: r.mode,
    nextRunAt: toIsoOrNull(r.nextRunAt),
    ...(isCron(r.schedule) ? { nextRunAtLocal: r.nextRunAt === null ? null : localTime(r.nextRunAt, r.schedule.tz) } : {}),
    version: r.version,
    createdAt: toIso(r.createdAt),
    updatedAt: toIso(r.updatedAt),
  };
}

/** One history row; attempt 0 of a READY execution is PENDING until due, QUEUED after; a paused one-off's held execution is PAUSED. */
export function toExecution(r: AttemptRow, now: number): ExecutionItem {
  const state = r.state === "READY" ? ((r.readyAt ?? 0) > now ? "PENDING" : "QUEUED") : r.state;
  return {
    executionId: r.executionId,
    jobId: r.jobId,
    scheduledFor: toIso(r.scheduledFor),
    attempt: r.attempt,
    state: state as ExecutionItem["state"],
    dispatchedAt: toIso(r.dispatchedAt),
    dispatchedBy: r.dispatchedBy,
    startedAt: toIsoOrNull(r.startedAt),
    finishedAt: toIsoOrNull(r.finishedAt),
    error: r.error,
    workerId: r.workerId,
    ...(r.result !== undefined ? { result: r.result } : {}),
    ...(r.throttledMs !== undefined ? { throttledMs: r.throttledMs } : {}),
  };
}

export function invalidState(job: JobRecord, action: string): DuetimeError {
  return new DuetimeError("INVALID_STATE", `cannot ${action} a ${job.state} job`, { state: job.state });
}

/** A trigger or backfill would run a dry-run job for real: refused, so that a dry run never dispatches. */
export function dryRunRefusal(action: string): DuetimeError {
  return new DuetimeError("INVALID_STATE", `cannot ${action} a job in dry run (mode dry_run): PATCH it to {"mode": "live"} first`, {
    mode: "dry_run",
  });
}
