// The engine wiring: opens the store, builds the scheduler, executor and
// targets, and exposes the service layer. Constructing starts nothing:
// openEngine() opens and migrates the store; start() starts the loops;
// stop() drains them.

import { instanceId } from "@duetime/sdk/contract";
import { systemClock, type Clock } from "../core/clock.js";
import { retentionPeriods } from "../core/retention.js";
import { openStore, type StoreOptions } from "../store/factory.js";
import type { Store } from "../store/store.js";
import { EngineEvents } from "./events.js";
import { Executor } from "./executor.js";
import { HttpTargetRunner } from "./http-target.js";
import type { HttpTargetSettings } from "./http-target-settings.js";
import { httpTargetMetrics } from "./http-target-metrics.js";
import { createService } from "./services.js";
import { ReplayDriver, type ReplayDriverOptions } from "./dead-letter-replays.js";
import { countsFold } from "./counts-fold.js";
import { WorkloadHistory, type WorkloadHistoryOptions } from "./workload-history.js";
import { createMetrics, registerReconcilerGauges } from "./metrics.js";
import { maxLabelsProblem } from "./metrics-limits.js";
import { labelGuards, workloadMetrics } from "./workload-metrics.js";
import { ArchiveWriter, newArchivePart } from "./archive.js";
import { readRouting } from "./read-routing.js";
import { ClusterSignals } from "./signals.js";
import { DueIndexReconciler } from "./due-index-reconciler.js";
import { RedisDueIndex } from "./redis-due-index.js";
import { RedisDueKeys } from "../store/redis/due-keys.js";
import { StoreClock } from "./store-clock.js";
import { Backpressure, type BackpressureOptions } from "./backpressure.js";
import { timedStore } from "./store-timing.js";
import { Retention, type RetentionOptions } from "./retention.js";
import { openBlobBackend, PayloadBlobs, type PayloadOptions, payloadLimits } from "./payload-blobs.js";
import { RetryBudget, type RetryBudgetSettings } from "./retry-budget.js";
import { Scheduler } from "./scheduler.js";
import { Tracing } from "./tracing.js";
import { StoreHealth } from "./store-health.js";
import type { Service } from "./service.js";
import { newSigningSecret, SigningSecretReader, STORED_SECRET_TENANT } from "./signing-secrets.js";
import type { BrokerConnection, BrokerConnectOptions } from "./brokers/broker.js";
import { openBroker, type BrokerSettings } from "./brokers/index.js";
import { brokerCatalog, openRelays } from "./brokers/relays.js";

