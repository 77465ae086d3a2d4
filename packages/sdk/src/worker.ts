// One concept, long on purpose: the lease loop, its heartbeats and its
// acknowledgements share the slots and the stop sequence.
//
// Worker: leases executions of one pool, runs a handler on each with bounded
// concurrency, heartbeats while they run, and acknowledges in batches.
//
// The loop, in full:
//   1. wait for a free slot (while every slot is busy, finished attempts are
//      acknowledged by the AckBuffer's timer through completeMany/failMany);
//   2. if attempts are still running, wait up to ackDelayMs for more of them to
//      finish (ends early when all slots are free or maxAckBatch acks wait);
//   3. one lease call: max = free slots, long poll waitSeconds, carrying every
//      pending ack; start a handler for each item it returns;
//   4. on a failed lease call (the client has already retried), put the acks
//      back, report, back off (up to a few seconds) and go round again; after
//      an empty answer that came back within a second, pause out the second.
// shutdown() aborts the long poll, lets running handlers finish, then drains
// the acks. An aborted lease whose items the server had already granted
// leaves them leased to nobody until their lease expires (they then run again
// as a new attempt); acks carried by an aborted lease are sent again (they
// are idempotent).
//
// With transport "grpc" the lease calls give way to one Work stream
// (grpc-work.ts): the worker grants the stream credit for its room (free
// slots plus prefetch) as the loop above leases: once running handlers
// finished (or after ackDelayMs), or, while the server still holds credit
// for half the room, after ackDelayMs; the server pushes executions as they
// become ready. The acks ride on the credit (the server writes them with the
// lease it starts); heartbeats go on the same stream. Slots, prefetch,
// handlers, heartbeats and the drain are the same. A stream that ends (the
// server stopping, a broken connection) is opened again after a backoff;
// what was leased through it runs on and is acknowledged on the next one.

import { type AckItem, type ErrorRecord, fenceOf, type LeaseRequest, type LeaseResponse, type LeasedExecution } from "./api.js";
import type { WorkerApi } from "./operations.js";
import { AckBuffer, MAX_ACKS_PER_CALL, type PendingAcks } from "./acks.js";
import { backoffDelay, later, pause, realClock, type SdkClock } from "./backoff.js";
import { instanceId } from "./instance-id.js";
import { DuetimeClient, type ClientOptions } from "./client.js";
import { WorkStream, type WorkStreamOptions } from "./grpc-work.js";
import { AttemptAbortedError, DuetimeApiError, coerceError, hasErrorCode, type AbortReason } from "./errors.js";
import type { WorkerEvent, WorkerState } from "./events.js";
import { rejectUnknownOptions, requireInteger } from "./options.js";
import { traced } from "./tracing.js";

export interface HandlerContext {
  /** Aborted when the attempt is lost (409 LEASE_LOST), cancelled, or past its timeoutSeconds; signal.reason is an AttemptAbortedError. */
  signal: AbortSignal;
  /** The attempt number: the fencing token of this run. */
  attempt: number;
  /** Extends the lease now (it is also extended every leaseSeconds/3). Rejects with signal.reason once the attempt is lost or cancelled. */
  heartbeat(): Promise<void>;
  workerId: string;
}

/** The return value becomes the execution's `result` (it must be JSON-serialisable); a throw fails the attempt (see coerceError). */
export type Handler = (job: LeasedExecution, ctx: HandlerContext) => Promise<unknown>;

