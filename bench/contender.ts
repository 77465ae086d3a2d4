// A contender is one scheduler set up the way its docs recommend for
// throughput. Adding one (a peer, or duetime on another store) is one file in
// contenders/ implementing this interface, plus a line in run.ts.

export interface BenchJob {
  /** Sequence number, carried in the payload so the handler can report it. */
  seq: number;
  /** When the job is due (epoch ms). */
  dueAt: number;
}

export interface ContenderContext {
  /** A fresh directory for this run's files. */
  dir: string;
  /** Total handlers running at once, the same for every contender. */
  concurrency: number;
}

export interface Contender {
  readonly name: string;
  /** The settings used, written into the results. */
  readonly settings: string;
  /** Fresh store, server or database; nothing enqueued yet. */
  setup(ctx: ContenderContext): Promise<void>;
  /** Enqueues jobs (the harness passes batches of up to 1,000). */
  enqueue(jobs: BenchJob[]): Promise<void>;
  /** Starts workers running a no-op handler that calls started(seq) when it begins. */
  startWorkers(started: (seq: number) => void): Promise<void>;
  teardown(): Promise<void>;
}
