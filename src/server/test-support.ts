// Test support for the HTTP layer (not shipped behaviour): a Service that
// records every call and answers with canned wire values, so route tests can
// check "this request reached the service with these arguments" without an
// engine. Real engine integration tests live under test/.

import type {
  AckItem,
  ApiKeyInfo,
  AuditItem,
  BackfillRequest,
  BackfillResponse,
  ClusterView,
  SigningSecrets,
  TargetStatus,
  BatchCreateItem,
  BatchCreateResult,
  CompleteItem,
  CreatedJob,
  CreatedKey,
  CreateKeyRequest,
  DeadLetter,
  DeadLetterReplay,
  DeadLetterReplayRequest,
  ExecutionsQuery,
  PossibleDuplicateExecution,
  ErrorRecord,
  ExecutionItem,
  FailItem,
  FailResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  Job,
  JobPatch,
  JobSpec,
  LeaseRequest,
  LeaseResponse,
  ListJobsQuery,
  ListKeysQuery,
  OccurrenceItem,
  OccurrencesQuery,
  Page,
  PageQuery,
  PoolStats,
  PreviewQuery,
  PreviewResponse,
  Stats,
  StatsHistory,
  StatsHistoryQuery,
  UpdateJobOptions,
  CreateJobOptions,
  TenantLimits,
  TenantLimitsRequest,
  WhoAmI,
} from "@duetime/sdk/contract";
import { expectedVersion } from "../core/validate.js";
import type { RequestContext, Service, StoredKey } from "../engine/service.js";
import { DEFAULT_TENANT_LIMITS } from "../store/store.js";

export const SAMPLE_JOB: Job = {
  jobId: "job_1",
  name: "send-reminder",
  state: "SCHEDULED",
  target: { type: "queue", pool: "emails" },
  payload: { any: "json", nested: { deep: [1, 2, { x: null }] } },
  schedule: { runAt: "2026-10-16T09:00:00.000Z" },
  retry: { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 3600 },
  timeoutSeconds: 300,
  priority: 0,
  mode: "live",
  nextRunAt: "2026-10-16T09:00:00.000Z",
  version: 1,
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
};

export const SAMPLE_EXECUTION: ExecutionItem = {
  executionId: "exe_1",
  jobId: "job_1",
  scheduledFor: "2026-10-16T09:00:00.000Z",
  attempt: 0,
  state: "QUEUED",
  dispatchedAt: "2026-10-16T09:00:00.010Z",
  dispatchedBy: "node-a",
  startedAt: null,
  finishedAt: null,
  error: null,
  workerId: null,
};

export const SAMPLE_DEAD_LETTER: DeadLetter = {
  executionId: "exe_9",
  jobId: "job_9",
  name: "charge",
  scheduledFor: "2026-10-16T09:00:00.000Z",
  attempts: 3,
  lastError: { message: "boom", class: "transient", httpStatus: 500 },
  deadAt: "2026-10-16T09:05:00.000Z",
  payload: { amount: 5 },
};

export const SAMPLE_REPLAY: DeadLetterReplay = {
  replayId: "rp_1",
  tenantId: "default",
  state: "RUNNING",
  selection: { filter: { pool: "emails", deadBefore: "2026-10-16T09:05:00.000Z" } },
  ratePerSecond: 10,
  total: null,
  replayed: 3,
  skipped: 0,
  actor: "key_1",
  createdAt: "2026-10-16T09:05:00.000Z",
  updatedAt: "2026-10-16T09:05:01.000Z",
  finishedAt: null,
};

export const SAMPLE_BACKFILL: BackfillResponse = {
  items: [
    { scheduledFor: "2026-10-12T08:00:00.000Z", executionId: "exe_b1", created: true, readyAt: "2026-10-16T09:00:00.000Z" },
    { scheduledFor: "2026-10-13T08:00:00.000Z", executionId: "exe_b2", created: false, readyAt: null },
  ],
};

export const SAMPLE_OCCURRENCES: OccurrenceItem[] = [
  {
    scheduledFor: "2026-03-27T09:00:00.000Z",
    local: "2026-03-27T09:00:00",
    status: "dispatched",
    executionId: "exe_o1",
    executionState: "SUCCEEDED",
  },
  {
    scheduledFor: "2026-03-28T09:00:00.000Z",
    local: "2026-03-28T09:00:00",
    status: "skipped",
    reason: "overlap",
    executionId: "exe_o2",
    executionState: "SKIPPED",
  },
  { scheduledFor: "2026-03-29T01:00:00.000Z", local: "2026-03-29T01:30:00", status: "not_run", reason: "paused", dst: "gap" },
  { scheduledFor: "2026-03-30T08:00:00.000Z", local: "2026-03-30T09:00:00", status: "due" },
];

