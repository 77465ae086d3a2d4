// The operation table: every /v1 operation of docs/api.md, declared once.
// One concept, long on purpose: one entry per operation, in one table.
//
// An operation is its HTTP shape (method, path, who may call it, the names
// of the schemas that check each part of the request and of the answer) and
// two codecs that make its typed method and its request one thing:
// - encode(...args) → request, and decode(request) → args: the method's
//   arguments and the HTTP request carry the same facts;
// - answer(result, request) → reply, and read(reply) → result: likewise the
//   method's result and the HTTP answer (the request, for the few answers a
//   header shapes: the creates' `Prefer: return=minimal`, prefer.ts).
//
// Everything else is derived from this table:
// - the SDK client's typed methods (client.ts: args → encode → HTTP → read);
// - the engine's Service type: one method per operation, `(ctx, ...args)`;
// - the server's Fastify routes and so its OpenAPI document (decode →
//   service → answer);
// - the embedded client (encode → the same checks and decode as the server
//   → service), so embedded callers get the HTTP answers and errors;
// - the SDK's test server (decode → any DuetimeApi → answer).
// The schemas themselves are the server's (core/schemas.ts); this package
// names them only, so it carries no validator.

import type {
  AckItem,
  ApiKeyInfo,
  AuditItem,
  BackfillRequest,
  BackfillResponse,
  BatchCreateItem,
  BatchCreateMinimalResult,
  BatchCreateResult,
  ClusterView,
  CompleteItem,
  CompleteResponse,
  CreatedJob,
  CreatedJobMinimal,
  CreatedKey,
  CreateKeyRequest,
  DeadLetter,
  DeadLetterReplay,
  DeadLetterReplayRequest,
  DueWarning,
  ErrorRecord,
  ExecutionItem,
  ExecutionsQuery,
  StatsHistory,
  StatsHistoryQuery,
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
  PossibleDuplicateExecution,
  PreviewQuery,
  PreviewResponse,
  Role,
  SigningSecrets,
  Stats,
  TargetStatus,
  TenantLimits,
  TenantLimitsRequest,
  WhoAmI,
} from "./api.js";
import { prefersMinimal, RETURN_MINIMAL } from "./prefer.js";

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** Per-call options every client method accepts as its last argument. */
export interface CallOptions {
  /** Aborts the call (and its retries); the promise rejects with signal.reason. */
  signal?: AbortSignal;
  /** Overrides the client's per-attempt timeout. */
  timeoutMs?: number;
}

export interface CreateJobOptions extends CallOptions {
  /** Sent as Idempotency-Key; makes the call safe to retry. */
  idempotencyKey?: string;
  /**
   * Sent as `Prefer: return=minimal`: the answer is the job's id, next run
   * time and `created` only (CreatedJobMinimal), not the whole job.
   */
  returnMinimal?: boolean;
}

export interface CreateJobsOptions extends CallOptions {
  /** All or nothing: when any job is invalid, none is created and the call fails with 400 (details.errors lists each). */
  atomic?: boolean;
  /**
   * Sent as `Prefer: return=minimal`: each created job answers its id and
   * next run time only (BatchCreateMinimalResult; its warnings still come in
   * the Duetime-Warning header); failed jobs answer their error as ever.
   */
  returnMinimal?: boolean;
}

/** Options of a single complete or fail. */
export interface AttemptOptions extends CallOptions {
  /** The lease's token (LeasedExecution.leaseToken): the store refuses the call (LEASE_LOST) when its grant is not the one that gave it. */
  leaseToken?: string;
}

export interface UpdateJobOptions extends CallOptions {
  /**
   * The version the change applies to, sent as If-Match: a number, or the
   * ETag of GET as it came (`"7"`, `W/"7"`). Another current version answers
   * 409 VERSION_CONFLICT. Makes the call safe to retry.
   */
  ifMatch?: number | string;
}

/** The parts of a request, as a method's arguments fill them. Path parameters are not yet encoded. */
export interface WireRequest {
  params?: Record<string, string>;
  query?: Record<string, unknown>;
  headers?: Record<string, string | undefined>;
  body?: unknown;
  /** The call's options (signal, timeout); they do not travel. */
  options?: CallOptions | undefined;
}

/** A request after the server's checks: every part present. */
export interface CheckedRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  headers: Record<string, unknown>;
  body: unknown;
}

