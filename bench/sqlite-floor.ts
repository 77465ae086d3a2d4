// What a herd's drain costs SQLite itself, with nothing of duetime around it:
// the floor under the embedded targets. Not a test: a measurement.
//
//   node --import tsx bench/sqlite-floor.ts [--jobs 20000] [--lease 100] [--runs 3] [--only TEXT]
//
// (--only: just the rows whose name contains TEXT, e.g. --only "own cycle").
//
// One table of one-offs in a fresh WAL file (better-sqlite3, as the store opens
// it), created outside the timing, then drained as a worker's cycle does: one
// write transaction per call that completes the previous call's rows and
// leases the next `--lease` (UPDATE … RETURNING), committed with
// synchronous=NORMAL (the default durability's transitions). Each track adds
// to the table what duetime's executions carry, one structure at a time, so
// the drain's SQL floor and each structure's share of it can be read side by
// side. The store's own drain through the engine (the same cycle, Service.lease)
// is `node --import tsx bench/row-count.ts --store sqlite --jobs N` ("ack+lease").

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { CompleteItem } from "@duetime/sdk/contract";
import { DEFAULT_CONTEXT } from "../src/engine/service.js";
import { openStore } from "../src/store/factory.js";
import { benchService, createOneOffs } from "./one-offs.js";

const argv = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const JOBS = arg("--jobs", 20_000);
const LEASE = arg("--lease", 100);
const RUNS = arg("--runs", 3);

const TABLE = `CREATE TABLE executions (
  id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, pool TEXT NOT NULL, state TEXT NOT NULL, priority INTEGER NOT NULL,
  ready_at INTEGER NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, worker_id TEXT, started_at INTEGER, lease_until INTEGER,
  finished_at INTEGER, payload TEXT, result TEXT)`;

/** Each track: the structures on top of the table, cumulative, named as duetime's schema names them. */
const TRACKS: { name: string; ddl: string[] }[] = [
  {
    name: "ready index only (a queue's minimum)",
    ddl: ["CREATE INDEX ready ON executions (pool, tenant_id, priority DESC, ready_at) WHERE state = 'READY'"],
  },
  { name: "+ running (the reaper's lease_until)", ddl: ["CREATE INDEX running ON executions (lease_until) WHERE state = 'RUNNING'"] },
  {
    name: "+ ended (retention)",
    ddl: ["CREATE INDEX ended ON executions (finished_at) WHERE state IN ('SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED')"],
  },
  { name: "+ running by tenant (quota)", ddl: ["CREATE INDEX running_by_tenant ON executions (tenant_id) WHERE state = 'RUNNING'"] },
  {
    name: "+ a ready-count trigger (leave and enter)",
    ddl: [
      "CREATE TABLE ready_counts (pool TEXT NOT NULL, tenant_id TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (pool, tenant_id))",
      `CREATE TRIGGER ready_leave AFTER UPDATE OF state ON executions WHEN OLD.state = 'READY' BEGIN
         UPDATE ready_counts SET n = n - 1 WHERE pool = OLD.pool AND tenant_id = OLD.tenant_id; END`,
    ],
  },
];

const LEASE_SQL = `UPDATE executions SET state = 'RUNNING', attempt = attempt + 1, worker_id = 'w', started_at = @now, lease_until = @now + 600000
  WHERE id IN (SELECT id FROM executions WHERE pool = 'bench' AND tenant_id = 'default' AND state = 'READY' AND ready_at <= @now
               ORDER BY priority DESC, ready_at LIMIT @n)
  RETURNING id, attempt, payload, lease_until`;
const COMPLETE_SQL = `UPDATE executions SET state = 'SUCCEEDED', finished_at = ?, result = NULL, lease_until = NULL
  WHERE id = ? AND attempt = ? AND state = 'RUNNING' AND lease_until >= ?`;

type Done = { id: string | number; attempt: number }[];

/** A drain's wall time and this process's CPU time over it (user + system), ms. */
interface Drained {
  ms: number;
  cpuMs: number;
}

const startClock = () => ({ wall: performance.now(), cpu: process.cpuUsage() });
const readClock = (from: ReturnType<typeof startClock>): Drained => {
  const cpu = process.cpuUsage(from.cpu);
  return { ms: performance.now() - from.wall, cpuMs: (cpu.user + cpu.system) / 1000 };
};

