// The Work stream of proto/duetime/v1/worker.proto: one worker, one pool,
// executions pushed as they become ready, never more than the credit the
// worker granted. Under the stream are the HTTP protocol's operations:
// leases are long polls (lease) of at most the credit left, acknowledgements
// go in batches (completeMany, failMany) as they come, heartbeats one by one
// (heartbeat). So the keys, roles, tenants, validation and fencing are the
// HTTP ones, and a worker that goes away keeps what it was given until the
// leases expire, as over HTTP.

import { operationNamed, type OperationName } from "@duetime/sdk/contract";
import type * as grpc from "@grpc/grpc-js";
import { DuetimeError, invalidArgument } from "../core/errors.js";
import { callService, checkRequest } from "../engine/operations.js";
import type { RequestContext, Service } from "../engine/service.js";
import { authorize, type KeyRing, requestContext } from "./auth.js";
import { ackResult, completeItem, defined, executionMessage, failItem, type Json, toGrpcError } from "./grpc-wire.js";

/** The most credit a stream may hold at once: a lease's max. */
export const MAX_CREDIT = 1000;
/** A lease's long poll on the stream; ended early when the stream closes. */
const LEASE_WAIT_SECONDS = 20;
/** Acknowledgements wait this long for company before their batch goes out. */
const ACK_DELAY_MS = 10;
/** After a failed lease, this long before the next (the store is having trouble). */
const RETRY_MS = 1_000;

type Stream = grpc.ServerDuplexStream<Json, Json>;

export interface WorkStreamDeps {
  service: Service;
  keyRing: KeyRing;
  /** Told of internal errors (the worker got an INTERNAL status or an INTERNAL ack). */
  onInternalError: (error: unknown, rpc: string) => void;
}

/** Serves one Work stream; close() ends it cleanly (the server's graceful stop). */
export class WorkStream {
  private ctx: RequestContext | undefined;
  /** The WorkStart being handled: its authentication may be a store call, and what follows waits for it. */
  private starting: Promise<void> | undefined;
  private start: { pool: string; workerId: string; leaseSeconds?: number } | undefined;
  private credit = 0;
  private leasing = false;
  private readonly pending: { complete: Json[]; fail: Json[] } = { complete: [], fail: [] };
  private ackTimer: NodeJS.Timeout | undefined;
  private readonly lifetime = new AbortController();
  private ended = false;

  constructor(
    private readonly stream: Stream,
    private readonly deps: WorkStreamDeps,
  ) {
    stream.on("data", (message: Json) => void this.receive(message));
    stream.on("end", () => void this.close());
    stream.on("cancelled", () => this.abandon());
    stream.on("error", () => this.abandon());
  }

