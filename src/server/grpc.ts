// The worker protocol over gRPC (proto/duetime/v1/worker.proto): each RPC is
// an operation of the same table the HTTP routes serve (routes.ts), so the
// keys, roles, tenants, validation, limits and fencing are the HTTP ones.
// The request message becomes the operation's wire request (its params and
// body, camel-cased by proto-loader), the answer the response message.
//
// Errors follow the catalog (core/errors.ts): each code has its gRPC status
// (GRPC_STATUS), and the duetime code travels both as a google.rpc.ErrorInfo
// in the rich status details (grpc-status-details-bin, which Go's and
// Python's status packages decode) and as the trailing metadata
// duetime-error-code (with duetime-error-field when a field is named).

import { fileURLToPath } from "node:url";
import { type ErrorCode, operationNamed, type OperationName, type WireRequest } from "@duetime/sdk/contract";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";
import { DuetimeError, invalidArgument } from "../core/errors.js";
import { callService, checkRequest } from "../engine/operations.js";
import type { RequestContext, Service } from "../engine/service.js";
import { authorize, type KeyRing } from "./auth.js";
import { toDuetimeError } from "./http-errors.js";
import { DEFAULT_REQUEST_DEADLINE_MS, withDeadline } from "./routes.js";

export const WORKER_PROTO = fileURLToPath(new URL("../../proto/duetime/v1/worker.proto", import.meta.url));

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

type Json = Record<string, unknown>;

const ERROR_CLASSES: Record<string, string | undefined> = {
  ERROR_CLASS_UNSPECIFIED: undefined,
  ERROR_CLASS_TRANSIENT: "transient",
  ERROR_CLASS_PERMANENT: "permanent",
  ERROR_CLASS_THROTTLED: "throttled",
};

/** JSON text from a message field as the value the HTTP body would carry; a field that is not JSON is a 400 naming it. */
function parseJson(text: unknown, field: string): unknown {
  if (typeof text !== "string") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw invalidArgument(field, "must be JSON text");
  }
}

