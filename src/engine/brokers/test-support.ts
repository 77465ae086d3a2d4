// Test support for the broker drivers: the machine's NATS (JetStream on) at
// DUETIME_TEST_NATS_URL and RabbitMQ at DUETIME_TEST_AMQP_URL, each test
// under names of its own (a stream and subject prefix, an exchange and
// queue), deleted after; never a restart or a purge of the shared brokers.
// Unreachable, the tests FAIL with CI=true and skip elsewhere, loudly.
// What takes a broker away runs on a private nats-server (its own port and
// store directory) or behind a TCP proxy the test cuts.

import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, type TestContext, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import amqp, { type Channel, type ChannelModel } from "amqplib";
import { freePort } from "../../store/redis/test-support.js";
import type { BrokerConnection, BrokerConnectOptions, PublishOutcome } from "./broker.js";

export { freePort };

export const NATS_URL = process.env.DUETIME_TEST_NATS_URL ?? "nats://127.0.0.1:4222";
export const AMQP_URL = process.env.DUETIME_TEST_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";
const CI = process.env.CI === "true";

/** Longer than the Redis tests': a broker test may wait out a restart or a reconnect. */
export const TEST_TIMEOUT_MS = 120_000;

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

// ---------------------------------------------------------------- harness

/** Why NATS at `url` cannot run the tests (down, or JetStream off), or null. */
export async function natsUnreachable(url: string): Promise<string | null> {
  let nc: NatsConnection | undefined;
  try {
    nc = await natsConnect({ servers: url, reconnect: false, timeout: 3_000 });
    await (await jetstreamManager(nc)).getAccountInfo();
    return null;
  } catch (error) {
    return messageOf(error);
  } finally {
    await nc?.close();
  }
}

export async function amqpUnreachable(url: string): Promise<string | null> {
  try {
    const model = await amqp.connect(url, { timeout: 3_000 });
    model.on("error", () => {});
    await model.close();
    return null;
  } catch (error) {
    return messageOf(error);
  }
}

const [natsDown, amqpDown] = await Promise.all([natsUnreachable(NATS_URL), amqpUnreachable(AMQP_URL)]);

const NATS_SERVER = existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server";
export const hasNatsServer = !spawnSync(NATS_SERVER, ["--version"]).error;

const warned = new Set<string>();
/** The skip banner, once per missing thing, printed only by a file that has tests needing it. */
function banner(what: string, detail: string): void {
  if (CI || warned.has(what)) return;
  warned.add(what);
  process.stderr.write(
    `\n${"!".repeat(78)}\n!! SKIPPED: ${what} (${detail}): its tests cannot run.\n!! CI=true fails instead.\n${"!".repeat(78)}\n\n`,
  );
}

/** A test that needs `down === null`: fails with CI=true when it is not, else skips loudly. */
function gatedTest(name: string, fn: (t: TestContext) => Promise<void>, what: string, down: string | null): void {
  if (down === null) test(name, { timeout: TEST_TIMEOUT_MS }, fn);
  else if (CI)
    test(name, () => {
      throw new Error(`${what} (${down}); CI=true requires it`);
    });
  else {
    banner(what, down);
    test(name, { skip: `${what}: ${down}` }, () => {});
  }
}

/** A test on the shared NATS (set DUETIME_TEST_NATS_URL to point elsewhere). */
export function natsTest(name: string, fn: (t: TestContext) => Promise<void>): void {
  gatedTest(name, fn, `NATS with JetStream at ${NATS_URL} is not reachable`, natsDown);
}

/** A test that starts its own nats-server (privateNats). */
export function privateNatsTest(name: string, fn: (t: TestContext) => Promise<void>): void {
  gatedTest(name, fn, "the nats-server binary is not available", hasNatsServer ? null : `${NATS_SERVER} not found`);
}

