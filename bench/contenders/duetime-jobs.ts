// What every duetime contender shares: the job it creates (a queue job due at
// the given time), the version string, and the size of a SQLite store.
import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import type { BatchCreateItem, BatchCreateResult } from "../../src/core/api.js";
import type { BenchJob } from "../contender.js";

export const BENCH_POOL = "bench";
const ROOT = new URL("../../", import.meta.url).pathname;

export function benchJobs(jobs: BenchJob[]): BatchCreateItem[] {
  return jobs.map((j) => ({
    name: "bench",
    target: { type: "queue", pool: BENCH_POOL },
    payload: { seq: j.seq },
    schedule: { runAt: new Date(j.dueAt).toISOString() },
  }));
}

export function assertCreated(results: BatchCreateResult[]): void {
  const failed = results.find((r) => "error" in r);
  if (failed) throw new Error(`createJobs failed: ${JSON.stringify(failed)}`);
}

/** "duetime 0.1.0 @ <commit>[+dirty]": the engine is measured as it is in the work tree at the moment of the run. */
export function duetimeVersion(): string {
  const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { version: string };
  let rev = "";
  try {
    rev = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { cwd: ROOT, encoding: "utf8" }).trim();
    if (dirty) rev += "+src-changes";
  } catch {
    // not a git checkout
  }
  return `duetime ${pkg.version}${rev ? ` @ ${rev}` : ""}`;
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
