// The /v1 routes of docs/api.md. Each route is one row: its URL, who may call
// it, which schemas of core/schemas.ts check its parts, and the one Service
// method it calls. The server holds no business logic: it authenticates,
// checks shapes (core/validate.ts), calls the service, and picks the status.
//
// Colon routes (`/v1/jobs/{jobId}:pause`, `/v1/jobs:batch`): Fastify's router
// (find-my-way) reads `:` as a parameter marker and ends a parameter name
// only at `/`, `-`, `.` or `(`, so `/:jobId::pause` would swallow the action
// into the name. We escape the literal colon as `::` and end the parameter
// with an explicit pattern, `/:jobId([A-Za-z0-9_-]+)::pause`: the router then
// matches the action as static text, an unknown action finds no route (404),
// `%3A` works as well as `:`, and @fastify/swagger writes the OpenAPI path
// `/v1/jobs/{jobId}:pause`.
//
// Versions: GET and PATCH /v1/jobs/{jobId} answer `ETag: "<version>"`; a
// PATCH may name the version it applies to with If-Match (that ETag, `7` or
// `W/"7"`) or a `version` field (core/validate.ts expectedVersion()), and the
// service answers 409 VERSION_CONFLICT when the job has moved on.
//
// Deadlines: every request has one (default 10 s; a long poll's is its
// waitSeconds more). When it passes, the request's signal aborts (the service
// stops waiting) and the answer is 503 UNAVAILABLE with Retry-After: a client
// retries 503s already, and the catalog has no better code (a timeout is "not
// available now", not the caller's mistake). See withDeadline().
//
// Roles (admin may call everything):
// - client: jobs (create, batch, get, list, update, cancel, pause, resume,
//   trigger, backfill, occurrences), executions history, dead-letter list,
//   schedules preview;
// - worker: lease, heartbeat, complete, fail (single and batch), pool stats,
//   /v1/stats, schedules preview;
// - admin only: dead-letter replay, audit, cluster, targets, API keys,
//   signing secrets.

import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type {
  BackfillRequest,
  BatchCreateItem,
  CompleteItem,
  CreateKeyRequest,
  ErrorRecord,
  FailItem,
  HeartbeatRequest,
  Job,
  JobPatch,
  JobSpec,
  LeaseRequest,
  ListJobsQuery,
  ListKeysQuery,
  OccurrencesQuery,
  PageQuery,
  PreviewQuery,
  Role,
} from "@duetime/sdk/contract";
import { DuetimeError } from "../core/errors.js";
import {
  REQUEST_SCHEMAS,
  ackListResponse,
  backfillResponse,
  batchCreateResponse,
  completeResponse,
  deadLetterPageResponse,
  errorEnvelopeSchema,
  executionItemResponse,
  executionPageResponse,
  failResponse,
  heartbeatResponse,
  jobPageResponse,
  jobResponse,
  leaseResponse,
  occurrencesResponse,
  auditPageResponse,
  clusterResponse,
  createdKeyResponse,
  keyPageResponse,
  targetsResponse,
  signingSecretsResponse,
  poolStatsResponse,
  previewResponse,
  statsResponse,
  type JsonSchema,
  type SchemaId,
} from "../core/schemas.js";
import { expectedVersion, validate, validateBatch } from "../core/validate.js";
import type { RequestContext, Service } from "../engine/service.js";
import { authorize, type KeyRing, type Principal } from "./auth.js";

interface Input {
  ctx: RequestContext;
  params: Record<string, string>;
  query: Record<string, unknown>;
  headers: Record<string, unknown>;
  body: unknown;
  reply: FastifyReply;
}