export interface WorkerOptions {
  /**
   * Server URL: http(s)://host:port of its HTTP API, or with transport "grpc"
   * grpc://host:port (grpcs:// for TLS) of its gRPC port. Exactly one of url and api.
   */
  url?: string;
  /**
   * "http" (default): lease calls with long polls. "grpc": one Work stream that
   * pushes executions as they become ready (the server's --grpc-port; needs
   * @grpc/grpc-js and @grpc/proto-loader installed).
   */
  transport?: "http" | "grpc";
  /** PEM of the CA that signed a grpcs:// server's certificate (default: the system's roots). */
  ca?: string | Buffer;
  /** Any API with the worker protocol's calls, e.g. the embedded engine's client (in-process mode). Exactly one of url and api. */
  api?: WorkerApi;
  /** API key (HTTP mode). */
  token?: string;
  /** More options for the HTTP client the worker creates (HTTP transport). */
  client?: Omit<ClientOptions, "url" | "token">;
  pool: string;
  handler: Handler;
  /** Handlers running at once (default 10). */
  concurrency?: number;
  /**
   * Leased attempts held ready beyond the running ones (default "auto"). With
   * prefetch, a lease call fetches work for slots that are about to free, so
   * fast handlers never wait for a round trip, and a busy worker leases and
   * acknowledges in bigger batches. "auto" holds what the slots finish in
   * about 100 ms at the handlers' recent pace (none until a handler has
   * finished, at most 4 × concurrency); 0 turns it off. A prefetched
   * attempt's lease ticks while it waits: it is heartbeaten when it starts
   * late, and skipped (it runs again elsewhere) when most of its lease is gone.
   */
  prefetch?: number | "auto";
  /** Default `${hostname}-${pid}-${random}`. */
  workerId?: string;
  /** Lease length asked for each attempt (default 30); heartbeats go every leaseSeconds/3. */
  leaseSeconds?: number;
  /** Long-poll wait of a lease call (default 20; the HTTP transport's). */
  waitSeconds?: number;
  /** Acks pending before a batch call goes out at once (default 1,000, the most one call carries; ackDelayMs bounds the wait). */
  maxAckBatch?: number;
  /** How long a finished attempt waits for others before a batch ack call (default 20 ms). */
  ackDelayMs?: number;
  /** On shutdown, abort running handlers' signals after this long (reason "shutdown"; default: wait for them). */
  shutdownGraceMs?: number;
  /** SIGTERM and SIGINT call shutdown() (default true with url, false with api). A second signal is left to Node's default. */
  handleSignals?: boolean;
  onEvent?: (event: WorkerEvent) => void;
  /** The clock of every wait and duration (default real time); duetime/testing passes its fake clock. */
  clock?: SdkClock;
  /** Where "error" and "lease:lost" events are logged (default console when onEvent is not given; null for silence). */
  logger?: Pick<Console, "warn"> | null;
}

const WORKER_OPTIONS = [
  "url",
  "transport",
  "ca",
  "api",
  "token",
  "client",
  "pool",
  "handler",
  "concurrency",
  "prefetch",
  "workerId",
  "leaseSeconds",
  "waitSeconds",
  "maxAckBatch",
  "ackDelayMs",
  "shutdownGraceMs",
  "handleSignals",
  "onEvent",
  "clock",
  "logger",
] as const satisfies readonly (keyof WorkerOptions)[];

/** Backoff of the loop after a failed lease call (the client has retried already): up to a few seconds. */
const LOOP_BACKOFF = { baseMs: 250, maxMs: 5_000 };
/** Never wait longer than this for a server's Retry-After before trying again. */
const MAX_LOOP_WAIT_MS = 60_000;
/**
 * An empty lease answer that came back sooner than this is followed by a
 * pause up to this long, so a worker never spins (waitSeconds 0, or a server
 * that does not long-poll): it then polls about once a second.
 */
const MIN_EMPTY_POLL_MS = 1_000;
/**
 * "auto" prefetch holds what the slots finish in this long. Measured on a
 * herd of 20,000 (docs/design-notes.md): batches of a few hundred cut the
 * server's drain by a fifth to two fifths, and a tenth of a second of
 * waiting costs a long handler's job nothing that matters.
 */
const AUTO_PREFETCH_HORIZON_MS = 100;
const AUTO_PREFETCH_MAX_PER_SLOT = 4;
/** Weight of the newest handler duration in the running average that sizes "auto" prefetch. */
const HANDLER_PACE_WEIGHT = 0.1;

/** What a leased attempt needs of the server: heartbeats and acknowledgements. */
type AttemptApi = Pick<WorkerApi, "heartbeat" | "completeMany" | "failMany">;

interface Running {
  job: LeasedExecution;
  /** Made when the handler reads ctx.signal or the attempt is aborted: most handlers never look, and one per job shows in a herd's profile. */
  controller?: AbortController;
  startedAt: number;
  /** Set when the outcome must not be acknowledged. */
  dropped?: AbortReason;
  cancelHeartbeat?: () => void;
  cancelTimeout?: () => void;
  beating?: Promise<void>;
}

