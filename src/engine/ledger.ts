// Backfill and the run ledger of a job's schedule: what its nominal fire
// times are, and what became of each.

import type { BackfillRequest, BackfillResponse, OccurrenceItem, OccurrencesQuery } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { DuetimeError, invalidArgument } from "../core/errors.js";
import { executionIdFor } from "../core/ids.js";
import { REACH_MS } from "../core/cron/index.js";
import { fireTimesBetween, isCron, localTime } from "../core/schedule.js";
import { parseRfc3339, toIso, toIsoOrNull } from "../core/time.js";
import type { AttemptRow, JobRecord, Store } from "../store/store.js";
import type { ReadStore } from "./read-routing.js";
import type { Executor } from "./executor.js";
import { poolOf } from "../core/targets.js";
import { dryRunRefusal, invalidState, toExecution } from "./wire.js";

export class ScheduleLedger {
  constructor(
    private readonly store: Store,
    /** For the run ledger, which only shows data (read-routing.ts). */
    private readonly reads: ReadStore,
    private readonly clock: Clock,
    private readonly executor: Executor,
    private readonly nodeId: string,
    /** History older than this is removed by retention: an occurrence before it may have run, we cannot tell. */
    private readonly historyRetentionMs: number,
  ) {}

  async backfill(job: JobRecord, request: BackfillRequest): Promise<BackfillResponse> {
    const { tenantId, jobId } = job;
    if (!isCron(job.schedule)) throw new DuetimeError("INVALID_STATE", "backfill applies to recurring (cron) jobs");
    if (job.state === "CANCELLED") throw invalidState(job, "backfill");
    if (job.mode === "dry_run") throw dryRunRefusal("backfill");
    const now = this.clock.now();
    const { from, to } = window(request, now);
    const times = fireTimesBetween(job.schedule, jobId, from, to, BACKFILL_MAX + 1).map((f) => f.at);
    if (times.length > BACKFILL_MAX) {
      throw invalidArgument("to", `the window holds more than ${BACKFILL_MAX} occurrences; backfill it in parts`);
    }
    const rows = await this.store.executionCreateMany({
      tenantId,
      jobId,
      nodeId: this.nodeId,
      now,
      // a bounded rate: one occurrence per BACKFILL_SPACING_MS
      items: times.map((scheduledFor, i) => ({ scheduledFor, readyAt: now + i * BACKFILL_SPACING_MS })),
    });
    const pool = poolOf(job.target);
    const items = times.map((scheduledFor, i) => {
      const row = rows[i];
      if (row) this.executor.ready(tenantId, pool, row.readyAt ?? now);
      return {
        scheduledFor: toIso(scheduledFor),
        executionId: executionIdFor(jobId, scheduledFor),
        created: row !== null,
        readyAt: row ? toIsoOrNull(row.readyAt) : null,
      };
    });
    return { items };
  }

  async occurrences(job: JobRecord, query: OccurrencesQuery): Promise<{ items: OccurrenceItem[] }> {
    const { tenantId, jobId } = job;
    const now = this.clock.now();
    const { from, to } = window(query, Infinity);
    const fires: { at: number; local: string; dst?: "gap" | "overlap" }[] = isCron(job.schedule)
      ? fireTimesBetween(job.schedule, jobId, from, to, LEDGER_MAX + 1)
      : [parseRfc3339(job.schedule.runAt)!].filter((t) => t > from && t <= to).map((at) => ({ at, local: toIso(at).slice(0, 19) }));
    if (fires.length > LEDGER_MAX) throw invalidArgument("to", `the window holds more than ${LEDGER_MAX} occurrences; ask for a shorter one`);
    const executions = new Map((await this.reads.executionsInWindow({ tenantId, jobId, from: from + 1, to })).map((e) => [e.scheduledFor, e]));
    const items = fires.map((f): OccurrenceItem => {
      const item: OccurrenceItem = { scheduledFor: toIso(f.at), local: f.local, status: "due", ...(f.dst ? { dst: f.dst } : {}) };
      const execution = executions.get(f.at);
      executions.delete(f.at);
      if (execution) return { ...item, ...this.entryOf(execution) };
      return { ...item, ...notRun(job, f.at, now, now - this.historyRetentionMs) };
    });
    // Executions at other times: triggers, or occurrences of an earlier schedule.
    for (const e of executions.values()) {
      const tz = isCron(job.schedule) ? job.schedule.tz : "UTC";
      items.push({
        scheduledFor: toIso(e.scheduledFor),
        local: localTime(e.scheduledFor, tz).slice(0, 19),
        status: "dispatched",
        ...this.entryOf(e),
      });
    }
    items.sort((a, b) => a.scheduledFor.localeCompare(b.scheduledFor));
    return { items };
  }

