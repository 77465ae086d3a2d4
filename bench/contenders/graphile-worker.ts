// graphile-worker on PostgreSQL, configured as its performance page does:
// the local queue (jobs fetched and locked in batches, handed to the
// concurrent slots without a round trip each), batched completions and
// failures (completeJobBatchDelay / failJobBatchDelay 0), addJobs() of arrays
// for creation (one add_jobs call). Jobs due in the future are found by
// polling (pollInterval); jobs due now are announced by NOTIFY.
import { makeWorkerUtils, run, type Runner, type WorkerUtils } from "graphile-worker";
import pg from "pg";
import type { BenchJob, Contender, ContenderContext, Started } from "../contender.js";
import { freshDatabase, postgresVersion, type FreshDatabase } from "../services.js";
import { packageVersion } from "../versions.js";

const POLL_MS = Number(process.env.BENCH_GRAPHILE_POLL_MS ?? 100);
const LOCAL_QUEUE_SIZE = 500;
/**
 * Its docs suggest concurrency + 1 or + 2; this PostgreSQL allows 100
 * connections in all, and with the local queue and batched completions a
 * no-op job never holds a connection, so fewer do.
 */
const MAX_POOL = Number(process.env.BENCH_GRAPHILE_POOL ?? 20);

// graphile-worker logs every job at info level; keep warnings and errors only
// (less the pool-size warning: see MAX_POOL).
const quietLogger = {
  scope: () => quietLogger,
  error: (m: string) => console.error(`graphile-worker: ${m}`),
  warn: (m: string) => void (m.includes("maxPoolSize") || console.error(`graphile-worker: ${m}`)),
  info: () => {},
  debug: () => {},
};

export class GraphileWorker implements Contender {
  readonly name = "graphile-worker";
  version = `graphile-worker ${packageVersion("graphile-worker")}`;
  settings = "";
  private utils: WorkerUtils | null = null;
  private runner: Runner | null = null;
  private db: FreshDatabase | null = null;
  private pool: pg.Pool | null = null;
  private ctx!: ContenderContext;

  async setup(ctx: ContenderContext): Promise<void> {
    this.ctx = ctx;
    this.db = await freshDatabase(this.name, ctx.runId);
    this.version = `graphile-worker ${packageVersion("graphile-worker")}, pg ${packageVersion("pg")} (PostgreSQL ${await postgresVersion()})`;
    this.settings =
      `fresh database; addJobs() of arrays of 1,000 with runAt; run() with concurrency ${ctx.concurrency}, ` +
      `preset.worker { localQueue: { size: ${LOCAL_QUEUE_SIZE} }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } (as on its performance page), ` +
      `pollInterval ${POLL_MS} ms (default 2000; it is how future-dated jobs are found), maxPoolSize ${MAX_POOL}, LISTEN/NOTIFY for new jobs`;
    // One pool we own, so teardown can end it before the database is dropped.
    this.pool = new pg.Pool({ connectionString: this.db.url, max: MAX_POOL });
    this.pool.on("error", () => {});
    this.pool.on("connect", (client) => client.on("error", () => {}));
    this.utils = await makeWorkerUtils({ pgPool: this.pool, logger: quietLogger as never });
    await this.utils.migrate();
  }

  async enqueue(jobs: BenchJob[]): Promise<void> {
    await this.utils!.addJobs(jobs.map((j) => ({ identifier: "bench", payload: { seq: j.seq }, runAt: new Date(j.dueAt) })));
  }

  async startWorkers(started: Started): Promise<void> {
    this.runner = await run({
      pgPool: this.pool!,
      concurrency: this.ctx.concurrency,
      maxPoolSize: MAX_POOL,
      pollInterval: POLL_MS,
      noHandleSignals: true,
      logger: quietLogger as never,
      taskList: {
        bench: async (payload) => {
          started((payload as { seq: number }).seq);
        },
      },
      preset: { worker: { localQueue: { size: LOCAL_QUEUE_SIZE }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    });
  }

  async outstanding(): Promise<number> {
    // Finished jobs are deleted; what is left is waiting, locked or awaiting its batched completion.
    const rows = await this.utils!.withPgClient((c) => c.query("SELECT count(*)::int AS n FROM graphile_worker._private_jobs"));
    return (rows.rows[0] as { n: number }).n;
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
    await this.runner?.stop().catch(() => {});
    if (this.utils) await Promise.resolve(this.utils.release()).catch(() => {});
    await this.pool?.end().catch(() => {});
    await this.db?.drop();
  }
}
