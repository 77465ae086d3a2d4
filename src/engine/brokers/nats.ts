// The NATS JetStream driver of the broker port (broker.ts). A message is a
// JetStream publish on its subject with Nats-Msg-Id set to the execution id,
// so a republish inside the stream's duplicate window is dropped by the
// server (its ack says duplicate). The stream's ack is the confirm.
//
// The driver connects in the background and never gives up: its own loop
// until the first connect succeeds (the client's waitOnFirstConnect cannot
// be cancelled by close), the client's reconnects after that.

import { type JetStreamClient, JetStreamApiError, JetStreamError, jetstream } from "@nats-io/jetstream";
import {
  type ConnectionOptions,
  connect,
  headers as natsHeaders,
  InvalidArgumentError,
  InvalidSubjectError,
  type MsgHdrs,
  type NatsConnection,
  NoRespondersError,
  TimeoutError,
} from "@nats-io/transport-node";
import type { BrokerConnection, BrokerConnectOptions, BrokerMessage, PublishOutcome } from "./broker.js";
import { Dialer } from "./link.js";

const CONFIRM_TIMEOUT_MS = 10_000;

/** Resolved when the connection a publish went out on is lost: its pending acks will not come. */
const LOST = Symbol("lost");

/** The client options from a URL: "nats://[user:pass@|token@]host:port[,nats://host:port…]" (tls:// requires TLS). */
function natsOptions(url: string): ConnectionOptions {
  const urls = url.split(",").map((s) => new URL(s.trim()));
  const auth = urls.find((u) => u.username !== "");
  const user = auth ? decodeURIComponent(auth.username) : "";
  const pass = auth ? decodeURIComponent(auth.password) : "";
  return {
    // The client wants host:port; credentials and scheme go in their own options.
    servers: urls.map((u) => u.host),
    ...(pass !== "" ? { user, pass } : user !== "" ? { token: user } : {}),
    ...(urls.some((u) => u.protocol === "tls:") ? { tls: {} } : {}),
  };
}

function toHeaders(record: Record<string, string>): MsgHdrs {
  const h = natsHeaders();
  for (const [name, value] of Object.entries(record)) h.set(name, value);
  return h;
}

/** The error and its causes: JetStream wraps the request's error, which wraps the reason. */
function* causes(error: unknown): Generator<unknown> {
  for (let e = error, depth = 0; e !== undefined && depth < 5; e = e instanceof Error ? e.cause : undefined, depth++) yield e;
}

const has = (error: unknown, type: abstract new (...args: never[]) => Error): Error | undefined =>
  [...causes(error)].find((e): e is Error => e instanceof type);

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const rejected = (message: string): PublishOutcome => ({ status: "rejected", message });
const unavailable = (message: string): PublishOutcome => ({ status: "unavailable", message });

class NatsBroker extends Dialer<NatsConnection> implements BrokerConnection {
  readonly kind = "nats" as const;
  readonly name: string;
  private readonly timeoutMs: number;
  private js: JetStreamClient | undefined;
  /** Bumped on every disconnect: an answer is trusted only from the connection its request went out on. */
  private session = 0;
  /** One per publish call in flight, told when the connection drops. */
  private readonly onLost = new Set<(value: typeof LOST) => void>();

  constructor(private readonly options: BrokerConnectOptions) {
    super(options);
    this.name = options.name;
    this.timeoutMs = options.confirmTimeoutMs ?? CONFIRM_TIMEOUT_MS;
    this.dial();
  }

  async publish(messages: readonly BrokerMessage[]): Promise<PublishOutcome[]> {
    const js = this.js;
    if (!this.link.up || js === undefined) return messages.map(() => unavailable(`not connected to NATS (${this.name})`));
    let resolveLost!: (value: typeof LOST) => void;
    const lost = new Promise<typeof LOST>((resolve) => (resolveLost = resolve));
    this.onLost.add(resolveLost);
    try {
      // Each publish is sent before the next starts (the client writes
      // synchronously), so they reach the stream in the order given.
      return await Promise.all(messages.map((m) => this.publishOne(js, m, this.session, lost)));
    } finally {
      this.onLost.delete(resolveLost);
    }
  }