export const SAMPLE_KEY: ApiKeyInfo = {
  keyId: "ak_0000000000aaaaaaaaaaaa",
  tenantId: "default",
  role: "worker",
  name: "worker eu-1",
  createdAt: "2026-10-16T09:00:00.000Z",
  revokedAt: null,
};

export interface Call {
  method: string;
  ctx: RequestContext | undefined;
  args: unknown[];
}

type Override = (...args: unknown[]) => Promise<unknown>;

/** Records calls; `override[method]` replaces a canned answer (or throws). */
export class RecordingService implements Service {
  readonly calls: Call[] = [];
  readonly override: Partial<Record<string, Override>> = {};
  isReady = true;
  /** Stored keys by hex SHA-256 digest, for authentication (findKey and hasStoredKeys are not recorded in calls). */
  readonly storedKeys = new Map<string, StoredKey>();
  /** Digests findKey was asked about, in order. */
  readonly findKeyCalls: string[] = [];
  /** Keys revoked through revokeKey: the store still holds them, so auth stays on. */
  revokedKeys = 0;
  /** Makes findKey and hasStoredKeys fail (the store is down). */
  keyStoreDown = false;

  last(): Call {
    const call = this.calls.at(-1);
    if (!call) throw new Error("the service was not called");
    return call;
  }

  private async answer<T>(method: string, ctx: RequestContext | undefined, args: unknown[], canned: () => T): Promise<T> {
    this.calls.push({ method, ctx, args });
    const fn = this.override[method];
    if (fn) return (await fn(ctx, ...args)) as T;
    return canned();
  }

