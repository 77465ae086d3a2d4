// A 10 MB payload end to end through one `duetime serve` (the compiled CLI),
// beside a 10 KB one in the same run, on SQLite or PostgreSQL:
// - queue: POST /v1/jobs → the SDK Worker's handler holds the payload (the
//   lease, then GET /v1/blobs/{blobId} for the large one) → complete → the
//   job reads COMPLETED;
// - http: POST /v1/jobs with an HTTP target → the receiver has the whole
//   body (the server read the blob and sent it).
// Medians of --runs rounds, each size in turn. Usage:
//   npm run build && node --import tsx bench/large-payload.ts --store sqlite|postgres [--runs 5] [--mb 10]
// PostgreSQL: DUETIME_BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/test), a fresh schema per run.

import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Worker } from "@duetime/sdk";
import pg from "pg";
import { serveProcess } from "./serve-process.js";

const { values } = parseArgs({
  options: { store: { type: "string", default: "sqlite" }, runs: { type: "string", default: "5" }, mb: { type: "string", default: "10" } },
});
const runs = Number(values.runs);
const largeBytes = Number(values.mb) * 1_000_000;
const SMALL = 10_000;
const PG_URL = process.env.DUETIME_BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

const payloadOf = (bytes: number) => ({
  text: randomBytes(Math.ceil(bytes / 2))
    .toString("hex")
    .slice(0, bytes - 12),
});
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (t: number) => Math.round(t * 10) / 10;

async function storeArgs(dir: string): Promise<{ args: string[]; drop: () => Promise<void> }> {
  if (values.store === "sqlite") return { args: ["--store", `sqlite:${join(dir, "bench.db")}`], drop: async () => {} };
  const schema = `bench_blobs_${randomBytes(4).toString("hex")}`;
  return {
    args: ["--store", PG_URL, "--schema", schema],
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    },
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-bench-blobs-"));
  const store = await storeArgs(dir);
  const server = await serveProcess([
    ...store.args,
    "--log-level",
    "warn",
    "--allow-target-hosts",
    "127.0.0.1",
    "--max-payload-bytes",
    String(16 * 1024 * 1024),
  ]);
  // The receiver of the HTTP-target calls: when each body was whole.
  const bodies = new Map<string, () => void>();
  const receiver = createServer((req, res) => {
    let bytes = 0;
    req.on("data", (c: Buffer) => (bytes += c.length));
    req.on("end", () => {
      res.writeHead(204).end();
      if (bytes > 0) bodies.get(String(req.headers["x-bench"]))?.();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  // One worker, long-polling the whole time: handler start is when the payload is in hand.
  const started = new Map<string, () => void>();
  const worker = new Worker({
    url: server.url,
    pool: "bench",
    handleSignals: false,
    logger: null,
    ackDelayMs: 0,
    handler: async (job) => {
      started.get(job.name)?.();
      return { ok: JSON.stringify(job.payload).length };
    },
  });
  void worker.run();

  const results: Record<string, { create: number[]; handler: number[]; completed: number[]; httpCreate: number[]; httpBody: number[] }> = {};
  const sizes = [
    ["10 KB", SMALL],
    [`${values.mb} MB`, largeBytes],
  ] as const;
  try {
    for (let round = 0; round < runs + 1; round++) {
      for (const [label, bytes] of sizes) {
        const r = (results[label] ??= { create: [], handler: [], completed: [], httpCreate: [], httpBody: [] });
        const payload = payloadOf(bytes);
        // queue target; the handler and the receiver are told which job by its name or header, known before the create answers
        const key = `${round}-${label}`;
        const inHand = new Promise<void>((resolve) => started.set(key, resolve));
        const t0 = performance.now();
        const created = await post(server.url, { name: key, target: { type: "queue", pool: "bench" }, payload, schedule: { delaySeconds: 0 } });
        const t1 = performance.now();
        await inHand;
        const t2 = performance.now();
        await until(async () => ((await (await fetch(`${server.url}/v1/jobs/${created}`)).json()) as { state: string }).state === "COMPLETED");
        const t3 = performance.now();
        // http target
        const whole = new Promise<void>((resolve) => bodies.set(key, resolve));
        const h0 = performance.now();
        await post(server.url, {
          name: key,
          target: { type: "http", url: hook, headers: { "x-bench": key } },
          payload,
          schedule: { delaySeconds: 0 },
        });
        const h1 = performance.now();
        await whole;
        const h2 = performance.now();
        if (round === 0) continue; // the first round warms up
        r.create.push(t1 - t0);
        r.handler.push(t2 - t0);
        r.completed.push(t3 - t0);
        r.httpCreate.push(h1 - h0);
        r.httpBody.push(h2 - h0);
      }
    }
  } finally {
    await worker.shutdown();
    receiver.close();
    server.child.kill("SIGTERM");
    await new Promise((r) => server.child.once("exit", r));
    await store.drop();
    rmSync(dir, { recursive: true, force: true });
  }
  const [load1] = loadavg();
  console.log(`store ${values.store}, ${runs} runs (medians, ms from the start of the create), load average ${load1!.toFixed(2)}`);
  console.log("| payload | create answered | worker's handler has it | job COMPLETED | HTTP target: create answered | HTTP target: body received |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const [label] of sizes) {
    const r = results[label]!;
    console.log(
      `| ${label} | ${ms(median(r.create))} | ${ms(median(r.handler))} | ${ms(median(r.completed))} | ${ms(median(r.httpCreate))} | ${ms(median(r.httpBody))} |`,
    );
  }
}

/** POST /v1/jobs; the job's id. */
async function post(url: string, spec: unknown): Promise<string> {
  const answer = await fetch(`${url}/v1/jobs`, {
    method: "POST",
    headers: { "content-type": "application/json", prefer: "return=minimal" },
    body: JSON.stringify(spec),
  });
  if (answer.status !== 201) throw new Error(`create answered ${answer.status}: ${await answer.text()}`);
  return ((await answer.json()) as { jobId: string }).jobId;
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 2));
  }
}

await main();