export interface WireReply {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** Names of the request schemas in the server's core/schemas.ts. */
export type RequestSchemaName =
  | "createJobBody"
  | "createJobHeaders"
  | "batchCreateHeaders"
  | "updateJobBody"
  | "updateJobHeaders"
  | "backfillBody"
  | "batchCreateBody"
  | "batchCreateEnvelope"
  | "emptyBody"
  | "leaseBody"
  | "heartbeatBody"
  | "completeBody"
  | "failBody"
  | "completeManyBody"
  | "failManyBody"
  | "listJobsQuery"
  | "pageQuery"
  | "previewQuery"
  | "occurrencesQuery"
  | "jobIdParams"
  | "executionIdParams"
  | "poolParams"
  | "createKeyBody"
  | "listKeysQuery"
  | "keyIdParams"
  | "tenantIdParams"
  | "tenantLimitsBody"
  | "replayDeadLettersBody"
  | "replayIdParams"
  | "blobIdParams"
  | "executionsQuery"
  | "statsHistoryQuery";

/** Names of the answer schemas in the server's core/schemas.ts (RESPONSE_SCHEMAS). */
export type ResponseSchemaName =
  | "job"
  | "jobMinimal"
  | "jobPage"
  | "batchCreate"
  | "batchCreateMinimal"
  | "executionItem"
  | "executionPage"
  | "occurrences"
  | "backfill"
  | "lease"
  | "heartbeat"
  | "complete"
  | "fail"
  | "ackList"
  | "poolStats"
  | "stats"
  | "deadLetterPage"
  | "auditPage"
  | "cluster"
  | "targets"
  | "signingSecrets"
  | "createdKey"
  | "keyPage"
  | "preview"
  | "tenantLimits"
  | "deadLetterReplay"
  | "deadLetterReplayPage"
  | "possibleDuplicatePage"
  | "whoami"
  | "statsHistory"
  | "payloadBlob";

export type OperationTag = "jobs" | "workers" | "dead-letters" | "operations" | "keys" | "tenants" | "schedules";

export interface Operation<Args extends unknown[] = never, Result = unknown> {
  method: HttpMethod;
  /** As docs/api.md writes it: `/v1/jobs/{jobId}:pause`. */
  path: string;
  summary: string;
  tag: OperationTag;
  /** Roles besides admin that may call it. */
  roles: readonly Role[];
  /** A platform key (tenant "*") may call it: it acts for every tenant. Any other operation needs a tenant's key. */
  acrossTenants?: boolean;
  params?: RequestSchemaName;
  query?: RequestSchemaName;
  headers?: RequestSchemaName;
  body?: RequestSchemaName;
  /** Checked instead of `body` before the service; the service checks the items one by one (a batch whose jobs fail alone). */
  bodyEnvelope?: RequestSchemaName;
  /** An absent body is fine (DELETE and the action POSTs). */
  bodyOptional?: boolean;
  /** The body carries a job's payload: the server takes it up to its payload limit on top of the body limit (a large one is kept by reference). */
  carriesPayload?: boolean;
  /** Answer schema by status; null: no body. */
  responses: Partial<Record<number, ResponseSchemaName | null>>;
  /**
   * The operation honours `Prefer: return=minimal` (RFC 7240): its answers
   * then have this schema instead (same statuses and headers, plus
   * `Preference-Applied: return=minimal`).
   */
  minimalResponse?: ResponseSchemaName;
  /** Whether repeating the call is harmless, so the client may retry it (the reasoning is in client.ts). */
  retry: boolean | ((request: WireRequest) => boolean);
  /** A long poll: the seconds it may wait by design, added to timeouts and deadlines. */
  waitSeconds?(request: { body?: unknown }): number;
  encode(...args: Args): WireRequest;
  decode(request: CheckedRequest): Args;
  /** The request is the checked one the result answers (absent: answer as to a request without options). */
  answer(result: Result, request?: CheckedRequest): WireReply;
  read(reply: WireReply): Result;
  /** An answer known without asking (an empty batch); undefined: ask. */
  shortcut?(...args: Args): Result | undefined;
}

// ---------------------------------------------------------------- codec pieces

type Answers<R> = Pick<Operation<never, R>, "answer" | "read" | "responses">;

/** The result is the answer's body, with this status. */
function json<R>(schema: ResponseSchemaName, status = 200): Answers<R> {
  return { responses: { [status]: schema }, answer: (result) => ({ status, body: result }), read: (reply) => reply.body as R };
}

/** The result is the answer's `items`. */
function items<T>(schema: ResponseSchemaName): Answers<T[]> {
  return {
    responses: { 200: schema },
    answer: (result) => ({ status: 200, body: { items: result } }),
    read: (reply) => (reply.body as { items: T[] }).items,
  };
}

const noContent: Answers<void> = { responses: { 204: null }, answer: () => ({ status: 204 }), read: () => undefined };

/** The Duetime-Warning header of a create's warnings: each distinct message once, `; `-separated. */
function warningHeader(warnings: readonly DueWarning[] | undefined): Record<string, string> {
  if (!warnings || warnings.length === 0) return {};
  return { "duetime-warning": [...new Set(warnings.map((w) => `${w.code} ${w.message}`))].join("; ") };
}

/** The header that says a request's `Prefer: return=minimal` was honoured. */
const MINIMAL_APPLIED: Readonly<Record<string, string>> = { "preference-applied": RETURN_MINIMAL };

/** Whether the checked request asks for the minimal answer (its Prefer header, prefer.ts). */
function wantsMinimal(request: CheckedRequest | undefined): boolean {
  return request !== undefined && prefersMinimal(request.headers.prefer);
}

/** A batch item as `Prefer: return=minimal` answers it: a created job's id and next run time; an error as it is. */
function minimalItem(result: BatchCreateResult): BatchCreateMinimalResult {
  return "error" in result ? result : { jobId: result.jobId, nextRunAt: result.nextRunAt };
}

/** A lease token as a body's field: present only when there is one. */
function withToken(leaseToken: string | undefined): { leaseToken?: string } {
  return leaseToken === undefined ? {} : { leaseToken };
}

/** Whether a request that names the job's version (If-Match, or the body's `version`) can only apply once. */
function namesVersion(request: WireRequest): boolean {
  const ifMatch = request.headers?.["if-match"];
  return (ifMatch !== undefined && ifMatch.trim() !== "*") || (request.body as JobPatch | undefined)?.version !== undefined;
}

function param(request: CheckedRequest, name: string): string {
  return request.params[name] as string;
}

const asString = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** `{ id }` in the path and nothing else: getJob, pauseJob, ... */
function byId<Name extends string>(name: Name) {
  return {
    params: `${name}Params` as RequestSchemaName,
    encode: (id: string, options?: CallOptions): WireRequest => ({ params: { [name]: id }, options }),
    decode: (request: CheckedRequest): [id: string, options?: CallOptions] => [param(request, name)],
  };
}

/** An action POST on an id (`:pause`, `:trigger`): no body, or `{}`. */
function action<Name extends string>(name: Name) {
  const { encode, ...rest } = byId(name);
  return {
    ...rest,
    body: "emptyBody" as const,
    bodyOptional: true,
    encode: (id: string, options?: CallOptions) => ({ ...encode(id, options), body: {} }),
  };
}

/** Only a query, all of it optional. */
function byQuery<Q extends object>(query: RequestSchemaName) {
  return {
    query,
    encode: (q?: Q, options?: CallOptions): WireRequest => ({ query: { ...q }, options }),
    decode: (request: CheckedRequest): [query?: Q, options?: CallOptions] => [request.query as Q],
  };
}

/** Nothing but the call's options. */
const bare = {
  encode: (options?: CallOptions): WireRequest => ({ options }),
  decode: (): [options?: CallOptions] => [],
};

/** Builds one operation, inferring its argument and result types. */
function operation<Args extends unknown[], Result>(op: Operation<Args, Result>): Operation<Args, Result> {
  return op;
}

// ---------------------------------------------------------------- the table

export const OPERATIONS = {
  // ------------------------------------------------------------ jobs

  /** POST /v1/jobs. `created` is false when an Idempotency-Key matched an earlier request (200 instead of 201). */
  createJob: operation({
    method: "POST",
    path: "/v1/jobs",
    summary: "Create a job",
    tag: "jobs",
    roles: ["client"],
    headers: "createJobHeaders",
    body: "createJobBody",
    carriesPayload: true,
    responses: { 201: "job", 200: "job" },
    minimalResponse: "jobMinimal",
    retry: (request) => request.headers?.["idempotency-key"] !== undefined,
    encode: (spec: JobSpec, options?: CreateJobOptions): WireRequest => {
      const { idempotencyKey, returnMinimal, ...call } = options ?? {};
      const headers: Record<string, string> = idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey };
      if (returnMinimal) headers.prefer = RETURN_MINIMAL;
      return { body: spec, headers, options: call };
    },
    decode: (request): [spec: JobSpec, options?: CreateJobOptions] => {
      const idempotencyKey = asString(request.headers["idempotency-key"]);
      const options: CreateJobOptions = idempotencyKey === undefined ? {} : { idempotencyKey };
      if (wantsMinimal(request)) options.returnMinimal = true;
      return Object.keys(options).length === 0 ? [request.body as JobSpec] : [request.body as JobSpec, options];
    },
    answer: (job: CreatedJob, request) => {
      const status = job.created === false ? 200 : 201;
      const headers = { location: `/v1/jobs/${encodeURIComponent(job.jobId)}`, ...warningHeader(job.warnings) };
      if (!wantsMinimal(request)) return { status, headers, body: job };
      return { status, headers: { ...headers, ...MINIMAL_APPLIED }, body: { jobId: job.jobId, nextRunAt: job.nextRunAt } };
    },
    read: (reply) => ({ ...(reply.body as Job), created: reply.status === 201 }),
  }),

