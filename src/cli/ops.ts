// `duetime executions`, `duetime dlq list|replay`, `duetime cron` and
// `duetime cluster`: parsing (pure) and running (against a DuetimeClient;
// `duetime cron` computes here unless --url names a server).

import {
  operationNamed,
  type DeadLetterReplay,
  type DeadLetterReplayRequest,
  type ErrorClass,
  type PageQuery,
  type PreviewQuery,
  type PreviewResponse,
} from "@duetime/sdk/contract";
import { systemClock } from "../core/clock.js";
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
  UsageError,
  type Env,
  type GlobalOptions,
} from "./args.js";
import { describeExecution } from "./jobs.js";
import { oneLine, utc, zoned, type Printer } from "./output.js";

export type OpsCommand =
  | { command: "executions"; global: GlobalOptions; jobId: string; query: PageQuery }
  | { command: "dlq list"; global: GlobalOptions; query: PageQuery }
  | { command: "dlq replay"; global: GlobalOptions; executionId: string }
  | { command: "dlq replay bulk"; global: GlobalOptions; request: DeadLetterReplayRequest; wait: boolean }
  | { command: "dlq replays"; global: GlobalOptions; replayId?: string; query: PageQuery }
  /** server: --url was given, so the server computes the preview (else this process does, offline). */
  | { command: "cron"; global: GlobalOptions; query: PreviewQuery; server: boolean }
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
  replay --all --rate 10/s   Replay many, rate-limited (ids, --all or a filter)
  replays [<replayId>]    Bulk replays and their progress

${GLOBAL_HELP}`;

export const DLQ_LIST_HELP = `Usage: duetime dlq list [--limit N] [--cursor C]

${PAGE_HELP}

${GLOBAL_HELP}`;

export const DLQ_REPLAY_HELP = `Usage: duetime dlq replay <executionId>
       duetime dlq replay [<executionId>...] [--all] [--pool P] [--error-class C]
                          [--dead-after TIME] [--dead-before TIME] [--rate R] [--wait]

With one execution id and no other option, creates a new attempt of that dead
execution at once (role admin); its history is kept.

Otherwise starts a bulk replay (POST /v1/dead-letters:replay, role admin,
audited): the listed dead letters, or those the filter matches (--all: every
one) that died before now, made ready at the rate, never faster. It runs in
the server, survives restarts, and prints its id; --wait follows its
progress until it ends. \`duetime dlq replays <replayId>\` shows it later.

  --all                   Every dead letter of the tenant (an empty filter)
  --pool P                Only dead letters of this pool
  --error-class C         Only those whose last error is transient, permanent or throttled
  --dead-after TIME       Only those dead at or after this RFC 3339 time
  --dead-before TIME      Only those dead at or before this RFC 3339 time
  --rate R                How many per second: "10/s", "600/m", "2/h" or a plain
                          number (per second); 0.01/s to 10000/s (default 10/s)
  --tenant T              The tenant whose dead letters (an admin key for every tenant)
  --wait                  Follow the progress until the replay ends

${GLOBAL_HELP}`;

export const DLQ_REPLAYS_HELP = `Usage: duetime dlq replays [<replayId>] [--limit N] [--cursor C]

Without an id, lists the bulk dead-letter replays, newest first; with one,
shows its progress (role admin).

${PAGE_HELP}

${GLOBAL_HELP}`;

