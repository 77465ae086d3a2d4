// `duetime import crontab FILE` and `duetime import k8s-cronjob FILE`: a
// crontab or CronJob manifests become duetime jobs, in dry run by default, so
// they run beside the old system until `duetime compare` shows they fire
// alike. The planning is import/*.ts (pure); this is the arguments, the
// plan's display and its creation through the batch API: all or nothing by
// default (--atomic), and idempotent, so importing a file twice adds nothing.

import type { DuetimeClient } from "@duetime/sdk";
import type { BatchCreateResult, JobMode, Target } from "@duetime/sdk/contract";
import { LIMITS } from "../core/schemas.js";
import { isValidTimeZone } from "../core/cron/index.js";
import {
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  UsageError,
  choiceOption,
  durationOption,
  expectPositionals,
  globalOptions,
  httpUrlOption,
  strictParse,
  type Env,
  type GlobalOptions,
} from "./args.js";
import type { ImportPlan, PlannedJob } from "./import/plan.js";
import type { Printer } from "./output.js";

/** The exit code when lines or documents could not be mapped, or jobs were refused (1 and 2 are errors and usage, as everywhere). */
export const UNMAPPED_EXIT = 3;

export interface ImportCommand {
  command: "import crontab" | "import k8s-cronjob";
  global: GlobalOptions;
  file: string;
  target: Target;
  mode: JobMode;
  atomic: boolean;
  dryRun: boolean;
  timeoutSeconds?: number;
  /** crontab: the user column of /etc/crontab and /etc/cron.d. */
  system?: boolean;
  /** crontab: the zone its schedules are read in without CRON_TZ= (the host's). */
  tz?: string;
}

const COMMON_HELP = `  --pool NAME | --target-url URL
                     Where every imported job goes: a worker pool (the
                     payload carries the command or containers), or an
                     HTTP endpoint that runs them
  --mode M           dry_run (default): record each occurrence as would_run,
                     run nothing; live: run them
  --dry-run          Print the plan and what cannot be mapped; create nothing
  --no-atomic        Create what can be mapped even when some cannot (default:
                     all or nothing)
  --timeout D        Per-attempt timeout of the jobs (default: the server's,
                     300s; cron itself has none)

Importing the same file again creates nothing new (each job carries an
idempotency key made from its content). Flip a job with
"duetime jobs update ID --mode live" once "duetime compare" agrees.

Exit codes: 0 imported (or planned) in full, 3 something could not be mapped
or was refused (with --atomic nothing was created), 1 API or network error,
2 usage error.

${GLOBAL_HELP}`;

export const IMPORT_CRONTAB_HELP = `Usage: duetime import crontab FILE (--pool NAME | --target-url URL) [options]

Creates a job for each line of a crontab: its schedule, zone (CRON_TZ=) and
command (with its % stdin, MAILTO= and environment) as the payload. @reboot
and lines that cannot be read are listed with the reason.

  --system           The file has a user column (/etc/crontab, /etc/cron.d/*)
  --tz ZONE          The zone cron ran in, for lines before any CRON_TZ=
                     (default UTC)
${COMMON_HELP}`;

export const IMPORT_K8S_HELP = `Usage: duetime import k8s-cronjob FILE (--pool NAME | --target-url URL) [options]

Creates a job for each CronJob in FILE (YAML: several documents, or a List):
schedule, timeZone, concurrencyPolicy (overlap), startingDeadlineSeconds
(misfire threshold), suspend (paused), backoffLimit (attempts) and the
containers as the payload. Other kinds and CronJobs that cannot be mapped are
listed with the reason.

${COMMON_HELP}`;

export const IMPORT_HELP = `Usage: duetime import crontab|k8s-cronjob FILE [options]

Moves jobs in from cron or Kubernetes, in dry run beside the old system.
Run "duetime import crontab --help" or "duetime import k8s-cronjob --help".`;

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  pool: { type: "string" },
  "target-url": { type: "string" },
  mode: { type: "string" },
  "dry-run": { type: "boolean" },
  atomic: { type: "boolean" },
  "no-atomic": { type: "boolean" },
  timeout: { type: "string" },
} as const;

const CRONTAB_OPTIONS = { ...OPTIONS, system: { type: "boolean" }, tz: { type: "string" } } as const;

export function parseImportCrontab(args: string[], env: Env): ImportCommand {
  const usage = IMPORT_CRONTAB_HELP;
  const { values, positionals } = strictParse(args, CRONTAB_OPTIONS, usage);
  const tz = values.tz;
  if (tz !== undefined && !isValidTimeZone(tz))
    throw new UsageError(`--tz: ${JSON.stringify(tz)} is not a known IANA time zone (e.g. "Europe/London")`, usage);
  return {
    ...common("import crontab", values, positionals, env, usage),
    ...(values.system ? { system: true } : {}),
    ...(tz !== undefined ? { tz } : {}),
  };
}

export function parseImportK8s(args: string[], env: Env): ImportCommand {
  const usage = IMPORT_K8S_HELP;
  const { values, positionals } = strictParse(args, OPTIONS, usage);
  return common("import k8s-cronjob", values, positionals, env, usage);
}

type Values = ReturnType<typeof strictParse<typeof OPTIONS>>["values"];