/** A test on the shared RabbitMQ (set DUETIME_TEST_AMQP_URL to point elsewhere). */
export function amqpTest(name: string, fn: (t: TestContext) => Promise<void>): void {
  gatedTest(name, fn, `RabbitMQ at ${AMQP_URL.replace(/\/\/[^@/]*@/, "//")} is not reachable`, amqpDown);
}

let names = 0;

/** A name of this test's own: process, label and a counter. */
export function testName(label: string): string {
  return `dt-test-${process.pid}-${label.replace(/[^A-Za-z0-9_-]/g, "_")}-${++names}`;
}

// ---------------------------------------------------------------- NATS

async function withNats<T>(url: string, fn: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await natsConnect({ servers: url, reconnect: false, timeout: 3_000 });
  try {
    return await fn(nc);
  } finally {
    await nc.close();
  }
}

/**
 * A JetStream stream of this test's own, taking `${prefix}.>`, deleted after
 * (on the shared server; a private server's store goes with its directory).
 */
export async function natsStream(t: TestContext, label: string, url = NATS_URL): Promise<{ stream: string; prefix: string }> {
  const stream = testName(label);
  const prefix = stream.replaceAll("-", ".");
  await withNats(url, async (nc) => {
    await (await jetstreamManager(nc)).streams.add({ name: stream, subjects: [`${prefix}.>`] });
  });
  if (url === NATS_URL)
    t.after(() =>
      withNats(url, async (nc) => {
        await (await jetstreamManager(nc)).streams.delete(stream);
      }),
    );
  return { stream, prefix };
}

export interface StreamMessage {
  /** The Nats-Msg-Id header. */
  id: string | undefined;
  /** The other headers. */
  headers: Record<string, string>;
  data: Uint8Array;
  subject: string;
}

/** Every message the stream holds, in stream order (an ordered consumer). */
export async function readStream(stream: string, url = NATS_URL): Promise<StreamMessage[]> {
  return withNats(url, async (nc) => {
    const info = await (await jetstreamManager(nc)).streams.info(stream);
    const out: StreamMessage[] = [];
    if (info.state.messages === 0) return out;
    const messages = await (await jetstream(nc).consumers.get(stream)).consume();
    for await (const m of messages) {
      const headers: Record<string, string> = {};
      for (const k of m.headers?.keys() ?? []) if (k !== "Nats-Msg-Id") headers[k] = m.headers!.get(k);
      out.push({ id: m.headers?.get("Nats-Msg-Id"), headers, data: m.data, subject: m.subject });
      if (m.info.pending === 0) break;
    }
    await messages.close();
    return out;
  });
}

/** How many messages the stream holds. */
export async function streamCount(stream: string, url = NATS_URL): Promise<number> {
  return withNats(url, async (nc) => (await (await jetstreamManager(nc)).streams.info(stream)).state.messages);
}

export interface PrivateNats {
  url: string;
  /** Kills the server (SIGKILL by default: no goodbye to its clients) and waits for its exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and store directory: JetStream's streams and messages survive. */
  start(): Promise<void>;
}

