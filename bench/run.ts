// npm run bench -- <scenario> [--contenders a,b] [--runs N] [--concurrency N] [--jobs N[,N]] [--rate R[,R]]
//                              [--duration S] [--timeout S] [--window S] [--out DIR] [--runs-of NAME=N,…]
//
// Scenarios: herd (20,000 and 100,000 jobs due in one second), cron-herd
// (20,000 recurring jobs firing in one second), steady (500/s
// and 2,000/s for 30 s, due 1–5 s later; --recurring: recurring jobs, --rate
// of them firing each second), immediate (50,000 due now), idle
// (1,000,000 due next week; --recurring: recurring jobs next due then), all
// (every one of them, in one run), smoke (every scenario once at a tiny size,
// for CI: exits non-zero when a contender breaks, asserts no speed), fairness
// (duetime alone, in fairness.ts: the peers have no tenants), redis-claim
// (the Redis due index alone, in redis-claim.ts), dispatch-order (the store
// alone, in dispatch-order.ts). Contenders: see
// contenders/index.ts.
//
// Each run gets a fresh store (a new SQLite file, PostgreSQL database or
// flushed Redis db). Runs are interleaved (run 1 of every contender, then
// run 2…) so that noise from the rest of the machine spreads evenly; the
// table shows the median of the runs with min–max, and a noise column (CPU
// used by other processes during the run). Results go to bench/results/
// (<scenario>.md, <scenario>.svg, and <command>.md for several at once).

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { lagChart, type Series } from "./chart.js";
import type { Contender } from "./contender.js";
import { addBaselines, CONTENDERS, PRECONDITIONS } from "./contenders/index.js";
import { NoiseGauge, Progress, waitForQuiet } from "./measure.js";
import { herd, idle, immediate, STATS_SETTLE_MS, steady, type Column, type RunOutput, type Scenario } from "./scenarios.js";

const USAGE = `usage: npm run bench -- <herd|cron-herd|steady|immediate|idle|all|smoke|fairness|dashboard|redis-claim|dispatch-order> [--contenders ${Object.keys(CONTENDERS).join(",")}]
       [--runs N] [--concurrency N] [--jobs N[,N…]] [--rate R[,R…]] [--duration S] [--timeout S] [--window S] [--out DIR]
       [--runs-of NAME=N[,NAME=N…]]   (fewer runs for a slow contender, e.g. pg-boss=1)
       [--lead S]   (herd: seconds between the start of creation and the due second; default 3 + 0.15 ms per job)
       [--merge]   (keep the rows of contenders not run now from the last results of the same scenario, marked †)
       [--render-only]   (run nothing: rebuild <scenario>.md and .svg from <scenario>.json; rows of contenders not in --contenders are marked †)
       [--quiet-wait S]   (before each run, wait up to S s for the machine to be quiet; default 60, smoke 0)
       [--baseline DIR]   (also offer <name>@baseline for every duetime serve contender: the same, spawned from the build in DIR, e.g. a checkout of main; for A/B runs in one command)
       [--recurring]   (idle: recurring jobs, each next due next week; steady: recurring jobs created up front, --rate of them firing each second; instead of one-offs: what a due index serves)
       npm run bench -- fairness [--rate R] [--seconds S] [--flood N] [--concurrency N] [--store sqlite|postgres://…] [--schema S]
                  (duetime alone: a steady tenant's start lag with and without another tenant's flood)
       npm run bench -- dashboard [--jobs N] [--store sqlite|postgres://…] [--schema S]
                  (duetime alone: the dashboard's page weight, first paint, and the Overview's refresh cost with N jobs)
       npm run bench -- redis-claim [--members N] [--claims N] [--max N]
                  (the Redis due index alone: memory per member and the claim script's latency)
       npm run bench -- dispatch-order [--jobs N] [--batch N] [--rounds N] [--store sqlite|postgres]
                  (the store alone: a dispatch in job id order, as the store's window gives it, against one grouped by shard, as Redis claims give it)`;

