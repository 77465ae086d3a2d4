// `duetime compare --job ID --log FILE`: the old scheduler's actual runs
// beside the job's run ledger (its would_run instants in dry run, its
// dispatched ones once live), so an operator sees before flipping that the
// new schedule fires when the old one did. The reading, matching and
// rendering are compare-core.ts; this is the arguments and the I/O.

import { DuetimeApiError, type DuetimeClient } from "@duetime/sdk";
import type { Job, OccurrenceItem } from "@duetime/sdk/contract";
import { isValidTimeZone } from "../core/cron/index.js";
import { parseRfc3339 } from "../core/time.js";
import {
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  UsageError,
  durationOption,
  expectPositionals,
  globalOptions,
  integerOption,
  strictParse,
  timeOption,
  type Env,
  type GlobalOptions,
} from "./args.js";
import { compareRuns, comparisonJson, parseRunLog, renderComparison } from "./compare-core.js";
import type { Printer } from "./output.js";

/** The exit code when the two disagree beyond the tolerance (1 and 2 are errors and usage, as everywhere). */
export const DISAGREE_EXIT = 3;

export interface CompareCommand {
  command: "compare";
  global: GlobalOptions;
  jobId: string;
  log: string;
  toleranceMs: number;
  from?: string;
  to?: string;
  logTz?: string;
  logYear?: number;
  match?: string;
}

export const COMPARE_HELP = `Usage: duetime compare --job ID --log FILE [options]

Lines up the runs an old scheduler made (FILE) with the job's run ledger: its
would_run instants while it is in dry run, its dispatched ones once live.
Prints the runs that match, are late or early, are missing from the log, or
are extra in it, and the offset distribution. Run it before flipping a dry-run
job to live: it is how you see that the new schedule fires when the old one
did, daylight-saving days included.

FILE holds one RFC 3339 instant per line, or cron's syslog lines
("Mar 29 01:00:01 host CRON[1234]: (root) CMD (backup.sh)"), classic or
with an RFC 3339 timestamp; "-" reads standard input.

  --job ID           The job to compare
  --log FILE         The old scheduler's runs
  --tolerance D      How far apart two runs may be and still match (default 30s)
  --from TIME        Start of the window (RFC 3339; default: the job's creation)
  --to TIME          End of the window (RFC 3339; default: now)
  --log-tz ZONE      Zone of the log's classic syslog times (default: the job's zone)
  --log-year YEAR    Year of the log's first classic syslog line (default: --from's)
  --match TEXT       Count only cron CMD lines whose command contains TEXT
                     (default: the job's payload.command, as duetime import
                     crontab sets it; --match "" counts every CMD line)

Exit codes: 0 they agree, 3 they disagree beyond --tolerance, 1 API or
network error, 2 usage error.

${GLOBAL_HELP}`;

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  job: { type: "string" },
  log: { type: "string" },
  tolerance: { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  "log-tz": { type: "string" },
  "log-year": { type: "string" },
  match: { type: "string" },
} as const;

export function parseCompare(args: string[], env: Env): CompareCommand {
  const usage = COMPARE_HELP;
  const { values, positionals } = strictParse(args, OPTIONS, usage);
  expectPositionals(positionals, [], usage);
  if (!values.job) throw new UsageError("missing --job ID", usage);
  if (!values.log) throw new UsageError("missing --log FILE", usage);
  const from = timeOption("from", values.from, usage);
  const to = timeOption("to", values.to, usage);
  if (from !== undefined && to !== undefined && Date.parse(from) >= Date.parse(to))
    throw new UsageError(`--to: must be after --from (${from}), got ${to}`, usage);
  const logTz = values["log-tz"];
  if (logTz !== undefined && !isValidTimeZone(logTz))
    throw new UsageError(`--log-tz: ${JSON.stringify(logTz)} is not a known IANA time zone (e.g. "Europe/London")`, usage);
  const logYear = integerOption("log-year", values["log-year"], 1970, 9999, usage);
  const cmd: CompareCommand = {
    command: "compare",
    global: globalOptions(values, env, usage),
    jobId: values.job,
    log: values.log,
    toleranceMs: (durationOption("tolerance", values.tolerance, usage) ?? 30) * 1000,
  };
  if (from !== undefined) cmd.from = from;
  if (to !== undefined) cmd.to = to;
  if (logTz !== undefined) cmd.logTz = logTz;
  if (logYear !== undefined) cmd.logYear = logYear;
  if (values.match !== undefined) cmd.match = values.match;
  return cmd;
}

