// The Work stream of proto/duetime/v1/worker.proto, from the worker's side:
// one bidirectional call that carries credit, acknowledgements and heartbeats
// up, and leased executions, their answers and cancel requests down. The
// Worker drives it when its transport is "grpc" (worker.ts); it answers the
// same heartbeat/completeMany/failMany calls as the HTTP client, each
// settled by the message the server sends back for it.
//
// @grpc/grpc-js and @grpc/proto-loader are optional peer dependencies,
// imported only when a gRPC worker starts: an HTTP-only user installs neither.

import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type * as Grpc from "@grpc/grpc-js";
import {
  type AckItem,
  type CompleteItem,
  type ErrorRecord,
  type FailItem,
  fenceOf,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type LeasedExecution,
} from "./api.js";
import type { PendingAcks } from "./acks.js";
import { DuetimeApiError } from "./errors.js";

export interface WorkStreamOptions {
  /** grpc://host:port (plaintext) or grpcs://host:port (TLS). */
  url: string;
  token?: string;
  /** PEM of the CA that signed a grpcs:// server's certificate (default: the system's roots). */
  ca?: string | Buffer;
  pool: string;
  workerId: string;
  leaseSeconds: number;
  onExecutions(jobs: LeasedExecution[]): void;
  onCancel(executionId: string, attempt: number): void;
}

type Json = Record<string, unknown>;
type Waiter<T> = { resolve(value: T): void; reject(error: Error): void };
type Loaded = { grpc: typeof Grpc; WorkerService: Grpc.ServiceClientConstructor };

// The package ships a copy beside dist/ (packages/sdk/proto, made by its
// build); in the repository the one at the root is read.
const PROTO = ["../proto/duetime/v1/worker.proto", "../../../proto/duetime/v1/worker.proto"]
  .map((path) => fileURLToPath(new URL(path, import.meta.url)))
  .find((path) => existsSync(path));

let loading: Promise<Loaded> | undefined;