  /**
   * POST /v1/jobs:batch: 1..1000 jobs; the valid ones are committed together, and each answers on its own, in order
   * (with atomic, none when any is invalid: 400). Retried only when every item has an idempotencyKey.
   */
  createJobs: operation({
    method: "POST",
    path: "/v1/jobs:batch",
    summary: "Create up to 1000 jobs; valid ones are committed together, each job answers on its own",
    tag: "jobs",
    roles: ["client"],
    headers: "batchCreateHeaders",
    body: "batchCreateBody",
    bodyEnvelope: "batchCreateEnvelope",
    ...items<BatchCreateResult>("batchCreate"),
    minimalResponse: "batchCreateMinimal",
    answer: (results, request) => {
      const headers = warningHeader(results.flatMap((r) => ("warnings" in r && r.warnings) || []));
      if (!wantsMinimal(request)) return { status: 200, headers, body: { items: results } };
      return { status: 200, headers: { ...headers, ...MINIMAL_APPLIED }, body: { items: results.map(minimalItem) } };
    },
    retry: (request) => {
      const jobs = (request.body as { jobs: BatchCreateItem[] }).jobs;
      return jobs.length > 0 && jobs.every((job) => job.idempotencyKey !== undefined);
    },
    encode: (jobs: BatchCreateItem[], options?: CreateJobsOptions): WireRequest => {
      const { atomic, returnMinimal, ...call } = options ?? {};
      return { body: atomic ? { jobs, atomic } : { jobs }, ...(returnMinimal ? { headers: { prefer: RETURN_MINIMAL } } : {}), options: call };
    },
    decode: (request): [jobs: BatchCreateItem[], options?: CreateJobsOptions] => {
      const { jobs, atomic } = request.body as { jobs: BatchCreateItem[]; atomic?: boolean };
      const options: CreateJobsOptions = atomic ? { atomic } : {};
      if (wantsMinimal(request)) options.returnMinimal = true;
      return Object.keys(options).length === 0 ? [jobs] : [jobs, options];
    },
  }),

  /** GET /v1/jobs: newest first. */
  listJobs: operation({
    method: "GET",
    path: "/v1/jobs",
    summary: "List jobs, newest first",
    tag: "jobs",
    roles: ["client"],
    ...byQuery<ListJobsQuery>("listJobsQuery"),
    ...json<Page<Job>>("jobPage"),
    retry: true,
  }),

