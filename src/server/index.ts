// startServer(): `duetime serve`. Opens the engine (store open and migrated),
// starts it, builds the HTTP app and listens, in that order, so that a 200
// from /healthz means /v1 is usable. close() stops accepting, closes the app
// (in-flight long polls are aborted and answer at once), then stops the
// engine.

import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { AddressInfo } from "node:net";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import type { ServerOptions } from "./options.js";
import { pino } from "pino";
import type { Engine, EngineOptions } from "../engine/engine.js";
import { LOG_REDACT_PATHS, logEngineEvents } from "../engine/event-log.js";
import { redactStoreUrl } from "../store/names.js";
import { buildApp, DEFAULT_BODY_LIMIT_BYTES } from "./app.js";
import { DEFAULT_PAYLOAD_LIMITS } from "../core/payload-refs.js";
import { KeyRing } from "./auth.js";
import type { RunningGrpcServer } from "./grpc.js";

export { buildApp, DEFAULT_BODY_LIMIT_BYTES, HTTP_TIMEOUTS, type AppOptions } from "./app.js";
export { parseApiKeys, type ApiKey } from "./auth.js";
export { dashboardPathProblem, type DashboardOptions } from "./dashboard.js";
export type { ServerOptions } from "./options.js";

export interface RunningServer {
  readonly url: string;
  readonly engine: Engine;
  readonly app: FastifyInstance;
  /** host:port of the gRPC listener; null without grpcPort. */
  readonly grpcAddress: string | null;
  /** Stops accepting requests, drains, stops the engine (used for SIGTERM). Safe to call twice. */
  close(): Promise<void>;
}

async function defaultOpenEngine(options: EngineOptions): Promise<Engine> {
  const { openEngine } = await import("../engine/engine.js");
  return openEngine(options);
}

/** A host as it goes before ":port": an IPv6 address in brackets. */
const hostForUrl = (host: string): string => (host.includes(":") && !host.startsWith("[") ? `[${host}]` : host);

