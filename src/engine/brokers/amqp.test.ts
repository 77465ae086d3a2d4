// The AMQP (RabbitMQ) driver against the machine's RabbitMQ, each test on an
// exchange and queue of its own; what takes the broker away (down at start,
// a cut mid-batch, a broker that stops answering) runs through a TCP proxy
// the test controls.

import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { openAmqp } from "./amqp.js";
import type { BrokerMessage } from "./broker.js";
import {
  AMQP_URL,
  amqpQueue,
  amqpTest,
  DRIVERS,
  driverHarness,
  drainQueue,
  freePort,
  lifeAfterClose,
  portOf,
  said,
  statuses,
  queueDepth,
  tcpProxy,
  until,
  within,
} from "./test-support.js";

const encoder = new TextEncoder();
const SCHEDULED_FOR = 1_700_000_123_456;

function message(id: string, exchange: string, routingKey: string, n = 0): BrokerMessage {
  return {
    id,
    destination: { kind: "amqp", exchange, routingKey },
    headers: { "duetime-attempt": "1", "x-order": String(n) },
    body: encoder.encode(JSON.stringify({ n, id })),
    scheduledFor: SCHEDULED_FOR + n * 1000,
  };
}

const batch = (prefix: string, count: number, exchange: string, routingKey: string): BrokerMessage[] =>
  Array.from({ length: count }, (_, n) => message(`${prefix}-${String(n).padStart(6, "0")}`, exchange, routingKey, n));

const { open, connected } = driverHarness(openAmqp);

const AMQP_PORT = portOf(AMQP_URL, 5672);

amqpTest("a batch of 1,000: each confirmed, and the queue holds each once, in order, properties and body intact", async (t) => {
  const { exchange, queue, routingKey } = await amqpQueue(t, "batch");
  const broker = await connected(t, AMQP_URL);
  const messages = batch("order", 1000, exchange, routingKey);
  const outcomes = await broker.publish(messages);

  assert.deepEqual(statuses(outcomes), { published: 1000 });
  assert.deepEqual(outcomes[0], { status: "published", receipt: { exchange, routingKey } });
  const seen = await drainQueue(queue);
  assert.deepEqual(
    seen.map((m) => m.messageId),
    messages.map((m) => m.id),
  );
  seen.forEach((m, i) => {
    const sent = messages[i]!;
    assert.deepEqual(m.headers, sent.headers);
    assert.deepEqual(m.body, Buffer.from(sent.body));
    assert.equal(m.routingKey, routingKey);
    assert.equal(m.contentType, "application/json");
    assert.equal(m.timestamp, Math.floor(sent.scheduledFor / 1000));
  });
});

amqpTest("a batch the socket cannot take while the broker reads nothing: publish waits for the channel to drain, then all go in order", async (t) => {
  const { exchange, queue, routingKey } = await amqpQueue(t, "backpressure");
  const proxy = await tcpProxy(t, AMQP_PORT);
  const broker = await connected(t, proxy.url(AMQP_URL));
  // 12 MB: more than the kernel's socket buffers and amqplib's 1,024-frame channel buffer hold.
  const padding = "x".repeat(4096);
  const messages = batch("bp", 3_000, exchange, routingKey).map((m) => ({ ...m, body: encoder.encode(JSON.stringify({ id: m.id, padding })) }));

  proxy.holdAfter(0);
  const publishing = broker.publish(messages);
  await sleep(500);
  proxy.restore();
  const outcomes = await within(20_000, publishing, "publish");

  assert.deepEqual(statuses(outcomes), { published: 3_000 });
  assert.deepEqual(
    (await drainQueue(queue)).map((m) => m.messageId),
    messages.map((m) => m.id),
  );
});

amqpTest("an unroutable message (mandatory, no queue bound) is rejected, naming exchange and routing key; the others go", async (t) => {
  const { exchange, queue, routingKey } = await amqpQueue(t, "unroutable");
  const broker = await connected(t, AMQP_URL);
  const outcomes = await broker.publish([
    message("routed-1", exchange, routingKey),
    message("lost", exchange, "nowhere"),
    message("routed-2", exchange, routingKey),
  ]);

  assert.deepEqual(
    outcomes.map((o) => o.status),
    ["published", "rejected", "published"],
  );
  assert.equal(said(outcomes[1]), `exchange "${exchange}" routed routing key "nowhere" to no queue`);
  assert.deepEqual(
    (await drainQueue(queue)).map((m) => m.messageId),
    ["routed-1", "routed-2"],
  );
});

