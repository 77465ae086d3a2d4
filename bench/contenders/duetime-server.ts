// duetime server: a `duetime serve` child process (SQLite store), SDK workers
// over HTTP in this process, as a user would deploy it.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { DuetimeClient } from "../../src/sdk/client.js";
import { Worker } from "../../src/sdk/worker.js";
import type { BenchJob, Contender, ContenderContext } from "../contender.js";
import { assertCreated, BENCH_POOL, benchJobs } from "./duetime-jobs.js";

const ROOT = new URL("../../", import.meta.url).pathname;

export class DuetimeServer implements Contender {
  readonly name = "duetime-server";
  readonly settings = "duetime serve child process, SQLite WAL synchronous=FULL; POST /v1/jobs:batch of 1,000; SDK Worker over keep-alive HTTP, long poll, batched acks";
  private child: ChildProcess | null = null;
  private client!: DuetimeClient;
  private url = "";
  private worker: Worker | null = null;
  private concurrency = 0;

  async setup(ctx: ContenderContext): Promise<void> {
    this.concurrency = ctx.concurrency;
    this.child = spawn(
      process.execPath,
      [join(ROOT, "bin/duetime.js"), "serve", "--port", "0", "--store", `sqlite:${join(ctx.dir, "duetime.db")}`, "--log-level", "warn"],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    this.url = await new Promise<string>((resolve, reject) => {
      let out = "";
      this.child!.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const m = /http:\/\/[^\s]+/.exec(out);
        if (m) resolve(m[0]);
      });
      this.child!.once("exit", (code) => reject(new Error(`duetime serve exited with ${code}`)));
    });
    this.client = new DuetimeClient({ url: this.url });
  }

  async enqueue(jobs: BenchJob[]): Promise<void> {
    assertCreated(await this.client.createJobs(benchJobs(jobs)));
  }

  async startWorkers(started: (seq: number) => void): Promise<void> {
    this.worker = new Worker({
      url: this.url,
      pool: BENCH_POOL,
      concurrency: this.concurrency,
      waitSeconds: 5,
      handleSignals: false,
      handler: async (job) => {
        started((job.payload as { seq: number }).seq);
      },
    });
    void this.worker.run();
  }

  async teardown(): Promise<void> {
    await this.worker?.shutdown();
    await this.client.close?.();
    if (this.child && this.child.exitCode === null) {
      const exited = new Promise((r) => this.child!.once("exit", r));
      this.child.kill("SIGTERM");
      await exited;
    }
  }
}