export class Worker {
  readonly workerId: string;
  readonly pool: string;
  private readonly api: AttemptApi;
  /** The lease call of the HTTP and in-process transports; undefined with gRPC. */
  private readonly leaseCall: WorkerApi["lease"] | undefined;
  /** Fetches a payload kept by reference (GET /v1/blobs/{blobId}); undefined with gRPC, whose server sends every payload inline. */
  private readonly fetchBlob: WorkerApi["getBlob"];
  /** Where the gRPC transport opens its Work streams; undefined over HTTP. */
  private readonly streamAt: Pick<WorkStreamOptions, "url" | "token" | "ca"> | undefined;
  private stream: WorkStream | undefined;
  private readonly ownedClient: DuetimeClient | undefined;
  private readonly handler: Handler;
  private readonly concurrency: number;
  private readonly prefetch: number | "auto";
  /** Running average of handler durations (ms), for "auto" prefetch; undefined until one finishes. */
  private handlerMs: number | undefined;
  /** Leased attempts waiting for a free slot (prefetch), with when they were leased. */
  private readonly buffer: { job: LeasedExecution; leasedAt: number }[] = [];
  private readonly leaseSeconds: number;
  private readonly waitSeconds: number;
  private readonly maxAckBatch: number;
  private readonly ackDelayMs: number;
  private readonly shutdownGraceMs: number | undefined;
  private readonly handleSignals: boolean;
  private readonly onEvent: ((event: WorkerEvent) => void) | undefined;
  private readonly logger: Pick<Console, "warn"> | null;
  private readonly clock: SdkClock;
  private readonly acks: AckBuffer;
  private readonly running = new Map<string, Running>();
  private readonly changed = new Notifier();
  private readonly stopping = new AbortController();
  private current: WorkerState = "idle";
  private done: Promise<void> | undefined;
  private removeSignalHandlers: (() => void) | undefined;