// fairness, dashboard, redis-claim and dispatch-order run duetime alone (the peers have no tenants, no dashboard, no due index): their own scripts, with their own flags.
const alone = {
  fairness: "./fairness.js",
  dashboard: "./dashboard.js",
  "redis-claim": "./redis-claim.js",
  "dispatch-order": "./dispatch-order.js",
} as const;
const script = alone[process.argv[2] as keyof typeof alone];
if (script) {
  process.argv.splice(2, 1);
  await import(script);
  process.exit(0);
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    contenders: { type: "string" },
    runs: { type: "string" },
    concurrency: { type: "string" },
    jobs: { type: "string" },
    rate: { type: "string" },
    duration: { type: "string" },
    timeout: { type: "string" },
    window: { type: "string" },
    out: { type: "string" },
    "runs-of": { type: "string" },
    "quiet-wait": { type: "string" },
    lead: { type: "string" },
    merge: { type: "boolean" },
    recurring: { type: "boolean" },
    "render-only": { type: "boolean" },
    baseline: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const command = positionals[0] ?? "herd";
const smoke = command === "smoke";
if (values.recurring && command !== "idle" && command !== "steady")
  usage("--recurring applies to idle and steady only (cron-herd is the recurring herd)");
const num = (v: string | undefined, fallback: number) => {
  if (v === undefined) return fallback;
  const x = Number(v);
  if (!Number.isFinite(x) || x <= 0) usage(`not a positive number: ${v}`);
  return x;
};
const list = (v: string | undefined, fallback: number[]) => (v === undefined ? fallback : v.split(",").map((s) => num(s, 0)));
function usage(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

const concurrency = num(values.concurrency, 100);
const runsOverride = values.runs === undefined ? undefined : num(values.runs, 1);
const timeoutMs = num(values.timeout, smoke ? 60 : 900) * 1000;
const quietWaitMs = values["quiet-wait"] === "0" ? 0 : num(values["quiet-wait"], smoke ? 0.001 : 60) * 1000;
if (values.baseline) {
  if (!existsSync(join(values.baseline, "dist/cli/main.js"))) usage(`--baseline: no built duetime in ${values.baseline} (run npm run build there)`);
  addBaselines(resolve(values.baseline));
}
const names = values.contenders?.split(",").filter(Boolean) ?? (values["render-only"] ? Object.keys(CONTENDERS) : await workingContenders());
for (const name of names) if (!CONTENDERS[name]) usage(`unknown contender ${name}`);

/** Every contender, less those whose store does not work in this checkout (said on stderr). */
async function workingContenders(): Promise<string[]> {
  const working: string[] = [];
  for (const name of Object.keys(CONTENDERS)) {
    const problem = await PRECONDITIONS[name]?.();
    if (problem) console.error(`leaving out ${name}: ${problem}`);
    else working.push(name);
  }
  return working;
}

const runsOf = new Map<string, number>();
for (const item of (values["runs-of"] ?? "").split(",").filter(Boolean)) {
  const [name = "", count] = item.split("=");
  if (!CONTENDERS[name]) usage(`--runs-of: unknown contender ${name}`);
  runsOf.set(name, num(count, 1));
}

// A smoke test only checks that the row counts can be read: it does not wait for them to be whole.
const statsSettleMs = smoke ? 1_500 : STATS_SETTLE_MS;
const herds = (sizes: number[], runs: number, recurring = false) =>
  sizes.map((jobs) =>
    values.lead !== undefined
      ? herd({ jobs, leadBaseMs: num(values.lead, 1) * 1000, leadPerJobMs: 0, timeoutMs, runs, statsSettleMs, recurring })
      : herd({ jobs, leadBaseMs: smoke ? 2_000 : 3_000, leadPerJobMs: 0.15, timeoutMs, runs, statsSettleMs, recurring }),
  );
const steadies = (rates: number[], runs: number, recurring = false) =>
  rates.map((rate) =>
    steady({
      rate,
      durationMs: num(values.duration, smoke ? 3 : 30) * 1000,
      graceMs: smoke ? 30_000 : 60_000,
      runs,
      seed: 42,
      statsSettleMs,
      recurring,
    }),
  );
const immediates = (sizes: number[], runs: number) => sizes.map((jobs) => immediate({ jobs, timeoutMs, runs }));
const idles = (sizes: number[], runs: number, recurring = false) =>
  sizes.map((jobs) => idle({ jobs, settleMs: smoke ? 1_000 : 5_000, windowMs: num(values.window, smoke ? 2 : 30) * 1000, runs, recurring }));

let scenarios: Scenario[];
switch (command) {
  case "herd":
    scenarios = herds(list(values.jobs, [20_000, 100_000]), 3);
    break;
  case "cron-herd":
    scenarios = herds(list(values.jobs, [20_000]), 3, true);
    break;
  case "steady":
    scenarios = steadies(list(values.rate, [500, 2_000]), 1, values.recurring === true);
    break;
  case "immediate":
    scenarios = immediates(list(values.jobs, [50_000]), 3);
    break;
  case "idle":
    scenarios = idles(list(values.jobs, [1_000_000]), 1, values.recurring === true);
    break;
  case "all":
    if (values.jobs !== undefined) usage("--jobs is per scenario; run the scenarios one by one to change sizes");
    scenarios = [
      ...herds([20_000, 100_000], 3),
      ...herds([20_000], 3, true),
      ...steadies(list(values.rate, [500, 2_000]), 1),
      ...immediates([50_000], 3),
      ...idles([1_000_000], 1),
    ];
    break;
  case "smoke":
    scenarios = [
      ...herds([300], 1),
      ...herds([300], 1, true),
      // Issue 13's regression guard: a herd of 2,000 through duetime's server finishes, every job started exactly once (no time is asserted).
      herd({ jobs: 2_000, leadBaseMs: 2_000, leadPerJobMs: 0.15, timeoutMs, runs: 1, statsSettleMs, exactlyOnce: true, only: ["duetime-server"] }),
      ...steadies([100], 1),
      ...steadies([100], 1, true),
      ...immediates([300], 1),
      ...idles([2_000], 1),
      ...idles([300], 1, true),
    ];
    break;
  default:
    usage(`unknown scenario ${command}`);
}

interface Outcome {
  contender: string;
  run: number;
  output: RunOutput;
  noise: number;
  /** When the run started and with what command, which version and settings (kept in <scenario>.json for --merge). */
  at: string;
  command: string;
  version: string;
  settings: string;
}
const REPO_ROOT = fileURLToPath(new URL("../", import.meta.url));
/** The command as run; an --out outside the repository is shown as <dir> (results name no machine's paths). */
const commandLine = `npm run bench -- ${process.argv
  .slice(2)
  .map((arg, i, all) => (all[i - 1] === "--out" && !resolve(arg).startsWith(REPO_ROOT) ? "<dir>" : arg))
  .join(" ")}`;

let runCounter = 0;
const versions = new Map<string, string>();
const settings = new Map<string, string>();
const failures: string[] = [];
const loadAtStart = loadavg()[0]!;

async function runOnce(scenario: Scenario, name: string, run: number, runs: number): Promise<Outcome> {
  const runId = `${process.pid}_${++runCounter}`;
  const at = new Date().toISOString();
  const dir = mkdtempSync(join(tmpdir(), "duetime-bench-"));
  const contender: Contender = CONTENDERS[name]!();
  const progress = new Progress(`${scenario.id} ${name} run ${run}/${runs}`);
  if (quietWaitMs >= 1000) {
    progress.set("waiting for the machine to be quiet");
    const q = await waitForQuiet(quietWaitMs);
    if (q.waitedMs > 1_500)
      process.stderr.write(`(waited ${Math.round(q.waitedMs / 1000)} s for quiet; last second ${Math.round(q.busyPct)}% busy)\n`);
  }
  progress.set("setting up");
  // A run that hangs (a service that stopped answering) must not hang CI.
  const watchdog = setTimeout(() => {
    progress.done(`no progress after ${Math.round((timeoutMs + 600_000) / 1000)} s; giving up`);
    process.exit(1);
  }, timeoutMs + 600_000);
  let output: RunOutput = { metrics: {} };
  let noise = NaN;
  try {
    await contender.setup({ dir, concurrency, runId });
    versions.set(name, contender.version);
    settings.set(name, contender.settings);
    const gauge = new NoiseGauge(() => contender.schedulerPids());
    output = await scenario.run(contender, progress);
    noise = gauge.foreignPercent();
  } catch (e) {
    output = { metrics: {}, failure: `threw: ${(e as Error).stack ?? String(e)}` };
  } finally {
    try {
      await contender.teardown();
    } catch (e) {
      output.failure ??= `teardown threw: ${(e as Error).message}`;
    }
    clearTimeout(watchdog);
    rmSync(dir, { recursive: true, force: true });
  }
  const summary = summarise(scenario, output);
  progress.done(output.failure ? `FAILED: ${output.failure}` : `${summary}; noise ${noise.toFixed(1)}%${output.note ? `; ${output.note}` : ""}`);
  if (output.failure) failures.push(`${scenario.id} ${name} run ${run}: ${output.failure}`);
  return { contender: name, run, output, noise, at, command: commandLine, version: contender.version, settings: contender.settings };
}

function summarise(scenario: Scenario, output: RunOutput): string {
  return scenario.columns
    .filter((c) => output.metrics[c.key] !== undefined)
    .map((c) => `${c.label} ${format(c, output.metrics[c.key]!)}`)
    .join(", ");
}

function format(c: Pick<Column, "unit">, x: number): string {
  if (Number.isNaN(x)) return "—";
  if (x === Infinity) return "∞";
  switch (c.unit) {
    case "ms":
      return Math.abs(x) >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x)} ms`;
    case "rate":
      return `${Math.round(x).toLocaleString("en-US")}/s`;
    case "count":
      return Math.round(x).toLocaleString("en-US");
    case "decimal":
      return x.toFixed(2);
    case "bytes":
      return x >= 1e9 ? `${(x / 1e9).toFixed(2)} GB` : `${(x / 1e6).toFixed(1)} MB`;
    case "percent":
      return `${x < 10 ? x.toFixed(1) : Math.round(x)}%`;
    case "yesno":
      return x >= 1 ? "yes" : "no";
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function cell(c: Pick<Column, "unit">, xs: number[]): string {
  const finite = xs.filter((x) => !Number.isNaN(x));
  if (finite.length === 0) return "—";
  if (c.unit === "yesno") {
    const yes = finite.filter((x) => x >= 1).length;
    return finite.length === 1 ? format(c, finite[0]!) : `${yes === finite.length ? "yes" : yes === 0 ? "no" : "partly"} (${yes}/${finite.length})`;
  }
  if (finite.length === 1) return format(c, finite[0]!);
  return `${format(c, median(finite))} (${format(c, Math.min(...finite))}–${format(c, Math.max(...finite))})`;
}

function header(shown: Outcome[] = []): string[] {
  const cpu = cpus();
  for (const o of shown) versions.set(o.contender, o.version);
  return [
    `- ${new Date().toISOString()}; command: \`${commandLine}\``,
    `- machine: ${cpu[0]?.model ?? "cpu"} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${release()}; load average ${loadAtStart.toFixed(2)} at start`,
    `- Node ${process.version}; ${[...new Set(versions.values())].join("; ")}`,
    `- every contender: worker concurrency ${concurrency} in total, a no-op handler that records when it started, a fresh store per run; ` +
      `figures are the median of the runs with (min–max); noise = CPU used by other processes on the machine during the run, as a share of all cores`,
  ];
}

