// The HTTP-target herd: N http-target jobs due in the same instant, called by
// a `duetime serve` child process (SQLite store, log level warn) against a
// local receiver in this process that answers at once or after --delay-ms.
//
//   node --import tsx bench/http-herd.ts [--jobs 10000] [--delay-ms 0|200]
//        [--origin-concurrency 64] [--concurrency 256] [--lead-seconds S] [--cpu-prof DIR]
//
// Reports: drain time (due instant → last call received, and → every
// execution settled), calls/s while draining, start lag (receiver arrival −
// scheduledFor) p50/p99/max, and duplicate calls. --cpu-prof DIR writes a
// V8 CPU profile of the server process into DIR.

import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { DuetimeClient } from "@duetime/sdk";
import { serveProcess } from "./serve-process.js";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "10000" },
    "delay-ms": { type: "string", default: "0" },
    "origin-concurrency": { type: "string" },
    concurrency: { type: "string" },
    "lead-seconds": { type: "string" },
    "cpu-prof": { type: "string" },
  },
});
const JOBS = Number(values.jobs);
const DELAY_MS = Number(values["delay-ms"]);

interface Arrival {
  at: number;
  scheduledFor: number;
  key: string;
}

async function receiver(delayMs: number): Promise<{ url: string; arrivals: Arrival[]; server: Server; concurrent: () => number }> {
  const arrivals: Arrival[] = [];
  let inFlight = 0;
  let most = 0;
  const server = createServer((req, res) => {
    const at = Date.now();
    inFlight++;
    most = Math.max(most, inFlight);
    arrivals.push({ at, scheduledFor: Date.parse(String(req.headers["duetime-scheduled-for"])), key: String(req.headers["idempotency-key"]) });
    req.resume();
    req.on("end", () => {
      const answer = () => {
        inFlight--;
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("ok");
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, arrivals, server, concurrent: () => most };
}

function serve(store: string): ReturnType<typeof serveProcess> {
  const args = ["--store", store, "--allow-target-hosts", "127.0.0.1", "--log-level", "warn"];
  if (values["origin-concurrency"]) args.push("--http-origin-concurrency", values["origin-concurrency"]);
  if (values.concurrency) args.push("--http-concurrency", values.concurrency);
  return serveProcess(args, values["cpu-prof"] ? ["--cpu-prof", "--cpu-prof-dir", values["cpu-prof"]] : []);
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-http-herd-"));
  const rx = await receiver(DELAY_MS);
  const server = await serve(`sqlite:${join(dir, "duetime.db")}`);
  const client = new DuetimeClient({ url: server.url });
  try {
    // Due far enough ahead that every job is created (and loaded by the scheduler) before the instant.
    const lead = Number(values["lead-seconds"] ?? Math.max(5, Math.ceil(JOBS / 2000) + 3)) * 1000;
    const due = Math.ceil((Date.now() + lead) / 1000) * 1000;
    const createStart = Date.now();
    for (let i = 0; i < JOBS; i += 1000) {
      const batch = Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => ({
        name: "herd",
        target: { type: "http" as const, url: rx.url },
        payload: { seq: i + k },
        schedule: { runAt: new Date(due).toISOString() },
      }));
      const results = await client.createJobs(batch);
      const failed = results.find((r) => "error" in r);
      if (failed) throw new Error(`createJobs failed: ${JSON.stringify(failed)}`);
    }
    const created = Date.now();
    if (created >= due) throw new Error(`creating ${JOBS} jobs took ${created - createStart} ms, past the due instant; raise --lead-seconds`);

    // Drained: every call received, then nothing queued or running in the $http pool.
    const deadline = due + 300_000;
    while (new Set(rx.arrivals.map((a) => a.key)).size < JOBS) {
      if (Date.now() > deadline) throw new Error(`only ${rx.arrivals.length} of ${JOBS} calls after 300 s`);
      await sleep(20);
    }
    const lastCall = Math.max(...rx.arrivals.map((a) => a.at));
    for (;;) {
      const stats = await client.stats();
      const pool = stats.pools.$http;
      if (!pool || pool.queued + pool.running + pool.pending === 0) break;
      if (Date.now() > deadline) throw new Error(`still unsettled after 300 s: ${JSON.stringify(pool)}`);
      await sleep(20);
    }
    const settled = Date.now();

    const lags = rx.arrivals.map((a) => a.at - a.scheduledFor).sort((a, b) => a - b);
    const firstCall = Math.min(...rx.arrivals.map((a) => a.at));
    const duplicates = rx.arrivals.length - new Set(rx.arrivals.map((a) => a.key)).size;
    const rows: [string, string][] = [
      ["jobs", String(JOBS)],
      ["receiver delay", `${DELAY_MS} ms`],
      ["created in", `${created - createStart} ms (${Math.round(JOBS / ((created - createStart) / 1000))} jobs/s)`],
      ["drain: due → last call received", `${lastCall - due} ms`],
      ["drain: due → every execution settled", `${settled - due} ms (within the 20 ms poll)`],
      ["due → first call received", `${firstCall - due} ms`],
      ["calls/s (first → last call)", String(Math.round(JOBS / Math.max(0.001, (lastCall - firstCall) / 1000)))],
      ["start lag p50 / p99 / max", `${percentile(lags, 50)} / ${percentile(lags, 99)} / ${lags[lags.length - 1]} ms`],
      ["receiver: most calls in flight at once", String(rx.concurrent())],
      ["duplicate calls", String(duplicates)],
    ];
    console.log(`# HTTP-target herd (${new Date().toISOString()}, node ${process.version})`);
    for (const [k, v] of rows) console.log(`${k.padEnd(42)} ${v}`);
  } finally {
    await client.close();
    server.child.kill("SIGTERM");
    await new Promise((r) => server.child.once("exit", r));
    rx.server.closeAllConnections();
    rx.server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
