// One concept, just over 600 lines: the runner's lease loop, its slots and
// its origins' queues share every method's state; what stands apart (settings,
// timings, origin bookkeeping, one call's delivery) has its own file.
//
// The in-server executor for http targets. It is a worker like any other: it
// leases from the $http pool (every tenant), and each call is an attempt
// under a lease recorded before the call is sent, so a server that dies
// mid-call has its lease expire and the call sent again with the same
// Idempotency-Key and the next attempt number. The executor holds its
// retries to their tenant's and their origin's retry budgets
// (retry-budget.ts): a retry over either is handed back before it gets here.
//
// Between the lease and the call, each leased execution waits in its
// origin's queue (scheme://host:port) for three gates:
// - the origin's circuit breaker (circuit-breaker.ts): while it is open, the
//   origin's leased executions are *released*: handed back to the store
//   unused (executionRelease), READY again when the breaker will let its next
//   probe through. A released lease does not count toward maxAttempts, so no
//   attempt is spent and nothing is dead-lettered because of the pause; the
//   pool's long polls are woken at that time (executor.notifyAt);
// - the origin's cap on calls in flight (default 64);
// - the origin's rate limit (a token bucket, off by default).
//
// A call waits in memory for a cap, a rate limit or a half-open breaker's
// probe at most MAX_WAIT_MS (3 s), well inside its lease (timeoutSeconds +
// GRACE_MS, the store's hard deadline), so waiting leases need no heartbeat
// and every call goes out with its full timeoutSeconds still covered. A call
// that would wait longer is released too, ready again shortly (or, for a rate
// limit, about when its token would come). At stop(), calls still waiting are
// released rather than failed. Releases are written in batches, one store
// call for many.

import { Batcher, type ErrorRecord, type HttpTarget, type TargetStatus, SigningKeys } from "@duetime/sdk/contract";
import type { Clock, TimerHandle } from "../core/clock.js";
import { msOfSeconds } from "../core/time.js";
import type { LeasedRow } from "../store/store.js";
import { HTTP_POOL } from "../store/store.js";
import { Agent } from "undici";
import { setMaxListeners } from "node:events";
import { AckBuffer } from "./ack-buffer.js";
import { CircuitBreaker } from "./circuit-breaker.js";
import { EgressAllowList, guardedConnector, originOf, urlRefusal } from "./egress.js";
import type { ReleaseInput } from "./executor.js";
import type { FailRecord } from "./http-call.js";
import { deliver } from "./http-delivery.js";
import { Fifo, isWaiting, newUsage, type OriginState, type OriginUsage, type Slot, targetStatus } from "./http-origin.js";
import type { HttpTargetOptions, ReleaseReason } from "./http-target-settings.js";
import { TokenBucket } from "../core/token-bucket.js";
import { OriginLimits } from "./origin-limits.js";
import {
  ACK_DELAY_MS,
  DEFAULT_TIMEOUT_MS,
  GRACE_MS,
  IDLE_ORIGIN_MS,
  KEEPER_INTERVAL_MS,
  LEASE_BATCH,
  LEASE_WAIT_MS,
  MAX_EXCESS_MS,
  MAX_WAIT_MS,
  MIN_MARGIN_MS,
  RELEASE_RETRY_MS,
  WAIT_RELEASE_MS,
} from "./http-target-timing.js";

/** A release waiting to be written, with the lease it hands back (it is worth writing only while that lasts). */
interface PendingRelease {
  item: ReleaseInput;
  leaseUntil: number;
}
export class HttpTargetRunner {
  private readonly o: HttpTargetOptions;
  private readonly clock: Clock;
  private readonly agent: Agent;
  private readonly acks: AckBuffer;
  private readonly releases: Batcher<PendingRelease>;
  private readonly allow: EgressAllowList;
  private readonly keys: SigningKeys;
  private readonly limits: OriginLimits;
  private readonly concurrency: number;
  private readonly origins = new Map<string, OriginState>();
  private readonly slots = new Map<string, Slot>();
  private readonly urls = new Map<string, { origin: string; refusal: string | null }>();
  private inFlight = 0;
  private state: "idle" | "running" | "stopping" | "stopped" = "idle";
  private loop: Promise<void> | null = null;
  private keeper: TimerHandle | null = null;
  private readonly leaseAbort = new AbortController();
  private readonly callAbort = new AbortController();
  private roomFreed: (() => void) | null = null;
  private callsDone: (() => void) | null = null;
  /** The lease asked for: the last timeoutSeconds seen plus the grace, so most leases need no correcting heartbeat. */
  private leaseMs = DEFAULT_TIMEOUT_MS + GRACE_MS;
  /** The last lease got all it asked for: more is probably ready. */
  private backlog = false;

