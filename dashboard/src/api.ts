// The dashboard's client of the /v1 API: fetch with the key the user typed
// (kept in sessionStorage only, never in localStorage or a cookie), and the
// error envelope turned into an ApiError the pages show.

const KEY_ITEM = "duetime.apiKey";

/** The key of this tab's session: a string (maybe empty: no key, a server without auth), or null when not logged in. */
export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_ITEM);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY_ITEM, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_ITEM);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The envelope's details: `field` names the input at fault (a dotted path), VERSION_CONFLICT's `version` the current one. */
    readonly details: { field?: string; [name: string]: unknown } = {},
  ) {
    super(message);
  }
}

/** What a person should read for an error: 401 and 403 said plainly. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 401) return `The server refused the key (401 ${err.code}): it is unknown, revoked or missing. Log in again with a valid key.`;
    if (err.status === 403) return `This key's role may not do this (403 ${err.code}): ${err.message}`;
    return `${err.status} ${err.code}: ${err.message}`;
  }
  if (err instanceof Error) return `Cannot reach the server: ${err.message}`;
  return String(err);
}

/** Listeners told when an answer is 401: the app then goes back to the login form. */
const unauthenticated = new Set<(err: ApiError) => void>();
export function onUnauthenticated(listener: (err: ApiError) => void): () => void {
  unauthenticated.add(listener);
  return () => unauthenticated.delete(listener);
}

export type Query = Record<string, string | number | undefined | null>;

function url(path: string, query?: Query): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  const qs = params.toString();
  return qs === "" ? path : `${path}?${qs}`;
}

/** Calls the API with the session's key (or the one given, at login); resolves to the JSON body, undefined for 204. */
export async function api<T>(
  method: string,
  path: string,
  options: { query?: Query; body?: unknown; key?: string; signal?: AbortSignal } = {},
): Promise<T> {
  const key = options.key ?? storedKey() ?? "";
  const headers: Record<string, string> = { accept: "application/json" };
  if (key !== "") headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url(path, options.query), {
    method,
    headers,
    body: options.body === undefined ? null : JSON.stringify(options.body),
    cache: "no-store",
    credentials: "omit",
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let body: unknown;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const error = (body as { error?: { code?: string; message?: string; details?: ApiError["details"] } } | undefined)?.error;
    const err = new ApiError(res.status, error?.code ?? "HTTP_ERROR", error?.message ?? (text.slice(0, 200) || res.statusText), error?.details ?? {});
    if (res.status === 401 && options.key === undefined) for (const listener of unauthenticated) listener(err);
    throw err;
  }
  return body as T;
}

// ---- the wire types the pages read (a subset of @duetime/sdk's)

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface Job {
  jobId: string;
  name: string;
  state: string;
  target:
    | { type: "queue"; pool: string }
    | { type: "http"; url: string; method?: string }
    | { type: "nats"; subject: string; broker?: string }
    | { type: "amqp"; exchange: string; routingKey: string; broker?: string };
  payload?: unknown;
  schedule: { runAt?: string; delaySeconds?: number; cron?: string; tz?: string; [field: string]: unknown };
  retry?: { maxAttempts: number; backoffSeconds: number; maxBackoffSeconds: number };
  timeoutSeconds?: number;
  priority?: number;
  mode?: "live" | "dry_run";
  nextRunAt: string | null;
  nextRunAtLocal?: string;
  version: number;
  createdAt: string;
  updatedAt: string;
}

export interface Execution {
  executionId: string;
  jobId: string;
  scheduledFor: string;
  attempt: number;
  state: string;
  dispatchedAt?: string | null;
  startedAt?: string | null;
  finishedAt?: string | null;
  error?: unknown;
  result?: unknown;
  workerId?: string | null;
  dispatchedBy?: string | null;
  throttledMs?: number;
}

export interface DeadLetter {
  executionId: string;
  jobId: string;
  name: string;
  scheduledFor: string;
  attempts: number;
  lastError: unknown;
  deadAt: string;
  payload: unknown;
}

export interface Preview {
  times: string[];
  local?: string[];
  dst?: ("gap" | "overlap" | null)[];
}

export interface Counts {
  pending: number;
  queued: number;
  running: number;
}

export interface Stats {
  pools: Record<string, Counts>;
  tenants: Record<string, Counts>;
}

/** GET /v1/stats/history: arrays aligned with minutes. */
export interface StatsSeries {
  started: number[];
  succeeded: number[];
  failed: number[];
  dead: number[];
  startLagMs: { p50: (number | null)[]; p90: (number | null)[]; p99: (number | null)[] };
  pending: (number | null)[];
  queued: (number | null)[];
  running: (number | null)[];
}

export interface StatsHistory {
  by: "pool" | "tenant";
  minutes: string[];
  series: Record<string, StatsSeries>;
}

export interface Cluster {
  storeTime: string;
  nodes: { nodeId: string; address: string | null; shards: number[]; lastHeartbeatAt: string; heartbeatAgeSeconds: number }[];
  shards: { shard: number; owner: string | null; epoch: number; leaseUntil: string | null; leaseRemainingSeconds: number | null }[];
}

export interface Targets {
  items: { origin: string; breaker: string; inFlight: number; released: number; [field: string]: unknown }[];
}

export type Role = "admin" | "client" | "worker";

export interface WhoAmI {
  role: Role;
  /** "*" for a platform key. */
  tenantId: string;
  keyId: string | null;
}

export interface Occurrence {
  scheduledFor: string;
  local: string;
  status: "dispatched" | "would_run" | "skipped" | "due" | "not_run" | "unknown";
  reason?: string;
  dst?: "gap" | "overlap";
  executionId?: string;
  executionState?: string;
}

export interface PossibleDuplicate {
  executionId: string;
  jobId: string;
  name: string;
  pool: string;
  scheduledFor: string;
  state: string;
  attempt: number;
  possibleDuplicate: { attempt: number; reason: "lease_lost" | "expired_then_succeeded"; at: string };
}

export interface DeadLetterReplay {
  replayId: string;
  state: "RUNNING" | "DONE" | "CANCELLED";
  ratePerSecond: number;
  total: number | null;
  replayed: number;
  skipped: number;
  createdAt: string;
  finishedAt: string | null;
}
