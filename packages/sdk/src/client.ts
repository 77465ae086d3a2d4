// The HTTP client: one typed method per operation of docs/api.md, made from
// the operation table (operations.ts), plus the few routes outside /v1.
//
// Retries (network errors, 429, 502, 503, 504; Retry-After honoured, with
// jittered backoff) happen only for calls that are safe to repeat, except
// 429: the server answers it before doing anything (a quota, backpressure),
// so every call is retried on a 429. Each operation's `retry` says which
// calls are safe, for these reasons:
// - every GET;
// - DELETE /v1/jobs/{id} and :pause / :resume (repeating them is a no-op 200/204 by contract);
// - heartbeat, complete, fail and their batch forms (a repeated complete or
//   fail answers 200 again, by contract);
// - lease, with or without piggy-backed acks. The acks are idempotent. A lease
//   whose response was lost leaves its items leased to nobody until their
//   lease expires (then they run again as a new attempt); retrying does not
//   make that worse, and not retrying would not undo it. Accepted and documented.
// - createJob only with an idempotencyKey; createJobs only when every item has one.
// - updateJob (PATCH) only with a version (options.ifMatch or patch.version):
//   a repeat cannot apply twice or overwrite a newer change. If the first
//   attempt was applied and its answer lost, the repeat answers 409
//   VERSION_CONFLICT (the version moved on); getJob tells whether the change
//   is there. Without a version (or with If-Match `*`) it is never retried.
// - :backfill (a repeated backfill adds nothing, by contract).
// - DELETE /v1/keys/{id} (revoking a revoked key answers 204 again).
// :trigger and dead-letter :replay create a new attempt each time, POST
// /v1/keys a new key each time: never retried.

import { hostname } from "node:os";
import type { Dispatcher } from "undici";
import { Transport, type CallOptions, type RetryInfo } from "./http.js";
import { apiOver, fillPath, type AnyOperation, type DuetimeApi, type WireRequest } from "./operations.js";
import { rejectUnknownOptions, requireInteger } from "./options.js";

export type { CallOptions, RetryInfo } from "./http.js";
export type { CreateJobOptions, CreateJobsOptions, UpdateJobOptions } from "./operations.js";

export interface ClientOptions {
  /** Base URL of the server, e.g. "http://127.0.0.1:8080". */
  url: string;
  /** API key, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Per-attempt timeout in ms (default 30 000); a lease adds its waitSeconds on top. */
  timeoutMs?: number;
  /** Retries after the first attempt, for calls safe to repeat (default 3). */
  retries?: number;
  /** undici dispatcher to use; by default the client creates (and close() closes) a keep-alive Agent. */
  dispatcher?: Dispatcher;
  /** Backoff before the first retry, before jitter (default 200 ms); doubles per retry. */
  retryBaseMs?: number;
  /** Upper bound of a computed backoff (default 5 000 ms). */
  retryMaxMs?: number;
  /** A Retry-After longer than this fails the call at once with retryAfterSeconds set (default 30 000 ms). */
  maxRetryAfterMs?: number;
  /** Called before each retry (logging, tests). */
  onRetry?: (info: RetryInfo) => void;
}

const CLIENT_OPTIONS = [
  "url",
  "token",
  "timeoutMs",
  "retries",
  "dispatcher",
  "retryBaseMs",
  "retryMaxMs",
  "maxRetryAfterMs",
  "onRetry",
] as const satisfies readonly (keyof ClientOptions)[];

/** The operation table's methods over an HTTP transport (made once, see DuetimeClient). */
const ApiOverHttp = class {
  constructor(send: (op: AnyOperation, request: WireRequest) => Promise<unknown>) {
    Object.assign(
      this,
      apiOver((_name, op, request) => send(op, request)),
    );
  }
} as unknown as new (
  send: (op: AnyOperation, request: WireRequest) => Promise<unknown>,
) => DuetimeApi;

export class DuetimeClient extends ApiOverHttp {
  private readonly http: Transport;

  constructor(options: ClientOptions) {
    rejectUnknownOptions("DuetimeClient", options, CLIENT_OPTIONS);
    if (typeof options.url !== "string" || options.url === "") throw new TypeError("DuetimeClient: url is required");
    const http = new Transport({
      url: options.url,
      ...(options.token ? { token: options.token } : {}),
      timeoutMs: requireInteger("DuetimeClient", "timeoutMs", options.timeoutMs ?? 30_000, 1, 3_600_000),
      retries: requireInteger("DuetimeClient", "retries", options.retries ?? 3, 0, 100),
      backoff: {
        baseMs: requireInteger("DuetimeClient", "retryBaseMs", options.retryBaseMs ?? 200, 0, 600_000),
        maxMs: requireInteger("DuetimeClient", "retryMaxMs", options.retryMaxMs ?? 5_000, 0, 600_000),
      },
      maxRetryAfterMs: options.maxRetryAfterMs ?? 30_000,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
      userAgent: `duetime-sdk/0.1 (${hostname()})`,
      ...(options.onRetry ? { onRetry: options.onRetry } : {}),
    });
    super((op, request) => sendOperation(http, op, request));
    this.http = http;
  }

  /** The server's base URL, without a trailing slash. */
  get url(): string {
    return this.http.url;
  }

  /** Closes the keep-alive connections (when the client created its own dispatcher). */
  close(): Promise<void> {
    return this.http.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** GET /healthz: resolves with its body when the process is up, throws otherwise. */
  async health(options?: CallOptions): Promise<unknown> {
    return (await this.http.send({ method: "GET", path: "/healthz", idempotent: true, options })).body;
  }

  /** GET /readyz, asked once (no retry): true on 2xx, false on 503, throws on anything else. */
  async ready(options?: CallOptions): Promise<boolean> {
    try {
      await this.http.send({ method: "GET", path: "/readyz", idempotent: false, options });
      return true;
    } catch (err) {
      if ((err as { status?: unknown }).status === 503) return false;
      throw err;
    }
  }

  /** GET /metrics: Prometheus text. */
  async metrics(options?: CallOptions): Promise<string> {
    const body = (await this.http.send({ method: "GET", path: "/metrics", idempotent: true, options })).body;
    return typeof body === "string" ? body : JSON.stringify(body);
  }

  /** GET /openapi.json. */
  async openapi(options?: CallOptions): Promise<unknown> {
    return (await this.http.send({ method: "GET", path: "/openapi.json", idempotent: true, options })).body;
  }
}

async function sendOperation(http: Transport, op: AnyOperation, request: WireRequest): Promise<unknown> {
  const { options } = request;
  const headers = Object.entries(request.headers ?? {}).filter((entry): entry is [string, string] => entry[1] !== undefined);
  const reply = await http.send({
    method: op.method,
    path: fillPath(op.path, request.params),
    query: request.query as Record<string, string | number | undefined>,
    body: request.body,
    headers: Object.fromEntries(headers),
    idempotent: typeof op.retry === "function" ? op.retry(request) : op.retry,
    extraTimeoutMs: (op.waitSeconds?.(request) ?? 0) * 1000,
    ...(options
      ? {
          options: {
            ...(options.signal ? { signal: options.signal } : {}),
            ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
          },
        }
      : {}),
  });
  return op.read(reply);
}