function scenarioReport(scenario: Scenario, outcomes: Outcome[]): { markdown: string; svg: string | null } {
  const cols = scenario.columns.filter((c) => !c.optional || outcomes.some((o) => o.output.metrics[c.key] !== undefined));
  const lines = [
    `## ${scenario.title}`,
    "",
    `| contender | ${cols.map((c) => c.label).join(" | ")} | noise | runs |`,
    `| --- | ${cols.map(() => "---").join(" | ")} | --- | --- |`,
  ];
  const series: Series[] = [];
  const rows = Object.keys(CONTENDERS).filter((n) => outcomes.some((o) => o.contender === n));
  const kept = new Set(rows.filter((n) => !names.includes(n)));
  for (const name of rows) {
    const mine = outcomes.filter((o) => o.contender === name);
    const ok = mine.filter((o) => !o.output.failure);
    const failed = mine.length - ok.length;
    const runs = mine.length;
    const vals = (key: string) => ok.map((o) => o.output.metrics[key] ?? NaN);
    lines.push(
      `| ${name}${kept.has(name) ? " †" : ""} | ${cols.map((c) => (ok.length ? cell(c, vals(c.key)) : "failed")).join(" | ")} | ${cell(
        { unit: "percent" },
        ok.map((o) => o.noise),
      )} | ${ok.length}/${runs}${failed ? ` (${failed} failed)` : ""} |`,
    );
    // The chart shows the run with the median p99 (the tail is what differs most).
    const withLags = ok.filter((o) => o.output.lagQuantiles?.length).sort((a, b) => (a.output.metrics.p99 ?? 0) - (b.output.metrics.p99 ?? 0));
    const pick = withLags[Math.floor((withLags.length - 1) / 2)];
    series.push({ name, quantiles: pick?.output.lagQuantiles ?? [], points: 200, p50: pick?.output.metrics.p50, p99: pick?.output.metrics.p99 });
  }
  lines.push("", ...scenario.notes.map((n) => `- ${n}`));
  for (const name of kept) {
    const o = outcomes.find((x) => x.contender === name)!;
    lines.push(`- † ${name}: kept from an earlier run (${o.at.slice(0, 16).replace("T", " ")} UTC, \`${o.command}\`; ${o.version})`);
  }
  for (const o of outcomes) {
    if (o.output.failure) lines.push(`- ${o.contender} run ${o.run} failed: ${o.output.failure.split("\n")[0]}`);
    if (o.output.note) lines.push(`- ${o.contender} run ${o.run}: ${o.output.note}`);
  }
  if (scenario.chart) lines.push("", `![start-lag distribution, ${scenario.id}](${scenario.id}.svg)`);
  const svg = scenario.chart
    ? lagChart(scenario.title, `start-lag distribution per contender (median run by p99); concurrency ${concurrency}; ${cpus().length} cores`, series)
    : null;
  return { markdown: `${lines.join("\n")}\n`, svg };
}