  constructor(options: WorkerOptions) {
    rejectUnknownOptions("Worker", options, WORKER_OPTIONS);
    if ((options.url === undefined) === (options.api === undefined)) throw new TypeError("Worker: give exactly one of url and api");
    const transport = options.transport ?? "http";
    if (transport !== "http" && transport !== "grpc") throw new TypeError(`Worker: transport must be "http" or "grpc", got ${String(transport)}`);
    if (transport === "grpc" && !/^grpcs?:\/\/[^/]+\/?$/.test(options.url ?? ""))
      throw new TypeError('Worker: transport "grpc" needs url grpc://host:port (or grpcs:// for TLS), and no api');
    if (transport === "grpc" && options.client !== undefined) throw new TypeError('Worker: client options are for the HTTP transport, not "grpc"');
    if (transport === "http" && options.ca !== undefined)
      throw new TypeError('Worker: ca is for transport "grpc"; give the HTTP client a dispatcher');
    if (typeof options.pool !== "string" || options.pool === "") throw new TypeError("Worker: pool must be a non-empty string");
    if (typeof options.handler !== "function") throw new TypeError("Worker: handler must be a function");
    this.pool = options.pool;
    this.handler = options.handler;
    this.concurrency = requireInteger("Worker", "concurrency", options.concurrency ?? 10, 1, 10_000);
    this.prefetch =
      options.prefetch === "auto" || options.prefetch === undefined ? "auto" : requireInteger("Worker", "prefetch", options.prefetch, 0, 10_000);
    this.leaseSeconds = requireInteger("Worker", "leaseSeconds", options.leaseSeconds ?? 30, 1, 3600);
    this.waitSeconds = requireInteger("Worker", "waitSeconds", options.waitSeconds ?? 20, 0, 60);
    this.maxAckBatch = requireInteger("Worker", "maxAckBatch", options.maxAckBatch ?? MAX_ACKS_PER_CALL, 1, MAX_ACKS_PER_CALL);
    this.ackDelayMs = requireInteger("Worker", "ackDelayMs", options.ackDelayMs ?? 20, 0, 60_000);
    this.shutdownGraceMs =
      options.shutdownGraceMs === undefined ? undefined : requireInteger("Worker", "shutdownGraceMs", options.shutdownGraceMs, 0, 2 ** 31 - 1);
    this.workerId = options.workerId ?? instanceId();
    this.handleSignals = options.handleSignals ?? options.url !== undefined;
    this.onEvent = options.onEvent;
    this.logger = options.logger !== undefined ? options.logger : options.onEvent ? null : console;
    this.clock = options.clock ?? realClock;
    this.ownedClient = undefined;
    if (transport === "grpc") {
      this.streamAt = { url: options.url!, ...(options.token ? { token: options.token } : {}), ...(options.ca ? { ca: options.ca } : {}) };
      this.leaseCall = undefined;
      this.fetchBlob = undefined;
      const closed = () => Promise.reject(new DuetimeApiError("UNAVAILABLE", "no work stream is open", { status: 503 }));
      this.api = {
        heartbeat: (executionId, request) => this.stream?.heartbeat(executionId, request) ?? closed(),
        completeMany: (items) => this.stream?.completeMany(items) ?? closed(),
        failMany: (items) => this.stream?.failMany(items) ?? closed(),
      };
    } else {
      this.streamAt = undefined;
      const api =
        options.url !== undefined
          ? (this.ownedClient = new DuetimeClient({ ...options.client, url: options.url, ...(options.token ? { token: options.token } : {}) }))
          : options.api!;
      this.api = api;
      this.leaseCall = (pool, request, callOptions) => api.lease(pool, request, callOptions);
      this.fetchBlob = api.getBlob ? (blobId, callOptions) => api.getBlob!(blobId, callOptions) : undefined;
    }
    this.acks = new AckBuffer({
      sink: this.api,
      delayMs: this.ackDelayMs,
      maxBatch: this.maxAckBatch,
      clock: this.clock,
      onAnswers: (sent, answers) => this.onAckAnswers("batch", sent, answers),
      onError: (error, _count, retryInMs) => this.emit({ type: "error", during: "ack", error, retryInMs }),
    });
  }

  get state(): WorkerState {
    return this.current;
  }

  /** Attempts whose handlers are running now. */
  get inFlight(): number {
    return this.running.size;
  }

  /** Starts the loop; resolves once the worker has stopped (after shutdown()). Call it once. */
  run(): Promise<void> {
    if (this.current !== "idle") return Promise.reject(new Error(`Worker.run(): the worker is ${this.current}; a Worker runs once`));
    this.setState("running");
    if (this.handleSignals) this.installSignalHandlers();
    this.done = this.main();
    return this.done;
  }

  /** Stops leasing, lets running handlers finish, flushes the acks, then resolves. Safe to call more than once. */
  async shutdown(): Promise<void> {
    if (this.current === "idle") {
      this.setState("stopped");
      await this.ownedClient?.close();
      return;
    }
    if (this.current === "running") {
      this.setState("stopping");
      this.stopping.abort(new Error("worker shutting down"));
      this.changed.notify();
    }
    await this.done;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.shutdown();
  }

  private async main(): Promise<void> {
    try {
      await (this.streamAt ? this.streamLoop() : this.leaseLoop());
    } finally {
      await this.drainHandlers();
      if (!(await this.acks.drain())) {
        this.emit({
          type: "error",
          during: "shutdown",
          error: new Error(`${this.acks.size} acks could not be sent; those attempts will time out and run again`),
        });
      }
      this.removeSignalHandlers?.();
      await this.ownedClient?.close();
      await this.stream?.close();
      this.setState("stopped");
    }
  }