export const CRON_HELP = `Usage: duetime cron "<expr>" [--tz ZONE] [--from TIME] [--count N]

Prints the next fire times of a cron expression, computed with the
scheduler's own code: local time in the zone (with its offset) and UTC. It
needs no server: the preview is computed here, as the server computes
GET /v1/schedules/preview, with the same checks and error codes. With --url
the server is asked instead (to see what that server's version computes);
DUETIME_URL alone does not send it there.

Daylight saving is marked: "moved: DST gap" when the wall time does not exist
(spring forward) and the fire moves to the transition; "DST overlap: fires
twice" when a wildcard schedule's wall time repeats (fall back), and "DST
overlap: first of two only" for a fixed-time schedule, which fires only at the
first. --json prints the API's answer (times, local, dst).

  --tz ZONE         IANA time zone of the expression (default UTC)
  --from TIME       Start after this RFC 3339 time (default now)
  --count N         How many times, 1..1000 (default 10)

Exit codes: 0 success; 1 the expression, zone or time refused (the API's
INVALID_ARGUMENT, offline too) or, with --url, an API or network error;
2 usage error.

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

const ERROR_CLASSES: readonly ErrorClass[] = ["transient", "permanent", "throttled"];
const RATE_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600 };

/** `10/s`, `600/m`, `2/h` or a plain number (per second) → per second, 0.01 to 10000. */
export function parseRate(value: string, usage: string): number {
  const m = /^(\d+(?:\.\d+)?)(?:\/([smh]))?$/.exec(value.trim());
  const perSecond = m ? Number(m[1]) / RATE_UNITS[m[2] ?? "s"]! : Number.NaN;
  if (!Number.isFinite(perSecond)) {
    throw new UsageError(`--rate: expected a rate such as 10/s, 600/m or 10 (per second), got ${JSON.stringify(value)}`, usage);
  }
  if (perSecond < 0.01 || perSecond > 10_000) {
    throw new UsageError(`--rate: ${JSON.stringify(value)} is ${perSecond} per second; the rate is 0.01/s to 10000/s`, usage);
  }
  return perSecond;
}

export function parseDlqReplay(args: string[], env: Env): OpsCommand {
  const usage = DLQ_REPLAY_HELP;
  const options = {
    ...GLOBAL_OPTIONS,
    all: { type: "boolean" },
    pool: { type: "string" },
    "error-class": { type: "string" },
    "dead-after": { type: "string" },
    "dead-before": { type: "string" },
    rate: { type: "string" },
    tenant: { type: "string" },
    wait: { type: "boolean" },
  } as const;
  const { values, positionals } = strictParse(args, options, usage);
  const global = globalOptions(values, env, usage);
  const filtered =
    values.pool !== undefined || values["error-class"] !== undefined || values["dead-after"] !== undefined || values["dead-before"] !== undefined;
  const bulk = filtered || values.all === true || values.rate !== undefined || values.tenant !== undefined || values.wait === true;
  if (!bulk) {
    const [executionId] = expectPositionals(positionals, ["executionId"], usage);
    return { command: "dlq replay", global, executionId: executionId! };
  }
  if (positionals.length > 0 && (filtered || values.all)) {
    throw new UsageError("give execution ids, or --all or a filter (--pool, --error-class, --dead-after, --dead-before), not both", usage);
  }
  if (positionals.length === 0 && !filtered && !values.all) {
    throw new UsageError("which dead letters? give execution ids, --all, or a filter (--pool, --error-class, --dead-after, --dead-before)", usage);
  }
  if (positionals.length > 1000) throw new UsageError(`at most 1000 execution ids, got ${positionals.length}`, usage);
  const request: DeadLetterReplayRequest = {};
  if (positionals.length > 0) request.executionIds = positionals;
  else {
    const errorClass = values["error-class"];
    if (errorClass !== undefined && !ERROR_CLASSES.includes(errorClass as ErrorClass)) {
      throw new UsageError(`--error-class: expected one of ${ERROR_CLASSES.join(", ")}, got ${JSON.stringify(errorClass)}`, usage);
    }
    const deadAfter = timeOption("dead-after", values["dead-after"], usage);
    const deadBefore = timeOption("dead-before", values["dead-before"], usage);
    request.filter = {
      ...(values.pool !== undefined ? { pool: values.pool } : {}),
      ...(errorClass !== undefined ? { errorClass: errorClass as ErrorClass } : {}),
      ...(deadAfter !== undefined ? { deadAfter } : {}),
      ...(deadBefore !== undefined ? { deadBefore } : {}),
    };
  }
  if (values.rate !== undefined) request.ratePerSecond = parseRate(values.rate, usage);
  if (values.tenant !== undefined) request.tenantId = values.tenant;
  return { command: "dlq replay bulk", global, request, wait: values.wait === true };
}

export function parseDlqReplays(args: string[], env: Env): OpsCommand {
  const usage = DLQ_REPLAYS_HELP;
  const { values, positionals } = strictParse(args, PAGE_OPTIONS, usage);
  if (positionals.length > 1) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[1])}`, usage);
  return {
    command: "dlq replays",
    global: globalOptions(values, env, usage),
    ...(positionals[0] !== undefined ? { replayId: positionals[0] } : {}),
    query: pageQuery(values, usage),
  };
}