/** Drains the file's READY rows with the two statements, a write transaction per call: its wall time, ms. */
function drainBySql(db: Database.Database): Drained {
  db.pragma("synchronous = NORMAL");
  const lease = db.prepare(LEASE_SQL);
  const complete = db.prepare(COMPLETE_SQL);
  const cycle = db.transaction((done: Done) => {
    const at = Date.now();
    for (const d of done) if (complete.run(at, d.id, d.attempt, at).changes !== 1) throw new Error("a completion changed nothing");
    return lease.all({ now: at, n: LEASE }) as Done;
  });
  const start = startClock();
  let done: Done = [];
  let leased = 0;
  do {
    done = cycle.immediate(done);
    leased += done.length;
  } while (done.length > 0);
  const drained = readClock(start);
  if (leased !== JOBS) throw new Error(`leased ${leased} of ${JOBS}`);
  return drained;
}

/** A fresh directory for one run's file, removed after it. */
async function inFreshDir<T>(fn: (file: string) => Promise<T> | T): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-floor-"));
  try {
    return await fn(join(dir, "floor.db"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The narrow table with the first `upTo` tracks' structures, JOBS rows READY, drained by the two statements. */
const narrow = (upTo: number) =>
  inFreshDir((file) => {
    const db = new Database(file);
    try {
      db.pragma("journal_mode = WAL");
      db.exec(TABLE);
      for (const t of TRACKS.slice(0, upTo)) for (const s of t.ddl) db.exec(s);
      if (upTo >= 5) db.exec("INSERT INTO ready_counts VALUES ('bench', 'default', 0)");
      const insert = db.prepare(
        "INSERT INTO executions (tenant_id, pool, state, priority, ready_at, payload) VALUES ('default', 'bench', 'READY', 0, ?, ?)",
      );
      const now = Date.now();
      db.transaction(() => {
        for (let i = 0; i < JOBS; i++) insert.run(now, JSON.stringify({ seq: i }));
      })();
      return drainBySql(db);
    } finally {
      db.close();
    }
  });

/** The store's file with JOBS one-offs created through the engine, then drained by `how`. */
const storeTable = (how: "statements" | "store") =>
  inFreshDir(async (file) => {
    const store = await openStore(`sqlite:${file}`);
    const service = benchService(store, "sqlite-floor");
    await createOneOffs(service, "bench", JOBS);
    if (how === "statements") {
      await store.close();
      const db = new Database(file);
      try {
        return drainBySql(db);
      } finally {
        db.close();
      }
    }
    try {
      const start = startClock();
      let complete: CompleteItem[] = [];
      let leased = 0;
      do {
        const r = await service.lease(DEFAULT_CONTEXT, "bench", {
          workerId: "w",
          max: LEASE,
          leaseSeconds: 600,
          waitSeconds: 0,
          ...(complete.length > 0 ? { complete } : {}),
        });
        leased += r.items.length;
        complete = r.items.map((x) => ({ executionId: x.executionId, attempt: x.attempt, ...(x.leaseToken ? { leaseToken: x.leaseToken } : {}) }));
      } while (complete.length > 0);
      const drained = readClock(start);
      if (leased !== JOBS) throw new Error(`leased ${leased} of ${JOBS}`);
      return drained;
    } finally {
      await store.close();
    }
  });

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const only = argv.includes("--only") ? argv[argv.indexOf("--only") + 1]! : "";
const all: { name: string; run: () => Promise<Drained> }[] = [
  ...TRACKS.map((t, i) => ({ name: t.name, run: () => narrow(i + 1) })),
  { name: "the store's executions table and rows, the same two statements", run: () => storeTable("statements") },
  { name: "the store's own cycle (Service.lease with the previous call's acks)", run: () => storeTable("store") },
];
const rows = all.filter((r) => r.name.includes(only));
console.log(`${JOBS} one-offs, leases of ${LEASE}, median of ${RUNS} (min–max); µs/job = drain ÷ jobs; CPU = this process's, over the drain\n`);
console.log("| table and statements | drain | µs/job | CPU µs/job |\n| --- | --- | --- | --- |");
const spread = (xs: number[]) => `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
for (const row of rows) {
  const runs: Drained[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await row.run());
  const wall = runs.map((r) => r.ms);
  const cpu = runs.map((r) => r.cpuMs);
  const perJob = (ms: number) => ((ms * 1000) / JOBS).toFixed(1);
  console.log(`| ${row.name} | ${spread(wall)} | ${perJob(median(wall))} | ${perJob(median(cpu))} |`);
}
