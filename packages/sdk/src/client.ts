// The HTTP client: one typed method per route of docs/api.md.
//
// Retries (network errors, 429, 502, 503, 504; Retry-After honoured) happen
// only for calls that are safe to repeat:
// - every GET;
// - DELETE /v1/jobs/{id} and :pause / :resume (repeating them is a no-op 200/204 by contract);
// - heartbeat, complete, fail and their batch forms (a repeated complete or
//   fail answers 200 again, by contract);
// - lease, with or without piggy-backed acks. The acks are idempotent. A lease
//   whose response was lost leaves its items leased to nobody until their
//   lease expires (then they run again as a new attempt); retrying does not
//   make that worse, and not retrying would not undo it. Accepted and documented.
// - createJob only with an idempotencyKey; createJobs only when every item has one.
// - updateJob (PATCH) only with a version (options.ifMatch or patch.version):
//   a repeat cannot apply twice or overwrite a newer change. If the first
//   attempt was applied and its answer lost, the repeat answers 409
//   VERSION_CONFLICT (the version moved on); getJob tells whether the change
//   is there. Without a version it is never retried.
// - :backfill (a repeated backfill adds nothing, by contract).
// - DELETE /v1/keys/{id} (revoking a revoked key answers 204 again).
// :trigger and dead-letter :replay create a new attempt each time, POST
// /v1/keys a new key each time: never retried.

import { hostname } from "node:os";
import type { Dispatcher } from "undici";
import type {
  AckItem,
  BackfillRequest,
  BackfillResponse,
  BatchCreateItem,
  BatchCreateResult,
  CompleteItem,
  CompleteResponse,
  CreatedJob,
  DeadLetter,
  DuetimeApi,
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
  OccurrenceItem,
  OccurrencesQuery,
  Page,
  PageQuery,
  PoolStats,
  PreviewQuery,
  PreviewResponse,
  Stats,
  SigningSecrets,
  TargetStatus,
} from "./api.js";
import { Transport, type CallOptions, type HttpCall, type RetryInfo } from "./http.js";
import { rejectUnknownOptions, requireInteger } from "./options.js";
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

const CLIENT_OPTIONS = [
  "url",
  "token",
  "timeoutMs",
  "retries",
  "dispatcher",
  "retryBaseMs",
  "retryMaxMs",
  "maxRetryAfterMs",
  "onRetry",
] as const satisfies readonly (keyof ClientOptions)[];

export interface CreateJobOptions extends CallOptions {
  /** Sent as Idempotency-Key; makes the call safe to retry. */
  idempotencyKey?: string;
}

export interface UpdateJobOptions extends CallOptions {
  /** The version the change applies to, sent as `If-Match: "<n>"`; another current version answers 409 VERSION_CONFLICT. Makes the call safe to retry. */
  ifMatch?: number;
}

const id = encodeURIComponent;

export class DuetimeClient implements DuetimeApi {
  private readonly http: Transport;

  constructor(options: ClientOptions) {
    rejectUnknownOptions("DuetimeClient", options, CLIENT_OPTIONS);
    if (typeof options.url !== "string" || options.url === "") throw new TypeError("DuetimeClient: url is required");
    this.http = new Transport({
      url: options.url,
      ...(options.token ? { token: options.token } : {}),
      timeoutMs: requireInteger("DuetimeClient", "timeoutMs", options.timeoutMs ?? 30_000, 1, 3_600_000),
      retries: requireInteger("DuetimeClient", "retries", options.retries ?? 3, 0, 100),
      backoff: {
        baseMs: requireInteger("DuetimeClient", "retryBaseMs", options.retryBaseMs ?? 200, 0, 600_000),
        maxMs: requireInteger("DuetimeClient", "retryMaxMs", options.retryMaxMs ?? 5_000, 0, 600_000),
      },
      maxRetryAfterMs: options.maxRetryAfterMs ?? 30_000,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
      userAgent: `duetime-sdk/0.1 (${hostname()})`,
      ...(options.onRetry ? { onRetry: options.onRetry } : {}),
    });
  }

