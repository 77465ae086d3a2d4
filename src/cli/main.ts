// The duetime command. parseCommand() turns argv into a Command (pure: tests
// check parsing without a server); execute() runs it. Exit codes: 0 success,
// 1 an API or network error, 2 a usage error.

import { readFile } from "node:fs/promises";
import { text } from "node:stream/consumers";
import { DuetimeClient, DuetimeApiError } from "@duetime/sdk";
import { DuetimeError } from "../core/errors.js";
import { ARCHIVE_HELP, ARCHIVE_READ_HELP, parseArchiveRead, runArchive, type ArchiveCommand } from "./archive.js";
import { GLOBAL_HELP, UsageError, type Env } from "./args.js";
import { COMPARE_HELP, parseCompare, runCompare, type CompareCommand } from "./compare.js";
import { IMPORT_CRONTAB_HELP, IMPORT_HELP, IMPORT_K8S_HELP, parseImportCrontab, parseImportK8s, runImport, type ImportCommand } from "./import.js";
import {
  CREATE_HELP,
  JOBS_HELP,
  JOB_ID_HELP,
  LIST_HELP,
  UPDATE_HELP,
  parseJobById,
  parseJobsCreate,
  parseJobsList,
  parseJobsUpdate,
  runJobs,
  type JobsCommand,
} from "./jobs.js";
import {
  KEYS_CREATE_HELP,
  KEYS_HELP,
  KEYS_LIST_HELP,
  KEYS_REVOKE_HELP,
  parseKeysCreate,
  parseKeysList,
  parseKeysRevoke,
  runKeys,
  type KeysCommand,
} from "./keys.js";
import { BACKFILL_HELP, OCCURRENCES_HELP, parseBackfill, parseOccurrences, runLedger, type LedgerCommand } from "./ledger.js";
import {
  CLUSTER_HELP,
  CRON_HELP,
  DLQ_HELP,
  DLQ_LIST_HELP,
  DLQ_REPLAY_HELP,
  DLQ_REPLAYS_HELP,
  EXECUTIONS_HELP,
  parseCron,
  parseCluster,
  parseDlqList,
  parseDlqReplay,
  parseDlqReplays,
  parseExecutions,
  runCron,
  runOps,
  type OpsCommand,
} from "./ops.js";
import { MIGRATE_HELP, parseMigrate, runMigrate, type MigrateCommand } from "./migrate.js";
import { Printer, type Io } from "./output.js";
import { SECRETS_HELP, SECRETS_SHOW_HELP, parseSecretsShow, runSecrets, type SecretsCommand } from "./secrets.js";
import { SERVE_HELP, parseServe, runServe, type ServeCommand, type ServeDeps } from "./serve.js";
import {
  TENANTS_HELP,
  TENANTS_SET_QUOTA_HELP,
  TENANTS_SHOW_HELP,
  parseTenantsSetQuota,
  parseTenantsShow,
  runTenants,
  type TenantsCommand,
} from "./tenants.js";
import { closest } from "@duetime/sdk/contract";

export type Command =
  | { command: "help"; text: string }
  | ServeCommand
  | MigrateCommand
  | JobsCommand
  | LedgerCommand
  | OpsCommand
  | KeysCommand
  | TenantsCommand
  | SecretsCommand
  | ArchiveCommand
  | CompareCommand
  | ImportCommand;

export const TOP_HELP = `Usage: duetime <command> [options]

duetime: a durable scheduler for delayed and recurring jobs.

Commands:
  serve                                  Run the server
  migrate                                Create or upgrade the store's tables
  jobs create|get|list|update|cancel|pause|resume|trigger
                                         Manage jobs
  jobs backfill|occurrences <jobId> --from T --to T
                                         Backfill a past window; what became
                                         of each fire time (the run ledger)
  import crontab|k8s-cronjob FILE        Move jobs in from cron or Kubernetes,
                                         in dry run beside the old system
  compare --job ID --log FILE            An old scheduler's runs beside a job's
                                         run ledger (before flipping a dry run)
  executions <jobId>                     List a job's executions
  dlq list|replay|replays                Dead letters, replayed one by one or in bulk at a rate
  cron "<expr>" [--tz Z] [--from T] [--count N]
                                         Preview a cron expression (computed
                                         here: no server unless --url)
  cluster                                Nodes, their shards and heartbeats
                                         (role admin)
  keys create|list|revoke                API keys kept hashed in the store
                                         (role admin)
  tenants show|set-quota <tenant>        A tenant's limits: its weight in
                                         shared pools (role admin)
  secrets show                           The callback signing secret(s) of
                                         your tenant (role admin)
  archive read --dir DIR [filters]       Search what retention archived
                                         (local files, no server)

Run "duetime <command> --help" for a command's options.

${GLOBAL_HELP}

Exit codes: 0 success, 1 API or network error, 2 usage error (compare:
3 when the runs disagree; import: 3 when something could not be mapped).`;

