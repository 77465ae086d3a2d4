// `duetime serve`: options from flags and DUETIME_* variables (flags win),
// validated before anything starts; then the server, loaded lazily so that
// the other commands never load the engine or a store driver.

import { accessSync, constants, mkdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseApiKeys } from "../core/api-keys.js";
import { DuetimeError } from "../core/errors.js";
import { retentionProblem, type RetentionPeriods } from "../core/retention.js";
import type { RunningServer } from "../server/index.js";
import {
  brokerKind,
  brokerNameProblem,
  dashboardPathProblem,
  DURABILITIES,
  METRICS_MAX_TENANTS_BOUNDS,
  normalizeDashboardPath,
  RETRY_BUDGET_BOUNDS,
  retryBudgetProblem,
  type BackpressureOptions,
  type BrokerSettings,
  type HttpTargetSettings,
  type OriginLimit,
  type RedisDueIndexSettings,
  type RetentionOptions,
  type RetryBudgetSettings,
  type ServerOptions,
} from "../server/options.js";
import { UsageError, expectPositionals, integerOption, parseDuration, strictParse, type Env } from "./args.js";
import type { Io } from "./output.js";
import { SERVE_HELP } from "./serve-help.js";
import { parseS3Url } from "../store/blobs/s3-settings.js";
import { parseStoreOptions, STORE_OPTIONS } from "./store-options.js";

export { SERVE_HELP };

export interface ServeCommand {
  command: "serve";
  options: ServerOptions;
}

const SERVE_OPTIONS = {
  host: { type: "string" },
  port: { type: "string" },
  "grpc-port": { type: "string" },
  "grpc-tls-cert": { type: "string" },
  "grpc-tls-key": { type: "string" },
  ...STORE_OPTIONS,
  durability: { type: "string" },
  "node-id": { type: "string" },
  "signing-secret": { type: "string" },
  "signing-secrets-file": { type: "string" },
  "allow-target-hosts": { type: "string" },
  "http-concurrency": { type: "string" },
  "http-origin-concurrency": { type: "string" },
  "http-origin-rate": { type: "string" },
  "http-origin-limits": { type: "string" },
  "http-breaker-failures": { type: "string" },
  "http-breaker-open-seconds": { type: "string" },
  "api-keys": { type: "string" },
  "misfire-threshold": { type: "string" },
  "metrics-max-tenants": { type: "string" },
  "read-store": { type: "string" },
  "read-store-max-lag": { type: "string" },
  "due-index": { type: "string" },
  "due-index-cluster": { type: "boolean" },
  "due-index-prefix": { type: "string" },
  broker: { type: "string", multiple: true },
  "broker-rate": { type: "string", multiple: true },
  "history-retention": { type: "string" },
  "idempotency-retention": { type: "string" },
  "audit-retention": { type: "string" },
  "archive-dir": { type: "string" },
  "body-limit": { type: "string" },
  "max-payload-bytes": { type: "string" },
  "inline-payload-bytes": { type: "string" },
  "blob-store": { type: "string" },
  "blob-s3-endpoint": { type: "string" },
  "blob-s3-region": { type: "string" },
  "backpressure-event-loop-ms": { type: "string" },
  "backpressure-store-latency-ms": { type: "string" },
  "backpressure-due-lag-ms": { type: "string" },
  "retry-budget-ratio": { type: "string" },
  "retry-budget-min-per-second": { type: "string" },
  "retry-budget-window-seconds": { type: "string" },
  "log-level": { type: "string" },
  "dashboard-path": { type: "string" },
  "no-dashboard": { type: "boolean" },
  tracing: { type: "boolean" },
} as const;