  createJob(ctx: RequestContext, spec: JobSpec, options?: CreateJobOptions): Promise<CreatedJob> {
    return this.answer("createJob", ctx, [spec, options], () => ({ ...SAMPLE_JOB, created: true }));
  }
  createJobs(ctx: RequestContext, items: BatchCreateItem[]): Promise<BatchCreateResult[]> {
    return this.answer("createJobs", ctx, [items], () =>
      items.map((_, i) => ({ jobId: `job_b${i}`, nextRunAt: "2026-10-16T09:00:00.000Z", created: true })),
    );
  }
  getJob(ctx: RequestContext, jobId: string): Promise<Job> {
    return this.answer("getJob", ctx, [jobId], () => ({ ...SAMPLE_JOB, jobId }));
  }
  listJobs(ctx: RequestContext, query?: ListJobsQuery): Promise<Page<Job>> {
    return this.answer("listJobs", ctx, [query], () => ({ items: [SAMPLE_JOB], nextCursor: "c2" }));
  }
  cancelJob(ctx: RequestContext, jobId: string): Promise<void> {
    return this.answer("cancelJob", ctx, [jobId], () => undefined);
  }
  pauseJob(ctx: RequestContext, jobId: string): Promise<Job> {
    return this.answer("pauseJob", ctx, [jobId], () => ({ ...SAMPLE_JOB, jobId, state: "PAUSED" as const }));
  }
  resumeJob(ctx: RequestContext, jobId: string): Promise<Job> {
    return this.answer("resumeJob", ctx, [jobId], () => ({ ...SAMPLE_JOB, jobId }));
  }
  triggerJob(ctx: RequestContext, jobId: string): Promise<ExecutionItem> {
    return this.answer("triggerJob", ctx, [jobId], () => ({ ...SAMPLE_EXECUTION, jobId }));
  }
  updateJob(ctx: RequestContext, jobId: string, patch: JobPatch, options?: UpdateJobOptions): Promise<Job> {
    return this.answer("updateJob", ctx, [jobId, patch, options], () => {
      const { version: _version, retry, ...fields } = patch;
      const merged = { ...SAMPLE_JOB, ...fields, retry: { ...SAMPLE_JOB.retry, ...retry } };
      const expected = expectedVersion(options?.ifMatch, patch.version);
      return { ...merged, jobId, version: (expected ?? SAMPLE_JOB.version) + 1 } as Job;
    });
  }
  backfillJob(ctx: RequestContext, jobId: string, request: BackfillRequest): Promise<BackfillResponse> {
    return this.answer("backfillJob", ctx, [jobId, request], () => structuredClone(SAMPLE_BACKFILL));
  }
  listOccurrences(ctx: RequestContext, jobId: string, query: OccurrencesQuery): Promise<{ items: OccurrenceItem[] }> {
    return this.answer("listOccurrences", ctx, [jobId, query], () => ({ items: structuredClone(SAMPLE_OCCURRENCES) }));
  }
  listExecutions(ctx: RequestContext, jobId: string, query?: PageQuery): Promise<Page<ExecutionItem>> {
    return this.answer("listExecutions", ctx, [jobId, query], () => ({ items: [SAMPLE_EXECUTION], nextCursor: null }));
  }
  listDeadLetters(ctx: RequestContext, query?: PageQuery): Promise<Page<DeadLetter>> {
    return this.answer("listDeadLetters", ctx, [query], () => ({ items: [SAMPLE_DEAD_LETTER], nextCursor: null }));
  }
  replayDeadLetter(ctx: RequestContext, executionId: string): Promise<ExecutionItem> {
    return this.answer("replayDeadLetter", ctx, [executionId], () => ({ ...SAMPLE_EXECUTION, executionId, attempt: 4 }));
  }
  listPossibleDuplicates(ctx: RequestContext, query?: Partial<ExecutionsQuery>): Promise<Page<PossibleDuplicateExecution>> {
    return this.answer("listPossibleDuplicates", ctx, [query], () => ({
      items: [
        {
          executionId: "exe_1",
          jobId: "job_1",
          name: "send-reminder",
          pool: "emails",
          scheduledFor: "2026-10-16T09:00:00.000Z",
          state: "SUCCEEDED",
          attempt: 2,
          possibleDuplicate: { attempt: 1, reason: "lease_lost" as const, at: "2026-10-16T09:06:00.000Z" },
        },
      ],
      nextCursor: null,
    }));
  }
  replayDeadLetters(ctx: RequestContext, request: DeadLetterReplayRequest): Promise<DeadLetterReplay> {
    return this.answer("replayDeadLetters", ctx, [request], () => ({ ...SAMPLE_REPLAY }));
  }
  listDeadLetterReplays(ctx: RequestContext, query?: PageQuery): Promise<Page<DeadLetterReplay>> {
    return this.answer("listDeadLetterReplays", ctx, [query], () => ({ items: [SAMPLE_REPLAY], nextCursor: null }));
  }
  getDeadLetterReplay(ctx: RequestContext, replayId: string): Promise<DeadLetterReplay> {
    return this.answer("getDeadLetterReplay", ctx, [replayId], () => ({ ...SAMPLE_REPLAY, replayId }));
  }
  cancelDeadLetterReplay(ctx: RequestContext, replayId: string): Promise<DeadLetterReplay> {
    return this.answer("cancelDeadLetterReplay", ctx, [replayId], () => ({ ...SAMPLE_REPLAY, replayId, state: "CANCELLED" as const }));
  }
  lease(ctx: RequestContext, pool: string, request: LeaseRequest): Promise<LeaseResponse> {
    return this.answer("lease", ctx, [pool, request], () => ({
      items: [
        {
          executionId: "exe_1",
          tenantId: "default",
          jobId: "job_1",
          name: "send-reminder",
          attempt: 1,
          payload: { to: "a@example.test", extra: { keep: true } },
          scheduledFor: "2026-10-16T09:00:00.000Z",
          leaseUntil: "2026-10-16T09:00:30.000Z",
          timeoutSeconds: 300,
        },
      ],
    }));
  }
  heartbeat(ctx: RequestContext, executionId: string, request: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.answer("heartbeat", ctx, [executionId, request], () => ({
      leaseUntil: "2026-10-16T09:01:00.000Z",
      cancelRequested: false,
    }));
  }
  complete(ctx: RequestContext, executionId: string, attempt: number, result?: unknown): Promise<{ state: "SUCCEEDED" }> {
    return this.answer("complete", ctx, [executionId, attempt, result], () => ({ state: "SUCCEEDED" as const }));
  }
  fail(ctx: RequestContext, executionId: string, attempt: number, error: ErrorRecord): Promise<FailResponse> {
    return this.answer("fail", ctx, [executionId, attempt, error], () => ({
      state: "FAILED" as const,
      retryAt: "2026-10-16T09:00:10.000Z",
    }));
  }
  completeMany(ctx: RequestContext, items: CompleteItem[]): Promise<AckItem[]> {
    return this.answer("completeMany", ctx, [items], () =>
      items.map((i) => ({ executionId: i.executionId, attempt: i.attempt, status: 200 as const, state: "SUCCEEDED" as const })),
    );
  }
  getBlob(ctx: RequestContext, blobId: string): Promise<unknown> {
    return this.answer("getBlob", ctx, [blobId], () => ({ blob: blobId }));
  }
  failMany(ctx: RequestContext, items: FailItem[]): Promise<AckItem[]> {
    return this.answer("failMany", ctx, [items], () =>
      items.map((i) => ({
        executionId: i.executionId,
        attempt: i.attempt,
        status: 409 as const,
        error: { code: "LEASE_LOST", message: "lease lost" },
      })),
    );
  }
  poolStats(ctx: RequestContext, pool: string): Promise<PoolStats> {
    return this.answer("poolStats", ctx, [pool], () => ({ pending: 1, queued: 2, running: 3 }));
  }
  stats(ctx: RequestContext): Promise<Stats> {
    return this.answer("stats", ctx, [], () => ({
      pools: { emails: { pending: 1, queued: 2, running: 3 } },
      tenants: { default: { pending: 1, queued: 2, running: 3 } },
    }));
  }
  statsHistory(ctx: RequestContext, query?: StatsHistoryQuery): Promise<StatsHistory> {
    const series = {
      started: [3],
      succeeded: [2],
      failed: [1],
      dead: [0],
      startLagMs: { p50: [12], p90: [40], p99: [null] },
      pending: [5],
      queued: [1],
      running: [null],
    };
    return this.answer("statsHistory", ctx, [query], () => ({
      by: "pool" as const,
      minutes: ["2026-10-16T09:00:00.000Z"],
      series: { emails: series },
    }));
  }
  previewSchedule(ctx: RequestContext, query: PreviewQuery): Promise<PreviewResponse> {
    return this.answer("previewSchedule", ctx, [query], () => ({
      times: ["2026-10-16T09:00:00.000Z", "2026-10-19T08:00:00.000Z"],
    }));
  }
  listAudit(ctx: RequestContext, query?: PageQuery): Promise<Page<AuditItem>> {
    return this.answer("listAudit", ctx, [query], () => ({
      items: [{ at: "2026-10-16T09:06:00.000Z", actor: "key_1", action: "dead-letter.replay", subject: "exe_9", details: {} }],
      nextCursor: null,
    }));
  }
  getTenantLimits(ctx: RequestContext, tenantId: string): Promise<TenantLimits> {
    return this.answer("getTenantLimits", ctx, [tenantId], () => ({ tenantId, ...DEFAULT_TENANT_LIMITS }));
  }
  putTenantLimits(ctx: RequestContext, tenantId: string, limits: TenantLimitsRequest): Promise<TenantLimits> {
    return this.answer("putTenantLimits", ctx, [tenantId, limits], () => ({ tenantId, ...DEFAULT_TENANT_LIMITS, ...limits }));
  }
  whoami(ctx: RequestContext): Promise<WhoAmI> {
    return this.answer("whoami", ctx, [], () => ({ role: "admin" as const, tenantId: ctx.tenantId, keyId: ctx.actor ?? null }));
  }
  listTargets(ctx: RequestContext): Promise<{ items: TargetStatus[] }> {
    return this.answer("listTargets", ctx, [], () => ({ items: [{ origin: "https://example.test", breaker: "closed" as const, inFlight: 0 }] }));
  }