/** A throwaway nats-server with JetStream on `port`, started now, stopped and removed after the test. */
export async function privateNats(t: TestContext, port: number): Promise<PrivateNats> {
  const dir = mkdtempSync(join(tmpdir(), "dt-nats-"));
  const url = `nats://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const stop = async (signal: NodeJS.Signals = "SIGKILL") => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill(signal);
    await exited;
  };
  const start = async () => {
    child = spawn(NATS_SERVER, ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir], { stdio: "ignore" });
    for (let i = 0; i < 500; i++) {
      if ((await natsUnreachable(url)) === null) return;
      if (child.exitCode !== null) break;
      await sleep(20);
    }
    throw new Error(`private nats-server on ${port} did not start`);
  };
  t.after(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });
  await start();
  return { url, stop, start };
}

// ---------------------------------------------------------------- AMQP

let adminModel: Promise<ChannelModel> | undefined;
after(async () => {
  const model = await adminModel?.catch(() => undefined);
  await model?.close().catch(() => {});
});

/** `fn` on a channel of its own (a failed operation closes its channel) on the shared admin connection. */
async function withChannel<T>(fn: (ch: Channel) => Promise<T>): Promise<T> {
  adminModel ??= amqp.connect(AMQP_URL).then((model) => model.on("error", () => {}));
  const ch = await (await adminModel).createChannel();
  ch.on("error", () => {});
  try {
    return await fn(ch);
  } finally {
    await ch.close().catch(() => {});
  }
}

/** A direct exchange and a queue bound to it by `routingKey`, of this test's own, deleted after. */
export async function amqpQueue(t: TestContext, label: string): Promise<{ exchange: string; queue: string; routingKey: string }> {
  const exchange = testName(label);
  const queue = `${exchange}-q`;
  const routingKey = "due";
  await withChannel(async (ch) => {
    await ch.assertExchange(exchange, "direct", { durable: false });
    await ch.assertQueue(queue, { durable: false });
    await ch.bindQueue(queue, exchange, routingKey);
  });
  t.after(() =>
    withChannel(async (ch) => {
      await ch.deleteQueue(queue);
      await ch.deleteExchange(exchange);
    }),
  );
  return { exchange, queue, routingKey };
}

export interface QueueMessage {
  messageId: string | undefined;
  headers: Record<string, unknown>;
  body: Buffer;
  routingKey: string;
  timestamp: number | undefined;
  contentType: string | undefined;
}

/** Takes every message the queue holds, in queue order (basic.get until empty). */
export async function drainQueue(queue: string): Promise<QueueMessage[]> {
  return withChannel(async (ch) => {
    const out: QueueMessage[] = [];
    for (let m = await ch.get(queue, { noAck: true }); m !== false; m = await ch.get(queue, { noAck: true })) {
      const p = m.properties;
      out.push({
        messageId: p.messageId,
        headers: p.headers ?? {},
        body: m.content,
        routingKey: m.fields.routingKey,
        timestamp: p.timestamp,
        contentType: p.contentType,
      });
    }
    return out;
  });
}

export async function queueDepth(queue: string): Promise<number> {
  return withChannel(async (ch) => (await ch.checkQueue(queue)).messageCount);
}

// ---------------------------------------------------------------- faults

export interface TcpProxy {
  port: number;
  /** `base` with its host and port replaced by the proxy's. */
  url(base: string): string;
  /** Destroys every live connection and, until restore, every new one. */
  cut(): void;
  /** Holds back what the broker sends (the connections stay up, the client hears nothing) until restore. */
  stall(): void;
  /** Forwards only the next `bytes` bytes clients send, and holds back the rest until restore. */
  holdAfter(bytes: number): void;
  restore(): void;
}

/** One direction of the proxy: how many more bytes it forwards; past that it stops reading (TCP backpressure). */
interface Flow {
  budget: number;
  held: { from: Socket; to: Socket; chunk: Buffer }[];
}

function forward(flow: Flow, from: Socket, to: Socket): void {
  from.on("data", (chunk: Buffer) => {
    const n = Math.min(flow.budget, chunk.length);
    if (n > 0) to.write(chunk.subarray(0, n));
    flow.budget -= n;
    if (n === chunk.length) return;
    from.pause();
    flow.held.push({ from, to, chunk: chunk.subarray(n) });
  });
}

/** A TCP proxy on a free port to 127.0.0.1:`targetPort`, closed after the test. */
export async function tcpProxy(t: TestContext, targetPort: number): Promise<TcpProxy> {
  const live = new Set<Socket>();
  const toBroker: Flow = { budget: Number.POSITIVE_INFINITY, held: [] };
  const toClient: Flow = { budget: Number.POSITIVE_INFINITY, held: [] };
  let isCut = false;
  const server = createServer((client) => {
    if (isCut) return void client.destroy();
    const upstream = netConnect(targetPort, "127.0.0.1");
    const end = () => {
      for (const s of [client, upstream]) {
        s.destroy();
        live.delete(s);
      }
    };
    for (const s of [client, upstream]) live.add(s.on("error", end).on("close", end));
    forward(toBroker, client, upstream);
    forward(toClient, upstream, client);
  });
  const cut = () => {
    isCut = true;
    for (const s of [...live]) s.destroy();
  };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(async () => {
    cut();
    await new Promise((resolve) => server.close(resolve));
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  const port = address.port;
  return {
    port,
    url(base) {
      const u = new URL(base);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString();
    },
    cut,
    stall: () => void (toClient.budget = 0),
    holdAfter: (bytes) => void (toBroker.budget = bytes),
    restore() {
      isCut = false;
      for (const flow of [toBroker, toClient]) {
        flow.budget = Number.POSITIVE_INFINITY;
        for (const { from, to, chunk } of flow.held.splice(0)) {
          if (!to.destroyed) to.write(chunk);
          from.resume();
        }
      }
    },
  };
}

/** The port a broker URL names, or the scheme's default. */
export function portOf(url: string, fallback: number): number {
  return Number(new URL(url).port || fallback);
}

/**
 * Runs `code` (an ES module body; it may import the drivers by the URLs in
 * DRIVERS) in a node process of its own, which writes "closed" on stdout
 * once it has closed its drivers. Answers how long the process lived on
 * after that (null: it did not end within `withinMs`): a timer or socket a
 * driver left behind keeps it alive.
 */
export async function lifeAfterClose(code: string, withinMs: number): Promise<{ ms: number | null; exitCode: number | null; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  let closedAt: number | undefined;
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on("data", (chunk: Buffer) => {
    if (chunk.toString().includes("closed")) closedAt ??= Date.now();
  });
  const exit = new Promise<number>((resolve) => child.once("exit", () => resolve(Date.now())));
  let timer: NodeJS.Timeout | undefined;
  const endedAt = await Promise.race([exit, new Promise<null>((resolve) => (timer = setTimeout(resolve, withinMs, null)))]);
  clearTimeout(timer);
  if (endedAt === null) {
    child.kill("SIGKILL");
    await exit;
  }
  const ms = endedAt === null || closedAt === undefined ? null : endedAt - closedAt;
  return { ms, exitCode: child.exitCode, stderr };
}

/** The driver modules as file URLs, for exitsByItself's code to import. */
export const DRIVERS = {
  nats: new URL("./nats.ts", import.meta.url).href,
  amqp: new URL("./amqp.ts", import.meta.url).href,
};

/** `work`, or a failure after `ms` naming `what`: a hang fails fast instead of at the test's timeout. */
export async function within<T>(ms: number, work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` every few ms until it is true, failing after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(5);
  }
}

