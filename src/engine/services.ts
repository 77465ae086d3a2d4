// The Service (service.ts) as one object, composed of one part per noun:
// jobs (jobs-service.ts), dead letters, the worker protocol, API keys,
// signing secrets, tenants' limits, the audit log, stats, the schedule
// preview, and the cluster view. The server and the embedded client call this; each method
// here only says which part answers.

import type { TargetStatus } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { expectedVersion } from "../core/validate.js";
import type { Store } from "../store/store.js";
import { AuditLog } from "./audit-log.js";
import { ClusterService } from "./cluster-view.js";
import { DeadLetterService } from "./dead-letters.js";
import { type ReplayDriver, ReplayService } from "./dead-letter-replays.js";
import { listPossibleDuplicates } from "./possible-duplicates.js";
import type { Executor } from "./executor.js";
import { JobsService, type JobsServiceOptions } from "./jobs-service.js";
import { KeyManager } from "./keys.js";
import { SchedulePreview } from "./schedule-preview.js";
import { type Service, tenantScope } from "./service.js";
import { SigningSecretReader } from "./signing-secrets.js";
import { StatsService } from "./stats.js";
import { EngineEvents } from "./events.js";
import { PayloadBlobs } from "./payload-blobs.js";
import { DEFAULT_PAYLOAD_LIMITS } from "../core/payload-refs.js";
import { TenantQuotas } from "./quotas.js";
import { SpikeWatch } from "./spikes.js";
import { TenantsService } from "./tenants.js";
import type { StoreHealth } from "./store-health.js";
import { WorkerProtocol } from "./worker-protocol.js";

export interface ServiceOptions extends Omit<JobsServiceOptions, "quotas" | "spikes" | "payloads"> {
  /** Payloads over the inline limit (payload-blobs.ts); default: kept in the store, with the default limits. */
  payloads?: PayloadBlobs;
  /** Where the services report what metrics count (spike warnings). */
  events?: EngineEvents;
  store: Store;
  clock: Clock;
  executor: Executor;
  /** The HTTP-target runner's view of its origins, all tenants' or one's (empty without the runner). */
  targets?: (view: { tenantId?: string }) => TargetStatus[];
  /** Reads each tenant's signing secrets (GET /v1/secrets/signing); without it, only the stored ones are shown. */
  signingSecrets?: SigningSecretReader;
  /** Readiness: the store answers and takes writes. */
  storeHealth: Pick<StoreHealth, "ready">;
  /** Drives bulk dead-letter replays; woken when one is created (without it they wait for a driver elsewhere). */
  replays?: Pick<ReplayDriver, "wake">;
}

