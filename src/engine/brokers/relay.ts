// The outbox relay of one broker connection. The outbox is the broker
// pool's executions (core/targets.ts brokerPool): dispatch writes each in the
// same transaction as any execution, so a due job is either in the outbox or
// not due yet, never lost between the store and the broker. The relay is a
// worker like the HTTP-target executor: it leases a batch (every tenant's,
// by the store's lease, so two nodes never hold the same row), publishes it
// in lease order, and completes each execution only after the broker
// confirmed it. Every message carries the execution id as its id, so a
// crash between the confirm and the completion republishes the same id, and
// the broker (JetStream's duplicate window) or the consumer drops it.
//
// What the broker answers decides what the attempt becomes:
// - published: completed, the broker's receipt kept as its result;
// - rejected (no stream, unroutable, nack): failed, under the job's retry
//   policy, ending in dead letters like any target;
// - unavailable (the broker did not answer): handed back unspent (released),
//   and the relay backs off. While the connection is down it leases nothing:
//   the outbox grows (duetime_ready_depth of the pool) and nothing is dropped.
// After an outage the backlog drains at ratePerSecond, if one is set.

import type { ErrorRecord } from "@duetime/sdk/contract";
import type { Clock, TimerHandle } from "../../core/clock.js";
import { brokerPool } from "../../core/targets.js";
import type { LeasedRow } from "../../store/store.js";
import { AckBuffer } from "../ack-buffer.js";
import { DELIVERY_HEADERS, deliveryHeaders } from "../delivery-headers.js";
import type { EngineEvents } from "../events.js";
import type { Executor } from "../executor.js";
import { TokenBucket } from "../../core/token-bucket.js";
import type { BrokerConnection, BrokerDestination, BrokerMessage, PublishOutcome } from "./broker.js";

export interface BrokerRelaySettings {
  /** Messages a second this node publishes through the connection, how fast a backlog drains (default: as fast as the broker confirms). */
  ratePerSecond?: number;
  /** Executions leased and published per round (default 500). */
  batchSize?: number;
}

export interface BrokerRelayOptions extends BrokerRelaySettings {
  connection: BrokerConnection;
  executor: Executor;
  events: EngineEvents;
  clock: Clock;
  nodeId: string;
  observer?: BrokerRelayObserver;
}

/** What the relay tells metrics (broker-metrics.ts). */
export interface BrokerRelayObserver {
  /** A batch's outcomes; lagsMs: confirmed − due, of each published message. */
  published(broker: string, outcomes: readonly PublishOutcome[], lagsMs: readonly number[]): void;
}

/** Long enough for a batch's confirms (the drivers wait 10 s); the store cuts it to the job's timeoutSeconds + grace. */
const LEASE_MS = 30_000;
const GRACE_MS = 5_000;
const WAIT_MS = 5_000;
const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 15_000;
/** Batches whose confirms may be awaited at once. */
const MAX_IN_FLIGHT = 2;
/** Outcomes wait this long for company before their commit (unless the next lease takes them along). */
const ACK_DELAY_MS = 10;

/** Headers duetime sets on every message; a job's own headers cannot override them. */
const RESERVED_HEADERS = new Set([...DELIVERY_HEADERS, "duetime-job-id", "traceparent", "nats-msg-id"]);

export class BrokerRelay {
  private readonly o: BrokerRelayOptions;
  private readonly pool: string;
  private readonly acks: AckBuffer;
  private readonly bucket: TokenBucket | null;
  private readonly batchSize: number;
  private readonly stopping = new AbortController();
  /** Resolves at stop(): every wait of the loop races it. */
  private readonly stopped = new Promise<void>((resolve) => this.stopping.signal.addEventListener("abort", () => resolve(), { once: true }));
  private state: "idle" | "running" | "stopped" = "idle";
  private loop: Promise<void> | null = null;
  private backoffMs = 0;
  /** No lease before this (epoch ms): the broker did not answer the last batch. */
  private resumeAt = 0;
  /** Batches published and not yet settled. */
  private readonly inFlight = new Set<Promise<void>>();
  private readonly encoder = new TextEncoder();

  constructor(options: BrokerRelayOptions) {
    this.o = options;
    this.pool = brokerPool(options.connection.name);
    this.batchSize = options.batchSize ?? 500;
    const rate = options.ratePerSecond;
    this.bucket = rate === undefined ? null : new TokenBucket(rate, Math.max(1, rate), options.clock.now());
    const onError = (error: unknown) => options.events.emit("error", { where: "broker-relay", error });
    this.acks = new AckBuffer(options.executor, options.clock, ACK_DELAY_MS, 500, onError);
  }

  get connection(): BrokerConnection {
    return this.o.connection;
  }

  start(): void {
    if (this.state !== "idle") return;
    this.state = "running";
    this.loop = this.run();
  }

  /** Stops leasing, lets the batches in hand finish (their confirms wait at most the driver's timeout), writes their outcomes. */
  async stop(): Promise<void> {
    if (this.state !== "running") {
      this.state = "stopped";
      return;
    }
    this.state = "stopped";
    this.stopping.abort();
    await this.loop;
    await Promise.all(this.inFlight);
    await this.acks.flush();
  }