  private async leaseLoop(): Promise<void> {
    let failures = 0;
    this.acks.hold();
    while (this.current === "running") {
      await this.waitFor(() => this.room() > 0 || this.current !== "running");
      if (this.current !== "running") break;
      if (this.running.size > 0) {
        await this.waitFor(() => this.running.size === 0 || this.acks.size >= this.maxAckBatch || this.current !== "running", this.ackDelayMs);
      }
      const acks = this.acks.take();
      if (this.current !== "running") {
        this.acks.restore(acks);
        break;
      }
      let response: LeaseResponse;
      const sentAt = this.clock.now();
      // Acks ride on lease calls; only while a long poll hangs do they go on their own.
      const longPoll = this.buffer.length === 0 && this.waitSeconds > 0;
      if (longPoll) this.acks.release();
      try {
        response = await this.leaseOnce(acks);
      } catch (error) {
        this.acks.hold();
        this.acks.restore(acks);
        if (this.current !== "running") break;
        const retryInMs = this.loopDelay(failures++, error);
        this.emit({ type: "error", during: "lease", error, retryInMs });
        await pause(retryInMs, this.stopping.signal, this.clock);
        continue;
      }
      this.acks.hold();
      failures = 0;
      if (acks.complete.length + acks.fail.length > 0) this.onAckAnswers("lease", acks, response.acks ?? []);
      this.receive(response.items);
      const elapsed = this.clock.now() - sentAt;
      if (response.items.length === 0 && elapsed < MIN_EMPTY_POLL_MS) await pause(MIN_EMPTY_POLL_MS - elapsed, this.stopping.signal, this.clock);
    }
  }

  private leaseOnce(acks: PendingAcks): Promise<LeaseResponse> {
    const request: LeaseRequest = {
      workerId: this.workerId,
      max: Math.min(this.room(), MAX_ACKS_PER_CALL),
      leaseSeconds: this.leaseSeconds,
      // Never long-poll while prefetched work waits.
      waitSeconds: this.buffer.length > 0 ? 0 : this.waitSeconds,
    };
    if (acks.complete.length > 0) request.complete = acks.complete;
    if (acks.fail.length > 0) request.fail = acks.fail;
    // The signal ends the long poll at shutdown.
    return this.leaseCall!(this.pool, request, { signal: this.stopping.signal });
  }

  /**
   * The gRPC transport's loop: keeps a Work stream open and its credit at the
   * room the worker has. Executions arrive through receive(); at shutdown the
   * stream stays open for the drain's acks and is closed after them (main).
   */
  private async streamLoop(): Promise<void> {
    let failures = 0;
    // Acks ride on credit, as on HTTP's lease calls.
    this.acks.hold();
    while (this.current === "running") {
      const stream = await WorkStream.open({
        ...this.streamAt!,
        pool: this.pool,
        workerId: this.workerId,
        leaseSeconds: this.leaseSeconds,
        onExecutions: (jobs) => this.receive(jobs),
        onCancel: (executionId, attempt) => this.cancel(this.running.get(keyOf({ executionId, attempt }))),
      });
      this.stream = stream;
      let ended: Error | undefined | null = null;
      void stream.ended.then((error) => {
        ended = error ?? new DuetimeApiError("UNAVAILABLE", "the server ended the work stream", { status: 503 });
        this.changed.notify();
      });
      const want = () => this.room() - stream.outstanding;
      const over = () => this.current !== "running" || ended !== null;
      while (!over()) {
        await this.waitFor(() => over() || want() > 0 || this.acks.size > 0);
        // As the lease loop asks: while handlers run, up to ackDelayMs for
        // them to finish (or a full batch of acks), so that one credit asks
        // for the whole room and carries their acks. Credit for each freed
        // slot made the server lease a few executions per store call.
        if (this.running.size > 0) {
          await this.waitFor(() => over() || this.running.size === 0 || this.acks.size >= this.maxAckBatch, this.ackDelayMs);
        }
        // While the server holds credit for half the room it keeps pushing:
        // more credit, and the acks, wait out ackDelayMs and go together.
        // Credit after each completion made the server end its long poll and
        // lease again as often (store calls that slowed a steady stream).
        const plenty = () => stream.outstanding >= Math.ceil(this.room() / 2);
        if (plenty()) await this.waitFor(() => over() || !plenty() || this.acks.size >= this.maxAckBatch, this.ackDelayMs);
        if (over()) break;
        if (want() > 0) this.grant(stream, want());
        // No room to ask for (prefetch shrank): the acks go on their own.
        else if (this.acks.size > 0) void this.acks.flush();
      }
      if (ended === null) return; // shutting down: main() closes the stream after the drain
      if (stream.heard) failures = 0;
      stream.abandon();
      if (this.current !== "running") return;
      const retryInMs = this.loopDelay(failures++, ended);
      this.emit({ type: "error", during: "lease", error: ended, retryInMs });
      await pause(retryInMs, this.stopping.signal, this.clock);
    }
  }

