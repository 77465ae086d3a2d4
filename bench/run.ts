// npm run bench -- [herd|smoke] [--jobs N] [--contenders a,b] [--runs N] [--concurrency N]
//
// herd: N jobs (default 20,000) due in the same second, enqueued before that
// second; reports creation rate, drain time (last handler start − due time)
// and start lag percentiles (handler start − due time), per contender, as the
// median of the runs with min and max. smoke: the same at 300 jobs, once,
// so CI keeps the harness from rotting (no speed is asserted anywhere).

import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Contender } from "./contender.js";
import { DuetimeEmbedded } from "./contenders/duetime-embedded.js";
import { DuetimeServer } from "./contenders/duetime-server.js";

const CONTENDERS: Record<string, () => Contender> = {
  "duetime-embedded": () => new DuetimeEmbedded(),
  "duetime-server": () => new DuetimeServer(),
};

interface RunResult {
  jobs: number;
  createMs: number;
  drainMs: number;
  lag: { p50: number; p90: number; p99: number; max: number };
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    jobs: { type: "string" },
    contenders: { type: "string" },
    runs: { type: "string" },
    concurrency: { type: "string" },
  },
});
const scenario = positionals[0] ?? "herd";
if (scenario !== "herd" && scenario !== "smoke") {
  console.error(`unknown scenario ${scenario}; use herd or smoke`);
  process.exit(2);
}
const smoke = scenario === "smoke";
const jobs = Number(values.jobs ?? (smoke ? 300 : 20_000));
const runs = Number(values.runs ?? (smoke ? 1 : 3));
const concurrency = Number(values.concurrency ?? 100);
const names = (values.contenders ?? Object.keys(CONTENDERS).join(",")).split(",");
for (const n of names) {
  if (!CONTENDERS[n]) {
    console.error(`unknown contender ${n}; known: ${Object.keys(CONTENDERS).join(", ")}`);
    process.exit(2);
  }
}

async function herd(make: () => Contender): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-bench-"));
  const contender = make();
  try {
    await contender.setup({ dir, concurrency });
    // Due far enough ahead that creation finishes first (checked below).
    const dueAt = Math.ceil((Date.now() + 3_000 + jobs * 0.25) / 1000) * 1000;
    const t0 = performance.now();
    for (let i = 0; i < jobs; i += 1000) {
      const batch = [];
      for (let seq = i; seq < Math.min(jobs, i + 1000); seq++) batch.push({ seq, dueAt });
      await contender.enqueue(batch);
    }
    const createMs = performance.now() - t0;
    if (Date.now() >= dueAt) throw new Error("creation overran the due time; the herd was not enqueued in advance");
    const starts = new Float64Array(jobs).fill(NaN);
    let seen = 0;
    const done = new Promise<void>((resolve) => {
      void contender.startWorkers((seq) => {
        if (Number.isNaN(starts[seq]!)) {
          starts[seq] = Date.now();
          if (++seen === jobs) resolve();
        }
      });
    });
    const timeout = setTimeout(() => {
      console.error(`\n${contender.name}: only ${seen}/${jobs} started after 10 minutes`);
      process.exit(1);
    }, 600_000);
    await done;
    clearTimeout(timeout);
    const lags = Array.from(starts, (s) => s - dueAt).sort((a, b) => a - b);
    const pct = (p: number) => lags[Math.min(lags.length - 1, Math.floor(lags.length * p))]!;
    return { jobs, createMs, drainMs: lags[lags.length - 1]!, lag: { p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: lags[lags.length - 1]! } };
  } finally {
    await contender.teardown().catch((e) => console.error(`${contender.name} teardown: ${e}`));
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[], f: (x: number) => string) =>
  xs.length === 1 ? f(xs[0]!) : `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
const ms = (x: number) => `${Math.round(x)} ms`;
const rate = (x: number) => `${Math.round(x).toLocaleString("en-US")}/s`;

const header = [
  `# herd: ${jobs.toLocaleString("en-US")} jobs due in the same second`,
  "",
  `- ${new Date().toISOString()}; ${cpus()[0]?.model ?? "cpu"} × ${cpus().length}; Node ${process.version}; runs: ${runs} (median, with min–max)`,
  `- worker concurrency ${concurrency} for every contender; no-op handler that records its start time`,
  "",
];
const rows: string[] = [
  "| contender | create rate | drain time | jobs/s | lag p50 | lag p90 | lag p99 | lag max |",
  "| --- | --- | --- | --- | --- | --- | --- | --- |",
];
const settings: string[] = [];
for (const name of names) {
  const results: RunResult[] = [];
  for (let r = 0; r < runs; r++) {
    process.stderr.write(`${name}: run ${r + 1}/${runs}…`);
    const res = await herd(CONTENDERS[name]!);
    process.stderr.write(` drained ${jobs} in ${Math.round(res.drainMs)} ms\n`);
    results.push(res);
  }
  settings.push(`- ${name}: ${CONTENDERS[name]!().settings}`);
  rows.push(
    `| ${name} | ${fmt(results.map((r) => (r.jobs / r.createMs) * 1000), rate)} | ${fmt(results.map((r) => r.drainMs), ms)} | ${fmt(
      results.map((r) => (r.jobs / Math.max(1, r.drainMs)) * 1000),
      rate,
    )} | ${fmt(results.map((r) => r.lag.p50), ms)} | ${fmt(results.map((r) => r.lag.p90), ms)} | ${fmt(results.map((r) => r.lag.p99), ms)} | ${fmt(
      results.map((r) => r.lag.max),
      ms,
    )} |`,
  );
}
const report = [...header, ...rows, "", "Settings:", ...settings, ""].join("\n");
console.log(report);
if (!smoke) {
  mkdirSync(new URL("./results/", import.meta.url), { recursive: true });
  const file = new URL(`./results/herd-${jobs}.md`, import.meta.url);
  writeFileSync(file, report);
  console.error(`written to ${file.pathname}`);
}