  private async run(): Promise<void> {
    while (this.state === "running") {
      try {
        await this.round();
      } catch (error) {
        if (this.state !== "running") break;
        this.o.events.emit("error", { where: "broker-relay", error });
        await this.backOff();
      }
    }
  }

  /**
   * One lease and the start of its publish. The next lease overlaps this
   * batch's confirms (up to MAX_IN_FLIGHT batches); its publishes still go
   * out after this batch's on the one connection, so the order holds.
   */
  private async round(): Promise<void> {
    const { connection, executor } = this.o;
    if (!connection.connected()) {
      await Promise.race([connection.waitConnected(WAIT_MS), this.stopped]);
      return;
    }
    const wait = this.resumeAt - this.o.clock.now();
    if (wait > 0) return this.pause(wait);
    const max = await this.allowance();
    if (max === 0) return;
    const acks = this.acks.take();
    let leased: LeasedRow[];
    try {
      ({ leased } = await executor.lease({
        pool: this.pool,
        workerId: this.o.nodeId,
        max,
        leaseMs: LEASE_MS,
        graceMs: GRACE_MS,
        waitMs: WAIT_MS,
        signal: this.stopping.signal,
        complete: acks.complete,
        fail: acks.fail,
        retryScopes: () => [`broker:${connection.name}`],
      }));
    } catch (error) {
      this.acks.restore(acks);
      throw error;
    }
    if (leased.length === 0) return;
    // The store's RETURNING order is unspecified: publish in scheduled order, which a subject's consumer then sees.
    leased.sort((a, b) => a.scheduledFor - b.scheduledFor);
    const settled: Promise<void> = this.settle(leased, connection.publish(leased.map((row) => this.message(row))))
      .catch((error: unknown) => this.o.events.emit("error", { where: "broker-relay", error }))
      .finally(() => this.inFlight.delete(settled));
    this.inFlight.add(settled);
    if (this.inFlight.size >= MAX_IN_FLIGHT) await Promise.race(this.inFlight);
  }

  /** Turns a batch's outcomes into completions, failures and hand-backs; no answer sets the relay to back off. */
  private async settle(leased: LeasedRow[], publishing: Promise<PublishOutcome[]>): Promise<void> {
    const { connection, executor, clock } = this.o;
    const outcomes = await publishing;
    const confirmedAt = clock.now();
    const lags: number[] = [];
    const released: LeasedRow[] = [];
    outcomes.forEach((outcome, i) => {
      const row = leased[i]!;
      const ids = { executionId: row.executionId, tenantId: row.tenantId, attempt: row.attempt };
      if (outcome.status === "published") {
        lags.push(confirmedAt - row.scheduledFor);
        this.acks.complete({ ...ids, result: outcome.receipt });
      } else if (outcome.status === "rejected") {
        this.acks.fail({ ...ids, error: rejection(outcome.message) });
      } else {
        released.push(row);
      }
    });
    this.o.observer?.published(connection.name, outcomes, lags);
    if (released.length > 0) {
      await executor.release(
        released.map((row) => ({
          executionId: row.executionId,
          tenantId: row.tenantId,
          attempt: row.attempt,
          readyAt: clock.now(),
          pool: this.pool,
        })),
      );
      this.backoffMs = nextBackoff(this.backoffMs);
      this.resumeAt = clock.now() + this.backoffMs;
    } else {
      this.backoffMs = 0;
    }
  }

  /** How many to lease now: the batch size, held to the drain rate (waiting for its next token when none is left). */
  private async allowance(): Promise<number> {
    if (!this.bucket) return this.batchSize;
    const { granted, at } = this.bucket.takeUpTo(this.batchSize, this.o.clock.now());
    if (granted === 0) await this.pause(at - this.o.clock.now());
    return granted;
  }

  private message(row: LeasedRow): BrokerMessage {
    const target = row.target;
    if (target.type !== "nats" && target.type !== "amqp") throw new Error(`execution ${row.executionId}: not a broker target (${target.type})`);
    const destination: BrokerDestination =
      target.type === "nats" ? { kind: "nats", subject: target.subject } : { kind: "amqp", exchange: target.exchange, routingKey: target.routingKey };
    const headers = deliveryHeaders(row, target.headers, RESERVED_HEADERS);
    headers["duetime-job-id"] = row.jobId;
    if (row.traceParent) headers.traceparent = row.traceParent;
    return {
      id: row.executionId,
      destination,
      headers,
      body: this.encoder.encode(JSON.stringify(row.payload ?? null)),
      scheduledFor: row.scheduledFor,
    };
  }

  /** After an error of the loop's own: wait longer each time before the next lease. */
  private async backOff(): Promise<void> {
    this.backoffMs = nextBackoff(this.backoffMs);
    await this.pause(this.backoffMs);
  }

  private pause(ms: number): Promise<void> {
    let timer: TimerHandle | null = null;
    return Promise.race([new Promise<void>((resolve) => (timer = this.o.clock.setTimer(resolve, Math.max(0, ms)))), this.stopped]).finally(() =>
      (timer as TimerHandle | null)?.cancel(),
    );
  }
}

const nextBackoff = (ms: number): number => Math.min(MAX_BACKOFF_MS, Math.max(MIN_BACKOFF_MS, ms * 2));

function rejection(message: string): ErrorRecord {
  return { message, class: "transient", code: "BROKER_REJECTED" };
}
