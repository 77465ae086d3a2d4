// The gRPC side of the wire (proto/duetime/v1/worker.proto): errors as gRPC
// statuses with their duetime code in the rich status details, and the
// messages' fields as the operations' JSON (proto-loader camel-cases them).
// grpc.ts serves the unary calls with them, grpc-work.ts the Work stream.
//
// Errors: each catalog code (core/errors.ts) has its gRPC status
// (GRPC_STATUS), and the duetime code travels both as a google.rpc.ErrorInfo
// in the rich status details (grpc-status-details-bin, which Go's and
// Python's status packages decode) and as the trailing metadata
// duetime-error-code (with duetime-error-field when a field is named).

import type { ErrorCode } from "@duetime/sdk/contract";
import * as grpc from "@grpc/grpc-js";
import protobuf from "protobufjs";
import { invalidArgument } from "../core/errors.js";
import { toDuetimeError } from "./http-errors.js";

/** The gRPC status of each catalog code: the one gRPC's own mapping gives its HTTP status. */
const GRPC_STATUS: Record<ErrorCode, grpc.status> = {
  INVALID_ARGUMENT: grpc.status.INVALID_ARGUMENT,
  UNAUTHENTICATED: grpc.status.UNAUTHENTICATED,
  PERMISSION_DENIED: grpc.status.PERMISSION_DENIED,
  NOT_FOUND: grpc.status.NOT_FOUND,
  IDEMPOTENCY_MISMATCH: grpc.status.FAILED_PRECONDITION,
  LEASE_LOST: grpc.status.FAILED_PRECONDITION,
  INVALID_STATE: grpc.status.FAILED_PRECONDITION,
  VERSION_CONFLICT: grpc.status.ABORTED,
  PAYLOAD_TOO_LARGE: grpc.status.RESOURCE_EXHAUSTED,
  RESOURCE_EXHAUSTED: grpc.status.RESOURCE_EXHAUSTED,
  INTERNAL: grpc.status.INTERNAL,
  STORE_UNAVAILABLE: grpc.status.UNAVAILABLE,
  UNAVAILABLE: grpc.status.UNAVAILABLE,
};

/** google.rpc.Status and ErrorInfo, as the rich error model encodes them (googleapis' google/rpc/*.proto). */
const RICH = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        protobuf: { nested: { Any: { fields: { type_url: { type: "string", id: 1 }, value: { type: "bytes", id: 2 } } } } },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: "int32", id: 1 },
                message: { type: "string", id: 2 },
                details: { rule: "repeated", type: "google.protobuf.Any", id: 3 },
              },
            },
            ErrorInfo: {
              fields: {
                reason: { type: "string", id: 1 },
                domain: { type: "string", id: 2 },
                // A map field: protobufjs's IField type has no keyType.
                metadata: { keyType: "string", type: "string", id: 3 } as protobuf.IField,
              },
            },
          },
        },
      },
    },
  },
});
const StatusType = RICH.lookupType("google.rpc.Status");
const ErrorInfoType = RICH.lookupType("google.rpc.ErrorInfo");
export const ERROR_DOMAIN = "duetime.dev";

/** A thrown value as the gRPC error the client sees (internal errors reveal nothing). */
export function toGrpcError(thrown: unknown): { error: grpc.ServiceError; internal: boolean } {
  const { error, internal } = toDuetimeError(thrown, Number.POSITIVE_INFINITY);
  const field = typeof error.details?.field === "string" ? snakePath(error.details.field) : undefined;
  const message = field !== undefined ? error.message.replace(/^[^:]+:/, `${field}:`) : error.message;
  const code = GRPC_STATUS[error.code];
  const info = ErrorInfoType.encode({ reason: error.code, domain: ERROR_DOMAIN, metadata: field !== undefined ? { field } : {} }).finish();
  const status = StatusType.encode({ code, message, details: [{ type_url: "type.googleapis.com/google.rpc.ErrorInfo", value: info }] }).finish();
  const metadata = new grpc.Metadata();
  metadata.set("duetime-error-code", error.code);
  if (field !== undefined) metadata.set("duetime-error-field", field);
  metadata.set("grpc-status-details-bin", Buffer.from(status));
  const serviceError = Object.assign(new Error(message), { code, details: message, metadata }) as grpc.ServiceError;
  return { error: serviceError, internal };
}

/** "complete.0.executionId" → "complete.0.execution_id": fields as the .proto names them. */
function snakePath(path: string): string {
  return path
    .split(".")
    .map((part) => PROTO_FIELD[part] ?? part.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`))
    .join(".");
}
/** Where the .proto names a field other than by its JSON name in snake case. */
const PROTO_FIELD: Record<string, string> = { result: "result_json", payload: "payload_json" };

// ---- messages ⇄ the operations' wire requests and answers

export type Json = Record<string, unknown>;

const ERROR_CLASSES: Record<string, string | undefined> = {
  ERROR_CLASS_UNSPECIFIED: undefined,
  ERROR_CLASS_TRANSIENT: "transient",
  ERROR_CLASS_PERMANENT: "permanent",
  ERROR_CLASS_THROTTLED: "throttled",
};

/** JSON text from a message field as the value the HTTP body would carry; a field that is not JSON is a 400 naming it. */
export function parseJson(text: unknown, field: string): unknown {
  if (typeof text !== "string") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw invalidArgument(field, "must be JSON text");
  }
}

/** Only the fields the message set: absent, the HTTP body would not have them either (so the schema's defaults and "required" apply). */
export function defined(fields: Json): Json {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

export const attemptError = (e: Json | undefined): Json | undefined =>
  // proto3 sends no empty string: an absent message is "" (allowed over HTTP too).
  e === undefined ? undefined : defined({ message: e.message ?? "", class: ERROR_CLASSES[String(e.class)], retryAfterSeconds: e.retryAfterSeconds });

/**
 * A message's attempt and lease token (lease_token) as the HTTP body's
 * `attempt` and `leaseToken`: every call about an attempt takes them from here.
 * An empty or absent lease_token is none (the call is fenced by its attempt alone).
 */
export const attemptFence = (m: Json): Json =>
  defined({ attempt: m.attempt, leaseToken: typeof m.leaseToken === "string" && m.leaseToken !== "" ? m.leaseToken : undefined });

export const completeItem = (item: Json, field: string): Json =>
  defined({ executionId: item.executionId, ...attemptFence(item), result: parseJson(item.resultJson, `${field}.result_json`) });

export const failItem = (item: Json): Json =>
  defined({ executionId: item.executionId, ...attemptFence(item), error: attemptError(item.error as Json) });

export const list = (items: unknown): Json[] => (Array.isArray(items) ? (items as Json[]) : []);

export const ackResult = (a: Json): Json => {
  const error = a.error as { code?: string; message?: string } | undefined;
  return defined({
    executionId: a.executionId,
    attempt: a.attempt,
    status: a.status,
    state: a.state,
    retryAt: a.retryAt,
    dead: a.dead,
    errorCode: error?.code,
    errorMessage: error?.message,
  });
};

/** A leased execution as the Execution message: its payload as JSON text, its lease token (when the lease gave one) as lease_token. */
export const executionMessage = (e: Json): Json => ({
  ...e,
  payload: undefined,
  payloadJson: JSON.stringify(e.payload ?? null),
  leaseToken: e.leaseToken,
  traceparent: e.traceparent ?? "",
});
