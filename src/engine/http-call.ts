// One HTTP-target call and what its answer means (docs/api.md, "HTTP
// targets"): 2xx success; 429 and 503 throttled, honouring Retry-After in
// seconds or as an HTTP date (capped); 408, 5xx, timeouts, resets and DNS
// errors transient; redirects are not followed (recorded with their
// location); other 4xx permanent. The status, the duration and the first
// 4 KiB of the response body are kept; the body is read up to 64 KiB (so a
// small body keeps the connection reusable), then the connection is cut.

import { errors as undiciErrors, request, type Dispatcher } from "undici";
import type { ErrorRecord } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import type { CallHealth } from "./circuit-breaker.js";
import { EgressRefused } from "./egress.js";
import { msOfSeconds } from "../core/time.js";

/** A Retry-After further away than this is cut to it. */
export const MAX_RETRY_AFTER_SECONDS = 3600;

export interface CallInput {
  url: string;
  method: string;
  headers: Record<string, string>;
  /** Absent for GET. */
  body: string | undefined;
  timeoutMs: number;
  /** The job's timeoutSeconds, for the message of a timed-out call. */
  timeoutSeconds: number;
  /** Aborted when the runner stops. */
  stop: AbortSignal;
  dispatcher: Dispatcher;
  clock: Clock;
  maxResponseBytes: number;
  keptBodyBytes: number;
}

export type FailRecord = ErrorRecord & { timedOut?: boolean };

export interface CallOutcome {
  /** Null when the call succeeded. */
  error: FailRecord | null;
  /** The success record (the execution's result). */
  result: Record<string, unknown> | null;
  /** What the call says about the origin, for its circuit breaker. */
  health: CallHealth;
  retryAfterMs?: number;
  /** Outcome class for metrics: success, throttled, transient, permanent, redirect, timeout, network, refused, aborted. */
  kind: string;
  status: number | null;
  durationMs: number;
}

export async function callTarget(input: CallInput): Promise<CallOutcome> {
  const started = input.clock.now();
  const controller = new AbortController();
  let timedOut = false;
  const timer = input.clock.setTimer(() => {
    timedOut = true;
    controller.abort(new Error("timeout"));
  }, input.timeoutMs);
  const onStop = () => controller.abort(new Error("stopping"));
  input.stop.addEventListener("abort", onStop, { once: true });
  const elapsed = () => input.clock.now() - started;
  try {
    const res = await request(input.url, {
      method: input.method as Dispatcher.HttpMethod,
      headers: input.headers,
      body: input.body,
      signal: controller.signal,
      dispatcher: input.dispatcher,
    });
    const read = await readLimited(res.body, input.maxResponseBytes);
    const body = read.text.slice(0, input.keptBodyBytes);
    const durationMs = elapsed();
    const facts = { status: res.statusCode, durationMs, ...(body ? { body } : {}), ...(read.truncated ? { bodyTruncated: true } : {}) };
    const error = classify(res.statusCode, res.headers, input.clock.now());
    if (!error) return { error: null, result: facts, health: "healthy", kind: "success", status: res.statusCode, durationMs };
    const { retryAfterSeconds } = error;
    return {
      error: { ...error, ...facts },
      result: null,
      health: error.class === "throttled" || (error.class === "transient" && !("location" in error)) ? "unhealthy" : "healthy",
      ...(retryAfterSeconds !== undefined ? { retryAfterMs: msOfSeconds(retryAfterSeconds) } : {}),
      kind: "location" in error ? "redirect" : (error.class ?? "transient"),
      status: res.statusCode,
      durationMs,
    };
  } catch (err) {
    const durationMs = elapsed();
    if (timedOut) {
      return {
        error: { message: `call ran past timeoutSeconds (${input.timeoutSeconds} s); aborted`, class: "transient", timedOut: true, durationMs },
        result: null,
        health: "unhealthy",
        kind: "timeout",
        status: null,
        durationMs,
      };
    }
    if (input.stop.aborted) {
      return {
        error: { message: "call aborted: the server is stopping", class: "transient", durationMs },
        result: null,
        health: "unknown",
        kind: "aborted",
        status: null,
        durationMs,
      };
    }
    if (err instanceof EgressRefused || (err as { cause?: unknown })?.cause instanceof EgressRefused) {
      const refused = err instanceof EgressRefused ? err : (err as { cause: EgressRefused }).cause;
      return {
        error: { message: refused.message, class: "permanent", code: refused.code },
        result: null,
        health: "unknown",
        kind: "refused",
        status: null,
        durationMs,
      };
    }
    const code = errorCode(err);
    return {
      error: { message: `request failed: ${describe(err)}`, class: "transient", ...(code ? { code } : {}), durationMs },
      result: null,
      health: "unhealthy",
      kind: "network",
      status: null,
      durationMs,
    };
  } finally {
    timer.cancel();
    input.stop.removeEventListener("abort", onStop);
  }
}

/** The error record of an answer, or null for 2xx. `now` dates an HTTP-date Retry-After. */
export function classify(status: number, headers: Record<string, string | string[] | undefined>, now: number): ErrorRecord | null {
  if (status >= 200 && status < 300) return null;
  if (status === 429 || status === 503) {
    const retryAfterSeconds = parseRetryAfter(headers["retry-after"], now);
    return { message: `HTTP ${status}`, class: "throttled", ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) };
  }
  if (status >= 300 && status < 400) {
    const location = first(headers.location) ?? null;
    return { message: `HTTP ${status}: redirect to ${location ?? "(no location)"} not followed`, class: "transient", location };
  }
  if (status === 408 || status >= 500) return { message: `HTTP ${status}`, class: "transient" };
  return { message: `HTTP ${status}`, class: "permanent" };
}

/** Retry-After in seconds ("120") or as an HTTP date, capped at MAX_RETRY_AFTER_SECONDS; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const v = first(value)?.trim();
  if (!v) return undefined;
  let seconds: number;
  if (/^\d+$/.test(v)) seconds = Number(v);
  else {
    const at = Date.parse(v);
    if (!Number.isFinite(at)) return undefined;
    seconds = Math.max(0, Math.ceil((at - now) / 1000));
  }
  return Math.min(seconds, MAX_RETRY_AFTER_SECONDS);
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Reads at most `limit` bytes of a body. Past the limit the stream is
 * destroyed, which closes the connection: a 10 MB answer costs one chunk of
 * memory, not 10 MB.
 */
export async function readLimited(
  body: AsyncIterable<Buffer> & { destroy(): unknown },
  limit: number,
): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of body) {
    const room = limit - size;
    if (chunk.length > room) {
      if (room > 0) chunks.push(chunk.subarray(0, room));
      size = limit;
      truncated = true;
      body.destroy();
      break;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { text: Buffer.concat(chunks).toString("utf8"), truncated };
}

function errorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  const code = typeof e?.code === "string" ? e.code : typeof e?.cause?.code === "string" ? e.cause.code : undefined;
  return code;
}

function describe(err: unknown): string {
  const code = errorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof undiciErrors.UndiciError || code) return code && !message.includes(code) ? `${code}: ${message}` : message;
  return message;
}