const NODE_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export function parseServe(args: string[], env: Env): ServeCommand {
  const usage = SERVE_HELP;
  const { values: v, positionals } = strictParse(args, SERVE_OPTIONS, usage);
  expectPositionals(positionals, [], usage);
  // flag, else environment variable; an empty variable counts as unset
  const pick = (flag: keyof typeof SERVE_OPTIONS, variable: string): { value: string; source: string } | undefined => {
    const given = v[flag];
    if (typeof given === "string") return { value: given, source: `--${flag}` };
    const fromEnv = env[variable];
    return fromEnv === undefined || fromEnv === "" ? undefined : { value: fromEnv, source: variable };
  };

  const host = pick("host", "DUETIME_HOST") ?? { value: "127.0.0.1", source: "--host" };
  if (host.value.trim() === "") throw new UsageError(`${host.source}: must not be empty`, usage);
  const port = pick("port", "DUETIME_PORT");
  const store = parseStoreOptions(v, env, usage);
  const options: ServerOptions = {
    host: host.value,
    port: port ? integerOption(port.source.replace(/^--/, ""), port.value, 0, 65535, usage)! : 8080,
    store: store.url,
  };
  const durability = pick("durability", "DUETIME_DURABILITY");
  if (durability) {
    const mode = DURABILITIES.find((d) => d === durability.value);
    if (!mode)
      throw new UsageError(`${durability.source}: expected one of ${DURABILITIES.join(", ")}, got ${JSON.stringify(durability.value)}`, usage);
    store.options.durability = mode;
  }
  if (Object.keys(store.options).length > 0) options.storeOptions = store.options;
  const grpcPort = pick("grpc-port", "DUETIME_GRPC_PORT");
  if (grpcPort) options.grpcPort = integerOption(grpcPort.source.replace(/^--/, ""), grpcPort.value, 0, 65535, usage)!;
  const grpcTls = parseGrpcTls(pick, grpcPort !== undefined, usage);
  if (grpcTls) options.grpcTls = grpcTls;
  const nodeId = pick("node-id", "DUETIME_NODE_ID");
  if (nodeId) {
    if (!NODE_ID.test(nodeId.value))
      throw new UsageError(
        `${nodeId.source}: expected 1 to 128 letters, digits, ".", "_", ":" or "-", starting with a letter or digit, got ${JSON.stringify(nodeId.value)}`,
        usage,
      );
    options.nodeId = nodeId.value;
  }
  const secret = pick("signing-secret", "DUETIME_SIGNING_SECRET");
  if (secret) {
    const list = secret.value.split(",").map((s) => s.trim());
    if (list.some((s) => s === "")) throw new UsageError(`${secret.source}: expected a secret, or secrets separated by commas (newest first)`, usage);
    options.signingSecret = list.length === 1 ? list[0]! : list;
  }
  const secretsFile = pick("signing-secrets-file", "DUETIME_SIGNING_SECRETS_FILE");
  if (secretsFile) options.signingSecrets = readSecretsFile(secretsFile.value, secretsFile.source, usage);
  const hosts = pick("allow-target-hosts", "DUETIME_ALLOW_TARGET_HOSTS");
  if (hosts) {
    const list = hosts.value.split(",").map((h) => h.trim());
    if (list.some((h) => h === ""))
      throw new UsageError(`${hosts.source}: expected a comma-separated list of host names, got ${JSON.stringify(hosts.value)}`, usage);
    options.allowTargetHosts = list;
  }
  const httpTarget = parseHttpTarget(pick, usage);
  if (httpTarget) options.httpTarget = httpTarget;
  const keys = pick("api-keys", "DUETIME_API_KEYS");
  if (keys) options.apiKeys = parseKeys(keys.value, keys.source, usage);
  const bodyLimit = pick("body-limit", "DUETIME_BODY_LIMIT");
  if (bodyLimit) options.bodyLimitBytes = integerOption(bodyLimit.source.replace(/^--/, ""), bodyLimit.value, 1, 2 ** 31 - 1, usage)!;
  parsePayloads(pick, options, usage);
  const misfire = pick("misfire-threshold", "DUETIME_MISFIRE_THRESHOLD");
  if (misfire) options.misfireThresholdSeconds = integerOption(misfire.source.replace(/^--/, ""), misfire.value, 1, 86_400, usage)!;
  const maxTenants = pick("metrics-max-tenants", "DUETIME_METRICS_MAX_TENANTS");
  if (maxTenants)
    options.metricsMaxTenants = integerOption(
      maxTenants.source.replace(/^--/, ""),
      maxTenants.value,
      METRICS_MAX_TENANTS_BOUNDS.min,
      METRICS_MAX_TENANTS_BOUNDS.max,
      usage,
    )!;
  const logLevel = pick("log-level", "DUETIME_LOG_LEVEL");
  if (logLevel) {
    if (!LOG_LEVELS.includes(logLevel.value))
      throw new UsageError(`${logLevel.source}: expected one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(logLevel.value)}`, usage);
    options.logLevel = logLevel.value;
  }
  const readStore = pick("read-store", "DUETIME_READ_STORE");
  if (readStore) {
    if (!/^postgres(ql)?:\/\/.+/.test(readStore.value))
      throw new UsageError(`${readStore.source}: expected postgres://..., got ${JSON.stringify(readStore.value)}`, usage);
    if (!/^postgres(ql)?:/.test(store.url)) throw new UsageError(`${readStore.source}: a read replica needs a PostgreSQL --store`, usage);
    options.readStore = readStore.value;
  }
  const maxLag = pick("read-store-max-lag", "DUETIME_READ_STORE_MAX_LAG");
  if (maxLag) {
    if (!readStore) throw new UsageError(`${maxLag.source}: only applies with --read-store`, usage);
    const seconds = parseDuration(maxLag.value);
    if (seconds === undefined || seconds < 1 || seconds > 3600)
      throw new UsageError(`${maxLag.source}: expected a duration from 1s to 1h, got ${JSON.stringify(maxLag.value)}`, usage);
    options.readStoreMaxLagSeconds = seconds;
  }
  const brokers = parseBrokers(v.broker, v["broker-rate"], env, usage);
  if (brokers) options.brokers = brokers;
  const dueIndex = parseDueIndex(v["due-index-cluster"] === true, pick, env, usage);
  if (dueIndex) options.dueIndex = dueIndex;
  const retention = parseRetention(pick, usage);
  if (retention) options.retention = retention;
  const backpressure = parseBackpressure(pick, usage);
  if (backpressure) options.backpressure = backpressure;
  const retryBudget = parseRetryBudget(pick, usage);
  if (retryBudget !== undefined) options.retryBudget = retryBudget;
  parseDashboard(v["no-dashboard"] === true, pick, env, options, usage);
  const tracing = env.DUETIME_TRACING;
  if (tracing !== undefined && tracing !== "" && tracing !== "on" && tracing !== "off")
    throw new UsageError(`DUETIME_TRACING: expected on or off, got ${JSON.stringify(tracing)}`, usage);
  if (v.tracing === true || tracing === "on") options.tracing = true;
  return { command: "serve", options };
}