amqpTest("a missing exchange: that message is rejected with the broker's word, and the connection publishes on", async (t) => {
  const { exchange, queue, routingKey } = await amqpQueue(t, "missing");
  const { broker, events } = open(t, AMQP_URL);
  await broker.waitConnected(5_000);
  const missing = `${exchange}-missing`;
  const outcomes = await broker.publish([
    message("before", exchange, routingKey),
    message("bad-1", missing, routingKey),
    message("bad-2", missing, routingKey),
    message("after", exchange, routingKey),
  ]);

  // "before" may be confirmed before the broker closes the channel, or be
  // caught in flight by the close; what follows the bad one dies with the channel.
  assert.ok(["published", "unavailable"].includes(outcomes[0]!.status), JSON.stringify(outcomes[0]));
  assert.equal(outcomes[1]!.status, "rejected");
  assert.match(said(outcomes[1]), new RegExp(`NOT_FOUND - no exchange '${missing}'`));
  assert.deepEqual(
    outcomes.slice(2).map((o) => o.status),
    ["unavailable", "unavailable"],
  );
  assert.equal(broker.connected(), true);
  assert.ok(events.some((e) => "error" in e));

  const later = await broker.publish([message("later", exchange, routingKey)]);
  assert.deepEqual(later, [{ status: "published", receipt: { exchange, routingKey } }]);
  const ids = (await drainQueue(queue)).map((m) => m.messageId);
  assert.ok(ids.includes("later") && !ids.includes("after"), JSON.stringify(ids));
});

amqpTest("RabbitMQ down at start: unavailable at once, then connects and publishes once it is reachable", async (t) => {
  const { exchange, queue, routingKey } = await amqpQueue(t, "late");
  const proxy = await tcpProxy(t, AMQP_PORT);
  proxy.cut();
  const { broker, events } = open(t, proxy.url(AMQP_URL), { confirmTimeoutMs: 20_000 });
  await sleep(300); // a failed attempt or two
  assert.equal(broker.connected(), false);
  const started = Date.now();
  const early = await broker.publish([message("early-1", exchange, routingKey), message("early-2", exchange, routingKey)]);
  assert.deepEqual(statuses(early), { unavailable: 2 });
  assert.ok(Date.now() - started < 200, `answered at once, took ${Date.now() - started} ms`);
  assert.ok(
    events.some((e) => !e.connected && "error" in e),
    "told of the failed attempts",
  );

  proxy.restore();
  await broker.waitConnected(10_000);
  assert.equal(broker.connected(), true);
  const late = await broker.publish([message("early-1", exchange, routingKey)]);
  assert.deepEqual(statuses(late), { published: 1 });
  assert.deepEqual(
    (await drainQueue(queue)).map((m) => m.messageId),
    ["early-1"],
  );
});

