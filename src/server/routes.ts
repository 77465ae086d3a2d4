// The /v1 routes of docs/api.md, one per operation of the operation table
// (@duetime/sdk/contract's OPERATIONS: its URL, who may call it, the schemas
// of core/schemas.ts that check and document its parts). The server holds
// no business logic: it authenticates, lets the engine check the request
// and call the service (engine/operations.ts), and sends the operation's
// answer (status, headers, body).
//
// Colon routes (`/v1/jobs/{jobId}:pause`, `/v1/jobs:batch`): Fastify's router
// (find-my-way) reads `:` as a parameter marker and ends a parameter name
// only at `/`, `-`, `.` or `(`, so `/:jobId::pause` would swallow the action
// into the name. We escape the literal colon as `::` and end the parameter
// with an explicit pattern, `/:jobId([A-Za-z0-9_-]+)::pause`: the router then
// matches the action as static text, an unknown action finds no route (404),
// `%3A` works as well as `:`, and @fastify/swagger writes the OpenAPI path
// `/v1/jobs/{jobId}:pause` (fastifyUrl()).
//
// Versions: GET and PATCH /v1/jobs/{jobId} answer `ETag: "<version>"`; a
// PATCH may name the version it applies to with If-Match (that ETag, `7` or
// `W/"7"`) or a `version` field (core/validate.ts expectedVersion()), and the
// service answers 409 VERSION_CONFLICT when the job has moved on.
//
// Deadlines: every request has one (default 10 s; a long poll's is its
// waitSeconds more), and its authentication another as long. When it passes, the request's signal aborts (the service
// stops waiting) and the answer is 503 UNAVAILABLE with Retry-After: a client
// retries 503s already, and the catalog has no better code (a timeout is "not
// available now", not the caller's mistake). See withDeadline().
//
// Roles (admin may call everything): each operation's `roles`.

import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { OPERATION_NAMES, operationNamed, type AnyOperation, type OperationName, type WireReply } from "@duetime/sdk/contract";
import { DuetimeError } from "../core/errors.js";
import { REQUEST_SCHEMAS, RESPONSE_SCHEMAS, errorEnvelopeSchema, type JsonSchema } from "../core/schemas.js";
import { callService, checkRequest } from "../engine/operations.js";
import type { Service } from "../engine/service.js";
import { authorize, type KeyRing, type Principal, requestContext } from "./auth.js";

const ID = "([A-Za-z0-9_-]+)";

