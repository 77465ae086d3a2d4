// `duetime import k8s-cronjob FILE.yaml`: Kubernetes CronJobs (batch/v1 or
// batch/v1beta1, one per YAML document or in a List) as duetime jobs, with the
// CronJob controller's semantics for missed runs, concurrency and retries.
// Pure: see plan.ts.

import type { CronSchedule, Overlap, RetryPolicy } from "@duetime/sdk/contract";
import { parseAllDocuments } from "yaml";
import { LIMITS } from "../../core/schemas.js";
import {
  compact,
  cronProblem,
  DEFAULT_IMPORT_MODE,
  fileBasename,
  type ImportOptions,
  type ImportPlan,
  keyMaker,
  type PlannedJob,
  shorten,
  storableProblem,
  zoneProblem,
} from "./plan.js";

/** A container of the CronJob's pod template, as the job's payload carries it. */
export interface ContainerPayload {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  /** The literal values (env[].value); values from valueFrom are left out, with a warning. */
  env?: Record<string, string>;
}

/** What a CronJob's duetime job carries: what to run, for the worker. */
export interface K8sPayload {
  source: "k8s-cronjob";
  file: string;
  /** The YAML document, from 1. */
  document: number;
  /** The item of a List document, from 1. */
  item?: number;
  name: string;
  namespace?: string;
  containers: ContainerPayload[];
}

const API_VERSIONS = ["batch/v1", "batch/v1beta1"];
const LIST_KINDS = ["List", "CronJobList"];
const OVERLAP: Record<string, Overlap> = { Allow: "allow", Forbid: "forbid", Replace: "replace" };
/** Kubernetes' default spec.jobTemplate.spec.backoffLimit. */
const DEFAULT_BACKOFF_LIMIT = 6;
/** The Job controller's pod backoff: 10 s, doubled after each failure, at most 6 minutes. */
const K8S_BACKOFF = { backoffSeconds: 10, maxBackoffSeconds: 360 };

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const isWhole = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);

/** Parses CronJob YAML into a plan: one job per CronJob, a refusal for every document or List item that cannot be one. */
export function planK8sCronJobs(text: string, options: ImportOptions): ImportPlan {
  const plan: ImportPlan = { jobs: [], refused: [] };
  const file = options.file || "k8s";
  const nextKey = keyMaker();
  /** Each job's namespace/name: `kubectl apply` keeps one CronJob per name, the last one applied. */
  const ids: string[] = [];

  const add = (position: Position, object: unknown, inherited?: { apiVersion?: unknown; kind?: unknown }) => {
    const result = planObject(object, position, options, inherited);
    if ("reason" in result) {
      plan.refused.push(result);
      return;
    }
    const payload = result.job.payload as K8sPayload;
    const id = `${payload.namespace ?? "default"}/${payload.name}`;
    plan.jobs.push(result);
    ids.push(id);
  };

  parseAllDocuments(text).forEach((doc, index) => {
    const document = index + 1;
    const source = `${file}#${document}`;
    const syntax = doc.errors[0];
    if (syntax !== undefined) {
      // "Map keys must be unique at line 18, column 3:" and then a snippet of the text.
      plan.refused.push({ source, reason: `YAML: ${syntax.message.split("\n")[0]!.replace(/:$/, "")}` });
      return;
    }
    let object: unknown;
    try {
      object = doc.toJS();
    } catch (err) {
      const line = text.slice(0, doc.contents?.range[0] ?? doc.range[0]).split("\n").length;
      plan.refused.push({ source, reason: `YAML: ${(err as Error).message} (the document from line ${line})` });
      return;
    }
    if (object === null || object === undefined) return; // an empty document (--- alone, or only comments)
    if (isRecord(object) && typeof object.kind === "string" && LIST_KINDS.includes(object.kind)) {
      if (!Array.isArray(object.items)) {
        plan.refused.push({ source: withName(source, object), reason: `kind ${object.kind} has no items` });
        return;
      }
      // A CronJobList from the API leaves kind and apiVersion out of its items.
      const inherited = object.kind === "CronJobList" ? { apiVersion: object.apiVersion, kind: "CronJob" } : undefined;
      for (const [i, item] of object.items.entries()) add({ file, document, item: i + 1 }, item, inherited);
      return;
    }
    add({ file, document }, object);
  });

  const last = new Map(ids.map((id, i) => [id, i]));
  const kept: PlannedJob[] = [];
  plan.jobs.forEach((job, i) => {
    const winner = plan.jobs[last.get(ids[i]!)!]!;
    if (winner === job) kept.push(job);
    else
      plan.refused.push({ source: job.source, reason: `replaced by ${winner.source}: the same CronJob (${ids[i]}); kubectl apply keeps the last` });
  });
  plan.jobs = kept;

  // After the duplicates are gone, so that a CronJob's key is the same whatever else the file holds.
  for (const { job } of kept) {
    const { file: _file, document: _document, item: _item, ...keyed } = job.payload as K8sPayload;
    job.idempotencyKey = nextKey({
      kind: "k8s-cronjob",
      file: fileBasename(file),
      identity: `${keyed.namespace ?? "default"}/${keyed.name}`,
      schedule: job.schedule as CronSchedule,
      payload: keyed,
      target: job.target,
      retry: job.retry,
      timeoutSeconds: job.timeoutSeconds,
    });
  }
  return plan;
}

