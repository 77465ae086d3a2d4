// The delivery of one HTTP-target callback: the request built from the
// leased execution (body, method, the contract's headers and the job's own),
// signed with its tenant's secrets (docs/http-targets.md, "Signing"), traced
// when tracing is on, and sent by callTarget (http-call.ts, which classifies
// the answer). Apart from the runner (http-target.ts), which decides when a
// call may go out; this is what goes out.

import { type HttpTarget, type SigningKeys, signatureHeader } from "@duetime/sdk/contract";
import type { Dispatcher } from "undici";
import type { Clock } from "../core/clock.js";
import { type StoredRef, storedRefOf } from "../core/payload-refs.js";
import type { LeasedRow } from "../store/store.js";
import { HTTP_POOL } from "../store/store.js";
import { DELIVERY_HEADERS, deliveryHeaders } from "./delivery-headers.js";
import { callTarget, type CallOutcome } from "./http-call.js";
import type { Tracing } from "./tracing.js";

/** What every call of a runner shares. */
export interface DeliveryContext {
  keys: SigningKeys;
  clock: Clock;
  /** Null while tracing is off. */
  tracing: Tracing | null;
  /** Aborted when the runner stops. */
  stop: AbortSignal;
  dispatcher: Dispatcher;
  maxResponseBytes: number;
  keptBodyBytes: number;
  /** A payload kept by reference: its JSON text, read from the blob store. */
  payloadText?: ((ref: StoredRef) => Promise<string>) | undefined;
}

/** Sends one leased execution's call, timeoutMs at most; the outcome says what the answer means. */
export async function deliver(ctx: DeliveryContext, row: LeasedRow, target: HttpTarget, timeoutMs: number): Promise<CallOutcome> {
  const body = target.method === "GET" ? undefined : await bodyOf(ctx, row.payload);
  const method = target.method ?? "POST";
  const headers = signedHeaders(ctx, row, target, body ?? "");
  // Tracing on: the call is a span of the job's trace, and the receiver continues it from the traceparent header.
  const tracing = ctx.tracing;
  const traced = tracing?.httpCallStarted(row, HTTP_POOL, method, target.url);
  if (traced) headers.traceparent = traced.traceparent;
  const outcome = await callTarget({
    url: target.url,
    method,
    headers,
    body,
    timeoutMs,
    timeoutSeconds: row.timeoutSeconds,
    stop: ctx.stop,
    dispatcher: ctx.dispatcher,
    clock: ctx.clock,
    maxResponseBytes: ctx.maxResponseBytes,
    keptBodyBytes: ctx.keptBodyBytes,
  });
  if (traced) tracing!.httpCallEnded(traced.span, outcome);
  return outcome;
}

/** The payload as the body: its JSON text, read from the blob store when it is kept by reference (the receiver sees no difference). */
async function bodyOf(ctx: DeliveryContext, payload: unknown): Promise<string> {
  const ref = storedRefOf(payload);
  if (!ref) return JSON.stringify(payload ?? null);
  if (!ctx.payloadText) throw new Error(`the payload is kept by reference (blob ${ref.blobId}) and this runner cannot read blobs`);
  return ctx.payloadText(ref);
}

/** The contract's headers, the job's own (never over a reserved one), the timestamp and, when the tenant has secrets, the signature. */
function signedHeaders(ctx: DeliveryContext, row: LeasedRow, target: HttpTarget, body: string): Record<string, string> {
  const timestamp = String(Math.floor(ctx.clock.now() / 1000));
  const headers = deliveryHeaders(row, target.headers, RESERVED_HEADERS);
  headers["duetime-timestamp"] = timestamp;
  const secrets = ctx.keys.forTenant(row.tenantId);
  if (secrets.length > 0) headers["duetime-signature"] = signatureHeader(secrets, timestamp, body);
  return headers;
}

/** Headers the contract sets; a job's own headers cannot override them. */
const RESERVED_HEADERS = new Set([
  ...DELIVERY_HEADERS,
  "content-length",
  "transfer-encoding",
  "connection",
  "host",
  "duetime-timestamp",
  "duetime-signature",
]);