  /** GET /v1/jobs/{jobId}; the answer's ETag is the job's version. */
  getJob: operation({
    method: "GET",
    path: "/v1/jobs/{jobId}",
    summary: "Get a job",
    tag: "jobs",
    roles: ["client"],
    ...byId("jobId"),
    ...json<Job>("job"),
    answer: (job) => ({ status: 200, headers: { etag: `"${job.version}"` }, body: job }),
    retry: true,
  }),

  /**
   * PATCH /v1/jobs/{jobId}: changes the given fields (a schedule is replaced
   * whole). With options.ifMatch or patch.version it applies only to that
   * version (else 409 VERSION_CONFLICT), and only then is it retried.
   */
  updateJob: operation({
    method: "PATCH",
    path: "/v1/jobs/{jobId}",
    summary: "Change a job; with If-Match or version, only if it is still at that version",
    tag: "jobs",
    roles: ["client"],
    params: "jobIdParams",
    headers: "updateJobHeaders",
    body: "updateJobBody",
    carriesPayload: true,
    ...json<Job>("job"),
    answer: (job) => ({ status: 200, headers: { etag: `"${job.version}"` }, body: job }),
    retry: namesVersion,
    encode: (jobId: string, patch: JobPatch, options?: UpdateJobOptions): WireRequest => {
      const { ifMatch, ...call } = options ?? {};
      const headers = ifMatch === undefined ? {} : { "if-match": typeof ifMatch === "number" ? `"${ifMatch}"` : ifMatch };
      return { params: { jobId }, headers, body: patch, options: call };
    },
    decode: (request): [jobId: string, patch: JobPatch, options?: UpdateJobOptions] => {
      const ifMatch = asString(request.headers["if-match"]);
      const jobId = param(request, "jobId");
      return ifMatch === undefined ? [jobId, request.body as JobPatch] : [jobId, request.body as JobPatch, { ifMatch }];
    },
  }),

  /** DELETE /v1/jobs/{jobId}: the job is CANCELLED (204; repeating it answers 204 again). */
  cancelJob: operation({
    method: "DELETE",
    path: "/v1/jobs/{jobId}",
    summary: "Cancel a job",
    tag: "jobs",
    roles: ["client"],
    ...byId("jobId"),
    body: "emptyBody",
    bodyOptional: true,
    ...noContent,
    retry: true,
  }),

  /** POST /v1/jobs/{jobId}:pause (repeating it answers 200 again). */
  pauseJob: operation({
    method: "POST",
    path: "/v1/jobs/{jobId}:pause",
    summary: "Pause a job",
    tag: "jobs",
    roles: ["client"],
    ...action("jobId"),
    ...json<Job>("job"),
    retry: true,
  }),

  /** POST /v1/jobs/{jobId}:resume (repeating it answers 200 again). */
  resumeJob: operation({
    method: "POST",
    path: "/v1/jobs/{jobId}:resume",
    summary: "Resume a paused job",
    tag: "jobs",
    roles: ["client"],
    ...action("jobId"),
    ...json<Job>("job"),
    retry: true,
  }),

  /** POST /v1/jobs/{jobId}:trigger: a new execution, due now. Never retried (each call creates one). */
  triggerJob: operation({
    method: "POST",
    path: "/v1/jobs/{jobId}:trigger",
    summary: "Create a new execution of a job, due now",
    tag: "jobs",
    roles: ["client"],
    ...action("jobId"),
    ...json<ExecutionItem>("executionItem", 201),
    retry: false,
  }),

  /** POST /v1/jobs/{jobId}:backfill: the occurrences of a past window (from, to] of a recurring job. Retried: a repeat adds nothing. */
  backfillJob: operation({
    method: "POST",
    path: "/v1/jobs/{jobId}:backfill",
    summary: "Create the occurrences of a past window (from, to] of a recurring job; repeating it adds nothing",
    tag: "jobs",
    roles: ["client"],
    params: "jobIdParams",
    body: "backfillBody",
    ...json<BackfillResponse>("backfill", 201),
    retry: true,
    encode: (jobId: string, request: BackfillRequest, options?: CallOptions) => ({ params: { jobId }, body: request, options }),
    decode: (request): [jobId: string, request: BackfillRequest, options?: CallOptions] => [param(request, "jobId"), request.body as BackfillRequest],
  }),

  /** GET /v1/jobs/{jobId}/occurrences: the run ledger, every nominal fire time of the window and what became of it. */
  listOccurrences: operation({
    method: "GET",
    path: "/v1/jobs/{jobId}/occurrences",
    summary: "The run ledger: every nominal fire time between from and to, and what became of it",
    tag: "jobs",
    roles: ["client"],
    params: "jobIdParams",
    query: "occurrencesQuery",
    ...json<{ items: OccurrenceItem[] }>("occurrences"),
    retry: true,
    encode: (jobId: string, query: OccurrencesQuery, options?: CallOptions) => ({ params: { jobId }, query: { ...query }, options }),
    decode: (request): [jobId: string, query: OccurrencesQuery, options?: CallOptions] => [
      param(request, "jobId"),
      request.query as unknown as OccurrencesQuery,
    ],
  }),