/** --grpc-tls-cert and --grpc-tls-key: both or neither, readable files, and only with --grpc-port. */
function parseGrpcTls(pick: PickOption, grpc: boolean, usage: string): { certFile: string; keyFile: string } | undefined {
  const cert = pick("grpc-tls-cert", "DUETIME_GRPC_TLS_CERT");
  const key = pick("grpc-tls-key", "DUETIME_GRPC_TLS_KEY");
  if (!cert && !key) return undefined;
  if (!grpc) throw new UsageError(`${(cert ?? key)!.source}: only applies with --grpc-port`, usage);
  if (!cert || !key) throw new UsageError(`${(cert ?? key)!.source}: give both --grpc-tls-cert and --grpc-tls-key`, usage);
  for (const file of [cert, key]) {
    try {
      accessSync(file.value, constants.R_OK);
    } catch {
      throw new UsageError(`${file.source}: cannot read ${JSON.stringify(file.value)}`, usage);
    }
  }
  return { certFile: resolve(cert.value), keyFile: resolve(key.value) };
}

/** --due-index and its companions; the prefix and cluster flags only apply with it. */
function parseDueIndex(clusterFlag: boolean, pick: PickOption, env: Env, usage: string): RedisDueIndexSettings | undefined {
  const url = pick("due-index", "DUETIME_DUE_INDEX");
  const prefix = pick("due-index-prefix", "DUETIME_DUE_INDEX_PREFIX");
  const clusterEnv = env.DUETIME_DUE_INDEX_CLUSTER;
  if (clusterEnv !== undefined && clusterEnv !== "" && clusterEnv !== "on" && clusterEnv !== "off")
    throw new UsageError(`DUETIME_DUE_INDEX_CLUSTER: expected on or off, got ${JSON.stringify(clusterEnv)}`, usage);
  const cluster = clusterFlag || clusterEnv === "on";
  if (!url) {
    const stray = prefix?.source ?? (clusterFlag ? "--due-index-cluster" : undefined);
    if (stray) throw new UsageError(`${stray}: only applies with --due-index`, usage);
    return undefined;
  }
  if (!/^rediss?:\/\/[^/\s]+/.test(url.value))
    throw new UsageError(`${url.source}: expected redis://host:port or rediss://host:port, got ${JSON.stringify(url.value)}`, usage);
  const settings: RedisDueIndexSettings = { url: url.value, cluster };
  if (prefix) {
    if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(prefix.value))
      throw new UsageError(`${prefix.source}: letters, digits and _ . : - (1 to 64, no braces), got ${JSON.stringify(prefix.value)}`, usage);
    settings.prefix = prefix.value;
  }
  return settings;
}

