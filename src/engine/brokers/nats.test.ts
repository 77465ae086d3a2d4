// The NATS JetStream driver against real servers: the machine's NATS for
// what a shared server can show, a private nats-server for what takes the
// server away (down at start, killed mid-batch), a TCP proxy for a server
// that stops answering.

import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import type { BrokerMessage } from "./broker.js";
import { openNats } from "./nats.js";
import {
  DRIVERS,
  driverHarness,
  freePort,
  lifeAfterClose,
  NATS_URL,
  natsStream,
  natsTest,
  portOf,
  said,
  statuses,
  privateNats,
  privateNatsTest,
  readStream,
  streamCount,
  tcpProxy,
  until,
  within,
} from "./test-support.js";

const encoder = new TextEncoder();

function message(id: string, subject: string, n = 0): BrokerMessage {
  return {
    id,
    destination: { kind: "nats", subject },
    headers: { "duetime-attempt": "1", "x-order": String(n) },
    body: encoder.encode(JSON.stringify({ n, id })),
    scheduledFor: 1_700_000_000_000 + n,
  };
}

const batch = (prefix: string, count: number, subject: string): BrokerMessage[] =>
  Array.from({ length: count }, (_, n) => message(`${prefix}-${String(n).padStart(6, "0")}`, subject, n));

const { open, connected } = driverHarness(openNats);

natsTest("a batch of 1,000: each acked in order, and a consumer sees each id once, in order, headers and body intact", async (t) => {
  const { stream, prefix } = await natsStream(t, "batch");
  const broker = await connected(t, NATS_URL);
  const messages = batch("order", 1000, `${prefix}.jobs`);
  const outcomes = await broker.publish(messages);

  assert.deepEqual(statuses(outcomes), { published: 1000 });
  assert.deepEqual(
    outcomes.map((o) => (o.status === "published" ? o.receipt : null)),
    messages.map((_, i) => ({ stream, seq: i + 1, duplicate: false })),
  );
  const seen = await readStream(stream);
  assert.deepEqual(
    seen.map((m) => m.id),
    messages.map((m) => m.id),
  );
  seen.forEach((m, i) => {
    assert.equal(m.subject, `${prefix}.jobs`);
    assert.deepEqual(m.headers, messages[i]!.headers);
    assert.deepEqual(Buffer.from(m.data), Buffer.from(messages[i]!.body));
  });
});

natsTest("the same id again is a duplicate JetStream drops: its receipt says so and the stream holds it once", async (t) => {
  const { stream, prefix } = await natsStream(t, "dup");
  const broker = await connected(t, NATS_URL);
  const first = await broker.publish([message("exec-1", `${prefix}.a`), message("exec-1", `${prefix}.a`)]);
  const again = await broker.publish([message("exec-1", `${prefix}.a`, 1)]);

  assert.deepEqual(
    [...first, ...again].map((o) => o.status === "published" && o.receipt),
    [
      { stream, seq: 1, duplicate: false },
      { stream, seq: 1, duplicate: true },
      { stream, seq: 1, duplicate: true },
    ],
  );
  assert.deepEqual(
    (await readStream(stream)).map((m) => m.id),
    ["exec-1"],
  );
});

natsTest("a subject no stream takes is rejected, naming the subject, without waiting for the timeout", async (t) => {
  const broker = await connected(t, NATS_URL, { confirmTimeoutMs: 20_000 });
  const subject = `dt-test.${process.pid}.nostream.x`;
  const started = Date.now();
  const [outcome] = await broker.publish([message("exec-ns", subject)]);

  assert.ok(outcome?.status === "rejected", JSON.stringify(outcome));
  assert.match(outcome.message, new RegExp(`no JetStream stream takes subject "${subject.replaceAll(".", "\\.")}"`));
  assert.ok(Date.now() - started < 5_000, "answered by the server, not by the timeout");
});

natsTest("a server that stops answering: unavailable after confirmTimeoutMs", async (t) => {
  const { stream, prefix } = await natsStream(t, "stall");
  const proxy = await tcpProxy(t, portOf(NATS_URL, 4222));
  const broker = await connected(t, proxy.url(NATS_URL), { confirmTimeoutMs: 500 });
  proxy.stall();
  const started = Date.now();
  const outcomes = await within(5_000, broker.publish([message("exec-s1", `${prefix}.a`), message("exec-s2", `${prefix}.a`, 1)]), "publish");

  assert.deepEqual(statuses(outcomes), { unavailable: 2 });
  assert.match(said(outcomes[0]), /within 500 ms/);
  assert.ok(Date.now() - started < 3_000, "answered by the timeout");
  proxy.restore();
  // The server stored them: only the ack was held back.
  await until(async () => (await streamCount(stream)) === 2, 5_000, "both stored");
});

