// The broker-target herd: N jobs due in the same instant, published by a
// `duetime serve` child process (log level warn) through its outbox relay to
// the machine's NATS (JetStream) or RabbitMQ, and consumed here.
//
//   node --import tsx bench/broker-herd.ts [--jobs 20000] [--brokers nats,amqp]
//        [--stores sqlite,postgres] [--runs 3]
//
// For each broker and store, each run: a stream (or an exchange and queue) of
// its own, N jobs created before the instant, then a consumer in this process
// records each message's arrival. Reports per run, and the median of runs:
// messages/s (first → last arrival), drain (due → last arrival), and start
// lag (arrival − due) p50/p99/max, and duplicate ids. Beside them, the
// ceiling: the broker's client alone publishing as many messages with
// confirms, 500 at a time, from this process. A consumer's arrival is
// within a local hop of the broker storing the message (and of its confirm
// to the relay), so it stands in for "published − due". Writes
// bench/results/broker-herd.md. BENCH_SERVER_NODE_ARGS="--cpu-prof …" goes
// to the server process. Not part of `npm run bench`: peers have no broker
// targets to compare.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, headers as natsHeaders } from "@nats-io/transport-node";
import { DuetimeClient } from "@duetime/sdk";
import amqp from "amqplib";
import { serveProcess } from "./serve-process.js";
import { freshDatabase } from "./services.js";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "20000" },
    brokers: { type: "string", default: "nats,amqp" },
    stores: { type: "string", default: "sqlite,postgres" },
    runs: { type: "string", default: "3" },
  },
});
const JOBS = Number(values.jobs);
const RUNS = Number(values.runs);
const NATS_URL = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";
const AMQP_URL = process.env.BENCH_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";

interface Arrival {
  at: number;
  id: string;
  due: number;
}

/** A destination of the run's own and a consumer recording arrivals; close() removes both. */
interface Sink {
  target: Record<string, unknown>;
  arrivals: Arrival[];
  close(): Promise<void>;
}

async function natsSink(name: string): Promise<Sink> {
  const nc = await natsConnect({ servers: new URL(NATS_URL).host });
  const jsm = await jetstreamManager(nc);
  const subject = `bench.${name}`;
  await jsm.streams.add({ name, subjects: [`${subject}.>`] });
  const arrivals: Arrival[] = [];
  // A core subscription sees each message as JetStream stores it: the moment of the relay's ack, give or take a hop.
  const sub = nc.subscribe(`${subject}.>`, {
    callback: (_e, m) => {
      arrivals.push({ at: Date.now(), id: m.headers?.get("Nats-Msg-Id") ?? "", due: Date.parse(m.headers?.get("duetime-scheduled-for") ?? "") });
    },
  });
  return {
    target: { type: "nats", subject: `${subject}.due` },
    arrivals,
    async close() {
      sub.unsubscribe();
      await jsm.streams.delete(name);
      await nc.close();
    },
  };
}

async function amqpSink(name: string): Promise<Sink> {
  const conn = await amqp.connect(AMQP_URL);
  const ch = await conn.createChannel();
  await ch.assertExchange(name, "direct", { durable: false });
  await ch.assertQueue(name, { durable: false });
  await ch.bindQueue(name, name, "due");
  await ch.prefetch(1000);
  const arrivals: Arrival[] = [];
  await ch.consume(
    name,
    (m) => {
      if (m === null) return;
      arrivals.push({ at: Date.now(), id: String(m.properties.messageId), due: Date.parse(String(m.properties.headers?.["duetime-scheduled-for"])) });
    },
    { noAck: true },
  );
  return {
    target: { type: "amqp", exchange: name, routingKey: "due" },
    arrivals,
    async close() {
      await ch.deleteQueue(name);
      await ch.deleteExchange(name);
      await conn.close();
    },
  };
}

const BATCH = 500;
const HEADERS = { "duetime-attempt": "1", "duetime-scheduled-for": new Date().toISOString(), "content-type": "application/json" };

/** The ceiling: the client alone publishing JOBS messages with confirms, BATCH at a time, as the relay does; messages/s. */
async function rawNats(name: string): Promise<number> {
  const nc = await natsConnect({ servers: new URL(NATS_URL).host });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name, subjects: [`raw.${name}.>`] });
  const js = jetstream(nc);
  const started = Date.now();
  for (let i = 0; i < JOBS; i += BATCH) {
    const acks = [];
    for (let k = i; k < Math.min(JOBS, i + BATCH); k++) {
      const h = natsHeaders();
      for (const [key, value] of Object.entries(HEADERS)) h.set(key, value);
      acks.push(js.publish(`raw.${name}.due`, JSON.stringify({ seq: k }), { msgID: `m${k}`, headers: h }));
    }
    await Promise.all(acks);
  }
  const perSecond = Math.round(JOBS / ((Date.now() - started) / 1000));
  await jsm.streams.delete(name);
  await nc.close();
  return perSecond;
}