interface RouteDef {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  url: string;
  operationId: string;
  summary: string;
  tag: string;
  /** Roles besides admin that may call the route. */
  roles: readonly Role[];
  params?: SchemaId;
  query?: SchemaId;
  headers?: SchemaId;
  body?: SchemaId;
  /** An absent body is fine (DELETE and the action POSTs). */
  bodyOptional?: boolean;
  /** The handler checks the body itself (the batch, whose jobs fail one by one). */
  bodyCheckedByHandler?: boolean;
  /** A long poll: the seconds it may wait by design, added to its deadline. */
  waitSeconds?(body: unknown): number;
  status?: number;
  responses: Record<number, JsonSchema>;
  handle(input: Input): Promise<unknown>;
}

const ID = "([A-Za-z0-9_-]+)";

/** `ETag: "<version>"` of a job answer; If-Match takes it back. */
function withETag(reply: FastifyReply, job: Job): Job {
  reply.header("etag", `"${job.version}"`);
  return job;
}

function routeTable(service: Service, runtime: RouteRuntime): RouteDef[] {
  return [
    // ------------------------------------------------------------ jobs
    {
      method: "POST",
      url: "/v1/jobs",
      operationId: "createJob",
      summary: "Create a job",
      tag: "jobs",
      roles: ["client"],
      headers: "createJobHeaders",
      body: "createJobBody",
      status: 201,
      responses: { 201: jobResponse, 200: jobResponse },
      async handle({ ctx, body, headers, reply }) {
        const key = headers["idempotency-key"] as string | undefined;
        const job = await service.createJob(ctx, body as JobSpec, key);
        reply.code(job.created === false ? 200 : 201).header("location", `/v1/jobs/${encodeURIComponent(job.jobId)}`);
        return job;
      },
    },
    {
      method: "POST",
      url: "/v1/jobs::batch",
      operationId: "createJobs",
      summary: "Create up to 1000 jobs; valid ones are committed together, each job answers on its own",
      tag: "jobs",
      roles: ["client"],
      body: "batchCreateBody",
      bodyCheckedByHandler: true,
      responses: { 200: batchCreateResponse },
      async handle({ ctx, body }) {
        const batch = validateBatch(body);
        const results = batch.valid.length > 0 ? await service.createJobs(ctx, batch.valid as BatchCreateItem[]) : [];
        return { items: batch.merge(results) };
      },
    },
    {
      method: "GET",
      url: "/v1/jobs",
      operationId: "listJobs",
      summary: "List jobs, newest first",
      tag: "jobs",
      roles: ["client"],
      query: "listJobsQuery",
      responses: { 200: jobPageResponse },
      handle: ({ ctx, query }) => service.listJobs(ctx, query as ListJobsQuery),
    },
    {
      method: "GET",
      url: "/v1/jobs/:jobId",
      operationId: "getJob",
      summary: "Get a job",
      tag: "jobs",
      roles: ["client"],
      params: "jobIdParams",
      responses: { 200: jobResponse },
      handle: async ({ ctx, params, reply }) => withETag(reply, await service.getJob(ctx, params.jobId as string)),
    },
    {
      method: "PATCH",
      url: "/v1/jobs/:jobId",
      operationId: "updateJob",
      summary: "Change a job; with If-Match or version, only if it is still at that version",
      tag: "jobs",
      roles: ["client"],
      params: "jobIdParams",
      headers: "updateJobHeaders",
      body: "updateJobBody",
      responses: { 200: jobResponse },
      async handle({ ctx, params, headers, body, reply }) {
        const patch = body as JobPatch;
        const expected = expectedVersion(headers["if-match"], patch.version);
        return withETag(reply, await service.updateJob(ctx, params.jobId as string, patch, expected));
      },
    },
    {
      method: "DELETE",
      url: "/v1/jobs/:jobId",
      operationId: "cancelJob",
      summary: "Cancel a job",
      tag: "jobs",
      roles: ["client"],
      params: "jobIdParams",
      body: "emptyBody",
      bodyOptional: true,
      status: 204,
      responses: { 204: { type: "null", description: "Cancelled" } },
      async handle({ ctx, params }) {
        await service.cancelJob(ctx, params.jobId as string);
        return undefined;
      },
    },
    {
      method: "POST",
      url: `/v1/jobs/:jobId${ID}::pause`,
      operationId: "pauseJob",
      summary: "Pause a job",
      tag: "jobs",
      roles: ["client"],
      params: "jobIdParams",
      body: "emptyBody",
      bodyOptional: true,
      responses: { 200: jobResponse },
      handle: ({ ctx, params }) => service.pauseJob(ctx, params.jobId as string),
    },
    {
      method: "POST",
      url: `/v1/jobs/:jobId${ID}::resume`,
      operationId: "resumeJob",
      summary: "Resume a paused job",
      tag: "jobs",
      roles: ["client"],
      params: "jobIdParams",
      body: "emptyBody",
      bodyOptional: true,
      responses: { 200: jobResponse },
      handle: ({ ctx, params }) => service.resumeJob(ctx, params.jobId as string),
    },
    {
      method: "POST",
      url: `/v1/jobs/:jobId${ID}::trigger`,
      operationId: "triggerJob",
      summary: "Create a new execution of a job, due now",
      tag: "jobs",
      roles: ["client"],
      params: "jobIdParams",
      body: "emptyBody",
      bodyOptional: true,
      status: 201,
      responses: { 201: executionItemResponse },
      handle: ({ ctx, params }) => service.triggerJob(ctx, params.jobId as string),
    },
    {
      method: "POST",
      url: `/v1/jobs/:jobId${ID}::backfill`,
      operationId: "backfillJob",
      summary: "Create the occurrences of a past window (from, to] of a recurring job; repeating it adds nothing",
      tag: "jobs",
      roles: ["client"],
      params: "jobIdParams",
      body: "backfillBody",
      status: 201,
      responses: { 201: backfillResponse },
      handle: ({ ctx, params, body }) => service.backfillJob(ctx, params.jobId as string, body as BackfillRequest),
    },
    {
      method: "GET",
      url: "/v1/jobs/:jobId/occurrences",
      operationId: "listOccurrences",
      summary: "The run ledger: every nominal fire time between from and to, and what became of it",
      tag: "jobs",
      roles: ["client"],
      params: "jobIdParams",
      query: "occurrencesQuery",
      responses: { 200: occurrencesResponse },
      handle: ({ ctx, params, query }) => service.listOccurrences(ctx, params.jobId as string, query as unknown as OccurrencesQuery),
    },
    {
      method: "GET",
      url: "/v1/jobs/:jobId/executions",
      operationId: "listExecutions",
      summary: "A job's executions, one item per attempt, newest first",
      tag: "jobs",
      roles: ["client"],
      params: "jobIdParams",
      query: "pageQuery",
      responses: { 200: executionPageResponse },
      handle: ({ ctx, params, query }) => service.listExecutions(ctx, params.jobId as string, query as PageQuery),
    },

    // ------------------------------------------------------------ worker protocol
    {
      method: "POST",
      url: "/v1/pools/:pool/lease",
      operationId: "lease",
      summary: "Lease ready executions of a pool (long poll with waitSeconds), acknowledging finished ones",
      tag: "workers",
      roles: ["worker"],
      params: "poolParams",
      body: "leaseBody",
      responses: { 200: leaseResponse },
      waitSeconds: (body) => (body as LeaseRequest).waitSeconds ?? 0,
      handle: ({ ctx, params, body }) => service.lease(ctx, params.pool as string, body as LeaseRequest),
    },
    {
      method: "POST",
      url: "/v1/executions/:executionId/heartbeat",
      operationId: "heartbeat",
      summary: "Extend the lease of an attempt",
      tag: "workers",
      roles: ["worker"],
      params: "executionIdParams",
      body: "heartbeatBody",
      responses: { 200: heartbeatResponse },
      handle: ({ ctx, params, body }) => service.heartbeat(ctx, params.executionId as string, body as HeartbeatRequest),
    },
    {
      method: "POST",
      url: "/v1/executions/:executionId/complete",
      operationId: "complete",
      summary: "Complete an attempt",
      tag: "workers",
      roles: ["worker"],
      params: "executionIdParams",
      body: "completeBody",
      responses: { 200: completeResponse },
      handle: ({ ctx, params, body }) => {
        const b = body as { attempt: number; result?: unknown };
        return service.complete(ctx, params.executionId as string, b.attempt, b.result);
      },
    },
    {
      method: "POST",
      url: "/v1/executions/:executionId/fail",
      operationId: "fail",
      summary: "Fail an attempt",
      tag: "workers",
      roles: ["worker"],
      params: "executionIdParams",
      body: "failBody",
      responses: { 200: failResponse },
      handle: ({ ctx, params, body }) => {
        const b = body as { attempt: number; error: ErrorRecord };
        return service.fail(ctx, params.executionId as string, b.attempt, b.error);
      },
    },
    {
      method: "POST",
      url: "/v1/executions::complete",
      operationId: "completeMany",
      summary: "Complete up to 1000 attempts; one answer per item, in order",
      tag: "workers",
      roles: ["worker"],
      body: "completeManyBody",
      responses: { 200: ackListResponse },
      handle: async ({ ctx, body }) => ({ items: await service.completeMany(ctx, (body as { items: CompleteItem[] }).items) }),
    },
    {
      method: "POST",
      url: "/v1/executions::fail",
      operationId: "failMany",
      summary: "Fail up to 1000 attempts; one answer per item, in order",
      tag: "workers",
      roles: ["worker"],
      body: "failManyBody",
      responses: { 200: ackListResponse },
      handle: async ({ ctx, body }) => ({ items: await service.failMany(ctx, (body as { items: FailItem[] }).items) }),
    },
    {
      method: "GET",
      url: "/v1/pools/:pool/stats",
      operationId: "poolStats",
      summary: "Pending, queued and running counts of a pool",
      tag: "workers",
      roles: ["worker"],
      params: "poolParams",
      responses: { 200: poolStatsResponse },
      handle: ({ ctx, params }) => service.poolStats(ctx, params.pool as string),
    },
    {
      method: "GET",
      url: "/v1/stats",
      operationId: "stats",
      summary: "Counts per pool and per tenant",
      tag: "workers",
      roles: ["worker"],
      responses: { 200: statsResponse },
      handle: ({ ctx }) => service.stats(ctx),
    },

    // ------------------------------------------------------------ dead letters and operations
    {
      method: "GET",
      url: "/v1/dead-letters",
      operationId: "listDeadLetters",
      summary: "Dead executions with their payload and last error",
      tag: "dead-letters",
      roles: ["client"],
      query: "pageQuery",
      responses: { 200: deadLetterPageResponse },
      handle: ({ ctx, query }) => service.listDeadLetters(ctx, query as PageQuery),
    },
    {
      method: "POST",
      url: `/v1/dead-letters/:executionId${ID}::replay`,
      operationId: "replayDeadLetter",
      summary: "Give a dead execution a new attempt (audited)",
      tag: "dead-letters",
      roles: [],
      params: "executionIdParams",
      body: "emptyBody",
      bodyOptional: true,
      status: 201,
      responses: { 201: executionItemResponse },
      handle: ({ ctx, params }) => service.replayDeadLetter(ctx, params.executionId as string),
    },
    {
      method: "GET",
      url: "/v1/audit",
      operationId: "listAudit",
      summary: "The audit log",
      tag: "operations",
      roles: [],
      query: "pageQuery",
      responses: { 200: auditPageResponse },
      handle: ({ ctx, query }) => service.listAudit(ctx, query as PageQuery),
    },
    {
      method: "GET",
      url: "/v1/cluster",
      operationId: "cluster",
      summary: "Nodes and shard ownership",
      tag: "operations",
      roles: [],
      responses: { 200: clusterResponse },
      handle: ({ ctx }) => service.cluster(ctx),
    },
    {
      method: "GET",
      url: "/v1/targets",
      operationId: "listTargets",
      summary: "Origins that HTTP targets call from this node: circuit breaker, calls in flight and waiting, limits",
      tag: "operations",
      roles: [],
      responses: { 200: targetsResponse },
      handle: ({ ctx }) => service.listTargets(ctx),
    },
    {
      method: "GET",
      url: "/v1/secrets/signing",
      operationId: "signingSecrets",
      summary: "The caller's tenant's callback signing secrets, newest first, and where they come from (config or store)",
      tag: "operations",
      roles: [],
      responses: { 200: signingSecretsResponse },
      handle: ({ ctx }) => service.signingSecrets(ctx),
    },
    {
      method: "POST",
      url: "/v1/keys",
      operationId: "createKey",
      summary: "Create an API key; its secret is in this answer only (audited)",
      tag: "keys",
      roles: [],
      body: "createKeyBody",
      status: 201,
      responses: { 201: createdKeyResponse },
      async handle({ ctx, body }) {
        const created = await service.createKey(ctx, body as CreateKeyRequest);
        runtime.keyRing.storedKeyCreated();
        return created;
      },
    },
    {
      method: "GET",
      url: "/v1/keys",
      operationId: "listKeys",
      summary: "API keys, newest first, revoked ones included; never their secrets",
      tag: "keys",
      roles: [],
      query: "listKeysQuery",
      responses: { 200: keyPageResponse },
      handle: ({ ctx, query }) => service.listKeys(ctx, query as ListKeysQuery),
    },
    {
      method: "DELETE",
      url: "/v1/keys/:keyId",
      operationId: "revokeKey",
      summary: "Revoke an API key (audited); repeating it answers 204 again",
      tag: "keys",
      roles: [],
      params: "keyIdParams",
      body: "emptyBody",
      bodyOptional: true,
      status: 204,
      responses: { 204: { type: "null", description: "Revoked" } },
      async handle({ ctx, params }) {
        await service.revokeKey(ctx, params.keyId as string);
        runtime.keyRing.forget(params.keyId as string);
        return undefined;
      },
    },
    {
      method: "GET",
      url: "/v1/schedules/preview",
      operationId: "previewSchedule",
      summary: "The next fire times of a cron expression",
      tag: "schedules",
      roles: ["client", "worker"],
      query: "previewQuery",
      responses: { 200: previewResponse },
      handle: ({ query }) => service.previewSchedule(query as unknown as PreviewQuery),
    },
  ];
}