interface Leaf {
  help: string;
  parse(args: string[], env: Env): Command;
}

const JOBS: Record<string, Leaf> = {
  create: { help: CREATE_HELP, parse: parseJobsCreate },
  list: { help: LIST_HELP, parse: parseJobsList },
  update: { help: UPDATE_HELP, parse: parseJobsUpdate },
  backfill: { help: BACKFILL_HELP, parse: parseBackfill },
  occurrences: { help: OCCURRENCES_HELP, parse: parseOccurrences },
  ...Object.fromEntries(
    (Object.keys(JOB_ID_HELP) as (keyof typeof JOB_ID_HELP)[]).map((verb) => [
      verb,
      { help: JOB_ID_HELP[verb], parse: (args: string[], env: Env) => parseJobById(verb, args, env) },
    ]),
  ),
};

const DLQ: Record<string, Leaf> = {
  list: { help: DLQ_LIST_HELP, parse: parseDlqList },
  replay: { help: DLQ_REPLAY_HELP, parse: parseDlqReplay },
  replays: { help: DLQ_REPLAYS_HELP, parse: parseDlqReplays },
};

const KEYS: Record<string, Leaf> = {
  create: { help: KEYS_CREATE_HELP, parse: parseKeysCreate },
  list: { help: KEYS_LIST_HELP, parse: parseKeysList },
  revoke: { help: KEYS_REVOKE_HELP, parse: parseKeysRevoke },
};

const TENANTS: Record<string, Leaf> = {
  show: { help: TENANTS_SHOW_HELP, parse: parseTenantsShow },
  "set-quota": { help: TENANTS_SET_QUOTA_HELP, parse: parseTenantsSetQuota },
};

const SECRETS: Record<string, Leaf> = {
  show: { help: SECRETS_SHOW_HELP, parse: parseSecretsShow },
};

const IMPORT: Record<string, Leaf> = {
  crontab: { help: IMPORT_CRONTAB_HELP, parse: parseImportCrontab },
  "k8s-cronjob": { help: IMPORT_K8S_HELP, parse: parseImportK8s },
};

const ARCHIVE: Record<string, Leaf> = {
  read: { help: ARCHIVE_READ_HELP, parse: parseArchiveRead },
};

/** Top-level commands: a leaf, or a group of leaves with its own help. */
const COMMANDS: Record<string, Leaf | { help: string; group: Record<string, Leaf> }> = {
  serve: { help: SERVE_HELP, parse: parseServe },
  migrate: { help: MIGRATE_HELP, parse: parseMigrate },
  jobs: { help: JOBS_HELP, group: JOBS },
  executions: { help: EXECUTIONS_HELP, parse: parseExecutions },
  compare: { help: COMPARE_HELP, parse: parseCompare },
  import: { help: IMPORT_HELP, group: IMPORT },
  dlq: { help: DLQ_HELP, group: DLQ },
  cron: { help: CRON_HELP, parse: parseCron },
  cluster: { help: CLUSTER_HELP, parse: parseCluster },
  keys: { help: KEYS_HELP, group: KEYS },
  tenants: { help: TENANTS_HELP, group: TENANTS },
  secrets: { help: SECRETS_HELP, group: SECRETS },
  archive: { help: ARCHIVE_HELP, group: ARCHIVE },
};

/** Every command and subcommand, as argv words ([["serve"], ["jobs"], ["jobs", "create"], …]): each answers --help. */
export function commandPaths(): string[][] {
  return Object.entries(COMMANDS).flatMap(([name, entry]) =>
    "group" in entry ? [[name], ...Object.keys(entry.group).map((sub) => [name, sub])] : [[name]],
  );
}

/** Global flags that take a value, so that `duetime --url U jobs list` finds the command after U. */
const VALUE_FLAGS = new Set(["--url", "--token"]);

const wantsHelp = (args: string[]): boolean => args.some((a) => a === "--help" || a === "-h");

