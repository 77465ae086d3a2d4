// From what a client sends (JobSpec, already shape-checked against
// core/schemas.ts) to the effective job: defaults filled in, semantics checked
// (cron syntax, IANA zone, RFC 3339 times, cross-field rules), and the first
// occurrence planned. Errors name the field as a dotted path.

import type { CronSchedule, HttpTarget, Job, JobMode, JobSpec, RetryPolicy, Target } from "@duetime/sdk/contract";
import { CronSyntaxError, isValidTimeZone, parseCron } from "./cron/index.js";
import { invalidArgument } from "./errors.js";
import { DEFAULT_RETRY } from "./retry.js";
import { LIMITS } from "./schemas.js";
import { brokerOf } from "./targets.js";
import { firstOccurrence, type Occurrence } from "./schedule.js";
import { msOfSeconds, parseRfc3339, toIso } from "./time.js";

export const DEFAULT_TIMEOUT_SECONDS = 300;
export const DEFAULT_PRIORITY = 0;

export interface EffectiveJob {
  kind: "once" | "cron";
  name: string;
  target: Target;
  payload: unknown;
  schedule: Job["schedule"];
  retry: RetryPolicy;
  timeoutSeconds: number;
  priority: number;
  mode: JobMode;
  /** The first occurrence, or null when the schedule has none (a cron window already over). */
  first: Occurrence | null;
}

/** `prefix` is prepended to field paths (e.g. "jobs.3." in a batch). */
export function effectiveJob(spec: JobSpec, jobId: string, now: number, prefix = ""): EffectiveJob {
  const schedule = effectiveSchedule(spec.schedule, jobId, now, prefix);
  const kind = "cron" in schedule ? "cron" : "once";
  const mode = spec.mode ?? "live";
  if (mode === "dry_run" && kind !== "cron") {
    throw invalidArgument(`${prefix}mode`, "dry_run applies to recurring (cron) jobs: a one-off has no schedule to compare");
  }
  return {
    kind,
    name: spec.name,
    target: effectiveTarget(spec.target, prefix),
    payload: spec.payload ?? null,
    schedule,
    retry: effectiveRetry(spec.retry, prefix),
    timeoutSeconds: spec.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
    priority: spec.priority ?? DEFAULT_PRIORITY,
    mode,
    first: firstOccurrence(schedule, jobId, now),
  };
}

function effectiveSchedule(spec: JobSpec["schedule"], jobId: string, now: number, prefix: string): Job["schedule"] {
  if ("runAt" in spec) return { runAt: toIso(parseTime(spec.runAt, `${prefix}schedule.runAt`)) };
  if ("delaySeconds" in spec) return { runAt: toIso(now + msOfSeconds(spec.delaySeconds)) };
  return effectiveCron(spec, jobId, prefix);
}

function effectiveCron(spec: CronSchedule, jobId: string, prefix: string): Job["schedule"] {
  const tz = spec.tz ?? "UTC";
  if (!isValidTimeZone(tz)) {
    throw invalidArgument(`${prefix}schedule.tz`, `${JSON.stringify(tz)} is not a known IANA time zone (e.g. "Europe/London")`);
  }
  try {
    parseCron(spec.cron, { hashSeed: jobId });
  } catch (err) {
    if (err instanceof CronSyntaxError) {
      throw invalidArgument(`${prefix}schedule.cron`, err.message, { cronField: err.field, token: err.token });
    }
    throw err;
  }
  const startAt = spec.startAt === undefined ? undefined : parseTime(spec.startAt, `${prefix}schedule.startAt`);
  const endAt = spec.endAt === undefined ? undefined : parseTime(spec.endAt, `${prefix}schedule.endAt`);
  if (startAt !== undefined && endAt !== undefined && endAt <= startAt) {
    throw invalidArgument(`${prefix}schedule.endAt`, "must be later than schedule.startAt");
  }
  return {
    cron: spec.cron,
    tz,
    jitterSeconds: spec.jitterSeconds ?? 0,
    misfire: spec.misfire ?? "run_once",
    ...(spec.misfireThresholdSeconds !== undefined ? { misfireThresholdSeconds: spec.misfireThresholdSeconds } : {}),
    overlap: spec.overlap ?? "allow",
    ...(startAt !== undefined ? { startAt: toIso(startAt) } : {}),
    ...(endAt !== undefined ? { endAt: toIso(endAt) } : {}),
    ...(spec.dst ? { dst: spec.dst } : {}),
  };
}

function effectiveTarget(target: Target, prefix: string): Target {
  switch (target.type) {
    case "queue":
      return { type: "queue", pool: target.pool };
    case "nats":
      return { type: "nats", subject: target.subject, broker: brokerOf(target), headers: target.headers ?? {} };
    case "amqp":
      // AMQP short strings are counted in bytes; the schema counted characters.
      if (new TextEncoder().encode(target.routingKey).length > LIMITS.amqpNameMaxLength)
        throw invalidArgument(`${prefix}target.routingKey`, `must be at most ${LIMITS.amqpNameMaxLength} bytes in UTF-8`);
      return { type: "amqp", exchange: target.exchange, routingKey: target.routingKey, broker: brokerOf(target), headers: target.headers ?? {} };
    case "http":
      return effectiveHttpTarget(target, prefix);
  }
}

function effectiveHttpTarget(target: HttpTarget, prefix: string): HttpTarget {
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    throw invalidArgument(`${prefix}target.url`, `${JSON.stringify(target.url)} is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalidArgument(`${prefix}target.url`, "only http and https URLs are allowed");
  }
  return { type: "http", url: target.url, method: (target.method ?? "POST").toUpperCase(), headers: target.headers ?? {} };
}

function effectiveRetry(retry: Partial<RetryPolicy> | undefined, prefix: string): RetryPolicy {
  const backoffSeconds = retry?.backoffSeconds ?? DEFAULT_RETRY.backoffSeconds;
  const maxBackoffSeconds = retry?.maxBackoffSeconds ?? Math.max(DEFAULT_RETRY.maxBackoffSeconds, backoffSeconds);
  if (maxBackoffSeconds < backoffSeconds) {
    throw invalidArgument(`${prefix}retry.maxBackoffSeconds`, `must be at least retry.backoffSeconds (${backoffSeconds})`);
  }
  const policy: RetryPolicy = { maxAttempts: retry?.maxAttempts ?? DEFAULT_RETRY.maxAttempts, backoffSeconds, maxBackoffSeconds };
  if (retry?.deadlineSeconds !== undefined) policy.deadlineSeconds = retry.deadlineSeconds;
  return policy;
}

function parseTime(value: string, field: string): number {
  const ms = parseRfc3339(value);
  if (ms === null) throw invalidArgument(field, `${JSON.stringify(value)} is not an RFC 3339 time (e.g. "2026-10-16T09:00:00Z")`);
  return ms;
}

/** JSON with object keys sorted, so JSON-equal bodies hash equal (idempotency). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}
