// The Work stream of proto/duetime/v1/worker.proto: one worker, one pool,
// executions pushed in batches as they become ready, never more than the
// credit the worker granted. Under the stream are the HTTP protocol's
// operations: leases are long polls (lease) of at most the credit left;
// acknowledgements ride on the next lease (those a credit that starts one
// carries always do, as an HTTP lease call's) or, while a long poll waits,
// go in batches (completeMany, failMany) by the project's one Batcher, as an
// HTTP worker's do; heartbeats go one by one (heartbeat). So the keys, roles, tenants, validation and fencing are the
// HTTP ones, and a worker that goes away keeps what it was given until the
// leases expire, as over HTTP.

import { Batcher, operationNamed, type OperationName } from "@duetime/sdk/contract";
import * as grpc from "@grpc/grpc-js";
import type { Clock } from "../core/clock.js";
import { DuetimeError, invalidArgument } from "../core/errors.js";
import { callService, checkRequest } from "../engine/operations.js";
import type { RequestContext, Service } from "../engine/service.js";
import { authorize, type KeyRing, requestContext } from "./auth.js";
import { ackResult, attemptFence, completeItem, defined, executionMessage, failItem, type Json, list, toGrpcError } from "./grpc-wire.js";

/** The most credit a stream may hold at once: a lease's max. */
export const MAX_CREDIT = 1000;
/** A lease's long poll on the stream; ended early when the stream closes. */
const LEASE_WAIT_SECONDS = 20;
/** Acknowledgements wait this long for company before their batch goes out; a batch in flight holds the next back. */
const ACK_DELAY_MS = 10;
/** The most acknowledgements one store call carries (the batch calls' limit). */
const ACK_BATCH = 1000;
/** After a failed lease, this long before the next (the store is having trouble). */
const RETRY_MS = 1_000;

type Stream = grpc.ServerDuplexStream<Json, Json>;
type Ack = { kind: "complete" | "fail"; item: Json };

/** Executions per WorkExecutions message stop growing at about this many bytes (a client takes 4 MiB by default). */
const MESSAGE_BYTES = 1 << 20;

/** The executions in messages of about MESSAGE_BYTES at most (one larger execution goes alone). */
function bySize(executions: Json[]): Json[][] {
  const out: Json[][] = [];
  let bytes = Infinity;
  for (const e of executions) {
    const size = 256 + String(e.payloadJson).length;
    if (bytes + size > MESSAGE_BYTES) {
      out.push([]);
      bytes = 0;
    }
    out.at(-1)!.push(e);
    bytes += size;
  }
  return out;
}

/**
 * Leased executions with every payload inline: one kept by reference
 * (payloadRef) is read from the blob store here, since a gRPC worker has no
 * HTTP route to fetch it from. Each Work message then holds at most one
 * such payload (grpc-work.ts bySize).
 */
export async function withPayloadsInline(service: Service, ctx: RequestContext, items: Json[]): Promise<Json[]> {
  return Promise.all(
    items.map(async (item) => {
      const ref = item.payloadRef as { blobId: string } | undefined;
      if (ref === undefined) return item;
      const { payloadRef: _ref, ...inline } = item;
      return { ...inline, payload: await service.getBlob(ctx, ref.blobId) };
    }),
  );
}

const byKind = (acks: Ack[]) => ({
  complete: acks.filter((a) => a.kind === "complete").map((a) => a.item),
  fail: acks.filter((a) => a.kind === "fail").map((a) => a.item),
});

export interface WorkStreamDeps {
  service: Service;
  keyRing: KeyRing;
  /** Told of internal errors (the worker got an INTERNAL status or an INTERNAL ack). */
  onInternalError: (error: unknown, rpc: string) => void;
  /** The acknowledgement batches' delays and the wait after a failed lease run on it. */
  clock: Clock;
}

/** Serves one Work stream; close() ends it cleanly (the server's graceful stop). */
export class WorkStream {
  private ctx: RequestContext | undefined;
  /** The WorkStart being handled: its authentication may be a store call, and what follows waits for it. */
  private starting: Promise<void> | undefined;
  private start: { pool: string; workerId: string; leaseSeconds?: number } | undefined;
  private credit = 0;
  private leasing = false;
  private readonly acks: Batcher<Ack>;
  private readonly lifetime = new AbortController();
  private ended = false;