  /**
   * What became of an occurrence that has an execution. One never attempted
   * and not yet due (a one-off's, created at submit) is still to come; one
   * held by a pause is not run while the job is paused; one a dry run
   * recorded at its dispatch would have run then.
   */
  private entryOf(e: AttemptRow): Partial<OccurrenceItem> {
    const executionState = toExecution({ ...e, attempt: 0 }, this.clock.now()).state;
    const execution = { executionId: e.executionId, executionState };
    if (e.state === "SKIPPED" && e.error?.reason === "dry_run") return { status: "would_run", ...execution };
    if (e.state === "SKIPPED") {
      const reason = (e.error?.reason as OccurrenceItem["reason"]) ?? "misfire";
      return { status: "skipped", reason, ...execution };
    }
    if (executionState === "PAUSED") return { status: "not_run", reason: "paused", ...execution };
    if (executionState === "PENDING" && e.attempt === 0) return { status: "due", ...execution };
    return { status: "dispatched", ...execution };
  }
}

const BACKFILL_MAX = 1000;
const BACKFILL_SPACING_MS = 100;
const LEDGER_MAX = 1000;

/** (from, to] of a backfill or ledger request, `to` capped at `cap`. */
function window(request: { from: string; to: string }, cap: number): { from: number; to: number } {
  const from = parseRfc3339(request.from);
  if (from === null) throw invalidArgument("from", `${JSON.stringify(request.from)} is not an RFC 3339 time`);
  const to = parseRfc3339(request.to);
  if (to === null) throw invalidArgument("to", `${JSON.stringify(request.to)} is not an RFC 3339 time`);
  if (to <= from) throw invalidArgument("to", "must be later than from");
  if (to - from > REACH_MS) throw invalidArgument("to", "the window spans more than 100 years; ask for a shorter one");
  return { from, to: Math.min(to, cap) };
}

/** Why a nominal fire time has no execution; before `expiredBefore` its record may have been removed by retention. */
function notRun(job: JobRecord, at: number, now: number, expiredBefore: number): Pick<OccurrenceItem, "status" | "reason"> {
  const schedule = job.schedule as Partial<{ startAt: string; endAt: string }>;
  if ((schedule.startAt && at < parseRfc3339(schedule.startAt)!) || (schedule.endAt && at > parseRfc3339(schedule.endAt)!)) {
    return { status: "not_run", reason: "outside_window" };
  }
  if (at < job.createdAt) return { status: "not_run", reason: "before_creation" };
  if (at > now || at === job.nextRunAt) {
    if (job.state === "SCHEDULED") return { status: "due" };
    return { status: "not_run", reason: job.state === "PAUSED" ? "paused" : "cancelled" };
  }
  if (job.state === "PAUSED" && at >= job.updatedAt) return { status: "not_run", reason: "paused" };
  if (job.state === "CANCELLED" && at >= job.updatedAt) return { status: "not_run", reason: "cancelled" };
  if (at < expiredBefore) return { status: "unknown", reason: "expired" };
  return { status: "not_run", reason: "misfire" };
}