/** Repeated NAME=VALUE flags, else the variable's entries separated by whitespace; each with where it came from. */
function namedEntries(flags: string[] | undefined, flag: string, env: Env, variable: string): { name: string; value: string; source: string }[] {
  const given = flags && flags.length > 0 ? flags.map((entry) => ({ entry, source: `--${flag}` })) : [];
  const fromEnv = given.length === 0 ? (env[variable] ?? "").split(/\s+/).filter((e) => e !== "") : [];
  return [...given, ...fromEnv.map((entry) => ({ entry, source: variable }))].map(({ entry, source }) => {
    const eq = entry.indexOf("=");
    return { name: eq < 0 ? "" : entry.slice(0, eq), value: eq < 0 ? "" : entry.slice(eq + 1), source };
  });
}

/** --broker NAME=URL (DUETIME_BROKERS) and --broker-rate NAME=N (DUETIME_BROKER_RATES). */
function parseBrokers(
  flags: string[] | undefined,
  rateFlags: string[] | undefined,
  env: Env,
  usage: string,
): Record<string, BrokerSettings> | undefined {
  const brokers: Record<string, BrokerSettings> = {};
  for (const { name, value, source } of namedEntries(flags, "broker", env, "DUETIME_BROKERS")) {
    if (brokerNameProblem(name) !== null)
      throw new UsageError(
        `${source}: expected NAME=URL, NAME of letters, digits, _ and - (at most 64), got ${JSON.stringify(`${name}=${value}`)}`,
        usage,
      );
    if (brokers[name]) throw new UsageError(`${source}: broker ${JSON.stringify(name)} is given twice`, usage);
    const kind = brokerKind(value);
    if ("problem" in kind) throw new UsageError(`${source}: ${name}: ${kind.problem}`, usage);
    brokers[name] = { url: value };
  }
  for (const { name, value, source } of namedEntries(rateFlags, "broker-rate", env, "DUETIME_BROKER_RATES")) {
    const broker = brokers[name];
    if (!broker)
      throw new UsageError(`${source}: expected NAME=N for a broker given with --broker, got ${JSON.stringify(`${name}=${value}`)}`, usage);
    const rate = Number(value);
    if (value.trim() === "" || !(rate > 0 && rate <= 1_000_000))
      throw new UsageError(`${source}: ${name}: expected messages a second, more than 0 and at most 1000000, got ${JSON.stringify(value)}`, usage);
    broker.ratePerSecond = rate;
  }
  return Object.keys(brokers).length > 0 ? brokers : undefined;
}

