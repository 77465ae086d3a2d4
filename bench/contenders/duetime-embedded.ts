// duetime embedded: engine and workers in this process, SQLite store.
import { join } from "node:path";
import { createDuetime, type Duetime } from "../../src/embedded/index.js";
import type { Worker } from "../../src/sdk/worker.js";
import type { BenchJob, Contender, ContenderContext } from "../contender.js";
import { assertCreated, BENCH_POOL, benchJobs } from "./duetime-jobs.js";

export class DuetimeEmbedded implements Contender {
  readonly name = "duetime-embedded";
  readonly settings = "SQLite WAL synchronous=FULL; createJobs batches of 1,000; one in-process Worker, lease long poll, batched acks";
  private duetime!: Duetime;
  private worker: Worker | null = null;
  private concurrency = 0;

  async setup(ctx: ContenderContext): Promise<void> {
    this.concurrency = ctx.concurrency;
    this.duetime = await createDuetime({ store: `sqlite:${join(ctx.dir, "duetime.db")}`, httpTargets: false });
  }

  async enqueue(jobs: BenchJob[]): Promise<void> {
    assertCreated(await this.duetime.client.createJobs(benchJobs(jobs)));
  }

  async startWorkers(started: (seq: number) => void): Promise<void> {
    this.worker = this.duetime.worker({
      pool: BENCH_POOL,
      concurrency: this.concurrency,
      waitSeconds: 5,
      handler: async (job) => {
        started((job.payload as { seq: number }).seq);
      },
    });
    void this.worker.run();
  }

  async teardown(): Promise<void> {
    await this.duetime.stop();
  }
}
