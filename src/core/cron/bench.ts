// Micro-benchmark (not a test): node --import tsx src/core/cron/bench.ts
import { nextFireTime, parseCron } from "./index.js";

function bench(label: string, source: string, tz: string, mode: "chain" | "random"): void {
  const expr = parseCron(source);
  const start = Date.UTC(2026, 0, 1);
  const span = 4 * 365 * 86_400_000;
  // warm up (JIT, zone tables)
  let after = start;
  for (let i = 0; i < 20_000; i++) {
    const f = nextFireTime(expr, tz, mode === "chain" ? after : start + ((i * 7919 * 60_013) % span));
    after = f && f.at < start + span ? f.at : start;
  }
  const n = 300_000;
  let sink = 0;
  after = start;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const f = nextFireTime(expr, tz, mode === "chain" ? after : start + ((i * 7919 * 60_013) % span))!;
    sink += f.at;
    after = f.at < start + span ? f.at : start;
  }
  const ns = Number(process.hrtime.bigint() - t0);
  console.log(
    `${label.padEnd(52)} ${(n / (ns / 1e9)).toFixed(0).padStart(9)} calls/s  ${(ns / n / 1000).toFixed(2)} µs/call${sink === 0 ? "!" : ""}`,
  );
}

bench('"*/5 * * * *" UTC, chained', "*/5 * * * *", "UTC", "chain");
bench('"*/5 * * * *" UTC, random starts', "*/5 * * * *", "UTC", "random");
bench('"0 9 * * MON-FRI" Europe/London, chained', "0 9 * * MON-FRI", "Europe/London", "chain");
bench('"0 9 * * MON-FRI" Europe/London, random starts', "0 9 * * MON-FRI", "Europe/London", "random");
bench('"*/30 * * * *" America/New_York, chained', "*/30 * * * *", "America/New_York", "chain");
bench('"30 2 * * *" America/New_York, chained', "30 2 * * *", "America/New_York", "chain");
bench('"0 0 L * 5L" Pacific/Chatham, chained', "0 0 L * 5L", "Pacific/Chatham", "chain");

const t0 = process.hrtime.bigint();
const sources = ["*/5 * * * *", "0 9 * * MON-FRI", "0 0 1 * *", "30 2 * * *", "H H * * *", "0 0 L * 5L"];
const n = 100_000;
for (let i = 0; i < n; i++) parseCron(sources[i % sources.length]!, { hashSeed: `job-${i}` });
const ns = Number(process.hrtime.bigint() - t0);
console.log(`${"parseCron (mixed)".padEnd(52)} ${(n / (ns / 1e9)).toFixed(0).padStart(9)} calls/s  ${(ns / n / 1000).toFixed(2)} µs/call`);