  /** GET /v1/jobs/{jobId}/executions: one item per attempt, newest first. */
  listExecutions: operation({
    method: "GET",
    path: "/v1/jobs/{jobId}/executions",
    summary: "A job's executions, one item per attempt, newest first",
    tag: "jobs",
    roles: ["client"],
    params: "jobIdParams",
    query: "pageQuery",
    ...json<Page<ExecutionItem>>("executionPage"),
    retry: true,
    encode: (jobId: string, query?: PageQuery, options?: CallOptions) => ({ params: { jobId }, query: { ...query }, options }),
    decode: (request): [jobId: string, query?: PageQuery, options?: CallOptions] => [param(request, "jobId"), request.query as PageQuery],
  }),

  /**
   * GET /v1/executions?possibleDuplicate=true: the tenant's executions where
   * an attempt ran on after losing its lease, newest first.
   */
  listPossibleDuplicates: operation({
    method: "GET",
    path: "/v1/executions",
    summary: "Executions with a possible duplicate (possibleDuplicate=true): an attempt that ran on after losing its lease, newest first",
    tag: "jobs",
    roles: ["client"],
    query: "executionsQuery",
    ...json<Page<PossibleDuplicateExecution>>("possibleDuplicatePage"),
    retry: true,
    encode: (query?: Partial<ExecutionsQuery>, options?: CallOptions): WireRequest => ({ query: { possibleDuplicate: true, ...query }, options }),
    decode: (request): [query?: Partial<ExecutionsQuery>, options?: CallOptions] => [request.query as unknown as ExecutionsQuery],
  }),

  // ------------------------------------------------------------ worker protocol

  /**
   * POST /v1/pools/{pool}/lease: leases ready executions, acknowledging
   * finished ones. Long-polls up to request.waitSeconds (timeouts grow by
   * that much); options.signal ends a long poll early, granting nothing.
   * Retried: the acks are idempotent, and a lease whose answer was lost
   * leaves its items to expire and run again, retried or not.
   */
  lease: operation({
    method: "POST",
    path: "/v1/pools/{pool}/lease",
    summary: "Lease ready executions of a pool (long poll with waitSeconds), acknowledging finished ones",
    tag: "workers",
    roles: ["worker"],
    acrossTenants: true,
    params: "poolParams",
    body: "leaseBody",
    ...json<LeaseResponse>("lease"),
    retry: true,
    waitSeconds: (request) => (request.body as LeaseRequest).waitSeconds ?? 0,
    encode: (pool: string, request: LeaseRequest, options?: CallOptions) => {
      const body: LeaseRequest = { ...request };
      if (body.complete?.length === 0) delete body.complete;
      if (body.fail?.length === 0) delete body.fail;
      return { params: { pool }, body, options };
    },
    decode: (request): [pool: string, request: LeaseRequest, options?: CallOptions] => [param(request, "pool"), request.body as LeaseRequest],
  }),

  /** POST /v1/executions/{executionId}/heartbeat: extends the attempt's lease. */
  heartbeat: operation({
    method: "POST",
    path: "/v1/executions/{executionId}/heartbeat",
    summary: "Extend the lease of an attempt",
    tag: "workers",
    roles: ["worker"],
    acrossTenants: true,
    params: "executionIdParams",
    body: "heartbeatBody",
    ...json<HeartbeatResponse>("heartbeat"),
    retry: true,
    encode: (executionId: string, request: HeartbeatRequest, options?: CallOptions) => ({ params: { executionId }, body: request, options }),
    decode: (request): [executionId: string, request: HeartbeatRequest, options?: CallOptions] => [
      param(request, "executionId"),
      request.body as HeartbeatRequest,
    ],
  }),

  /** POST /v1/executions/{executionId}/complete (a repeat answers 200 again). */
  complete: operation({
    method: "POST",
    path: "/v1/executions/{executionId}/complete",
    summary: "Complete an attempt",
    tag: "workers",
    roles: ["worker"],
    acrossTenants: true,
    params: "executionIdParams",
    body: "completeBody",
    ...json<CompleteResponse>("complete"),
    retry: true,
    encode: (executionId: string, attempt: number, result?: unknown, options?: AttemptOptions) => {
      const { leaseToken, ...call } = options ?? {};
      return { params: { executionId }, body: { attempt, ...withToken(leaseToken), ...(result === undefined ? {} : { result }) }, options: call };
    },
    decode: (request): [executionId: string, attempt: number, result?: unknown, options?: AttemptOptions] => {
      const { attempt, result, leaseToken } = request.body as { attempt: number; result?: unknown; leaseToken?: string };
      const id = param(request, "executionId");
      if (leaseToken !== undefined) return [id, attempt, result, { leaseToken }];
      return result === undefined ? [id, attempt] : [id, attempt, result];
    },
  }),

  /** POST /v1/executions/{executionId}/fail (a repeat answers 200 again). */
  fail: operation({
    method: "POST",
    path: "/v1/executions/{executionId}/fail",
    summary: "Fail an attempt",
    tag: "workers",
    roles: ["worker"],
    acrossTenants: true,
    params: "executionIdParams",
    body: "failBody",
    ...json<FailResponse>("fail"),
    retry: true,
    encode: (executionId: string, attempt: number, error: ErrorRecord, options?: AttemptOptions) => {
      const { leaseToken, ...call } = options ?? {};
      return { params: { executionId }, body: { attempt, ...withToken(leaseToken), error }, options: call };
    },
    decode: (request): [executionId: string, attempt: number, error: ErrorRecord, options?: AttemptOptions] => {
      const { attempt, error, leaseToken } = request.body as { attempt: number; error: ErrorRecord; leaseToken?: string };
      const id = param(request, "executionId");
      return leaseToken === undefined ? [id, attempt, error] : [id, attempt, error, { leaseToken }];
    },
  }),

