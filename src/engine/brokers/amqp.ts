// The AMQP 0-9-1 (RabbitMQ) driver of the broker port (broker.ts). A message
// is a persistent, mandatory publish on a confirm channel, message_id set to
// the execution id; the broker's publisher confirm is the confirm. AMQP has
// no duplicate window: a republish after an unavailable outcome may deliver
// twice, and the consumer tells them apart by message_id.
//
// One confirm channel at a time carries every publish, in order. A channel
// is given up when the broker closes it (a publish to a missing exchange),
// when a confirm is overdue (its state is unknown), or with its connection;
// the next publish opens another. The connection is retried with backoff
// until close.

import amqp, { type ChannelModel, type ConfirmChannel, type Message } from "amqplib";
import type { TimerHandle } from "../../core/clock.js";
import type { BrokerConnection, BrokerConnectOptions, BrokerMessage, PublishOutcome } from "./broker.js";
import { Dialer } from "./link.js";

const CONFIRM_TIMEOUT_MS = 10_000;
/** Proposed when the URL names none: amqplib's default is no heartbeat, so a silent peer would go unnoticed. */
const HEARTBEAT_S = 30;

/** One message sent on a channel and not yet answered. */
interface Pending {
  id: string;
  exchange: string;
  routingKey: string;
  /** Why the broker returned it (mandatory, unroutable): its confirm then means rejected. */
  returned?: string;
  settle(outcome: PublishOutcome): void;
}

/** A confirm channel and what is in flight on it, in publish order. */
interface Lane {
  ch: ConfirmChannel;
  inFlight: Set<Pending>;
  dead: boolean;
  /** The exchange a publish of this channel named that the broker closed it over (404, 403). */
  refused?: { exchange: string; message: string };
  /** Publishers waiting for the socket to drain. */
  wakers: (() => void)[];
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const rejected = (message: string): PublishOutcome => ({ status: "rejected", message });
const unavailable = (message: string): PublishOutcome => ({ status: "unavailable", message });
const exchangeName = (exchange: string): string => (exchange === "" ? "the default exchange" : `exchange "${exchange}"`);

function withHeartbeat(url: string): string {
  const u = new URL(url);
  if (!u.searchParams.has("heartbeat")) u.searchParams.set("heartbeat", String(HEARTBEAT_S));
  return u.toString();
}

/**
 * The exchange a channel error blames, when the broker closed the channel
 * over a basic.publish (class 60, method 40) naming one: "NOT_FOUND - no
 * exchange 'x' in vhost '/'", "ACCESS_REFUSED - access to exchange 'x' …".
 */
function refusedExchange(error: unknown): string | undefined {
  const e = error as { classId?: number; methodId?: number; message?: string };
  if (e.classId !== 60 || e.methodId !== 40) return undefined;
  return /exchange '(.*)' in vhost/.exec(e.message ?? "")?.[1];
}

class AmqpBroker extends Dialer<ChannelModel> implements BrokerConnection {
  readonly kind = "amqp" as const;
  readonly name: string;
  private readonly url: string;
  private readonly timeoutMs: number;
  private lane: Lane | undefined;
  private opening: Promise<Lane> | undefined;

  constructor(options: BrokerConnectOptions) {
    super(options);
    this.name = options.name;
    this.url = withHeartbeat(options.url);
    this.timeoutMs = options.confirmTimeoutMs ?? CONFIRM_TIMEOUT_MS;
    this.dial();
  }

  async publish(messages: readonly BrokerMessage[]): Promise<PublishOutcome[]> {
    const model = this.conn;
    if (!this.link.up || model === undefined) return messages.map(() => unavailable(`not connected to RabbitMQ (${this.name})`));
    let lane: Lane;
    try {
      lane = await this.channel(model);
    } catch (error) {
      return messages.map(() => unavailable(`RabbitMQ (${this.name}) opened no channel: ${messageOf(error)}`));
    }
    const outcomes: Promise<PublishOutcome>[] = [];
    for (const m of messages) {
      const { outcome, wrote } = this.send(lane, m);
      outcomes.push(outcome);
      // The socket's buffer is full: wait for it to drain (or the channel to die).
      if (!wrote && !lane.dead) await new Promise<void>((resolve) => lane.wakers.push(resolve));
    }
    return Promise.all(outcomes);
  }

  /** Sends one message; `wrote` is false when the channel asks the writer to wait for 'drain'. */
  private send(lane: Lane, m: BrokerMessage): { outcome: Promise<PublishOutcome>; wrote: boolean } {
    if (m.destination.kind !== "amqp")
      return { outcome: Promise.resolve(rejected(`the AMQP broker "${this.name}" cannot publish to a NATS destination`)), wrote: true };
    // The channel died earlier in this batch (see confirmed): not sent.
    if (lane.dead) return { outcome: Promise.resolve(unavailable(`the RabbitMQ channel closed before this message was sent`)), wrote: true };
    const { exchange, routingKey } = m.destination;
    let wrote = true;
    const outcome = new Promise<PublishOutcome>((resolve) => {
      const p: Pending = {
        id: m.id,
        exchange,
        routingKey,
        settle: (o) => {
          if (!lane.inFlight.delete(p)) return; // answered already (timed out, or the channel was given up)
          timer.cancel();
          resolve(o);
        },
      };
      lane.inFlight.add(p);
      const timer = this.link.clock.setTimer(() => {
        p.settle(unavailable(`RabbitMQ did not confirm within ${this.timeoutMs} ms`));
        this.discard(lane);
      }, this.timeoutMs);
      const body = Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength);
      const props = {
        messageId: m.id,
        headers: m.headers,
        persistent: true,
        mandatory: true,
        contentType: "application/json",
        timestamp: Math.floor(m.scheduledFor / 1000),
      };
      try {
        wrote = lane.ch.publish(exchange, routingKey, body, props, (error: unknown) => p.settle(this.confirmed(lane, p, error)));
      } catch (error) {
        // amqplib throws once the channel is closed (and keeps our callback, never calling it).
        p.settle(unavailable(`RabbitMQ (${this.name}): ${messageOf(error)}`));
      }
    });
    return { outcome, wrote };
  }

