// What every duetime contender shares: the job it creates (a queue job due at
// the given time), the version string, and the size of a SQLite store.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { BatchCreateItem, BatchCreateMinimalResult } from "@duetime/sdk/contract";
import { DURABILITIES, type Durability } from "../../src/store/store.js";
import type { BenchJob } from "../contender.js";

export const BENCH_POOL = "bench";
const ROOT = new URL("../../", import.meta.url).pathname;

export function benchJobs(jobs: BenchJob[]): BatchCreateItem[] {
  return jobs.map((j) => ({
    name: "bench",
    target: { type: "queue", pool: BENCH_POOL },
    payload: { seq: j.seq },
    schedule: j.recurring ? { cron: yearlyAt(j.dueAt), tz: "UTC" } : { runAt: new Date(j.dueAt).toISOString() },
  }));
}

/** A six-field cron that fires at this instant's second once a year: its next occurrence after now is the instant. */
function yearlyAt(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCSeconds()} ${d.getUTCMinutes()} ${d.getUTCHours()} ${d.getUTCDate()} ${d.getUTCMonth() + 1} *`;
}

/** Throws on the first failed item; the full answer's items and the minimal ones (`returnMinimal`) alike. */
export function assertCreated(results: BatchCreateMinimalResult[]): void {
  const failed = results.find((r) => "error" in r);
  if (failed) throw new Error(`createJobs failed: ${JSON.stringify(failed)}`);
}

/**
 * "duetime 0.1.0 @ <commit>[ + uncommitted src <hash>]": the engine is
 * measured as it is in the work tree when each run starts (an embedded
 * contender loads src/ once per benchmark process, a server contender once per
 * run), so the work tree's src/ is fingerprinted too: two different
 * fingerprints in one header mean src/ changed during the benchmark.
 */
export function duetimeVersion(): string {
  const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { version: string };
  let rev = "";
  try {
    rev = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { cwd: ROOT, encoding: "utf8" }).trim();
    if (dirty) rev += ` + uncommitted src ${srcFingerprint()}`;
  } catch {
    rev = `src ${srcFingerprint()}`;
  }
  return `duetime ${pkg.version} @ ${rev}`;
}

function srcFingerprint(): string {
  const hash = createHash("sha256");
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts")) hash.update(path).update(readFileSync(path));
    }
  };
  walk(join(ROOT, "src"));
  return hash.digest("hex").slice(0, 8);
}

/**
 * The durability the duetime contenders run with: DUETIME_DURABILITY as the
 * server reads it (the serve child processes inherit it), default
 * "accepted"; named in each contender's settings.
 */
export const BENCH_DURABILITY: Durability = readDurability();

function readDurability(): Durability {
  const value = process.env.DUETIME_DURABILITY ?? "accepted";
  const mode = DURABILITIES.find((d) => d === value);
  if (!mode) throw new Error(`DUETIME_DURABILITY: expected one of ${DURABILITIES.join(", ")}, got ${JSON.stringify(value)}`);
  return mode;
}

/** How a store's durability reads in a settings line. */
export function durabilityLabel(store: "sqlite" | "postgres"): string {
  if (BENCH_DURABILITY === "strict")
    return store === "sqlite" ? "--durability strict (every commit synchronous=FULL)" : "--durability strict (every commit synchronous)";
  return store === "sqlite"
    ? "--durability accepted (creates synchronous=FULL, transitions NORMAL, flushed within 200 ms)"
    : "--durability accepted (creates and grants synchronous, acks synchronous_commit=off, flushed within 200 ms)";
}

/** The database file with its WAL and shared-memory files. */
export function sqliteBytes(file: string): number {
  let total = 0;
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      total += statSync(f).size;
    } catch {
      // absent
    }
  }
  return total;
}

interface WorkerTuning {
  prefetch?: number;
  maxAckBatch?: number;
  ackDelayMs?: number;
}
const TUNING_KEYS: (keyof WorkerTuning)[] = ["prefetch", "maxAckBatch", "ackDelayMs"];

/**
 * Worker options for tuning experiments, from BENCH_WORKER_OPTIONS as JSON,
 * e.g. '{"prefetch":100,"ackDelayMs":5}' (only these tuning keys). Recorded
 * in the settings line, so a result names what it ran with.
 */
export const WORKER_TUNING = readWorkerTuning();

function readWorkerTuning(): { options: WorkerTuning; label: string } {
  const raw = process.env.BENCH_WORKER_OPTIONS;
  if (!raw) return { options: {}, label: "" };
  const options = JSON.parse(raw) as WorkerTuning;
  for (const [key, value] of Object.entries(options)) {
    if (!TUNING_KEYS.includes(key as keyof WorkerTuning) || !Number.isInteger(value)) {
      throw new Error(`BENCH_WORKER_OPTIONS: ${key} is not one of ${TUNING_KEYS.join(", ")} with an integer value`);
    }
  }
  return { options, label: `; worker tuning ${raw}` };
}
