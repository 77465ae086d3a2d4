// Broker targets end to end: `duetime serve --broker …` as a real process,
// real NATS (JetStream) and RabbitMQ, the store of the pass (SQLite, or
// PostgreSQL with DUETIME_TEST_STORE=postgres). The machine's shared brokers
// are only published to, each test under names of its own; what goes away
// (a broker, a connection) is a private nats-server or a TCP proxy the test
// controls, never the shared broker.
//
// - delivery: 10,000 due jobs to each broker; every execution id arrives
//   once, in scheduled order per subject (NATS) and in the queue (RabbitMQ);
// - relay crash: the broker's confirms held back (so messages are stored but
//   not marked published), then the server SIGKILLed: a second server
//   publishes them again with the same ids; JetStream drops the repeats, and
//   RabbitMQ's repeats carry the same message_id;
// - broker restart / connection cut mid-stream: nothing lost, the outbox
//   waits (duetime_broker_connected 0) and drains after;
// - bad config: a target naming a broker the server was not given is a 400
//   naming the field.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { after } from "node:test";
import { DuetimeClient, type JobSpec, type Target } from "@duetime/sdk";
import { executionIdFor } from "../src/core/ids.js";
import {
  AMQP_URL,
  amqpQueue,
  amqpTest,
  drainQueue,
  freePort,
  NATS_URL,
  natsStream,
  natsTest,
  portOf,
  privateNats,
  privateNatsTest,
  queueDepth,
  readStream,
  type StreamMessage,
  streamCount,
  tcpProxy,
} from "../src/engine/brokers/test-support.js";
import { apiError, type ServerProcess, spawnServer, testStore, type TestStore, waitFor } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-brokers-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let stores = 0;

/** A store of the test's own and a server on it with these brokers; stopped after. */
async function serve(
  t: TestContext,
  brokers: Record<string, string>,
  store?: TestStore,
): Promise<{ server: ServerProcess; client: DuetimeClient; store: TestStore }> {
  const own = store ?? testStore(mkdtempSync(join(dir, `s${stores++}-`)));
  const args = Object.entries(brokers).flatMap(([name, url]) => ["--broker", `${name}=${url}`]);
  const server = await spawnServer(own, args);
  const client = new DuetimeClient({ url: server.url, retries: 0 });
  t.after(async () => {
    await client.close();
    await server.stop("SIGKILL");
  });
  return { server, client, store: own };
}

interface Planned {
  jobId: string;
  executionId: string;
  scheduledFor: number;
}

/** Creates `count` one-off jobs, due `stepMs` apart from `start`, in batches; their execution ids in due order. */
async function createJobs(
  client: DuetimeClient,
  count: number,
  target: (i: number) => Target,
  start: number,
  stepMs: number,
  extra: Partial<JobSpec> = {},
): Promise<Planned[]> {
  const planned: Planned[] = [];
  for (let from = 0; from < count; from += 1000) {
    const specs = Array.from({ length: Math.min(1000, count - from) }, (_, k): JobSpec => {
      const i = from + k;
      return { name: `b${i}`, target: target(i), payload: { i }, schedule: { runAt: new Date(start + i * stepMs).toISOString() }, ...extra };
    });
    const results = await client.createJobs(specs);
    results.forEach((r, k) => {
      assert.ok("jobId" in r, `create ${from + k} failed: ${JSON.stringify(r)}`);
      const scheduledFor = start + (from + k) * stepMs;
      planned.push({ jobId: r.jobId, executionId: executionIdFor(r.jobId, scheduledFor), scheduledFor });
    });
  }
  return planned;
}

/** One message through the server and back confirmed: its channel or connection is open before a test holds back the broker's answers. */
async function warmUp(client: DuetimeClient, target: Target): Promise<void> {
  const job = await client.createJob({ name: "warm-up", target, schedule: { delaySeconds: 0 } });
  await waitFor(async () => (await client.listExecutions(job.jobId)).items[0]?.state === "SUCCEEDED", "the warm-up message confirmed");
}