/** --no-dashboard (DUETIME_DASHBOARD=off) and --dashboard-path (DUETIME_DASHBOARD_PATH), into options. */
function parseDashboard(noDashboard: boolean, pick: PickOption, env: Env, options: ServerOptions, usage: string): void {
  const toggle = env.DUETIME_DASHBOARD;
  if (toggle !== undefined && toggle !== "" && toggle !== "on" && toggle !== "off")
    throw new UsageError(`DUETIME_DASHBOARD: expected on or off, got ${JSON.stringify(toggle)}`, usage);
  const off = noDashboard || toggle === "off";
  const path = pick("dashboard-path", "DUETIME_DASHBOARD_PATH");
  if (off) {
    if (path?.source === "--dashboard-path")
      throw new UsageError(`--dashboard-path: the dashboard is off (${noDashboard ? "--no-dashboard" : "DUETIME_DASHBOARD=off"})`, usage);
    options.dashboard = false;
    return;
  }
  if (!path) return;
  const problem = dashboardPathProblem(path.value);
  if (problem !== null) throw new UsageError(`${path.source}: ${problem}, got ${JSON.stringify(path.value)}`, usage);
  options.dashboardPath = normalizeDashboardPath(path.value);
}

const RETRY_BUDGET_FLAGS = {
  ratio: ["retry-budget-ratio", "DUETIME_RETRY_BUDGET_RATIO"],
  minPerSecond: ["retry-budget-min-per-second", "DUETIME_RETRY_BUDGET_MIN_PER_SECOND"],
  windowSeconds: ["retry-budget-window-seconds", "DUETIME_RETRY_BUDGET_WINDOW_SECONDS"],
} as const satisfies Record<keyof RetryBudgetSettings, readonly [keyof typeof SERVE_OPTIONS, string]>;

/** The retry budget flags: settings, false for "--retry-budget-ratio off", undefined when none is given. */
function parseRetryBudget(pick: PickOption, usage: string): Partial<RetryBudgetSettings> | false | undefined {
  const settings: Partial<RetryBudgetSettings> = {};
  const ratio = pick(...RETRY_BUDGET_FLAGS.ratio);
  const off = ratio?.value.trim().toLowerCase() === "off";
  for (const [field, [flag, variable]] of Object.entries(RETRY_BUDGET_FLAGS) as [
    keyof RetryBudgetSettings,
    (typeof RETRY_BUDGET_FLAGS)[keyof RetryBudgetSettings],
  ][]) {
    const got = pick(flag, variable);
    if (!got || (field === "ratio" && off)) continue;
    if (off) throw new UsageError(`${got.source}: retry budgets are off (${ratio!.source} off)`, usage);
    const value = got.value.trim() === "" ? Number.NaN : Number(got.value);
    if (retryBudgetProblem({ [field]: value }) !== null) {
      const { min, max } = RETRY_BUDGET_BOUNDS[field];
      const what = `${field === "windowSeconds" ? "an integer" : "a number"} from ${min} to ${max}${field === "ratio" ? ', or "off"' : ""}`;
      throw new UsageError(`${got.source}: expected ${what}, got ${JSON.stringify(got.value)}`, usage);
    }
    settings[field] = value;
  }
  if (off) return false;
  return Object.keys(settings).length > 0 ? settings : undefined;
}

const BACKPRESSURE_FLAGS: Record<keyof BackpressureOptions, [keyof typeof SERVE_OPTIONS, string]> = {
  eventLoopDelayMs: ["backpressure-event-loop-ms", "DUETIME_BACKPRESSURE_EVENT_LOOP_MS"],
  storeLatencyMs: ["backpressure-store-latency-ms", "DUETIME_BACKPRESSURE_STORE_LATENCY_MS"],
  dueLagMs: ["backpressure-due-lag-ms", "DUETIME_BACKPRESSURE_DUE_LAG_MS"],
};