/** argv (without node and the script) → Command; throws UsageError. */
export function parseCommand(argv: string[], env: Env): Command {
  // flags before the command word are kept and handed to the command's parser
  const leading: string[] = [];
  let i = 0;
  while (i < argv.length && argv[i]!.startsWith("-")) {
    const flag = argv[i]!;
    leading.push(flag);
    if (VALUE_FLAGS.has(flag) && i + 1 < argv.length) leading.push(argv[++i]!);
    i++;
  }
  const name = argv[i];
  if (name === undefined) {
    if (wantsHelp(leading)) return { command: "help", text: TOP_HELP };
    throw new UsageError(leading.length > 0 ? `expected a command after ${leading[0]}` : "missing command", TOP_HELP);
  }
  const entry = COMMANDS[name];
  if (!entry) throw new UsageError(`unknown command ${JSON.stringify(name)}${suggest(name, Object.keys(COMMANDS))}`, TOP_HELP);
  let rest = [...leading, ...argv.slice(i + 1)];
  let leaf: Leaf;
  if ("group" in entry) {
    const sub = argv[i + 1];
    if (sub === undefined || sub.startsWith("-")) {
      if (wantsHelp(rest)) return { command: "help", text: entry.help };
      throw new UsageError(`missing ${name} command`, entry.help);
    }
    const found = entry.group[sub];
    if (!found) throw new UsageError(`unknown command "${name} ${sub}"${suggest(sub, Object.keys(entry.group))}`, entry.help);
    leaf = found;
    rest = [...leading, ...argv.slice(i + 2)];
  } else {
    leaf = entry;
  }
  if (wantsHelp(rest)) return { command: "help", text: leaf.help };
  return leaf.parse(rest, env);
}

function suggest(word: string, candidates: string[]): string {
  const guess = closest(word, candidates);
  return guess ? ` (did you mean "${guess}"?)` : "";
}

export interface MainDeps {
  serve?: ServeDeps;
}

/** Runs a parsed command; returns the exit code. */
export async function execute(cmd: Command, io: Io, deps: MainDeps = {}): Promise<number> {
  if (cmd.command === "help") {
    io.stdout(`${cmd.text}\n`);
    return 0;
  }
  if (cmd.command === "serve") return runServe(cmd, io, deps.serve);
  if (cmd.command === "migrate") {
    await runMigrate(cmd, io); // the store itself: no client; main() reports a failure (exit 1)
    return 0;
  }
  if (cmd.command === "archive read") {
    await runArchive(cmd, io); // local files: no client; main() reports a failure (exit 1)
    return 0;
  }
  if (cmd.command === "cron" && !cmd.server) {
    await runCron(cmd, new Printer(io, cmd.global.json)); // pure: computed here, no client; main() reports a failure
    return 0;
  }
  const client = new DuetimeClient({ url: cmd.global.url, ...(cmd.global.token ? { token: cmd.global.token } : {}) });
  const out = new Printer(io, cmd.global.json);
  try {
    if (cmd.command === "compare") return await runCompare(cmd, client, out, io.readFile);
    if (cmd.command === "import crontab" || cmd.command === "import k8s-cronjob") return await runImport(cmd, client, out, io.readFile);
    if (cmd.command === "jobs backfill" || cmd.command === "jobs occurrences") await runLedger(cmd, client, out);
    else if (cmd.command.startsWith("jobs ")) await runJobs(cmd as JobsCommand, client, out, io.readFile);
    else if (cmd.command.startsWith("keys ")) await runKeys(cmd as KeysCommand, client, out);
    else if (cmd.command.startsWith("tenants ")) await runTenants(cmd as TenantsCommand, client, out);
    else if (cmd.command === "secrets show") await runSecrets(cmd, client, out);
    else await runOps(cmd as OpsCommand, client, out);
    return 0;
  } catch (err) {
    return reportError(err, io);
  } finally {
    await client.close();
  }
}

/** Prints an error the way every command does; returns its exit code. */
export function reportError(err: unknown, io: Io): number {
  if (err instanceof UsageError) {
    io.stderr(`error: ${err.message}\n\n${err.usage}\n`);
    return 2;
  }
  // The server's errors, and the engine's own when a command computes offline what the server would (duetime cron): printed alike.
  if (err instanceof DuetimeApiError || err instanceof DuetimeError) {
    io.stderr(`error: ${err.code}: ${err.message}\n`);
    if (typeof err.details?.field === "string") io.stderr(`  field: ${err.details.field}\n`);
    if (err.retryAfterSeconds !== undefined) io.stderr(`  retry after: ${err.retryAfterSeconds}s\n`);
    return 1;
  }
  io.stderr(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  return 1;
}

export function processIo(): Io {
  return {
    stdout: (t) => void process.stdout.write(t),
    stderr: (t) => void process.stderr.write(t),
    env: process.env,
    readFile: (path) => (path === "-" ? text(process.stdin) : readFile(path, "utf8")),
  };
}

/** The whole command: parse, execute, report. Never throws. */
export async function main(argv: string[], io: Io = processIo(), deps: MainDeps = {}): Promise<number> {
  let cmd: Command;
  try {
    cmd = parseCommand(argv, io.env);
  } catch (err) {
    return reportError(err, io);
  }
  try {
    return await execute(cmd, io, deps);
  } catch (err) {
    return reportError(err, io);
  }
}