const published = async (server: ServerProcess, broker: string): Promise<number> =>
  Number((await metric(server, new RegExp(`duetime_broker_messages_total\\{broker="${broker}",outcome="published"\\} (\\d+)`))) ?? 0);

const header = (headers: Record<string, unknown>, name: string): string | undefined => {
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : String(headers[key]);
};

const metric = async (server: ServerProcess, pattern: RegExp): Promise<string | null> => {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return pattern.exec(text)?.[1] ?? null;
};

/** Every planned id is there, and nothing else. */
function assertEveryIdOnce(ids: (string | undefined)[], planned: Planned[]): void {
  assert.equal(ids.length, planned.length, "one message per execution");
  assert.deepEqual(new Set(ids), new Set(planned.map((p) => p.executionId)));
}

/** Per subject, the messages' due times never go back. */
function assertOrderPerSubject(messages: StreamMessage[]): void {
  const last = new Map<string, number>();
  for (const m of messages) {
    const due = Date.parse(header(m.headers, "duetime-scheduled-for") ?? "");
    assert.ok(due >= (last.get(m.subject) ?? 0), `${m.subject}: ${m.id} came after a later one`);
    last.set(m.subject, due);
  }
}

natsTest("delivery to NATS: 10,000 due jobs over 4 subjects; every execution id arrives once, in scheduled order per subject", async (t) => {
  const { stream, prefix } = await natsStream(t, "deliver");
  const { client } = await serve(t, { nats: NATS_URL });
  const planned = await createJobs(client, 10_000, (i) => ({ type: "nats", subject: `${prefix}.s${i % 4}` }), Date.now() - 60_000, 1);
  await waitFor(async () => (await streamCount(stream)) >= planned.length, "10,000 messages in the stream", 120_000);
  const messages = await readStream(stream);
  assertEveryIdOnce(
    messages.map((m) => m.id),
    planned,
  );
  assertOrderPerSubject(messages);
  const first = messages.find((m) => m.id === planned[0]!.executionId)!;
  assert.equal(header(first.headers, "duetime-attempt"), "1");
  assert.equal(header(first.headers, "duetime-job-id"), planned[0]!.jobId);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(first.data)), { i: 0 });
  const [execution] = (await client.listExecutions(planned[0]!.jobId)).items;
  await waitFor(async () => (await client.listExecutions(planned.at(-1)!.jobId)).items[0]?.state === "SUCCEEDED", "the last one completed");
  assert.deepEqual(Object.keys((execution?.result ?? {}) as object).sort(), ["duplicate", "seq", "stream"]);
});

amqpTest("delivery to RabbitMQ: 10,000 due jobs; every execution id arrives once as message_id, in scheduled order", async (t) => {
  const { exchange, queue, routingKey } = await amqpQueue(t, "deliver");
  const { client } = await serve(t, { amqp: AMQP_URL });
  const planned = await createJobs(client, 10_000, () => ({ type: "amqp", exchange, routingKey }), Date.now() - 60_000, 1);
  await waitFor(async () => (await queueDepth(queue)) >= planned.length, "10,000 messages in the queue", 120_000);
  const messages = await drainQueue(queue);
  assertEveryIdOnce(
    messages.map((m) => m.messageId),
    planned,
  );
  const dues = messages.map((m) => Date.parse(header(m.headers, "duetime-scheduled-for") ?? ""));
  assert.ok(
    dues.every((d, i) => i === 0 || d >= dues[i - 1]!),
    "the queue holds them in scheduled order",
  );
  assert.equal(messages[0]!.contentType, "application/json");
  assert.equal(header(messages[0]!.headers, "duetime-attempt"), "1");
});

