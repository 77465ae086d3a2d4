// `duetime jobs create|get|list|update|cancel|pause|resume|trigger`: parsing
// (pure) and running (against a DuetimeClient). backfill and occurrences live
// in ledger.ts.

import {
  type CronSchedule,
  type ExecutionItem,
  type Job,
  type JobPatch,
  type JobSpec,
  type JobState,
  type ListJobsQuery,
  type Misfire,
  type Overlap,
  type ScheduleSpec,
  type Target,
  JOB_STATES,
} from "@duetime/sdk/contract";
import type { DuetimeClient } from "@duetime/sdk";
import {
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  UsageError,
  choiceOption,
  durationOption,
  expectPositionals,
  globalOptions,
  httpUrlOption,
  integerOption,
  jsonOption,
  strictParse,
  timeOption,
  type Env,
  type GlobalOptions,
} from "./args.js";
import { oneLine, utc, zoned, type Printer } from "./output.js";

export type JobsCommand =
  | { command: "jobs create"; global: GlobalOptions; spec?: JobSpec; file?: string; idempotencyKey?: string }
  | { command: "jobs get" | "jobs cancel" | "jobs pause" | "jobs resume" | "jobs trigger"; global: GlobalOptions; jobId: string }
  | { command: "jobs list"; global: GlobalOptions; query: ListJobsQuery }
  | { command: "jobs update"; global: GlobalOptions; jobId: string; patch?: JobPatch; file?: string; version?: number };

export const JOBS_HELP = `Usage: duetime jobs <command> [options]

Commands:
  create              Create a job (from flags, --file or --data)
  get <jobId>         Show a job
  list                List jobs, newest first
  update <jobId>      Change a job (from flags, --file or --data)
  cancel <jobId>      Cancel a job
  pause <jobId>       Pause a job
  resume <jobId>      Resume a paused job
  trigger <jobId>     Run a job now (a new execution)
  backfill <jobId>    Create the occurrences of a past window (--from, --to)
  occurrences <jobId> What became of each fire time of a window (--from, --to)

Run "duetime jobs <command> --help" for a command's options.

${GLOBAL_HELP}`;

export const CREATE_HELP = `Usage: duetime jobs create --name NAME (--queue POOL | --target-url URL) [schedule] [options]
       duetime jobs create --file job.json | --data '<json>' [--idempotency-key K]

Target (one of):
  --queue POOL            Workers of POOL lease the job
  --target-url URL        The server calls URL (http or https)
  --method M              HTTP method for --target-url (default POST)
  --header "K: V"         HTTP header for --target-url (repeatable)

Schedule (one of; default: run now):
  --delay D               Run after D: 30s, 5m, 2h, 1d or seconds
  --at TIME               Run at an RFC 3339 time
  --cron EXPR             Run on a cron schedule
  --tz ZONE               IANA zone of --cron (default UTC)
  --jitter D              Random delay up to D per occurrence (--cron)
  --misfire P             run_once | skip | catch_up (--cron)
  --overlap P             allow | forbid | replace (--cron)

Options:
  --payload JSON          The job's payload
  --max-attempts N        Attempts before the job is dead (1..1000, default 3)
  --backoff D             First retry delay (default 10s)
  --max-backoff D         Longest retry delay (default 1h)
  --timeout D             Per-attempt timeout (default 300s)
  --priority N            -100..100, higher first (default 0; negative: --priority=-5)
  --mode M                live (default) | dry_run: record each occurrence as
                          would_run in the run ledger, never run it (--cron)
  --idempotency-key K     Repeating the call with K answers the same job
  --file PATH             The job as JSON (API.md's POST /v1/jobs body; "-" reads stdin)
  --data JSON             The job as inline JSON

${GLOBAL_HELP}`;

export const UPDATE_HELP = `Usage: duetime jobs update <jobId> [--version N] [changes]
       duetime jobs update <jobId> [--version N] --file patch.json | --data '<json>'

Changes only what is given; a new schedule replaces the old one whole and
moves the next occurrence.

  --version N             Apply only if the job is still at version N (sent as
                          If-Match; otherwise 409 VERSION_CONFLICT). Safe to retry.
  --name NAME             New name
  --queue POOL | --target-url URL [--method M] [--header "K: V"]...
                          New target
  --delay D | --at TIME | --cron EXPR [--tz ZONE] [--jitter D] [--misfire P] [--overlap P]
                          New schedule (see "duetime jobs create --help")
  --payload JSON          New payload
  --max-attempts N        Attempts before the job is dead (1..1000)
  --backoff D             First retry delay
  --max-backoff D         Longest retry delay
  --timeout D             Per-attempt timeout
  --priority N            -100..100 (negative: --priority=-5)
  --mode M                live | dry_run (flips a dry run from its next occurrence)
  --file PATH             The changes as JSON (API.md's PATCH /v1/jobs/{jobId} body; "-" reads stdin)
  --data JSON             The changes as inline JSON

${GLOBAL_HELP}`;

