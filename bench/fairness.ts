// Fairness (issue 11): a steady tenant's start lag, with and without another
// tenant's flood in the same pool. A `duetime serve` child process (SQLite,
// or --store/--schema for PostgreSQL) with a platform worker (a key for
// tenant "*", SDK Worker in this process, --concurrency in total) leasing the
// pool across tenants; the steady tenant creates --rate jobs per second, each
// due a second later, for --seconds; in the second run the flood tenant
// also creates --flood jobs due at once, as fast as the API takes them.
//
//   node --import tsx bench/fairness.ts [--rate 200] [--seconds 30] [--flood 100000] [--concurrency 100]
//        [--store sqlite|postgres://...] [--schema S]
//
// Reports the steady tenant's start lag (handler start − scheduledFor)
// p50/p99/max in both runs and their p99 ratio (goal: within 2×), and the
// flood's throughput while it ran. Peers have no tenants, so none runs here:
// in their queues the steady jobs would wait behind the flood.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { DuetimeClient, Worker } from "@duetime/sdk";
import { pct, sleep } from "./measure.js";
import { serveProcess } from "./serve-process.js";

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "200" },
    seconds: { type: "string", default: "30" },
    flood: { type: "string", default: "100000" },
    concurrency: { type: "string", default: "100" },
    store: { type: "string", default: "sqlite" },
    schema: { type: "string" },
  },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const FLOOD = Number(values.flood);
const CONCURRENCY = Number(values.concurrency);
const KEYS = "fleet:*:worker,flood:flood:client,steady:steady:client";
const POOL = "work";

/** A server on the store; on PostgreSQL each run gets a schema of its own (--schema, suffixed by the run). */
function serve(store: string, run: string): ReturnType<typeof serveProcess> {
  return serveProcess([
    "--store",
    store,
    "--api-keys",
    KEYS,
    "--log-level",
    "warn",
    ...(values.schema ? ["--schema", `${values.schema}_${run}`] : []),
  ]);
}

interface RunResult {
  steadyLags: number[];
  steadyCreated: number;
  floodStarted: number;
  floodSeconds: number;
}

async function run(withFlood: boolean): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-fairness-"));
  const store = values.store === "sqlite" ? `sqlite:${join(dir, "duetime.db")}` : values.store!;
  const server = await serve(store, withFlood ? "flood" : "alone");
  const steady = new DuetimeClient({ url: server.url, token: "steady" });
  const flood = new DuetimeClient({ url: server.url, token: "flood" });
  const steadyLags: number[] = [];
  let floodStarted = 0;
  let floodFirst = 0;
  let floodLast = 0;
  const worker = new Worker({
    url: server.url,
    token: "fleet",
    pool: POOL,
    concurrency: CONCURRENCY,
    waitSeconds: 5,
    handleSignals: false,
    logger: null,
    handler: async (job) => {
      const now = Date.now();
      if (job.tenantId === "steady") steadyLags.push(now - Date.parse(job.scheduledFor));
      else {
        floodStarted++;
        floodFirst ||= now;
        floodLast = now;
      }
    },
  });
  const working = worker.run();
  try {
    const floodDone = withFlood
      ? (async () => {
          for (let i = 0; i < FLOOD; i += 1000) {
            const batch = Array.from({ length: Math.min(1000, FLOOD - i) }, (_, k) => ({
              name: "flood",
              target: { type: "queue" as const, pool: POOL },
              payload: { seq: i + k },
              schedule: { delaySeconds: 0 },
            }));
            await flood.createJobs(batch);
          }
        })()
      : Promise.resolve();
    // The steady tenant: RATE jobs a second in ticks of 100 ms, each due a second later.
    const perTick = RATE / 10;
    const start = Date.now();
    let created = 0;
    for (let tick = 0; tick < SECONDS * 10; tick++) {
      const wanted = Math.round((tick + 1) * perTick) - created;
      const due = new Date(Date.now() + 1000).toISOString();
      const batch = Array.from({ length: wanted }, (_, k) => ({
        name: "steady",
        target: { type: "queue" as const, pool: POOL },
        payload: { seq: created + k },
        schedule: { runAt: due },
      }));
      if (batch.length > 0) await steady.createJobs(batch);
      created += batch.length;
      const next = start + (tick + 1) * 100;
      if (next > Date.now()) await sleep(next - Date.now());
    }
    await floodDone;
    const deadline = Date.now() + 60_000;
    while (steadyLags.length < created && Date.now() < deadline) await sleep(50);
    return { steadyLags, steadyCreated: created, floodStarted, floodSeconds: floodLast > floodFirst ? (floodLast - floodFirst) / 1000 : 0 };
  } finally {
    await worker.shutdown();
    await working;
    await Promise.all([steady.close(), flood.close()]);
    server.child.kill("SIGTERM");
    await new Promise((r) => server.child.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
  }
}

function describe(label: string, r: RunResult): { p50: number; p99: number } {
  const lags = Float64Array.from(r.steadyLags).sort();
  const p50 = pct(lags, 0.5);
  const p99 = pct(lags, 0.99);
  console.log(
    `${label}: steady tenant ${lags.length}/${r.steadyCreated} started; start lag p50 ${p50} ms, p99 ${p99} ms, max ${lags.at(-1)} ms` +
      (r.floodStarted > 0 ? `; flood ${r.floodStarted} started, ${Math.round(r.floodStarted / Math.max(r.floodSeconds, 0.001))} jobs/s` : ""),
  );
  return { p50, p99 };
}

const alone = describe(`without flood (${RATE}/s for ${SECONDS} s)`, await run(false));
const flooded = describe(`with a flood of ${FLOOD} due at once`, await run(true));
console.log(`p99 with the flood / without: ${(flooded.p99 / alone.p99).toFixed(2)}× (goal: within 2×)`);
