// Retention: a background loop that removes what the store no longer needs to
// keep (ended executions and their attempts, ended jobs and their payload
// blobs, idempotency keys, audit entries), optionally archiving it first (archive.ts). The engine
// decides what is old enough (retentionCutoffs); the store removes it in
// bounded batches, one transaction each, yielding to the event loop between
// batches so that dispatch and leases are never held up for long. With an
// archive, a batch is read, archived, then deleted (only the rows read, and
// only those still due): nothing of the engine runs inside a transaction.

import type { Clock } from "../core/clock.js";
import type { RetentionPeriods } from "../core/retention.js";
import { RETENTION_KINDS, type RetentionKind, type Store } from "../store/store.js";
import type { ArchiveWriter } from "./archive.js";
import type { EngineEvents } from "./events.js";
import type { PayloadBlobs } from "./payload-blobs.js";
import { Periodic } from "./periodic.js";

/** Retention settings as EngineOptions takes them; periods default to RETENTION_DEFAULTS (core/retention.ts). */
export interface RetentionOptions extends Partial<RetentionPeriods> {
  /** Archive removed rows under this directory first (archive.ts); absent: they are removed without a copy. */
  archiveDir?: string;
  /** How often a run starts (default 60 s; the first one an interval after start()). */
  intervalMs?: number;
  /** Rows removed per transaction (default 500). */
  batchSize?: number;
  /** Batches of each kind per run (default 20): what is left waits for the next run. */
  maxBatchesPerRun?: number;
}

/** Rows removed by kind (the payload blobs the sweep removes are counted by their "retention:purged" event). */
export type RetentionCounts = Record<RetentionKind, number>;

/** Rows whose retention started before these times are due for removal. */
export function retentionCutoffs(periods: RetentionPeriods, now: number): Record<RetentionKind, number> {
  return {
    // A job outlives its idempotency key, so a retried create never makes a second job; a one-off's goes
    // with its last execution (its state is read from it), so history is kept at least as long as the keys.
    executions: now - Math.max(periods.historyMs, periods.idempotencyMs),
    jobs: now - Math.max(periods.historyMs, periods.idempotencyMs),
    idempotency: now - periods.idempotencyMs,
    audit: now - periods.auditMs,
  };
}

export class Retention {
  private readonly loop: Periodic<RetentionCounts>;
  private readonly batchSize: number;
  private readonly maxBatches: number;
  private stopping = false;

  constructor(
    private readonly o: {
      store: Store;
      clock: Clock;
      events: EngineEvents;
      periods: RetentionPeriods;
      /** Where removed rows are written before they are deleted; null: removed without a copy. */
      archive: ArchiveWriter | null;
      /** Payload blobs: each run sweeps those of removed jobs and those a cut-off create left, after the jobs. */
      blobs?: Pick<PayloadBlobs, "sweep">;
      tuning?: Pick<RetentionOptions, "intervalMs" | "batchSize" | "maxBatchesPerRun">;
    },
  ) {
    this.loop = new Periodic(o.clock, o.tuning?.intervalMs ?? 60_000, () => this.pass());
    this.batchSize = o.tuning?.batchSize ?? 500;
    this.maxBatches = o.tuning?.maxBatchesPerRun ?? 20;
  }

  start(): void {
    this.stopping = false;
    this.loop.start();
  }

  /** Cancels the next run and waits for the current one, which stops after its current batch. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop.stop();
  }

  /**
   * One run: each kind in bounded batches, at most maxBatchesPerRun of them.
   * Answers the rows removed by kind; never rejects (a failing kind is
   * reported as an "error" event and the others still run). Concurrent calls
   * share the run in progress.
   */
  runOnce(): Promise<RetentionCounts> {
    return this.loop.runOnce();
  }

  private async pass(): Promise<RetentionCounts> {
    const started = performance.now();
    const cutoffs = retentionCutoffs(this.o.periods, this.o.clock.now());
    const counts = Object.fromEntries(RETENTION_KINDS.map((k) => [k, 0])) as RetentionCounts;
    for (const kind of RETENTION_KINDS) {
      // in order: a job goes once its executions have (a one-off's with its last one: counted as a job)
      try {
        const purged = await this.purge(kind, cutoffs[kind]);
        counts[kind] += purged.deleted;
        counts.jobs += purged.jobs;
      } catch (error) {
        // The "error" event is both the metric and the log line (engine/event-log.ts).
        this.o.events.emit("error", { where: "retention", error });
      }
    }
    // After the jobs: their blobs were marked gone as they went.
    if (this.o.blobs && !this.stopping) {
      try {
        const deleted = await this.o.blobs.sweep();
        if (deleted > 0) this.o.events.emit("retention:purged", { kind: "blobs", deleted });
      } catch (error) {
        this.o.events.emit("error", { where: "retention", error });
      }
    }
    this.o.events.emit("retention:ran", { deleted: counts, ms: Math.round(performance.now() - started) });
    return counts;
  }

  /** A kind's batches: its rows removed, and the one-off jobs that went with executions. */
  private async purge(kind: RetentionKind, before: number): Promise<{ deleted: number; jobs: number }> {
    const total = { deleted: 0, jobs: 0 };
    for (let batch = 0; batch < this.maxBatches && !this.stopping; batch++) {
      const { deleted, jobs = 0, full } = await this.batch(kind, before);
      total.deleted += deleted;
      total.jobs += jobs;
      if (deleted > 0) this.o.events.emit("retention:purged", { kind, deleted });
      if (jobs > 0) this.o.events.emit("retention:purged", { kind: "jobs", deleted: jobs });
      if (!full) break;
      // The SQLite store answers synchronously: give leases and dispatch a turn between batches.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return total;
  }

  /** One batch: how many rows went (and one-off jobs with them), and whether the batch was full (so more may be due). */
  private async batch(kind: RetentionKind, before: number): Promise<{ deleted: number; jobs?: number; full: boolean }> {
    const params = { kind, before, limit: this.batchSize };
    if (!this.o.archive) {
      const purged = await this.o.store.retentionPurge(params);
      return { ...purged, full: purged.deleted >= this.batchSize };
    }
    const rows = await this.o.store.retentionExpired(params);
    if (rows.length === 0) return { deleted: 0, full: false };
    // Durable before the delete: a crash between the two archives the rows again, never loses them.
    await this.o.archive.write(rows);
    // The rows of the kind: the one-off jobs read with executions go with them by the store's own rule.
    const only = rows.filter((r) => r.kind === kind);
    const purged = await this.o.store.retentionPurge({ ...params, only });
    return { ...purged, full: only.length >= this.batchSize };
  }
}
