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
import { AckBuffer, MAX_ACKS_PER_CALL } from "./acks.js";
import { backoffDelay, later, pause } from "./backoff.js";
import { instanceId } from "./instance-id.js";
import { DuetimeClient } from "./client.js";
import { AttemptAbortedError, DuetimeApiError, coerceError, hasErrorCode } from "./errors.js";
import { rejectUnknownOptions, requireInteger } from "./options.js";
const WORKER_OPTIONS = [
    "url",
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
    "logger",
];
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
export class Worker {
    workerId;
    pool;
    api;
    ownedClient;
    handler;
    concurrency;
    prefetch;
    /** Leased attempts waiting for a free slot (prefetch), with when they were leased. */
    buffer = [];
    leaseSeconds;
    waitSeconds;
    maxAckBatch;
    ackDelayMs;
    shutdownGraceMs;
    handleSignals;
    onEvent;
    logger;
    acks;
    running = new Map();
    changed = new Notifier();
    stopping = new AbortController();
    current = "idle";
    done;
    removeSignalHandlers;
    constructor(options) {
        rejectUnknownOptions("Worker", options, WORKER_OPTIONS);
        if ((options.url === undefined) === (options.api === undefined))
            throw new TypeError("Worker: give exactly one of url and api");
        if (typeof options.pool !== "string" || options.pool === "")
            throw new TypeError("Worker: pool must be a non-empty string");
        if (typeof options.handler !== "function")
            throw new TypeError("Worker: handler must be a function");
        this.pool = options.pool;
        this.handler = options.handler;
        this.concurrency = requireInteger("Worker", "concurrency", options.concurrency ?? 10, 1, 10_000);
        this.prefetch = requireInteger("Worker", "prefetch", options.prefetch ?? 0, 0, 10_000);
        this.leaseSeconds = requireInteger("Worker", "leaseSeconds", options.leaseSeconds ?? 30, 1, 3600);
        this.waitSeconds = requireInteger("Worker", "waitSeconds", options.waitSeconds ?? 20, 0, 60);
        this.maxAckBatch = requireInteger("Worker", "maxAckBatch", options.maxAckBatch ?? 100, 1, MAX_ACKS_PER_CALL);
        this.ackDelayMs = requireInteger("Worker", "ackDelayMs", options.ackDelayMs ?? 20, 0, 60_000);
        this.shutdownGraceMs =
            options.shutdownGraceMs === undefined ? undefined : requireInteger("Worker", "shutdownGraceMs", options.shutdownGraceMs, 0, 2 ** 31 - 1);
        this.workerId = options.workerId ?? instanceId();
        this.handleSignals = options.handleSignals ?? options.url !== undefined;
        this.onEvent = options.onEvent;
        this.logger = options.logger !== undefined ? options.logger : options.onEvent ? null : console;
        if (options.url !== undefined) {
            this.ownedClient = new DuetimeClient({ ...options.client, url: options.url, ...(options.token ? { token: options.token } : {}) });
            this.api = this.ownedClient;
        }
        else {
            this.ownedClient = undefined;
            this.api = options.api;
        }
        this.acks = new AckBuffer({
            sink: this.api,
            delayMs: this.ackDelayMs,
            maxBatch: this.maxAckBatch,
            onAnswers: (sent, answers) => this.onAckAnswers("batch", sent, answers),
            onError: (error, _count, retryInMs) => this.emit({ type: "error", during: "ack", error, retryInMs }),
        });
    }
    get state() {
        return this.current;
    }
    /** Attempts whose handlers are running now. */
    get inFlight() {
        return this.running.size;
    }
    /** Starts the loop; resolves once the worker has stopped (after shutdown()). Call it once. */
    run() {
        if (this.current !== "idle")
            return Promise.reject(new Error(`Worker.run(): the worker is ${this.current}; a Worker runs once`));
        this.setState("running");
        if (this.handleSignals)
            this.installSignalHandlers();
        this.done = this.main();
        return this.done;
    }
    /** Stops leasing, lets running handlers finish, flushes the acks, then resolves. Safe to call more than once. */
    async shutdown() {
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
    async [Symbol.asyncDispose]() {
        await this.shutdown();
    }
    async main() {
        try {
            await this.leaseLoop();
        }
        finally {
            await this.drainHandlers();
            if (!(await this.acks.drain())) {
                this.emit({ type: "error", during: "shutdown", error: new Error(`${this.acks.size} acks could not be sent; those attempts will time out and run again`) });
            }
            this.removeSignalHandlers?.();
            await this.ownedClient?.close();
            this.setState("stopped");
        }
    }
    async leaseLoop() {
        let failures = 0;
        this.acks.hold();
        while (this.current === "running") {
            await this.waitFor(() => this.room() > 0 || this.current !== "running");
            if (this.current !== "running")
                break;
            if (this.running.size > 0) {
                await this.waitFor(() => this.running.size === 0 || this.acks.size >= this.maxAckBatch || this.current !== "running", this.ackDelayMs);
            }
            const acks = this.acks.take();
            if (this.current !== "running") {
                this.acks.restore(acks);
                break;
            }
            let response;
            const sentAt = performance.now();
            // Acks ride on lease calls; only while a long poll hangs do they go on their own.
            const longPoll = this.buffer.length === 0 && this.waitSeconds > 0;
            if (longPoll)
                this.acks.release();
            try {
                response = await this.leaseOnce(acks);
            }
            catch (error) {
                this.acks.hold();
                this.acks.restore(acks);
                if (this.current !== "running")
                    break;
                const retryInMs = this.loopDelay(failures++, error);
                this.emit({ type: "error", during: "lease", error, retryInMs });
                await pause(retryInMs, this.stopping.signal);
                continue;
            }
            this.acks.hold();
            failures = 0;
            if (acks.complete.length + acks.fail.length > 0)
                this.onAckAnswers("lease", acks, response.acks ?? []);
            // Items granted after shutdown began still run: they are leased to this worker.
            const leasedAt = performance.now();
            for (const job of response.items)
                this.buffer.push({ job, leasedAt });
            this.pump();
            const elapsed = performance.now() - sentAt;
            if (response.items.length === 0 && elapsed < MIN_EMPTY_POLL_MS)
                await pause(MIN_EMPTY_POLL_MS - elapsed, this.stopping.signal);
        }
    }
    leaseOnce(acks) {
        const request = {
            workerId: this.workerId,
            max: Math.min(this.room(), MAX_ACKS_PER_CALL),
            leaseSeconds: this.leaseSeconds,
            // Never long-poll while prefetched work waits.
            waitSeconds: this.buffer.length > 0 ? 0 : this.waitSeconds,
        };
        if (acks.complete.length > 0)
            request.complete = acks.complete;
        if (acks.fail.length > 0)
            request.fail = acks.fail;
        // The signal ends the long poll at shutdown.
        return this.api.lease(this.pool, request, { signal: this.stopping.signal });
    }
    loopDelay(failures, error) {
        const computed = backoffDelay(failures, LOOP_BACKOFF);
        const retryAfter = error?.retryAfterSeconds;
        return typeof retryAfter === "number" ? Math.min(MAX_LOOP_WAIT_MS, Math.max(computed, retryAfter * 1000)) : computed;
    }
    free() {
        return this.concurrency - this.running.size;
    }
    /** How many more attempts a lease call may ask for: free slots plus prefetch room. */
    room() {
        return this.free() + this.prefetch - this.buffer.length;
    }
    /** Starts buffered attempts while slots are free; skips those whose lease is mostly gone. */
    pump() {
        const leaseMs = this.leaseSeconds * 1000;
        while (this.free() > 0 && this.buffer.length > 0) {
            const { job, leasedAt } = this.buffer.shift();
            const waited = performance.now() - leasedAt;
            if (waited > 0.8 * leaseMs) {
                this.emit({ type: "lease:lost", executionId: job.executionId, attempt: job.attempt, during: "prefetch" });
                continue;
            }
            this.start(job, waited > leaseMs / 3);
        }
    }
    // ---- one attempt
    start(job, late = false) {
        const run = { job, controller: new AbortController(), startedAt: performance.now() };
        this.running.set(keyOf(job), run);
        this.emit({ type: "job:start", job });
        if (late)
            void this.heartbeatNow(run).catch(() => { });
        else
            this.scheduleHeartbeat(run);
        if (typeof job.timeoutSeconds === "number" && job.timeoutSeconds > 0 && Number.isFinite(job.timeoutSeconds)) {
            const ms = Math.min(job.timeoutSeconds * 1000, 2 ** 31 - 1);
            run.cancelTimeout = later(() => this.abort(run, "timeout", `the attempt ran past its timeoutSeconds (${job.timeoutSeconds})`), ms);
        }
        const ctx = {
            signal: run.controller.signal,
            attempt: job.attempt,
            workerId: this.workerId,
            heartbeat: () => this.heartbeatNow(run),
        };
        Promise.resolve()
            .then(() => this.handler(job, ctx))
            .then((result) => this.finish(run, { ok: true, result }), (error) => this.finish(run, { ok: false, error }));
    }
    finish(run, outcome) {
        run.cancelHeartbeat?.();
        run.cancelTimeout?.();
        const { job } = run;
        const durationMs = performance.now() - run.startedAt;
        if (run.dropped) {
            this.emit({ type: "job:drop", job, reason: run.dropped, durationMs });
        }
        else {
            const failure = outcome.ok ? unserialisable(outcome.result) : coerceError(outcome.error);
            if (failure) {
                this.acks.addFail({ executionId: job.executionId, attempt: job.attempt, error: failure });
                this.emit({ type: "job:fail", job, error: failure, durationMs });
            }
            else {
                const result = outcome.ok ? outcome.result : undefined;
                this.acks.addComplete(result === undefined ? { executionId: job.executionId, attempt: job.attempt } : { executionId: job.executionId, attempt: job.attempt, result });
                this.emit({ type: "job:complete", job, result, durationMs });
            }
        }
        this.running.delete(keyOf(job));
        this.pump();
        this.changed.notify();
    }
    abort(run, reason, message) {
        if (reason !== "timeout" && reason !== "shutdown") {
            if (run.dropped)
                return;
            run.dropped = reason;
        }
        if (!run.controller.signal.aborted)
            run.controller.abort(new AttemptAbortedError(reason, message));
    }
    // ---- heartbeats
    scheduleHeartbeat(run) {
        const ms = Math.max(1, Math.floor((this.leaseSeconds * 1000) / 3));
        run.cancelHeartbeat = later(() => void this.heartbeatNow(run).catch(() => { }), ms);
    }
    async heartbeatNow(run) {
        run.beating ??= this.beat(run).finally(() => {
            run.beating = undefined;
        });
        await run.beating;
        if (run.dropped)
            throw run.controller.signal.reason;
    }
    async beat(run) {
        const { job } = run;
        if (run.dropped || !this.running.has(keyOf(job)))
            return;
        run.cancelHeartbeat?.();
        try {
            const answer = await this.api.heartbeat(job.executionId, { attempt: job.attempt, leaseSeconds: this.leaseSeconds });
            if (answer.cancelRequested) {
                this.abort(run, "cancelled", "the job was cancelled");
                this.emit({ type: "job:cancel", job });
            }
        }
        catch (error) {
            if (hasErrorCode(error, "LEASE_LOST") || hasErrorCode(error, "NOT_FOUND")) {
                this.abort(run, "lease_lost", "the attempt's lease was lost");
                this.emit({ type: "lease:lost", executionId: job.executionId, attempt: job.attempt, during: "heartbeat" });
            }
            else {
                this.emit({ type: "error", during: "heartbeat", error });
            }
        }
        if (!run.dropped && this.running.has(keyOf(job)))
            this.scheduleHeartbeat(run);
    }
    // ---- acks, shutdown, plumbing
    onAckAnswers(via, sent, answers) {
        let rejected = 0;
        for (const answer of answers) {
            if (answer.status === 200)
                continue;
            rejected++;
            if (answer.status === 409) {
                this.emit({ type: "lease:lost", executionId: answer.executionId, attempt: answer.attempt, during: "ack" });
            }
            else {
                const { code, message } = answer.error;
                this.emit({ type: "error", during: "ack", error: new DuetimeApiError(code, `${answer.executionId}#${answer.attempt}: ${message}`, { status: answer.status }) });
            }
        }
        this.emit({ type: "acks:sent", via, count: sent.complete.length + sent.fail.length, rejected });
    }
    async drainHandlers() {
        const idle = () => this.running.size === 0 && this.buffer.length === 0;
        if (this.shutdownGraceMs === undefined) {
            await this.waitFor(idle);
            return;
        }
        await this.waitFor(idle, this.shutdownGraceMs);
        this.buffer.length = 0; // not started: their leases expire and they run again elsewhere
        for (const run of this.running.values())
            this.abort(run, "shutdown", "the worker is shutting down");
        await this.waitFor(() => this.running.size === 0);
    }
    /** Resolves when cond() holds (checked whenever something changes), or after timeoutMs. */
    async waitFor(cond, timeoutMs) {
        let timedOut = false;
        const cancel = timeoutMs === undefined
            ? undefined
            : later(() => {
                timedOut = true;
                this.changed.notify();
            }, timeoutMs);
        try {
            while (!cond() && !timedOut)
                await this.changed.next();
        }
        finally {
            cancel?.();
        }
    }
    installSignalHandlers() {
        const onSignal = () => {
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
    setState(state) {
        this.current = state;
        this.emit({ type: "state", state });
    }
    emit(event) {
        if (this.logger && (event.type === "error" || event.type === "lease:lost"))
            this.logger.warn(describeEvent(this.workerId, event));
        if (!this.onEvent)
            return;
        try {
            this.onEvent(event);
        }
        catch (error) {
            this.logger?.warn(`duetime worker ${this.workerId}: onEvent threw: ${String(error)}`);
        }
    }
}
/** Wakes every waiter on notify(); waiters re-check their own condition. */
class Notifier {
    waiters = [];
    notify() {
        const waiters = this.waiters;
        this.waiters = [];
        for (const wake of waiters)
            wake();
    }
    next() {
        return new Promise((resolve) => this.waiters.push(resolve));
    }
}
function keyOf(job) {
    return `${job.executionId}#${job.attempt}`;
}
/** A result that JSON cannot carry fails the attempt for good: running it again would not help. */
function unserialisable(result) {
    try {
        JSON.stringify(result);
        return undefined;
    }
    catch (error) {
        return { message: `the handler's result is not JSON-serialisable: ${error.message}`, class: "permanent" };
    }
}
function describeEvent(workerId, event) {
    if (event.type === "lease:lost")
        return `duetime worker ${workerId}: lease lost for ${event.executionId}#${event.attempt} (${event.during})`;
    if (event.type !== "error")
        return `duetime worker ${workerId}: ${event.type}`;
    const err = event.error;
    const what = [err?.code, err?.message].filter((x) => typeof x === "string").join(": ") || String(event.error);
    return `duetime worker ${workerId}: ${event.during} failed: ${what}${event.retryInMs !== undefined ? ` (retrying in ${event.retryInMs} ms)` : ""}`;
}
//# sourceMappingURL=worker.js.map