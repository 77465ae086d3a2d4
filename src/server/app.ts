// buildApp(): the Fastify application of the HTTP API, without listening and
// without an engine of its own (it takes a Service), so tests can drive it
// with app.inject or a real socket. startServer() (index.ts) wires it to the
// engine.
//
// Validation: routes carry their core/schemas.ts schemas for OpenAPI, but
// Fastify's own ajv is switched off (a no-op validator compiler) and every
// route validates with core/validate.ts, so one mapping words every error, for
// the server and the embedded client alike.
// Serialization: JSON.stringify, never the response schemas, so no field the
// engine returns is dropped or coerced (payload, result, error are free-form).

import type { IncomingMessage, ServerResponse } from "node:http";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from "fastify";
import swagger from "@fastify/swagger";
import { DuetimeError } from "../core/errors.js";
import { statusResponse } from "../core/schemas.js";
import { KeyRing, type ApiKey, type KeyRingOptions } from "./auth.js";
import { registerDashboard, type DashboardOptions } from "./dashboard.js";
import {
  connectHandler,
  makeClientErrorHandler,
  makeErrorHandler,
  makeFrameworkErrorHandler,
  notFoundHandler,
  payloadTooLarge,
  sendError,
} from "./http-errors.js";
import { HttpMetrics, METRICS_CONTENT_TYPE } from "./http-metrics.js";
import { DEFAULT_MAX_JSON_DEPTH, drainUnreadBody, installJsonParser } from "./json-body.js";
import { checkRequestHead, HEAD_LIMITS } from "./request-head.js";
import { carriesPayload, ERROR_RESPONSES, markOptionalBodies, registerRoutes } from "./routes.js";
import type { Service } from "../engine/service.js";

export type { ApiKey } from "./auth.js";

export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Socket and request timings. Long polls last up to 60 s, load balancers idle
 * out at 60 s. Receiving a request is bounded tightly (a slow-loris socket
 * cannot hold on for long); answering it is not: a long poll's wait comes
 * after the request was received, so the request timeouts never cut it.
 */
export const HTTP_TIMEOUTS = {
  /** Idle keep-alive connections live longer than a typical load balancer's 60 s. */
  keepAliveTimeoutMs: 72_000,
  /** The request line and headers must have arrived this long after the request began. */
  headersTimeoutMs: 10_000,
  /** The whole request, head and body (1 MiB at 35 KiB/s), must have arrived this long after it began. */
  requestTimeoutMs: 30_000,
  /** How often Node checks the two limits above: a late socket is closed at most this much later. */
  checkIntervalMs: 1_000,
  /** A socket silent this long is closed; above the 60 s long poll plus slack. */
  connectionTimeoutMs: 120_000,
} as const;

export type HttpTimeouts = Record<keyof typeof HTTP_TIMEOUTS, number>;

export interface AppOptions {
  service: Service;
  /** Request body limit (default 1 MiB); larger bodies answer 413 PAYLOAD_TOO_LARGE. */
  bodyLimitBytes?: number;
  /**
   * The body limit of a create or a PATCH, whose payload may be larger than
   * the body limit (it is then kept by reference): default bodyLimitBytes.
   */
  payloadBodyLimitBytes?: number;
  /** When non-empty, every /v1 call needs a Bearer key (see auth.ts); so it does once the store holds a key. */
  apiKeys?: readonly ApiKey[];
  /** Caching of stored keys' lookups (tests shorten it); see auth.ts. */
  keyCache?: KeyRingOptions;
  /** A key ring shared with another listener (the gRPC server); wins over apiKeys and keyCache. */
  keyRing?: KeyRing;
  /** Fastify's logger option: false (default), true, or pino options such as { level }. */
  logger?: FastifyServerOptions["logger"];
  /** A pino logger to use instead (startServer's, with nodeId bound and credentials redacted); wins over logger. */
  loggerInstance?: FastifyBaseLogger;
  /** The engine's Prometheus text; the HTTP layer's own metrics are appended. */
  metricsText?: () => Promise<string>;
  /** /readyz; defaults to service.ready(). */
  ready?: () => Promise<boolean>;
  /** Deepest JSON nesting accepted in a body (default 64). */
  maxJsonDepth?: number;
  /** A /v1 request's deadline in ms (default 10 s; a long poll's is its waitSeconds more); past it, 503 UNAVAILABLE. */
  requestDeadlineMs?: number;
  /** Overrides of HTTP_TIMEOUTS (tests shorten them). */
  timeouts?: Partial<HttpTimeouts>;
  /** Serve the dashboard (dashboard.ts) at options.path ("/" by default); absent: not served. */
  dashboard?: DashboardOptions;
}

