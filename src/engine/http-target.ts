// The in-server executor for http targets. It is a worker like any other: it
// leases from the $http pool (every tenant), and each call is an attempt
// under a lease recorded before the call is sent, so a server that dies
// mid-call has its lease expire and the call sent again with the same
// Idempotency-Key and the next attempt number.
//
// Between the lease and the call, each leased execution waits in its
// origin's queue (scheme://host:port) for three gates:
// - the origin's circuit breaker (circuit-breaker.ts): while it is open the
//   execution is *held*: kept leased in memory, its lease renewed by
//   heartbeats, and sent once a probe has closed the breaker. No attempt is
//   spent and nothing is dead-lettered because of the pause;
// - the origin's cap on calls in flight (default 64);
// - the origin's rate limit (a token bucket, off by default).
//
// Why hold rather than hand back: the store has no way to return a leased
// execution to READY without counting its attempt (every lease is a new
// attempt number and counts toward maxAttempts, and a fail or an expired
// lease records one). So we lease with a deadline stretched by the hold
// budget (graceMs = GRACE_MS + holdSeconds; the store caps heartbeats at
// timeoutSeconds + graceMs after the lease) and keep each lease short with
// heartbeats: about timeoutSeconds + 5 s once the call is sent, as the
// contract says. An execution still held when its hold budget runs out
// (default 10 minutes) is sent anyway, as a real attempt; held executions
// beyond maxHeld slow leasing down. Both limits go away once the store can
// release a lease without counting it (see docs/http-targets.md).

import type { ErrorRecord, HttpTarget, TargetStatus } from "../core/api.js";
import type { Clock, TimerHandle } from "../core/clock.js";
import { toIso } from "../core/time.js";
import type { LeasedRow } from "../store/store.js";
import { HTTP_POOL } from "../store/store.js";
import { Agent } from "undici";
import { setMaxListeners } from "node:events";
import { AckBuffer } from "./ack-buffer.js";
import { CircuitBreaker, type BreakerSettings, type BreakerState } from "./circuit-breaker.js";
import { EgressAllowList, guardedConnector, originOf, urlRefusal } from "./egress.js";
import type { EngineEvents } from "./events.js";
import type { Executor } from "./executor.js";
import { callTarget, type CallOutcome, type FailRecord } from "./http-call.js";
import { OriginLimits, TokenBucket, type OriginLimit, type ResolvedLimit } from "./origin-limits.js";
import { SigningKeys, signatureHeader } from "../core/signing.js";

/** Tuning of the HTTP-target executor; every field has a default. */
export interface HttpTargetSettings {
  /** Calls in flight from this node, every origin together (default 256). */
  concurrency?: number;
  /** Limits of every origin: calls in flight (default 64) and calls per second (default none). */
  origin?: OriginLimit;
  /** Limits of particular origins, by origin ("https://api.example" or "http://10.0.0.5:8080"). */
  origins?: Record<string, OriginLimit>;
  /** When an origin's breaker opens, how long it stays open, how it backs off. */
  breaker?: BreakerSettings;
  /** Longest a leased call waits in memory for its origin before it is sent anyway (default 600 s). */
  holdSeconds?: number;
  /** Calls held for open breakers beyond which leasing slows down (default 10,000). */
  maxHeld?: number;
  /** Response bytes read before the connection is cut (default 64 KiB). */
  maxResponseBytes?: number;
  /** Response body bytes kept in the attempt's record (default 4 KiB). */
  keptBodyBytes?: number;
  /** At stop(), calls in flight get this long to finish before they are aborted (default 5 s). */
  drainSeconds?: number;
}

export type HeartbeatResult = { status: "ok"; leaseUntil: number; cancelRequested: boolean } | { status: "lost" } | { status: "not_found" };

export interface HttpTargetOptions extends HttpTargetSettings {
  executor: Executor;
  events: EngineEvents;
  clock: Clock;
  nodeId: string;
  /** Renews a lease (the store's executionHeartbeat at the engine's clock). */
  heartbeat(p: { tenantId: string; executionId: string; attempt: number; leaseMs: number }): Promise<HeartbeatResult>;
  /** Hosts, addresses or CIDR ranges that may be reached even when they are loopback or private. */
  allowTargetHosts?: string[];
  /** Signing secrets by tenant, newest first; several during a rotation. */
  signingSecrets?: Record<string, string | readonly string[]>;
  /** Observers (metrics). */
  observer?: HttpTargetObserver;
}