function common(command: ImportCommand["command"], values: Values, positionals: string[], env: Env, usage: string): ImportCommand {
  const [file] = expectPositionals(positionals, ["FILE"], usage);
  if (values.atomic && values["no-atomic"]) throw new UsageError("give --atomic or --no-atomic, not both", usage);
  const timeoutSeconds = durationOption("timeout", values.timeout, usage);
  if (timeoutSeconds !== undefined && (timeoutSeconds < 1 || timeoutSeconds > LIMITS.timeoutSecondsMax))
    throw new UsageError(`--timeout: must be 1s to ${LIMITS.timeoutSecondsMax}s, got ${values.timeout}`, usage);
  return {
    command,
    global: globalOptions(values, env, usage),
    file: file!,
    target: targetOf(values, usage),
    mode: choiceOption("mode", values.mode, ["dry_run", "live"] as const, usage) ?? "dry_run",
    atomic: !values["no-atomic"],
    dryRun: values["dry-run"] === true,
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
  };
}

function targetOf(values: Values, usage: string): Target {
  const pool = values.pool;
  const url = values["target-url"];
  if ((pool === undefined) === (url === undefined)) throw new UsageError("give exactly one of --pool NAME and --target-url URL", usage);
  if (pool !== undefined) {
    if (pool === "") throw new UsageError("--pool: the pool name must not be empty", usage);
    return { type: "queue", pool };
  }
  return { type: "http", url: httpUrlOption("target-url", url!, usage) };
}

/** Plans the file, shows the plan, and creates it unless --dry-run; answers the exit code. */
export async function runImport(
  cmd: ImportCommand,
  client: DuetimeClient,
  out: Printer,
  readFile: (path: string) => Promise<string>,
): Promise<number> {
  const plan = await planOf(cmd, await readFile(cmd.file));
  if (cmd.timeoutSeconds !== undefined) for (const p of plan.jobs) p.job.timeoutSeconds = cmd.timeoutSeconds;
  const unmapped = plan.refused.length > 0;
  if (cmd.dryRun || (unmapped && cmd.atomic)) {
    out.either({ jobs: plan.jobs, refused: plan.refused, created: [] }, () => showPlan(out, plan, cmd));
    if (unmapped && !cmd.dryRun) out.warn(`nothing imported: ${plan.refused.length} cannot be mapped (--no-atomic imports the rest)`);
    return unmapped ? UNMAPPED_EXIT : 0;
  }
  if (cmd.atomic && plan.jobs.length > LIMITS.batchMax)
    throw new UsageError(
      `${plan.jobs.length} jobs are more than one atomic batch (${LIMITS.batchMax}): split the file, or pass --no-atomic`,
      IMPORT_HELP,
    );
  const results: BatchCreateResult[] = [];
  for (let i = 0; i < plan.jobs.length; i += LIMITS.batchMax) {
    const batch = plan.jobs.slice(i, i + LIMITS.batchMax).map((p) => p.job);
    results.push(...(await client.createJobs(batch, cmd.atomic ? { atomic: true } : {})));
  }
  const created = await Promise.all(plan.jobs.map((p, i) => outcomeOf(client, p, results[i]!)));
  out.either({ jobs: plan.jobs, refused: plan.refused, created }, () => {
    showPlan(out, plan, cmd, created);
    const n = created.filter((c) => c.jobId && c.created).length;
    const failed = created.filter((c) => c.error).length;
    out.line(`${n} created, ${created.length - n - failed} already there, ${failed} refused, ${plan.refused.length} not mapped (mode ${cmd.mode})`);
  });
  return unmapped || created.some((c) => c.error) ? UNMAPPED_EXIT : 0;
}

interface Outcome {
  source: string;
  jobId?: string;
  created?: boolean;
  paused?: boolean;
  error?: string;
}

/** One planned job's answer; a suspended CronJob's job is paused once created. */
async function outcomeOf(client: DuetimeClient, planned: PlannedJob, result: BatchCreateResult): Promise<Outcome> {
  if ("error" in result) return { source: planned.source, error: `${result.error.code}: ${result.error.message}` };
  if (planned.paused) await client.pauseJob(result.jobId);
  return { source: planned.source, jobId: result.jobId, created: result.created, ...(planned.paused ? { paused: true } : {}) };
}

async function planOf(cmd: ImportCommand, text: string): Promise<ImportPlan> {
  const options = { file: cmd.file, target: cmd.target, mode: cmd.mode };
  if (cmd.command === "import crontab") {
    const { planCrontab } = await import("./import/crontab.js");
    return planCrontab(text, { ...options, ...(cmd.system ? { system: true } : {}), ...(cmd.tz ? { defaultTz: cmd.tz } : {}) });
  }
  // Loaded only here: the YAML parser is for this command alone.
  const { planK8sCronJobs } = await import("./import/k8s.js");
  return planK8sCronJobs(text, options);
}

function showPlan(out: Printer, plan: ImportPlan, cmd: ImportCommand, created?: Outcome[]): void {
  if (plan.jobs.length > 0) {
    out.table(
      ["SOURCE", "NAME", "SCHEDULE", "ZONE", created ? "JOB" : "MODE", "NOTES"],
      plan.jobs.map((p, i) => {
        const schedule = p.job.schedule as { cron?: string; tz?: string };
        const outcome = created?.[i];
        const job = outcome ? (outcome.error ?? `${outcome.jobId}${outcome.created ? "" : " (existed)"}`) : (p.job.mode ?? cmd.mode);
        return [
          p.source,
          p.job.name,
          schedule.cron ?? "-",
          schedule.tz ?? "UTC",
          job,
          [...p.warnings, ...(p.paused ? ["paused (suspend: true)"] : [])].join("; ") || "-",
        ];
      }),
    );
  }
  if (plan.refused.length > 0) {
    out.line();
    out.line(`cannot be mapped (${plan.refused.length}):`);
    out.table(
      ["SOURCE", "REASON"],
      plan.refused.map((r) => [r.source, r.reason]),
    );
  }
  if (!created)
    out.line(`${plan.jobs.length} to import${cmd.dryRun ? " (dry run of the import: nothing created)" : ""}, ${plan.refused.length} not mapped`);
}