/** grpc-js and the service definition, loaded once per process. */
function load(): Promise<Loaded> {
  loading ??= (async () => {
    let grpc: typeof Grpc;
    let protoLoader: typeof import("@grpc/proto-loader");
    try {
      grpc = await import("@grpc/grpc-js");
      protoLoader = await import("@grpc/proto-loader");
    } catch (error) {
      throw new Error('Worker: transport "grpc" needs @grpc/grpc-js and @grpc/proto-loader; npm install them beside @duetime/sdk', {
        cause: error,
      });
    }
    if (!PROTO) throw new Error("Worker: proto/duetime/v1/worker.proto is missing from @duetime/sdk's install");
    const definition = protoLoader.loadSync(PROTO, { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
    const root = grpc.loadPackageDefinition(definition) as unknown as { duetime: { v1: { WorkerService: Grpc.ServiceClientConstructor } } };
    return { grpc, WorkerService: root.duetime.v1.WorkerService };
  })();
  loading.catch(() => (loading = undefined));
  return loading;
}

/** The HTTP status a gRPC status stands for, as DuetimeApiError.status reports it. */
const HTTP_STATUS: Record<number, number> = { 3: 400, 5: 404, 7: 403, 8: 429, 9: 409, 14: 503, 16: 401 };

function apiError(error: Grpc.ServiceError): DuetimeApiError {
  const code = error.metadata?.get("duetime-error-code")[0];
  return new DuetimeApiError(typeof code === "string" ? code : error.code === 14 ? "UNAVAILABLE" : "INTERNAL", error.details || error.message, {
    status: HTTP_STATUS[error.code] ?? 0,
    cause: error,
  });
}

const ERROR_CLASS = { transient: "ERROR_CLASS_TRANSIENT", permanent: "ERROR_CLASS_PERMANENT", throttled: "ERROR_CLASS_THROTTLED" };

function attemptError(error: ErrorRecord): Json {
  const out: Json = { message: error.message, class: ERROR_CLASS[error.class ?? "transient"] };
  if (error.retryAfterSeconds !== undefined) out.retryAfterSeconds = error.retryAfterSeconds;
  return out;
}

function leasedExecution(e: Json): LeasedExecution {
  const job: LeasedExecution = {
    executionId: e.executionId as string,
    tenantId: e.tenantId as string,
    jobId: e.jobId as string,
    name: e.name as string,
    attempt: e.attempt as number,
    payload: JSON.parse((e.payloadJson as string) || "null"),
    scheduledFor: e.scheduledFor as string,
    leaseUntil: e.leaseUntil as string,
    timeoutSeconds: e.timeoutSeconds as number,
  };
  // lease_token is absent (or empty) when the lease gave none: the attempt alone fences it.
  if (e.leaseToken) job.leaseToken = e.leaseToken as string;
  if (e.traceparent) job.traceparent = e.traceparent as string;
  return job;
}

function ackItem(a: Json): AckItem {
  if (a.status === 200) {
    const item = { executionId: a.executionId, attempt: a.attempt, status: 200, state: a.state } as AckItem & Json;
    if (a.retryAt) item.retryAt = a.retryAt;
    if (a.dead) item.dead = true;
    return item;
  }
  return {
    executionId: a.executionId as string,
    attempt: a.attempt as number,
    status: a.status as 400,
    error: { code: a.errorCode as string, message: a.errorMessage as string },
  };
}

/** The response header by which a server says that it reads WorkCredit.acks. */
const CREDIT_ACKS_HEADER = "duetime-credit-acks";

const keyOf = (executionId: unknown, attempt: unknown) => `${String(executionId)}#${String(attempt)}`;

/** Acks as a WorkAcks message. */
function workAcks(acks: PendingAcks): Json {
  const out: Json = {};
  if (acks.complete.length > 0)
    out.complete = acks.complete.map((item) => ({
      ...fenceOf(item),
      ...(item.result === undefined ? {} : { resultJson: JSON.stringify(item.result) }),
    }));
  if (acks.fail.length > 0) out.fail = acks.fail.map((item) => ({ ...fenceOf(item), error: attemptError(item.error) }));
  return out;
}

/** One open Work stream. Made by WorkStream.open; ended by the server, by close(), or by a broken connection. */
export class WorkStream {
  /** Credit granted and not yet used by an execution. */
  outstanding = 0;
  /** Resolves when the stream is over: undefined when the server ended it with OK, else the error it ended with. */
  readonly ended: Promise<DuetimeApiError | undefined>;
  /** True once the server has sent anything: the stream got past its start. */
  heard = false;
  /** The server writes a WorkCredit's acks with the lease it starts (it says so in its response headers); an older one ignores them. */
  private creditTakesAcks = false;
  private readonly acks = new Map<string, Waiter<AckItem>[]>();
  private readonly beats = new Map<string, Waiter<HeartbeatResponse>[]>();
  private over = false;

  private constructor(
    private readonly client: Grpc.Client,
    private readonly call: Grpc.ClientDuplexStream<Json, Json>,
    private readonly options: WorkStreamOptions,
  ) {
    this.ended = new Promise((resolve) => {
      call.on("metadata", (metadata: Grpc.Metadata) => {
        this.creditTakesAcks = metadata.get(CREDIT_ACKS_HEADER)[0] === "1";
      });
      call.on("data", (message: Json) => this.receive(message));
      // An error status comes as 'error' (and then 'status'); OK as 'status' alone.
      call.on("error", () => {});
      call.on("status", (status: Grpc.StatusObject) => {
        const error = status.code === 0 ? undefined : apiError(Object.assign(new Error(status.details), status) as Grpc.ServiceError);
        this.finish(error ?? new DuetimeApiError("UNAVAILABLE", "the work stream ended", { status: 503 }));
        resolve(error);
      });
    });
  }

  /** Opens the stream and sends its WorkStart; rejects only when gRPC cannot be loaded. */
  static async open(options: WorkStreamOptions): Promise<WorkStream> {
    const { grpc, WorkerService } = await load();
    const url = new URL(options.url);
    const credentials =
      url.protocol === "grpcs:"
        ? grpc.credentials.createSsl(options.ca === undefined ? null : Buffer.from(options.ca))
        : grpc.credentials.createInsecure();
    // Payloads kept by reference come inline over gRPC, up to the server's payload limit: past grpc-js's 4 MiB default.
    const client = new WorkerService(url.host, credentials, { "grpc.max_receive_message_length": -1 });
    const metadata = new grpc.Metadata();
    if (options.token) metadata.set("authorization", `Bearer ${options.token}`);
    const work = client.Work as (metadata: Grpc.Metadata) => Grpc.ClientDuplexStream<Json, Json>;
    const stream = new WorkStream(client, work.call(client, metadata), options);
    stream.send({ start: { pool: options.pool, workerId: options.workerId, leaseSeconds: options.leaseSeconds } });
    return stream;
  }

  /**
   * Lets the server push n more executions; the acks go in the same message,
   * and the server writes them with the lease this credit starts (one store
   * transaction, as an HTTP lease call's). Resolves to their answers, in
   * order; rejects when the stream ends first.
   */
  grant(n: number, acks: PendingAcks = { complete: [], fail: [] }): Promise<AckItem[]> {
    this.outstanding += n;
    const items = [...acks.complete, ...acks.fail];
    if (items.length === 0) {
      this.send({ credit: { executions: n } });
      return Promise.resolve([]);
    }
    const keys = items.map((item) => keyOf(item.executionId, item.attempt));
    if (this.creditTakesAcks) return Promise.all(this.ask(this.acks, keys, { credit: { executions: n, acks: workAcks(acks) } }));
    // Just ahead of the credit instead: such a server's next lease carries them when they arrive in time.
    const answers = Promise.all(this.ask(this.acks, keys, { acks: workAcks(acks) }));
    this.send({ credit: { executions: n } });
    return answers;
  }

  heartbeat(executionId: string, request: HeartbeatRequest): Promise<HeartbeatResponse> {
    const [answer] = this.ask(this.beats, [keyOf(executionId, request.attempt)], {
      heartbeat: { ...fenceOf({ executionId, ...request }), leaseSeconds: request.leaseSeconds },
    });
    return answer!;
  }

  /** Up to 1000 completions in one WorkAcks; resolves to their answers, in order. */
  completeMany(items: CompleteItem[]): Promise<AckItem[]> {
    return this.acknowledge(items, { acks: workAcks({ complete: items, fail: [] }) });
  }

  /** Up to 1000 failures in one WorkAcks; resolves to their answers, in order. */
  failMany(items: FailItem[]): Promise<AckItem[]> {
    return this.acknowledge(items, { acks: workAcks({ complete: [], fail: items }) });
  }

  /** Half-closes the stream (nothing more to send) and waits for the server to end it. */
  async close(): Promise<void> {
    if (!this.over) this.call.end();
    await this.ended;
    this.client.close();
  }

  /** Drops the connection at once: what is in flight is settled as failed. */
  abandon(): void {
    this.call.cancel();
    this.client.close();
  }

  private send(message: Json): void {
    if (!this.over) this.call.write(message);
  }

  /** Sends one message; each key's answer settles the promise queued for it. */
  private ask<T>(waiters: Map<string, Waiter<T>[]>, keys: string[], message: Json): Promise<T>[] {
    if (this.over) return keys.map(() => Promise.reject(new DuetimeApiError("UNAVAILABLE", "the work stream has ended", { status: 503 })));
    const answers = keys.map(
      (key) =>
        new Promise<T>((resolve, reject) => {
          const queue = waiters.get(key);
          if (queue) queue.push({ resolve, reject });
          else waiters.set(key, [{ resolve, reject }]);
        }),
    );
    this.call.write(message);
    return answers;
  }

  /** The answers of a WorkAcks; a 5xx answer (the server's store failed) fails the batch, so the acks go again. */
  private async acknowledge(items: { executionId: string; attempt: number }[], message: Json): Promise<AckItem[]> {
    const keys = items.map((item) => keyOf(item.executionId, item.attempt));
    const answers = await Promise.allSettled(this.ask(this.acks, keys, message));
    const rejected = answers.find((a) => a.status === "rejected");
    if (rejected) throw rejected.reason;
    const results = answers.map((a) => (a as PromiseFulfilledResult<AckItem>).value);
    const failed = results.find((a) => a.status >= 500) as (AckItem & { error: { code: string; message: string } }) | undefined;
    if (failed) throw new DuetimeApiError(failed.error.code, failed.error.message, { status: failed.status });
    return results;
  }

  private receive(message: Json): void {
    this.heard = true;
    const kind = message.kind;
    if (kind === "executions") {
      const items = (message.executions as { items: Json[] }).items;
      this.outstanding = Math.max(0, this.outstanding - items.length);
      this.options.onExecutions(items.map(leasedExecution));
    } else if (kind === "acks") {
      for (const ack of (message.acks as { items: Json[] }).items) settle(this.acks, keyOf(ack.executionId, ack.attempt))?.resolve(ackItem(ack));
    } else if (kind === "heartbeat") {
      const beat = message.heartbeat as Json;
      const waiter = settle(this.beats, keyOf(beat.executionId, beat.attempt));
      if (beat.leaseLost) waiter?.reject(new DuetimeApiError("LEASE_LOST", "the attempt no longer holds the lease", { status: 409 }));
      // A cancel request comes as its own message, right behind this one.
      else waiter?.resolve({ leaseUntil: beat.leaseUntil as string, cancelRequested: false });
    } else if (kind === "cancel") {
      const cancel = message.cancel as Json;
      this.options.onCancel(cancel.executionId as string, cancel.attempt as number);
    }
  }

  private finish(error: DuetimeApiError): void {
    this.over = true;
    for (const waiters of [this.acks, this.beats] as Map<string, Waiter<unknown>[]>[]) {
      for (const queue of waiters.values()) for (const waiter of queue) waiter.reject(error);
      waiters.clear();
    }
  }
}

/** The oldest waiter for key, taken off its queue. */
function settle<T>(waiters: Map<string, Waiter<T>[]>, key: string): Waiter<T> | undefined {
  const queue = waiters.get(key);
  const waiter = queue?.shift();
  if (queue?.length === 0) waiters.delete(key);
  return waiter;
}
