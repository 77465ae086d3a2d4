// startServer(): `duetime serve`. Opens the engine (store open and migrated),
// starts it, builds the HTTP app and listens, in that order, so that a 200
// from /healthz means /v1 is usable. close() stops accepting, closes the app
// (in-flight long polls are aborted and answer at once), then stops the
// engine.

import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { AddressInfo } from "node:net";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import { pino, type DestinationStream } from "pino";
import type { Engine, EngineOptions, RedisDueIndexSettings } from "../engine/engine.js";
import type { BrokerSettings } from "../engine/brokers/index.js";
import { LOG_REDACT_PATHS, logEngineEvents } from "../engine/event-log.js";
import type { HttpTargetSettings } from "../engine/http-target.js";
import type { RetentionOptions } from "../engine/retention.js";
import type { BackpressureOptions } from "../engine/backpressure.js";
import type { RetryBudgetSettings } from "../engine/retry-budget.js";
import type { StoreOptions } from "../store/factory.js";
import { redactStoreUrl } from "../store/names.js";
import { buildApp, type ApiKey } from "./app.js";
import { KeyRing } from "./auth.js";
import type { RunningGrpcServer } from "./grpc.js";

export { buildApp, DEFAULT_BODY_LIMIT_BYTES, HTTP_TIMEOUTS, type AppOptions } from "./app.js";
export { parseApiKeys, type ApiKey } from "./auth.js";
export { dashboardPathProblem, type DashboardOptions } from "./dashboard.js";

export interface ServerOptions {
  host: string;
  /** 0 picks a free port; RunningServer.url reports the real one. */
  port: number;
  /** Store URL, e.g. "sqlite:./duetime.db" or "postgres://duetime@db/duetime". */
  store: string;
  /** PostgreSQL's schema and pool size (store/factory.ts). */
  storeOptions?: StoreOptions;
  /** A PostgreSQL read replica for list and history reads (engine/read-routing.ts). */
  readStore?: string;
  /** The most the replica may trail and still serve reads (default 10). */
  readStoreMaxLagSeconds?: number;
  /** The Redis due index (engine/redis-due-index.ts); absent: the store's due table. */
  dueIndex?: RedisDueIndexSettings;
  /** Broker connections by name for nats and amqp targets, each with an outbox relay (engine/brokers/). */
  brokers?: Record<string, BrokerSettings>;
  /** This node's id in a cluster, the same across restarts; defaults to HOSTNAME-PORT (random when the port is 0). */
  nodeId?: string;
  /** The default tenant's callback signing secret; several (newest first) during a rotation. */
  signingSecret?: string | string[];
  /** Callback signing secrets by tenant id (--signing-secrets-file). */
  signingSecrets?: Record<string, string | string[]>;
  allowTargetHosts?: string[];
  /** HTTP-target executor tuning (concurrency, per-origin limits, breaker); see docs/http-targets.md. */
  httpTarget?: HttpTargetSettings;
  /** "key1:tenantA:admin,key2:tenantB:worker" parsed into entries (parseApiKeys). */
  apiKeys?: ApiKey[];
  /** Request body limit in bytes (default 1 MiB). */
  bodyLimitBytes?: number;
  /** Serve the worker protocol over gRPC on this port too (grpc.ts; 0 picks a free one); absent: no gRPC. */
  grpcPort?: number;
  /** The gRPC port serves TLS with this certificate chain and key (PEM files); absent: plaintext. */
  grpcTls?: { certFile: string; keyFile: string };
  /** pino level: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent" (default "info"). */
  logLevel?: string;
  /** Where the JSON log lines go (default standard output); tests capture them here. */
  logStream?: DestinationStream;
  /** A recurring occurrence dispatched later than this after its due time is a misfire (default 60). */
  misfireThresholdSeconds?: number;
  /** Tenants with a label of their own on /metrics (default 100); the rest are tenant="_other" (engine/workload-metrics.ts). */
  metricsMaxTenants?: number;
  /** How long history, idempotency keys and audit entries are kept, and where removed rows are archived. */
  retention?: RetentionOptions;
  /** When creates are refused with 429 because the node is overloaded (engine/backpressure.ts). */
  backpressure?: BackpressureOptions;
  /** Retries held to a share of recent first attempts, per tenant and per HTTP origin (engine/retry-budget.ts); false: off. */
  retryBudget?: Partial<RetryBudgetSettings> | false;
  /** OpenTelemetry spans to the global TracerProvider (`--tracing`; engine/tracing.ts); default false. */
  tracing?: boolean;
  /** Serve the dashboard (default true; `--no-dashboard`: false). */
  dashboard?: boolean;
  /** Where the dashboard is served: "/" (default) or a prefix such as "/ops" (`--dashboard-path`). */
  dashboardPath?: string;
  /** The dashboard's built files (default: the package's dist/dashboard); tests point elsewhere. */
  dashboardDir?: string;
  /**
   * Opens the engine; defaults to engine.ts's openEngine, loaded lazily so
   * that importing the server module loads no store driver. Tests pass a fake.
   */
  openEngine?: (options: EngineOptions) => Promise<Engine>;
}

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
      ...(options.bodyLimitBytes !== undefined ? { bodyLimitBytes: options.bodyLimitBytes } : {}),
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