  /** POST /v1/executions:complete (1..1000 items): one answer per item, in order, with status 200 or 409. */
  completeMany: operation({
    method: "POST",
    path: "/v1/executions:complete",
    summary: "Complete up to 1000 attempts; one answer per item, in order",
    tag: "workers",
    roles: ["worker"],
    acrossTenants: true,
    body: "completeManyBody",
    ...items<AckItem>("ackList"),
    retry: true,
    shortcut: (list) => (list.length === 0 ? [] : undefined),
    encode: (list: CompleteItem[], options?: CallOptions) => ({ body: { items: list }, options }),
    decode: (request): [items: CompleteItem[], options?: CallOptions] => [(request.body as { items: CompleteItem[] }).items],
  }),

  /** POST /v1/executions:fail (1..1000 items): one answer per item, in order, with status 200 or 409. */
  failMany: operation({
    method: "POST",
    path: "/v1/executions:fail",
    summary: "Fail up to 1000 attempts; one answer per item, in order",
    tag: "workers",
    roles: ["worker"],
    acrossTenants: true,
    body: "failManyBody",
    ...items<AckItem>("ackList"),
    retry: true,
    shortcut: (list) => (list.length === 0 ? [] : undefined),
    encode: (list: FailItem[], options?: CallOptions) => ({ body: { items: list }, options }),
    decode: (request): [items: FailItem[], options?: CallOptions] => [(request.body as { items: FailItem[] }).items],
  }),

  /**
   * GET /v1/blobs/{blobId}: a payload kept by reference (a PayloadRef's
   * href), as it was created. The caller's tenant's only (a platform key's:
   * any tenant's); the SDK's Worker calls it before the handler runs.
   */
  getBlob: operation({
    method: "GET",
    path: "/v1/blobs/{blobId}",
    summary: "A payload kept by reference (a payloadRef's href), as it was created",
    tag: "workers",
    roles: ["worker", "client"],
    acrossTenants: true,
    params: "blobIdParams",
    ...json<unknown>("payloadBlob"),
    retry: true,
    encode: (blobId: string, options?: CallOptions): WireRequest => ({ params: { blobId }, options }),
    decode: (request): [blobId: string, options?: CallOptions] => [param(request, "blobId")],
  }),

  /** GET /v1/pools/{pool}/stats: pending, queued and running counts. */
  poolStats: operation({
    method: "GET",
    path: "/v1/pools/{pool}/stats",
    summary: "Pending, queued and running counts of a pool",
    tag: "workers",
    roles: ["worker"],
    acrossTenants: true,
    ...byId("pool"),
    ...json<PoolStats>("poolStats"),
    retry: true,
  }),

  /** GET /v1/stats: counts per pool and per tenant. */
  stats: operation({
    method: "GET",
    path: "/v1/stats",
    summary: "Counts per pool and per tenant",
    tag: "workers",
    roles: ["worker"],
    acrossTenants: true,
    ...bare,
    ...json<Stats>("stats"),
    retry: true,
  }),

  /** GET /v1/stats/history: per-minute throughput, failures, start lag and queue depth, per pool or per tenant (the dashboard's Overview). */
  statsHistory: operation({
    method: "GET",
    path: "/v1/stats/history",
    summary: "Per-minute throughput, failures, start-lag percentiles and queue depth per pool or per tenant",
    tag: "workers",
    roles: ["worker"],
    acrossTenants: true,
    ...byQuery<StatsHistoryQuery>("statsHistoryQuery"),
    ...json<StatsHistory>("statsHistory"),
    retry: true,
  }),

  // ------------------------------------------------------------ dead letters and operations

  /** GET /v1/dead-letters: dead executions with their payload and last error. */
  listDeadLetters: operation({
    method: "GET",
    path: "/v1/dead-letters",
    summary: "Dead executions with their payload and last error",
    tag: "dead-letters",
    roles: ["client"],
    ...byQuery<PageQuery>("pageQuery"),
    ...json<Page<DeadLetter>>("deadLetterPage"),
    retry: true,
  }),

  /** POST /v1/dead-letters/{executionId}:replay (role admin; audited). Never retried: each call is a new attempt. */
  replayDeadLetter: operation({
    method: "POST",
    path: "/v1/dead-letters/{executionId}:replay",
    summary: "Give a dead execution a new attempt (audited)",
    tag: "dead-letters",
    roles: [],
    ...action("executionId"),
    ...json<ExecutionItem>("executionItem", 201),
    retry: false,
  }),

  /**
   * POST /v1/dead-letters:replay (role admin; audited): replays the listed
   * dead letters, or those a filter matches that died by now, at
   * ratePerSecond, as a durable operation the engine drives; answers 202
   * with it. A platform admin (tenant *) names the tenant. Never retried: a
   * repeat would start a second replay.
   */
  replayDeadLetters: operation({
    method: "POST",
    path: "/v1/dead-letters:replay",
    summary: "Replay dead letters by ids or by a filter, at a rate, as an operation whose progress is visible (audited)",
    tag: "dead-letters",
    roles: [],
    acrossTenants: true,
    body: "replayDeadLettersBody",
    ...json<DeadLetterReplay>("deadLetterReplay", 202),
    answer: (replay) => ({
      status: 202,
      headers: { location: `/v1/dead-letters/replays/${encodeURIComponent(replay.replayId)}` },
      body: replay,
    }),
    retry: false,
    encode: (request: DeadLetterReplayRequest, options?: CallOptions) => ({ body: request, options }),
    decode: (request): [request: DeadLetterReplayRequest, options?: CallOptions] => [request.body as DeadLetterReplayRequest],
  }),

