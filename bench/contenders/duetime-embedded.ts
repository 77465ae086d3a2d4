// duetime embedded: engine and workers in this process, SQLite store.
import { join } from "node:path";
import { createDuetime, type Duetime } from "../../src/embedded/index.js";
import type { BenchJob, Contender, ContenderContext, Started } from "../contender.js";
import {
  assertCreated,
  BENCH_DURABILITY,
  BENCH_POOL,
  benchJobs,
  durabilityLabel,
  duetimeVersion,
  sqliteBytes,
  WORKER_TUNING,
} from "./duetime-jobs.js";

/** The engine this process loaded (once, at import): later src/ edits reach only new processes. */
const LOADED_VERSION = duetimeVersion();

export class DuetimeEmbedded implements Contender {
  readonly name = "duetime-embedded";
  version = LOADED_VERSION;
  settings = "";
  readonly cron = true;
  private duetime: Duetime | null = null;
  private ctx!: ContenderContext;
  private file = "";

  async setup(ctx: ContenderContext): Promise<void> {
    this.ctx = ctx;
    this.file = join(ctx.dir, "duetime.db");
    this.settings =
      `SQLite WAL ${durabilityLabel("sqlite")} (${this.file.replace(ctx.dir, "<tmp>")}); createJobs() batches of 1,000; ` +
      `one in-process Worker, concurrency ${ctx.concurrency}, lease long poll waitSeconds 5, SDK defaults (prefetch "auto", batched acks: ackDelayMs 20, maxAckBatch 1,000); engine defaults${WORKER_TUNING.label}`;
    this.duetime = await createDuetime({ store: `sqlite:${this.file}`, storeOptions: { durability: BENCH_DURABILITY }, httpTargets: false });
  }

  async enqueue(jobs: BenchJob[]): Promise<void> {
    assertCreated(await this.duetime!.client.createJobs(benchJobs(jobs)));
  }

  async startWorkers(started: Started): Promise<void> {
    const worker = this.duetime!.worker({
      pool: BENCH_POOL,
      concurrency: this.ctx.concurrency,
      waitSeconds: 5,
      ...WORKER_TUNING.options,
      handler: async (job) => {
        started((job.payload as { seq: number }).seq);
      },
    });
    void worker.run();
  }

  async outstanding(): Promise<number> {
    const s = await this.duetime!.client.poolStats(BENCH_POOL);
    return s.pending + s.queued + s.running;
  }

  async storeBytes(): Promise<number> {
    return sqliteBytes(this.file);
  }

  servicePids(): number[] {
    return [];
  }

  schedulerPids(): number[] {
    return [];
  }

  async teardown(): Promise<void> {
    await this.duetime?.stop();
  }
}
