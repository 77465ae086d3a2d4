// The client's transport: one JSON request over undici, retried with backoff
// when the call is safe to repeat, and every failure turned into a
// DuetimeApiError. The typed routes live in client.ts.

import { Agent, request, type Dispatcher } from "undici";
import { ERROR_CODES, type ErrorDetails } from "./error-codes.js";
import { backoffDelay, parseRetryAfter, sleep, type BackoffPolicy } from "./backoff.js";
import { DuetimeApiError } from "./errors.js";

import type { CallOptions, HttpMethod } from "./operations.js";

export type { CallOptions, HttpMethod } from "./operations.js";

export interface RetryInfo {
  method: HttpMethod;
  path: string;
  /** 1 for the first retry. */
  retry: number;
  delayMs: number;
  error: DuetimeApiError;
}

export interface TransportOptions {
  url: string;
  token?: string;
  timeoutMs: number;
  retries: number;
  backoff: BackoffPolicy;
  /** A Retry-After longer than this is not waited for: the call fails with retryAfterSeconds set. */
  maxRetryAfterMs: number;
  dispatcher?: Dispatcher;
  userAgent: string;
  onRetry?: (info: RetryInfo) => void;
}

export interface HttpCall {
  method: HttpMethod;
  /** Path with ids already encoded, e.g. `/v1/jobs/abc:pause`. */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** Whether repeating the call is harmless (operations.ts says which are, client.ts why). */
  idempotent: boolean;
  /** Added to the per-attempt timeout (a long poll's wait). */
  extraTimeoutMs?: number;
  options?: CallOptions;
}

export interface HttpReply {
  status: number;
  body: unknown;
}

/** Statuses worth retrying for an idempotent call: backpressure, not ready, and gateway failures. */
const RETRY_STATUSES = new Set([429, 502, 503, 504]);
/** 429 means the server refused before doing anything (a quota, backpressure): any call may be sent again. */
const NOTHING_DONE = 429;

export class Transport {
  private readonly base: URL;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;

  constructor(private readonly options: TransportOptions) {
    this.base = new URL(options.url);
    if (this.base.protocol !== "http:" && this.base.protocol !== "https:") {
      throw new TypeError(`DuetimeClient: url must be http or https, got ${JSON.stringify(options.url)}`);
    }
    this.ownsDispatcher = options.dispatcher === undefined;
    // Keep-alive pool; long polls hold a connection each, so no per-origin cap.
    this.dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 60_000 });
  }

  get url(): string {
    return this.base.href.replace(/\/$/, "");
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  async send(call: HttpCall): Promise<HttpReply> {
    const signal = call.options?.signal;
    for (let retry = 0; ; retry++) {
      let error: DuetimeApiError;
      try {
        const reply = await this.once(call);
        if (reply.status >= 200 && reply.status < 300) return reply;
        error = httpError(call, reply.status, reply.body, reply.retryAfterSeconds);
        if (!RETRY_STATUSES.has(reply.status) || (!call.idempotent && reply.status !== NOTHING_DONE)) throw error;
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        if (err instanceof DuetimeApiError && err.status !== 0) throw err;
        error = err instanceof DuetimeApiError ? err : networkError(call, err);
        if (!call.idempotent) throw error;
      }
      if (retry >= this.options.retries) throw error;
      const waitMs = this.retryDelay(retry, error);
      if (waitMs === undefined) throw error;
      this.options.onRetry?.({ method: call.method, path: call.path, retry: retry + 1, delayMs: waitMs, error });
      await sleep(waitMs, signal);
    }
  }

  private retryDelay(retry: number, error: DuetimeApiError): number | undefined {
    const computed = backoffDelay(retry, this.options.backoff);
    if (error.retryAfterSeconds === undefined) return computed;
    const asked = error.retryAfterSeconds * 1000;
    return asked > this.options.maxRetryAfterMs ? undefined : Math.max(asked, computed);
  }

  private async once(call: HttpCall): Promise<HttpReply & { retryAfterSeconds?: number }> {
    const url = new URL(this.base.pathname.replace(/\/$/, "") + call.path, this.base);
    for (const [key, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = { accept: "application/json", "user-agent": this.options.userAgent, ...call.headers };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    let body: string | undefined;
    if (call.body !== undefined) {
      body = JSON.stringify(call.body);
      headers["content-type"] = "application/json";
    }
    const timeoutMs = (call.options?.timeoutMs ?? this.options.timeoutMs) + (call.extraTimeoutMs ?? 0);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = call.options?.signal ? AbortSignal.any([call.options.signal, timeout]) : timeout;
    try {
      const res = await request(url, { method: call.method, headers, body, dispatcher: this.dispatcher, signal });
      const text = await res.body.text();
      const type = String(res.headers["content-type"] ?? "");
      const reply: HttpReply & { retryAfterSeconds?: number } = { status: res.statusCode, body: parseBody(text, type) };
      const retryAfter = parseRetryAfter(res.headers["retry-after"], Date.now());
      if (retryAfter !== undefined) reply.retryAfterSeconds = retryAfter;
      if (reply.status >= 200 && reply.status < 300 && reply.body instanceof UnreadableBody) {
        throw new DuetimeApiError("INTERNAL", `${call.method} ${call.path}: the server answered ${reply.status} with a body that is not JSON`, {
          status: reply.status,
        });
      }
      return reply;
    } catch (err) {
      if (timeout.aborted && !call.options?.signal?.aborted) {
        throw networkError(call, new Error(`no answer within ${timeoutMs} ms`, { cause: err }));
      }
      throw err;
    }
  }
}

/** A body that should have been JSON and was not; kept so error messages can quote it. */
class UnreadableBody {
  constructor(readonly text: string) {}
}

function parseBody(text: string, contentType: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return contentType.includes("json") ? new UnreadableBody(text) : text;
  }
}

const CODE_BY_STATUS = new Map<number, string>([
  ...Object.entries(ERROR_CODES)
    .filter(([, v]) => v.status !== 409)
    .map(([code, v]) => [v.status, code] as [number, string]),
  [502, "UNAVAILABLE"],
  [504, "UNAVAILABLE"],
]);

function httpError(call: HttpCall, status: number, body: unknown, retryAfterSeconds: number | undefined): DuetimeApiError {
  const envelope = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
  const fallbackCode = CODE_BY_STATUS.get(status) ?? `HTTP_${status}`;
  const code = typeof envelope?.code === "string" && envelope.code !== "" ? envelope.code : fallbackCode;
  const text = body instanceof UnreadableBody ? body.text : typeof body === "string" ? body : "";
  const message =
    typeof envelope?.message === "string"
      ? envelope.message
      : `${call.method} ${call.path} answered ${status}${text ? `: ${text.slice(0, 200)}` : ""}`;
  const details = envelope?.details !== null && typeof envelope?.details === "object" ? (envelope.details as ErrorDetails) : undefined;
  return new DuetimeApiError(code, message, {
    status,
    ...(details ? { details } : {}),
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
  });
}

function networkError(call: HttpCall, err: unknown): DuetimeApiError {
  const cause = err as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === "string" ? cause.code : "";
  const text = typeof cause?.message === "string" ? cause.message : "";
  const reason = (text.includes(code) ? text : `${code} ${text}`).trim() || String(err);
  return new DuetimeApiError("UNAVAILABLE", `${call.method} ${call.path} failed: ${reason}`, { status: 0, cause: err });
}
