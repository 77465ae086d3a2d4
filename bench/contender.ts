// A contender is one scheduler set up the way its docs recommend for
// throughput. Adding one (a peer, or duetime on another store or with more
// nodes) is one file in contenders/ implementing this interface, plus a line
// in contenders/index.ts. The scenarios (scenarios.ts) only ever talk to this
// interface, so every contender is measured the same way.

export interface BenchJob {
  /** Sequence number, carried in the payload so the handler can report it. */
  seq: number;
  /** When the job is due (epoch ms); at or before now means "run now". */
  dueAt: number;
  /** A recurring job instead (the cron herd): its first occurrence is dueAt. Only contenders with `cron` set are given one. */
  recurring?: true;
}

export interface ContenderContext {
  /** A fresh directory for this run's files (deleted afterwards). */
  dir: string;
  /** Total handlers running at once, the same for every contender. */
  concurrency: number;
  /** A short unique tag for this run (`<pid>_<n>`), for database and queue names. */
  runId: string;
}

/** Called by the contender's no-op handler as soon as it begins, with the job's seq. */
export type Started = (seq: number) => void;

export interface Contender {
  readonly name: string;
  /** Library and version, e.g. "bullmq 6.7.0 (Redis 7.0.15)"; filled in by setup(). */
  readonly version: string;
  /** The settings used (insert API, concurrency, poll intervals…), written into the results. */
  readonly settings: string;
  /** Creates recurring jobs (BenchJob.recurring) through its own cron support; without it the cron herd is not run for it. */
  readonly cron?: boolean;
  /** Fresh store, server or database; nothing enqueued yet, no worker running. */
  setup(ctx: ContenderContext): Promise<void>;
  /** Enqueues jobs in one bulk call (the harness passes batches of up to 1,000). */
  enqueue(jobs: BenchJob[]): Promise<void>;
  /** Starts workers with ctx.concurrency in total, running a no-op handler that calls started(seq) first. */
  startWorkers(started: Started): Promise<void>;
  /**
   * Asked once every job has started: how many the store still holds as not
   * completed (running, or finished but awaiting a batched acknowledgement).
   */
  outstanding(): Promise<number>;
  /** Bytes the store holds for this run (database size, SQLite files, Redis memory). */
  storeBytes(): Promise<number>;
  /**
   * Processes other than this one that run the scheduler (e.g. a server child
   * process), so the harness can read their RSS and CPU from /proc. Empty when
   * everything runs in this process.
   */
  schedulerPids(): number[];
  /**
   * Processes of the shared services working for this run: the PostgreSQL
   * backends connected to its database, or the Redis server. Their CPU while
   * idle is part of what holding far-future jobs costs.
   */
  servicePids(): number[];
  /**
   * PostgreSQL contenders only: rows written to the run's database so far
   * (FreshDatabase.rowsWritten); the scenarios report the growth per job.
   */
  rowsWritten?(): Promise<number>;
  /**
   * duetime with `--due-index` only: the Redis keys of this run's due index
   * (bytes) and the Redis server (pids). Reported beside the store's own size
   * and CPU, not inside them, so the store-only path compares line by line.
   */
  indexBytes?(): Promise<number>;
  indexPids?(): number[];
  /**
   * duetime with `--due-index` only, summed over the nodes' /metrics: owned
   * shards not yet covered by a reconciliation pass in the index's generation
   * (duetime_due_index_rebuilding_shards), and entries the reconcilers have
   * added back so far (duetime_due_index_repaired_total{repair="added"}).
   */
  indexState?(): Promise<{ rebuilding: number; added: number }>;
  /** duetime with `--due-index` only: deletes the run's index keys, as a Redis that lost its data would. */
  dropIndex?(): Promise<void>;
  /** Stops workers and servers, drops the database; must not throw if setup failed half-way. */
  teardown(): Promise<void>;
}
