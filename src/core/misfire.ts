// What to do with a recurring job's occurrence when it is dispatched: on time,
// it simply runs; late (the scheduler was down, or the job was paused), the
// job's misfire policy decides which missed occurrences run and which are
// recorded as SKIPPED. Pure functions of (schedule, job, time).

import type { ErrorRecord, Job, Overlap } from "@duetime/sdk/contract";
import { jitterMs, nextOccurrence, type Occurrence } from "./schedule.js";

/** An occurrence dispatched more than this after its due time is a misfire (Quartz's default too). */
export const MISFIRE_THRESHOLD_MS = 60_000;
/** catch_up runs at most this many missed occurrences; older ones are skipped. */
export const CATCH_UP_MAX = 100;
/** catch_up runs missed occurrences one per this interval: a bounded rate, not a burst. */
export const CATCH_UP_SPACING_MS = 1_000;
/** At most this many skipped occurrences are recorded per plan; the run ledger derives the rest. */
export const SKIPPED_RECORD_MAX = 100;

type CronJobSchedule = Extract<Job["schedule"], { cron: string }>;

export interface DispatchPlan {
  /** The occurrence to execute now (its nominal time), or null for none. */
  run: number | null;
  /** Occurrences recorded as SKIPPED. */
  skipped: { scheduledFor: number; reason: "misfire" }[];
  /** Where the due entry moves next, or null when the schedule has no more. */
  next: Occurrence | null;
}

export function planCronDispatch(
  schedule: CronJobSchedule,
  jobId: string,
  scheduledFor: number,
  now: number,
  thresholdMs = MISFIRE_THRESHOLD_MS,
): DispatchPlan {
  const lateBy = now - (scheduledFor + jitterMs(schedule.jitterSeconds, jobId));
  if (lateBy <= thresholdMs) {
    return { run: scheduledFor, skipped: [], next: nextOccurrence(schedule, jobId, scheduledFor) };
  }
  const keep = schedule.misfire === "catch_up" ? CATCH_UP_MAX : 1;
  const missed = recentOccurrences(schedule, jobId, scheduledFor, now, keep + SKIPPED_RECORD_MAX);
  const future = nextOccurrence(schedule, jobId, now);
  const skip = (times: number[]) => times.slice(-SKIPPED_RECORD_MAX).map((t) => ({ scheduledFor: t, reason: "misfire" as const }));
  switch (schedule.misfire) {
    case "skip":
      return { run: null, skipped: skip(missed), next: future };
    case "catch_up": {
      const kept = missed.slice(-CATCH_UP_MAX);
      const second = kept[1];
      return {
        run: kept[0] ?? null,
        skipped: skip(missed.slice(0, -CATCH_UP_MAX)),
        next: second !== undefined ? { scheduledFor: second, dueAt: now + CATCH_UP_SPACING_MS } : future,
      };
    }
    default: // run_once: the most recent missed occurrence, once
      return { run: missed[missed.length - 1] ?? null, skipped: skip(missed.slice(0, -1)), next: future };
  }
}

/**
 * Up to `limit` most recent occurrences in [from, now], oldest first. It
 * never walks the whole gap from `from`: a per-second schedule missed for a
 * week is 600,000 occurrences. It looks back a growing span from now instead.
 */
export function recentOccurrences(schedule: CronJobSchedule, jobId: string, from: number, now: number, limit: number): number[] {
  for (let span = 3_600_000; ; span *= 4) {
    const start = Math.max(from - 1, now - span);
    const found: number[] = [];
    for (let o = nextOccurrence(schedule, jobId, start); o && o.scheduledFor <= now; o = nextOccurrence(schedule, jobId, o.scheduledFor)) {
      found.push(o.scheduledFor);
      if (found.length > 10 * limit) found.splice(0, found.length - limit);
    }
    if (found.length >= limit || start <= from - 1) return found.slice(-limit);
  }
}

/**
 * An occurrence due to run, when its job still has one in flight (READY or
 * RUNNING): "allow" runs it beside; "forbid" records it SKIPPED; "replace"
 * cancels the in-flight ones (RUNNING ones asked to stop), then runs it.
 */
export function overlapAction(policy: Overlap, inFlight: boolean): "run" | "skip" | "replace" {
  if (!inFlight || policy === "allow") return "run";
  return policy === "forbid" ? "skip" : "replace";
}

const SKIP_MESSAGES: Record<string, string> = {
  misfire: "missed: the scheduler was down or the job was paused at this time (misfire policy)",
  overlap: "skipped: the previous occurrence was still running (overlap: forbid)",
  dry_run: "would run: the job is in dry run (mode dry_run); recorded, not dispatched",
};

/** The error a SKIPPED execution records: why it did not run. */
export function skippedError(reason: string): ErrorRecord {
  return { message: SKIP_MESSAGES[reason] ?? `skipped: ${reason}`, reason };
}

/** The error an execution cancelled by its successor (overlap: replace) records. */
export const REPLACED_ERROR: ErrorRecord = { message: "replaced by the next occurrence (overlap: replace)", reason: "overlap" };

/** A recurring job whose schedule has no next occurrence is COMPLETED at its last dispatch; a one-off ends with its execution instead. */
export function completesAtDispatch(kind: "once" | "cron", hasNext: boolean): boolean {
  return kind === "cron" && !hasNext;
}