privateNatsTest("NATS down at start: unavailable at once, then connects and publishes once the server comes up", async (t) => {
  const port = await freePort();
  const url = `nats://127.0.0.1:${port}`;
  const { broker, events } = open(t, url, { confirmTimeoutMs: 20_000 });
  assert.equal(broker.connected(), false);
  const started = Date.now();
  const outcomes = await broker.publish([message("early-1", "dt.x"), message("early-2", "dt.x")]);
  assert.deepEqual(statuses(outcomes), { unavailable: 2 });
  assert.ok(Date.now() - started < 200, `answered at once, took ${Date.now() - started} ms`);

  const server = await privateNats(t, port);
  await broker.waitConnected(10_000);
  assert.equal(broker.connected(), true);
  assert.ok(events.some((e) => e.connected));
  const { stream, prefix } = await natsStream(t, "late", server.url);
  const late = await broker.publish([message("early-1", `${prefix}.x`)]);
  assert.deepEqual(statuses(late), { published: 1 });
  assert.deepEqual(
    (await readStream(stream, server.url)).map((m) => m.id),
    ["early-1"],
  );
});

privateNatsTest(
  "a server killed mid-batch: the unacked are unavailable at once, every published one is stored, a republish stores each id once",
  async (t) => {
    const server = await privateNats(t, await freePort());
    const { stream, prefix } = await natsStream(t, "kill", server.url);
    // Through a proxy that passes on only the first part of the batch, so the
    // server stores and acks some and is killed with the rest unanswered.
    const proxy = await tcpProxy(t, portOf(server.url, 4222));
    const { broker, events } = open(t, proxy.url(server.url), { confirmTimeoutMs: 30_000 });
    await broker.waitConnected(5_000);
    const messages = batch("kill", 2_000, `${prefix}.a`);

    proxy.holdAfter(100_000);
    const started = Date.now();
    const publishing = broker.publish(messages);
    let stored = -1;
    await until(async () => stored === (stored = await streamCount(stream, server.url)) && stored > 0, 10_000, "the first part stored");
    await sleep(200); // for its acks to reach the driver
    await server.stop("SIGKILL");
    const outcomes = await publishing;
    const took = Date.now() - started;

    const counts = statuses(outcomes);
    t.diagnostic(`${JSON.stringify(counts)} in ${took} ms`);
    assert.equal(counts.rejected, undefined, "a lost connection rejects nothing");
    assert.ok((counts.published ?? 0) > 0 && (counts.unavailable ?? 0) > 0, `some of each: ${JSON.stringify(counts)}`);
    assert.ok(took < 10_000, `unavailable when the connection dropped, not after the 30 s timeout (took ${took} ms)`);
    assert.equal(broker.connected(), false);
    assert.ok(events.some((e) => !e.connected));
    const down = Date.now();
    assert.deepEqual(statuses(await broker.publish(messages.slice(0, 3))), { unavailable: 3 });
    assert.ok(Date.now() - down < 200, "while it is down, unavailable at once");

    proxy.cut(); // what it held back never reaches the restarted server
    proxy.restore();
    await server.start();
    await broker.waitConnected(10_000);
    assert.equal(broker.connected(), true);
    const ids = new Set((await readStream(stream, server.url)).map((m) => m.id));
    const published = messages.filter((_, i) => outcomes[i]!.status === "published");
    assert.deepEqual(
      published.filter((m) => !ids.has(m.id)).map((m) => m.id),
      [],
      "every published message is in the stream",
    );

    const retried = await broker.publish(messages.filter((_, i) => outcomes[i]!.status === "unavailable"));
    assert.deepEqual(Object.keys(statuses(retried)), ["published"]);
    const all = (await readStream(stream, server.url)).map((m) => m.id);
    assert.equal(all.length, messages.length, "each id once: one stored but not acked is a duplicate");
    assert.deepEqual(new Set(all), new Set(messages.map((m) => m.id)));
  },
);

natsTest("close() is idempotent, ends publishing, and leaves nothing running: the process exits by itself", async (t) => {
  const { broker } = open(t, NATS_URL);
  await broker.waitConnected(5_000);
  await Promise.all([broker.close(), broker.close()]);
  await broker.close();
  assert.equal(broker.connected(), false);
  assert.deepEqual(statuses(await broker.publish([message("after-close", "dt.x")])), { unavailable: 1 });

  const downPort = await freePort();
  const code = `
    import { openNats } from ${JSON.stringify(DRIVERS.nats)};
    const up = openNats({ name: "up", url: ${JSON.stringify(NATS_URL)} });
    const down = openNats({ name: "down", url: "nats://127.0.0.1:${downPort}" });
    await up.waitConnected(5000);
    if (!up.connected()) throw new Error("not connected");
    await up.publish([{ id: "x", destination: { kind: "nats", subject: "dt-test.exit.${process.pid}" }, headers: {}, body: new Uint8Array(), scheduledFor: 0 }]);
    await new Promise((resolve) => setTimeout(resolve, 2000)); // "down" retries on a timer by now
    await Promise.all([up.close(), up.close(), down.close(), down.close()]);
    process.stdout.write("closed\\n");
  `;
  const { ms, exitCode, stderr } = await lifeAfterClose(code, 15_000);
  assert.equal(exitCode, 0, stderr);
  assert.ok(ms !== null && ms < 500, `exits right after close (lived ${ms} ms on)`);
});