  /** GET /v1/dead-letters/replays: the tenant's bulk replays, newest first. */
  listDeadLetterReplays: operation({
    method: "GET",
    path: "/v1/dead-letters/replays",
    summary: "Bulk dead-letter replays, newest first",
    tag: "dead-letters",
    roles: [],
    ...byQuery<PageQuery>("pageQuery"),
    ...json<Page<DeadLetterReplay>>("deadLetterReplayPage"),
    retry: true,
  }),

  /** GET /v1/dead-letters/replays/{replayId}: a bulk replay and its progress. */
  getDeadLetterReplay: operation({
    method: "GET",
    path: "/v1/dead-letters/replays/{replayId}",
    summary: "A bulk dead-letter replay and its progress",
    tag: "dead-letters",
    roles: [],
    acrossTenants: true,
    ...byId("replayId"),
    ...json<DeadLetterReplay>("deadLetterReplay"),
    retry: true,
  }),

  /** POST /v1/dead-letters/replays/{replayId}:cancel (audited): stops a RUNNING replay; repeating it answers 200 again; a DONE one is 409 INVALID_STATE. */
  cancelDeadLetterReplay: operation({
    method: "POST",
    path: "/v1/dead-letters/replays/{replayId}:cancel",
    summary: "Cancel a running bulk dead-letter replay (audited)",
    tag: "dead-letters",
    roles: [],
    acrossTenants: true,
    ...action("replayId"),
    ...json<DeadLetterReplay>("deadLetterReplay"),
    retry: true,
  }),

  /** GET /v1/audit (role admin). */
  listAudit: operation({
    method: "GET",
    path: "/v1/audit",
    summary: "The audit log",
    tag: "operations",
    roles: [],
    ...byQuery<PageQuery>("pageQuery"),
    ...json<Page<AuditItem>>("auditPage"),
    retry: true,
  }),

  /** GET /v1/cluster (role admin): nodes and shard ownership. */
  cluster: operation({
    method: "GET",
    path: "/v1/cluster",
    summary: "Nodes and shard ownership",
    tag: "operations",
    roles: [],
    acrossTenants: true,
    ...bare,
    ...json<ClusterView>("cluster"),
    retry: true,
  }),

  /** GET /v1/targets (role admin): the origins HTTP targets call from this node, with their breaker state. */
  listTargets: operation({
    method: "GET",
    path: "/v1/targets",
    summary: "Origins that HTTP targets call from this node: circuit breaker, calls in flight and waiting, limits",
    tag: "operations",
    roles: [],
    acrossTenants: true,
    ...bare,
    ...json<{ items: TargetStatus[] }>("targets"),
    retry: true,
  }),

  /**
   * GET /v1/secrets/signing (role admin): the caller's tenant's callback
   * signing secrets, newest first, for verifySignature; `source` says whether
   * they were configured or generated and kept in the store. NOT_FOUND when
   * the tenant has none (its calls go unsigned).
   */
  signingSecrets: operation({
    method: "GET",
    path: "/v1/secrets/signing",
    summary: "The caller's tenant's callback signing secrets, newest first, and where they come from (config or store)",
    tag: "operations",
    roles: [],
    ...bare,
    ...json<SigningSecrets>("signingSecrets"),
    retry: true,
  }),

  // ------------------------------------------------------------ API keys (role admin)

  /**
   * POST /v1/keys: a new API key (audited). The answer's `key` is the secret,
   * shown this once (the store keeps its SHA-256 digest). Another tenant than
   * the caller's needs a bootstrap admin. Never retried: a repeat would
   * create a second key.
   */
  createKey: operation({
    method: "POST",
    path: "/v1/keys",
    summary: "Create an API key; its secret is in this answer only (audited)",
    tag: "keys",
    roles: [],
    acrossTenants: true,
    body: "createKeyBody",
    ...json<CreatedKey>("createdKey", 201),
    retry: false,
    encode: (request: CreateKeyRequest, options?: CallOptions) => ({ body: request, options }),
    decode: (request): [request: CreateKeyRequest, options?: CallOptions] => [request.body as CreateKeyRequest],
  }),

  /** GET /v1/keys: keys newest first, revoked ones included, never their secrets. */
  listKeys: operation({
    method: "GET",
    path: "/v1/keys",
    summary: "API keys, newest first, revoked ones included; never their secrets",
    tag: "keys",
    roles: [],
    acrossTenants: true,
    ...byQuery<ListKeysQuery>("listKeysQuery"),
    ...json<Page<ApiKeyInfo>>("keyPage"),
    retry: true,
  }),

  /** DELETE /v1/keys/{keyId}: revokes a key (audited; 204, and 204 again when repeated). Other nodes stop accepting it within 30 s. */
  revokeKey: operation({
    method: "DELETE",
    path: "/v1/keys/{keyId}",
    summary: "Revoke an API key (audited); repeating it answers 204 again",
    tag: "keys",
    roles: [],
    acrossTenants: true,
    ...byId("keyId"),
    body: "emptyBody",
    bodyOptional: true,
    ...noContent,
    retry: true,
  }),

