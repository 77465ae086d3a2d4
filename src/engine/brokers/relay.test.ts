// The outbox relay inside a real engine (SQLite file, real clock), with a
// scripted broker in place of a driver (the drivers have their own tests
// against real brokers, and test/broker-targets.test.ts runs the whole path
// against them). What the broker answers decides each attempt: a confirm
// completes it with the receipt, a refusal fails it under the job's retry
// policy into dead letters, no answer hands it back without spending an
// attempt; while the broker is down nothing is leased.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { JobSpec } from "@duetime/sdk/contract";
import { waitFor } from "../../../test/helpers.js";
import { openEngine, type Engine } from "../engine.js";
import { DEFAULT_CONTEXT as ctx } from "../service.js";
import type { BrokerConnection, BrokerConnectOptions, BrokerMessage, PublishOutcome } from "./broker.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-relay-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** A broker that answers as the test says, and remembers every batch it was given. */
class ScriptedBroker implements BrokerConnection {
  readonly kind = "nats" as const;
  up = true;
  answer: (m: BrokerMessage) => PublishOutcome = (m) => ({ status: "published", receipt: { seq: Number(m.headers["x-seq"] ?? 0) } });
  readonly batches: BrokerMessage[][] = [];
  constructor(readonly name: string) {}
  connected(): boolean {
    return this.up;
  }
  async publish(messages: readonly BrokerMessage[]): Promise<PublishOutcome[]> {
    this.batches.push([...messages]);
    return messages.map((m) => this.answer(m));
  }
  async waitConnected(ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (!this.up && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  }
  async close(): Promise<void> {}
  get messages(): BrokerMessage[] {
    return this.batches.flat();
  }
}

async function setup(settings: { ratePerSecond?: number } = {}): Promise<{ engine: Engine; broker: ScriptedBroker }> {
  let broker: ScriptedBroker | undefined;
  const engine = await openEngine({
    store: `sqlite:${join(dir, `r${n++}.db`)}`,
    httpTargets: false,
    brokers: { nats: { url: "nats://127.0.0.1:4222", ...settings } },
    openBrokerConnection: (o: BrokerConnectOptions) => (broker = new ScriptedBroker(o.name)),
  });
  after(() => engine.stop());
  return { engine, broker: broker! };
}

const natsJob = (i: number, extra: Partial<JobSpec> = {}): JobSpec => ({
  name: `j${i}`,
  target: { type: "nats", subject: "orders.due", headers: { "x-seq": String(i), "duetime-attempt": "forged" } },
  payload: { i },
  schedule: { delaySeconds: 0 },
  ...extra,
});

const executions = async (engine: Engine, jobId: string) => (await engine.service.listExecutions(ctx, jobId, {})).items;

test("published messages carry the execution id, the attempt and the payload, in scheduled order; the receipt is the attempt's result", async () => {
  const { engine, broker } = await setup();
  const base = Date.now() - 60_000;
  // Created in reverse: the relay must publish by due time, not by creation.
  const jobs = [];
  for (let i = 19; i >= 0; i--)
    jobs.push(await engine.service.createJob(ctx, natsJob(i, { schedule: { runAt: new Date(base + i * 1000).toISOString() } })));
  await engine.start();
  await waitFor(() => broker.messages.length >= 20, "20 messages published");
  const seqs = broker.messages.map((m) => Number(m.headers["x-seq"]));
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
    "published in scheduled order",
  );
  const first = broker.messages[0]!;
  const job = jobs.find((j) => j.name === "j0")!;
  const [execution] = await executions(engine, job.jobId);
  assert.equal(first.id, execution!.executionId);
  assert.deepEqual(first.destination, { kind: "nats", subject: "orders.due" });
  assert.equal(first.headers["duetime-execution-id"], execution!.executionId);
  assert.equal(first.headers["duetime-attempt"], "1", "a job's header cannot forge duetime's own");
  assert.equal(first.headers["duetime-job-id"], job.jobId);
  assert.equal(first.headers["duetime-scheduled-for"], new Date(base).toISOString());
  assert.equal(first.headers["idempotency-key"], `${job.jobId}:${new Date(base).toISOString()}`);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(first.body)), { i: 0 });
  await waitFor(async () => (await executions(engine, job.jobId))[0]?.state === "SUCCEEDED", "the execution completed");
  const [done] = await executions(engine, job.jobId);
  assert.deepEqual(done!.result, { seq: 0 });
  assert.match(await engine.metricsText(), /duetime_broker_messages_total\{broker="nats",outcome="published"\} 20/);
});