  private async publishOne(js: JetStreamClient, m: BrokerMessage, session: number, lost: Promise<typeof LOST>): Promise<PublishOutcome> {
    if (m.destination.kind !== "nats") return rejected(`the NATS broker "${this.name}" cannot publish to an AMQP destination`);
    const subject = m.destination.subject;
    try {
      const ack = js.publish(subject, m.body, { msgID: m.id, headers: toHeaders(m.headers), timeout: this.timeoutMs });
      const answer = await Promise.race([ack, lost]);
      if (answer === LOST) return unavailable(`the connection to NATS (${this.name}) was lost before JetStream acknowledged`);
      return { status: "published", receipt: { stream: answer.stream, seq: answer.seq, duplicate: answer.duplicate } };
    } catch (error) {
      return this.failure(error, subject, session);
    }
  }

  private failure(error: unknown, subject: string, session: number): PublishOutcome {
    // JetStream reports a 503 as "jetstream is not enabled", caused by the request's NoRespondersError.
    if (has(error, NoRespondersError)) {
      // The server's 503 is an answer only from a connection that stayed up:
      // one that went down since may have reached a server not yet ready.
      if (this.link.up && this.session === session)
        return rejected(`no JetStream stream takes subject "${subject}" (create a stream whose subjects include it)`);
      return unavailable(`NATS (${this.name}) had no responder for "${subject}" across a reconnect`);
    }
    if (has(error, TimeoutError)) return unavailable(`JetStream did not acknowledge within ${this.timeoutMs} ms`);
    const api = has(error, JetStreamApiError) ?? has(error, JetStreamError);
    if (api) return rejected(`JetStream refused the message on "${subject}": ${api.message}`);
    const invalid = has(error, InvalidSubjectError) ?? has(error, InvalidArgumentError);
    if (invalid) return rejected(`NATS cannot publish it to "${subject}": ${invalid.message}`);
    // Closed, disconnected, anything else: no answer from the server.
    return unavailable(`NATS (${this.name}): ${messageOf(error)}`);
  }

  protected open(): Promise<NatsConnection> {
    return connect({
      ...natsOptions(this.options.url),
      name: this.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1_000,
      timeout: 5_000,
      // A silent server is noticed within about a minute, not the default four.
      pingInterval: 30_000,
      // Else every request captures a stack trace up front, in case it fails: a good part of a large batch's cost.
      noAsyncTraces: true,
    });
  }

  protected adopt(nc: NatsConnection): void {
    this.js = jetstream(nc);
    void this.watch(nc);
  }

  protected forget(): void {
    this.js = undefined;
  }

  /**
   * close, not drain: drain only unsubscribes the reply inbox (acks in
   * flight are lost either way) and flushes, which hangs while disconnected.
   * A publish still in flight answers unavailable.
   */
  protected end(nc: NatsConnection): Promise<void> {
    return nc.close();
  }

  /** Follows the client's status until it closes; a close we did not ask for starts over. */
  private async watch(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") this.setUp(false);
      else if (s.type === "reconnect") this.setUp(true);
      else if (s.type === "error") this.link.tell({ connected: this.link.up, error: s.error });
    }
    this.lost(nc, "now", await nc.closed());
  }

  protected override setUp(up: boolean, error?: unknown): void {
    if (!up) {
      this.session++;
      for (const resolve of this.onLost) resolve(LOST);
      this.onLost.clear();
    }
    super.setUp(up, error);
  }
}

/** A JetStream connection that connects in the background and keeps reconnecting until closed. */
export function openNats(options: BrokerConnectOptions): BrokerConnection {
  return new NatsBroker(options);
}
