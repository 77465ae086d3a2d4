// `duetime import`: the pure planning half. A crontab or a Kubernetes CronJob
// YAML becomes a plan: the duetime jobs to create, and every line or document
// that cannot be mapped, with the reason. No I/O: the CLI and the HTTP API read
// the file, pass its text here, then create the plan's jobs in a batch.
//
// Every planned job is creatable: what the server would refuse (cron syntax,
// zone, name length, text it cannot store) is found here and refused instead.

import { createHash } from "node:crypto";
import type { BatchCreateItem, CronSchedule, JobMode, RetryPolicy, Target } from "@duetime/sdk/contract";
import { CronSyntaxError, isValidTimeZone, parseCron } from "../../core/cron/index.js";
import { canonicalJson } from "../../core/job-spec.js";
import { LIMITS } from "../../core/schemas.js";
import { unstorableText } from "../../core/validate.js";

export interface ImportOptions {
  /** The file's name as the user gave it (for sources and names). */
  file: string;
  /** Where every imported job goes: a worker pool or an HTTP URL. */
  target: Target;
  /** Default "dry_run". */
  mode?: JobMode;
}

export interface PlannedJob {
  /** Where it came from, for people: "crontab:12" (line 12) or "cronjobs.yaml#2 backup" (document 2, the CronJob named backup). */
  source: string;
  /** The job to create; carries an idempotencyKey so that importing the same file again creates nothing new. */
  job: BatchCreateItem;
  /** Things the user should know that did not stop the import (e.g. TZ= without CRON_TZ=). */
  warnings: string[];
  /** A suspended CronJob (spec.suspend: true): the caller pauses it after creating it. */
  paused?: boolean;
}

export interface Refusal {
  source: string;
  reason: string;
}

export interface ImportPlan {
  jobs: PlannedJob[];
  refused: Refusal[];
}

/** Imported jobs record what they would do until someone switches them to live. */
export const DEFAULT_IMPORT_MODE: JobMode = "dry_run";

/** "/etc/cron.d/backup" → "backup", "C:\\jobs\\cron.yaml" → "cron.yaml". */
export function fileBasename(file: string): string {
  const parts = file.split(/[/\\]/).filter((p) => p !== "");
  return parts[parts.length - 1] ?? "";
}

/**
 * text with runs of whitespace made one space, cut to at most max UTF-16 code
 * units on a code point boundary (never half a surrogate pair), with "…" when cut.
 */
export function shorten(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  let out = "";
  for (const ch of flat) {
    if (out.length + ch.length + 1 > max) break;
    out += ch;
  }
  return `${out.trimEnd()}…`;
}

/** Why the server would refuse this cron expression, or null. */
export function cronProblem(cron: string): string | null {
  if (cron.length > LIMITS.cronMaxLength) return `cron: longer than ${LIMITS.cronMaxLength} characters`;
  try {
    parseCron(cron);
    return null;
  } catch (err) {
    if (err instanceof CronSyntaxError) return `cron: ${err.message}`;
    throw err;
  }
}

/** Why the server would refuse this zone, or null; `where` says where it was set ("CRON_TZ= on line 3"). */
export function zoneProblem(tz: string, where: string): string | null {
  if (tz.length > LIMITS.tzMaxLength || !isValidTimeZone(tz)) return `unknown time zone ${JSON.stringify(tz)} (${where})`;
  return null;
}

/**
 * Why the server could not store this value (core/validate.ts refuses text with
 * U+0000 or an unpaired surrogate anywhere in a body), or null. `path` names it.
 */
export function storableProblem(value: unknown, path: string): string | null {
  if (typeof value === "string") {
    const problem = unstorableText(value);
    if (problem === "nul") return `${path} contains a NUL character (U+0000), which duetime cannot store`;
    if (problem) return `${path} is not valid Unicode (an unpaired surrogate), which duetime cannot store`;
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  for (const [key, item] of Object.entries(value)) {
    const problem = storableProblem(key, path) ?? storableProblem(item, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`);
    if (problem !== null) return problem;
  }
  return null;
}

/** What an idempotency key is computed from: everything that makes the job what it is, but not where in the file it was. */
export interface KeyContent {
  kind: "crontab" | "k8s-cronjob";
  /** The file's basename (not its path: the same file imported from another directory is the same import). */
  file: string;
  /** What identifies the entry in its file besides its content (a CronJob's namespace/name); null for crontab lines. */
  identity: unknown;
  schedule: CronSchedule;
  /** The payload without its position fields (line, document, item) and file path. */
  payload: unknown;
  target: Target;
  retry?: Partial<RetryPolicy>;
  timeoutSeconds?: number;
}

/**
 * A key maker for one import: `import:` + the SHA-256 (hex) of the canonical
 * JSON of the content and its occurrence number (the 2nd identical crontab
 * line is a second job, as cron runs it twice). Deterministic for the same
 * input; positions (line and document numbers) are left out so that adding a
 * comment above a line does not make it a new job.
 */
export function keyMaker(): (content: KeyContent) => string {
  const seen = new Map<string, number>();
  return (content) => {
    const base = canonicalJson(content);
    const occurrence = (seen.get(base) ?? 0) + 1;
    seen.set(base, occurrence);
    const digest = createHash("sha256")
      .update(canonicalJson({ ...content, occurrence }))
      .digest("hex");
    return `import:${digest}`.slice(0, LIMITS.idempotencyKeyMaxLength);
  };
}

/** Object with the undefined-valued keys left out (payloads say only what was there). */
export function compact<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
