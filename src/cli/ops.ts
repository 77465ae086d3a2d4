// `duetime executions`, `duetime dlq list|replay`, `duetime cron` and
// `duetime cluster`: parsing (pure) and running (against a DuetimeClient).

import type { PageQuery, PreviewQuery, PreviewResponse } from "@duetime/sdk/contract";
import { parseCron as parseCronExpression } from "../core/cron/index.js";
import type { DuetimeClient } from "@duetime/sdk";
import {
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  expectPositionals,
  globalOptions,
  integerOption,
  strictParse,
  timeOption,
  type Env,
  type GlobalOptions,
} from "./args.js";
import { describeExecution } from "./jobs.js";
import { oneLine, utc, zoned, type Printer } from "./output.js";

export type OpsCommand =
  | { command: "executions"; global: GlobalOptions; jobId: string; query: PageQuery }
  | { command: "dlq list"; global: GlobalOptions; query: PageQuery }
  | { command: "dlq replay"; global: GlobalOptions; executionId: string }
  | { command: "cron"; global: GlobalOptions; query: PreviewQuery }
  | { command: "cluster"; global: GlobalOptions };

const PAGE_HELP = `  --limit N         Page size, 1..500 (default 50)
  --cursor C        The nextCursor of the previous page`;

export const EXECUTIONS_HELP = `Usage: duetime executions <jobId> [--limit N] [--cursor C]

Lists a job's executions, one line per attempt, newest first.

${PAGE_HELP}

${GLOBAL_HELP}`;

export const DLQ_HELP = `Usage: duetime dlq <command> [options]

Commands:
  list                    List dead letters
  replay <executionId>    Run a dead execution again (role admin)

${GLOBAL_HELP}`;

export const DLQ_LIST_HELP = `Usage: duetime dlq list [--limit N] [--cursor C]

${PAGE_HELP}

${GLOBAL_HELP}`;

export const DLQ_REPLAY_HELP = `Usage: duetime dlq replay <executionId>

Creates a new attempt of a dead execution (role admin); its history is kept.

${GLOBAL_HELP}`;

export const CRON_HELP = `Usage: duetime cron "<expr>" [--tz ZONE] [--from TIME] [--count N]

Prints the next fire times of a cron expression, computed by the server with
the scheduler's own code: local time in the zone (with its offset) and UTC.
Daylight saving is marked: "moved: DST gap" when the wall time does not exist
(spring forward) and the fire moves to the transition; "DST overlap: fires
twice" when a wildcard schedule's wall time repeats (fall back), and "DST
overlap: first of two only" for a fixed-time schedule, which fires only at the
first. --json prints the API's answer (times, local, dst).

  --tz ZONE         IANA time zone of the expression (default UTC)
  --from TIME       Start after this RFC 3339 time (default now)
  --count N         How many times, 1..1000 (default 10)

${GLOBAL_HELP}`;

export const CLUSTER_HELP = `Usage: duetime cluster

Shows the cluster as the server sees it (role admin): every live node with
the shards it holds and the age of its heartbeat, and how many of the 256
shards have no live owner. Times are the store's clock. --json prints the
API's answer (GET /v1/cluster), every shard's owner, epoch and lease.

${GLOBAL_HELP}`;

const PAGE_OPTIONS = { ...GLOBAL_OPTIONS, limit: { type: "string" }, cursor: { type: "string" } } as const;

function pageQuery(values: { limit?: string | undefined; cursor?: string | undefined }, usage: string): PageQuery {
  const query: PageQuery = {};
  const limit = integerOption("limit", values.limit, 1, 500, usage);
  if (limit !== undefined) query.limit = limit;
  if (values.cursor !== undefined) query.cursor = values.cursor;
  return query;
}

export function parseExecutions(args: string[], env: Env): OpsCommand {
  const usage = EXECUTIONS_HELP;
  const { values, positionals } = strictParse(args, PAGE_OPTIONS, usage);
  const [jobId] = expectPositionals(positionals, ["jobId"], usage);
  return { command: "executions", global: globalOptions(values, env, usage), jobId: jobId!, query: pageQuery(values, usage) };
}

export function parseDlqList(args: string[], env: Env): OpsCommand {
  const usage = DLQ_LIST_HELP;
  const { values, positionals } = strictParse(args, PAGE_OPTIONS, usage);
  expectPositionals(positionals, [], usage);
  return { command: "dlq list", global: globalOptions(values, env, usage), query: pageQuery(values, usage) };
}

export function parseDlqReplay(args: string[], env: Env): OpsCommand {
  const usage = DLQ_REPLAY_HELP;
  const { values, positionals } = strictParse(args, GLOBAL_OPTIONS, usage);
  const [executionId] = expectPositionals(positionals, ["executionId"], usage);
  return { command: "dlq replay", global: globalOptions(values, env, usage), executionId: executionId! };
}