/** The backpressure thresholds given (ms, 0 turns a signal off); undefined when none is. */
function parseBackpressure(pick: PickOption, usage: string): BackpressureOptions | undefined {
  const options: BackpressureOptions = {};
  for (const [field, [flag, variable]] of Object.entries(BACKPRESSURE_FLAGS) as [keyof BackpressureOptions, [keyof typeof SERVE_OPTIONS, string]][]) {
    const given = pick(flag, variable);
    if (given) options[field] = integerOption(given.source.replace(/^--/, ""), given.value, 0, 3_600_000, usage)!;
  }
  return Object.keys(options).length > 0 ? options : undefined;
}

type PickOption = (flag: keyof typeof SERVE_OPTIONS, variable: string) => { value: string; source: string } | undefined;

/** The --http-* flags; undefined when none is given. */
function parseHttpTarget(pick: PickOption, usage: string): HttpTargetSettings | undefined {
  const settings: HttpTargetSettings = {};
  const int = (flag: keyof typeof SERVE_OPTIONS, variable: string, min: number, max: number): number | undefined => {
    const got = pick(flag, variable);
    return got ? integerOption(got.source.replace(/^--/, ""), got.value, min, max, usage) : undefined;
  };
  const num = (flag: keyof typeof SERVE_OPTIONS, variable: string, min: number, max: number): number | undefined => {
    const got = pick(flag, variable);
    if (!got) return undefined;
    const value = Number(got.value);
    if (got.value.trim() === "" || !Number.isFinite(value) || value < min || value > max) {
      throw new UsageError(`${got.source}: expected a number from ${min} to ${max}, got ${JSON.stringify(got.value)}`, usage);
    }
    return value;
  };
  const concurrency = int("http-concurrency", "DUETIME_HTTP_CONCURRENCY", 1, 100_000);
  if (concurrency !== undefined) settings.concurrency = concurrency;
  const originConcurrency = int("http-origin-concurrency", "DUETIME_HTTP_ORIGIN_CONCURRENCY", 1, 10_000);
  const originRate = num("http-origin-rate", "DUETIME_HTTP_ORIGIN_RATE", 0, 1_000_000);
  if (originConcurrency !== undefined || originRate !== undefined) {
    settings.origin = {
      ...(originConcurrency !== undefined ? { concurrency: originConcurrency } : {}),
      ...(originRate !== undefined ? { ratePerSecond: originRate > 0 ? originRate : null } : {}),
    };
  }
  const limits = pick("http-origin-limits", "DUETIME_HTTP_ORIGIN_LIMITS");
  if (limits) {
    try {
      settings.origins = parseOriginLimits(limits.value);
    } catch (err) {
      throw new UsageError(`${limits.source}: ${(err as Error).message}`, usage);
    }
  }
  const failures = int("http-breaker-failures", "DUETIME_HTTP_BREAKER_FAILURES", 1, 10_000);
  const openSeconds = num("http-breaker-open-seconds", "DUETIME_HTTP_BREAKER_OPEN_SECONDS", 0.1, 3600);
  if (failures !== undefined || openSeconds !== undefined) {
    settings.breaker = {
      ...(failures !== undefined ? { failureThreshold: failures } : {}),
      ...(openSeconds !== undefined ? { openSeconds, maxOpenSeconds: Math.max(60, openSeconds) } : {}),
    };
  }
  return Object.keys(settings).length > 0 ? settings : undefined;
}

const RETENTION_FLAGS = {
  historyMs: ["history-retention", "DUETIME_HISTORY_RETENTION"],
  idempotencyMs: ["idempotency-retention", "DUETIME_IDEMPOTENCY_RETENTION"],
  auditMs: ["audit-retention", "DUETIME_AUDIT_RETENTION"],
} as const satisfies Record<keyof RetentionPeriods, readonly [keyof typeof SERVE_OPTIONS, string]>;

/** The largest payload a flag may allow: 1 GiB (a create's body is held whole while it is checked). */
const MAX_PAYLOAD_CEILING = 1024 * 1024 * 1024;