  constructor(options: HttpTargetOptions) {
    this.o = options;
    this.clock = options.clock;
    this.concurrency = options.concurrency ?? 256;
    this.allow = new EgressAllowList(options.allowTargetHosts ?? []);
    this.keys = new SigningKeys(options.signingSecrets ?? {});
    this.limits = new OriginLimits(options.origin ?? {}, options.origins ?? {});
    this.agent = new Agent({
      connections: this.limits.maxConcurrency(),
      keepAliveTimeout: 10_000,
      // Our own timer aborts a call at timeoutSeconds (up to a day); undici's 300 s defaults would cut it first.
      headersTimeout: 0,
      bodyTimeout: 0,
      connect: guardedConnector(this.allow),
    });
    const onError = (error: unknown) => this.o.events.emit("error", { where: "http-target", error });
    this.acks = new AckBuffer(options.executor, this.clock, ACK_DELAY_MS, 500, onError);
    // Releases waiting to be written share one store call; a failed write is
    // tried again while the leases last; after close() nothing is written any
    // more (the leases then expire).
    this.releases = new Batcher<PendingRelease>({
      send: async (batch) => {
        await options.executor.release(batch.map((p) => p.item));
        return undefined;
      },
      delayMs: ACK_DELAY_MS,
      maxBatch: 500,
      clock: this.clock,
      keep: (p) => p.leaseUntil > this.clock.now() + MIN_MARGIN_MS,
      retryDelayMs: () => RELEASE_RETRY_MS,
      onError: (error) => onError(error),
    });
    setMaxListeners(0, this.callAbort.signal); // one listener per call in flight
  }

  start(): void {
    if (this.loop || !this.begin()) return;
    this.loop = this.run();
  }

  /** Running from now on (calls start, leases are kept); false once stopping. */
  private begin(): boolean {
    if (this.state === "idle") {
      this.state = "running";
      this.scheduleKeeper();
    }
    return this.state === "running";
  }

  /**
   * Stops leasing; executions still waiting for their origin are released
   * (ready again at once, or when an open breaker would probe next) without
   * spending an attempt; calls in flight get drainSeconds to finish, then are
   * aborted; outcomes are written.
   */
  async stop(): Promise<void> {
    if (this.state === "stopped" || this.state === "stopping") return;
    const wasRunning = this.state === "running";
    this.state = "stopping";
    this.leaseAbort.abort();
    this.wakeLoop();
    this.keeper?.cancel();
    await this.loop;
    for (const origin of this.origins.values()) origin.wake?.handle.cancel();
    if (wasRunning) {
      const now = this.clock.now();
      for (const slot of this.slots.values()) {
        if (slot.phase !== "waiting") continue;
        const breaker = slot.origin.breaker.snapshot(now);
        this.release(slot, breaker.openUntil ?? now, "stop");
      }
      await this.releases.flush();
      if (this.inFlight > 0) {
        const drained = new Promise<void>((resolve) => (this.callsDone = resolve));
        let timer: TimerHandle | null = null;
        await Promise.race([drained, new Promise<void>((resolve) => (timer = this.clock.setTimer(resolve, (this.o.drainSeconds ?? 5) * 1000)))]);
        (timer as TimerHandle | null)?.cancel();
        this.callAbort.abort();
        if (this.inFlight > 0) await drained;
      }
    }
    await this.acks.flush();
    await this.releases.flush();
    this.releases.close();
    await this.agent.close().catch(() => {});
    this.state = "stopped";
  }