/** "/v1/jobs/:jobId([A-Za-z0-9_-]+)::pause" → "/v1/jobs/{jobId}:pause" (for messages). */
export function displayPath(url: string): string {
  return (
    url
      .replace(/::/g, "\u0000")
      .replace(/:(\w+)(\([^)]*\))?/g, "{$1}")
      // biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is the placeholder this function put in for escaped colons
      .replace(/\u0000/g, ":")
  );
}

const DEFAULT_REQUEST_DEADLINE_MS = 10_000;

export interface RouteRuntime {
  keyRing: KeyRing;
  /** Controllers of requests in flight; aborted when the server closes. */
  inflight: Set<AbortController>;
  /** A request's deadline (default DEFAULT_REQUEST_DEADLINE_MS); a long poll's is its waitSeconds more. */
  deadlineMs?: number | undefined;
}

/**
 * The handler's answer, or 503 UNAVAILABLE once `ms` have passed, when the
 * request's signal is aborted too so the service stops waiting (a long poll,
 * a store call). A timer cannot stop synchronous work: a CPU-bound loop holds
 * the event loop, and this timer with it, until it ends. The real defence
 * against those is that every loop and allocation input drives is bounded
 * (core/schemas.ts LIMITS, the cron search's horizon); the deadline is for
 * work that waits.
 */