  /** The outcome of a message amqplib called back for: confirm, nack, or the channel's end. */
  private confirmed(lane: Lane, p: Pending, error: unknown): PublishOutcome {
    if (error === null || error === undefined) {
      return p.returned === undefined ? { status: "published", receipt: { exchange: p.exchange, routingKey: p.routingKey } } : rejected(p.returned);
    }
    // amqplib's two errors here: "message nacked", and "channel closed" for each one in flight when it closed.
    if (messageOf(error) === "message nacked") return rejected(`RabbitMQ refused (nacked) the message for ${exchangeName(p.exchange)}`);
    // The broker handles a channel's publishes in order and, once it closes
    // the channel, drops what follows: the first one in flight naming the
    // refused exchange caused the close, and is rejected. The others answer
    // unavailable: those before it may have been routed (their confirm was on
    // its way); those after it were dropped, and could be resent on a new
    // channel at once, but as unavailable the relay resends them without
    // spending an attempt, which keeps this simple.
    if (lane.refused?.exchange === p.exchange) {
      const { message } = lane.refused;
      lane.refused = undefined;
      return rejected(message);
    }
    return unavailable(`the RabbitMQ channel closed before the broker confirmed`);
  }

  /** The open confirm channel, or a new one. */
  private async channel(model: ChannelModel): Promise<Lane> {
    if (this.lane && !this.lane.dead) return this.lane;
    this.opening ??= this.openLane(model).finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async openLane(model: ChannelModel): Promise<Lane> {
    const ch = await model.createConfirmChannel();
    const lane: Lane = { ch, inFlight: new Set(), dead: false, wakers: [] };
    ch.on("error", (error: unknown) => {
      const exchange = refusedExchange(error);
      if (exchange !== undefined) lane.refused = { exchange, message: `${exchangeName(exchange)} refused the message: ${messageOf(error)}` };
      this.link.tell({ connected: this.link.up, error });
    });
    // amqplib's own 'close' listener, added first, has called back every message in flight by now.
    ch.on("close", () => this.discard(lane));
    ch.on("return", (returned: Message) => this.returned(lane, returned));
    ch.on("drain", () => this.wake(lane));
    this.lane = lane;
    return lane;
  }

  /** A mandatory message no queue took: the broker returns it, then confirms it. */
  private returned(lane: Lane, { fields, properties }: Message): void {
    for (const p of lane.inFlight) {
      if (p.id === properties.messageId && p.returned === undefined) {
        p.returned = `${exchangeName(fields.exchange)} routed routing key "${fields.routingKey}" to no queue`;
        return;
      }
    }
  }

  /** Gives a channel up: what is still in flight on it has no answer coming. */
  private discard(lane: Lane): void {
    if (this.lane === lane) this.lane = undefined;
    if (lane.dead) return;
    lane.dead = true;
    for (const p of [...lane.inFlight]) p.settle(unavailable(`the RabbitMQ channel was given up before the broker confirmed`));
    this.wake(lane);
    lane.ch.close().catch(() => {}); // closed already, when the broker or the connection closed it
  }

  private wake(lane: Lane): void {
    for (const wake of lane.wakers.splice(0)) wake();
  }

  protected async open(): Promise<ChannelModel> {
    const model = await amqp.connect(this.url, { timeout: 10_000, clientProperties: { connection_name: this.name } });
    // Without an 'error' listener an emitted error would crash the process; the 'close' after it reconnects.
    model.on("error", (error: unknown) => this.link.tell({ connected: this.link.up, error }));
    return model;
  }

  protected adopt(model: ChannelModel): void {
    model.on("close", () => this.lost(model, "backoff"));
    // RabbitMQ stops reading from publishers under a memory or disk alarm: no confirm would come.
    model.on("blocked", (reason: string) => this.setUp(false, new Error(`RabbitMQ blocked publishing: ${reason}`)));
    model.on("unblocked", () => this.setUp(this.conn === model));
  }

  /** Closing the connection closes its channel: a publish in flight answers unavailable. */
  protected forget(): void {
    this.lane = undefined;
  }

  /**
   * Closes the connection, ended by its 'close' event: amqplib's close()
   * never settles when the socket dies before the broker's CloseOk. A
   * broker that does not answer in time gets its socket destroyed.
   */
  protected async end(model: ChannelModel): Promise<void> {
    let timer: TimerHandle | undefined;
    const closed = new Promise<boolean>((resolve) => {
      model.once("close", () => resolve(true));
      model.close().catch(() => resolve(true));
      timer = this.link.clock.setTimer(() => resolve(false), this.timeoutMs);
    });
    if (!(await closed)) (model.connection as unknown as { stream?: { destroy(): void } }).stream?.destroy();
    timer?.cancel();
  }
}

/** A RabbitMQ connection that connects in the background and keeps reconnecting until closed. */
export function openAmqp(options: BrokerConnectOptions): BrokerConnection {
  return new AmqpBroker(options);
}