natsTest(
  "relay crash: confirms held back, the server SIGKILLed; the next server republishes with the same ids and JetStream keeps one of each",
  async (t) => {
    const { stream, prefix } = await natsStream(t, "crash");
    const proxy = await tcpProxy(t, portOf(NATS_URL, 4222));
    const first = await serve(t, { nats: proxy.url(NATS_URL) });
    await warmUp(first.client, { type: "nats", subject: `${prefix}.warm` });
    proxy.stall(); // JetStream stores what the relay sends, but its acks never reach the relay
    const planned = await createJobs(first.client, 100, () => ({ type: "nats", subject: `${prefix}.x` }), Date.now() - 1_000, 1, {
      timeoutSeconds: 1,
      retry: { maxAttempts: 5, backoffSeconds: 0.2, maxBackoffSeconds: 0.2 },
    });
    await waitFor(async () => (await streamCount(stream)) >= planned.length + 1, "all 100 stored, none confirmed", 30_000);
    await first.server.stop("SIGKILL");
    const second = await serve(t, { nats: NATS_URL }, first.store);
    // The dead server's leases expire (timeoutSeconds + grace), then its attempts are republished
    // (retries at the retry budget's pace: 10 a second beyond a share of first attempts).
    await waitFor(async () => (await published(second.server, "nats")) >= planned.length, "all 100 republished and confirmed", 90_000);
    const messages = (await readStream(stream)).filter((m) => !m.subject.endsWith(".warm"));
    assertEveryIdOnce(
      messages.map((m) => m.id),
      planned,
    );
    // The publish is counted when JetStream confirms it; its outcome is written a moment later (batched).
    const done = await waitFor(async () => {
      const [newest] = (await second.client.listExecutions(planned[0]!.jobId)).items;
      return newest?.state === "SUCCEEDED" ? newest : null;
    }, "the republished execution recorded SUCCEEDED");
    assert.equal((done.result as { duplicate?: boolean } | undefined)?.duplicate, true, "JetStream answered the republish as a duplicate");
    assert.ok(done.attempt >= 2, "republished by a later attempt");
  },
);

amqpTest(
  "relay crash on RabbitMQ: confirms held back, the server SIGKILLed; the repeats carry the same message_id and a later attempt",
  async (t) => {
    const { exchange, queue, routingKey } = await amqpQueue(t, "crash");
    const proxy = await tcpProxy(t, portOf(AMQP_URL, 5672));
    const first = await serve(t, { amqp: proxy.url(AMQP_URL) });
    await warmUp(first.client, { type: "amqp", exchange, routingKey });
    proxy.stall(); // RabbitMQ queues what the relay sends, but its confirms never reach the relay
    const planned = await createJobs(first.client, 100, () => ({ type: "amqp", exchange, routingKey }), Date.now() - 1_000, 1, {
      timeoutSeconds: 1,
      retry: { maxAttempts: 5, backoffSeconds: 0.2, maxBackoffSeconds: 0.2 },
    });
    await waitFor(async () => (await queueDepth(queue)) >= planned.length + 1, "all 100 queued, none confirmed", 30_000);
    await first.server.stop("SIGKILL");
    const second = await serve(t, { amqp: AMQP_URL }, first.store);
    await waitFor(async () => (await published(second.server, "amqp")) >= planned.length, "all 100 republished and confirmed", 90_000);
    const messages = (await drainQueue(queue)).filter((m) => m.body.toString() !== "null"); // not the warm-up
    const byId = new Map<string, string[]>();
    for (const m of messages) byId.set(m.messageId!, [...(byId.get(m.messageId!) ?? []), header(m.headers, "duetime-attempt")!]);
    assert.deepEqual(new Set(byId.keys()), new Set(planned.map((p) => p.executionId)), "every execution, nothing else");
    for (const [id, attempts] of byId) {
      assert.equal(attempts.length, 2, `${id}: published twice`);
      assert.ok(Number(attempts[1]) > Number(attempts[0]), `${id}: the repeat is a later attempt (${attempts})`);
    }
  },
);