/** One line of a bulk replay's progress. */
export function describeReplay(r: DeadLetterReplay): string {
  const of = r.total !== null ? ` of ${r.total}` : "";
  const skipped = r.skipped > 0 ? `, ${r.skipped} skipped (no longer dead)` : "";
  return `replay ${r.replayId} ${r.state}: ${r.replayed}${of} replayed${skipped} at ${r.ratePerSecond}/s`;
}

/** How often --wait asks for progress. */
export const REPLAY_POLL_MS = 1000;

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
  // Only an explicit --url asks a server: DUETIME_URL is exported for the
  // commands that need one, and must not make a pure computation fail when
  // that server is down (nor a malformed DUETIME_URL refuse it).
  const server = values.url !== undefined;
  const global = server ? globalOptions(values, env, usage) : { url: "", json: values.json ?? false };
  return { command: "cron", global, query, server };
}

/**
 * The preview the server would answer, computed in this process: the
 * request checked by the operation's schemas (engine/operations.ts, as the
 * server's routes do), then the engine's own SchedulePreview. Bad input
 * throws the server's DuetimeError (code, message, field).
 */
export async function previewOffline(query: PreviewQuery): Promise<PreviewResponse> {
  // Loaded only here: the schema checker (Ajv) would add a third of a second to every other command's start.
  const [{ checkRequest }, { SchedulePreview }] = await Promise.all([import("../engine/operations.js"), import("../engine/schedule-preview.js")]);
  const op = operationNamed("previewSchedule");
  const [checked] = op.decode(checkRequest(op, op.encode(query))) as [PreviewQuery];
  return new SchedulePreview(systemClock).preview(checked);
}

export function parseCluster(args: string[], env: Env): OpsCommand {
  const usage = CLUSTER_HELP;
  const { values, positionals } = strictParse(args, GLOBAL_OPTIONS, usage);
  expectPositionals(positionals, [], usage);
  return { command: "cluster", global: globalOptions(values, env, usage) };
}

/** Prints a cron preview: the server's when given its client, else computed here. */
export async function runCron(cmd: Extract<OpsCommand, { command: "cron" }>, out: Printer, client?: DuetimeClient): Promise<void> {
  const preview = client ? await client.previewSchedule(cmd.query) : await previewOffline(cmd.query);
  out.either(preview, () => printPreview(out, cmd.query, preview));
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
    case "dlq replay bulk": {
      let replay = await client.replayDeadLetters(cmd.request);
      if (!cmd.global.json) out.line(`started ${describeReplay(replay)}`);
      while (cmd.wait && replay.state === "RUNNING") {
        await new Promise((resolve) => setTimeout(resolve, REPLAY_POLL_MS));
        const next = await client.getDeadLetterReplay(replay.replayId);
        if (!cmd.global.json && (next.replayed !== replay.replayed || next.state !== replay.state)) out.line(describeReplay(next));
        replay = next;
      }
      out.either(replay, () => {
        if (!cmd.wait) out.line(`follow it: duetime dlq replays ${replay.replayId}`);
      });
      return;
    }
    case "dlq replays": {
      if (cmd.replayId !== undefined) {
        const replay = await client.getDeadLetterReplay(cmd.replayId);
        out.either(replay, () => out.line(describeReplay(replay)));
        return;
      }
      const page = await client.listDeadLetterReplays(cmd.query);
      out.either(page, () => {
        if (page.items.length === 0) out.line("no replays");
        else
          out.table(
            ["REPLAY", "STATE", "REPLAYED", "SKIPPED", "RATE", "CREATED (UTC)", "SELECTION"],
            page.items.map((r) => [
              r.replayId,
              r.state,
              r.total !== null ? `${r.replayed}/${r.total}` : String(r.replayed),
              String(r.skipped),
              `${r.ratePerSecond}/s`,
              utc(r.createdAt),
              oneLine("executionIds" in r.selection ? `${r.selection.executionIds.length} ids` : JSON.stringify(r.selection.filter), 60),
            ]),
          );
        if (page.nextCursor) out.line(`next page: --cursor ${page.nextCursor}`);
      });
      return;
    }
    case "cron":
      return runCron(cmd, out, cmd.server ? client : undefined);
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