  /**
   * The origins this node calls, for GET /v1/targets: with tenantId, only the
   * origins that tenant's jobs called, with its own counts (the breaker and
   * limits are the origin's, shared by every tenant); without, every origin
   * with the counts of all tenants together.
   */
  targets(view: { tenantId?: string } = {}): TargetStatus[] {
    const now = this.clock.now();
    const items: TargetStatus[] = [];
    for (const o of this.origins.values()) {
      const usage = view.tenantId === undefined ? o : o.tenants.get(view.tenantId);
      if (!usage) continue;
      items.push(targetStatus(o, usage, now));
    }
    return items;
  }

  /** The origin's usage and its tenant's: every count is kept in both. */
  private usages(slot: Slot): [OriginUsage, OriginUsage] {
    const { origin } = slot;
    let tenant = origin.tenants.get(slot.row.tenantId);
    if (!tenant) origin.tenants.set(slot.row.tenantId, (tenant = newUsage()));
    return [origin, tenant];
  }

  /** Totals for metrics: calls in flight, waiting in memory, and of those, waiting for a half-open breaker's probe. */
  totals(): { inFlight: number; waiting: number; waitingProbe: number } {
    let waiting = 0;
    let waitingProbe = 0;
    const now = this.clock.now();
    for (const o of this.origins.values()) {
      waiting += o.waiting;
      if (o.breaker.snapshot(now).state === "half_open") waitingProbe += o.waiting;
    }
    return { inFlight: this.inFlight, waiting, waitingProbe };
  }

  // ---- leasing ----------------------------------------------------------------

  private async run(): Promise<void> {
    while (this.state === "running") {
      const { budget, queued } = this.leaseBudget();
      if (budget <= 0 || (this.backlog && queued > 0 && budget < Math.min(LEASE_BATCH, Math.ceil(this.concurrency / 4)))) {
        await new Promise<void>((resolve) => (this.roomFreed = resolve));
        continue;
      }
      try {
        await this.leasePass(budget, LEASE_WAIT_MS);
      } catch (error) {
        if (this.state !== "running") break;
        this.o.events.emit("error", { where: "http-target", error });
        await new Promise<void>((resolve) => this.clock.setTimer(resolve, 500));
      }
    }
  }

  /**
   * One pass of the loop now, without waiting for work: leases what is ready
   * (as many as there is room for), starts or queues its calls, and carries
   * the acknowledgements in hand. Resolves to how many it leased; the calls
   * go on after it, and stop() drains them. For a runner whose loop was not
   * started (tests on a fake clock): beside the loop it would lease twice.
   */
  async runOnce(): Promise<number> {
    if (!this.begin()) return 0;
    const { budget } = this.leaseBudget();
    return budget > 0 ? this.leasePass(budget, 0) : 0;
  }

  /** Leases up to budget (a long poll of waitMs), with the acknowledgements in hand; a failure puts them back and throws. */
  private async leasePass(budget: number, waitMs: number): Promise<number> {
    const acks = this.acks.take();
    try {
      const leaseMs = this.leaseMs;
      const { leased } = await this.o.executor.lease({
        pool: HTTP_POOL,
        workerId: this.o.nodeId,
        max: budget,
        leaseMs,
        graceMs: GRACE_MS,
        waitMs,
        signal: this.leaseAbort.signal,
        complete: acks.complete,
        fail: acks.fail,
        retryScopes: (row) => this.retryScopes(row),
      });
      const now = this.clock.now();
      for (const row of leased) this.admit(row, now, leaseMs);
      this.backlog = leased.length === budget;
      const last = leased[leased.length - 1];
      if (last) this.leaseMs = msOfSeconds(last.timeoutSeconds) + GRACE_MS;
      return leased.length;
    } catch (error) {
      this.acks.restore(acks);
      throw error;
    }
  }

  /** How many more executions to lease: free call slots, less those already waiting in memory for their origin. */
  private leaseBudget(): { budget: number; queued: number } {
    let queued = 0;
    for (const o of this.origins.values()) queued += o.waiting;
    return { budget: this.concurrency - this.inFlight - queued, queued };
  }

  private wakeLoop(): void {
    const wake = this.roomFreed;
    this.roomFreed = null;
    wake?.();
  }