  /** Grants n credit on the stream with the acks in hand; those the server could not write (5xx, or the stream ended) go again. */
  private grant(stream: WorkStream, n: number): void {
    const acks = this.acks.take();
    stream.grant(n, acks).then(
      (answers) => {
        const failed = new Set(answers.filter((a) => a.status >= 500).map((a) => keyOf(a)));
        if (failed.size > 0) {
          const again = (item: { executionId: string; attempt: number }) => failed.has(keyOf(item));
          this.acks.restore({ complete: acks.complete.filter(again), fail: acks.fail.filter(again) });
        }
        if (answers.length > 0) this.onAckAnswers("lease", acks, answers);
      },
      () => this.acks.restore(acks),
    );
  }

  /** Leased attempts, from a lease call or the stream: run now or held as prefetch. */
  private receive(jobs: LeasedExecution[]): void {
    // Items granted after shutdown began still run: they are leased to this worker.
    const leasedAt = this.clock.now();
    for (const job of jobs) this.buffer.push({ job, leasedAt });
    this.pump();
  }

  /** The job of a running attempt was cancelled (a heartbeat's answer, or the stream's push): its signal aborts. */
  private cancel(run: Running | undefined): void {
    if (!run || run.dropped) return;
    this.abort(run, "cancelled", "the job was cancelled");
    this.emit({ type: "job:cancel", job: run.job });
  }

  private loopDelay(failures: number, error: unknown): number {
    const computed = backoffDelay(failures, LOOP_BACKOFF);
    const retryAfter = (error as { retryAfterSeconds?: unknown } | null | undefined)?.retryAfterSeconds;
    return typeof retryAfter === "number" ? Math.min(MAX_LOOP_WAIT_MS, Math.max(computed, retryAfter * 1000)) : computed;
  }

  private free(): number {
    return this.concurrency - this.running.size;
  }

  /** How many more attempts a lease call may ask for: free slots plus prefetch room. */
  private room(): number {
    return this.free() + this.prefetchNow() - this.buffer.length;
  }

  private prefetchNow(): number {
    if (this.prefetch !== "auto") return this.prefetch;
    if (this.handlerMs === undefined) return 0;
    const cap = Math.min(AUTO_PREFETCH_MAX_PER_SLOT * this.concurrency, MAX_ACKS_PER_CALL - this.concurrency);
    const paced = Math.floor((this.concurrency * AUTO_PREFETCH_HORIZON_MS) / Math.max(this.handlerMs, 0.001));
    return Math.max(0, Math.min(cap, paced));
  }

  /** Starts buffered attempts while slots are free; skips those whose lease is mostly gone. */
  private pump(): void {
    const leaseMs = this.leaseSeconds * 1000;
    while (this.free() > 0 && this.buffer.length > 0) {
      const { job, leasedAt } = this.buffer.shift()!;
      const waited = this.clock.now() - leasedAt;
      if (waited > 0.8 * leaseMs) {
        this.emit({ type: "lease:lost", executionId: job.executionId, attempt: job.attempt, during: "prefetch" });
        continue;
      }
      this.start(job, waited > leaseMs / 3);
    }
  }

  // ---- one attempt