export function parseCron(args: string[], env: Env): OpsCommand {
  const usage = CRON_HELP;
  const options = { ...GLOBAL_OPTIONS, tz: { type: "string" }, from: { type: "string" }, count: { type: "string" } } as const;
  const { values, positionals } = strictParse(args, options, usage);
  const [cron] = expectPositionals(positionals, ["expr"], usage);
  const query: PreviewQuery = { cron: cron! };
  if (values.tz !== undefined) query.tz = values.tz;
  const from = timeOption("from", values.from, usage);
  if (from !== undefined) query.from = from;
  const count = integerOption("count", values.count, 1, 1000, usage);
  if (count !== undefined) query.count = count;
  return { command: "cron", global: globalOptions(values, env, usage), query };
}

export function parseCluster(args: string[], env: Env): OpsCommand {
  const usage = CLUSTER_HELP;
  const { values, positionals } = strictParse(args, GLOBAL_OPTIONS, usage);
  expectPositionals(positionals, [], usage);
  return { command: "cluster", global: globalOptions(values, env, usage) };
}

export async function runOps(cmd: OpsCommand, client: DuetimeClient, out: Printer): Promise<void> {
  switch (cmd.command) {
    case "executions": {
      const page = await client.listExecutions(cmd.jobId, cmd.query);
      out.either(page, () => {
        if (page.items.length === 0) out.line("no executions");
        else
          out.table(
            ["EXECUTION", "ATTEMPT", "STATE", "SCHEDULED FOR (UTC)", "STARTED", "FINISHED", "WORKER", "ERROR"],
            page.items.map((e) => [
              e.executionId,
              String(e.attempt),
              e.state,
              utc(e.scheduledFor),
              utc(e.startedAt),
              utc(e.finishedAt),
              e.workerId ?? "-",
              e.error ? oneLine(`${e.error.class ?? "error"}: ${e.error.message}`) : "-",
            ]),
          );
        if (page.nextCursor) out.line(`next page: --cursor ${page.nextCursor}`);
      });
      return;
    }
    case "dlq list": {
      const page = await client.listDeadLetters(cmd.query);
      out.either(page, () => {
        if (page.items.length === 0) out.line("no dead letters");
        else
          out.table(
            ["EXECUTION", "JOB", "NAME", "ATTEMPTS", "DEAD AT (UTC)", "LAST ERROR"],
            page.items.map((d) => [
              d.executionId,
              d.jobId,
              oneLine(d.name, 30),
              String(d.attempts),
              utc(d.deadAt),
              d.lastError ? oneLine(d.lastError.message) : "-",
            ]),
          );
        if (page.nextCursor) out.line(`next page: --cursor ${page.nextCursor}`);
      });
      return;
    }
    case "dlq replay": {
      const execution = await client.replayDeadLetter(cmd.executionId);
      out.either(execution, () => out.line(describeExecution("replayed", execution)));
      return;
    }
    case "cron": {
      const preview = await client.previewSchedule(cmd.query);
      out.either(preview, () => printPreview(out, cmd.query, preview));
      return;
    }
    case "cluster": {
      const view = await client.cluster();
      out.either(view, () => {
        out.table(
          ["NODE", "SHARDS", "HEARTBEAT AGE", "ADDRESS"],
          view.nodes.map((n) => [n.nodeId, String(n.shards.length), `${n.heartbeatAgeSeconds} s`, n.address ?? "-"]),
        );
        const live = new Set(view.nodes.map((n) => n.nodeId));
        const orphaned = view.shards.filter((s) => !s.owner || !live.has(s.owner) || s.leaseRemainingSeconds < 0).length;
        out.line(
          `${view.nodes.length} live node${view.nodes.length === 1 ? "" : "s"}; ${orphaned} of ${view.shards.length} shards without a live owner (store time ${utc(view.storeTime)})`,
        );
      });
      return;
    }
  }
}

/** The preview answer with the marks the server adds beside `times` (docs/api.md, notes). */
interface MarkedPreview extends PreviewResponse {
  local?: string[];
  dst?: ("gap" | "overlap" | null)[];
}

/**
 * Whether the expression is fixed-time (neither minute nor hour starts with
 * "*"), by the scheduler's own parser; undefined when it does not parse here
 * (the server accepted it, so it may know more than this CLI).
 */
function isFixedTime(cron: string): boolean | undefined {
  try {
    return parseCronExpression(cron).fixedTime;
  } catch {
    return undefined;
  }
}

function printPreview(out: Printer, query: PreviewQuery, preview: MarkedPreview): void {
  if (preview.times.length === 0) {
    out.line("no fire times");
    return;
  }
  const tz = query.tz ?? "UTC";
  const fixed = isFixedTime(query.cron);
  const rows = preview.times.map((time, i) => {
    const local = preview.local?.[i];
    let note = "";
    if (preview.dst?.[i] === "gap") {
      const wall = local?.slice(11, local.endsWith(":00") ? 16 : 19);
      note = `moved: DST gap${wall ? ` (${wall} does not exist)` : ""}`;
    } else if (preview.dst?.[i] === "overlap") {
      const repeats = local !== undefined && preview.local!.filter((l) => l === local).length > 1;
      if (fixed === true) note = "DST overlap: first of two only";
      else if (fixed === false || repeats) note = "DST overlap: fires twice";
      else note = "DST overlap";
    }
    return [zoned(time, tz), utc(time), note];
  });
  out.table([`LOCAL (${tz})`, "UTC", "NOTE"], rows);
}