  /** leaseMs: what the lease asked for, from which the store's lease time (and so the slot's sendBy) follows. */
  private admit(row: LeasedRow, now: number, leaseMs: number): void {
    const target = row.target as HttpTarget;
    const { origin: key, refusal } =
      target.type !== "http" ? { origin: "", refusal: `not an http target (${String(target.type)})` } : this.urlInfo(target.url);
    if (refusal !== null) {
      this.acks.fail({
        executionId: row.executionId,
        tenantId: row.tenantId,
        attempt: row.attempt,
        error: { message: refusal, class: "permanent", code: "EGRESS_REFUSED" },
      });
      return;
    }
    const origin = this.originState(key, now);
    // The store granted leaseUntil = min(leasedAt + leaseMs, leasedAt + timeout + GRACE_MS).
    const leasedAt = row.leaseUntil - Math.min(leaseMs, msOfSeconds(row.timeoutSeconds) + GRACE_MS);
    const slot: Slot = { row, target, origin, leaseUntil: row.leaseUntil, sendBy: leasedAt + MAX_WAIT_MS, phase: "waiting" };
    this.slots.set(row.executionId, slot);
    origin.queue.push(slot);
    for (const u of this.usages(slot)) u.waiting++;
    this.pump(origin);
  }

  /** A row's retry budget key besides its tenant's: its origin's, so a failing origin sees a bounded retry rate from every tenant together. */
  private retryScopes(row: LeasedRow): string[] {
    const target = row.target as HttpTarget;
    if (target.type !== "http") return [];
    const { origin, refusal } = this.urlInfo(target.url);
    return refusal === null ? [`origin:${origin}`] : [];
  }

  /** The URL's origin and whether it is refused, remembered: a herd calls the same few URLs thousands of times. */
  private urlInfo(url: string): { origin: string; refusal: string | null } {
    let info = this.urls.get(url);
    if (!info) {
      const refusal = urlRefusal(url, this.allow);
      info = { origin: refusal === null ? originOf(url) : "", refusal };
      if (this.urls.size >= 10_000) this.urls.clear();
      this.urls.set(url, info);
    }
    return info;
  }

  private originState(key: string, now: number): OriginState {
    let o = this.origins.get(key);
    if (!o) {
      const limit = this.limits.resolve(key);
      o = {
        origin: key,
        breaker: new CircuitBreaker(this.o.breaker),
        limit,
        bucket: limit.ratePerSecond === null ? null : new TokenBucket(limit.ratePerSecond, limit.burst, now),
        queue: new Fifo<Slot>(),
        wake: null,
        lastActiveAt: now,
        tenants: new Map(),
        ...newUsage(),
      };
      this.origins.set(key, o);
    }
    o.lastActiveAt = now;
    return o;
  }

  // ---- the gates --------------------------------------------------------------

  /**
   * Sends as many of the origin's waiting executions as its breaker, cap and
   * rate allow; releases them all while its breaker is open, and those that
   * have waited MAX_WAIT_MS.
   */
  private pump(origin: OriginState): void {
    if (this.state !== "running") return;
    const now = this.clock.now();
    const released = this.releaseStale(origin, now);
    try {
      for (;;) {
        const head = origin.queue.peek(isWaiting);
        if (!head) return;
        const breaker = origin.breaker.snapshot(now);
        if (breaker.state === "open") {
          // Hand them all back, ready when the breaker lets its next probe through.
          const until = breaker.openUntil ?? now;
          for (let slot = head as Slot | undefined; slot; slot = origin.queue.peek(isWaiting)) {
            origin.queue.shift();
            this.release(slot, until, "breaker");
          }
          this.wakeLoop();
          return;
        }
        if (origin.inFlight >= origin.limit.concurrency) {
          this.wakeAt(origin, head.sendBy); // a finishing call pumps again; else the wait ends at sendBy
          return;
        }
        const permit = origin.breaker.permit(now);
        if (permit.kind === "wait") {
          this.wakeAt(origin, head.sendBy); // half-open: the probe's end pumps again
          return;
        }
        if (origin.bucket) {
          const token = origin.bucket.take(now);
          if (!token.ok) {
            if (permit.kind === "probe") origin.breaker.record(permit.generation, "unknown", now); // give the probe back
            this.wakeAt(origin, Math.min(token.at, head.sendBy));
            return;
          }
        }
        origin.queue.shift();
        this.leaveQueue(head);
        head.phase = "calling";
        for (const u of this.usages(head)) u.inFlight++;
        this.inFlight++;
        void this.execute(head, permit.generation);
      }
    } finally {
      if (released) this.wakeLoop();
    }
  }

