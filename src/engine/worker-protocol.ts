// The worker protocol: lease (with acks riding on it), heartbeat, complete
// and fail, single and batched. Fencing is the store's: every call carries
// its attempt, and a stale one answers LEASE_LOST and changes nothing.

import {
  fenceOf,
  ALL_TENANTS,
  type AckItem,
  type CompleteItem,
  type ErrorRecord,
  type FailItem,
  type FailResponse,
  type HeartbeatRequest,
  type LeaseRequest,
  type LeaseResponse,
  type LeasedExecution,
} from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { DuetimeError, notFound } from "../core/errors.js";
import { isExecutionId } from "../core/ids.js";
import { msOfSeconds, toIso } from "../core/time.js";
import type { AckOutcome, Store } from "../store/store.js";
import type { Executor } from "./executor.js";
import { wirePayload } from "./payload-blobs.js";
import type { RequestContext } from "./service.js";

export class WorkerProtocol {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly executor: Executor,
  ) {}

  async lease(ctx: RequestContext, pool: string, request: LeaseRequest): Promise<LeaseResponse> {
    const complete = (request.complete ?? []).filter((i) => isExecutionId(i.executionId));
    const fail = (request.fail ?? []).filter((i) => isExecutionId(i.executionId));
    const tenantId = ackTenant(ctx);
    const result = await this.executor.lease({
      ...(tenantId !== null ? { tenantId } : {}),
      pool,
      workerId: request.workerId,
      max: request.max ?? 1,
      leaseMs: msOfSeconds(request.leaseSeconds ?? 30),
      waitMs: msOfSeconds(request.waitSeconds ?? 0),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      complete: complete.map((i) => ({ ...fenceOf(i), tenantId, result: i.result })),
      fail: fail.map((i) => ({ ...fenceOf(i), tenantId, error: i.error })),
    });
    const items: LeasedExecution[] = result.leased.map((r) => ({
      executionId: r.executionId,
      tenantId: r.tenantId,
      jobId: r.jobId,
      name: r.name,
      attempt: r.attempt,
      ...(r.leaseToken !== undefined ? { leaseToken: r.leaseToken } : {}),
      ...wirePayload(r.payload),
      scheduledFor: toIso(r.scheduledFor),
      leaseUntil: toIso(r.leaseUntil),
      timeoutSeconds: r.timeoutSeconds,
    }));
    // Tracing on: each item names its job's create span, which the worker SDK's handler span continues.
    if (this.executor.tracing) {
      result.leased.forEach((r, i) => {
        if (r.traceParent !== undefined) items[i]!.traceparent = r.traceParent;
      });
    }
    if (!request.complete?.length && !request.fail?.length) return { items };
    return {
      items,
      acks: [...mergeAcks(request.complete ?? [], complete, result.completed), ...mergeAcks(request.fail ?? [], fail, result.failed)],
    };
  }

  async heartbeat(ctx: RequestContext, executionId: string, request: HeartbeatRequest) {
    const res = isExecutionId(executionId)
      ? await this.store.executionHeartbeat({
          tenantId: ackTenant(ctx),
          ...fenceOf({ executionId, ...request }),
          ...(request.leaseSeconds !== undefined ? { leaseMs: msOfSeconds(request.leaseSeconds) } : {}),
          now: this.clock.storeNow(),
        })
      : ({ status: "not_found" } as const);
    if (res.status === "not_found") throw notFound("execution", executionId);
    if (res.status === "lost") {
      this.executor.reportLost(executionId, request.attempt, "heartbeat");
      if (res.possibleDuplicate) this.executor.reportDuplicate(executionId, res.possibleDuplicate, "heartbeat");
      throw leaseLost(executionId, request.attempt);
    }
    return { leaseUntil: toIso(res.leaseUntil), cancelRequested: res.cancelRequested };
  }

  async complete(ctx: RequestContext, executionId: string, attempt: number, result?: unknown, leaseToken?: string) {
    const [ack] = await this.completeMany(ctx, [{ executionId, attempt, result, ...(leaseToken !== undefined ? { leaseToken } : {}) }]);
    throwIfRejected(ack!);
    return { state: "SUCCEEDED" as const };
  }

  async fail(ctx: RequestContext, executionId: string, attempt: number, error: ErrorRecord, leaseToken?: string): Promise<FailResponse> {
    const [ack] = await this.failMany(ctx, [{ executionId, attempt, error, ...(leaseToken !== undefined ? { leaseToken } : {}) }]);
    throwIfRejected(ack!);
    const ok = ack as Extract<AckItem, { status: 200 }>;
    if (ok.state === "DEAD") return { state: "DEAD", dead: true };
    if (ok.state === "CANCELLED") return { state: "CANCELLED" };
    return { state: "FAILED", retryAt: ok.retryAt! };
  }

  async completeMany(ctx: RequestContext, items: CompleteItem[]): Promise<AckItem[]> {
    const known = items.filter((i) => isExecutionId(i.executionId));
    const outcomes = await this.executor.complete(known.map((i) => ({ ...fenceOf(i), tenantId: ackTenant(ctx), result: i.result })));
    return mergeAcks(items, known, outcomes);
  }

  async failMany(ctx: RequestContext, items: FailItem[]): Promise<AckItem[]> {
    const known = items.filter((i) => isExecutionId(i.executionId));
    const outcomes = await this.executor.fail(known.map((i) => ({ ...fenceOf(i), tenantId: ackTenant(ctx), error: i.error })));
    return mergeAcks(items, known, outcomes);
  }
}

function leaseLost(executionId: string, attempt: number): DuetimeError {
  return new DuetimeError("LEASE_LOST", `attempt ${attempt} of execution ${executionId} no longer holds the lease`);
}

function throwIfRejected(ack: AckItem): void {
  if (ack.status === 200) return;
  if (ack.status === 404) throw notFound("execution", ack.executionId);
  throw leaseLost(ack.executionId, ack.attempt);
}

/** One answer per input item, in order; malformed ids answer 404 without reaching the store. */
function mergeAcks(items: { executionId: string; attempt: number }[], known: unknown[], outcomes: AckOutcome[]): AckItem[] {
  const byItem = new Map(known.map((k, i) => [k, outcomes[i]!]));
  return items.map((item) => {
    const o = byItem.get(item) ?? ({ status: "not_found" } as const);
    const { executionId, attempt } = item;
    if (o.status === "not_found") {
      return { executionId, attempt, status: 404, error: { code: "NOT_FOUND", message: `execution ${executionId} not found` } };
    }
    if (o.status === "lost") {
      return { executionId, attempt, status: 409, error: { code: "LEASE_LOST", message: `attempt ${attempt} no longer holds the lease` } };
    }
    if (o.state === "DEAD") return { executionId, attempt, status: 200, state: "DEAD", dead: true };
    if (o.state === "CANCELLED") return { executionId, attempt, status: 200, state: "CANCELLED" };
    if (o.state === "READY") return { executionId, attempt, status: 200, state: "FAILED", retryAt: toIso(o.readyAt!) };
    return { executionId, attempt, status: 200, state: "SUCCEEDED" };
  });
}

/** The tenant a worker's call may reach: its own, or any (null) for a platform key (tenant "*"). */
function ackTenant(ctx: RequestContext): string | null {
  return ctx.tenantId === ALL_TENANTS ? null : ctx.tenantId;
}