export interface EngineOptions {
  /** "sqlite:./duetime.db", "sqlite::memory:", or "postgres://...". */
  store: string;
  /** How to open it (PostgreSQL's schema and pool size). */
  storeOptions?: StoreOptions;
  /** A read replica of the store for list and history reads (engine/read-routing.ts), opened like the store but never migrated. */
  readStore?: string;
  /** The most the replica may trail the store and still serve reads (default 10 s). */
  readStoreMaxLagMs?: number;
  /** Unique per node of a cluster, stable across its restarts; defaults to hostname-pid-random. */
  nodeId?: string;
  /** Where this node serves its API (host:port), shown by GET /v1/cluster. */
  address?: string;
  clock?: Clock;
  /** HTTP targets may reach these hosts even when they resolve to loopback or private addresses. */
  allowTargetHosts?: string[];
  /**
   * The default tenant's callback signing secret; several (newest first)
   * during a rotation. Without one, the default tenant signs with a secret
   * generated once and kept in the store (GET /v1/secrets/signing shows it).
   */
  signingSecret?: string | string[];
  /** Callback signing secrets by tenant id, newest first; a tenant listed here overrides signingSecret. */
  signingSecrets?: Record<string, string | string[]>;
  /** HTTP-target executor tuning: concurrency, per-origin limits, circuit breaker. */
  httpTarget?: HttpTargetSettings;
  /** Run the in-server HTTP-target executor (default true). */
  httpTargets?: boolean;
  /** Scheduler tuning (tests shorten these). */
  scheduler?: { windowMs?: number; reloadMs?: number; batchSize?: number; misfireThresholdMs?: number; shardLeaseMs?: number };
  /** How often expired leases are reaped (default 1000 ms). */
  reapIntervalMs?: number;
  /** How often a long poll re-checks the store without a wake-up, the safety net for work another node inserted (default 2000 ms). */
  pollIntervalMs?: number;
  /**
   * How long history (30 days after an execution ends), idempotency keys
   * (24 h, the least allowed) and audit entries (90 days) are kept, and where
   * removed rows are archived (none by default); see engine/retention.ts.
   */
  retention?: RetentionOptions;
  /** When to refuse creates with 429 because this node is overloaded (engine/backpressure.ts). */
  backpressure?: BackpressureOptions;
  /**
   * Retries held to a share of recent first attempts, per tenant and per HTTP
   * origin, on this node (engine/retry-budget.ts; defaults: ratio 0.2,
   * minPerSecond 10, windowSeconds 10); false turns retry budgets off.
   */
  retryBudget?: Partial<RetryBudgetSettings> | false;
  /**
   * The cardinality guard of /metrics: the first maxTenants tenants (default
   * 100) and maxPools pools (default 50) seen keep their label, the rest are
   * reported as "_other" (engine/workload-metrics.ts); cacheMs: how long
   * the store-backed gauges reuse a read (default 5000; tests shorten it).
   */
  metrics?: { maxTenants?: number; maxPools?: number; cacheMs?: number };
  /** Bulk dead-letter replays' driver tuning (engine/dead-letter-replays.ts; tests shorten the lease). */
  deadLetterReplays?: Pick<ReplayDriverOptions, "tickMs" | "leaseMs" | "lookaheadMs" | "maxBatch">;
  /** How often this node adds its per-minute workload to the store's history (engine/workload-history.ts; default 10 s; tests shorten it). */
  workloadHistory?: Pick<WorkloadHistoryOptions, "flushMs">;
  /**
   * OpenTelemetry spans of creates, dispatches, leases, HTTP-target calls and
   * acknowledgements, sent to the global TracerProvider (engine/tracing.ts;
   * default false: no spans, nothing kept for them).
   */
  tracing?: boolean;
  /** Tests only: wraps the store the engine opens (a driver slowed on purpose, say). */
  storeWrapper?: (store: Store) => Store;
  /** An external due index (redis-due-index.ts); absent: the store's due table, a window in memory. */
  dueIndex?: RedisDueIndexSettings;
  /**
   * Broker connections by name, for nats and amqp targets (engine/brokers/):
   * each gets an outbox relay on this node. A target names its connection
   * (default: its type), never a URL, so a tenant cannot point the server at
   * a host of its choosing.
   */
  brokers?: Record<string, BrokerSettings>;
  /** Tests only: opens the broker connections in place of the drivers (a scripted broker). */
  openBrokerConnection?: (options: BrokerConnectOptions) => BrokerConnection;
  /**
   * Payloads kept by reference (engine/payload-blobs.ts): those over
   * inlineBytes (default 1 MiB) are stored once in a blob store (default the
   * job store itself; or S3), up to maxBytes (default 16 MiB).
   */
  payloads?: PayloadOptions;
}

export interface RedisDueIndexSettings {
  /** redis://… or rediss://…; with cluster, a seed node of the Redis Cluster. */
  url: string;
  cluster?: boolean;
  /** Prefix of every key (default "duetime:"): one Redis can hold several deployments' indexes. */
  prefix?: string;
  claimMs?: number;
  refreshMs?: number;
  reconcile?: { pageSize?: number; stepMs?: number; hurryStepMs?: number };
}

export interface Engine {
  readonly nodeId: string;
  readonly service: Service;
  readonly events: EngineEvents;
  readonly scheduler: Scheduler;
  readonly executor: Executor;
  readonly retention: Retention;
  /** Payloads kept by reference (payload-blobs.ts): retention runs its sweep; tests and tools run it themselves. */
  readonly payloads: PayloadBlobs;
  /** Reconciles the Redis due index with the store; null with the default index. */
  readonly reconciler: DueIndexReconciler | null;
  /** Starts the scheduler, reaper, HTTP-target executor and retention. */
  start(): Promise<void>;
  /** Stops the loops, finishes in-flight store writes, closes the store. */
  stop(): Promise<void>;
  /** Prometheus text exposition of the engine's metrics. */
  metricsText(): Promise<string>;
}