  /**
   * Releases the calls at the head of the queue that have waited MAX_WAIT_MS
   * (for the cap, the rate limit or a probe): ready again a little later, or
   * for a rate-limited origin about when their turn would come. True when any.
   */
  private releaseStale(origin: OriginState, now: number): boolean {
    const stale: Slot[] = [];
    for (let head = origin.queue.peek(isWaiting); head && head.sendBy <= now; head = origin.queue.peek(isWaiting)) {
      origin.queue.shift();
      this.leaveQueue(head);
      head.phase = "done";
      stale.push(head);
    }
    // The calls still queued go first; at the origin's rate, the k-th released one comes (queued + k) calls later.
    const perCallMs = origin.limit.ratePerSecond ? 1000 / origin.limit.ratePerSecond : 0;
    stale.forEach((slot, k) => {
      this.release(slot, now + Math.max(WAIT_RELEASE_MS, (origin.waiting + k + 1) * perCallMs), "wait");
    });
    return stale.length > 0;
  }

  /** Hands a waiting call back to the store unused (batched); it no longer counts against the lease budget. */
  private release(slot: Slot, readyAt: number, reason: ReleaseReason): void {
    const { row, origin } = slot;
    this.leaveQueue(slot);
    slot.phase = "done";
    this.slots.delete(row.executionId);
    for (const u of this.usages(slot)) u.released++;
    this.releases.add({
      item: {
        executionId: row.executionId,
        tenantId: row.tenantId,
        attempt: row.attempt,
        readyAt: Math.max(readyAt, this.clock.now()),
        pool: HTTP_POOL,
      },
      leaseUntil: slot.leaseUntil,
    });
    this.o.observer?.released?.(origin.origin, reason);
  }

  private leaveQueue(slot: Slot): void {
    if (slot.phase === "waiting") for (const u of this.usages(slot)) u.waiting--;
  }

  private wakeAt(origin: OriginState, at: number): void {
    if (origin.wake && origin.wake.at <= at) return;
    origin.wake?.handle.cancel();
    const handle = this.clock.setTimer(
      () => {
        origin.wake = null;
        this.pump(origin);
        this.wakeLoop();
      },
      Math.max(0, at - this.clock.now()),
    );
    origin.wake = { at, handle };
  }

  // ---- one call ---------------------------------------------------------------

  private async execute(slot: Slot, generation: number): Promise<void> {
    const { row, origin } = slot;
    let health: "healthy" | "unhealthy" | "unknown" = "unknown";
    let retryAfterMs: number | undefined;
    try {
      const timeoutMs = msOfSeconds(row.timeoutSeconds);
      // The lease must cover the call: about timeoutSeconds + GRACE_MS from now.
      const now = this.clock.now();
      if (slot.leaseUntil < now + timeoutMs + MIN_MARGIN_MS || slot.leaseUntil > now + timeoutMs + GRACE_MS + MAX_EXCESS_MS) {
        const renewed = await this.renew(slot, timeoutMs + GRACE_MS);
        if (!renewed) return;
      }
      const callTimeoutMs = Math.max(1, Math.min(timeoutMs, slot.leaseUntil - this.clock.now() - MIN_MARGIN_MS));
      const outcome = await deliver(
        {
          keys: this.keys,
          clock: this.clock,
          tracing: this.o.executor.tracing,
          stop: this.callAbort.signal,
          dispatcher: this.agent,
          maxResponseBytes: this.o.maxResponseBytes ?? 64 * 1024,
          keptBodyBytes: this.o.keptBodyBytes ?? 4 * 1024,
          payloadText: this.o.payloadText,
        },
        row,
        slot.target,
        callTimeoutMs,
      );
      health = outcome.health;
      retryAfterMs = outcome.retryAfterMs;
      const calledAt = this.clock.now();
      for (const u of this.usages(slot)) {
        u.calls++;
        u.lastCallAt = calledAt;
        u.lastStatus = outcome.status;
        if (outcome.error && outcome.health === "unhealthy") u.failures++;
        u.lastError = outcome.error ? outcome.error.message : null;
      }
      if (outcome.error) {
        this.fail(slot, outcome.error);
      } else {
        slot.phase = "done";
        this.slots.delete(row.executionId);
        this.acks.complete({ executionId: row.executionId, tenantId: row.tenantId, attempt: row.attempt, result: outcome.result ?? undefined });
      }
      this.o.observer?.call?.(outcome);
    } catch (error) {
      this.o.events.emit("error", { where: "http-target", error });
      this.fail(slot, {
        message: `internal error before the call completed: ${error instanceof Error ? error.message : String(error)}`,
        class: "transient",
      });
    } finally {
      const changed = origin.breaker.record(generation, health, this.clock.now(), retryAfterMs);
      if (changed) this.o.observer?.breaker?.(origin.origin, changed);
      for (const u of this.usages(slot)) u.inFlight--;
      this.inFlight--;
      origin.lastActiveAt = this.clock.now();
      slot.phase = "done";
      this.slots.delete(row.executionId);
      this.pump(origin);
      this.wakeLoop();
      if (this.inFlight === 0) this.callsDone?.();
    }
  }