  /** The server's base URL, without a trailing slash. */
  get url(): string {
    return this.http.url;
  }

  /** Closes the keep-alive connections (when the client created its own dispatcher). */
  close(): Promise<void> {
    return this.http.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // ---- jobs

  /** POST /v1/jobs. `created` is false when an Idempotency-Key matched an earlier request (200 instead of 201). */
  async createJob(spec: JobSpec, options: CreateJobOptions = {}): Promise<CreatedJob> {
    const { idempotencyKey, ...call } = options;
    const reply = await this.http.send({
      method: "POST",
      path: "/v1/jobs",
      body: spec,
      ...(idempotencyKey !== undefined ? { headers: { "idempotency-key": idempotencyKey } } : {}),
      idempotent: idempotencyKey !== undefined,
      options: call,
    });
    return { ...(reply.body as Job), created: reply.status === 201 };
  }

  /** POST /v1/jobs:batch; answers in request order. Retried only when every item has an idempotencyKey. */
  async createJobs(jobs: BatchCreateItem[], options?: CallOptions): Promise<BatchCreateResult[]> {
    const idempotent = jobs.length > 0 && jobs.every((j) => j.idempotencyKey !== undefined);
    return (await this.json<{ items: BatchCreateResult[] }>({ method: "POST", path: "/v1/jobs:batch", body: { jobs }, idempotent, options })).items;
  }

  getJob(jobId: string, options?: CallOptions): Promise<Job> {
    return this.json({ method: "GET", path: `/v1/jobs/${id(jobId)}`, idempotent: true, options });
  }

  listJobs(query: ListJobsQuery = {}, options?: CallOptions): Promise<Page<Job>> {
    return this.json({ method: "GET", path: "/v1/jobs", query: { ...query }, idempotent: true, options });
  }

  /** DELETE /v1/jobs/{id}: the job is CANCELLED (204; repeating it answers 204 again). */
  async cancelJob(jobId: string, options?: CallOptions): Promise<void> {
    await this.http.send({ method: "DELETE", path: `/v1/jobs/${id(jobId)}`, idempotent: true, options });
  }

  pauseJob(jobId: string, options?: CallOptions): Promise<Job> {
    return this.json({ method: "POST", path: `/v1/jobs/${id(jobId)}:pause`, body: {}, idempotent: true, options });
  }

  resumeJob(jobId: string, options?: CallOptions): Promise<Job> {
    return this.json({ method: "POST", path: `/v1/jobs/${id(jobId)}:resume`, body: {}, idempotent: true, options });
  }

  /** POST /v1/jobs/{id}:trigger: a new execution, due now. Never retried (each call creates one). */
  triggerJob(jobId: string, options?: CallOptions): Promise<ExecutionItem> {
    return this.json({ method: "POST", path: `/v1/jobs/${id(jobId)}:trigger`, body: {}, idempotent: false, options });
  }

  /**
   * PATCH /v1/jobs/{id}: changes the given fields (a schedule is replaced
   * whole). With options.ifMatch or patch.version it applies only to that
   * version (else 409 VERSION_CONFLICT), and only then is it retried.
   */
  updateJob(jobId: string, patch: JobPatch, options: UpdateJobOptions = {}): Promise<Job> {
    const { ifMatch, ...call } = options;
    return this.json({
      method: "PATCH",
      path: `/v1/jobs/${id(jobId)}`,
      body: patch,
      ...(ifMatch !== undefined ? { headers: { "if-match": `"${ifMatch}"` } } : {}),
      idempotent: ifMatch !== undefined || patch.version !== undefined,
      options: call,
    });
  }

  /** POST /v1/jobs/{id}:backfill: the occurrences of a past window of a recurring job. Retried: a repeat adds nothing. */
  backfillJob(jobId: string, request: BackfillRequest, options?: CallOptions): Promise<BackfillResponse> {
    return this.json({ method: "POST", path: `/v1/jobs/${id(jobId)}:backfill`, body: request, idempotent: true, options });
  }

  /** GET /v1/jobs/{id}/occurrences: every nominal fire time of the window and what became of it. */
  listOccurrences(jobId: string, query: OccurrencesQuery, options?: CallOptions): Promise<{ items: OccurrenceItem[] }> {
    return this.json({ method: "GET", path: `/v1/jobs/${id(jobId)}/occurrences`, query: { ...query }, idempotent: true, options });
  }

  listExecutions(jobId: string, query: PageQuery = {}, options?: CallOptions): Promise<Page<ExecutionItem>> {
    return this.json({ method: "GET", path: `/v1/jobs/${id(jobId)}/executions`, query: { ...query }, idempotent: true, options });
  }

  // ---- dead letters and operations

  listDeadLetters(query: PageQuery = {}, options?: CallOptions): Promise<Page<DeadLetter>> {
    return this.json({ method: "GET", path: "/v1/dead-letters", query: { ...query }, idempotent: true, options });
  }

  /** POST /v1/dead-letters/{id}:replay (role admin). Never retried. */
  replayDeadLetter(executionId: string, options?: CallOptions): Promise<ExecutionItem> {
    return this.json({ method: "POST", path: `/v1/dead-letters/${id(executionId)}:replay`, body: {}, idempotent: false, options });
  }

  /** GET /v1/audit (role admin). */
  listAudit(query: PageQuery = {}, options?: CallOptions): Promise<Page<AuditItem>> {
    return this.json({ method: "GET", path: "/v1/audit", query: { ...query }, idempotent: true, options });
  }

  /** GET /v1/cluster (role admin). */
  cluster(options?: CallOptions): Promise<ClusterView> {
    return this.json({ method: "GET", path: "/v1/cluster", idempotent: true, options });
  }

  /** GET /v1/targets (admin): the origins HTTP targets call on this node, with their breaker state. */
  listTargets(options?: CallOptions): Promise<{ items: TargetStatus[] }> {
    return this.json({ method: "GET", path: "/v1/targets", idempotent: true, options });
  }

  /**
   * GET /v1/secrets/signing (admin): the caller's tenant's callback signing
   * secrets, newest first, for verifySignature; `source` says whether they
   * were configured or generated and kept in the store.
   */
  signingSecrets(options?: CallOptions): Promise<SigningSecrets> {
    return this.json({ method: "GET", path: "/v1/secrets/signing", idempotent: true, options });
  }

  // ---- API keys (role admin)

  /**
   * POST /v1/keys: a new API key. The answer's `key` is the secret, shown
   * this once (only its digest is stored): keep it. Never retried (a repeat
   * would create a second key).
   */
  createKey(request: CreateKeyRequest, options?: CallOptions): Promise<CreatedKey> {
    return this.json({ method: "POST", path: "/v1/keys", body: request, idempotent: false, options });
  }

  /** GET /v1/keys: keys newest first, revoked ones included, never their secrets. */
  listKeys(query: ListKeysQuery = {}, options?: CallOptions): Promise<Page<ApiKeyInfo>> {
    return this.json({ method: "GET", path: "/v1/keys", query: { ...query }, idempotent: true, options });
  }

  /** DELETE /v1/keys/{keyId}: revokes a key (204; repeating it answers 204 again). Other nodes stop accepting it within 30 s. */
  async revokeKey(keyId: string, options?: CallOptions): Promise<void> {
    await this.http.send({ method: "DELETE", path: `/v1/keys/${id(keyId)}`, idempotent: true, options });
  }

  poolStats(pool: string, options?: CallOptions): Promise<PoolStats> {
    return this.json({ method: "GET", path: `/v1/pools/${id(pool)}/stats`, idempotent: true, options });
  }

  stats(options?: CallOptions): Promise<Stats> {
    return this.json({ method: "GET", path: "/v1/stats", idempotent: true, options });
  }

  /** GET /v1/schedules/preview: the next fire times of a cron expression, in UTC. */
  previewSchedule(query: PreviewQuery, options?: CallOptions): Promise<PreviewResponse> {
    return this.json({ method: "GET", path: "/v1/schedules/preview", query: { ...query }, idempotent: true, options });
  }

  /** GET /healthz: resolves with its body when the process is up, throws otherwise. */
  health(options?: CallOptions): Promise<unknown> {
    return this.json({ method: "GET", path: "/healthz", idempotent: true, options });
  }

  /** GET /readyz, asked once (no retry): true on 2xx, false on 503, throws on anything else. */
  async ready(options?: CallOptions): Promise<boolean> {
    try {
      await this.http.send({ method: "GET", path: "/readyz", idempotent: false, options });
      return true;
    } catch (err) {
      if ((err as { status?: unknown }).status === 503) return false;
      throw err;
    }
  }

  /** GET /metrics: Prometheus text. */
  async metrics(options?: CallOptions): Promise<string> {
    const body = (await this.http.send({ method: "GET", path: "/metrics", idempotent: true, options })).body;
    return typeof body === "string" ? body : JSON.stringify(body);
  }

  /** GET /openapi.json. */
  openapi(options?: CallOptions): Promise<unknown> {
    return this.json({ method: "GET", path: "/openapi.json", idempotent: true, options });
  }

  // ---- worker protocol

  /**
   * POST /v1/pools/{pool}/lease. Long-polls up to request.waitSeconds (the
   * per-attempt timeout grows by that much). Pass options.signal to end a
   * long poll early (the Worker does on shutdown).
   */
  async lease(pool: string, request: LeaseRequest, options?: CallOptions): Promise<LeaseResponse> {
    const body: LeaseRequest = { ...request };
    if (body.complete?.length === 0) delete body.complete;
    if (body.fail?.length === 0) delete body.fail;
    return this.json({
      method: "POST",
      path: `/v1/pools/${id(pool)}/lease`,
      body,
      idempotent: true,
      extraTimeoutMs: (request.waitSeconds ?? 0) * 1000,
      options,
    });
  }

  heartbeat(executionId: string, request: HeartbeatRequest, options?: CallOptions): Promise<HeartbeatResponse> {
    return this.json({ method: "POST", path: `/v1/executions/${id(executionId)}/heartbeat`, body: request, idempotent: true, options });
  }

  complete(executionId: string, attempt: number, result?: unknown, options?: CallOptions): Promise<CompleteResponse> {
    const body = result === undefined ? { attempt } : { attempt, result };
    return this.json({ method: "POST", path: `/v1/executions/${id(executionId)}/complete`, body, idempotent: true, options });
  }

  fail(executionId: string, attempt: number, error: ErrorRecord, options?: CallOptions): Promise<FailResponse> {
    return this.json({ method: "POST", path: `/v1/executions/${id(executionId)}/fail`, body: { attempt, error }, idempotent: true, options });
  }

  /** POST /v1/executions:complete (1..1000 items): one answer per item, in order, with status 200 or 409. */
  async completeMany(items: CompleteItem[], options?: CallOptions): Promise<AckItem[]> {
    if (items.length === 0) return [];
    return (await this.json<{ items: AckItem[] }>({ method: "POST", path: "/v1/executions:complete", body: { items }, idempotent: true, options }))
      .items;
  }

  /** POST /v1/executions:fail (1..1000 items). */
  async failMany(items: FailItem[], options?: CallOptions): Promise<AckItem[]> {
    if (items.length === 0) return [];
    return (await this.json<{ items: AckItem[] }>({ method: "POST", path: "/v1/executions:fail", body: { items }, idempotent: true, options })).items;
  }

  private async json<T>(call: Omit<HttpCall, "options"> & { options?: CallOptions | undefined }): Promise<T> {
    const { options, ...rest } = call;
    return (await this.http.send(options ? { ...rest, options } : rest)).body as T;
  }
}
