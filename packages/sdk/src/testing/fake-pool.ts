// Test support: an in-memory DuetimeApi for the worker protocol of one or
// more pools (lease with long poll and piggy-backed acks, heartbeat,
// complete, fail, and the batch forms), following docs/api.md: every lease
// grant is a new attempt with a new leaseToken, a stale attempt (or a token
// other than its grant's) answers 409 LEASE_LOST, a call without a token is
// judged by its attempt alone, a repeated complete or fail answers 200 again. It has no job routes.
// Use it directly as a Worker's `api`, or behind serveApi() over HTTP.

import { EventEmitter } from "node:events";
import type {
  AckItem,
  CompleteItem,
  CompleteResponse,
  ErrorRecord,
  FailItem,
  FailResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  LeaseRequest,
  LeaseResponse,
  LeasedExecution,
} from "../api.js";
import type { AttemptOptions, DuetimeApi } from "../operations.js";
import { DuetimeApiError } from "../errors.js";

interface Execution {
  executionId: string;
  pool: string;
  payload: unknown;
  attempt: number;
  state: "QUEUED" | "RUNNING" | "SUCCEEDED" | "FAILED" | "DEAD";
  lost: boolean;
  cancelRequested: boolean;
  result?: unknown;
  error?: ErrorRecord;
  /** The current grant's token. */
  leaseToken?: string;
  /** The attempt whose complete/fail was recorded (a repeat of it answers 200 again). */
  finishedAttempt?: number;
  /** The token that complete/fail carried, if any. */
  finishedToken?: string;
}

export class FakePool implements Partial<DuetimeApi> {
  readonly executions = new Map<string, Execution>();
  /** Calls by method name, e.g. calls.lease, calls.completeMany. */
  readonly calls: Record<string, number> = {};
  /** Every lease request as received. */
  readonly leaseRequests: LeaseRequest[] = [];
  readonly heartbeats: { executionId: string; attempt: number; leaseToken?: string }[] = [];
  /** Lease calls in progress (long polls waiting). */
  activeLeases = 0;
  /** Emits "change" after every state change. */
  readonly events = new EventEmitter();
  private seq = 0;
  private grants = 0;

  constructor() {
    this.events.setMaxListeners(0);
  }

  /** Enqueues executions in `pool`; returns their ids. */
  add(pool: string, payloads: unknown[]): string[] {
    const ids = payloads.map((payload) => {
      const executionId = `ex-${++this.seq}`;
      this.executions.set(executionId, { executionId, pool, payload, attempt: 0, state: "QUEUED", lost: false, cancelRequested: false });
      return executionId;
    });
    this.changed();
    return ids;
  }

  /** Every later call carrying the current attempt answers 409 LEASE_LOST (the execution is not queued again). */
  loseLease(executionId: string): void {
    const e = this.get(executionId);
    e.lost = true;
    this.changed();
  }

  requestCancel(executionId: string): void {
    this.get(executionId).cancelRequested = true;
    this.changed();
  }

  count(state: Execution["state"]): number {
    let n = 0;
    for (const e of this.executions.values()) if (e.state === state) n++;
    return n;
  }