/** Runs the comparison; answers the exit code (0 agree, DISAGREE_EXIT otherwise). */
export async function runCompare(
  cmd: CompareCommand,
  client: DuetimeClient,
  out: Printer,
  readFile: (path: string) => Promise<string>,
): Promise<number> {
  // The log first: a missing or unreadable file is said without asking the server.
  const text = await readFile(cmd.log);
  const job = await client.getJob(cmd.jobId);
  const tz = "tz" in job.schedule ? job.schedule.tz : "UTC";
  const from = cmd.from ?? job.createdAt;
  const to = cmd.to ?? new Date().toISOString();
  const [fromMs, toMs] = [parseRfc3339(from)!, parseRfc3339(to)!];
  const logTz = cmd.logTz ?? tz;
  const log = parseRunLog(text, {
    tz: logTz,
    year: cmd.logYear ?? Number(new Intl.DateTimeFormat("en", { timeZone: logTz, year: "numeric" }).format(fromMs)),
    ...matchOf(cmd, job),
  });
  // The window is (from, to], as the ledger's.
  const actual = log.instants.filter((t) => t > fromMs && t <= toMs);
  const expected = (await ledger(client, cmd.jobId, fromMs, toMs))
    .filter((o) => o.status === "would_run" || o.status === "dispatched")
    .map((o) => parseRfc3339(o.scheduledFor)!);
  const comparison = compareRuns(expected, actual, cmd.toleranceMs);
  const render = { tz, toleranceMs: cmd.toleranceMs, jobId: cmd.jobId };
  out.either({ ...comparisonJson(comparison, render), from, to, ignoredLines: log.ignored }, () => {
    if (log.ignored.length > 0)
      out.warn(
        `${log.ignored.length} line(s) of ${cmd.log} are not runs (--json lists them); the first: line ${log.ignored[0]!.line}, ${log.ignored[0]!.reason}`,
      );
    out.line(renderComparison(comparison, render).trimEnd());
  });
  return comparison.agree ? 0 : DISAGREE_EXIT;
}

/** --match, or the job's own command (payload.command, as the crontab import writes it). */
function matchOf(cmd: CompareCommand, job: Job): { match?: string } {
  if (cmd.match !== undefined) return cmd.match === "" ? {} : { match: cmd.match };
  const command = (job.payload as { command?: unknown } | null)?.command;
  return typeof command === "string" && command !== "" ? { match: command } : {};
}

/** The run ledger of (from, to], asked for in windows that each hold at most the ledger's 1,000 occurrences. */
async function ledger(client: DuetimeClient, jobId: string, from: number, to: number): Promise<OccurrenceItem[]> {
  const items: OccurrenceItem[] = [];
  let span = 86_400_000;
  for (let start = from; start < to; ) {
    const end = Math.min(to, start + span);
    try {
      const page = await client.listOccurrences(jobId, { from: new Date(start).toISOString(), to: new Date(end).toISOString() });
      items.push(...page.items);
      start = end;
    } catch (err) {
      // Too many occurrences in this window: halve it.
      if (err instanceof DuetimeApiError && err.code === "INVALID_ARGUMENT" && err.details?.field === "to" && span > 1000)
        span = Math.floor(span / 2);
      else throw err;
    }
  }
  return items;
}