function urlOf(address: AddressInfo | string | null, host: string): string {
  if (address === null || typeof address === "string") throw new Error("the server is not listening on a TCP port");
  const shown = address.family === "IPv6" || address.address.includes(":") ? `[${address.address}]` : address.address;
  // Report the host asked for when it is a name (localhost), the bound address otherwise.
  const name = /^[A-Za-z]/.test(host) && !host.includes(":") ? host : shown;
  return `http://${name}:${address.port}`;
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const open = options.openEngine ?? defaultOpenEngine;
  const engineOptions: EngineOptions = { store: options.store };
  if (options.storeOptions !== undefined) engineOptions.storeOptions = options.storeOptions;
  if (options.readStore !== undefined) engineOptions.readStore = options.readStore;
  if (options.readStoreMaxLagSeconds !== undefined) engineOptions.readStoreMaxLagMs = options.readStoreMaxLagSeconds * 1000;
  if (options.dueIndex !== undefined) engineOptions.dueIndex = options.dueIndex;
  if (options.brokers !== undefined) engineOptions.brokers = options.brokers;
  const nodeId = options.nodeId ?? (options.port !== 0 ? `${hostname()}-${options.port}` : undefined);
  if (nodeId !== undefined) engineOptions.nodeId = nodeId;
  if (options.port !== 0) engineOptions.address = `${options.host}:${options.port}`;
  if (options.signingSecret !== undefined) engineOptions.signingSecret = options.signingSecret;
  if (options.signingSecrets !== undefined) engineOptions.signingSecrets = options.signingSecrets;
  if (options.allowTargetHosts !== undefined) engineOptions.allowTargetHosts = options.allowTargetHosts;
  if (options.httpTarget !== undefined) engineOptions.httpTarget = options.httpTarget;
  if (options.retention !== undefined) engineOptions.retention = options.retention;
  if (options.backpressure !== undefined) engineOptions.backpressure = options.backpressure;
  if (options.retryBudget !== undefined) engineOptions.retryBudget = options.retryBudget;
  if (options.tracing === true) engineOptions.tracing = true;
  if (options.misfireThresholdSeconds !== undefined) engineOptions.scheduler = { misfireThresholdMs: options.misfireThresholdSeconds * 1000 };
  if (options.metricsMaxTenants !== undefined) engineOptions.metrics = { maxTenants: options.metricsMaxTenants };
  // Payloads up to the body limit stay inline, as before blobs existed, unless told otherwise; a broker's are published whole.
  // The engine's defaults are the server's (1 MiB, 16 MiB): only what differs is passed.
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_PAYLOAD_LIMITS.maxBytes;
  const payloads: NonNullable<EngineOptions["payloads"]> = {
    ...(options.bodyLimitBytes !== undefined ? { inlineBytes: bodyLimitBytes, brokerBytes: bodyLimitBytes } : {}),
    ...(options.inlinePayloadBytes !== undefined ? { inlineBytes: options.inlinePayloadBytes } : {}),
    ...(options.maxPayloadBytes !== undefined ? { maxBytes: options.maxPayloadBytes } : {}),
    ...(options.blobStore !== undefined ? { blobStore: options.blobStore } : {}),
  };
  if (Object.keys(payloads).length > 0) engineOptions.payloads = payloads;

  const engine = await open(engineOptions);
  // One logger for requests and engine events; nodeId on every line.
  const logOptions = { level: options.logLevel ?? "info", redact: [...LOG_REDACT_PATHS] };
  const root = options.logStream ? pino(logOptions, options.logStream) : pino(logOptions);
  const log = root.child({ nodeId: engine.nodeId });
  // Before start: the shards taken at start are logged too.
  const unsubscribe = logEngineEvents(engine.events, log);
  let app: FastifyInstance | undefined;
  let grpcServer: RunningGrpcServer | undefined;
  // One key ring for both listeners: a key created or revoked through either is seen by both.
  const keyRing = new KeyRing(options.apiKeys ?? [], engine.service);
  try {
    await engine.start();
    app = buildApp({
      service: engine.service,
      bodyLimitBytes,
      // A create or PATCH carries its payload beside the rest of the job: the payload limit on top of the body limit.
      payloadBodyLimitBytes: bodyLimitBytes + maxPayloadBytes,
      keyRing,
      loggerInstance: log as FastifyBaseLogger,
      metricsText: () => engine.metricsText(),
      ready: () => engine.service.ready(),
      ...(options.dashboard !== false
        ? { dashboard: { path: options.dashboardPath ?? "/", ...(options.dashboardDir !== undefined ? { dir: options.dashboardDir } : {}) } }
        : {}),
    });
    await app.listen({ host: options.host, port: options.port });
    if (options.grpcPort !== undefined) {
      const { startGrpcServer } = await import("./grpc.js");
      grpcServer = await startGrpcServer({
        service: engine.service,
        keyRing,
        host: options.host,
        port: options.grpcPort,
        ...(options.bodyLimitBytes !== undefined ? { maxMessageBytes: options.bodyLimitBytes } : {}),
        ...(options.grpcTls ? { tls: { certChain: readFileSync(options.grpcTls.certFile), privateKey: readFileSync(options.grpcTls.keyFile) } } : {}),
        onInternalError: (error, rpc) => log.error({ err: error, rpc }, "internal error serving a gRPC call"),
      });
    }
  } catch (err) {
    await grpcServer?.close().catch(() => undefined);
    await app?.close().catch(() => undefined);
    await engine.stop();
    unsubscribe();
    throw err;
  }

  const started = app;
  const grpc = grpcServer;
  const url = urlOf(started.server.address(), options.host);
  const grpcAddress = grpc ? `${hostForUrl(options.host)}:${grpc.port}` : null;
  started.log.info({ url, ...(grpcAddress ? { grpc: grpcAddress } : {}), store: redactStoreUrl(options.store) }, "duetime listening");

  let closing: Promise<void> | undefined;
  return {
    url,
    engine,
    app: started,
    grpcAddress,
    close() {
      closing ??= (async () => {
        started.log.info("duetime closing");
        try {
          await Promise.all([started.close(), grpc?.close()]);
        } finally {
          await engine.stop();
          started.log.info("duetime stopped");
          unsubscribe();
        }
      })();
      return closing;
    },
  };
}