/** Only the fields the message set: absent, the HTTP body would not have them either (so the schema's defaults and "required" apply). */
function defined(fields: Json): Json {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

const attemptError = (e: Json | undefined): Json | undefined =>
  // proto3 sends no empty string: an absent message is "" (allowed over HTTP too).
  e === undefined ? undefined : defined({ message: e.message ?? "", class: ERROR_CLASSES[String(e.class)], retryAfterSeconds: e.retryAfterSeconds });

const completeItem = (item: Json, field: string): Json =>
  defined({ executionId: item.executionId, attempt: item.attempt, result: parseJson(item.resultJson, `${field}.result_json`) });

const failItem = (item: Json): Json => defined({ executionId: item.executionId, attempt: item.attempt, error: attemptError(item.error as Json) });

const list = (items: unknown): Json[] => (Array.isArray(items) ? (items as Json[]) : []);

const ackResult = (a: Json): Json => {
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

interface Rpc {
  op: OperationName;
  request(message: Json): WireRequest;
  response(answer: unknown): Json;
}

const RPCS: Record<string, Rpc> = {
  Lease: {
    op: "lease",
    request: (m) => {
      const complete = list(m.complete).map((item, i) => completeItem(item, `complete.${i}`));
      const fail = list(m.fail).map(failItem);
      const body = defined({
        workerId: m.workerId,
        max: m.max,
        leaseSeconds: m.leaseSeconds,
        waitSeconds: m.waitSeconds,
        complete: complete.length > 0 ? complete : undefined,
        fail: fail.length > 0 ? fail : undefined,
      });
      return { params: { pool: String(m.pool ?? "") }, body };
    },
    response: (answer) => {
      const { items, acks } = answer as { items: Json[]; acks?: Json[] };
      return {
        executions: items.map((e) => ({
          ...e,
          payload: undefined,
          payloadJson: JSON.stringify(e.payload ?? null),
          traceparent: e.traceparent ?? "",
        })),
        acks: (acks ?? []).map(ackResult),
      };
    },
  },
  Heartbeat: {
    op: "heartbeat",
    request: (m) => ({ params: { executionId: String(m.executionId ?? "") }, body: defined({ attempt: m.attempt, leaseSeconds: m.leaseSeconds }) }),
    response: (answer) => answer as Json,
  },
  Complete: {
    op: "complete",
    request: (m) => ({
      params: { executionId: String(m.executionId ?? "") },
      body: defined({ attempt: m.attempt, result: parseJson(m.resultJson, "result_json") }),
    }),
    response: (answer) => answer as Json,
  },
  Fail: {
    op: "fail",
    request: (m) => ({
      params: { executionId: String(m.executionId ?? "") },
      body: defined({ attempt: m.attempt, error: attemptError(m.error as Json) }),
    }),
    response: (answer) => answer as Json,
  },
  CompleteBatch: {
    op: "completeMany",
    request: (m) => ({ body: { items: list(m.items).map((item, i) => completeItem(item, `items.${i}`)) } }),
    response: (answer) => ({ items: (answer as Json[]).map(ackResult) }),
  },
  FailBatch: {
    op: "failMany",
    request: (m) => ({ body: { items: list(m.items).map(failItem) } }),
    response: (answer) => ({ items: (answer as Json[]).map(ackResult) }),
  },
};

// ---- the server

export interface GrpcServerOptions {
  service: Service;
  /** The HTTP server's key ring: one cache of keys, invalidated by either side's key calls. */
  keyRing: KeyRing;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** A call's deadline in ms (default 10 s; a long poll's is its wait_seconds more); past it, UNAVAILABLE. */
  requestDeadlineMs?: number;
  /** Told of internal errors (a bug: the client got INTERNAL and nothing else). */
  onInternalError?: (error: unknown, rpc: string) => void;
}

export interface RunningGrpcServer {
  port: number;
  /** Stops taking calls, lets those in flight finish (at most graceMs), then cancels the rest. */
  close(graceMs?: number): Promise<void>;
}

export async function startGrpcServer(o: GrpcServerOptions): Promise<RunningGrpcServer> {
  const definition = protoLoader.loadSync(WORKER_PROTO, { keepCase: false, longs: Number, enums: String, defaults: false, oneofs: false });
  const worker = definition["duetime.v1.WorkerService"] as grpc.ServiceDefinition;
  const server = new grpc.Server();
  const inflight = new Set<AbortController>();
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const [name, rpc] of Object.entries(RPCS)) handlers[name] = unaryHandler(o, name, rpc, inflight);
  server.addService(worker, handlers);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${o.host}:${o.port}`, grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    port,
    close: (graceMs = 5_000) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          for (const c of inflight) c.abort(new DuetimeError("UNAVAILABLE", "the server is shutting down"));
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}

function unaryHandler(o: GrpcServerOptions, name: string, rpc: Rpc, inflight: Set<AbortController>): grpc.handleUnaryCall<Json, Json> {
  const op = operationNamed(rpc.op);
  const label = `gRPC duetime.v1.WorkerService/${name}`;
  return (call, callback) => {
    const controller = new AbortController();
    inflight.add(controller);
    call.on("cancelled", () => controller.abort(new DuetimeError("UNAVAILABLE", "client went away")));
    void (async () => {
      try {
        const authorization = call.metadata.get("authorization")[0];
        const principal = await o.keyRing.authenticate(typeof authorization === "string" ? authorization : undefined);
        authorize(principal, op.roles, label);
        const ctx: RequestContext = {
          tenantId: principal.tenantId,
          roles: principal.roles,
          actor: principal.actor,
          signal: controller.signal,
          ...(principal.bootstrap ? { bootstrap: true } : {}),
        };
        const checked = checkRequest(op, rpc.request(call.request));
        const deadlineMs = (o.requestDeadlineMs ?? DEFAULT_REQUEST_DEADLINE_MS) + 1000 * (op.waitSeconds?.(checked) ?? 0);
        const answer = await withDeadline(() => callService(o.service, rpc.op, ctx, checked), deadlineMs, controller);
        callback(null, rpc.response(answer));
      } catch (thrown) {
        const { error, internal } = toGrpcError(thrown);
        if (internal) o.onInternalError?.(thrown, name);
        callback(error);
      } finally {
        inflight.delete(controller);
      }
    })();
  };
}
