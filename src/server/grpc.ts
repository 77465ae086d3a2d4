// The worker protocol over gRPC (proto/duetime/v1/worker.proto): each RPC is
// an operation of the same table the HTTP routes serve (routes.ts), so the
// keys, roles, tenants, validation, limits and fencing are the HTTP ones.
// The request message becomes the operation's wire request (its params and
// body, camel-cased by proto-loader), the answer the response message.
//
// Errors follow the catalog (core/errors.ts), as grpc-wire.ts maps them. The
// Work stream is grpc-work.ts.

import { fileURLToPath } from "node:url";
import { operationNamed, type OperationName, type WireRequest } from "@duetime/sdk/contract";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { type Clock, systemClock } from "../core/clock.js";
import { DuetimeError } from "../core/errors.js";
import { callService, checkRequest } from "../engine/operations.js";
import type { Service } from "../engine/service.js";
import { authorize, type KeyRing, requestContext } from "./auth.js";
import {
  ackResult,
  attemptError,
  attemptFence,
  completeItem,
  defined,
  executionMessage,
  failItem,
  type Json,
  list,
  parseJson,
  toGrpcError,
} from "./grpc-wire.js";
import { WorkStream, withPayloadsInline } from "./grpc-work.js";
import { DEFAULT_REQUEST_DEADLINE_MS, withDeadline } from "./routes.js";
import { DEFAULT_BODY_LIMIT_BYTES } from "./app.js";

export const WORKER_PROTO = fileURLToPath(new URL("../../proto/duetime/v1/worker.proto", import.meta.url));

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
        executions: items.map(executionMessage),
        acks: (acks ?? []).map(ackResult),
      };
    },
  },
  Heartbeat: {
    op: "heartbeat",
    request: (m) => ({ params: { executionId: String(m.executionId ?? "") }, body: defined({ ...attemptFence(m), leaseSeconds: m.leaseSeconds }) }),
    response: (answer) => answer as Json,
  },
  Complete: {
    op: "complete",
    request: (m) => ({
      params: { executionId: String(m.executionId ?? "") },
      body: defined({ ...attemptFence(m), result: parseJson(m.resultJson, "result_json") }),
    }),
    response: (answer) => answer as Json,
  },
  Fail: {
    op: "fail",
    request: (m) => ({
      params: { executionId: String(m.executionId ?? "") },
      body: defined({ ...attemptFence(m), error: attemptError(m.error as Json) }),
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
  /** Serve TLS with this certificate chain and key (PEM); absent: plaintext. */
  tls?: { certChain: Buffer; privateKey: Buffer };
  /** The largest request message, as the HTTP body limit (default 1 MiB); larger ones are refused with RESOURCE_EXHAUSTED. */
  maxMessageBytes?: number;
  /** A call's deadline in ms (default 10 s; a long poll's is its wait_seconds more); past it, UNAVAILABLE. */
  requestDeadlineMs?: number;
  /** Told of internal errors (a bug: the client got INTERNAL and nothing else). */
  onInternalError?: (error: unknown, rpc: string) => void;
  /** The Work streams' timers (default the system clock). */
  clock?: Clock;
}

export interface RunningGrpcServer {
  port: number;
  /** Stops taking calls, lets those in flight finish (at most graceMs), then cancels the rest. */
  close(graceMs?: number): Promise<void>;
}

export async function startGrpcServer(o: GrpcServerOptions): Promise<RunningGrpcServer> {
  const definition = protoLoader.loadSync(WORKER_PROTO, { keepCase: false, longs: Number, enums: String, defaults: false, oneofs: false });
  const worker = definition["duetime.v1.WorkerService"] as grpc.ServiceDefinition;
  const server = new grpc.Server({ "grpc.max_receive_message_length": o.maxMessageBytes ?? DEFAULT_BODY_LIMIT_BYTES });
  const inflight = new Set<AbortController>();
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const [name, rpc] of Object.entries(RPCS)) handlers[name] = unaryHandler(o, name, rpc, inflight);
  const streams = new Set<WorkStream>();
  const streamDeps = { service: o.service, keyRing: o.keyRing, onInternalError: o.onInternalError ?? (() => {}), clock: o.clock ?? systemClock };
  handlers.Work = (call: grpc.ServerDuplexStream<Json, Json>) => {
    const stream = new WorkStream(call, streamDeps);
    streams.add(stream);
    call.on("close", () => streams.delete(stream));
  };
  server.addService(worker, handlers);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${o.host}:${o.port}`, credentials(o.tls), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    port,
    close: async (graceMs = 5_000) => {
      // Work streams end cleanly (OK, acknowledgements in hand written) rather than wait out their long polls.
      await Promise.all([...streams].map((s) => s.close()));
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          for (const c of inflight) c.abort(new DuetimeError("UNAVAILABLE", "the server is shutting down"));
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
    },
  };
}

function credentials(tls: GrpcServerOptions["tls"]): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  return grpc.ServerCredentials.createSsl(null, [{ cert_chain: tls.certChain, private_key: tls.privateKey }], false);
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
        const ctx = requestContext(principal, controller.signal);
        const checked = checkRequest(op, rpc.request(call.request));
        const deadlineMs = (o.requestDeadlineMs ?? DEFAULT_REQUEST_DEADLINE_MS) + 1000 * (op.waitSeconds?.(checked) ?? 0);
        const answer = await withDeadline(() => callService(o.service, rpc.op, ctx, checked), deadlineMs, controller);
        // A gRPC worker has no route to fetch a payload kept by reference: its leased executions carry every payload inline.
        if (rpc.op === "lease") {
          const leased = answer as { items: Json[] };
          leased.items = await withPayloadsInline(o.service, ctx, leased.items);
        }
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