export function createService(o: ServiceOptions): Service {
  const reads = o.reads ?? o.store;
  const quotas = new TenantQuotas(o.store, o.clock);
  const payloads =
    o.payloads ?? new PayloadBlobs({ store: o.store, clock: o.clock, events: o.events ?? new EngineEvents(), limits: DEFAULT_PAYLOAD_LIMITS });
  const jobs = new JobsService({ ...o, quotas, payloads, spikes: new SpikeWatch(o.store, o.clock, o.events) });
  const deadLetters = new DeadLetterService(o.store, reads, o.clock, o.executor);
  const replays = new ReplayService(o.store, o.clock, o.replays ?? null);
  const protocol = new WorkerProtocol(o.store, o.clock, o.executor);
  const keys = new KeyManager(o.store, o.clock);
  const tenants = new TenantsService(o.store, o.clock, quotas);
  const secrets = o.signingSecrets ?? new SigningSecretReader(o.store, new Map());
  const audit = new AuditLog(reads);
  const stats = new StatsService(reads, o.clock);
  const preview = new SchedulePreview(o.clock);
  const cluster = new ClusterService({
    store: o.store,
    clock: o.clock,
    storeHealth: o.storeHealth,
    membership: o.scheduler.shards,
    ...(o.targets ? { targets: o.targets } : {}),
  });
  return {
    createJob: (ctx, spec, options) => jobs.createJob(ctx, spec, options?.idempotencyKey),
    createJobs: (ctx, items, options) => jobs.createJobs(ctx, items, options),
    getJob: (ctx, jobId) => jobs.getJob(ctx, jobId),
    listJobs: (ctx, query = {}) => jobs.listJobs(ctx, query),
    cancelJob: (ctx, jobId) => jobs.cancelJob(ctx, jobId),
    pauseJob: (ctx, jobId) => jobs.pauseJob(ctx, jobId),
    resumeJob: (ctx, jobId) => jobs.resumeJob(ctx, jobId),
    triggerJob: (ctx, jobId) => jobs.triggerJob(ctx, jobId),
    updateJob: async (ctx, jobId, patch, options) => jobs.updateJob(ctx, jobId, patch, expectedVersion(options?.ifMatch, patch.version)),
    backfillJob: (ctx, jobId, request) => jobs.backfillJob(ctx, jobId, request),
    listOccurrences: (ctx, jobId, query) => jobs.listOccurrences(ctx, jobId, query),
    listExecutions: (ctx, jobId, query = {}) => jobs.listExecutions(ctx, jobId, query),
    listPossibleDuplicates: (ctx, query = {}) => listPossibleDuplicates(o.store, ctx, query),
    listDeadLetters: (ctx, query = {}) => deadLetters.list(ctx, query),
    replayDeadLetter: (ctx, executionId) => deadLetters.replay(ctx, executionId),
    replayDeadLetters: (ctx, request) => replays.create(ctx, request),
    listDeadLetterReplays: (ctx, query = {}) => replays.list(ctx, query),
    getDeadLetterReplay: (ctx, replayId) => replays.get(ctx, replayId),
    cancelDeadLetterReplay: (ctx, replayId) => replays.cancel(ctx, replayId),
    lease: (ctx, pool, request) => protocol.lease(ctx, pool, request),
    heartbeat: (ctx, executionId, request) => protocol.heartbeat(ctx, executionId, request),
    complete: (ctx, executionId, attempt, result, options) => protocol.complete(ctx, executionId, attempt, result, options?.leaseToken),
    fail: (ctx, executionId, attempt, error, options) => protocol.fail(ctx, executionId, attempt, error, options?.leaseToken),
    completeMany: (ctx, items) => protocol.completeMany(ctx, items),
    failMany: (ctx, items) => protocol.failMany(ctx, items),
    getBlob: (ctx, blobId) => payloads.payload(tenantScope(ctx), blobId),
    poolStats: (ctx, pool) => stats.pool(ctx, pool),
    stats: (ctx) => stats.all(ctx),
    statsHistory: (ctx, query) => stats.history(ctx, query),
    previewSchedule: (_ctx, query) => preview.preview(query),
    listAudit: (ctx, query = {}) => audit.list(ctx, query),
    cluster: () => cluster.cluster(),
    listTargets: (ctx) => cluster.targets(ctx),
    createKey: (ctx, request) => keys.create(ctx, request),
    listKeys: (ctx, query = {}) => keys.list(ctx, query),
    revokeKey: (ctx, keyId) => keys.revoke(ctx, keyId),
    signingSecrets: (ctx) => secrets.show(ctx),
    getTenantLimits: (ctx, tenantId) => tenants.limits(ctx, tenantId),
    putTenantLimits: (ctx, tenantId, limits) => tenants.setLimits(ctx, tenantId, limits),
    whoami: async (ctx) => ({
      // An admin key's context holds every role (auth.ts ROLE_SETS); any other holds its one role.
      role: ctx.roles.has("admin") ? "admin" : ctx.roles.has("client") ? "client" : "worker",
      tenantId: ctx.tenantId,
      keyId: ctx.actor === undefined || ctx.actor === "anonymous" ? null : ctx.actor,
    }),
    findKey: (digest) => keys.find(digest),
    hasStoredKeys: () => keys.any(),
    ready: () => cluster.ready(),
  };
}