const idHelp = (verb: string, what: string) => `Usage: duetime jobs ${verb} <jobId> [options]

${what}

${GLOBAL_HELP}`;

export const JOB_ID_HELP: Record<"get" | "cancel" | "pause" | "resume" | "trigger", string> = {
  get: idHelp("get", "Shows a job with its effective settings."),
  cancel: idHelp("cancel", "Cancels a job: no new execution; a running attempt sees cancelRequested."),
  pause: idHelp("pause", "Pauses a job: no new execution until it is resumed."),
  resume: idHelp("resume", "Resumes a paused job (a one-off whose time passed runs at once)."),
  trigger: idHelp("trigger", "Creates a new execution of the job, due now."),
};

export const LIST_HELP = `Usage: duetime jobs list [--state STATE] [--name NAME] [--pool POOL] [--kind once|cron] [--limit N] [--cursor C]

  --state STATE     ${JOB_STATES.join(" | ")}
  --name NAME       Only jobs with this name
  --pool POOL       Only jobs whose target is this worker pool
  --kind KIND       once | cron
  --limit N         Page size, 1..500 (default 50)
  --cursor C        The nextCursor of the previous page

${GLOBAL_HELP}`;

const CREATE_OPTIONS = {
  ...GLOBAL_OPTIONS,
  name: { type: "string" },
  queue: { type: "string" },
  "target-url": { type: "string" },
  method: { type: "string" },
  header: { type: "string", multiple: true },
  delay: { type: "string" },
  at: { type: "string" },
  cron: { type: "string" },
  tz: { type: "string" },
  jitter: { type: "string" },
  misfire: { type: "string" },
  overlap: { type: "string" },
  payload: { type: "string" },
  "max-attempts": { type: "string" },
  backoff: { type: "string" },
  "max-backoff": { type: "string" },
  timeout: { type: "string" },
  priority: { type: "string" },
  mode: { type: "string" },
  "idempotency-key": { type: "string" },
  file: { type: "string" },
  data: { type: "string" },
} as const;

const SPEC_FLAGS = Object.keys(CREATE_OPTIONS).filter((k) => !(k in GLOBAL_OPTIONS) && !["idempotency-key", "file", "data"].includes(k));

export function parseJobsCreate(args: string[], env: Env): JobsCommand {
  const usage = CREATE_HELP;
  const { values: v, positionals } = strictParse(args, CREATE_OPTIONS, usage);
  expectPositionals(positionals, [], usage);
  const global = globalOptions(v, env, usage);
  const idempotencyKey = v["idempotency-key"];
  if (idempotencyKey !== undefined && (idempotencyKey === "" || idempotencyKey.length > 255)) {
    throw new UsageError("--idempotency-key: must be 1..255 characters", usage);
  }
  const base = { command: "jobs create" as const, global, ...(idempotencyKey !== undefined ? { idempotencyKey } : {}) };

  if (v.file !== undefined || v.data !== undefined) {
    if (v.file !== undefined && v.data !== undefined) throw new UsageError("give either --file or --data, not both", usage);
    const mixed = SPEC_FLAGS.filter((f) => v[f as keyof typeof v] !== undefined);
    if (mixed.length > 0) throw new UsageError(`--${mixed[0]} cannot be combined with ${v.file !== undefined ? "--file" : "--data"}`, usage);
    if (v.file !== undefined) return { ...base, file: v.file };
    return { ...base, spec: specFromJson("--data", v.data!, usage) };
  }

  if (v.name === undefined || v.name === "") throw new UsageError("missing --name (or give the whole job with --file or --data)", usage);
  const spec: JobSpec = { name: v.name, target: target(v, usage), schedule: schedule(v, usage), ...optionalFields(v, usage) };
  return { ...base, spec };
}

type CreateValues = ReturnType<typeof strictParse<typeof CREATE_OPTIONS>>["values"];