interface Position {
  file: string;
  document: number;
  item?: number;
}

function withName(source: string, object: unknown): string {
  const name = isRecord(object) && isRecord(object.metadata) ? object.metadata.name : undefined;
  return typeof name === "string" && name !== "" ? `${source} ${name}` : source;
}

function planObject(
  object: unknown,
  at: Position,
  options: ImportOptions,
  inherited?: { apiVersion?: unknown; kind?: unknown },
): PlannedJob | { source: string; reason: string } {
  const source = withName(`${at.file}#${at.document}${at.item !== undefined ? `.${at.item}` : ""}`, object);
  const refuse = (reason: string) => ({ source, reason });
  if (!isRecord(object)) return refuse("not a Kubernetes object (a mapping with apiVersion, kind, metadata and spec)");
  const kind = object.kind ?? inherited?.kind;
  const apiVersion = object.apiVersion ?? inherited?.apiVersion;
  if (kind === undefined) return refuse("kind is missing");
  if (kind !== "CronJob") return refuse(`kind ${String(kind)} is not a CronJob`);
  if (typeof apiVersion !== "string" || !API_VERSIONS.includes(apiVersion)) {
    return refuse(`apiVersion ${apiVersion === undefined ? "is missing" : `${String(apiVersion)} is not`} batch/v1 or batch/v1beta1`);
  }
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const name = metadata.name;
  if (typeof name !== "string" || name === "") return refuse("metadata.name is missing (generateName is not supported: a job needs a stable name)");
  const namespace = typeof metadata.namespace === "string" && metadata.namespace !== "" ? metadata.namespace : undefined;

  const problems: string[] = [];
  const warnings: string[] = [];
  const spec = isRecord(object.spec) ? object.spec : {};

  // spec.schedule, spec.timeZone
  const cron = spec.schedule;
  if (cron === undefined || cron === null) problems.push("spec.schedule is missing");
  else if (typeof cron !== "string") problems.push("spec.schedule must be a string");
  else problems.push(...scheduleProblems(cron));
  const tz = spec.timeZone ?? "UTC";
  if (typeof tz !== "string") problems.push("spec.timeZone must be a string");
  else {
    const problem = zoneProblem(tz, "spec.timeZone");
    if (problem !== null) problems.push(problem);
  }

  // spec.concurrencyPolicy
  const policy = spec.concurrencyPolicy ?? "Allow";
  const overlap = typeof policy === "string" ? OVERLAP[policy] : undefined;
  if (overlap === undefined) problems.push(`spec.concurrencyPolicy ${JSON.stringify(policy)} is not Allow, Forbid or Replace`);

  // spec.startingDeadlineSeconds: the controller runs the latest missed time once, if not later than the deadline.
  let threshold: number | undefined;
  const deadline = spec.startingDeadlineSeconds;
  if (deadline !== undefined && deadline !== null) {
    if (!isWhole(deadline) || deadline < 0)
      problems.push(`spec.startingDeadlineSeconds must be a whole number of seconds >= 0, got ${JSON.stringify(deadline)}`);
    else if (deadline === 0) {
      threshold = 1;
      warnings.push("spec.startingDeadlineSeconds 0 is read as 1 second, duetime's smallest misfire threshold");
    } else if (deadline > LIMITS.misfireThresholdSecondsMax) {
      threshold = LIMITS.misfireThresholdSecondsMax;
      warnings.push(`spec.startingDeadlineSeconds ${deadline} is more than a year; the misfire threshold is ${threshold} s (a year)`);
    } else threshold = deadline;
  }

  // spec.suspend
  const suspend = spec.suspend ?? false;
  if (typeof suspend !== "boolean") problems.push(`spec.suspend must be true or false, got ${JSON.stringify(suspend)}`);

  // spec.jobTemplate.spec: backoffLimit, activeDeadlineSeconds, the pod's containers
  const jobSpec = isRecord(spec.jobTemplate) && isRecord(spec.jobTemplate.spec) ? spec.jobTemplate.spec : {};
  const backoffLimit = jobSpec.backoffLimit ?? DEFAULT_BACKOFF_LIMIT;
  let retry: Partial<RetryPolicy> | undefined;
  if (!isWhole(backoffLimit) || backoffLimit < 0) {
    problems.push(`spec.jobTemplate.spec.backoffLimit must be a whole number >= 0, got ${JSON.stringify(backoffLimit)}`);
  } else {
    const maxAttempts = Math.min(backoffLimit + 1, LIMITS.maxAttemptsMax);
    if (maxAttempts < backoffLimit + 1) {
      warnings.push(
        `spec.jobTemplate.spec.backoffLimit ${backoffLimit} allows more attempts than duetime's ${LIMITS.maxAttemptsMax}; maxAttempts is ${maxAttempts}`,
      );
    }
    retry = { maxAttempts, ...K8S_BACKOFF };
  }
  let timeoutSeconds: number | undefined;
  const active = jobSpec.activeDeadlineSeconds;
  if (active !== undefined && active !== null) {
    if (!isWhole(active) || active < 1)
      problems.push(`spec.jobTemplate.spec.activeDeadlineSeconds must be a whole number of seconds >= 1, got ${JSON.stringify(active)}`);
    else if (active > LIMITS.timeoutSecondsMax) {
      timeoutSeconds = LIMITS.timeoutSecondsMax;
      warnings.push(
        `spec.jobTemplate.spec.activeDeadlineSeconds ${active} is longer than duetime's longest timeout; the timeout is ${timeoutSeconds} s (a day)`,
      );
    } else timeoutSeconds = active;
  }
  const podSpec = isRecord(jobSpec.template) && isRecord(jobSpec.template.spec) ? jobSpec.template.spec : ({} as Json);
  const containers = mapContainers(podSpec.containers, problems, warnings);

  const payload: K8sPayload = compact({
    source: "k8s-cronjob" as const,
    file: at.file,
    document: at.document,
    item: at.item,
    name,
    namespace,
    containers,
  });
  const unstorable = storableProblem(payload, "the CronJob");
  if (unstorable !== null) problems.push(unstorable);
  if (problems.length > 0) return refuse(problems.join("; "));

  const schedule: CronSchedule =
    threshold === undefined
      ? { cron: cron as string, tz: tz as string, misfire: "run_once", overlap: overlap! }
      : { cron: cron as string, tz: tz as string, misfire: "skip", misfireThresholdSeconds: threshold, overlap: overlap! };
  return compact({
    source,
    job: compact({
      name: shorten(`${namespace ?? "default"}/${name}`, LIMITS.nameMaxLength),
      target: options.target,
      payload,
      schedule,
      retry,
      timeoutSeconds,
      mode: options.mode ?? DEFAULT_IMPORT_MODE,
    }),
    warnings,
    paused: suspend === true ? true : undefined,
  });
}

