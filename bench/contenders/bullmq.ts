// BullMQ on Redis, as its docs recommend for throughput: Queue.addBulk for
// inserts (one MULTI per call), one Worker with `concurrency` (jobs run
// concurrently in one process), auto-removal of finished jobs so Redis does
// not grow, delayed jobs via `delay` (the worker itself promotes them; no
// QueueScheduler since BullMQ 2). Its own dedicated Redis db, flushed per run.
import { Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { BenchJob, Contender, ContenderContext, Started } from "../contender.js";
import { redisAdmin, redisInfo, redisTarget } from "../services.js";
import { pidsNamed } from "../procstat.js";
import { packageVersion } from "../versions.js";

export class BullMQ implements Contender {
  readonly name = "bullmq";
  version = `bullmq ${packageVersion("bullmq")}, ioredis ${packageVersion("ioredis")}`;
  settings = "";
  private queue: Queue | null = null;
  private worker: Worker | null = null;
  private admin: Redis | null = null;
  private queueName = "";
  private ctx!: ContenderContext;
  private baseMemory = 0;

  async setup(ctx: ContenderContext): Promise<void> {
    this.ctx = ctx;
    this.admin = await redisAdmin();
    await this.admin.flushdb();
    this.version += `, Redis ${await redisInfo(this.admin, "redis_version")}`;
    this.baseMemory = Number(await redisInfo(this.admin, "used_memory"));
    const t = redisTarget();
    this.queueName = `bench-${ctx.runId}`;
    this.settings =
      `Redis ${t.host}:${t.port} db ${t.db}; Queue.addBulk of 1,000 with opts { delay, removeOnComplete: true, removeOnFail: true }; ` +
      `one Worker, concurrency ${ctx.concurrency}, defaults otherwise (drainDelay 5 s blocking wait, stalledInterval 30 s, lockDuration 30 s)`;
    this.queue = new Queue(this.queueName, { connection: { ...t } });
    await this.queue.waitUntilReady();
  }

  async enqueue(jobs: BenchJob[]): Promise<void> {
    const now = Date.now();
    await this.queue!.addBulk(
      jobs.map((j) => ({
        name: "bench",
        data: { seq: j.seq },
        opts: { delay: Math.max(0, j.dueAt - now), removeOnComplete: true, removeOnFail: true },
      })),
    );
  }

  async startWorkers(started: Started): Promise<void> {
    this.worker = new Worker(
      this.queueName,
      async (job) => {
        started((job.data as { seq: number }).seq);
      },
      { connection: { ...redisTarget(), maxRetriesPerRequest: null }, concurrency: this.ctx.concurrency },
    );
    this.worker.on("error", (e) => console.error(`bullmq worker: ${e.message}`));
    await this.worker.waitUntilReady();
  }

  async outstanding(): Promise<number> {
    const c = await this.queue!.getJobCounts("wait", "active", "delayed", "prioritized", "waiting-children");
    return Object.values(c).reduce((a, b) => a + b, 0);
  }

  /** Redis keeps everything in memory: the growth of used_memory since the run began. */
  async storeBytes(): Promise<number> {
    return Math.max(0, Number(await redisInfo(this.admin!, "used_memory")) - this.baseMemory);
  }

  servicePids(): number[] {
    return pidsNamed(["redis-server"]);
  }

  schedulerPids(): number[] {
    return [];
  }

  async teardown(): Promise<void> {
    await this.worker?.close();
    await this.queue?.close();
    if (this.admin) {
      await this.admin.flushdb().catch(() => {});
      this.admin.disconnect();
    }
  }
}
