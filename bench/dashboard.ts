// The dashboard's costs (issue 12, "Measure"): its page weight, the time to
// first meaningful paint on localhost (the jobs list drawn with data, after
// logging in), and what refreshing the Overview costs the server with many
// jobs stored. A `duetime serve` child process on a fresh store, filled with
// --jobs one-offs due next week; Debian's Chromium through playwright-core.
//
//   npm run bench -- dashboard [--jobs 1000000] [--store sqlite|postgres://...] [--schema S]
//
// The Overview polls GET /v1/stats every 5 s while it is open (one query:
// the store's poolCounts); the bench times that call, the first scrape of
// /metrics (its store-read gauges, uncached), and the Jobs page's first
// GET /v1/jobs.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { DuetimeClient } from "@duetime/sdk";
import { pct } from "./measure.js";
import { serveProcess } from "./serve-process.js";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "1000000" },
    store: { type: "string", default: "sqlite" },
    schema: { type: "string" },
  },
});
const JOBS = Number(values.jobs);
const KEY = "bench-admin-0123456789";
/** Where the dashboard keeps the key (dashboard/src/api.ts). */
const KEY_ITEM = "duetime.apiKey";
const CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"];

/** Times `call` `n` times in a row: p50, p90 and max in ms. */
async function timed(n: number, call: () => Promise<unknown>): Promise<{ p50: number; p90: number; max: number }> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await call();
    ms.push(performance.now() - start);
  }
  const sorted = Float64Array.from(ms).sort();
  return { p50: Math.round(pct(sorted, 0.5)), p90: Math.round(pct(sorted, 0.9)), max: Math.round(sorted.at(-1)!) };
}

async function fill(client: DuetimeClient): Promise<number> {
  const start = performance.now();
  const runAt = new Date(Date.now() + 7 * 86_400_000).toISOString();
  let next = 0;
  const lane = async () => {
    for (let from = (next += 1000) - 1000; from < JOBS; from = (next += 1000) - 1000) {
      const batch = Array.from({ length: Math.min(1000, JOBS - from) }, (_, k) => ({
        name: `report-${from + k}`,
        target: { type: "queue" as const, pool: `pool-${(from + k) % 4}` },
        schedule: { runAt },
      }));
      await client.createJobs(batch);
    }
  };
  await Promise.all([lane(), lane()]);
  return (performance.now() - start) / 1000;
}

async function browse(url: string): Promise<{ fcpMs: number; meaningfulMs: number; transferBytes: number; resources: number }> {
  const userDataDir = mkdtempSync(join(tmpdir(), "duetime-bench-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.DUETIME_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_FLAGS,
  });
  try {
    // A logged-in tab, cold cache: the key is in session storage before the first load, so the load goes the whole way to data.
    await context.addInitScript({ content: `sessionStorage.setItem(${JSON.stringify(KEY_ITEM)}, ${JSON.stringify(KEY)})` });
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${url}/#/jobs`);
    await page.getByTestId("jobs-table").getByRole("link").first().waitFor({ timeout: 60_000 });
    // In the page (a string: this project's types have no DOM): times from the navigation's start, and what the files weighed.
    return (await page.evaluate(`(() => {
      const paint = performance.getEntriesByName("first-contentful-paint")[0];
      const nav = performance.getEntriesByType("navigation")[0];
      const assets = performance.getEntriesByType("resource").filter((r) => !r.name.includes("/v1/"));
      return {
        fcpMs: Math.round(paint ? paint.startTime : NaN),
        meaningfulMs: Math.round(performance.now()),
        transferBytes: nav.transferSize + assets.reduce((sum, r) => sum + r.transferSize, 0),
        resources: assets.length + 1,
      };
    })()`)) as { fcpMs: number; meaningfulMs: number; transferBytes: number; resources: number };
  } finally {
    await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
}

const dir = mkdtempSync(join(tmpdir(), "duetime-bench-dashboard-"));
const store = values.store === "sqlite" ? `sqlite:${join(dir, "duetime.db")}` : values.store!;
const server = await serveProcess([
  "--store",
  store,
  "--api-keys",
  `${KEY}:bench:admin`,
  "--log-level",
  "warn",
  ...(values.schema ? ["--schema", values.schema] : []),
]);
const client = new DuetimeClient({ url: server.url, token: KEY });
try {
  const fillSeconds = await fill(client);
  console.log(`stored ${JOBS} one-offs due next week in ${fillSeconds.toFixed(1)} s (${Math.round(JOBS / fillSeconds)}/s)`);
  const get = (path: string) => async () => {
    const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${KEY}` } });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${path}: ${res.status}`);
  };
  const firstScrape = await timed(1, get("/metrics"));
  const stats = await timed(20, get("/v1/stats"));
  const jobsPage = await timed(20, get("/v1/jobs?limit=50"));
  console.log(`Overview refresh (GET /v1/stats, 20 calls): p50 ${stats.p50} ms, p90 ${stats.p90} ms, max ${stats.max} ms`);
  console.log(`first GET /metrics (store-read gauges, uncached): ${firstScrape.max} ms`);
  console.log(`Jobs page's GET /v1/jobs?limit=50 (20 calls): p50 ${jobsPage.p50} ms, p90 ${jobsPage.p90} ms`);
  const b = await browse(server.url);
  console.log(
    `browser (Chromium, localhost, logged in): first contentful paint ${b.fcpMs} ms; jobs list drawn with data ${b.meaningfulMs} ms; ` +
      `page weight ${b.transferBytes} bytes transferred in ${b.resources} files (the API's answers not counted)`,
  );
} finally {
  await client.close();
  server.child.kill("SIGTERM");
  await new Promise((r) => server.child.once("exit", r));
  rmSync(dir, { recursive: true, force: true });
}