  /** Resolves once pred() holds, re-checked after every change; rejects after timeoutMs. */
  waitFor(pred: () => boolean, what = "condition", timeoutMs = 15_000): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!pred()) return;
        clearTimeout(timer);
        this.events.off("change", check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.events.off("change", check);
        reject(new Error(`timed out waiting for ${what}`));
      }, timeoutMs);
      this.events.on("change", check);
    });
  }

  async lease(pool: string, request: LeaseRequest, options?: { signal?: AbortSignal }): Promise<LeaseResponse> {
    this.count_("lease");
    this.leaseRequests.push(structuredClone(request));
    this.changed();
    const acks = [...(request.complete ?? []).map((c) => this.ackComplete(c)), ...(request.fail ?? []).map((f) => this.ackFail(f))];
    const max = request.max ?? 1;
    const deadline = Date.now() + (request.waitSeconds ?? 0) * 1000;
    let items: LeasedExecution[] = [];
    this.activeLeases++;
    try {
      // Like a real server, grant nothing to a caller that has gone away.
      while (!options?.signal?.aborted) {
        items = this.grant(pool, max, request.leaseSeconds ?? 30);
        if (items.length > 0 || Date.now() >= deadline) break;
        await this.nextChange(deadline - Date.now(), options?.signal);
      }
    } finally {
      this.activeLeases--;
    }
    this.changed();
    return acks.length > 0 ? { items, acks } : { items };
  }

  async heartbeat(executionId: string, request: HeartbeatRequest): Promise<HeartbeatResponse> {
    this.count_("heartbeat");
    const e = this.current(executionId, request.attempt, request.leaseToken);
    this.heartbeats.push({ executionId, attempt: request.attempt, leaseToken: request.leaseToken });
    this.changed();
    return { leaseUntil: new Date(Date.now() + 30_000).toISOString(), cancelRequested: e.cancelRequested };
  }

  async complete(executionId: string, attempt: number, result?: unknown, options?: AttemptOptions): Promise<CompleteResponse> {
    this.count_("complete");
    const answer = this.ackComplete({ executionId, attempt, result, leaseToken: options?.leaseToken });
    if (answer.status !== 200) throw new DuetimeApiError("LEASE_LOST", answer.error.message, { status: 409 });
    return { state: "SUCCEEDED" };
  }

  async fail(executionId: string, attempt: number, error: ErrorRecord, options?: AttemptOptions): Promise<FailResponse> {
    this.count_("fail");
    const answer = this.ackFail({ executionId, attempt, error, leaseToken: options?.leaseToken });
    if (answer.status !== 200) throw new DuetimeApiError("LEASE_LOST", answer.error.message, { status: 409 });
    return answer.state === "DEAD" ? { state: "DEAD", dead: true } : { state: "FAILED", retryAt: new Date().toISOString() };
  }

  async completeMany(items: CompleteItem[]): Promise<AckItem[]> {
    this.count_("completeMany");
    return items.map((c) => this.ackComplete(c));
  }

  async failMany(items: FailItem[]): Promise<AckItem[]> {
    this.count_("failMany");
    return items.map((f) => this.ackFail(f));
  }

  async poolStats(pool: string): Promise<{ pending: number; queued: number; running: number }> {
    let queued = 0;
    let running = 0;
    for (const e of this.executions.values()) {
      if (e.pool !== pool) continue;
      if (e.state === "QUEUED") queued++;
      if (e.state === "RUNNING") running++;
    }
    return { pending: 0, queued, running };
  }

  private grant(pool: string, max: number, leaseSeconds: number): LeasedExecution[] {
    const items: LeasedExecution[] = [];
    for (const e of this.executions.values()) {
      if (items.length >= max) break;
      if (e.pool !== pool || e.state !== "QUEUED") continue;
      e.state = "RUNNING";
      e.attempt++;
      e.lost = false;
      e.leaseToken = `g${++this.grants}`;
      items.push({
        executionId: e.executionId,
        tenantId: "default",
        jobId: `job-${e.executionId}`,
        name: "fake",
        attempt: e.attempt,
        payload: e.payload,
        scheduledFor: "2026-01-01T00:00:00.000Z",
        leaseUntil: new Date(Date.now() + leaseSeconds * 1000).toISOString(),
        timeoutSeconds: 300,
        leaseToken: e.leaseToken,
      });
    }
    return items;
  }

  private ackComplete(c: CompleteItem): AckItem {
    const e = this.executions.get(c.executionId);
    if (e && e.state === "SUCCEEDED" && e.finishedAttempt === c.attempt)
      return { executionId: c.executionId, attempt: c.attempt, status: 200, state: "SUCCEEDED" };
    if (!this.holds(e, c)) return this.lost(c);
    e.state = "SUCCEEDED";
    e.result = c.result;
    e.finishedAttempt = c.attempt;
    e.finishedToken = c.leaseToken;
    this.changed();
    return { executionId: c.executionId, attempt: c.attempt, status: 200, state: "SUCCEEDED" };
  }

  private ackFail(f: FailItem): AckItem {
    const e = this.executions.get(f.executionId);
    const dead = f.error.class === "permanent";
    if (e && (e.state === "FAILED" || e.state === "DEAD") && e.finishedAttempt === f.attempt) {
      return { executionId: f.executionId, attempt: f.attempt, status: 200, state: e.state };
    }
    if (!this.holds(e, f)) return this.lost(f);
    e.state = dead ? "DEAD" : "FAILED";
    e.error = f.error;
    e.finishedAttempt = f.attempt;
    e.finishedToken = f.leaseToken;
    this.changed();
    return dead
      ? { executionId: f.executionId, attempt: f.attempt, status: 200, state: "DEAD", dead: true }
      : { executionId: f.executionId, attempt: f.attempt, status: 200, state: "FAILED", retryAt: new Date().toISOString() };
  }

  private lost(item: { executionId: string; attempt: number }): AckItem {
    return {
      executionId: item.executionId,
      attempt: item.attempt,
      status: 409,
      error: { code: "LEASE_LOST", message: `attempt ${item.attempt} of ${item.executionId} is not leased` },
    };
  }

  /** Whether the call's attempt (and its token, when it has one) holds the execution's lease. */
  private holds(e: Execution | undefined, call: { attempt: number; leaseToken?: string }): e is Execution {
    if (e?.state !== "RUNNING" || e.attempt !== call.attempt || e.lost) return false;
    return call.leaseToken === undefined || call.leaseToken === e.leaseToken;
  }

  private current(executionId: string, attempt: number, leaseToken?: string): Execution {
    const e = this.executions.get(executionId);
    if (!e) throw new DuetimeApiError("NOT_FOUND", `execution ${executionId} not found`, { status: 404 });
    if (!this.holds(e, { attempt, leaseToken }))
      throw new DuetimeApiError("LEASE_LOST", `attempt ${attempt} of ${executionId} is not leased`, { status: 409 });
    return e;
  }

  private get(executionId: string): Execution {
    const e = this.executions.get(executionId);
    if (!e) throw new Error(`FakePool: no execution ${executionId}`);
    return e;
  }

  private nextChange(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.events.off("change", done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.events.on("change", done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  private count_(method: string): void {
    this.calls[method] = (this.calls[method] ?? 0) + 1;
  }

  private changed(): void {
    this.events.emit("change");
  }
}