  /** GET /v1/whoami (any valid key): the caller's role, tenant and key id, so a user interface shows only what the key may use. */
  whoami: operation({
    method: "GET",
    path: "/v1/whoami",
    summary: "The calling key's role, tenant and key id",
    tag: "keys",
    roles: ["client", "worker"],
    acrossTenants: true,
    ...bare,
    ...json<WhoAmI>("whoami"),
    retry: true,
  }),

  // ------------------------------------------------------------ tenants (role admin)

  /** GET /v1/tenants/{tenantId}/limits: a tenant's limits, defaults filled in. An admin of a tenant reads its own; a platform or bootstrap admin any. */
  getTenantLimits: operation({
    method: "GET",
    path: "/v1/tenants/{tenantId}/limits",
    summary: "A tenant's limits (its weight in pools leased across tenants), defaults filled in",
    tag: "tenants",
    roles: [],
    acrossTenants: true,
    ...byId("tenantId"),
    ...json<TenantLimits>("tenantLimits"),
    retry: true,
  }),

  /** PUT /v1/tenants/{tenantId}/limits (platform or bootstrap admin; audited): sets them whole, a field left out back to its default. Retried: a repeat sets the same. */
  putTenantLimits: operation({
    method: "PUT",
    path: "/v1/tenants/{tenantId}/limits",
    summary: "Set a tenant's limits whole (audited); a field left out takes its default",
    tag: "tenants",
    roles: [],
    acrossTenants: true,
    params: "tenantIdParams",
    body: "tenantLimitsBody",
    ...json<TenantLimits>("tenantLimits"),
    retry: true,
    encode: (tenantId: string, limits: TenantLimitsRequest, options?: CallOptions) => ({ params: { tenantId }, body: limits, options }),
    decode: (request): [tenantId: string, limits: TenantLimitsRequest, options?: CallOptions] => [
      param(request, "tenantId"),
      request.body as TenantLimitsRequest,
    ],
  }),

  // ------------------------------------------------------------ schedules

  /** GET /v1/schedules/preview: the next fire times of a cron expression, in UTC, with wall times and DST marks. */
  previewSchedule: operation({
    method: "GET",
    path: "/v1/schedules/preview",
    summary: "The next fire times of a cron expression",
    tag: "schedules",
    roles: ["client", "worker"],
    acrossTenants: true,
    query: "previewQuery",
    ...json<PreviewResponse>("preview"),
    retry: true,
    encode: (query: PreviewQuery, options?: CallOptions) => ({ query: { ...query }, options }),
    decode: (request): [query: PreviewQuery, options?: CallOptions] => [request.query as unknown as PreviewQuery],
  }),
};

export type Operations = typeof OPERATIONS;
export type OperationName = keyof Operations;
export type OperationArgs<K extends OperationName> = Parameters<Operations[K]["encode"]>;
export type OperationResult<K extends OperationName> = ReturnType<Operations[K]["read"]>;

type ApiMethods = { [K in OperationName]: (...args: OperationArgs<K>) => Promise<OperationResult<K>> };

/**
 * The API as methods, one per operation: the SDK client and the embedded
 * client both implement it. The creates narrow their result to what
 * `returnMinimal: true` answers (an answer with more fields, as the embedded
 * client's, is one too).
 */
export type DuetimeApi = Omit<ApiMethods, "createJob" | "createJobs"> & {
  createJob: {
    (spec: JobSpec, options: CreateJobOptions & { returnMinimal: true }): Promise<CreatedJobMinimal>;
    (spec: JobSpec, options?: CreateJobOptions & { returnMinimal?: false }): Promise<OperationResult<"createJob">>;
    (spec: JobSpec, options?: CreateJobOptions): Promise<CreatedJobMinimal>;
  };
  createJobs: {
    (jobs: BatchCreateItem[], options: CreateJobsOptions & { returnMinimal: true }): Promise<BatchCreateMinimalResult[]>;
    (jobs: BatchCreateItem[], options?: CreateJobsOptions & { returnMinimal?: false }): Promise<BatchCreateResult[]>;
    (jobs: BatchCreateItem[], options?: CreateJobsOptions): Promise<BatchCreateMinimalResult[]>;
  };
};

/** What a worker needs of an API; getBlob fetches payloads kept by reference (without it such a job's attempt fails). */
export type WorkerApi = Pick<DuetimeApi, "lease" | "heartbeat" | "completeMany" | "failMany"> & Partial<Pick<DuetimeApi, "getBlob">>;

export const OPERATION_NAMES = Object.keys(OPERATIONS) as OperationName[];

/** Loosely typed, for code that serves or sends any operation. */
export type AnyOperation = Operation<unknown[], unknown>;

export function operationNamed(name: OperationName): AnyOperation {
  return OPERATIONS[name] as unknown as AnyOperation;
}

/** `/v1/jobs/{jobId}:pause` with its parameters filled in, encoded. */
export function fillPath(path: string, params: Record<string, string> = {}): string {
  return path.replace(/\{(\w+)\}/g, (_match, name: string) => encodeURIComponent(params[name] ?? ""));
}

/**
 * A DuetimeApi whose every method encodes its arguments and hands the
 * request to `send` (an HTTP transport, or the engine in-process), or
 * answers at once when the operation has a shortcut.
 */
export function apiOver(send: (name: OperationName, op: AnyOperation, request: WireRequest) => Promise<unknown>): DuetimeApi {
  const api: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const name of OPERATION_NAMES) {
    const op = operationNamed(name);
    api[name] = async (...args) => {
      const known = op.shortcut?.(...args);
      return known !== undefined ? known : send(name, op, op.encode(...args));
    };
  }
  return api as unknown as DuetimeApi;
}
