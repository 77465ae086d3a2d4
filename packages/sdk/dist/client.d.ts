import type { Dispatcher } from "undici";
import type { AckItem, BackfillRequest, BackfillResponse, BatchCreateItem, BatchCreateResult, CompleteItem, CompleteResponse, CreatedJob, DeadLetter, DuetimeApi, ErrorRecord, ExecutionItem, FailItem, FailResponse, HeartbeatRequest, HeartbeatResponse, Job, JobPatch, JobSpec, LeaseRequest, LeaseResponse, ListJobsQuery, OccurrenceItem, OccurrencesQuery, Page, PageQuery, PoolStats, PreviewQuery, PreviewResponse, Stats, SigningSecrets, TargetStatus } from "./api.js";
import { type CallOptions, type RetryInfo } from "./http.js";
import type { ApiKeyInfo, AuditItem, ClusterView, CreatedKey, CreateKeyRequest, ListKeysQuery } from "./api.js";
export type { CallOptions, RetryInfo } from "./http.js";
export interface ClientOptions {
    /** Base URL of the server, e.g. "http://127.0.0.1:8080". */
    url: string;
    /** API key, sent as `Authorization: Bearer <token>`. */
    token?: string;
    /** Per-attempt timeout in ms (default 30 000); a lease adds its waitSeconds on top. */
    timeoutMs?: number;
    /** Retries after the first attempt, for calls safe to repeat (default 3). */
    retries?: number;
    /** undici dispatcher to use; by default the client creates (and close() closes) a keep-alive Agent. */
    dispatcher?: Dispatcher;
    /** Backoff before the first retry, before jitter (default 200 ms); doubles per retry. */
    retryBaseMs?: number;
    /** Upper bound of a computed backoff (default 5 000 ms). */
    retryMaxMs?: number;
    /** A Retry-After longer than this fails the call at once with retryAfterSeconds set (default 30 000 ms). */
    maxRetryAfterMs?: number;
    /** Called before each retry (logging, tests). */
    onRetry?: (info: RetryInfo) => void;
}
export interface CreateJobOptions extends CallOptions {
    /** Sent as Idempotency-Key; makes the call safe to retry. */
    idempotencyKey?: string;
}
export interface UpdateJobOptions extends CallOptions {
    /** The version the change applies to, sent as `If-Match: "<n>"`; another current version answers 409 VERSION_CONFLICT. Makes the call safe to retry. */
    ifMatch?: number;
}
export declare class DuetimeClient implements DuetimeApi {
    private readonly http;
    constructor(options: ClientOptions);
    /** The server's base URL, without a trailing slash. */
    get url(): string;
    /** Closes the keep-alive connections (when the client created its own dispatcher). */
    close(): Promise<void>;
    [Symbol.asyncDispose](): Promise<void>;
    /** POST /v1/jobs. `created` is false when an Idempotency-Key matched an earlier request (200 instead of 201). */
    createJob(spec: JobSpec, options?: CreateJobOptions): Promise<CreatedJob>;
    /** POST /v1/jobs:batch; answers in request order. Retried only when every item has an idempotencyKey. */
    createJobs(jobs: BatchCreateItem[], options?: CallOptions): Promise<BatchCreateResult[]>;
    getJob(jobId: string, options?: CallOptions): Promise<Job>;
    listJobs(query?: ListJobsQuery, options?: CallOptions): Promise<Page<Job>>;
    /** DELETE /v1/jobs/{id}: the job is CANCELLED (204; repeating it answers 204 again). */
    cancelJob(jobId: string, options?: CallOptions): Promise<void>;
    pauseJob(jobId: string, options?: CallOptions): Promise<Job>;
    resumeJob(jobId: string, options?: CallOptions): Promise<Job>;
    /** POST /v1/jobs/{id}:trigger: a new execution, due now. Never retried (each call creates one). */
    triggerJob(jobId: string, options?: CallOptions): Promise<ExecutionItem>;
    /**
     * PATCH /v1/jobs/{id}: changes the given fields (a schedule is replaced
     * whole). With options.ifMatch or patch.version it applies only to that
     * version (else 409 VERSION_CONFLICT), and only then is it retried.
     */
    updateJob(jobId: string, patch: JobPatch, options?: UpdateJobOptions): Promise<Job>;
    /** POST /v1/jobs/{id}:backfill: the occurrences of a past window of a recurring job. Retried: a repeat adds nothing. */
    backfillJob(jobId: string, request: BackfillRequest, options?: CallOptions): Promise<BackfillResponse>;
    /** GET /v1/jobs/{id}/occurrences: every nominal fire time of the window and what became of it. */
    listOccurrences(jobId: string, query: OccurrencesQuery, options?: CallOptions): Promise<{
        items: OccurrenceItem[];
    }>;
    listExecutions(jobId: string, query?: PageQuery, options?: CallOptions): Promise<Page<ExecutionItem>>;
    listDeadLetters(query?: PageQuery, options?: CallOptions): Promise<Page<DeadLetter>>;
    /** POST /v1/dead-letters/{id}:replay (role admin). Never retried. */
    replayDeadLetter(executionId: string, options?: CallOptions): Promise<ExecutionItem>;
    /** GET /v1/audit (role admin). */
    listAudit(query?: PageQuery, options?: CallOptions): Promise<Page<AuditItem>>;
    /** GET /v1/cluster (role admin). */
    cluster(options?: CallOptions): Promise<ClusterView>;
    /** GET /v1/targets (admin): the origins HTTP targets call on this node, with their breaker state. */
    listTargets(options?: CallOptions): Promise<{
        items: TargetStatus[];
    }>;
    /**
     * GET /v1/secrets/signing (admin): the caller's tenant's callback signing
     * secrets, newest first, for verifySignature; `source` says whether they
     * were configured or generated and kept in the store.
     */
    signingSecrets(options?: CallOptions): Promise<SigningSecrets>;
    /**
     * POST /v1/keys: a new API key. The answer's `key` is the secret, shown
     * this once (only its digest is stored): keep it. Never retried (a repeat
     * would create a second key).
     */
    createKey(request: CreateKeyRequest, options?: CallOptions): Promise<CreatedKey>;
    /** GET /v1/keys: keys newest first, revoked ones included, never their secrets. */
    listKeys(query?: ListKeysQuery, options?: CallOptions): Promise<Page<ApiKeyInfo>>;
    /** DELETE /v1/keys/{keyId}: revokes a key (204; repeating it answers 204 again). Other nodes stop accepting it within 30 s. */
    revokeKey(keyId: string, options?: CallOptions): Promise<void>;
    poolStats(pool: string, options?: CallOptions): Promise<PoolStats>;
    stats(options?: CallOptions): Promise<Stats>;
    /** GET /v1/schedules/preview: the next fire times of a cron expression, in UTC. */
    previewSchedule(query: PreviewQuery, options?: CallOptions): Promise<PreviewResponse>;
    /** GET /healthz: resolves with its body when the process is up, throws otherwise. */
    health(options?: CallOptions): Promise<unknown>;
    /** GET /readyz, asked once (no retry): true on 2xx, false on 503, throws on anything else. */
    ready(options?: CallOptions): Promise<boolean>;
    /** GET /metrics: Prometheus text. */
    metrics(options?: CallOptions): Promise<string>;
    /** GET /openapi.json. */
    openapi(options?: CallOptions): Promise<unknown>;
    /**
     * POST /v1/pools/{pool}/lease. Long-polls up to request.waitSeconds (the
     * per-attempt timeout grows by that much). Pass options.signal to end a
     * long poll early (the Worker does on shutdown).
     */
    lease(pool: string, request: LeaseRequest, options?: CallOptions): Promise<LeaseResponse>;
    heartbeat(executionId: string, request: HeartbeatRequest, options?: CallOptions): Promise<HeartbeatResponse>;
    complete(executionId: string, attempt: number, result?: unknown, options?: CallOptions): Promise<CompleteResponse>;
    fail(executionId: string, attempt: number, error: ErrorRecord, options?: CallOptions): Promise<FailResponse>;
    /** POST /v1/executions:complete (1..1000 items): one answer per item, in order, with status 200 or 409. */
    completeMany(items: CompleteItem[], options?: CallOptions): Promise<AckItem[]>;
    /** POST /v1/executions:fail (1..1000 items). */
    failMany(items: FailItem[], options?: CallOptions): Promise<AckItem[]>;
    private json;
}
