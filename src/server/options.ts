// The server's options, one home for what `duetime serve` and embedders
// pass: ServerOptions, the option types it is made of, and the bounds and
// checks the CLI validates flags with. Light on purpose: besides types it
// loads only modules without a framework, a broker client or a store
// driver, so parsing flags loads no engine.

import type { DestinationStream } from "pino";
import type { Engine, EngineOptions, RedisDueIndexSettings } from "../engine/engine.js";
import type { BrokerSettings } from "../engine/brokers/index.js";
import type { HttpTargetSettings } from "../engine/http-target-settings.js";
import type { RetentionOptions } from "../engine/retention.js";
import type { BlobStoreSettings } from "../engine/payload-blobs.js";
import type { BackpressureOptions } from "../engine/backpressure.js";
import type { RetryBudgetSettings } from "../engine/retry-budget.js";
import type { StoreOptions } from "../store/factory.js";
import type { ApiKey } from "./auth.js";

export type {
  BackpressureOptions,
  BlobStoreSettings,
  BrokerSettings,
  HttpTargetSettings,
  RedisDueIndexSettings,
  RetentionOptions,
  RetryBudgetSettings,
};
export type { OriginLimit } from "../engine/origin-limits.js";
// Loads no broker client: the drivers are imported only when a server opens them.
export { brokerKind, brokerNameProblem } from "../engine/brokers/index.js";
// A module without imports: checking the flags with it loads no engine.
export { RETRY_BUDGET_BOUNDS, retryBudgetProblem } from "../engine/retry-budget.js";
export { METRICS_MAX_TENANTS_BOUNDS } from "../engine/metrics-limits.js";
// Loads no framework: only the path rule.
export { dashboardPathProblem, normalizeDashboardPath } from "./dashboard.js";
export { DURABILITIES } from "../store/store.js";

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
  /**
   * The largest payload of a job, in bytes of JSON (default 16 MiB): a create
   * or PATCH body may be this much larger than the body limit. Payloads over
   * inlinePayloadBytes are kept by reference in the blob store.
   */
  maxPayloadBytes?: number;
  /** Payloads up to this stay in the job's row (default: the body limit); larger ones are kept by reference. */
  inlinePayloadBytes?: number;
  /** Where payloads kept by reference go: the store (default) or an S3-compatible bucket (engine/payload-blobs.ts). */
  blobStore?: BlobStoreSettings;
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