/** payload, retry, timeoutSeconds, priority and mode from their flags, when given. */
function optionalFields(v: CreateValues, usage: string): Pick<JobSpec, "payload" | "retry" | "timeoutSeconds" | "priority" | "mode"> {
  const fields: Pick<JobSpec, "payload" | "retry" | "timeoutSeconds" | "priority" | "mode"> = {};
  const payload = jsonOption("payload", v.payload, usage);
  if (payload !== undefined) fields.payload = payload;
  const retry = {
    maxAttempts: integerOption("max-attempts", v["max-attempts"], 1, 1000, usage),
    backoffSeconds: durationOption("backoff", v.backoff, usage),
    maxBackoffSeconds: durationOption("max-backoff", v["max-backoff"], usage),
  };
  const setRetry = Object.fromEntries(Object.entries(retry).filter(([, x]) => x !== undefined));
  if (Object.keys(setRetry).length > 0) fields.retry = setRetry;
  const timeoutSeconds = durationOption("timeout", v.timeout, usage);
  if (timeoutSeconds !== undefined) fields.timeoutSeconds = timeoutSeconds;
  const priority = integerOption("priority", v.priority, -100, 100, usage);
  if (priority !== undefined) fields.priority = priority;
  const mode = choiceOption("mode", v.mode, ["live", "dry_run"] as const, usage);
  if (mode !== undefined) fields.mode = mode;
  return fields;
}

const { "idempotency-key": _idempotencyKey, ...UPDATE_SPEC_OPTIONS } = CREATE_OPTIONS;
const UPDATE_OPTIONS = { ...UPDATE_SPEC_OPTIONS, version: { type: "string" } } as const;

export function parseJobsUpdate(args: string[], env: Env): JobsCommand {
  const usage = UPDATE_HELP;
  const { values: v, positionals } = strictParse(args, UPDATE_OPTIONS, usage);
  const [jobId] = expectPositionals(positionals, ["jobId"], usage);
  const global = globalOptions(v, env, usage);
  const version = integerOption("version", v.version, 1, Number.MAX_SAFE_INTEGER, usage);
  const base = { command: "jobs update" as const, global, jobId: jobId!, ...(version !== undefined ? { version } : {}) };

  if (v.file !== undefined || v.data !== undefined) {
    if (v.file !== undefined && v.data !== undefined) throw new UsageError("give either --file or --data, not both", usage);
    const mixed = SPEC_FLAGS.filter((f) => v[f as keyof typeof v] !== undefined);
    if (mixed.length > 0) throw new UsageError(`--${mixed[0]} cannot be combined with ${v.file !== undefined ? "--file" : "--data"}`, usage);
    if (v.file !== undefined) return { ...base, file: v.file };
    return { ...base, patch: objectFromJson<JobPatch>("--data", v.data!, "the changes", usage) };
  }

  const patch: JobPatch = {};
  if (v.name !== undefined) {
    if (v.name === "") throw new UsageError("--name: must not be empty", usage);
    patch.name = v.name;
  }
  if ((["queue", "target-url", "method", "header"] as const).some((k) => v[k] !== undefined)) patch.target = target(v, usage);
  if ((["delay", "at", "cron", "tz", "jitter", "misfire", "overlap"] as const).some((k) => v[k] !== undefined)) patch.schedule = schedule(v, usage);
  Object.assign(patch, optionalFields(v, usage));
  if (Object.keys(patch).length === 0) {
    throw new UsageError(
      "nothing to change: give at least one of --name, a target, a schedule, --payload, --max-attempts, --backoff, --max-backoff, --timeout, --priority, --mode, or --data/--file",
      usage,
    );
  }
  return { ...base, patch };
}

function target(v: CreateValues, usage: string): Target {
  if ((v.queue === undefined) === (v["target-url"] === undefined))
    throw new UsageError("give exactly one of --queue POOL and --target-url URL", usage);
  if (v.queue !== undefined) {
    if (v.method !== undefined || v.header !== undefined) throw new UsageError("--method and --header apply to --target-url only", usage);
    if (v.queue === "") throw new UsageError("--queue: the pool name must not be empty", usage);
    return { type: "queue", pool: v.queue };
  }
  const http: Target = { type: "http", url: httpUrlOption("target-url", v["target-url"]!, usage) };
  if (v.method !== undefined) http.method = v.method.toUpperCase();
  if (v.header !== undefined) {
    http.headers = {};
    for (const h of v.header) {
      const at = h.indexOf(":");
      const name = at < 0 ? "" : h.slice(0, at).trim();
      if (name === "") throw new UsageError(`--header: expected "Name: value", got ${JSON.stringify(h)}`, usage);
      http.headers[name] = h.slice(at + 1).trim();
    }
  }
  return http;
}