  constructor(
    private readonly stream: Stream,
    private readonly deps: WorkStreamDeps,
  ) {
    this.acks = new Batcher<Ack>({
      send: async (batch) => void (await this.writeAcks(byKind(batch))),
      delayMs: ACK_DELAY_MS,
      maxBatch: ACK_BATCH,
      keep: () => false,
      clock: deps.clock,
    });
    // Tells the worker that a WorkCredit's acks are read: a server from before them would drop them.
    const headers = new grpc.Metadata();
    headers.set("duetime-credit-acks", "1");
    stream.sendMetadata(headers);
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
    await this.acks.drain(1);
    this.stream.end();
  }

  /** Waits ms on the clock, or until the stream ends. */
  private pause(ms: number): Promise<void> {
    const signal = this.lifetime.signal;
    return new Promise((resolve) => {
      const done = () => {
        timer.cancel();
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = this.deps.clock.setTimer(done, ms);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /** The worker went away: nothing more can be sent. What it was given expires with its leases. */
  private abandon(): void {
    this.ended = true;
    this.lifetime.abort(new DuetimeError("UNAVAILABLE", "client went away"));
    this.acks.close();
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
      if (message.acks) return this.acknowledge(message.acks as Json, 1);
      if (message.heartbeat) return await this.heartbeat(message.heartbeat as Json);
      throw invalidArgument("kind", "a WorkRequest must set one of start, credit, acks or heartbeat");
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

  /** A WorkCredit: more credit, and the acknowledgements that the lease it starts writes in its store transaction. */
  private grant(credit: Json): void {
    const n = credit.executions;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || this.credit + n > MAX_CREDIT)
      throw invalidArgument(
        "credit.executions",
        `must be a whole number from 1 that keeps the credit left at most ${MAX_CREDIT} (${this.credit} left now), got ${String(n)}`,
      );
    // The lease this credit starts takes its acks: the batcher's timer must not write them on their own.
    // A lease loop under way holds them for its next lease, or leaves them to the timer while it long-polls.
    if (!this.leasing) this.acks.hold();
    if (credit.acks) this.acknowledge(credit.acks as Json, 0);
    this.credit += n;
    if (!this.leasing) {
      this.leasing = true;
      // Begun after the messages that came with the credit (a worker may send its acknowledgements just ahead), so the first lease carries them.
      setImmediate(() => void this.leaseLoop());
    }
  }

  /**
   * Leases while there is credit: each lease asks for all that is left, and
   * waits for work up to LEASE_WAIT_SECONDS.
   * Acknowledgements in hand ride on it, as on an HTTP lease call (one store
   * transaction for both); it then does not wait, so their answers are not
   * held by a long poll.
   */
  private async leaseLoop(): Promise<void> {
    try {
      while (!this.ended && this.credit > 0) {
        const taken = this.acks.take();
        const acks = byKind(taken);
        const carrying = taken.length > 0;
        // A lease that carries acknowledgements is quick: those that come meanwhile
        // wait for the next one. A long poll leaves them to the batcher's timer
        // (ending it for them made a store call or two per credit: a steady
        // stream's p99 start lag went from 58 to 250 ms).
        if (carrying) this.acks.hold();
        else this.acks.release();
        const answer = await this.call("lease", {
          params: { pool: this.start!.pool },
          body: defined({
            workerId: this.start!.workerId,
            max: this.credit,
            leaseSeconds: this.start!.leaseSeconds,
            waitSeconds: carrying ? 0 : LEASE_WAIT_SECONDS,
            complete: acks.complete.length > 0 ? acks.complete : undefined,
            fail: acks.fail.length > 0 ? acks.fail : undefined,
          }),
        }).then(
          (answer) => answer as { items: Json[]; acks?: Json[] },
          (error: unknown) => ({ error }),
        );
        if ("error" in answer) {
          // They go again in a batch of their own (acks are idempotent).
          this.acks.restore(taken);
          if (this.ended) break;
          this.deps.onInternalError(answer.error, "Work lease");
          await this.pause(RETRY_MS);
          continue;
        }
        if (answer.acks?.length) this.send({ acks: { items: answer.acks.map(ackResult) } });
        // Granted after the worker went away: leased to nobody, each runs again once its lease expires.
        if (this.ended) break;
        this.credit -= answer.items.length;
        // A payload that cannot be read leaves its execution unsent: it runs again once its lease expires, and its credit comes back.
        const leased = await withPayloadsInline(this.deps.service, this.ctx!, answer.items).catch((error: unknown) => {
          this.deps.onInternalError(error, "Work lease");
          const sendable = answer.items.filter((item) => item.payloadRef === undefined);
          this.credit += answer.items.length - sendable.length;
          return sendable;
        });
        for (const items of bySize(leased.map(executionMessage))) this.stream.write({ executions: { items } });
      }
    } finally {
      this.leasing = false;
      this.acks.release();
    }
  }

  /**
   * A WorkAcks (or a WorkCredit's): at least `least` items, a bad one
   * answered 400 at once, the rest written in batches or by the next lease.
   * Each kind is checked as one batch call's body, as the HTTP routes check
   * it; only a batch with a bad item is checked again item by item.
   */
  private acknowledge(message: Json, least: number): void {
    const complete = list(message.complete);
    const fail = list(message.fail);
    const count = complete.length + fail.length;
    if (count < least || count > ACK_BATCH) throw invalidArgument("acks", `must hold ${least} to ${ACK_BATCH} items in all, got ${count}`);
    const refused: Json[] = [];
    this.checkAcks("complete", complete, refused);
    this.checkAcks("fail", fail, refused);
    if (refused.length > 0) this.send({ acks: { items: refused } });
  }

  /** Adds the acks of one kind that pass their batch call's checks; the others go to `refused`, answered 400. */
  private checkAcks(kind: Ack["kind"], sent: Json[], refused: Json[]): void {
    if (sent.length === 0) return;
    const op = operationNamed(kind === "complete" ? "completeMany" : "failMany");
    const itemOf = (s: Json, index: number) => (kind === "complete" ? completeItem(s, `acks.complete.${index}`) : failItem(s));
    try {
      const items = sent.map(itemOf);
      checkRequest(op, { body: { items } });
      for (const item of items) this.acks.add({ kind, item });
      return;
    } catch {
      // Some item is bad: which one is found below.
    }
    for (const [index, s] of sent.entries()) {
      try {
        const item = itemOf(s, index);
        checkRequest(op, { body: { items: [item] } });
        this.acks.add({ kind, item });
      } catch (thrown) {
        const { error } = toGrpcError(thrown);
        const code = String(error.metadata.get("duetime-error-code")[0]);
        refused.push(ackResult({ executionId: s.executionId, attempt: s.attempt, status: 400, error: { code, message: error.details } }));
      }
    }
  }

  /** One batch of acknowledgements, answered one by one; when the store fails them, each is answered 503 (the worker sends it again). */
  private async writeAcks({ complete, fail }: { complete: Json[]; fail: Json[] }): Promise<void> {
    const batches: [OperationName, Json[]][] = [
      ["completeMany", complete],
      ["failMany", fail],
    ];
    for (const [op, items] of batches) {
      if (items.length === 0) continue;
      try {
        // Not the stream's lifetime: acknowledgements in hand are written even as the stream closes.
        const answers = (await this.call(op, { body: { items } }, new AbortController().signal)) as Json[];
        this.send({ acks: { items: answers.map(ackResult) } });
      } catch (thrown) {
        const { error, internal } = toGrpcError(thrown);
        if (internal) this.deps.onInternalError(thrown, `Work ${op}`);
        const code = String(error.metadata.get("duetime-error-code")[0]);
        this.send({ acks: { items: items.map((item) => ackResult({ ...item, status: 503, error: { code, message: error.details } })) } });
      }
    }
  }

  private async heartbeat(message: Json): Promise<void> {
    const request = {
      params: { executionId: String(message.executionId ?? "") },
      body: defined({ ...attemptFence(message), leaseSeconds: message.leaseSeconds }),
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
