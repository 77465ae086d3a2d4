// What a bulk create costs per job, without the rest of a benchmark: N
// one-offs due in an hour created in batches of 1,000, through the engine's
// Service in this process (as embedded mode and POST /v1/jobs:batch reach
// the store) and through a `duetime serve` child over HTTP with
// `Prefer: return=minimal` (as the bench's server contenders create).
//
//   node --import tsx bench/create-cost.ts [--jobs N] [--runs R] [--via service|http|both]
//
// On a fresh SQLite store per run (the create's fsync included). Reports
// jobs/s and CPU µs per job (this process, and for http the server child
// too), median of the runs with min–max. Take a profile of the part that costs with
// `node --cpu-prof --import tsx bench/create-cost.ts --via service` (or
// BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" for the child), then
// `bench/profile-summary.ts PROFILE --since createJobs`. The http path needs
// dist/ (`npm run build`).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { BatchCreateItem } from "@duetime/sdk/contract";
import { DEFAULT_CONTEXT } from "../src/engine/service.js";
import { openStore } from "../src/store/factory.js";
import { CREATE_BATCH, benchService, oneOffBatch } from "./one-offs.js";
import { cpuMs } from "./procstat.js";
import { serveProcess } from "./serve-process.js";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "20000" },
    runs: { type: "string", default: "5" },
    via: { type: "string", default: "both" },
  },
});
const JOBS = Number(values.jobs);
const RUNS = Number(values.runs);
if (!Number.isInteger(JOBS) || JOBS < CREATE_BATCH) throw new Error(`--jobs is a whole number of at least ${CREATE_BATCH}`);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error("--runs is a whole number of at least 1");
if (!["service", "http", "both"].includes(values.via!)) throw new Error("--via is service, http or both");

interface Measured {
  ms: number;
  cpuUsPerJob: number;
  /** The `duetime serve` child's part of cpuUsPerJob (http only). */
  serverUsPerJob: number;
}

/** One batch of one-offs due in an hour, numbered from `first`. */
const batch = (first: number): BatchCreateItem[] => oneOffBatch("bench", first, CREATE_BATCH, new Date(Date.now() + 3_600_000).toISOString());

/** Runs `create(first)` for every batch of JOBS, after one batch of warm-up; CPU of this process and `others`. */
async function timed(create: (first: number) => Promise<void>, others: number[]): Promise<Measured> {
  await create(-CREATE_BATCH);
  const server = () => others.reduce((sum, pid) => sum + cpuMs(pid), 0);
  const [self0, server0] = [cpuMs(process.pid), server()];
  const t0 = performance.now();
  for (let first = 0; first < JOBS; first += CREATE_BATCH) await create(first);
  const ms = performance.now() - t0;
  const perJob = (cpu: number) => (cpu * 1000) / JOBS;
  const serverUsPerJob = perJob(server() - server0);
  return { ms, cpuUsPerJob: perJob(cpuMs(process.pid) - self0) + serverUsPerJob, serverUsPerJob };
}

/** A fresh SQLite file in a new directory, for one run. */
function freshStore(): { url: string; drop: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "duetime-create-"));
  return { url: `sqlite:${join(dir, "create.db")}`, drop: () => rmSync(dir, { recursive: true, force: true }) };
}

async function viaService(): Promise<Measured> {
  const { url, drop } = freshStore();
  const store = await openStore(url);
  try {
    const service = benchService(store, "create-cost");
    return await timed(async (first) => {
      const results = await service.createJobs(DEFAULT_CONTEXT, batch(first));
      if (results.some((r) => "error" in r)) throw new Error(`createJobs: ${JSON.stringify(results.find((r) => "error" in r))}`);
    }, []);
  } finally {
    await store.close();
    drop();
  }
}

async function viaHttp(): Promise<Measured> {
  const { url: storeUrl, drop } = freshStore();
  const nodeArgs = process.env.BENCH_SERVER_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const { child, url } = await serveProcess(["--store", storeUrl], nodeArgs);
  try {
    return await timed(
      async (first) => {
        const res = await fetch(`${url}/v1/jobs:batch`, {
          method: "POST",
          headers: { "content-type": "application/json", prefer: "return=minimal" },
          body: JSON.stringify({ jobs: batch(first) }),
        });
        if (res.status !== 200) throw new Error(`POST /v1/jobs:batch answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
      },
      [child.pid!],
    );
  } finally {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    drop();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[], f: (x: number) => string) => `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;

console.log(`${JOBS} one-offs on SQLite, batches of ${CREATE_BATCH}, median of ${RUNS} (min–max)\n`);
console.log("| via | jobs/s | CPU µs/job | of which the server's |\n| --- | --- | --- | --- |");
const paths = values.via === "both" ? ["service", "http"] : [values.via!];
for (const path of paths) {
  const runs: Measured[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(path === "service" ? await viaService() : await viaHttp());
  const rates = runs.map((r) => (JOBS * 1000) / r.ms);
  const us = (xs: number[]) => spread(xs, (x) => x.toFixed(1));
  const server = path === "http" ? us(runs.map((r) => r.serverUsPerJob)) : "—";
  console.log(`| ${path} | ${spread(rates, (x) => Math.round(x).toLocaleString("en-US"))} | ${us(runs.map((r) => r.cpuUsPerJob))} | ${server} |`);
}