function schedule(v: CreateValues, usage: string): ScheduleSpec {
  const given = (["delay", "at", "cron"] as const).filter((k) => v[k] !== undefined);
  if (given.length > 1) throw new UsageError(`give only one of --delay, --at and --cron (got --${given.join(" and --")})`, usage);
  const cronOnly = (["tz", "jitter", "misfire", "overlap"] as const).filter((k) => v[k] !== undefined);
  if (v.cron === undefined && cronOnly.length > 0) throw new UsageError(`--${cronOnly[0]} applies to --cron only`, usage);
  if (v.at !== undefined) return { runAt: timeOption("at", v.at, usage)! };
  if (v.cron === undefined) return { delaySeconds: durationOption("delay", v.delay, usage) ?? 0 };
  if (v.cron.trim() === "") throw new UsageError("--cron: the expression must not be empty", usage);
  const cron: CronSchedule = { cron: v.cron };
  if (v.tz !== undefined) cron.tz = v.tz;
  const jitter = durationOption("jitter", v.jitter, usage);
  if (jitter !== undefined) cron.jitterSeconds = jitter;
  const misfire = choiceOption<Misfire>("misfire", v.misfire, ["run_once", "skip", "catch_up"], usage);
  if (misfire) cron.misfire = misfire;
  const overlap = choiceOption<Overlap>("overlap", v.overlap, ["allow", "forbid", "replace"], usage);
  if (overlap) cron.overlap = overlap;
  return cron;
}

/** A job given as JSON: it must be an object; the server validates the rest. */
export function specFromJson(source: string, text: string, usage: string): JobSpec {
  return objectFromJson<JobSpec>(source, text, "one job", usage);
}

