// `duetime archive read`: searches the files that retention wrote to
// --archive-dir (engine/archive.ts) on this machine; no server involved.

import { RETENTION_KINDS, type RetentionKind } from "../store/store.js";
import { readArchive, type ArchiveFilter, type ArchiveLine } from "../engine/archive.js";
import { UsageError, choiceOption, expectPositionals, strictParse, type Env } from "./args.js";
import { oneLine, Printer, type Io } from "./output.js";

export interface ArchiveCommand {
  command: "archive read";
  dir: string;
  filter: ArchiveFilter;
  json: boolean;
}

export const ARCHIVE_HELP = `Usage: duetime archive <command> [options]

The archive that duetime serve --archive-dir writes: every row that retention
removes (executions with their attempts, ended jobs, idempotency keys, audit
entries), as gzip-compressed NDJSON under DIR/<tenant>/<kind>-<day>.*.ndjson.gz.

Commands:
  read --dir DIR [filters]   Search it

Run "duetime archive read --help" for the filters.`;

export const ARCHIVE_READ_HELP = `Usage: duetime archive read --dir DIR [--tenant T] [--kind K] [--from DAY] [--to DAY]
                            [--job ID] [--grep TEXT] [--json]

Prints the archived rows that match, by tenant, kind and day. Reads the files
directly: no server is needed. A row written twice (a crash between archiving
and deleting) is printed once.

  --dir DIR       The archive directory (env DUETIME_ARCHIVE_DIR)
  --tenant T      Only this tenant's rows
  --kind K        ${RETENTION_KINDS.join(", ")}
  --from DAY      First UTC day, YYYY-MM-DD (the day an execution ended, a job
                  last changed, a key was stored, an audit entry was written)
  --to DAY        Last UTC day, YYYY-MM-DD, inclusive
  --job ID        Only rows of this job
  --grep TEXT     Only rows whose JSON contains TEXT (any case)
  --json          One JSON object per line, as archived
  -h, --help      Show this help

Exit codes: 0 success (also when nothing matches), 1 the archive cannot be
read, 2 usage error.`;

const OPTIONS = {
  dir: { type: "string" },
  tenant: { type: "string" },
  kind: { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  job: { type: "string" },
  grep: { type: "string" },
  json: { type: "boolean" },
} as const;

export function parseArchiveRead(args: string[], env: Env): ArchiveCommand {
  const usage = ARCHIVE_READ_HELP;
  const { values: v, positionals } = strictParse(args, OPTIONS, usage);
  expectPositionals(positionals, [], usage);
  const dir = v.dir ?? (env.DUETIME_ARCHIVE_DIR || undefined);
  if (dir === undefined || dir === "") throw new UsageError("missing --dir (or DUETIME_ARCHIVE_DIR)", usage);
  const filter: ArchiveFilter = {};
  if (v.tenant !== undefined) filter.tenantId = nonEmpty("tenant", v.tenant, usage);
  const kind = choiceOption<RetentionKind>("kind", v.kind, RETENTION_KINDS, usage);
  if (kind !== undefined) filter.kind = kind;
  if (v.from !== undefined) filter.from = day("from", v.from, usage);
  if (v.to !== undefined) filter.to = day("to", v.to, usage);
  if (filter.from !== undefined && filter.to !== undefined && filter.from > filter.to) throw new UsageError("--to: must not be before --from", usage);
  if (v.job !== undefined) filter.jobId = nonEmpty("job", v.job, usage);
  if (v.grep !== undefined) filter.grep = nonEmpty("grep", v.grep, usage);
  return { command: "archive read", dir, filter, json: v.json ?? false };
}

function day(flag: string, text: string, usage: string): string {
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(text) ? Date.parse(`${text}T00:00:00Z`) : NaN;
  const valid = !Number.isNaN(ms) && new Date(ms).toISOString().startsWith(text); // 2026-02-30 rolls over: refused
  if (!valid) throw new UsageError(`--${flag}: expected a UTC day such as 2026-03-01, got ${JSON.stringify(text)}`, usage);
  return text;
}

function nonEmpty(flag: string, value: string, usage: string): string {
  if (value === "") throw new UsageError(`--${flag}: must not be empty`, usage);
  return value;
}

export async function runArchive(cmd: ArchiveCommand, io: Io): Promise<void> {
  const out = new Printer(io, cmd.json);
  const rows: ArchiveLine[] = [];
  for await (const line of readArchive(cmd.dir, cmd.filter)) {
    if (out.jsonMode) out.json(line);
    else rows.push(line);
  }
  if (out.jsonMode) return;
  if (rows.length === 0) return out.line("no archived rows match");
  out.table(
    ["AT (UTC)", "KIND", "TENANT", "ID", "JOB", "STATE"],
    rows.map((r) => [r.at, r.kind, r.tenantId, r.id, r.jobId ?? "-", summary(r)]),
  );
}

/** What a row was: an execution's or job's state, an audit entry's action. */
function summary(line: ArchiveLine): string {
  const what = line.row.state ?? line.row.action;
  return typeof what === "string" ? oneLine(what, 30) : "-";
}