export async function openEngine(options: EngineOptions): Promise<Engine> {
  const hostClock = options.clock ?? systemClock;
  const nodeId = options.nodeId ?? instanceId();
  const { archiveDir, intervalMs, batchSize, maxBatchesPerRun, ...periodOptions } = options.retention ?? {};
  // Checked before the store opens: a bad period or an unwritable archive directory starts nothing.
  const periods = retentionPeriods(periodOptions);
  const archive = archiveDir !== undefined ? new ArchiveWriter(archiveDir, newArchivePart(hostClock.now())) : null;
  const retryBudget = options.retryBudget === false ? null : new RetryBudget(options.retryBudget ?? {});
  if (options.dueIndex && !/^rediss?:\/\//.test(options.dueIndex.url))
    throw new RangeError(`dueIndex.url: a redis:// or rediss:// URL, got ${JSON.stringify(options.dueIndex.url)}`);
  const brokerKinds = brokerCatalog(options.brokers ?? {});
  const { blobStore, orphanGraceMs, ...limitOptions } = options.payloads ?? {};
  const limits = payloadLimits(limitOptions);
  const { cacheMs, ...labelCaps } = options.metrics ?? {};
  for (const [field, value] of Object.entries(labelCaps)) {
    const problem = value === undefined ? null : maxLabelsProblem(value);
    if (problem !== null) throw new RangeError(`metrics.${field}: ${problem}, got ${value}`);
  }
  const guards = labelGuards(labelCaps);
  const events = new EngineEvents();
  const tracing = options.tracing ? new Tracing() : null;
  const workload = workloadMetrics({ events, guards, clock: hostClock, ...(cacheMs !== undefined ? { cacheMs } : {}) });
  const opened = await openStore(options.store, options.storeOptions);
  const storeHealth = new StoreHealth(options.storeWrapper ? options.storeWrapper(opened) : opened, hostClock, events);
  const backpressure = new Backpressure(options.backpressure ?? {}, events, hostClock);
  const store = timedStore(storeHealth.store, [
    (_, ms, error) => backpressure.observeStoreCall(ms, error),
    (op, ms) => workload.observeStoreCall(op, ms),
  ]);
  // From here on every time is the store's (store-clock.ts): a node with a skewed clock keeps due times.
  const clock = new StoreClock(hostClock, store);
  await clock.sync();
  const replica = options.readStore ? await openStore(options.readStore, { ...options.storeOptions, migrate: false }) : null;
  const reads = replica
    ? readRouting({
        primary: store,
        replica,
        clock,
        events,
        ...(options.readStoreMaxLagMs !== undefined ? { maxLagMs: options.readStoreMaxLagMs } : {}),
      })
    : store;
  const backend = await withStoreOpen(store, () => openBlobBackend(blobStore));
  const payloads = new PayloadBlobs({
    store,
    clock,
    events,
    limits,
    ...(orphanGraceMs !== undefined ? { orphanGraceMs } : {}),
    ...(backend ? { backend } : {}),
  });
  const retention = new Retention({ store, clock, events, periods, archive, blobs: payloads, tuning: { intervalMs, batchSize, maxBatchesPerRun } });
  const signals = new ClusterSignals({
    store,
    clock,
    nodeId,
    events,
    onSignal: (signal) => {
      if (signal.kind === "due") scheduler.offer(signal.entry, false);
      else if (signal.at <= clock.now()) executor.notify(signal.tenantId, signal.pool);
      else executor.notifyAt(signal.tenantId, signal.pool, signal.at);
    },
    onResync: () => {
      scheduler.reloadNow();
      executor.wakeAll();
    },
  });
  const executor = new Executor({
    store,
    clock,
    events,
    announce: (tenantId, pool, at) => signals.send({ kind: "ready", tenantId, pool, at }),
    retryBudget,
    tracing,
    ...(options.reapIntervalMs ? { reapIntervalMs: options.reapIntervalMs } : {}),
    ...(options.pollIntervalMs ? { pollIntervalMs: options.pollIntervalMs } : {}),
  });
  const redis = options.dueIndex ? openRedisDueIndex(options.dueIndex, { store, clock, events, wake: () => scheduler.rearm() }) : null;
  const scheduler = new Scheduler({
    ...(redis ? { dueIndex: redis.index } : {}),
    store,
    clock,
    nodeId,
    address: options.address ?? null,
    events,
    ...options.scheduler,
    storeTime: () => clock.sync(),
    tracing,
    onDispatched: (ready) => {
      const seen = new Set<string>();
      for (const r of ready) {
        const key = `${r.tenantId}\u0000${r.pool}`;
        if (seen.has(key)) continue;
        seen.add(key);
        executor.ready(r.tenantId, r.pool);
      }
    },
  });
  // Configured secrets win; the default tenant without one signs with the stored secret (created once, shared by every node).
  const configured = configuredSecrets({
    ...(options.signingSecret !== undefined ? { [STORED_SECRET_TENANT]: options.signingSecret } : {}),
    ...options.signingSecrets,
  });
  const signingSecrets: Record<string, readonly string[]> = Object.fromEntries(configured);
  if (!configured.has(STORED_SECRET_TENANT)) {
    try {
      signingSecrets[STORED_SECRET_TENANT] = [
        await store.signingSecretEnsure({ tenantId: STORED_SECRET_TENANT, generate: newSigningSecret, now: clock.now() }),
      ];
    } catch (err) {
      await store.close().catch(() => {});
      throw err;
    }
  }
  const registry = createMetrics(events, () => scheduler.loaded, guards);
  backpressure.register(registry);
  workload.register(registry, { clock, store });
  if (redis) registerReconcilerGauges(registry, redis.reconciler);
  const relays = await openRelays(options.brokers ?? {}, {
    executor,
    events,
    clock,
    nodeId,
    registry,
    open: options.openBrokerConnection ?? openBroker,
  });
  let http: HttpTargetRunner | null = null;
  if (options.httpTargets !== false) {
    const observer = httpTargetMetrics(registry, () => http);
    http = new HttpTargetRunner({
      ...options.httpTarget,
      executor,
      events,
      clock,
      nodeId,
      heartbeat: (p) => store.executionHeartbeat({ ...p, now: clock.storeNow() }),
      ...(options.allowTargetHosts ? { allowTargetHosts: options.allowTargetHosts } : {}),
      signingSecrets,
      observer,
      payloadText: (ref) => payloads.text(ref),
    });
  }
  const runner = http;
  const replays = new ReplayDriver({ store, clock, events, executor, nodeId, ...options.deadLetterReplays });
  const counts = countsFold({ store, clock, events });
  const history = new WorkloadHistory({ store, clock, events, ...options.workloadHistory });
  const service = createService({
    store,
    reads,
    signals,
    clock,
    scheduler,
    executor,
    historyRetentionMs: periods.historyMs,
    nodeId,
    signingSecrets: new SigningSecretReader(store, configured),
    storeHealth,
    backpressure,
    events,
    replays,
    brokers: brokerKinds,
    payloads,
    ...(runner ? { targets: (view) => runner.targets(view) } : {}),
  });
  let state: "open" | "running" | "stopped" = "open";

  return {
    nodeId,
    service,
    events,
    scheduler,
    executor,
    retention,
    payloads,
    reconciler: redis?.reconciler ?? null,
    async start() {
      if (state !== "open") return;
      state = "running";
      await signals.start();
      executor.start();
      await scheduler.start();
      redis?.reconciler.start();
      http?.start();
      for (const relay of relays) relay.start();
      retention.start();
      replays.start();
      counts.start();
      history.start();
      backpressure.start();
      workload.start();
    },
    async stop() {
      if (state === "stopped") return;
      state = "stopped";
      await backpressure.stop();
      await workload.stop();
      await replays.stop();
      await counts.stop();
      await history.stop();
      await retention.stop();
      await redis?.reconciler.stop();
      await scheduler.stop();
      executor.stop();
      await http?.stop();
      await Promise.all(relays.map((relay) => relay.stop()));
      await Promise.all(relays.map((relay) => relay.connection.close()));
      await signals.stop();
      storeHealth.stop();
      await payloads.close();
      await Promise.all([store.close(), replica?.close()]);
    },
    metricsText: () => registry.metrics(),
  };
}

/** Opens a part of the engine once the store is open; the store is closed when that fails. */
async function withStoreOpen<T>(store: Store, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (err) {
    await store.close().catch(() => {});
    throw err;
  }
}

/** The Redis due index and its reconciler, on one connection (closed with the index, when the scheduler stops). */
function openRedisDueIndex(
  settings: RedisDueIndexSettings,
  { wake, ...deps }: { store: Store; clock: Clock; events: EngineEvents; wake: () => void },
) {
  const keys = RedisDueKeys.connect({
    url: settings.url,
    cluster: settings.cluster ?? false,
    ...(settings.prefix !== undefined ? { prefix: settings.prefix } : {}),
  });
  const index = new RedisDueIndex({
    keys,
    ...deps,
    ...(settings.claimMs !== undefined ? { claimMs: settings.claimMs } : {}),
    ...(settings.refreshMs !== undefined ? { refreshMs: settings.refreshMs } : {}),
  });
  const reconciler = new DueIndexReconciler({
    keys,
    ...deps,
    shards: () => index.shards,
    // What a repair put back may be due before every head the scheduler knows.
    onRepaired: (refs) => {
      index.repaired(refs);
      wake();
    },
    ...settings.reconcile,
  });
  return { index, reconciler };
}

/** Each tenant's configured secrets, newest first; empty secrets and lists dropped (as SigningKeys does). */
function configuredSecrets(secrets: Record<string, string | readonly string[]>): Map<string, readonly string[]> {
  const map = new Map<string, readonly string[]>();
  for (const [tenant, value] of Object.entries(secrets)) {
    const list = (typeof value === "string" ? [value] : value).filter((s) => s.length > 0);
    if (list.length > 0) map.set(tenant, list);
  }
  return map;
}