export interface HttpTargetObserver {
  call?(outcome: CallOutcome): void;
  breaker?(origin: string, state: BreakerState): void;
  holdExpired?(origin: string): void;
}

/** Past timeoutSeconds, the lease of a call in flight lasts this much longer (the time to record its outcome). */
export const GRACE_MS = 5_000;
/** A call goes out only with at least timeoutSeconds + this left on its lease; a longer lease is cut back to timeoutSeconds + GRACE_MS. */
const MIN_MARGIN_MS = 1_000;
const MAX_EXCESS_MS = 5_000;
/** Waiting executions are renewed for at least this long, and when less than RENEW_BEFORE_MS is left. */
const WAIT_LEASE_MS = 30_000;
const RENEW_BEFORE_MS = 10_000;
const KEEPER_INTERVAL_MS = 1_000;
/** An idle, healthy origin is forgotten after this long. */
const IDLE_ORIGIN_MS = 10 * 60_000;
const DEFAULT_TIMEOUT_MS = 300_000;
/** Finished calls wait this long for company before their outcomes are written (unless a lease call takes them first). */
const ACK_DELAY_MS = 10;
/**
 * While the store has a backlog and calls are queued for their origins anyway,
 * lease at least this many at a time: one commit per call is what makes a herd
 * slow. Without a backlog, a call that becomes ready is leased at once.
 */
const LEASE_BATCH = 64;

/** A leased execution from its lease until its outcome is handed to the ack batcher. */
interface Slot {
  row: LeasedRow;
  target: HttpTarget;
  origin: OriginState;
  leasedAt: number;
  leaseUntil: number;
  /** Past this, a held execution is sent even though its origin's breaker is open. */
  holdUntil: number;
  phase: "waiting" | "calling" | "done";
  renewing: boolean;
}

interface OriginState {
  origin: string;
  breaker: CircuitBreaker;
  limit: ResolvedLimit;
  bucket: TokenBucket | null;
  queue: Fifo<Slot>;
  /** Slots in the queue still waiting (the queue drops finished ones lazily). */
  waiting: number;
  inFlight: number;
  wake: { at: number; handle: TimerHandle } | null;
  lastActiveAt: number;
  calls: number;
  failures: number;
  lastStatus: number | null;
  lastError: string | null;
  lastCallAt: number | null;
}