function objectFromJson<T>(source: string, text: string, what: string, usage: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${source}: not valid JSON (${(err as Error).message})`, usage);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new UsageError(`${source}: expected a JSON object (${what})`, usage);
  return value as T;
}

export function parseJobsList(args: string[], env: Env): JobsCommand {
  const usage = LIST_HELP;
  const options = {
    ...GLOBAL_OPTIONS,
    state: { type: "string" },
    name: { type: "string" },
    pool: { type: "string" },
    kind: { type: "string" },
    limit: { type: "string" },
    cursor: { type: "string" },
  } as const;
  const { values: v, positionals } = strictParse(args, options, usage);
  expectPositionals(positionals, [], usage);
  const query: ListJobsQuery = {};
  const state = choiceOption<JobState>("state", v.state?.toUpperCase(), JOB_STATES, usage);
  if (state) query.state = state;
  if (v.name !== undefined) query.name = v.name;
  if (v.pool !== undefined) query.pool = v.pool;
  const kind = choiceOption<"once" | "cron">("kind", v.kind?.toLowerCase(), ["once", "cron"], usage);
  if (kind) query.kind = kind;
  const limit = integerOption("limit", v.limit, 1, 500, usage);
  if (limit !== undefined) query.limit = limit;
  if (v.cursor !== undefined) query.cursor = v.cursor;
  return { command: "jobs list", global: globalOptions(v, env, usage), query };
}

export function parseJobById(verb: keyof typeof JOB_ID_HELP, args: string[], env: Env): JobsCommand {
  const usage = JOB_ID_HELP[verb];
  const { values, positionals } = strictParse(args, GLOBAL_OPTIONS, usage);
  const [jobId] = expectPositionals(positionals, ["jobId"], usage);
  return { command: `jobs ${verb}`, global: globalOptions(values, env, usage), jobId: jobId! };
}

// ---- running

export async function runJobs(cmd: JobsCommand, client: DuetimeClient, out: Printer, readFile: (path: string) => Promise<string>): Promise<void> {
  switch (cmd.command) {
    case "jobs create": {
      const spec = cmd.spec ?? specFromJson(`--file ${cmd.file}`, await readJobFile(cmd.file!, readFile, CREATE_HELP), CREATE_HELP);
      const job = await client.createJob(spec, cmd.idempotencyKey !== undefined ? { idempotencyKey: cmd.idempotencyKey } : {});
      out.either(job, () =>
        out.line(
          job.created === false
            ? `job ${job.jobId} already exists (same idempotency key); next run ${utc(job.nextRunAt)}`
            : `created job ${job.jobId}; next run ${utc(job.nextRunAt)}`,
        ),
      );
      return;
    }
    case "jobs get": {
      const job = await client.getJob(cmd.jobId);
      out.either(job, () => printJob(out, job));
      return;
    }
    case "jobs update": {
      const patch =
        cmd.patch ?? objectFromJson<JobPatch>(`--file ${cmd.file}`, await readJobFile(cmd.file!, readFile, UPDATE_HELP), "the changes", UPDATE_HELP);
      const job = await client.updateJob(cmd.jobId, patch, cmd.version !== undefined ? { ifMatch: cmd.version } : {});
      out.either(job, () => {
        const local = nextRunLocal(job);
        out.line(`updated job ${job.jobId} (version ${job.version}); next run ${utc(job.nextRunAt)}${local ? ` (${local})` : ""}`);
      });
      return;
    }
    case "jobs list": {
      const page = await client.listJobs(cmd.query);
      out.either(page, () => {
        if (page.items.length === 0) out.line("no jobs");
        else
          out.table(
            ["JOB ID", "NAME", "STATE", "NEXT RUN (UTC)", "SCHEDULE", "TARGET"],
            page.items.map((j) => [j.jobId, oneLine(j.name, 40), j.state, utc(j.nextRunAt), describeSchedule(j.schedule), describeTarget(j.target)]),
          );
        if (page.nextCursor) out.line(`next page: --cursor ${page.nextCursor}`);
      });
      return;
    }
    case "jobs cancel": {
      await client.cancelJob(cmd.jobId);
      if (!out.jsonMode) out.line(`cancelled job ${cmd.jobId}`);
      return;
    }
    case "jobs pause":
    case "jobs resume": {
      const job = cmd.command === "jobs pause" ? await client.pauseJob(cmd.jobId) : await client.resumeJob(cmd.jobId);
      out.either(job, () => out.line(`job ${job.jobId} is ${job.state}; next run ${utc(job.nextRunAt)}`));
      return;
    }
    case "jobs trigger": {
      const execution = await client.triggerJob(cmd.jobId);
      out.either(execution, () => out.line(describeExecution("triggered", execution)));
      return;
    }
  }
}

async function readJobFile(path: string, readFile: (path: string) => Promise<string>, usage: string): Promise<string> {
  try {
    return await readFile(path);
  } catch (err) {
    throw new UsageError(`--file: cannot read ${JSON.stringify(path)}: ${(err as Error).message}`, usage);
  }
}

/**
 * A cron job's next run as wall time in its zone: the server's nextRunAtLocal,
 * or (from a server that does not send it) computed here from nextRunAt.
 * undefined for one-off jobs.
 */
export function nextRunLocal(job: Job): string | undefined {
  if (!("cron" in job.schedule)) return undefined;
  if (typeof job.nextRunAtLocal === "string") return job.nextRunAtLocal;
  if (job.nextRunAt === null) return undefined;
  const tz = job.schedule.tz ?? "UTC";
  return `${zoned(job.nextRunAt, tz)}[${tz}]`;
}

export function describeExecution(verb: string, e: ExecutionItem): string {
  return `${verb} execution ${e.executionId} of job ${e.jobId}: attempt ${e.attempt}, ${e.state}, scheduled for ${utc(e.scheduledFor)}`;
}

function printJob(out: Printer, job: Job): void {
  out.fields([
    ["jobId", job.jobId],
    ["name", job.name],
    ["state", job.state],
    ["target", describeTarget(job.target)],
    ["schedule", describeSchedule(job.schedule)],
    ["nextRunAt", utc(job.nextRunAt)],
    ...("cron" in job.schedule ? [["nextRunAtLocal", nextRunLocal(job) ?? "-"] as [string, string]] : []),
    ["retry", `${job.retry.maxAttempts} attempts, backoff ${job.retry.backoffSeconds}s up to ${job.retry.maxBackoffSeconds}s`],
    ["timeout", `${job.timeoutSeconds}s`],
    ["priority", String(job.priority)],
    ["mode", job.mode],
    ["payload", job.payload === undefined ? "-" : oneLine(JSON.stringify(job.payload), 100)],
    ["version", String(job.version)],
    ["createdAt", utc(job.createdAt)],
    ["updatedAt", utc(job.updatedAt)],
  ]);
}

function describeTarget(target: Target): string {
  switch (target.type) {
    case "queue":
      return `queue ${target.pool}`;
    case "http":
      return `http ${target.method ?? "POST"} ${target.url}`;
    case "nats":
      return `nats ${target.subject}`;
    case "amqp":
      return `amqp ${target.exchange || "(default)"} ${target.routingKey}`;
  }
}

function describeSchedule(schedule: Job["schedule"]): string {
  if ("cron" in schedule) return `cron "${schedule.cron}" ${schedule.tz ?? "UTC"}`;
  if ("runAt" in schedule) return `at ${utc(schedule.runAt)}`;
  return JSON.stringify(schedule);
}