privateNatsTest("NATS restarted mid-stream: the outbox waits while it is down, and drains after; nothing lost", async (t) => {
  const nats = await privateNats(t, await freePort());
  const { stream, prefix } = await natsStream(t, "restart", nats.url);
  const { server, client } = await serve(t, { nats: nats.url });
  const planned = await createJobs(client, 2_000, (i) => ({ type: "nats", subject: `${prefix}.s${i % 2}` }), Date.now() + 1_000, 2);
  await waitFor(async () => (await streamCount(stream, nats.url)) > 200, "part of the stream published", 30_000);
  await nats.stop();
  await waitFor(async () => (await metric(server, /duetime_broker_connected\{broker="nats"\} (\d)/)) === "0", "the relay saw it go", 30_000);
  await waitFor(
    async () => Number(await metric(server, /duetime_ready_depth\{pool="\$broker:nats"\} (\d+)/)) > 0,
    "the outbox grows while NATS is down",
    30_000,
  );
  await nats.start();
  await waitFor(async () => (await streamCount(stream, nats.url)) >= planned.length, "the backlog drained", 90_000);
  const messages = await readStream(stream, nats.url);
  assertEveryIdOnce(
    messages.map((m) => m.id),
    planned,
  );
});

amqpTest("the RabbitMQ connection cut mid-stream: nothing lost, the backlog drained after", async (t) => {
  const { exchange, queue, routingKey } = await amqpQueue(t, "cut");
  const proxy = await tcpProxy(t, portOf(AMQP_URL, 5672));
  const { server, client } = await serve(t, { amqp: proxy.url(AMQP_URL) });
  const planned = await createJobs(client, 2_000, () => ({ type: "amqp", exchange, routingKey }), Date.now() + 1_000, 2);
  await waitFor(async () => (await queueDepth(queue)) > 200, "part of it published", 30_000);
  proxy.cut();
  await waitFor(async () => (await metric(server, /duetime_broker_connected\{broker="amqp"\} (\d)/)) === "0", "the relay saw the cut", 30_000);
  await waitFor(async () => Number(await metric(server, /duetime_ready_depth\{pool="\$broker:amqp"\} (\d+)/)) > 0, "the outbox grows", 30_000);
  proxy.restore();
  await waitFor(
    async () => {
      const [last] = (await client.listExecutions(planned.at(-1)!.jobId)).items;
      return last?.state === "SUCCEEDED";
    },
    "the backlog drained",
    90_000,
  );
  const ids = new Set((await drainQueue(queue)).map((m) => m.messageId));
  for (const p of planned) assert.ok(ids.has(p.executionId), `${p.executionId} lost`);
  assert.equal(ids.size, planned.length, "nothing but the planned executions");
});

natsTest("a target naming a broker the server was not given is refused with 400 and the field named; nothing is created", async (t) => {
  const { client } = await serve(t, { nats: NATS_URL });
  const job = (target: Target): JobSpec => ({ name: "x", target, schedule: { delaySeconds: 60 } });
  const amqp = await apiError(client.createJob(job({ type: "amqp", exchange: "", routingKey: "q" })));
  assert.equal(amqp.status, 400);
  assert.equal(amqp.code, "INVALID_ARGUMENT");
  assert.equal(amqp.details?.field, "target.type");
  assert.match(amqp.message, /no broker named "amqp" is configured on this server \(configured: "nats"; start the server with --broker amqp=URL\)/);
  const named = await apiError(client.createJob(job({ type: "nats", subject: "a.b", broker: "eu" })));
  assert.equal(named.details?.field, "target.broker");
  const wrongKind = await apiError(client.createJob(job({ type: "amqp", exchange: "", routingKey: "q", broker: "nats" })));
  assert.match(wrongKind.message, /broker "nats" takes nats targets, not amqp/);
  const created = await client.createJob(job({ type: "queue", pool: "p" }));
  const patched = await apiError(client.updateJob(created.jobId, { target: { type: "amqp", exchange: "", routingKey: "q" } }));
  assert.equal(patched.details?.field, "target.type");
  assert.equal((await client.listJobs()).items.length, 1, "only the queue job exists");
});
