// `duetime serve --help`: every flag beside its DUETIME_* variable, in one
// text; serve.ts parses what it lists.

import { STORE_HELP } from "./store-options.js";

export const SERVE_HELP = `Usage: duetime serve [options]

Runs the server: HTTP API, scheduler and executor. Each option can also be
set from the environment variable shown; a flag wins over the environment.

  --host HOST                 DUETIME_HOST                 (default 127.0.0.1)
  --port PORT                 DUETIME_PORT                 0..65535, 0 picks a free port (default 8080)
  --grpc-port PORT            DUETIME_GRPC_PORT            also serve the worker protocol over gRPC on this port
                                                           (proto/duetime/v1/worker.proto; 0 picks a free port;
                                                           default off)
  --grpc-tls-cert FILE        DUETIME_GRPC_TLS_CERT        serve gRPC over TLS with this certificate chain (PEM) ...
  --grpc-tls-key FILE         DUETIME_GRPC_TLS_KEY         ... and this private key (PEM); both or neither
${STORE_HELP}
  --durability MODE           DUETIME_DURABILITY           accepted: creates, updates, cancels and pauses are on disk
                                                           before they answer; leases, heartbeats and acks within
                                                           200 ms (a power loss may run an attempt again); strict:
                                                           every write on disk before it answers (default accepted)
  --read-store URL            DUETIME_READ_STORE           a PostgreSQL read replica for list and history reads; the
                                                           store serves them while it lags or fails
  --read-store-max-lag D      DUETIME_READ_STORE_MAX_LAG   the most the replica may trail and still serve (default 10s)
  --due-index URL             DUETIME_DUE_INDEX            keep the due index in Redis (redis://… or rediss://…); the
                                                           store stays the truth (default: the store's own due table)
  --due-index-cluster         DUETIME_DUE_INDEX_CLUSTER    the --due-index URL is a seed node of a Redis Cluster
  --due-index-prefix P        DUETIME_DUE_INDEX_PREFIX     prefix of the index's Redis keys (default duetime:)
  --broker NAME=URL           DUETIME_BROKERS              a broker for nats and amqp targets, by the name targets use
                                                           (nats://… or amqp://…; repeat the flag, or separate the
                                                           variable's entries by spaces); each gets an outbox relay
  --broker-rate NAME=N        DUETIME_BROKER_RATES         messages a second this node publishes to that broker: how
                                                           fast a backlog drains (default: as fast as it confirms)
  --node-id ID                DUETIME_NODE_ID              this node's id in a cluster, the same across its restarts:
                                                           letters, digits, . _ : - (at most 128; default HOSTNAME-PORT)
  --signing-secret S[,S2]     DUETIME_SIGNING_SECRET       the default tenant's callback signing secret; a second one
                                                           during a rotation (newest first: both sign). Without it,
                                                           one is generated once and kept in the store
                                                           (duetime secrets show)
  --signing-secrets-file F    DUETIME_SIGNING_SECRETS_FILE JSON {"tenant": "secret" | ["new", "old"], ...}
  --allow-target-hosts A,B    DUETIME_ALLOW_TARGET_HOSTS   HTTP targets may reach these hosts, addresses or CIDR
                                                           ranges even when they are loopback or private
  --http-concurrency N        DUETIME_HTTP_CONCURRENCY     HTTP-target calls in flight, all origins (default 256)
  --http-origin-concurrency N DUETIME_HTTP_ORIGIN_CONCURRENCY  calls in flight per origin (default 64)
  --http-origin-rate R        DUETIME_HTTP_ORIGIN_RATE     calls per second per origin (default: no limit)
  --http-origin-limits L      DUETIME_HTTP_ORIGIN_LIMITS   per origin: ORIGIN=CONCURRENCY[/RATE],...
  --http-breaker-failures N   DUETIME_HTTP_BREAKER_FAILURES  consecutive failures that open an origin's breaker (default 5)
  --http-breaker-open-seconds S  DUETIME_HTTP_BREAKER_OPEN_SECONDS  first open time; doubles per failed probe up to 60 s (default 5)
  --api-keys K:T:R,...        DUETIME_API_KEYS             turn auth on: key:tenant:role, role admin|client|worker
                                                           (development and bootstrap; production keys are kept in
                                                           the store: duetime keys create. Auth is on, with or
                                                           without this flag, once the store holds a key)
  --body-limit BYTES          DUETIME_BODY_LIMIT           request body limit (default 1048576); a create or PATCH
                                                           may carry --max-payload-bytes more
  --max-payload-bytes BYTES   DUETIME_MAX_PAYLOAD_BYTES    the largest payload of a job, in bytes of JSON
                                                           (default 16777216; 400 over it)
  --inline-payload-bytes BYTES  DUETIME_INLINE_PAYLOAD_BYTES  payloads over this are kept by reference in the
                                                           blob store (default: the body limit)
  --blob-store S              DUETIME_BLOB_STORE           where those go: store (default: the job store, in
                                                           chunks) or s3://BUCKET[/PREFIX] (credentials: the
                                                           AWS variables, AWS_ACCESS_KEY_ID and so on)
  --blob-s3-endpoint URL      DUETIME_BLOB_S3_ENDPOINT     an S3-compatible server (path-style URLs)
  --blob-s3-region R          DUETIME_BLOB_S3_REGION       its region (default us-east-1)
  --misfire-threshold S       DUETIME_MISFIRE_THRESHOLD    a recurring occurrence later than this is a misfire (default 60)
  --metrics-max-tenants N     DUETIME_METRICS_MAX_TENANTS  tenants with a label of their own on /metrics, 1 to 10000;
                                                           the rest are tenant="_other" (default 100)
  --history-retention D       DUETIME_HISTORY_RETENTION    executions (dead letters too) and their attempts are removed
                                                           this long after they end (never sooner than idempotency
                                                           keys); so are ended jobs (default 30d; at least 1h)
  --idempotency-retention D   DUETIME_IDEMPOTENCY_RETENTION  idempotency keys are kept this long (default 24h, the least)
  --audit-retention D         DUETIME_AUDIT_RETENTION      audit entries are kept this long (default 90d; at least 1h)
  --archive-dir DIR           DUETIME_ARCHIVE_DIR          write what retention removes there first, as gzip NDJSON
                                                           per tenant and day (read it with duetime archive read)
  --backpressure-event-loop-ms N     DUETIME_BACKPRESSURE_EVENT_LOOP_MS
                                                           refuse creates (429) while the event loop's p99 delay
                                                           is over N ms (default 1000; 0: off)
  --backpressure-store-latency-ms N  DUETIME_BACKPRESSURE_STORE_LATENCY_MS
                                                           ... while store calls' p90 is over N ms (default 2000; 0: off)
  --backpressure-due-lag-ms N        DUETIME_BACKPRESSURE_DUE_LAG_MS
                                                           ... while due work starts later than N ms, p90
                                                           (default 0: off)
  --retry-budget-ratio R      DUETIME_RETRY_BUDGET_RATIO   retries allowed per first attempt in the window, per tenant
                                                           and per HTTP origin, on this node (default 0.2); "off"
                                                           turns retry budgets off
  --retry-budget-min-per-second N  DUETIME_RETRY_BUDGET_MIN_PER_SECOND
                                                           retries allowed per second besides (default 10)
  --retry-budget-window-seconds S  DUETIME_RETRY_BUDGET_WINDOW_SECONDS
                                                           the window the counts cover, 1 to 60 (default 10)
  --dashboard-path PATH       DUETIME_DASHBOARD_PATH       where the web dashboard is served: / (default) or a prefix
                                                           such as /ops (not /v1, /metrics, /healthz, /readyz)
  --no-dashboard              DUETIME_DASHBOARD=off        do not serve the dashboard
  --tracing                   DUETIME_TRACING=on           OpenTelemetry spans (create, dispatch, lease, HTTP call,
                                                           complete, fail) to the TracerProvider the process registered,
                                                           e.g. node --import ./otel-setup.js (default off)
  --log-level LEVEL           DUETIME_LOG_LEVEL            fatal|error|warn|info|debug|trace|silent (default info)
  -h, --help                  Show this help

SIGTERM or SIGINT stops accepting work, drains, and exits within 10 seconds.`;
