// pg-boss on PostgreSQL, as its docs recommend for throughput: insert() of
// arrays for creation (one statement per call), work() with batchSize, several
// work() loops for concurrency (pg-boss 10 dropped teamSize), the shortest
// polling interval it allows (0.5 s). Note that pg-boss 10's work() loop waits
// out its polling interval after every fetch, even a full one, so a loop moves
// at most batchSize jobs per interval: with the same total concurrency as the
// others (batchSize × loops), it tops out at concurrency / 0.5 s jobs/s.
import PgBoss from "pg-boss";
import type { BenchJob, Contender, ContenderContext, Started } from "../contender.js";
import { freshDatabase, postgresVersion, type FreshDatabase } from "../services.js";
import { packageVersion } from "../versions.js";

const QUEUE = "bench";
const POLL_SECONDS = 0.5;
const LOOPS = 10;

export class PgBossContender implements Contender {
  readonly name = "pg-boss";
  version = `pg-boss ${packageVersion("pg-boss")}`;
  settings = "";
  private boss: PgBoss | null = null;
  private db: FreshDatabase | null = null;
  private ctx!: ContenderContext;

  async setup(ctx: ContenderContext): Promise<void> {
    this.ctx = ctx;
    this.db = await freshDatabase(this.name, ctx.runId);
    this.version = `pg-boss ${packageVersion("pg-boss")}, pg ${packageVersion("pg")} (PostgreSQL ${await postgresVersion()})`;
    const batchSize = Math.max(1, Math.floor(ctx.concurrency / LOOPS));
    this.settings =
      `fresh database; queue created with createQueue() (policy standard); insert() of arrays of 1,000 with startAfter; ` +
      `${LOOPS} work() loops × batchSize ${batchSize} = ${LOOPS * batchSize} jobs in flight, pollingIntervalSeconds ${POLL_SECONDS} (the minimum); ` +
      `pool max 10 (default), supervise/maintenance on (defaults), cron scheduling off (schedule: false)`;
    this.boss = new PgBoss({ connectionString: this.db.url, schedule: false });
    this.boss.on("error", (e) => console.error(`pg-boss: ${(e as Error).message}`));
    await this.boss.start();
    await this.boss.createQueue(QUEUE);
  }

  async enqueue(jobs: BenchJob[]): Promise<void> {
    await this.boss!.insert(jobs.map((j) => ({ name: QUEUE, data: { seq: j.seq }, startAfter: new Date(j.dueAt) })));
  }

  async startWorkers(started: Started): Promise<void> {
    const batchSize = Math.max(1, Math.floor(this.ctx.concurrency / LOOPS));
    for (let i = 0; i < LOOPS; i++) {
      await this.boss!.work<{ seq: number }>(QUEUE, { batchSize, pollingIntervalSeconds: POLL_SECONDS }, async (jobs) => {
        for (const job of jobs) started(job.data.seq);
      });
    }
  }

  async outstanding(): Promise<number> {
    return this.boss!.getQueueSize(QUEUE, { before: "completed" });
  }

  async storeBytes(): Promise<number> {
    return this.db!.sizeBytes();
  }

  servicePids(): number[] {
    return this.db?.backendPids() ?? [];
  }

  rowsWritten(): Promise<number> {
    return this.db!.rowsWritten();
  }

  schedulerPids(): number[] {
    return [];
  }

  async teardown(): Promise<void> {
    await this.boss?.stop({ graceful: true, wait: true, timeout: 10_000 }).catch(() => {});
    await this.db?.drop();
  }
}
