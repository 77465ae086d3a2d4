// Spiky schedules, warned about at submit time: when a create makes a
// tenant's work pile up in one second (one-offs, by pool and priority) or
// one minute (recurring jobs), the answer carries a warning (a `warnings`
// field and a Duetime-Warning header) that suggests a jitter to spread it.
// Creating still succeeds: a spike is legal, just costly (every worker and
// receiver meets it at once). Counting is bounded: a window is counted up
// to twice its threshold, and a call checks its DUE_WINDOWS_CHECKED busiest
// windows only. A window counted lately, far under its threshold, is not
// counted again for COUNT_TRUSTED_MS (this node adds its own creates), so
// the common create costs no query; other nodes' creates in that time may
// delay a warning by as much.

import type { DueWarning } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { toIso } from "../core/time.js";
import type { Store } from "../store/store.js";
import type { EngineEvents } from "./events.js";

/** Occurrences of one tenant, pool and priority due in one second that earn a warning. */
export const SPIKE_PER_SECOND = 1_000;
/** Occurrences of one tenant's recurring jobs due in one minute that earn a warning. */
export const SPIKE_PER_MINUTE = 5_000;
/** The windows a create call checks, its busiest first: a batch spread over a thousand seconds is not a spike of its own. */
const DUE_WINDOWS_CHECKED = 10;
/** How long a window's count stays trusted while it is under half its threshold. */
const COUNT_TRUSTED_MS = 5_000;
/** Counts kept at most; older ones go first. */
const COUNTS_KEPT = 10_000;

/** One created job, as the spike check sees it. */
export interface DueJob {
  kind: "once" | "cron";
  pool: string;
  priority: number;
  /** Its first occurrence's due time (epoch ms), or null when it has none. */
  dueAt: number | null;
}

interface Window {
  key: string;
  window: "second" | "minute";
  from: number;
  pool: string;
  priority: number;
  jobs: number[];
}

export class SpikeWatch {
  /** Recent counts by tenant and window, with when they were counted (the clock's now). */
  private readonly counts = new Map<string, { count: number; at: number }>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly events?: EngineEvents,
  ) {}

  /** The warnings for each job (by its index in `jobs`); jobs with none are absent. */
  async warnings(tenantId: string, jobs: readonly DueJob[]): Promise<Map<number, DueWarning[]>> {
    const windows = new Map<string, Window>();
    jobs.forEach((job, index) => {
      if (job.dueAt === null) return;
      const window = job.kind === "cron" ? "minute" : "second";
      const size = window === "minute" ? 60_000 : 1_000;
      const from = Math.floor(job.dueAt / size) * size;
      const key = `${window}|${from}|${job.pool}|${job.priority}`;
      const found = windows.get(key) ?? { key: `${tenantId}|${key}`, window, from, pool: job.pool, priority: job.priority, jobs: [] };
      found.jobs.push(index);
      windows.set(key, found);
    });
    const out = new Map<number, DueWarning[]>();
    const busiest = [...windows.values()].sort((a, b) => b.jobs.length - a.jobs.length).slice(0, DUE_WINDOWS_CHECKED);
    for (const w of busiest) {
      const warning = await this.check(tenantId, w);
      if (!warning) continue;
      this.events?.emit("due:spike", { tenantId, window: w.window });
      for (const index of w.jobs) out.set(index, [...(out.get(index) ?? []), warning]);
    }
    return out;
  }

  private async check(tenantId: string, w: Window): Promise<DueWarning | null> {
    const threshold = w.window === "minute" ? SPIKE_PER_MINUTE : SPIKE_PER_SECOND;
    const size = w.window === "minute" ? 60_000 : 1_000;
    const now = this.clock.now();
    const known = this.counts.get(w.key);
    if (known && now - known.at < COUNT_TRUSTED_MS && known.count + w.jobs.length < threshold / 2) {
      known.count += w.jobs.length;
      return null;
    }
    const count = await this.store.dueInWindow({
      tenantId,
      pool: w.pool,
      priority: w.priority,
      from: w.from,
      to: w.from + size,
      limit: threshold * 2,
    });
    this.remember(w.key, count, now);
    if (count < threshold) return null;
    // Spread to half the threshold per window: room for what comes next.
    const windows = Math.ceil(count / (threshold / 2));
    const suggestedJitterSeconds = (windows * size) / 1000;
    const at = toIso(w.from);
    const message =
      w.window === "second"
        ? `${count} or more of this tenant's jobs in pool "${w.pool}" are due in the second ${at} (warned from ${threshold}): spread their runAt over ${suggestedJitterSeconds} s`
        : `${count} or more of this tenant's recurring jobs are due in the minute ${at} (warned from ${threshold}): give them schedule.jitterSeconds ${suggestedJitterSeconds}`;
    return { code: "DUE_SPIKE", message, window: w.window, at, count, suggestedJitterSeconds };
  }

  private remember(key: string, count: number, now: number): void {
    this.counts.delete(key); // re-inserted last: the map's order is the counts' age
    this.counts.set(key, { count, at: now });
    for (const [old, value] of this.counts) {
      if (this.counts.size <= COUNTS_KEPT && now - value.at < COUNT_TRUSTED_MS) break;
      this.counts.delete(old);
    }
  }
}