amqpTest("a connection cut mid-batch: the unconfirmed are unavailable at once, every published one is queued, then it reconnects", async (t) => {
  const { exchange, queue, routingKey } = await amqpQueue(t, "cut");
  // The proxy passes on only the first part of the batch: the broker
  // confirms some, and the cut comes with the rest unanswered.
  const proxy = await tcpProxy(t, AMQP_PORT);
  const { broker, events } = open(t, proxy.url(AMQP_URL), { confirmTimeoutMs: 30_000 });
  await broker.waitConnected(5_000);
  const messages = batch("cut", 2_000, exchange, routingKey);

  proxy.holdAfter(100_000);
  const started = Date.now();
  const publishing = broker.publish(messages);
  let depth = -1;
  await until(async () => depth === (depth = await queueDepth(queue)) && depth > 0, 10_000, "the first part queued");
  await sleep(200); // for its confirms to reach the driver
  proxy.cut();
  const outcomes = await publishing;
  const took = Date.now() - started;

  const counts = statuses(outcomes);
  t.diagnostic(`${JSON.stringify(counts)} in ${took} ms`);
  assert.equal(counts.rejected, undefined, "a lost connection rejects nothing");
  assert.ok((counts.published ?? 0) > 0 && (counts.unavailable ?? 0) > 0, `some of each: ${JSON.stringify(counts)}`);
  assert.ok(took < 10_000, `unavailable when the connection dropped, not after the 30 s timeout (took ${took} ms)`);
  await until(() => !broker.connected(), 5_000, "connected() to turn false");
  assert.ok(events.some((e) => !e.connected));

  const queued = new Set((await drainQueue(queue)).map((m) => m.messageId));
  const published = messages.filter((_, i) => outcomes[i]!.status === "published");
  assert.deepEqual(
    published.filter((m) => !queued.has(m.id)).map((m) => m.id),
    [],
    "every published message is in the queue",
  );

  proxy.restore();
  await broker.waitConnected(10_000);
  const missed = messages.filter((m) => !queued.has(m.id));
  assert.deepEqual(Object.keys(statuses(await broker.publish(missed))), ["published"]);
  assert.deepEqual(
    (await drainQueue(queue)).map((m) => m.messageId),
    missed.map((m) => m.id),
  );
});

amqpTest("a broker that stops answering: unavailable after confirmTimeoutMs, and publishing goes on once it answers again", async (t) => {
  const { exchange, queue, routingKey } = await amqpQueue(t, "stall");
  const proxy = await tcpProxy(t, AMQP_PORT);
  const broker = await connected(t, proxy.url(AMQP_URL), { confirmTimeoutMs: 500 });
  assert.equal((await broker.publish([message("warm", exchange, routingKey)]))[0]?.status, "published");
  proxy.stall();
  const started = Date.now();
  const outcomes = await within(
    5_000,
    broker.publish([message("stalled-1", exchange, routingKey), message("stalled-2", exchange, routingKey)]),
    "publish",
  );

  assert.deepEqual(statuses(outcomes), { unavailable: 2 });
  assert.match(said(outcomes[0]), /within 500 ms/);
  assert.ok(Date.now() - started < 3_000, "answered by the timeout");
  proxy.restore();
  assert.deepEqual(statuses(await broker.publish([message("next", exchange, routingKey)])), { published: 1 });
  // The broker queued the stalled ones: only their confirms were held back.
  assert.deepEqual(
    (await drainQueue(queue)).map((m) => m.messageId),
    ["warm", "stalled-1", "stalled-2", "next"],
  );
});

amqpTest("close() is idempotent, ends publishing, and leaves nothing running: the process exits by itself", async (t) => {
  const { broker } = open(t, AMQP_URL);
  await broker.waitConnected(5_000);
  await Promise.all([broker.close(), broker.close()]);
  await broker.close();
  assert.equal(broker.connected(), false);
  assert.deepEqual(statuses(await broker.publish([message("after-close", "", "x")])), { unavailable: 1 });

  const downPort = await freePort();
  const code = `
    import { openAmqp } from ${JSON.stringify(DRIVERS.amqp)};
    const up = openAmqp({ name: "up", url: ${JSON.stringify(AMQP_URL)} });
    const down = openAmqp({ name: "down", url: "amqp://guest:guest@127.0.0.1:${downPort}" });
    await up.waitConnected(5000);
    if (!up.connected()) throw new Error("not connected");
    await up.publish([{ id: "x", destination: { kind: "amqp", exchange: "", routingKey: "dt-test-exit-${process.pid}" }, headers: {}, body: new Uint8Array(), scheduledFor: 0 }]);
    await new Promise((resolve) => setTimeout(resolve, 2000)); // "down" retries on a timer by now
    await Promise.all([up.close(), up.close(), down.close(), down.close()]);
    process.stdout.write("closed\\n");
  `;
  const { ms, exitCode, stderr } = await lifeAfterClose(code, 15_000);
  assert.equal(exitCode, 0, stderr);
  assert.ok(ms !== null && ms < 500, `exits right after close (lived ${ms} ms on)`);
});