async function rawAmqp(name: string): Promise<number> {
  const conn = await amqp.connect(AMQP_URL);
  const ch = await conn.createConfirmChannel();
  await ch.assertExchange(name, "direct", { durable: false });
  await ch.assertQueue(name, { durable: false });
  await ch.bindQueue(name, name, "due");
  const started = Date.now();
  for (let i = 0; i < JOBS; i += BATCH) {
    for (let k = i; k < Math.min(JOBS, i + BATCH); k++) {
      ch.publish(name, "due", Buffer.from(JSON.stringify({ seq: k })), { messageId: `m${k}`, headers: HEADERS, persistent: true, mandatory: true });
    }
    await ch.waitForConfirms();
  }
  const perSecond = Math.round(JOBS / ((Date.now() - started) / 1000));
  await ch.deleteQueue(name);
  await ch.deleteExchange(name);
  await conn.close();
  return perSecond;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Result {
  perSecond: number;
  drainMs: number;
  p50: number;
  p99: number;
  max: number;
  duplicates: number;
}

async function runOnce(broker: "nats" | "amqp", store: "sqlite" | "postgres", run: number): Promise<Result> {
  const name = `bh_${broker}_${store}_${process.pid}_${run}`;
  const dir = mkdtempSync(join(tmpdir(), "duetime-broker-herd-"));
  const db = store === "postgres" ? await freshDatabase(`broker_herd_${broker}`, `${process.pid}_${run}`) : null;
  const sink = broker === "nats" ? await natsSink(name) : await amqpSink(name);
  const server = await serveProcess(
    [
      "--store",
      db ? db.url : `sqlite:${join(dir, "duetime.db")}`,
      "--broker",
      `${broker}=${broker === "nats" ? NATS_URL : AMQP_URL}`,
      "--log-level",
      "warn",
    ],
    process.env.BENCH_SERVER_NODE_ARGS?.split(" ").filter((a) => a !== "") ?? [],
  );
  const client = new DuetimeClient({ url: server.url });
  try {
    const due = Math.ceil((Date.now() + Math.max(5, Math.ceil(JOBS / 2000) + 3) * 1000) / 1000) * 1000;
    for (let i = 0; i < JOBS; i += 1000) {
      const batch = Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => ({
        name: "herd",
        target: sink.target as { type: "nats"; subject: string },
        payload: { seq: i + k },
        schedule: { runAt: new Date(due).toISOString() },
      }));
      const failed = (await client.createJobs(batch)).find((r) => "error" in r);
      if (failed) throw new Error(`createJobs failed: ${JSON.stringify(failed)}`);
    }
    if (Date.now() >= due) throw new Error(`creating ${JOBS} jobs ran past the due instant`);
    const deadline = due + 300_000;
    while (new Set(sink.arrivals.map((a) => a.id)).size < JOBS) {
      if (Date.now() > deadline) throw new Error(`only ${sink.arrivals.length} of ${JOBS} messages after 300 s`);
      await sleep(20);
    }
    const times = sink.arrivals.map((a) => a.at);
    const first = Math.min(...times);
    const last = Math.max(...times);
    const lags = sink.arrivals.map((a) => a.at - a.due).sort((a, b) => a - b);
    return {
      perSecond: Math.round(JOBS / Math.max(0.001, (last - first) / 1000)),
      drainMs: last - due,
      p50: percentile(lags, 50),
      p99: percentile(lags, 99),
      max: lags[lags.length - 1]!,
      duplicates: sink.arrivals.length - new Set(sink.arrivals.map((a) => a.id)).size,
    };
  } finally {
    await client.close();
    server.child.kill("SIGTERM");
    await new Promise((r) => server.child.once("exit", r));
    await sink.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const lines = [
    `# Broker-target herd: ${JOBS.toLocaleString("en")} jobs due in one instant`,
    "",
    `${new Date().toISOString()}, node ${process.version}, ${cpus().length} CPUs; \`node --import tsx bench/broker-herd.ts --jobs ${JOBS} --brokers ${values.brokers} --stores ${values.stores} --runs ${RUNS}\`.`,
    "Start lag = the consumer's arrival − due time. Medians of the runs; each run's figures after them.",
    "",
    "| broker | store | messages/s | drain (due → last) | start lag p50 / p99 / max | duplicates | runs (msg/s; p99) |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const broker of values.brokers.split(",") as ("nats" | "amqp")[]) {
    const raw: number[] = [];
    for (let run = 1; run <= RUNS; run++) raw.push(await (broker === "nats" ? rawNats : rawAmqp)(`bh_raw_${broker}_${process.pid}_${run}`));
    lines.push(`| ${broker} | the client alone, no duetime (the ceiling) | ${median(raw).toLocaleString("en")} | | | | ${raw.join(" · ")} |`);
    for (const store of values.stores.split(",") as ("sqlite" | "postgres")[]) {
      const results: Result[] = [];
      for (let run = 1; run <= RUNS; run++) {
        const r = await runOnce(broker, store, run);
        console.error(`${broker} ${store} run ${run}: ${JSON.stringify(r)}`);
        results.push(r);
      }
      const m = (k: keyof Result) => median(results.map((r) => r[k]));
      lines.push(
        `| ${broker} | ${store} | ${m("perSecond").toLocaleString("en")} | ${m("drainMs")} ms | ${m("p50")} / ${m("p99")} / ${m("max")} ms | ${m("duplicates")} | ${results.map((r) => `${r.perSecond}; ${r.p99}`).join(" · ")} |`,
      );
    }
  }
  const text = `${lines.join("\n")}\n`;
  console.log(text);
  writeFileSync(new URL("./results/broker-herd.md", import.meta.url), text);
}

await main();