const outDir = values.out ?? new URL("./results/", import.meta.url).pathname;
const sections: string[] = [];
for (const scenario of scenarios) {
  const runs = runsOverride ?? scenario.defaultRuns;
  const outcomes: Outcome[] = [];
  const able = names.filter((name) => (!scenario.needsCron || CONTENDERS[name]!().cron) && (!scenario.only || scenario.only.includes(name)));
  if (able.length < names.length)
    console.log(
      `${scenario.id}: not run for ${names.filter((x) => !able.includes(x)).join(", ")} (${scenario.only ? `only for ${scenario.only.join(", ")}` : "no recurring jobs in this harness"})`,
    );
  for (let r = 1; r <= runs && !values["render-only"]; r++) {
    for (const name of able) {
      const mine = Math.min(runs, runsOf.get(name) ?? runs);
      if (r <= mine) outcomes.push(await runOnce(scenario, name, r, mine));
    }
  }
  const jsonFile = join(outDir, `${scenario.id}.json`);
  if ((values.merge || values["render-only"]) && existsSync(jsonFile)) {
    const previous = (JSON.parse(readFileSync(jsonFile, "utf8")) as { outcomes: Outcome[] }).outcomes;
    for (const o of previous) {
      if ((names.includes(o.contender) && !values["render-only"]) || !CONTENDERS[o.contender]) continue;
      // JSON has no NaN ("—" cells): it comes back as null; Infinity was written as a string.
      for (const [k, v] of Object.entries(o.output.metrics) as [string, unknown][]) {
        if (v === null) o.output.metrics[k] = NaN;
        if (v === "Infinity") o.output.metrics[k] = Infinity;
      }
      outcomes.push(o);
      settings.set(o.contender, o.settings);
      versions.set(o.contender, o.version);
    }
  }
  const { markdown, svg } = scenarioReport(scenario, outcomes);
  const shownNames = Object.keys(CONTENDERS).filter((n) => outcomes.some((o) => o.contender === n));
  const settingsBlock = ["", "Settings:", ...shownNames.map((n) => `- ${n}: ${settings.get(n) ?? "(setup failed)"}`), ""].join("\n");
  const doc = [`# ${scenario.title}`, "", ...header(outcomes), "", markdown.replace(/^## .*\n\n/, ""), settingsBlock].join("\n");
  sections.push(markdown);
  console.log(`\n${markdown}`);
  if (!smoke) {
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, `${scenario.id}.md`), doc);
    writeFileSync(jsonFile, `${JSON.stringify({ scenario: scenario.id, outcomes }, (_, v) => (v === Infinity ? "Infinity" : v), 1)}\n`);
    if (svg) writeFileSync(join(outDir, `${scenario.id}.svg`), svg);
    console.error(`written: ${join(outDir, `${scenario.id}.md`)}${svg ? ` and .svg` : ""}`);
  }
}
const settingsBlock = [
  "Settings:",
  ...Object.keys(CONTENDERS)
    .filter((n) => settings.has(n))
    .map((n) => `- ${n} (${versions.get(n) ?? "?"}): ${settings.get(n) ?? "(setup failed)"}`),
].join("\n");
const all = [`# duetime benchmarks: ${command}`, "", ...header(), "", ...sections, settingsBlock, ""].join("\n");
if (!smoke && scenarios.length > 1) {
  writeFileSync(join(outDir, `${command}.md`), all);
  console.error(`written: ${join(outDir, `${command}.md`)}`);
}
console.log(settingsBlock);
if (failures.length) {
  console.error(`\n${failures.length} run(s) failed:\n${failures.map((f) => `- ${f}`).join("\n")}`);
  process.exit(1);
}
// Libraries may leave handles open (pools, timers); the results are out.
process.exit(0);