// ---------------------------------------------------------------- drivers

/** Opening a driver in a test: closed after it, with the status events it told; `connected` waits until it is up. */
export function driverHarness(openDriver: (o: BrokerConnectOptions) => BrokerConnection) {
  const open = (
    t: TestContext,
    url: string,
    o: Partial<BrokerConnectOptions> = {},
  ): { broker: BrokerConnection; events: { connected: boolean }[] } => {
    const events: { connected: boolean }[] = [];
    const broker = openDriver({ name: "test", url, onStatus: (e) => events.push(e), ...o });
    t.after(() => broker.close());
    return { broker, events };
  };
  const connected = async (t: TestContext, url: string, o: Partial<BrokerConnectOptions> = {}): Promise<BrokerConnection> => {
    const { broker } = open(t, url, o);
    await broker.waitConnected(5_000);
    assert.equal(broker.connected(), true, "connected within 5 s");
    return broker;
  };
  return { open, connected };
}

/** An outcome's message ("" when published). */
export const said = (o: PublishOutcome | undefined): string => (o === undefined || o.status === "published" ? "" : o.message);

/** How many outcomes of each status. */
export const statuses = (outcomes: PublishOutcome[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const o of outcomes) counts[o.status] = (counts[o.status] ?? 0) + 1;
  return counts;
};