  private start(job: LeasedExecution, late = false): void {
    const run: Running = { job, startedAt: this.clock.now() };
    this.running.set(keyOf(job), run);
    this.emit({ type: "job:start", job });
    if (late) void this.heartbeatNow(run).catch(() => {});
    else this.scheduleHeartbeat(run);
    if (typeof job.timeoutSeconds === "number" && job.timeoutSeconds > 0 && Number.isFinite(job.timeoutSeconds)) {
      const ms = Math.min(job.timeoutSeconds * 1000, 2 ** 31 - 1);
      run.cancelTimeout = later(() => this.abort(run, "timeout", `the attempt ran past its timeoutSeconds (${job.timeoutSeconds})`), ms, this.clock);
    }
    const ctx: HandlerContext = {
      get signal() {
        return controllerOf(run).signal;
      },
      attempt: job.attempt,
      workerId: this.workerId,
      heartbeat: () => this.heartbeatNow(run),
    };
    // A traced job's handler runs in a child span of the job's create span (tracing.ts).
    // A payload kept by reference is fetched first, inside the attempt (its heartbeats run meanwhile): the handler sees it inline.
    const handle = async () => this.handler(job.payloadRef ? await this.withPayload(job, run) : job, ctx);
    Promise.resolve()
      .then(() => (job.traceparent === undefined ? handle() : traced(job, this.pool, this.workerId, handle)))
      .then(
        (result) => this.finish(run, { ok: true, result }),
        (error: unknown) => this.finish(run, { ok: false, error }),
      );
  }

  /** The leased execution with its payload fetched (GET its payloadRef's href), as if it had come inline; a failed fetch fails the attempt. */
  private async withPayload(job: LeasedExecution, run: Running): Promise<LeasedExecution> {
    const { payloadRef, ...inline } = job;
    if (!this.fetchBlob) throw new Error(`the payload of execution ${job.executionId} is kept by reference, and this worker's api has no getBlob`);
    const payload = await this.fetchBlob(payloadRef!.blobId, { signal: controllerOf(run).signal });
    return { ...inline, payload };
  }

  private finish(run: Running, outcome: { ok: true; result: unknown } | { ok: false; error: unknown }): void {
    run.cancelHeartbeat?.();
    run.cancelTimeout?.();
    const { job } = run;
    const durationMs = this.clock.now() - run.startedAt;
    this.handlerMs = this.handlerMs === undefined ? durationMs : this.handlerMs + HANDLER_PACE_WEIGHT * (durationMs - this.handlerMs);
    if (run.dropped) {
      this.emit({ type: "job:drop", job, reason: run.dropped, durationMs });
    } else {
      const failure = outcome.ok ? unserialisable(outcome.result) : coerceError(outcome.error);
      if (failure) {
        this.acks.addFail({ ...fenceOf(job), error: failure });
        this.emit({ type: "job:fail", job, error: failure, durationMs });
      } else {
        const result = outcome.ok ? outcome.result : undefined;
        this.acks.addComplete(result === undefined ? fenceOf(job) : { ...fenceOf(job), result });
        this.emit({ type: "job:complete", job, result, durationMs });
      }
    }
    this.running.delete(keyOf(job));
    this.pump();
    this.changed.notify();
  }

  private abort(run: Running, reason: AbortReason, message: string): void {
    if (reason !== "timeout" && reason !== "shutdown") {
      if (run.dropped) return;
      run.dropped = reason;
    }
    const controller = controllerOf(run);
    if (!controller.signal.aborted) controller.abort(new AttemptAbortedError(reason, message));
  }

  // ---- heartbeats

  private scheduleHeartbeat(run: Running): void {
    const ms = Math.max(1, Math.floor((this.leaseSeconds * 1000) / 3));
    run.cancelHeartbeat = later(() => void this.heartbeatNow(run).catch(() => {}), ms, this.clock);
  }

  private async heartbeatNow(run: Running): Promise<void> {
    run.beating ??= this.beat(run).finally(() => {
      run.beating = undefined;
    });
    await run.beating;
    if (run.dropped) throw controllerOf(run).signal.reason;
  }

  private async beat(run: Running): Promise<void> {
    const { job } = run;
    if (run.dropped || !this.running.has(keyOf(job))) return;
    run.cancelHeartbeat?.();
    try {
      const { executionId, ...fence } = fenceOf(job);
      const answer = await this.api.heartbeat(executionId, { ...fence, leaseSeconds: this.leaseSeconds });
      if (answer.cancelRequested) this.cancel(run);
    } catch (error) {
      if (hasErrorCode(error, "LEASE_LOST") || hasErrorCode(error, "NOT_FOUND")) {
        this.abort(run, "lease_lost", "the attempt's lease was lost");
        this.emit({ type: "lease:lost", executionId: job.executionId, attempt: job.attempt, during: "heartbeat" });
      } else {
        this.emit({ type: "error", during: "heartbeat", error });
      }
    }
    if (!run.dropped && this.running.has(keyOf(job))) this.scheduleHeartbeat(run);
  }