export function buildApp(options: AppOptions): FastifyInstance {
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const keyRing = options.keyRing ?? new KeyRing(options.apiKeys ?? [], options.service, options.keyCache ?? {});
  const inflight = new Set<AbortController>();
  const metrics = new HttpMetrics();
  const ready = options.ready ?? (() => options.service.ready());
  const timeouts: HttpTimeouts = { ...HTTP_TIMEOUTS, ...options.timeouts };
  let closing = false;

  // The client error handler is installed before the app (and its logger) exists.
  const clientErrorLog: { current?: FastifyInstance["log"] } = {};
  const app: FastifyInstance = Fastify({
    ...(options.loggerInstance !== undefined ? { loggerInstance: options.loggerInstance } : { logger: options.logger ?? false }),
    // One line per request is too much for workers polling in a loop: the
    // /metrics histogram counts requests; errors are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: bodyLimitBytes,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    connectionTimeout: timeouts.connectionTimeoutMs,
    http: {
      headersTimeout: timeouts.headersTimeoutMs,
      connectionsCheckingInterval: timeouts.checkIntervalMs,
      maxHeaderSize: HEAD_LIMITS.maxHeaderBytes,
      // checkRequestHead answers a missing Host with the envelope; Node's own answer has no body.
      requireHostHeader: false,
    },
    // Fastify's own 503-on-closing writes its own body; ours (onRequest below) writes the envelope.
    return503OnClosing: false,
    routerOptions: { maxParamLength: 512 },
    frameworkErrors: makeFrameworkErrorHandler(bodyLimitBytes),
    clientErrorHandler: makeClientErrorHandler(clientErrorLog, timeouts),
  });
  clientErrorLog.current = app.log;
  // Node answers an Expect other than 100-continue with an empty 417 unless
  // someone listens: route it like any request, checkRequestHead refuses it.
  app.server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => app.routing(req, res));
  // Expect: 100-continue: a body announced over the limit is refused (413)
  // without inviting the client to send it; Node would send 100 Continue first.
  app.server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    const limit = carriesPayload(req.method, req.url) ? (options.payloadBodyLimitBytes ?? bodyLimitBytes) : bodyLimitBytes;
    if (!(Number(req.headers["content-length"]) > limit)) res.writeContinue();
    app.routing(req, res);
  });
  app.server.on("connect", connectHandler);

  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  installJsonParser(app, { bodyLimitBytes, maxDepth: options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH });
  app.setErrorHandler(makeErrorHandler(bodyLimitBytes));
  app.setNotFoundHandler(notFoundHandler);

  // First of all hooks: a refused head is answered before its body is read.
  app.addHook("onRequest", async (request, reply) => {
    const refused = checkRequestHead(request.raw);
    if (refused === undefined) return;
    // Its body, if any, is left unread: the connection cannot carry another request.
    void reply.header("connection", "close");
    throw refused;
  });
  // After parsing, so only bodies no parser read (GET, HEAD) are left to drain.
  app.addHook("preHandler", async (request, reply) => {
    try {
      await drainUnreadBody(request.raw, bodyLimitBytes, () => payloadTooLarge(bodyLimitBytes));
    } catch (err) {
      void reply.header("connection", "close");
      throw err;
    }
  });
  app.addHook("onRequest", async () => {
    if (closing) throw new DuetimeError("UNAVAILABLE", "the server is shutting down", undefined, 5);
  });
  app.addHook("onResponse", async (request, reply) => {
    metrics.observe(request.method, request.routeOptions.url ?? "unmatched", reply.statusCode, reply.elapsedTime / 1000);
  });
  // Long polls end at once when the server closes: their services see the abort.
  app.addHook("preClose", async () => {
    closing = true;
    for (const controller of inflight) controller.abort(new DuetimeError("UNAVAILABLE", "the server is shutting down"));
  });

  void app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "duetime",
        version: "v1",
        description: "Durable scheduler for delayed and recurring jobs. Errors: docs/errors.md.",
        license: { name: "MIT", identifier: "MIT" },
      },
      // Relative: the API is on the server that serves this document, whatever its address.
      servers: [{ url: "/", description: "this server" }],
      components: { securitySchemes: { bearerAuth: { type: "http", scheme: "bearer" } } },
    },
    transformObject: (doc) => ("openapiObject" in doc ? markOptionalBodies(doc.openapiObject) : doc.swaggerObject),
  });

  // Probes and scrapers call these without a key (security: []).
  const open = (operationId: string, summary: string, response: Record<string, unknown> = {}) => ({
    schema: { operationId, tags: ["health"], summary, security: [], response: { ...response, ...ERROR_RESPONSES } },
  });

  // Registered after swagger so its onRoute hook sees every route.
  void app.register(async (scope) => {
    registerRoutes(scope, options.service, {
      keyRing,
      inflight,
      deadlineMs: options.requestDeadlineMs,
      payloadBodyLimitBytes: options.payloadBodyLimitBytes,
    });

    scope.get("/healthz", open("getHealth", "The process is up", { 200: statusResponse }), async () => ({
      status: "ok",
    }));

    scope.get(
      "/readyz",
      open("getReadiness", "The store is reachable and the node has joined; 503 UNAVAILABLE when not", { 200: statusResponse }),
      async (request, reply) => {
        let ok = false;
        try {
          ok = await ready();
        } catch (err) {
          request.log.warn({ err }, "readiness check failed");
        }
        if (!ok)
          return sendError(
            reply,
            new DuetimeError(
              "UNAVAILABLE",
              "not ready: the store cannot be reached or cannot take writes (see duetime_store_writable), or the node has not joined",
            ),
          );
        return { status: "ready" };
      },
    );

    const metricsText = { description: "Prometheus text format", content: { [METRICS_CONTENT_TYPE]: { schema: { type: "string" } } } };
    scope.get("/metrics", open("getMetrics", "Prometheus metrics", { 200: metricsText }), async (_request, reply) => {
      const engineText = options.metricsText ? await options.metricsText() : "";
      const httpText = await metrics.text();
      const text = engineText === "" || engineText.endsWith("\n") ? engineText + httpText : `${engineText}\n${httpText}`;
      return reply.type(METRICS_CONTENT_TYPE).send(text);
    });

    scope.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());

    if (options.dashboard !== undefined) registerDashboard(scope, options.dashboard);
  });

  return app;
}