/** What stops spec.schedule: what Kubernetes itself rejects, and what duetime's cron parser refuses. */
function scheduleProblems(cron: string): string[] {
  const zone = /^\s*(CRON_TZ|TZ)=(\S*)/.exec(cron);
  if (zone !== null) {
    return [
      `spec.schedule ${JSON.stringify(cron)} sets its zone with ${zone[1]}=, which Kubernetes rejects: set spec.timeZone: ${zone[2]} and remove ${zone[1]}= from the schedule`,
    ];
  }
  const trimmed = cron.trim();
  if (/^@every\b/i.test(trimmed)) {
    return [`spec.schedule ${JSON.stringify(cron)} is an interval (@every), not a time of day: write it as a cron expression`];
  }
  if (!trimmed.startsWith("@")) {
    const fields = trimmed.split(/\s+/).length;
    if (fields === 6) {
      return [`spec.schedule ${JSON.stringify(cron)} has 6 fields; Kubernetes reads 5 (minute hour day-of-month month day-of-week) and rejects it`];
    }
  }
  const problem = cronProblem(cron);
  return problem === null ? [] : [problem];
}

/** spec.jobTemplate.spec.template.spec.containers as the payload's containers; problems and warnings are added to. */
function mapContainers(value: unknown, problems: string[], warnings: string[]): ContainerPayload[] {
  const path = "spec.jobTemplate.spec.template.spec.containers";
  if (!Array.isArray(value) || value.length === 0) {
    problems.push(`${path} is missing: a CronJob runs at least one container`);
    return [];
  }
  const out: ContainerPayload[] = [];
  for (const [i, c] of value.entries()) {
    const label = isRecord(c) && typeof c.name === "string" ? c.name : `${i + 1}`;
    if (!isRecord(c) || typeof c.name !== "string" || c.name === "") {
      problems.push(`${path}[${i}] has no name`);
      continue;
    }
    if (typeof c.image !== "string" || c.image === "") {
      problems.push(`container ${label} has no image`);
      continue;
    }
    const strings = (field: "command" | "args"): string[] | undefined => {
      const v = c[field];
      if (v === undefined || v === null) return undefined;
      if (Array.isArray(v) && v.every((s) => typeof s === "string")) return v;
      problems.push(`container ${label}: ${field} must be a list of strings`);
      return undefined;
    };
    const env: Record<string, string> = {};
    if (c.env !== undefined && c.env !== null) {
      if (!Array.isArray(c.env)) problems.push(`container ${label}: env must be a list`);
      else {
        for (const e of c.env) {
          if (!isRecord(e) || typeof e.name !== "string" || e.name === "") {
            problems.push(`container ${label}: an env entry has no name`);
          } else if (e.valueFrom !== undefined && e.valueFrom !== null) {
            const from = isRecord(e.valueFrom) ? Object.keys(e.valueFrom).join(", ") : "valueFrom";
            warnings.push(
              `container ${label}: env ${e.name} comes from valueFrom (${from}) and was left out; give the worker that value another way`,
            );
          } else if (e.value === undefined || e.value === null || typeof e.value === "string") {
            env[e.name] = e.value ?? "";
          } else {
            problems.push(`container ${label}: env ${e.name} must be a string (quote it in the YAML); Kubernetes rejects numbers and booleans there`);
          }
        }
      }
    }
    if (c.envFrom !== undefined && c.envFrom !== null) {
      warnings.push(`container ${label}: envFrom (variables from ConfigMaps and Secrets) was left out; give the worker those values another way`);
    }
    out.push(
      compact({
        name: c.name,
        image: c.image,
        command: strings("command"),
        args: strings("args"),
        env: Object.keys(env).length > 0 ? env : undefined,
      }),
    );
  }
  return out;
}