  // ---- acks, shutdown, plumbing

  private onAckAnswers(via: "lease" | "batch", sent: PendingAcks, answers: AckItem[]): void {
    let rejected = 0;
    for (const answer of answers) {
      if (answer.status === 200) continue;
      rejected++;
      if (answer.status === 409) {
        this.emit({ type: "lease:lost", executionId: answer.executionId, attempt: answer.attempt, during: "ack" });
      } else {
        const { code, message } = answer.error;
        this.emit({
          type: "error",
          during: "ack",
          error: new DuetimeApiError(code, `${answer.executionId}#${answer.attempt}: ${message}`, { status: answer.status }),
        });
      }
    }
    this.emit({ type: "acks:sent", via, count: sent.complete.length + sent.fail.length, rejected });
  }

  private async drainHandlers(): Promise<void> {
    const idle = () => this.running.size === 0 && this.buffer.length === 0;
    if (this.shutdownGraceMs === undefined) {
      await this.waitFor(idle);
      return;
    }
    await this.waitFor(idle, this.shutdownGraceMs);
    this.buffer.length = 0; // not started: their leases expire and they run again elsewhere
    for (const run of this.running.values()) this.abort(run, "shutdown", "the worker is shutting down");
    await this.waitFor(() => this.running.size === 0);
  }

  /** Resolves when cond() holds (checked whenever something changes), or after timeoutMs. */
  private async waitFor(cond: () => boolean, timeoutMs?: number): Promise<void> {
    let timedOut = false;
    const cancel =
      timeoutMs === undefined
        ? undefined
        : later(
            () => {
              timedOut = true;
              this.changed.notify();
            },
            timeoutMs,
            this.clock,
          );
    try {
      while (!cond() && !timedOut) await this.changed.next();
    } finally {
      cancel?.();
    }
  }

  private installSignalHandlers(): void {
    const onSignal = (): void => {
      this.removeSignalHandlers?.();
      void this.shutdown();
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
    this.removeSignalHandlers = () => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      this.removeSignalHandlers = undefined;
    };
  }

  private setState(state: WorkerState): void {
    this.current = state;
    this.emit({ type: "state", state });
  }

  private emit(event: WorkerEvent): void {
    if (this.logger && (event.type === "error" || event.type === "lease:lost")) this.logger.warn(describeEvent(this.workerId, event));
    if (!this.onEvent) return;
    try {
      this.onEvent(event);
    } catch (error) {
      this.logger?.warn(`duetime worker ${this.workerId}: onEvent threw: ${String(error)}`);
    }
  }
}

/** Wakes every waiter on notify(); waiters re-check their own condition. */
class Notifier {
  private waiters: (() => void)[] = [];
  notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
  next(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

function controllerOf(run: Running): AbortController {
  run.controller ??= new AbortController();
  return run.controller;
}

function keyOf(job: Pick<LeasedExecution, "executionId" | "attempt">): string {
  return `${job.executionId}#${job.attempt}`;
}

/** A result that JSON cannot carry fails the attempt for good: running it again would not help. */
function unserialisable(result: unknown): ErrorRecord | undefined {
  try {
    JSON.stringify(result);
    return undefined;
  } catch (error) {
    return { message: `the handler's result is not JSON-serialisable: ${(error as Error).message}`, class: "permanent" };
  }
}

function describeEvent(workerId: string, event: WorkerEvent): string {
  if (event.type === "lease:lost") return `duetime worker ${workerId}: lease lost for ${event.executionId}#${event.attempt} (${event.during})`;
  if (event.type !== "error") return `duetime worker ${workerId}: ${event.type}`;
  const err = event.error as { code?: unknown; message?: unknown };
  const what = [err?.code, err?.message].filter((x) => typeof x === "string").join(": ") || String(event.error);
  return `duetime worker ${workerId}: ${event.during} failed: ${what}${event.retryInMs !== undefined ? ` (retrying in ${event.retryInMs} ms)` : ""}`;
}