export class HttpTargetRunner {
  private readonly o: HttpTargetOptions;
  private readonly clock: Clock;
  private readonly agent: Agent;
  private readonly acks: AckBuffer;
  private readonly allow: EgressAllowList;
  private readonly keys: SigningKeys;
  private readonly limits: OriginLimits;
  private readonly concurrency: number;
  private readonly holdMs: number;
  private readonly maxHeld: number;
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
    this.holdMs = (options.holdSeconds ?? 600) * 1000;
    this.maxHeld = options.maxHeld ?? 10_000;
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
    this.acks = new AckBuffer(options.executor, this.clock, ACK_DELAY_MS, 500, (error) => this.o.events.emit("error", { where: "http-target", error }));
    setMaxListeners(0, this.callAbort.signal); // one listener per call in flight
  }

  start(): void {
    if (this.state !== "idle") return;
    this.state = "running";
    this.loop = this.run();
    this.scheduleKeeper();
  }

  /**
   * Stops leasing; executions still waiting for their origin are failed as
   * transient ("not sent") so their history says why; calls in flight get
   * drainSeconds to finish, then are aborted; outcomes are written.
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
      for (const slot of this.slots.values()) {
        if (slot.phase !== "waiting") continue;
        this.leaveQueue(slot);
        this.fail(slot, { message: "not sent: the server stopped while the call waited for its origin", class: "transient" });
      }
      if (this.inFlight > 0) {
        const drained = new Promise<void>((resolve) => (this.callsDone = resolve));
        let timer: TimerHandle | null = null;
        await Promise.race([drained, new Promise<void>((resolve) => (timer = this.clock.setTimer(resolve, (this.o.drainSeconds ?? 5) * 1000)))]);
        (timer as TimerHandle | null)?.cancel();
        this.callAbort.abort();
        if (this.inFlight > 0) await drained;
      }
    }
    await this.acks.flush().catch(() => {});
    await this.agent.close().catch(() => {});
    this.state = "stopped";
  }

  /** The origins this node calls, for GET /v1/targets. */
  targets(): TargetStatus[] {
    const now = this.clock.now();
    return [...this.origins.values()].map((o) => {
      const b = o.breaker.snapshot(now);
      return {
        origin: o.origin,
        breaker: b.state,
        inFlight: o.inFlight,
        waiting: o.waiting,
        consecutiveFailures: b.consecutiveFailures,
        openUntil: b.openUntil === null ? null : toIso(b.openUntil),
        opened: b.opened,
        lastOpenedAt: b.lastOpenedAt === null ? null : toIso(b.lastOpenedAt),
        limits: { concurrency: o.limit.concurrency, ratePerSecond: o.limit.ratePerSecond },
        calls: o.calls,
        failures: o.failures,
        lastStatus: o.lastStatus,
        lastError: o.lastError,
        lastCallAt: o.lastCallAt === null ? null : toIso(o.lastCallAt),
      };
    });
  }

  /** Totals for metrics. */
  totals(): { inFlight: number; waiting: number; held: number } {
    let waiting = 0;
    let held = 0;
    for (const o of this.origins.values()) {
      waiting += o.waiting;
      if (o.breaker.snapshot(this.clock.now()).state !== "closed") held += o.waiting;
    }
    return { inFlight: this.inFlight, waiting, held };
  }

  // ---- leasing ----------------------------------------------------------------

  private async run(): Promise<void> {
    while (this.state === "running") {
      const { budget, queued } = this.leaseBudget();
      if (budget <= 0 || (this.backlog && queued > 0 && budget < Math.min(LEASE_BATCH, Math.ceil(this.concurrency / 4)))) {
        await new Promise<void>((resolve) => (this.roomFreed = resolve));
        continue;
      }
      const acks = this.acks.take();
      try {
        const { leased } = await this.o.executor.lease({
          pool: HTTP_POOL,
          workerId: this.o.nodeId,
          max: budget,
          leaseMs: this.leaseMs,
          graceMs: GRACE_MS + this.holdMs,
          waitMs: 5_000,
          signal: this.leaseAbort.signal,
          complete: acks.complete,
          fail: acks.fail,
        });
        const now = this.clock.now();
        for (const row of leased) this.admit(row, now);
        this.backlog = leased.length === budget;
        const last = leased[leased.length - 1];
        if (last) this.leaseMs = last.timeoutSeconds * 1000 + GRACE_MS;
      } catch (error) {
        this.acks.restore(acks);
        if (this.state !== "running") break;
        this.o.events.emit("error", { where: "http-target", error });
        await new Promise<void>((resolve) => this.clock.setTimer(resolve, 500));
      }
    }
  }

  /**
   * How many more executions to lease: free call slots, less those already
   * waiting for a capped or rate-limited origin; executions held for an open
   * breaker count only beyond maxHeld.
   */
  private leaseBudget(): { budget: number; queued: number } {
    const { waiting, held } = this.totals();
    const queued = waiting - held;
    return { budget: this.concurrency - this.inFlight - queued - Math.max(0, held - this.maxHeld), queued };
  }

  private wakeLoop(): void {
    const wake = this.roomFreed;
    this.roomFreed = null;
    wake?.();
  }

  private admit(row: LeasedRow, now: number): void {
    const target = row.target as HttpTarget;
    const { origin: key, refusal } = target.type !== "http" ? { origin: "", refusal: `not an http target (${String(target.type)})` } : this.urlInfo(target.url);
    if (refusal !== null) {
      this.acks.fail({ executionId: row.executionId, tenantId: row.tenantId, attempt: row.attempt, error: { message: refusal, class: "permanent", code: "EGRESS_REFUSED" } });
      return;
    }
    const origin = this.originState(key, now);
    const slot: Slot = {
      row,
      target,
      origin,
      leasedAt: now,
      leaseUntil: row.leaseUntil,
      holdUntil: now + Math.max(0, this.holdMs - GRACE_MS),
      phase: "waiting",
      renewing: false,
    };
    this.slots.set(row.executionId, slot);
    origin.queue.push(slot);
    origin.waiting++;
    this.pump(origin);
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
        waiting: 0,
        inFlight: 0,
        wake: null,
        lastActiveAt: now,
        calls: 0,
        failures: 0,
        lastStatus: null,
        lastError: null,
        lastCallAt: null,
      };
      this.origins.set(key, o);
    }
    o.lastActiveAt = now;
    return o;
  }

  // ---- the gates --------------------------------------------------------------

  /** Sends as many of the origin's waiting executions as its breaker, cap and rate allow. */
  private pump(origin: OriginState): void {
    if (this.state !== "running") return;
    const now = this.clock.now();
    for (;;) {
      const head = origin.queue.peek((s) => s.phase === "waiting");
      if (!head) return;
      if (origin.inFlight >= origin.limit.concurrency) return; // a finishing call pumps again
      const permit = origin.breaker.permit(now);
      let generation: number;
      let probe = false;
      if (permit.kind === "wait") {
        if (head.holdUntil > now) {
          this.wakeAt(origin, Math.min(permit.until ?? Infinity, head.holdUntil));
          return;
        }
        // Held for the whole hold budget: sent anyway, as a real attempt.
        generation = origin.breaker.currentGeneration();
        this.o.observer?.holdExpired?.(origin.origin);
      } else {
        generation = permit.generation;
        probe = permit.kind === "probe";
        if (origin.bucket) {
          const token = origin.bucket.take(now);
          if (!token.ok) {
            if (probe) origin.breaker.record(generation, "unknown", now); // give the probe back
            this.wakeAt(origin, token.at);
            return;
          }
        }
      }
      origin.queue.shift();
      this.leaveQueue(head);
      head.phase = "calling";
      origin.inFlight++;
      this.inFlight++;
      void this.execute(head, generation);
    }
  }

  private leaveQueue(slot: Slot): void {
    if (slot.phase === "waiting") slot.origin.waiting--;
  }

  private wakeAt(origin: OriginState, at: number): void {
    if (!Number.isFinite(at)) return; // a probe in flight wakes the origin when it ends
    if (origin.wake && origin.wake.at <= at) return;
    origin.wake?.handle.cancel();
    const handle = this.clock.setTimer(() => {
      origin.wake = null;
      this.pump(origin);
      this.wakeLoop();
    }, Math.max(0, at - this.clock.now()));
    origin.wake = { at, handle };
  }

  // ---- one call ---------------------------------------------------------------

  private async execute(slot: Slot, generation: number): Promise<void> {
    const { row, origin } = slot;
    let health: "healthy" | "unhealthy" | "unknown" = "unknown";
    let retryAfterMs: number | undefined;
    try {
      const timeoutMs = row.timeoutSeconds * 1000;
      // The lease must cover the call: about timeoutSeconds + GRACE_MS from now.
      const now = this.clock.now();
      if (slot.leaseUntil < now + timeoutMs + MIN_MARGIN_MS || slot.leaseUntil > now + timeoutMs + GRACE_MS + MAX_EXCESS_MS) {
        const renewed = await this.renew(slot, timeoutMs + GRACE_MS);
        if (!renewed) return;
      }
      const callTimeoutMs = Math.max(1, Math.min(timeoutMs, slot.leaseUntil - this.clock.now() - MIN_MARGIN_MS));
      const body = slot.target.method === "GET" ? undefined : JSON.stringify(row.payload ?? null);
      const outcome = await callTarget({
        url: slot.target.url,
        method: slot.target.method ?? "POST",
        headers: this.headers(row, slot.target, body ?? ""),
        body,
        timeoutMs: callTimeoutMs,
        timeoutSeconds: row.timeoutSeconds,
        stop: this.callAbort.signal,
        dispatcher: this.agent,
        clock: this.clock,
        maxResponseBytes: this.o.maxResponseBytes ?? 64 * 1024,
        keptBodyBytes: this.o.keptBodyBytes ?? 4 * 1024,
      });
      health = outcome.health;
      retryAfterMs = outcome.retryAfterMs;
      origin.calls++;
      origin.lastCallAt = this.clock.now();
      origin.lastStatus = outcome.status;
      if (outcome.error) {
        if (outcome.health === "unhealthy") origin.failures++;
        origin.lastError = outcome.error.message;
        this.fail(slot, outcome.error);
      } else {
        origin.lastError = null;
        slot.phase = "done";
        this.slots.delete(row.executionId);
        this.acks.complete({ executionId: row.executionId, tenantId: row.tenantId, attempt: row.attempt, result: outcome.result ?? undefined });
      }
      this.o.observer?.call?.(outcome);
    } catch (error) {
      this.o.events.emit("error", { where: "http-target", error });
      this.fail(slot, { message: `internal error before the call completed: ${error instanceof Error ? error.message : String(error)}`, class: "transient" });
    } finally {
      const changed = origin.breaker.record(generation, health, this.clock.now(), retryAfterMs);
      if (changed) this.o.observer?.breaker?.(origin.origin, changed);
      origin.inFlight--;
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
    slot.renewing = true;
    try {
      const r = await this.o.heartbeat({ tenantId: row.tenantId, executionId: row.executionId, attempt: row.attempt, leaseMs });
      if (r.status !== "ok") {
        this.o.events.emit("lease:lost", { executionId: row.executionId, attempt: row.attempt, call: "heartbeat" });
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
      return slot.leaseUntil > this.clock.now() + MIN_MARGIN_MS; // try again on the next tick
    } finally {
      slot.renewing = false;
    }
  }

  private drop(slot: Slot): void {
    if (slot.phase === "waiting") this.leaveQueue(slot);
    slot.phase = "done";
    this.slots.delete(slot.row.executionId);
  }

  private headers(row: LeasedRow, target: HttpTarget, body: string): Record<string, string> {
    const scheduledFor = toIso(row.scheduledFor);
    const timestamp = String(Math.floor(this.clock.now() / 1000));
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(target.headers ?? {})) {
      if (!RESERVED_HEADERS.has(name.toLowerCase())) headers[name] = value;
    }
    headers["content-type"] = "application/json";
    headers["idempotency-key"] = `${row.jobId}:${scheduledFor}`;
    headers["duetime-execution-id"] = row.executionId;
    headers["duetime-attempt"] = String(row.attempt);
    headers["duetime-scheduled-for"] = scheduledFor;
    headers["duetime-timestamp"] = timestamp;
    const secrets = this.keys.forTenant(row.tenantId);
    if (secrets.length > 0) headers["duetime-signature"] = signatureHeader(secrets, timestamp, body);
    return headers;
  }

  // ---- the keeper: renews waiting leases, releases expired holds, forgets idle origins

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
    for (const slot of this.slots.values()) {
      if (slot.phase === "waiting" && !slot.renewing && slot.leaseUntil - now < RENEW_BEFORE_MS) {
        void this.renew(slot, Math.max(WAIT_LEASE_MS, slot.row.timeoutSeconds * 1000 + GRACE_MS)).then((ok) => {
          if (!ok) this.wakeLoop();
        });
      }
    }
    for (const [key, origin] of this.origins) {
      const head = origin.queue.peek((s) => s.phase === "waiting");
      if (head && head.holdUntil <= now) this.pump(origin);
      const idle = !head && origin.inFlight === 0 && now - origin.lastActiveAt > IDLE_ORIGIN_MS;
      if (idle && origin.breaker.snapshot(now).state === "closed") {
        origin.wake?.handle.cancel();
        this.origins.delete(key);
      }
    }
  }
}

/** Headers the contract sets; a job's own headers cannot override them. */
const RESERVED_HEADERS = new Set([
  "content-type",
  "content-length",
  "transfer-encoding",
  "connection",
  "host",
  "idempotency-key",
  "duetime-execution-id",
  "duetime-attempt",
  "duetime-scheduled-for",
  "duetime-timestamp",
  "duetime-signature",
]);

/** A FIFO queue with O(1) shift that skips entries the caller no longer wants. */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  /** The first item that is still live; dead ones before it are dropped. */
  peek(live: (item: T) => boolean): T | undefined {
    while (this.head < this.items.length) {
      const item = this.items[this.head]!;
      if (live(item)) return item;
      this.shift();
    }
    return undefined;
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}
