// Tenants' quotas on creating jobs (GET/PUT /v1/tenants/{tenantId}/limits):
// the payload size, the create rate and the pending jobs. Over one, a create
// answers 429 RESOURCE_EXHAUSTED with Retry-After and the quota named in the
// details; nothing already accepted is touched. (maxLeasedAttempts is the
// lease's own: the store grants no more than it allows.)
//
// Each node enforces what it sees: its own token bucket per tenant (a
// cluster of N nodes admits up to N times the rate), and the pending count
// read from the store at most every PENDING_REFRESH_MS plus what this node
// created since (other nodes' creates in that window may overshoot it).

import type { JobSpec, TenantLimitSettings } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { DuetimeError } from "../core/errors.js";
import { TokenBucket } from "../core/token-bucket.js";
import { DEFAULT_TENANT_LIMITS, type Store } from "../store/store.js";

/** How long a tenant's limits, read from the store, are trusted on a node that did not set them. */
const LIMITS_TTL_MS = 5_000;
/** How long a pending count read from the store is trusted (plus this node's creates since). */
const PENDING_REFRESH_MS = 2_000;
/** A tenant at its pending-jobs quota is told to retry after this long: jobs must end first. */
const PENDING_RETRY_AFTER_S = 5;
/** A payload over the quota: raising the quota, not waiting, is what helps; retry slowly. */
const PAYLOAD_RETRY_AFTER_S = 60;

export class TenantQuotas {
  private readonly limits = new Map<string, { limits: TenantLimitSettings; at: number }>();
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly pending = new Map<string, { count: number; at: number }>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** A tenant's limits, defaults filled in (cached LIMITS_TTL_MS). */
  async limitsOf(tenantId: string): Promise<TenantLimitSettings> {
    const now = this.clock.now();
    const cached = this.limits.get(tenantId);
    if (cached && now - cached.at < LIMITS_TTL_MS) return cached.limits;
    const limits = { ...DEFAULT_TENANT_LIMITS, ...(await this.store.tenantLimitsGet({ tenantId })) };
    this.limits.set(tenantId, { limits, at: now });
    return limits;
  }

  /** This node set them: use them at once. */
  remember(tenantId: string, limits: TenantLimitSettings): void {
    this.limits.set(tenantId, { limits, at: this.clock.now() });
    this.buckets.delete(tenantId);
  }

  /** Throws 429 when one job's payload is over the tenant's maxPayloadBytes. */
  checkPayload(limits: TenantLimitSettings, spec: JobSpec, field: string): void {
    if (limits.maxPayloadBytes === null || spec.payload === undefined) return;
    const bytes = Buffer.byteLength(JSON.stringify(spec.payload));
    if (bytes <= limits.maxPayloadBytes) return;
    throw exhausted(
      "maxPayloadBytes",
      limits.maxPayloadBytes,
      PAYLOAD_RETRY_AFTER_S,
      `${field}: the payload is ${bytes} bytes, over this tenant's maxPayloadBytes of ${limits.maxPayloadBytes}; send a smaller payload or raise the quota`,
    );
  }

  /** Admits n jobs of a tenant under its create rate and pending quota, or throws 429 (admitting none). */
  async admit(tenantId: string, limits: TenantLimitSettings, n: number): Promise<void> {
    const now = this.clock.now();
    const bucket = limits.createRatePerSecond === null ? undefined : this.bucketOf(tenantId, limits.createRatePerSecond, now);
    const wait = bucket?.waitFor(n, now) ?? 0;
    if (wait > 0) {
      const rate = limits.createRatePerSecond as number;
      const burst = Math.floor(Math.max(1, rate));
      throw exhausted(
        "createRatePerSecond",
        rate,
        wait,
        `this tenant may create ${rate} jobs per second (bursts of ${burst}); ${n} now would exceed it${n > burst ? ": send smaller batches" : ""}`,
      );
    }
    if (limits.maxPendingJobs !== null) {
      const pending = await this.pendingOf(tenantId, now);
      if (pending.count + n > limits.maxPendingJobs) {
        throw exhausted(
          "maxPendingJobs",
          limits.maxPendingJobs,
          PENDING_RETRY_AFTER_S,
          `this tenant holds ${pending.count} jobs not yet ended, and may hold ${limits.maxPendingJobs}; ${n} more would exceed it`,
        );
      }
      pending.count += n;
    }
    bucket?.spend(n);
  }

  /** The tenant's bucket, bursts of max(1, rate); a new, full one when its rate changed. */
  private bucketOf(tenantId: string, rate: number, now: number): TokenBucket {
    let bucket = this.buckets.get(tenantId);
    if (bucket?.rate !== rate) this.buckets.set(tenantId, (bucket = new TokenBucket(rate, Math.max(1, rate), now)));
    return bucket;
  }

  private async pendingOf(tenantId: string, now: number): Promise<{ count: number; at: number }> {
    const cached = this.pending.get(tenantId);
    if (cached && now - cached.at < PENDING_REFRESH_MS) return cached;
    const fresh = { count: await this.store.jobCountPending({ tenantId }), at: now };
    this.pending.set(tenantId, fresh);
    return fresh;
  }
}

function exhausted(quota: keyof TenantLimitSettings, limit: number, retryAfterSeconds: number, message: string): DuetimeError {
  return new DuetimeError("RESOURCE_EXHAUSTED", `${quota}: ${message}`, { quota, limit }, Math.max(1, Math.ceil(retryAfterSeconds)));
}
