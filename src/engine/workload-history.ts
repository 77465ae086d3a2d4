// The per-minute workload history behind GET /v1/stats/history and the
// dashboard's Overview charts (store/workload-minutes.ts). Each node counts
// what its own events show, per minute, tenant and pool, and adds it to the
// store every few seconds in one write, so the rows sum the cluster. Each
// time it also samples the queue depth (poolCounts, read from counters) into
// the minute's rows, and once a minute drops the rows older than a day.

import type { Clock } from "../core/clock.js";
import type { Store } from "../store/store.js";
import { addWorkload, LAG_COLUMNS, lagBucket, type WorkloadMinute, workloadKey } from "../store/workload-minutes.js";
import type { EngineEvents } from "./events.js";
import { Periodic } from "./periodic.js";

export const WORKLOAD_FLUSH_MS = 10_000;
export const WORKLOAD_KEPT_MS = 24 * 3_600_000;
const MINUTE_MS = 60_000;

export interface WorkloadHistoryOptions {
  store: Store;
  clock: Clock;
  events: EngineEvents;
  /** How often the counts are written (default WORKLOAD_FLUSH_MS). */
  flushMs?: number;
}

export class WorkloadHistory {
  /** What is counted and not yet written (the store sums records of one row). */
  private pending: WorkloadMinute[] = [];
  /** The current minute's records by tenant, then pool: an event finds its record without building a key (this runs for every event of a herd). */
  private current = new Map<string, Map<string, WorkloadMinute>>();
  private currentMinute = -1;
  private purgedMinute = -1;
  private readonly loop: Periodic<void>;
  private readonly unsubscribe: (() => void)[];

  constructor(private readonly o: WorkloadHistoryOptions) {
    const { events } = o;
    this.loop = new Periodic(o.clock, o.flushMs ?? WORKLOAD_FLUSH_MS, () =>
      this.flush()
        .then(() => this.sample())
        .catch((error) => o.events.emit("error", { where: "workload-history", error })),
    );
    this.unsubscribe = [
      events.on("execution:leased", (e) => {
        const m = this.minute(e.tenantId, e.pool);
        m.started++;
        m.lag[lagBucket(e.startLagMs)]!++;
      }),
      events.on("execution:succeeded", (e) => {
        this.minute(e.tenantId, e.pool).succeeded++;
      }),
      events.on("execution:failed", (e) => this.failed(this.minute(e.tenantId, e.pool), e.state)),
      events.on("execution:timed_out", (e) => this.failed(this.minute(e.tenantId, e.pool), e.state)),
    ];
  }

  start(): void {
    this.loop.start();
  }

  /** Stops the loop and writes what is counted. */
  async stop(): Promise<void> {
    for (const off of this.unsubscribe) off();
    await this.loop.stop();
    await this.flush().catch((error) => this.o.events.emit("error", { where: "workload-history", error }));
  }

  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const records = this.pending;
    // Later events count afresh: what is being written must not change under the write.
    this.pending = [];
    this.current = new Map();
    this.currentMinute = -1;
    try {
      await this.o.store.workloadAdd({ records });
    } catch (error) {
      // Kept for the next flush, one record a row: a store outage delays the history, it does not lose it or grow it.
      const byRow = new Map<string, WorkloadMinute>();
      for (const r of [...records, ...this.pending]) {
        const m = byRow.get(workloadKey(r));
        byRow.set(workloadKey(r), m ? addWorkload(m, r) : r);
      }
      this.pending = [...byRow.values()];
      this.current = new Map();
      this.currentMinute = -1;
      throw error;
    }
  }

  /** The depth now, as the minute's latest sample (poolCounts reads counters: cheap); and, once a minute, the purge of what is past keeping. */
  private async sample(): Promise<void> {
    const now = this.o.clock.now();
    const minute = now - (now % MINUTE_MS);
    const counts = await this.o.store.poolCounts({ now });
    await this.o.store.workloadAdd({
      records: counts.map((c) => ({ ...empty(minute, c.tenantId, c.pool), pending: c.pending, queued: c.queued, running: c.running })),
    });
    if (minute === this.purgedMinute) return;
    await this.o.store.workloadPurge({ before: minute - WORKLOAD_KEPT_MS });
    this.purgedMinute = minute;
  }

  private minute(tenantId: string, pool: string): WorkloadMinute {
    const now = this.o.clock.now();
    const minute = now - (now % MINUTE_MS);
    if (minute !== this.currentMinute) {
      this.currentMinute = minute;
      this.current = new Map();
    }
    let pools = this.current.get(tenantId);
    if (!pools) {
      pools = new Map();
      this.current.set(tenantId, pools);
    }
    let m = pools.get(pool);
    if (!m) {
      m = empty(minute, tenantId, pool);
      pools.set(pool, m);
      this.pending.push(m);
    }
    return m;
  }

  private failed(m: WorkloadMinute, state: "READY" | "DEAD" | "CANCELLED"): void {
    m.failed++;
    if (state === "DEAD") m.dead++;
  }
}

function empty(minute: number, tenantId: string, pool: string): WorkloadMinute {
  return { minute, tenantId, pool, started: 0, succeeded: 0, failed: 0, dead: 0, lag: LAG_COLUMNS.map(() => 0) };
}