async function withDeadline<T>(work: () => Promise<T>, ms: number, controller: AbortController): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new DuetimeError("UNAVAILABLE", `the request did not finish within its deadline of ${ms / 1000} s`);
      controller.abort(error);
      reject(error);
    }, ms);
  });
  const answer = work();
  answer.catch(() => {}); // an answer after the deadline has no one to go to
  try {
    return await Promise.race([answer, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Registers every /v1 route on the (child) instance. */
export function registerRoutes(app: FastifyInstance, service: Service, runtime: RouteRuntime): void {
  const principals = new WeakMap<FastifyRequest, Principal>();
  const errorResponse = { ...errorEnvelopeSchema, description: "Error envelope; see docs/errors.md" };

  for (const def of routeTable(service, runtime)) {
    const label = `${def.method} ${displayPath(def.url)}`;
    const schema: Record<string, unknown> = {
      operationId: def.operationId,
      summary: def.summary,
      tags: [def.tag],
      // Without configured keys, auth is on only once the store holds a key: the bearer is optional ({}).
      security: runtime.keyRing.configured ? [{ bearerAuth: [] }] : [{ bearerAuth: [] }, {}],
      querystring: REQUEST_SCHEMAS[def.query ?? "noQuery"],
      response: { ...def.responses, "4xx": errorResponse, "5xx": errorResponse },
    };
    if (def.params) schema.params = REQUEST_SCHEMAS[def.params];
    if (def.headers) schema.headers = REQUEST_SCHEMAS[def.headers];
    if (def.body) schema.body = REQUEST_SCHEMAS[def.body];

    app.route({
      method: def.method,
      url: def.url,
      // Fastify and its plugins may annotate schemas; keep ours pristine.
      schema: structuredClone(schema),
      onRequest: async (request) => {
        const principal = await runtime.keyRing.authenticate(request.headers.authorization);
        authorize(principal, def.roles, label);
        principals.set(request, principal);
      },
      handler: async (request, reply) => {
        const principal = principals.get(request);
        if (!principal) throw new Error("request reached its handler unauthenticated");

        const controller = new AbortController();
        runtime.inflight.add(controller);
        const gone = () => controller.abort(new DuetimeError("UNAVAILABLE", "client went away"));
        let finished = false;
        reply.raw.once("finish", () => (finished = true));
        reply.raw.once("close", () => {
          runtime.inflight.delete(controller);
          if (!finished && !reply.raw.writableFinished) gone();
        });
        if (request.raw.socket?.destroyed === true) gone(); // went away while the body was read
        const ctx: RequestContext = {
          tenantId: principal.tenantId,
          roles: principal.roles,
          actor: principal.actor,
          signal: controller.signal,
          ...(principal.bootstrap ? { bootstrap: true } : {}),
        };

        // A malformed jobId or executionId is NOT_FOUND (validate.ts), a bad pool name INVALID_ARGUMENT.
        const params = def.params ? validate<Record<string, string>>(def.params, request.params, "params") : {};
        const headers = def.headers
          ? validate<Record<string, unknown>>(def.headers, request.headers, "headers")
          : (request.headers as Record<string, unknown>);
        const query = validate<Record<string, unknown>>(def.query ?? "noQuery", request.query ?? {}, "query");
        let body: unknown = request.body;
        if (def.body && !def.bodyCheckedByHandler && !(body === undefined && def.bodyOptional)) {
          body = validate(def.body, body, "body");
        }

        reply.code(def.status ?? 200);
        const deadlineMs = (runtime.deadlineMs ?? DEFAULT_REQUEST_DEADLINE_MS) + 1000 * (def.waitSeconds?.(body) ?? 0);
        const result = await withDeadline(async () => def.handle({ ctx, params, query, headers, body, reply }), deadlineMs, controller);
        if (result === undefined) return reply.send();
        return result;
      },
    });
  }
}