  private fail(slot: Slot, error: FailRecord): void {
    slot.phase = "done";
    this.slots.delete(slot.row.executionId);
    const { timedOut, ...record } = error;
    this.acks.fail({
      executionId: slot.row.executionId,
      tenantId: slot.row.tenantId,
      attempt: slot.row.attempt,
      error: record as ErrorRecord,
      ...(timedOut ? { timedOut: true } : {}),
    });
  }

  /**
   * Sets the lease to leaseMs from now (the store caps it at the deadline).
   * False when the lease is gone, or the job was cancelled (the execution is
   * then failed and ends CANCELLED); the slot is finished in both cases.
   */
  private async renew(slot: Slot, leaseMs: number): Promise<boolean> {
    const { row } = slot;
    try {
      const r = await this.o.heartbeat({ tenantId: row.tenantId, executionId: row.executionId, attempt: row.attempt, leaseMs });
      if (r.status !== "ok") {
        this.o.executor.reportLost(row.executionId, row.attempt, "heartbeat");
        if (r.status === "lost" && r.possibleDuplicate) this.o.executor.reportDuplicate(row.executionId, r.possibleDuplicate, "heartbeat");
        this.drop(slot);
        return false;
      }
      slot.leaseUntil = r.leaseUntil;
      if (r.cancelRequested) {
        if (slot.phase === "waiting") this.leaveQueue(slot);
        this.fail(slot, { message: "not sent: the job was cancelled", class: "permanent" });
        return false;
      }
      return true;
    } catch (error) {
      this.o.events.emit("error", { where: "http-target", error });
      return slot.leaseUntil > this.clock.now() + MIN_MARGIN_MS; // the lease we have may still do
    }
  }

  private drop(slot: Slot): void {
    if (slot.phase === "waiting") this.leaveQueue(slot);
    slot.phase = "done";
    this.slots.delete(slot.row.executionId);
  }

  // ---- the keeper: releases calls that waited too long, forgets idle origins

  private scheduleKeeper(): void {
    if (this.state !== "running") return;
    this.keeper = this.clock.setTimer(() => {
      try {
        this.keep();
      } catch (error) {
        this.o.events.emit("error", { where: "http-target", error });
      }
      this.scheduleKeeper();
    }, KEEPER_INTERVAL_MS);
  }

  private keep(): void {
    const now = this.clock.now();
    for (const [key, origin] of this.origins) {
      const head = origin.queue.peek(isWaiting);
      if (head && head.sendBy <= now) this.pump(origin); // a backstop: the origin's wake timer should have done it
      const idle = !head && origin.inFlight === 0 && now - origin.lastActiveAt > IDLE_ORIGIN_MS;
      if (idle && origin.breaker.snapshot(now).state !== "open") {
        origin.wake?.handle.cancel();
        this.origins.delete(key);
      }
    }
  }
}