/** The payload limits and the blob store (docs/design-notes.md "Large payloads by reference"). */
function parsePayloads(pick: PickOption, options: ServerOptions, usage: string): void {
  const bytes = (flag: "max-payload-bytes" | "inline-payload-bytes", variable: string): number | undefined => {
    const given = pick(flag, variable);
    return given ? integerOption(given.source.replace(/^--/, ""), given.value, 1, MAX_PAYLOAD_CEILING, usage) : undefined;
  };
  const max = bytes("max-payload-bytes", "DUETIME_MAX_PAYLOAD_BYTES");
  if (max !== undefined) options.maxPayloadBytes = max;
  const inline = bytes("inline-payload-bytes", "DUETIME_INLINE_PAYLOAD_BYTES");
  if (inline !== undefined) options.inlinePayloadBytes = inline;
  const store = pick("blob-store", "DUETIME_BLOB_STORE");
  const endpoint = pick("blob-s3-endpoint", "DUETIME_BLOB_S3_ENDPOINT");
  const region = pick("blob-s3-region", "DUETIME_BLOB_S3_REGION");
  if (store === undefined || store.value === "store") {
    const stray = endpoint ?? region;
    if (stray) throw new UsageError(`${stray.source}: only applies with --blob-store s3://BUCKET[/PREFIX]`, usage);
    return;
  }
  const bucket = parseS3Url(store.value);
  if (!bucket) throw new UsageError(`${store.source}: expected store or s3://BUCKET[/PREFIX], got ${JSON.stringify(store.value)}`, usage);
  if (endpoint && !/^https?:\/\/[^/]+/.test(endpoint.value))
    throw new UsageError(`${endpoint.source}: expected an http:// or https:// URL, got ${JSON.stringify(endpoint.value)}`, usage);
  options.blobStore = {
    kind: "s3",
    ...bucket,
    ...(endpoint ? { endpoint: endpoint.value } : {}),
    ...(region ? { region: region.value } : {}),
  };
}

/** The retention flags, checked against the engine's floors (core/retention.ts); undefined when none is given. */
function parseRetention(pick: PickOption, usage: string): RetentionOptions | undefined {
  const retention: RetentionOptions = {};
  for (const [field, [flag, variable]] of Object.entries(RETENTION_FLAGS) as [
    keyof RetentionPeriods,
    (typeof RETENTION_FLAGS)[keyof RetentionPeriods],
  ][]) {
    const got = pick(flag, variable);
    if (!got) continue;
    const seconds = parseDuration(got.value);
    if (seconds === undefined)
      throw new UsageError(`${got.source}: expected a duration such as 30d, 24h or 90m, got ${JSON.stringify(got.value)}`, usage);
    retention[field] = seconds * 1000;
    const problem = retentionProblem({ [field]: retention[field] });
    if (problem) throw new UsageError(`${got.source}: ${problem.message}`, usage);
  }
  const archive = pick("archive-dir", "DUETIME_ARCHIVE_DIR");
  if (archive) {
    try {
      mkdirSync(archive.value, { recursive: true });
      accessSync(archive.value, constants.W_OK);
    } catch (err) {
      throw new UsageError(`${archive.source}: cannot write to ${JSON.stringify(archive.value)} (${(err as Error).message})`, usage);
    }
    retention.archiveDir = resolve(archive.value);
  }
  return Object.keys(retention).length > 0 ? retention : undefined;
}

/**
 * "ORIGIN=CONCURRENCY[/RATE],..." (--http-origin-limits), e.g.
 * "https://fragile.example=4/2,http://10.0.0.5:8080=16"; a rate of 0 means none.
 * Parsed here rather than in the engine so that the CLI loads no engine code.
 */
export function parseOriginLimits(text: string): Record<string, OriginLimit> {
  const out: Record<string, OriginLimit> = {};
  for (const item of text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^(https?:\/\/[^=\s/]+)\/?=(\d+)(?:\/(\d+(?:\.\d+)?))?$/i.exec(item);
    if (!m) throw new Error(`expected ORIGIN=CONCURRENCY[/RATE], e.g. https://api.example=8/5, got ${JSON.stringify(item)}`);
    const concurrency = Number(m[2]);
    if (concurrency < 1) throw new Error(`the concurrency of ${m[1]} must be at least 1`);
    const limit: OriginLimit = { concurrency };
    if (m[3] !== undefined) limit.ratePerSecond = Number(m[3]) > 0 ? Number(m[3]) : null;
    out[m[1]!] = limit;
  }
  return out;
}