  signingSecrets(ctx: RequestContext): Promise<SigningSecrets> {
    return this.answer("signingSecrets", ctx, [], () => ({ tenantId: ctx.tenantId, secrets: ["whsec_new", "whsec_old"], source: "config" as const }));
  }

  cluster(ctx: RequestContext): Promise<ClusterView> {
    return this.answer("cluster", ctx, [], () => ({
      storeTime: "2026-10-16T09:00:02.500Z",
      nodes: [{ nodeId: "node-a", address: null, shards: [0, 1], lastHeartbeatAt: "2026-10-16T09:00:00.000Z", heartbeatAgeSeconds: 2.5 }],
      shards: [{ shard: 0, owner: "node-a", epoch: 3, leaseUntil: "2026-10-16T09:00:10.000Z", leaseRemainingSeconds: 7.5 }],
    }));
  }
  createKey(ctx: RequestContext, request: CreateKeyRequest): Promise<CreatedKey> {
    return this.answer("createKey", ctx, [request], () => {
      const { revokedAt: _r, ...info } = SAMPLE_KEY;
      return {
        ...info,
        key: "dtk_secretsecretsecretsecretsecret",
        tenantId: request.tenantId ?? ctx.tenantId,
        role: request.role,
        name: request.name ?? null,
      };
    });
  }
  listKeys(ctx: RequestContext, query?: ListKeysQuery): Promise<Page<ApiKeyInfo>> {
    return this.answer("listKeys", ctx, [query], () => ({ items: [SAMPLE_KEY], nextCursor: null }));
  }
  revokeKey(ctx: RequestContext, keyId: string): Promise<void> {
    return this.answer("revokeKey", ctx, [keyId], () => {
      for (const [digest, key] of this.storedKeys) {
        if (key.keyId === keyId) {
          this.storedKeys.delete(digest);
          this.revokedKeys++;
        }
      }
    });
  }
  async findKey(digest: string): Promise<StoredKey | null> {
    this.findKeyCalls.push(digest);
    if (this.keyStoreDown) throw new Error("store unreachable");
    return this.storedKeys.get(digest) ?? null;
  }
  async hasStoredKeys(): Promise<boolean> {
    if (this.keyStoreDown) throw new Error("store unreachable");
    return this.storedKeys.size > 0 || this.revokedKeys > 0;
  }
  async ready(): Promise<boolean> {
    return this.isReady;
  }
}