/** `/v1/jobs/{jobId}:pause` → Fastify's `/v1/jobs/:jobId([A-Za-z0-9_-]+)::pause` (see the top of this file). */
export function fastifyUrl(path: string): string {
  return path.replace(/:/g, "::").replace(/\{(\w+)\}(::)?/g, (_match, name: string, action?: string) => (action ? `:${name}${ID}::` : `:${name}`));
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

export const DEFAULT_REQUEST_DEADLINE_MS = 10_000;

export interface RouteRuntime {
  keyRing: KeyRing;
  /** Controllers of requests in flight; aborted when the server closes. */
  inflight: Set<AbortController>;
  /** A request's deadline (default DEFAULT_REQUEST_DEADLINE_MS); a long poll's is its waitSeconds more. */
  deadlineMs?: number | undefined;
  /** The body limit of the operations whose body carries a payload (createJob, updateJob): absent, the server's. */
  payloadBodyLimitBytes?: number | undefined;
}

/**
 * Whether a request goes to an operation whose body carries a payload (its
 * body limit is then payloadBodyLimitBytes): for the Expect: 100-continue
 * check, which runs before routing.
 */
export function carriesPayload(method: string | undefined, url: string | undefined): boolean {
  const path = (url ?? "").split("?")[0] ?? "";
  return PAYLOAD_ROUTES.some((r) => r.method === method && r.path.test(path));
}

const PAYLOAD_ROUTES = OPERATION_NAMES.map(operationNamed)
  .filter((op) => op.carriesPayload)
  .map((op) => ({ method: op.method, path: new RegExp(`^${op.path.replace(/\{\w+\}/g, "[^/:]+")}$`) }));

/**
 * The handler's answer, or 503 UNAVAILABLE once `ms` have passed, when the
 * request's signal is aborted too so the service stops waiting (a long poll,
 * a store call). A timer cannot stop synchronous work: a CPU-bound loop holds
 * the event loop, and this timer with it, until it ends. The real defence
 * against those is that every loop and allocation input drives is bounded
 * (core/schemas.ts LIMITS, the cron search's horizon); the deadline is for
 * work that waits.
 */
export async function withDeadline<T>(work: () => Promise<T>, ms: number, controller: AbortController): Promise<T> {
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

/** What the server does after an operation succeeded, besides answering (the key ring's cache). */
function afterOperation(runtime: RouteRuntime, name: OperationName, params: Record<string, string>): void {
  if (name === "createKey") runtime.keyRing.storedKeyCreated();
  if (name === "revokeKey") runtime.keyRing.forget(params.keyId as string);
}

/** The response header of an answer that honoured `Prefer: return=minimal`. */
const preferenceApplied = {
  type: "string",
  enum: ["return=minimal"],
  description: "Present when the request's Prefer: return=minimal was honoured (RFC 7240).",
} as const;

const errorResponse = { ...errorEnvelopeSchema, description: "Error envelope; see docs/errors.md" };

/** The documented error answers of every route: any request can be refused (4xx) or meet an outage (5xx). */
export const ERROR_RESPONSES = { "4xx": errorResponse, "5xx": errorResponse } as const;

function routeSchema(name: OperationName, op: AnyOperation, runtime: RouteRuntime): Record<string, unknown> {
  const responses: Record<string, JsonSchema> = Object.fromEntries(
    Object.entries(op.responses).map(([status, name]) => [status, name ? RESPONSE_SCHEMAS[name] : { type: "null", description: "No content" }]),
  );
  if (op.minimalResponse) {
    // Prefer: return=minimal (RFC 7240): each success answer is the full or the minimal form.
    const minimal: JsonSchema = RESPONSE_SCHEMAS[op.minimalResponse];
    for (const [status, full] of Object.entries(responses)) {
      if (!(Number(status) < 300) || full.type === "null") continue;
      responses[status] = {
        description: `${String(full.description ?? "The full form")}; with Prefer: return=minimal, ${String(minimal.description)}`,
        anyOf: [full, minimal],
        headers: { "preference-applied": preferenceApplied },
      };
    }
  }
  const schema: Record<string, unknown> = {
    operationId: name,
    summary: op.summary,
    tags: [op.tag],
    // Without configured keys, auth is on only once the store holds a key: the bearer is optional ({}).
    security: runtime.keyRing.configured ? [{ bearerAuth: [] }] : [{ bearerAuth: [] }, {}],
    querystring: REQUEST_SCHEMAS[op.query ?? "noQuery"],
    response: { ...responses, ...ERROR_RESPONSES },
  };
  if (op.params) schema.params = REQUEST_SCHEMAS[op.params];
  if (op.headers) schema.headers = REQUEST_SCHEMAS[op.headers];
  if (op.body) schema.body = REQUEST_SCHEMAS[op.body];
  return schema;
}

/**
 * The OpenAPI document with the request body marked optional where the
 * operation takes none (`bodyOptional`: DELETE and the action POSTs accept
 * no body or `{}`). @fastify/swagger writes every body as required, which
 * would make generated clients send `{}` for nothing.
 */
export function markOptionalBodies<Doc extends { paths?: object }>(doc: Doc): Doc {
  const paths = doc.paths as Record<string, Record<string, { requestBody?: { required?: boolean } }> | undefined> | undefined;
  for (const name of OPERATION_NAMES) {
    const op = operationNamed(name);
    const body = op.bodyOptional ? paths?.[op.path]?.[op.method.toLowerCase()]?.requestBody : undefined;
    if (body) body.required = false;
  }
  return doc;
}

/** Registers every /v1 route on the (child) instance. */
export function registerRoutes(app: FastifyInstance, service: Service, runtime: RouteRuntime): void {
  const principals = new WeakMap<FastifyRequest, Principal>();

  for (const name of OPERATION_NAMES) {
    const op = operationNamed(name);
    const label = `${op.method} ${op.path}`;
    app.route({
      method: op.method,
      url: fastifyUrl(op.path),
      ...(op.carriesPayload && runtime.payloadBodyLimitBytes !== undefined ? { bodyLimit: runtime.payloadBodyLimitBytes } : {}),
      // Fastify and its plugins may annotate schemas; keep ours pristine.
      schema: structuredClone(routeSchema(name, op, runtime)),
      onRequest: async (request) => {
        // Under the deadline too: a stored key's lookup on a link that drops packets would hang until the client's read timeout.
        const deadlineMs = runtime.deadlineMs ?? DEFAULT_REQUEST_DEADLINE_MS;
        const principal = await withDeadline(() => runtime.keyRing.authenticate(request.headers.authorization), deadlineMs, new AbortController());
        authorize(principal, op.roles, label);
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
        const ctx = requestContext(principal, controller.signal);

        const checked = checkRequest(op, {
          params: request.params as Record<string, string>,
          query: (request.query ?? {}) as Record<string, unknown>,
          headers: request.headers as Record<string, string | undefined>,
          body: request.body,
        });
        const deadlineMs = (runtime.deadlineMs ?? DEFAULT_REQUEST_DEADLINE_MS) + 1000 * (op.waitSeconds?.(checked) ?? 0);
        const result = await withDeadline(() => callService(service, name, ctx, checked), deadlineMs, controller);
        afterOperation(runtime, name, checked.params);
        return send(reply, op.answer(result, checked));
      },
    });
  }
}

function send(reply: FastifyReply, answer: WireReply): FastifyReply | unknown {
  reply.code(answer.status);
  for (const [header, value] of Object.entries(answer.headers ?? {})) reply.header(header, value);
  return answer.body === undefined ? reply.send() : answer.body;
}