  /** Stops leasing, sends the acknowledgements in hand, then ends the stream with OK. */
  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.lifetime.abort(new DuetimeError("UNAVAILABLE", "the work stream closed"));
    clearTimeout(this.ackTimer);
    await this.flushAcks();
    this.stream.end();
  }

  /** The worker went away: nothing more can be sent. What it was given expires with its leases. */
  private abandon(): void {
    this.ended = true;
    this.lifetime.abort(new DuetimeError("UNAVAILABLE", "client went away"));
    clearTimeout(this.ackTimer);
  }

  private async receive(message: Json): Promise<void> {
    if (this.ended) return;
    try {
      if (message.start) {
        if (this.starting) throw invalidArgument("start", "a Work stream has one WorkStart, its first message");
        this.starting = this.begin(message.start as Json);
        return await this.starting;
      }
      // A credit sent right behind the start is not refused for arriving during its authentication.
      await this.starting?.catch(() => {});
      if (this.ended) return;
      if (!this.ctx) throw invalidArgument("start", "the first message of a Work stream must be a WorkStart");
      if (message.credit) return this.grant(message.credit as Json);
      if (message.complete) return this.acknowledge("complete", message.complete as Json);
      if (message.fail) return this.acknowledge("fail", message.fail as Json);
      if (message.heartbeat) return await this.heartbeat(message.heartbeat as Json);
      throw invalidArgument("kind", "a WorkRequest must set one of start, credit, complete, fail or heartbeat");
    } catch (thrown) {
      this.fatal(thrown);
    }
  }

  /** A stream-level error: the stream ends with it (a bad message, auth, a second start). */
  private fatal(thrown: unknown): void {
    if (this.ended) return;
    const { error, internal } = toGrpcError(thrown);
    if (internal) this.deps.onInternalError(thrown, "Work");
    this.abandon();
    // grpc-js ends a server stream with the status of an emitted error (its trailers included).
    this.stream.emit("error", error);
  }

  private async begin(start: Json): Promise<void> {
    const authorization = this.stream.metadata.get("authorization")[0];
    const principal = await this.deps.keyRing.authenticate(typeof authorization === "string" ? authorization : undefined);
    authorize(principal, operationNamed("lease").roles, "gRPC duetime.v1.WorkerService/Work");
    // The start is checked as the lease call it stands for (pool, worker id, lease length).
    const body = defined({ workerId: start.workerId, leaseSeconds: start.leaseSeconds });
    checkRequest(operationNamed("lease"), { params: { pool: String(start.pool ?? "") }, body });
    this.start = defined({ pool: start.pool, workerId: start.workerId, leaseSeconds: start.leaseSeconds }) as NonNullable<typeof this.start>;
    this.ctx = requestContext(principal, this.lifetime.signal);
  }

  private grant(credit: Json): void {
    const n = credit.executions;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || this.credit + n > MAX_CREDIT)
      throw invalidArgument(
        "credit.executions",
        `must be a whole number from 1 that keeps the credit left at most ${MAX_CREDIT} (${this.credit} left now), got ${String(n)}`,
      );
    this.credit += n;
    if (!this.leasing) void this.leaseLoop();
  }

  /** Leases while there is credit: each lease asks for at most what is left, and waits for work up to LEASE_WAIT_SECONDS. */
  private async leaseLoop(): Promise<void> {
    this.leasing = true;
    try {
      while (!this.ended && this.credit > 0) {
        const answer = await this.call("lease", {
          params: { pool: this.start!.pool },
          body: defined({
            workerId: this.start!.workerId,
            max: this.credit,
            leaseSeconds: this.start!.leaseSeconds,
            waitSeconds: LEASE_WAIT_SECONDS,
          }),
        }).then(
          (answer) => answer as { items: Json[] },
          (error: unknown) => ({ error }),
        );
        if ("error" in answer) {
          if (this.ended) break;
          this.deps.onInternalError(answer.error, "Work lease");
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
          continue;
        }
        for (const item of answer.items) {
          // Granted after the worker went away: leased to nobody, it runs again once its lease expires.
          if (this.ended) break;
          this.credit--;
          this.stream.write({ execution: executionMessage(item) });
        }
      }
    } finally {
      this.leasing = false;
    }
  }

  /** One acknowledgement: checked at once (a bad one is answered 400 alone), then sent in a batch. */
  private acknowledge(kind: "complete" | "fail", message: Json): void {
    const item = kind === "complete" ? completeItem(message, "complete") : failItem(message);
    try {
      checkRequest(operationNamed(kind === "complete" ? "completeMany" : "failMany"), { body: { items: [item] } });
    } catch (thrown) {
      const { error } = toGrpcError(thrown);
      const code = String(error.metadata.get("duetime-error-code")[0]);
      this.stream.write({
        ack: ackResult({ executionId: message.executionId, attempt: message.attempt, status: 400, error: { code, message: error.details } }),
      });
      return;
    }
    this.pending[kind].push(item);
    this.ackTimer ??= setTimeout(() => void this.flushAcks(), ACK_DELAY_MS);
  }

  private async flushAcks(): Promise<void> {
    this.ackTimer = undefined;
    const complete = this.pending.complete.splice(0);
    const fail = this.pending.fail.splice(0);
    const batches: [OperationName, Json[]][] = [
      ["completeMany", complete],
      ["failMany", fail],
    ];
    for (const [op, items] of batches) {
      if (items.length === 0) continue;
      try {
        // Not the stream's lifetime: acknowledgements in hand are written even as the stream closes.
        const answers = (await this.call(op, { body: { items } }, new AbortController().signal)) as Json[];
        for (const answer of answers) this.send({ ack: ackResult(answer) });
      } catch (thrown) {
        const { error, internal } = toGrpcError(thrown);
        if (internal) this.deps.onInternalError(thrown, `Work ${op}`);
        const code = String(error.metadata.get("duetime-error-code")[0]);
        for (const item of items) this.send({ ack: ackResult({ ...item, status: 503, error: { code, message: error.details } }) });
      }
    }
  }

  private async heartbeat(message: Json): Promise<void> {
    const request = {
      params: { executionId: String(message.executionId ?? "") },
      body: defined({ attempt: message.attempt, leaseSeconds: message.leaseSeconds }),
    };
    const ids = { executionId: message.executionId, attempt: message.attempt };
    try {
      const { leaseUntil, cancelRequested } = (await this.call("heartbeat", request)) as { leaseUntil: string; cancelRequested: boolean };
      this.send({ heartbeat: { ...ids, leaseUntil, leaseLost: false } });
      if (cancelRequested) this.send({ cancel: ids });
    } catch (thrown) {
      if (thrown instanceof DuetimeError && thrown.code === "LEASE_LOST") this.send({ heartbeat: { ...ids, leaseUntil: "", leaseLost: true } });
      else throw thrown;
    }
  }

  private call(op: OperationName, request: { params?: Record<string, string>; body?: unknown }, signal = this.lifetime.signal): Promise<unknown> {
    const checked = checkRequest(operationNamed(op), request);
    return callService(this.deps.service, op, { ...this.ctx!, signal }, checked);
  }

  private send(message: Json): void {
    if (!this.ended || this.stream.writable) this.stream.write(message);
  }
}
