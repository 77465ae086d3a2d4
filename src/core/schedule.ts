// Occurrences of a job's effective schedule: pure functions of (schedule,
// jobId, time). An occurrence's nominal time (scheduledFor) names its
// execution; its dueAt adds the job's stable jitter offset.

import type { Job } from "@duetime/sdk/contract";
import { hashOffset, nextFireTime, parseCron, type CronExpression, type FireTime } from "./cron/index.js";
import { getZone } from "./cron/zone.js";
import { parseRfc3339 } from "./time.js";

export interface Occurrence {
  scheduledFor: number;
  dueAt: number;
}

type CronJobSchedule = Extract<Job["schedule"], { cron: string }>;

export function isCron(schedule: Job["schedule"]): schedule is CronJobSchedule {
  return "cron" in schedule;
}

/** The first occurrence of a new (or resumed) job at time now. */
export function firstOccurrence(schedule: Job["schedule"], jobId: string, now: number): Occurrence | null {
  if (!isCron(schedule)) {
    const runAt = parseRfc3339(schedule.runAt)!;
    return { scheduledFor: runAt, dueAt: runAt };
  }
  const startAt = schedule.startAt ? parseRfc3339(schedule.startAt)! : -Infinity;
  return nextOccurrence(schedule, jobId, Math.max(now, startAt - 1));
}

/** The occurrence strictly after `after`, or null past endAt or when the expression never fires again. */
export function nextOccurrence(schedule: CronJobSchedule, jobId: string, after: number): Occurrence | null {
  const fire = nextFireTime(compiled(schedule.cron, jobId), schedule.tz, after, schedule.dst);
  if (!fire) return null;
  if (schedule.endAt && fire.at > parseRfc3339(schedule.endAt)!) return null;
  return { scheduledFor: fire.at, dueAt: fire.at + jitterMs(schedule.jitterSeconds, jobId) };
}

/** A stable offset in [0, jitterSeconds] seconds, in whole milliseconds, hashed from the job id so a herd spreads out. */
export function jitterMs(jitterSeconds: number, jobId: string): number {
  return jitterSeconds > 0 ? hashOffset(jobId, Math.round(jitterSeconds * 1000) + 1) : 0;
}

// Parsing is cheap but not free; recurring jobs are re-planned on every
// dispatch, so keep a bounded cache of compiled expressions.
const cache = new Map<string, CronExpression>();
const CACHE_LIMIT = 10_000;

function compiled(cron: string, jobId: string): CronExpression {
  const key = cron.includes("H") ? `${jobId}\u0000${cron}` : cron;
  let expr = cache.get(key);
  if (!expr) {
    if (cache.size >= CACHE_LIMIT) cache.clear();
    expr = parseCron(cron, { hashSeed: jobId });
    cache.set(key, expr);
  }
  return expr;
}

/**
 * The cron expression's fire times in (from, to], up to max, ignoring
 * startAt/endAt (the run ledger shows those as outside the window).
 */
export function fireTimesBetween(schedule: CronJobSchedule, jobId: string, from: number, to: number, max: number): FireTime[] {
  const expr = compiled(schedule.cron, jobId);
  const out: FireTime[] = [];
  for (
    let f = nextFireTime(expr, schedule.tz, from, schedule.dst);
    f && f.at <= to && out.length < max;
    f = nextFireTime(expr, schedule.tz, f.at, schedule.dst)
  ) {
    out.push(f);
  }
  return out;
}

/** An instant as wall time in a zone: "2026-10-16T10:00:00+01:00[Europe/London]". */
export function localTime(ms: number, tz: string): string {
  const offsetMs = getZone(tz).offsetAt(ms);
  const sign = offsetMs < 0 ? "-" : "+";
  const minutes = Math.abs(offsetMs) / 60_000;
  const hh = String(Math.floor(minutes / 60)).padStart(2, "0");
  const mm = String(Math.round(minutes % 60)).padStart(2, "0");
  return `${new Date(ms + offsetMs).toISOString().slice(0, 19)}${sign}${hh}:${mm}[${tz}]`;
}
