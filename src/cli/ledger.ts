// `duetime jobs backfill` and `duetime jobs occurrences`: a recurring job's
// past windows, created on demand or explained (the run ledger). Parsing
// (pure) and running (against a DuetimeClient).

import type { BackfillRequest, OccurrenceItem, OccurrencesQuery } from "@duetime/sdk/contract";
import type { DuetimeClient } from "@duetime/sdk";
import {
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  UsageError,
  expectPositionals,
  globalOptions,
  strictParse,
  timeOption,
  type Env,
  type GlobalOptions,
} from "./args.js";
import { utc, type Printer } from "./output.js";

export type LedgerCommand =
  | { command: "jobs backfill"; global: GlobalOptions; jobId: string; request: BackfillRequest }
  | { command: "jobs occurrences"; global: GlobalOptions; jobId: string; query: OccurrencesQuery };

export const BACKFILL_HELP = `Usage: duetime jobs backfill <jobId> --from TIME --to TIME

Creates the occurrences of a recurring job in a past window, each with its
deterministic id, dispatched at a bounded rate. Repeating it adds nothing.

  --from TIME       Start of the window (RFC 3339)
  --to TIME         End of the window (RFC 3339), after --from

${GLOBAL_HELP}`;

export const OCCURRENCES_HELP = `Usage: duetime jobs occurrences <jobId> --from TIME --to TIME

The run ledger: every nominal fire time of a recurring job in the window and
what became of it (dispatched, skipped and why, not run and why, or still due),
with daylight-saving marks (gap: moved by a spring-forward gap; overlap: its
wall time occurs twice).

  --from TIME       Start of the window (RFC 3339)
  --to TIME         End of the window (RFC 3339), after --from

${GLOBAL_HELP}`;

const WINDOW_OPTIONS = { ...GLOBAL_OPTIONS, from: { type: "string" }, to: { type: "string" } } as const;

function parseWindow(args: string[], env: Env, usage: string): { global: GlobalOptions; jobId: string; window: { from: string; to: string } } {
  const { values, positionals } = strictParse(args, WINDOW_OPTIONS, usage);
  const [jobId] = expectPositionals(positionals, ["jobId"], usage);
  const global = globalOptions(values, env, usage);
  const from = timeOption("from", values.from, usage);
  const to = timeOption("to", values.to, usage);
  if (from === undefined) throw new UsageError("missing --from TIME", usage);
  if (to === undefined) throw new UsageError("missing --to TIME", usage);
  if (Date.parse(from) >= Date.parse(to)) throw new UsageError(`--to: must be after --from (${from}), got ${to}`, usage);
  return { global, jobId: jobId!, window: { from, to } };
}

export function parseBackfill(args: string[], env: Env): LedgerCommand {
  const { global, jobId, window } = parseWindow(args, env, BACKFILL_HELP);
  return { command: "jobs backfill", global, jobId, request: window };
}

export function parseOccurrences(args: string[], env: Env): LedgerCommand {
  const { global, jobId, window } = parseWindow(args, env, OCCURRENCES_HELP);
  return { command: "jobs occurrences", global, jobId, query: window };
}

export async function runLedger(cmd: LedgerCommand, client: DuetimeClient, out: Printer): Promise<void> {
  switch (cmd.command) {
    case "jobs backfill": {
      const answer = await client.backfillJob(cmd.jobId, cmd.request);
      out.either(answer, () => {
        if (answer.items.length === 0) return out.line("no occurrences in the window");
        out.table(
          ["SCHEDULED FOR (UTC)", "EXECUTION", "NEW", "READY AT (UTC)"],
          answer.items.map((i) => [utc(i.scheduledFor), i.executionId, i.created ? "yes" : "no (existed)", utc(i.readyAt)]),
        );
        const created = answer.items.filter((i) => i.created).length;
        const n = answer.items.length;
        out.line(`backfilled ${n} occurrence${n === 1 ? "" : "s"} of job ${cmd.jobId}: ${created} new, ${n - created} already there`);
      });
      return;
    }
    case "jobs occurrences": {
      const answer = await client.listOccurrences(cmd.jobId, cmd.query);
      out.either(answer, () => {
        if (answer.items.length === 0) return out.line("no occurrences in the window");
        out.table(
          ["SCHEDULED FOR (UTC)", "LOCAL", "STATUS", "REASON", "DST", "EXECUTION", "STATE"],
          answer.items.map((i) => [
            utc(i.scheduledFor),
            i.local || "-",
            i.status,
            i.reason ?? "-",
            dstMark(i.dst),
            i.executionId ?? "-",
            i.executionState ?? "-",
          ]),
        );
      });
      return;
    }
  }
}

function dstMark(dst: OccurrenceItem["dst"]): string {
  if (dst === "gap") return "moved: gap";
  if (dst === "overlap") return "overlap";
  return "-";
}