/** The JSON secrets file: {"tenant": "secret" | ["newest", "older"], ...}. */
function readSecretsFile(path: string, source: string, usage: string): Record<string, string | string[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new UsageError(`${source}: cannot read ${JSON.stringify(path)} as JSON (${(err as Error).message})`, usage);
  }
  const valid =
    typeof parsed === "object" &&
    parsed !== null &&
    !Array.isArray(parsed) &&
    Object.values(parsed).every(
      (v) => (typeof v === "string" && v !== "") || (Array.isArray(v) && v.length > 0 && v.every((s) => typeof s === "string" && s !== "")),
    );
  if (!valid) throw new UsageError(`${source}: expected {"tenant": "secret" or ["newest", "older"], ...} in ${JSON.stringify(path)}`, usage);
  return parsed as Record<string, string | string[]>;
}

/** A mistake in the keys is a usage error (exit 2), found without loading the server. */
function parseKeys(text: string, source: string, usage: string): NonNullable<ServerOptions["apiKeys"]> {
  try {
    return parseApiKeys(text);
  } catch (err) {
    if (err instanceof DuetimeError) throw new UsageError(`${source}: ${err.message.replace(/^apiKeys: /, "")}`, usage);
    throw err;
  }
}

export interface ServeDeps {
  /** Defaults to server/index.ts's startServer, imported on first use. */
  startServer?: (options: ServerOptions) => Promise<RunningServer>;
  /** Where SIGTERM/SIGINT come from (default process). */
  signals?: Pick<NodeJS.Process, "once" | "off">;
  /** Called when close() overruns the deadline (default process.exit). */
  exit?: (code: number) => void;
  /** How long close() may take before the process is ended anyway (default 9 500 ms: exit within 10 s). */
  closeDeadlineMs?: number;
}

export async function runServe(cmd: ServeCommand, io: Io, deps: ServeDeps = {}): Promise<number> {
  const start = deps.startServer ?? (await import("../server/index.js")).startServer;
  const { options } = cmd;
  if (typeof start !== "function") {
    io.stderr("error: this build has no server (server/index.ts exports no startServer)\n");
    return 1;
  }
  let server: RunningServer;
  try {
    server = await start(options);
  } catch (err) {
    io.stderr(`error: the server did not start: ${describe(err)}\n`);
    return 1;
  }
  io.stdout(`duetime listening on ${server.url}\n`);
  if (server.grpcAddress) io.stdout(`duetime serving gRPC workers on ${server.grpcAddress}\n`);

  const signals = deps.signals ?? process;
  const signal = await new Promise<string>((resolve) => {
    const onTerm = (): void => done("SIGTERM");
    const onInt = (): void => done("SIGINT");
    const done = (name: string): void => {
      signals.off("SIGTERM", onTerm);
      signals.off("SIGINT", onInt);
      resolve(name);
    };
    signals.once("SIGTERM", onTerm);
    signals.once("SIGINT", onInt);
  });
  io.stderr(`${signal}: shutting down\n`);
  const exit = deps.exit ?? ((code: number) => process.exit(code));
  const deadline = setTimeout(() => {
    io.stderr("error: shutdown took too long; exiting\n");
    exit(1);
  }, deps.closeDeadlineMs ?? 9_500);
  deadline.unref();
  try {
    await server.close();
    return 0;
  } catch (err) {
    io.stderr(`error: shutdown failed: ${describe(err)}\n`);
    return 1;
  } finally {
    clearTimeout(deadline);
  }
}

function describe(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  return [typeof e?.code === "string" ? e.code : undefined, typeof e?.message === "string" ? e.message : String(err)].filter(Boolean).join(": ");
}
