// Does the order of a dispatch batch matter to the store? The store alone
// (no server, no workers): --jobs recurring jobs due now, dispatched by the
// store's own fenced transaction (dispatchMany) in batches of --batch, either
// in job id order (what the store's due window hands the scheduler: ids are
// time-sorted, so a batch is neighbours on disk) or grouped by shard (what
// claims from the Redis due index hand it: shards hash the id, so a batch is
// spread over the whole table). Each round creates the jobs afresh, then
// times the dispatch of all of them; rounds alternate the two orders.
//
//   npm run bench -- dispatch-order [--jobs 100000] [--batch 1000] [--rounds 2] [--store sqlite|postgres]

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SHARD_COUNT } from "../src/core/ids.js";
import { openStore } from "../src/store/factory.js";
import type { LoadedDueEntry, Store } from "../src/store/store.js";
import { recurringJobs } from "../src/store/test-support.js";
import { freshDatabase } from "./services.js";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "100000" },
    batch: { type: "string", default: "1000" },
    rounds: { type: "string", default: "2" },
    store: { type: "string", default: "sqlite" },
  },
});
const JOBS = Number(values.jobs);
const BATCH = Number(values.batch);
const ROUNDS = Number(values.rounds);
if (![JOBS, BATCH, ROUNDS].every((v) => Number.isInteger(v) && v > 0)) throw new Error("--jobs, --batch and --rounds take positive integers");
if (values.store !== "sqlite" && values.store !== "postgres") throw new Error("--store is sqlite or postgres");
const YEAR = 365 * 86_400_000;

/** A fresh store with the jobs created and every shard held; the entries in the order asked. */
async function prepare(store: Store, order: "id" | "shard") {
  const now = Date.now();
  const jobs = recurringJobs(JOBS, { createdAt: now, dueAt: now - 1000 });
  for (let i = 0; i < jobs.length; i += 1000) await store.jobCreateMany({ nodeId: "bench", jobs: jobs.slice(i, i + 1000), now });
  const leases = await store.shardAcquire({ owner: "bench", shards: Array.from({ length: SHARD_COUNT }, (_, i) => i), leaseMs: 3_600_000, now });
  const epochs = new Map(leases.map((l) => [l.shard, l.epoch]));
  const entries: LoadedDueEntry[] = await store.dueLoad({ shards: [...epochs.keys()], before: now, limit: JOBS });
  entries.sort(order === "id" ? byId : (a, b) => a.shard - b.shard || byId(a, b));
  return { now, epochs, entries };
}

const byId = (a: LoadedDueEntry, b: LoadedDueEntry) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0);

async function round(order: "id" | "shard", n: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-order-"));
  const db = values.store === "postgres" ? await freshDatabase(`order_${order}`, `${process.pid}_${n}`) : null;
  const store = await openStore(db ? db.url : `sqlite:${join(dir, "duetime.db")}`);
  try {
    const { now, epochs, entries } = await prepare(store, order);
    const t0 = performance.now();
    for (let i = 0; i < entries.length; i += BATCH) {
      const items = entries
        .slice(i, i + BATCH)
        .map((entry) => ({ entry, next: { scheduledFor: entry.scheduledFor + YEAR, dueAt: entry.dueAt + YEAR } }));
      const result = await store.dispatchMany({ nodeId: "bench", epochs, now, items });
      if (result.dispatched.length !== items.length) throw new Error(`dispatched ${result.dispatched.length} of ${items.length}`);
    }
    return performance.now() - t0;
  } finally {
    await store.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`${values.store}: ${JOBS.toLocaleString("en-US")} recurring jobs due now, dispatched in batches of ${BATCH}\n`);
console.log("| round | order | dispatch of all | per job |");
console.log("| --- | --- | --- | --- |");
for (let r = 1; r <= ROUNDS; r++) {
  for (const order of ["id", "shard"] as const) {
    const ms = await round(order, r);
    console.log(`| ${r} | ${order === "id" ? "by job id" : "by shard"} | ${Math.round(ms)} ms | ${((ms * 1000) / JOBS).toFixed(1)} µs |`);
  }
}