test("a refused message fails its attempt under the job's retry policy, and ends in dead letters", async () => {
  const { engine, broker } = await setup();
  broker.answer = () => ({ status: "rejected", message: 'no JetStream stream takes subject "orders.due"' });
  const job = await engine.service.createJob(ctx, natsJob(1, { retry: { maxAttempts: 3, backoffSeconds: 0.05, maxBackoffSeconds: 0.05 } }));
  await engine.start();
  await waitFor(async () => (await executions(engine, job.jobId))[0]?.state === "DEAD", "the execution is dead-lettered", 20_000);
  assert.equal(broker.messages.length, 3, "one publish per attempt");
  assert.deepEqual(
    broker.messages.map((m) => m.headers["duetime-attempt"]),
    ["1", "2", "3"],
  );
  assert.equal(new Set(broker.messages.map((m) => m.id)).size, 1, "every attempt carries the same id");
  const [dead] = (await engine.service.listDeadLetters(ctx, {})).items;
  assert.equal(dead?.jobId, job.jobId);
  assert.match(dead?.lastError?.message ?? "", /no JetStream stream takes subject/);
  assert.equal(dead?.lastError?.code, "BROKER_REJECTED");
});

test("no answer hands the message back unspent; while the broker is down nothing is leased, and it goes out once it is back", async () => {
  const { engine, broker } = await setup();
  broker.answer = () => ({ status: "unavailable", message: "no confirm within 10000 ms" });
  const job = await engine.service.createJob(ctx, natsJob(1, { retry: { maxAttempts: 1 } }));
  await engine.start();
  await waitFor(() => broker.messages.length >= 2, "published again after no answer");
  broker.up = false;
  const tried = broker.messages.length;
  broker.answer = (m) => ({ status: "published", receipt: { id: m.id } });
  // Down: the execution waits READY in the outbox; give the relay time to (wrongly) lease it.
  await new Promise((r) => setTimeout(r, 1_500));
  assert.equal(broker.messages.length, tried, "nothing published while the broker is down");
  assert.deepEqual(await engine.service.poolStats(ctx, "$broker:nats"), { pending: 0, queued: 1, running: 0 }, "waiting in the outbox");
  const [waiting] = await executions(engine, job.jobId);
  assert.equal(waiting?.state, "QUEUED", "its history shows it waiting");
  broker.up = true;
  await waitFor(async () => (await executions(engine, job.jobId))[0]?.state === "SUCCEEDED", "published after the broker came back", 20_000);
  assert.match(await engine.metricsText(), /duetime_broker_messages_total\{broker="nats",outcome="unavailable"\} [1-9]/);
});

test("a drain rate holds every round to the tokens it has: no batch is larger than the rate's burst", async () => {
  const { engine, broker } = await setup({ ratePerSecond: 5 });
  for (let i = 0; i < 12; i++) await engine.service.createJob(ctx, natsJob(i));
  await engine.start();
  await waitFor(() => broker.messages.length >= 12, "all 12 published", 20_000);
  assert.ok(
    broker.batches.every((b) => b.length <= 5),
    `batches ${broker.batches.map((b) => b.length)}`,
  );
  assert.ok(broker.batches.length >= 3, `12 messages at 5 a second take at least 3 rounds, got ${broker.batches.length}`);
});

test("a target naming a broker this server was not given is refused at create, the field named", async () => {
  const { engine } = await setup();
  await assert.rejects(
    engine.service.createJob(ctx, { ...natsJob(1), target: { type: "amqp", exchange: "", routingKey: "q" } }),
    (e: Error & { details?: { field?: string } }) => e.details?.field === "target.type" && /no broker named "amqp"/.test(e.message),
  );
  const [refused] = await engine.service.createJobs(ctx, [{ ...natsJob(1), target: { type: "nats", subject: "a", broker: "eu" } }]);
  assert.deepEqual(refused, {
    error: {
      code: "INVALID_ARGUMENT",
      message: 'jobs.0.target.broker: no broker named "eu" is configured on this server (configured: "nats"; start the server with --broker eu=URL)',
      details: { field: "jobs.0.target.broker" },
    },
  });
});

test("an engine given a bad broker name, URL or rate refuses to open, naming what is wrong", async () => {
  const store = `sqlite:${join(dir, `bad${n++}.db`)}`;
  const cases: [Record<string, { url: string; ratePerSecond?: number }>, RegExp][] = [
    [{ "a b": { url: "nats://127.0.0.1:4222" } }, /brokers: a broker name is 1 to 64 letters, digits, _ and -, got "a b"/],
    [{ q: { url: "redis://127.0.0.1:6379" } }, /brokers\.q\.url: a nats:\/\/, tls:\/\/, amqp:\/\/ or amqps:\/\/ URL, got redis:/],
    [{ q: { url: "amqp://a,amqp://b" } }, /brokers\.q\.url: a list of URLs is for NATS seed servers only/],
    [{ q: { url: "nats://127.0.0.1:4222", ratePerSecond: 0 } }, /brokers\.q\.ratePerSecond: a positive number, got 0/],
  ];
  for (const [brokers, message] of cases) await assert.rejects(openEngine({ store, httpTargets: false, brokers }), message);
});
