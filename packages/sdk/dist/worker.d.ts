import type { DuetimeApi, LeasedExecution } from "./api.js";
import { type ClientOptions } from "./client.js";
import type { WorkerEvent, WorkerState } from "./events.js";
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
    /** Server URL (HTTP mode). Exactly one of url and api. */
    url?: string;
    /** Any DuetimeApi, e.g. the embedded engine (in-process mode). Exactly one of url and api. */
    api?: DuetimeApi;
    /** API key (HTTP mode). */
    token?: string;
    /** More options for the HTTP client the worker creates (HTTP mode). */
    client?: Omit<ClientOptions, "url" | "token">;
    pool: string;
    handler: Handler;
    /** Handlers running at once (default 10). */
    concurrency?: number;
    /**
     * Leased attempts held ready beyond the running ones (default 0). With
     * prefetch, a lease call fetches work for slots that are about to free, so
     * fast handlers never wait for a round trip. A prefetched attempt's lease
     * ticks while it waits: it is heartbeaten when it starts late, and skipped
     * (it runs again elsewhere) when most of its lease is gone.
     */
    prefetch?: number;
    /** Default `${hostname}-${pid}-${random}`. */
    workerId?: string;
    /** Lease length asked for each attempt (default 30); heartbeats go every leaseSeconds/3. */
    leaseSeconds?: number;
    /** Long-poll wait of a lease call (default 20). */
    waitSeconds?: number;
    /** Acks pending before a batch call goes out at once (default 100). */
    maxAckBatch?: number;
    /** How long a finished attempt waits for others before a batch ack call (default 20 ms). */
    ackDelayMs?: number;
    /** On shutdown, abort running handlers' signals after this long (reason "shutdown"; default: wait for them). */
    shutdownGraceMs?: number;
    /** SIGTERM and SIGINT call shutdown() (default true with url, false with api). A second signal is left to Node's default. */
    handleSignals?: boolean;
    onEvent?: (event: WorkerEvent) => void;
    /** Where "error" and "lease:lost" events are logged (default console when onEvent is not given; null for silence). */
    logger?: Pick<Console, "warn"> | null;
}
export declare class Worker {
    readonly workerId: string;
    readonly pool: string;
    private readonly api;
    private readonly ownedClient;
    private readonly handler;
    private readonly concurrency;
    private readonly prefetch;
    /** Leased attempts waiting for a free slot (prefetch), with when they were leased. */
    private readonly buffer;
    private readonly leaseSeconds;
    private readonly waitSeconds;
    private readonly maxAckBatch;
    private readonly ackDelayMs;
    private readonly shutdownGraceMs;
    private readonly handleSignals;
    private readonly onEvent;
    private readonly logger;
    private readonly acks;
    private readonly running;
    private readonly changed;
    private readonly stopping;
    private current;
    private done;
    private removeSignalHandlers;
    constructor(options: WorkerOptions);
    get state(): WorkerState;
    /** Attempts whose handlers are running now. */
    get inFlight(): number;
    /** Starts the loop; resolves once the worker has stopped (after shutdown()). Call it once. */
    run(): Promise<void>;
    /** Stops leasing, lets running handlers finish, flushes the acks, then resolves. Safe to call more than once. */
    shutdown(): Promise<void>;
    [Symbol.asyncDispose](): Promise<void>;
    private main;
    private leaseLoop;
    private leaseOnce;
    private loopDelay;
    private free;
    /** How many more attempts a lease call may ask for: free slots plus prefetch room. */
    private room;
    /** Starts buffered attempts while slots are free; skips those whose lease is mostly gone. */
    private pump;
    private start;
    private finish;
    private abort;
    private scheduleHeartbeat;
    private heartbeatNow;
    private beat;
    private onAckAnswers;
    private drainHandlers;
    /** Resolves when cond() holds (checked whenever something changes), or after timeoutMs. */
    private waitFor;
    private installSignalHandlers;
    private setState;
    private emit;
}
