// What one one-off job writes, from create to completion: every row version
// per table and every index entry per index, per job, on SQLite and on
// PostgreSQL, by phase. Not a test and not a timing: a count.
//
//   node --import tsx bench/row-count.ts [--store sqlite|postgres|both] [--jobs N] [--mode separate|cycle|both]
//
// The workload is the server's, minus HTTP: the engine's Service
// (engine/services.ts createService, as `duetime serve` builds it) over a
// store opened by store/factory.ts openStore. N one-off queue jobs due now
// (pool "bench", tenant "default", the bench's job: name "bench", payload
// {seq}) are created through Service.createJobs, the call behind POST
// /v1/jobs:batch, 1,000 a call; then leased 100 a call through Service.lease
// (POST /v1/pools/{pool}/lease: WorkerProtocol, Executor, the store's
// executionLease) and completed. Mode "separate" completes them afterwards
// through Service.completeMany, 100 a call (executionCompleteMany), so lease
// and complete are measured apart; mode "cycle" sends each batch's acks with
// the next lease, as the SDK worker's cycle does (executionAckAndLease), so
// they are one phase. A last phase runs executionCountsFold once: the
// housekeeping a node runs later for the ready counters these jobs changed.
// The node's timers (scheduler, reaper, retention, heartbeats, metrics) do
// not run: what is counted is what the jobs cost, not what a node costs per
// second. The scheduler is a stub (a one-off never reaches it).
//
// Every measurement runs twice per mode, each time in a fresh store: a clean
// pass (nothing added to the store) and a counted pass (instrumented).
//
// PostgreSQL (a private database per run, BENCH_PG_URL is the admin URL as
// in bench/services.ts; one schema per pass):
// - Row versions: the deltas of pg_stat_user_tables n_tup_ins, n_tup_upd,
//   n_tup_hot_upd and n_tup_del of the clean pass, per leaf table, summed per
//   partitioned table. PostgreSQL 15 flushes a backend's counters when it goes
//   idle, at most once a second (else a 10 s timer): at each phase boundary the
//   tool waits 1.1 s, then makes every connection of the store's pool run a
//   ping (as many concurrent store.ping() as the pool has connections), so each
//   backend goes idle again past its 1 s and flushes; it reads the counters
//   (after pg_stat_clear_snapshot()) and repeats until two readings agree. The
//   tool's own connection calls pg_stat_force_next_flush() after its writes.
// - Index entries: the index AM is called for every new heap tuple that is
//   not a HOT update (inserts, and updates that changed an indexed or
//   predicate column or did not fit on the page), and a partial index takes
//   the entry only when its predicate holds for the new tuple. So for an
//   index without a predicate, entries = ins + upd - hot_upd, exact from the
//   counters. For a partial index the predicate must be evaluated on each new
//   row version: in the counted pass an AFTER INSERT OR UPDATE row trigger on
//   every leaf table evaluates every partial predicate, read verbatim from
//   pg_index.indpred (pg_get_expr), on NEW, and records whether the update
//   changed a HOT-blocking column (index keys, and the columns named by index
//   expressions and predicates, compared with IS DISTINCT FROM), into an
//   UNLOGGED table in a schema of its own (so no WAL, and not among the
//   store's tables). Entries = inserts whose predicate holds + updates that
//   changed a HOT-blocking column and whose predicate holds + the updates that
//   changed none but were not HOT anyway (page full: n_tup_upd - n_tup_hot_upd
//   - changed updates, from the counters) whose predicate holds. The trigger
//   cannot tell which of the unchanged updates were the non-HOT ones, so when
//   some are non-HOT and the predicate differs among them a range is shown.
//   The trace's own counts are checked against the counted pass's counters,
//   and the counted pass's counters against the clean pass's ("check" lines).
//   pageinspect (bt_page_items) was not used: btree simple and bottom-up
//   deletion remove entries while the phase runs, so counting live entries
//   undercounts; index sizes are page-granular. Deletes write no index entry.
// - WAL: pg_current_wal_lsn() at the phase's boundaries (the clean pass),
//   cluster-wide. Beside it, with pg_walinspect over the same range, the
//   records of this run: those naming a relation of the run's database, and
//   every record of the transactions that wrote those (commits), and of the
//   store's flush transactions (logical messages with prefix "duetime"; another
//   duetime store on the same server during the run would be counted too).
//   The rest is other databases and the server's own (checkpoints, running
//   xacts), reported as "other".
// - rows/job as bench/README.md reads it: pg_stat_database tup_inserted +
//   tup_updated + tup_deleted of the run's database (clean pass), per job.
//
// SQLite (a fresh file per pass in a temporary directory, deleted afterwards):
// - Row writes per table: in the counted pass (the tool's own database file,
//   never one in use), AFTER INSERT, UPDATE and DELETE triggers on every table
//   count into a side table (rc_counts). Trigger writes are counted like any
//   statement's (the store's own triggers on executions write lanes and
//   ready_counts). Not counted: sqlite_sequence, and rows an INSERT OR REPLACE
//   deletes (no delete trigger fires without recursive_triggers; the path
//   measured has none).
// - Index entries: SQLite writes an index on INSERT (a new entry, when a
//   partial index's WHERE holds for the new row), on DELETE (removes the
//   entry, when the WHERE held for the old row), and on UPDATE only when the
//   statement's SET names one of the index's key columns, a column its WHERE
//   reads, or (WITHOUT ROWID) a primary key column; then it removes the old
//   entry (WHERE held for the old row) and inserts the new one (WHERE holds for
//   the new row), even when the key did not change. The counted pass mirrors
//   that rule with one AFTER UPDATE OF <those columns> trigger per index (UPDATE
//   OF fires on the SET list, as SQLite's index maintenance decides), and the
//   index's WHERE, read verbatim from sqlite_schema, evaluated on NEW and OLD.
//   The WITHOUT ROWID primary key is the table itself (its row writes).
// - WAL: in the clean pass, before each phase the WAL is checkpointed
//   (TRUNCATE) and the tool's connection opens a read transaction on the empty
//   WAL, which keeps every checkpoint from backfilling (so the WAL never
//   restarts mid-phase); at the phase's end, frames = the WAL's length, as
//   PRAGMA wal_checkpoint(PASSIVE) answers it, checked against the -wal file's
//   size / (page_size + 24). A frame is one page written (page_size + 24
//   bytes). Checkpoints' writes to the database file are not counted.
//
// Triggers cost time: the counted passes are for counting, not timing.
// "ms" is the clean pass's wall time of the phase, for orientation only.

import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import Database from "better-sqlite3";
import pg from "pg";
import type { CompleteItem, LeasedExecution, LeaseRequest } from "@duetime/sdk/contract";
import { DEFAULT_CONTEXT, type Service } from "../src/engine/service.js";
import { openStore } from "../src/store/factory.js";
import { FLUSH_BOUND_MS, type Store } from "../src/store/store.js";
import { benchService, CREATE_BATCH, createOneOffs } from "./one-offs.js";
import { freshDatabase, postgresVersion } from "./services.js";

const POOL = "bench";
const LEASE_BATCH = 100;
/** The store's pool size as the factory opens it (postgres/index.ts default): every connection is pinged at a boundary. */
const PG_POOL_SIZE = 10;

type StoreKind = "sqlite" | "postgres";
type Mode = "separate" | "cycle";
type Phase = "create" | "lease" | "complete" | "ack+lease" | "fold";

const PHASES: Record<Mode, Phase[]> = {
  separate: ["create", "lease", "complete", "fold"],
  cycle: ["create", "ack+lease", "fold"],
};

const PHASE_NOTES: Record<Phase, string> = {
  create: "Service.createJobs (POST /v1/jobs:batch), 1,000 jobs a call: jobCreateMany",
  lease: "Service.lease (POST /v1/pools/bench/lease), max 100, no acks: executionLease",
  complete: "Service.completeMany (POST /v1/executions:complete), 100 a call: executionCompleteMany",
  "ack+lease": "Service.lease with the previous batch's 100 acks (the SDK worker's cycle): executionAckAndLease",
  fold: "executionCountsFold once (the node's housekeeping of the ready counters, run later)",
};

// ---- arguments

function parseArgs(argv: string[]): { stores: StoreKind[]; jobs: number; modes: Mode[] } {
  let store = "both";
  let jobs = 2000;
  let mode = "both";
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === "--store") store = value();
    else if (a === "--jobs") jobs = Number(value());
    else if (a === "--mode") mode = value();
    else if (a === "--help" || a === "-h") {
      console.log("node --import tsx bench/row-count.ts [--store sqlite|postgres|both] [--jobs N] [--mode separate|cycle|both]");
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!["sqlite", "postgres", "both"].includes(store)) throw new Error("--store is sqlite, postgres or both");
  if (!["separate", "cycle", "both"].includes(mode)) throw new Error("--mode is separate, cycle or both");
  if (!Number.isInteger(jobs) || jobs < 1) throw new Error("--jobs is a positive integer");
  return {
    stores: store === "both" ? ["sqlite", "postgres"] : [store as StoreKind],
    jobs,
    modes: mode === "both" ? ["separate", "cycle"] : [mode as Mode],
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- the workload (the server's path)

interface Hooks {
  begin(phase: Phase): Promise<void>;
  end(phase: Phase): Promise<void>;
}

async function workload(service: Service, store: Store, jobs: number, mode: Mode, hooks: Hooks): Promise<void> {
  const ctx = DEFAULT_CONTEXT; // a server without API keys: tenant "default", as the bench's server runs
  await hooks.begin("create");
  await createOneOffs(service, POOL, jobs);
  await hooks.end("create");

  const ack = (x: LeasedExecution): CompleteItem => ({
    executionId: x.executionId,
    attempt: x.attempt,
    ...(x.leaseToken !== undefined ? { leaseToken: x.leaseToken } : {}),
  });
  const request = (complete: CompleteItem[]): LeaseRequest => ({
    workerId: "row-count-worker",
    max: LEASE_BATCH,
    leaseSeconds: 600,
    waitSeconds: 0,
    ...(complete.length > 0 ? { complete } : {}),
  });
  const checkAcks = (acks: { status: number }[] | undefined, expected: number) => {
    const ok = (acks ?? []).filter((a) => a.status === 200).length;
    if (ok !== expected) throw new Error(`${ok} of ${expected} acks answered 200: ${JSON.stringify(acks?.find((a) => a.status !== 200))}`);
  };

  if (mode === "separate") {
    await hooks.begin("lease");
    const leased: LeasedExecution[] = [];
    while (leased.length < jobs) {
      const r = await service.lease(ctx, POOL, request([]));
      if (r.items.length === 0) throw new Error(`leased ${leased.length} of ${jobs}, then nothing`);
      leased.push(...r.items);
    }
    await hooks.end("lease");
    await hooks.begin("complete");
    for (let i = 0; i < leased.length; i += LEASE_BATCH) {
      const batch = leased.slice(i, i + LEASE_BATCH).map(ack);
      checkAcks(await service.completeMany(ctx, batch), batch.length);
    }
    await hooks.end("complete");
  } else {
    await hooks.begin("ack+lease");
    let pending: CompleteItem[] = [];
    let leased = 0;
    for (;;) {
      const r = await service.lease(ctx, POOL, request(pending));
      if (pending.length > 0) checkAcks(r.acks, pending.length);
      leased += r.items.length;
      pending = r.items.map(ack);
      if (r.items.length === 0) break;
    }
    if (leased !== jobs) throw new Error(`leased ${leased} of ${jobs}`);
    await hooks.end("ack+lease");
  }

  await hooks.begin("fold");
  await store.executionCountsFold();
  await hooks.end("fold");
}

// ---- formatting

const per = (x: number, jobs: number) => (x / jobs).toFixed(3);
const pad = (s: string, n: number) => (s.length >= n ? s : s + " ".repeat(n - s.length));
const lpad = (s: string, n: number) => (s.length >= n ? s : " ".repeat(n - s.length) + s);

function table(head: string[], rows: string[][], widths: number[]): string {
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? pad(c, widths[0]!) : lpad(c, widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

// =============================================================================
// PostgreSQL
// =============================================================================

interface Counts {
  ins: number;
  upd: number;
  hot: number;
  del: number;
}
const ZERO: Counts = { ins: 0, upd: 0, hot: 0, del: 0 };
const add = (a: Counts, b: Counts): Counts => ({ ins: a.ins + b.ins, upd: a.upd + b.upd, hot: a.hot + b.hot, del: a.del + b.del });
const sub = (a: Counts, b: Counts): Counts => ({ ins: a.ins - b.ins, upd: a.upd - b.upd, hot: a.hot - b.hot, del: a.del - b.del });
const same = (a: Counts, b: Counts) => a.ins === b.ins && a.upd === b.upd && a.hot === b.hot && a.del === b.del;

interface PgIndex {
  leaf: string;
  name: string;
  root: string;
  pred: string | null;
  unique: boolean;
  primary: boolean;
}
interface PgCatalog {
  /** leaf table -> its partitioned root (itself when not a partition). */
  rootOf: Map<string, string>;
  indexes: PgIndex[];
  /** leaf table -> the columns whose change blocks a HOT update (index keys, and columns named by index expressions and predicates). */
  hotColumns: Map<string, string[]>;
  columns: Map<string, string[]>;
}

const quoteIdent = (s: string) => `"${s.replaceAll('"', '""')}"`;
const quoteLiteral = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** The column names an SQL expression mentions (string literals removed first). */
function columnsNamed(expr: string | null, columns: string[]): string[] {
  if (!expr) return [];
  const bare = expr.replace(/'(?:[^']|'')*'/g, "''");
  return columns.filter((c) => new RegExp(`(^|[^A-Za-z0-9_"])"?${c.replace(/[^A-Za-z0-9_]/g, "\\$&")}"?($|[^A-Za-z0-9_"])`).test(bare));
}

async function pgCatalog(db: pg.Client, schema: string): Promise<PgCatalog> {
  const tables = (
    await db.query<{ leaf: string; root: string }>(
      `SELECT c.relname AS leaf, (SELECT r.relname FROM pg_class r WHERE r.oid = coalesce(pg_partition_root(c.oid), c.oid)) AS root
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [schema],
    )
  ).rows;
  const cols = (
    await db.query<{ leaf: string; cols: string[] }>(
      `SELECT c.relname AS leaf, array_agg(a.attname::text ORDER BY a.attnum) AS cols
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       WHERE n.nspname = $1 AND c.relkind = 'r' GROUP BY c.relname`,
      [schema],
    )
  ).rows;
  const idx = (
    await db.query<{
      leaf: string;
      name: string;
      root: string;
      pred: string | null;
      exprs: string | null;
      keys: string[];
      unique: boolean;
      primary: boolean;
    }>(
      `SELECT t.relname AS leaf, i.relname AS name,
         (SELECT r.relname FROM pg_class r WHERE r.oid = coalesce(pg_partition_root(i.oid), i.oid)) AS root,
         pg_get_expr(x.indpred, x.indrelid) AS pred, pg_get_expr(x.indexprs, x.indrelid) AS exprs,
         ARRAY(SELECT a.attname::text FROM unnest(x.indkey::int2[]) k JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k) AS keys,
         x.indisunique AS unique, x.indisprimary AS primary
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
       WHERE n.nspname = $1 AND t.relkind = 'r' ORDER BY t.relname, i.relname`,
      [schema],
    )
  ).rows;
  const columns = new Map(cols.map((c) => [c.leaf, c.cols]));
  const hotColumns = new Map<string, string[]>();
  for (const i of idx) {
    const all = columns.get(i.leaf) ?? [];
    const set = new Set([...(hotColumns.get(i.leaf) ?? []), ...i.keys, ...columnsNamed(i.pred, all), ...columnsNamed(i.exprs, all)]);
    hotColumns.set(i.leaf, [...set]);
  }
  return {
    rootOf: new Map(tables.map((t) => [t.leaf, t.root])),
    indexes: idx.map((i) => ({ leaf: i.leaf, name: i.name, root: i.root, pred: i.pred, unique: i.unique, primary: i.primary })),
    hotColumns,
    columns,
  };
}

/** The counted pass's trace: a row trigger on every leaf table recording each new row version's partial predicates. */
async function installPgTrace(db: pg.Client, schema: string, cat: PgCatalog): Promise<string> {
  const rc = `${schema}_rc`;
  await db.query(`CREATE SCHEMA ${quoteIdent(rc)}`);
  await db.query(`CREATE UNLOGGED TABLE ${quoteIdent(rc)}.versions (phase text, tbl text, op text, changed boolean, preds boolean[])`);
  await db.query(`CREATE UNLOGGED TABLE ${quoteIdent(rc)}.phase (phase text)`);
  await db.query(`INSERT INTO ${quoteIdent(rc)}.phase VALUES ('setup')`);
  for (const leaf of cat.rootOf.keys()) {
    const preds = cat.indexes.filter((i) => i.leaf === leaf && i.pred !== null).map((i) => i.pred!);
    const hot = cat.hotColumns.get(leaf) ?? [];
    const changed = hot.length ? hot.map((c) => `OLD.${quoteIdent(c)} IS DISTINCT FROM NEW.${quoteIdent(c)}`).join(" OR ") : "false";
    const evaluate = preds.length
      ? `EXECUTE ${quoteLiteral(`SELECT ARRAY[${preds.join(", ")}]::boolean[] FROM (SELECT ($1).*) s`)} INTO p USING NEW;`
      : "p := ARRAY[]::boolean[];";
    const fn = `${quoteIdent(rc)}.${quoteIdent(`trace_${leaf}`)}`;
    await db.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $rc$
DECLARE p boolean[];
BEGIN
  ${evaluate}
  INSERT INTO ${quoteIdent(rc)}.versions VALUES ((SELECT phase FROM ${quoteIdent(rc)}.phase), TG_TABLE_NAME, TG_OP,
    CASE WHEN TG_OP = 'UPDATE' THEN (${changed}) END, p);
  RETURN NULL;
END
$rc$`);
    await db.query(
      `CREATE TRIGGER zz_row_count_trace AFTER INSERT OR UPDATE ON ${quoteIdent(schema)}.${quoteIdent(leaf)} FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
    );
  }
  return rc;
}

interface TraceRow {
  tbl: string;
  op: "INSERT" | "UPDATE";
  changed: boolean | null;
  preds: boolean[];
  n: number;
}

interface PgPhaseResult {
  phase: Phase;
  ms: number;
  leaves: Map<string, Counts>;
  dbRows: number;
  walBytes: number;
  walMine: number;
  walMineFpi: number;
  walMineRecords: number;
  walOther: number;
  trace: TraceRow[];
  settleReadings: number;
}

interface PgPassResult {
  phases: PgPhaseResult[];
}

async function pgPass(
  url: string,
  db: pg.Client,
  dbOid: number,
  jobs: number,
  mode: Mode,
  counted: boolean,
): Promise<{ result: PgPassResult; cat: PgCatalog }> {
  const schema = `rowcount_${mode}_${counted ? "counted" : "clean"}_${randomBytes(3).toString("hex")}`;
  const store = await openStore(url, { schema });
  try {
    const service = benchService(store, "row-count");
    const cat = await pgCatalog(db, schema);
    const rc = counted ? await installPgTrace(db, schema, cat) : null;

    const readLeaves = async (nsp: string): Promise<Map<string, Counts>> => {
      const { rows } = await db.query<{ relname: string; ins: string; upd: string; hot: string; del: string }>(
        `SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del FROM pg_stat_user_tables WHERE schemaname = $1`,
        [nsp],
      );
      return new Map(rows.map((r) => [r.relname, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del) }]));
    };
    const total = (m: Map<string, Counts>) => [...m.values()].reduce(add, ZERO);
    interface Reading {
      leaves: Map<string, Counts>;
      side: Counts;
      dbRows: number;
    }
    const read = async (): Promise<Reading> => {
      await db.query("SELECT pg_stat_clear_snapshot()");
      const leaves = await readLeaves(schema);
      const side = rc ? total(await readLeaves(rc)) : ZERO;
      const d = await db.query<{ n: string }>(
        "SELECT tup_inserted + tup_updated + tup_deleted AS n FROM pg_stat_database WHERE datname = current_database()",
      );
      return { leaves, side, dbRows: Number(d.rows[0]!.n) };
    };
    const key = (r: Reading) => JSON.stringify([[...r.leaves].sort(), r.side, r.dbRows]);
    /** Until every backend of the store's pool has flushed its counters (see the header): two equal readings after pings. */
    const settle = async (): Promise<{ reading: Reading; readings: number }> => {
      let last = await read();
      for (let i = 1; i <= 8; i++) {
        await sleep(1_100);
        await Promise.all(Array.from({ length: PG_POOL_SIZE }, () => store.ping()));
        const now = await read();
        if (key(now) === key(last) && i > 1) return { reading: now, readings: i + 1 };
        last = now;
      }
      throw new Error("pg_stat counters did not settle");
    };
    const lsn = async () => (await db.query<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn")).rows[0]!.lsn;

    const phases: PgPhaseResult[] = [];
    let start: { reading: Reading; lsn: string; t: number } | null = null;
    let settled = (await settle()).reading;
    await workload(service, store, jobs, mode, {
      async begin(phase) {
        if (rc) {
          await db.query(`UPDATE ${quoteIdent(rc)}.phase SET phase = $1`, [phase]);
          await db.query("SELECT pg_stat_force_next_flush()");
          await db.query("SELECT 1"); // the flush forced above happens as this backend goes idle
          settled = await read();
        }
        start = { reading: settled, lsn: await lsn(), t: performance.now() };
      },
      async end(phase) {
        const ms = performance.now() - start!.t;
        await sleep(FLUSH_BOUND_MS + 100); // the store's flush of transitions (flushSoon) belongs to the phase
        const { reading, readings } = await settle();
        const endLsn = await lsn();
        const leaves = new Map<string, Counts>();
        for (const [leaf, c] of reading.leaves) leaves.set(leaf, sub(c, start!.reading.leaves.get(leaf) ?? ZERO));
        const sideDelta = sub(reading.side, start!.reading.side);
        const wal = await walOf(db, dbOid, start!.lsn, endLsn);
        const trace = rc
          ? (
              await db.query<TraceRow & { n: string }>(
                `SELECT tbl, op, changed, preds, count(*) AS n FROM ${quoteIdent(rc)}.versions WHERE phase = $1 GROUP BY 1, 2, 3, 4`,
                [phase],
              )
            ).rows.map((r) => ({ ...r, n: Number(r.n) }))
          : [];
        phases.push({
          phase,
          ms,
          leaves,
          dbRows: reading.dbRows - start!.reading.dbRows - (sideDelta.ins + sideDelta.upd + sideDelta.del),
          ...wal,
          trace,
          settleReadings: readings,
        });
        settled = reading;
      },
    });
    return { result: { phases }, cat };
  } finally {
    await store.close();
  }
}

/** The WAL between two LSNs: all of it, and the records of this run's database (see the header). */
async function walOf(db: pg.Client, dbOid: number, from: string, to: string) {
  const walBytes = Number((await db.query<{ n: string }>("SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn) AS n", [from, to])).rows[0]!.n);
  // pg_walinspect reads up to the flushed WAL: wait for the WAL writer to flush what this range holds.
  for (let i = 0; i < 50; i++) {
    const ok = (await db.query<{ ok: boolean }>("SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS ok", [to])).rows[0]!.ok;
    if (ok) break;
    await sleep(100);
  }
  const { rows } = await db.query<{ xid: string; rmgr: string; len: number; fpi: number; block_ref: string | null; description: string | null }>(
    `SELECT xid::text AS xid, resource_manager AS rmgr, record_length AS len, fpi_length AS fpi, block_ref, description
     FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)`,
    [from, to],
  );
  const here = new RegExp(`rel \\d+/${dbOid}/\\d+`);
  const xids = new Set<string>();
  for (const r of rows) {
    const mine = (r.block_ref && here.test(r.block_ref)) || (r.rmgr === "LogicalMessage" && /prefix "duetime"/.test(r.description ?? ""));
    if (mine && r.xid !== "0") xids.add(r.xid);
  }
  let walMine = 0;
  let walMineFpi = 0;
  let walMineRecords = 0;
  for (const r of rows) {
    const mine = (r.block_ref && here.test(r.block_ref)) || (r.xid !== "0" && xids.has(r.xid));
    if (!mine) continue;
    walMine += Number(r.len);
    walMineFpi += Number(r.fpi);
    walMineRecords++;
  }
  const allRecords = rows.reduce((s, r) => s + Number(r.len), 0);
  return { walBytes, walMine, walMineFpi, walMineRecords, walOther: allRecords - walMine };
}

interface Entries {
  lo: number;
  hi: number;
  /** Set when the trace does not match the counters it explains. */
  problem?: string;
}

/** Index entries written into one leaf index in a phase (the header's rule). */
function pgEntries(index: PgIndex, clean: Counts, counted: Counts, trace: TraceRow[], cat: PgCatalog): Entries {
  if (index.pred === null) {
    const n = clean.ins + clean.upd - clean.hot;
    return { lo: n, hi: n };
  }
  const k = cat.indexes.filter((i) => i.leaf === index.leaf && i.pred !== null).findIndex((i) => i.name === index.name);
  const rows = trace.filter((t) => t.tbl === index.leaf);
  const sum = (f: (t: TraceRow) => boolean) => rows.filter(f).reduce((s, t) => s + t.n, 0);
  const holds = (t: TraceRow) => t.preds[k] === true;
  const ins = sum((t) => t.op === "INSERT");
  const upd = sum((t) => t.op === "UPDATE");
  const insPred = sum((t) => t.op === "INSERT" && holds(t));
  const chg = sum((t) => t.op === "UPDATE" && t.changed === true);
  const chgPred = sum((t) => t.op === "UPDATE" && t.changed === true && holds(t));
  const unch = sum((t) => t.op === "UPDATE" && t.changed !== true);
  const unchPred = sum((t) => t.op === "UPDATE" && t.changed !== true && holds(t));
  const nonHotUnchanged = counted.upd - counted.hot - chg;
  const problems: string[] = [];
  if (ins !== counted.ins || upd !== counted.upd) problems.push(`trace ${ins} ins/${upd} upd, counters ${counted.ins}/${counted.upd}`);
  if (nonHotUnchanged < 0 || nonHotUnchanged > unch) problems.push(`${nonHotUnchanged} non-HOT unchanged updates of ${unch}`);
  const u = Math.max(0, Math.min(unch, nonHotUnchanged));
  const lo = insPred + chgPred + Math.max(0, u - (unch - unchPred));
  const hi = insPred + chgPred + Math.min(u, unchPred);
  return problems.length ? { lo, hi, problem: problems.join("; ") } : { lo, hi };
}

function pgReport(
  jobs: number,
  clean: PgPassResult,
  counted: PgPassResult,
  cleanCat: PgCatalog,
  countedCat: PgCatalog,
): {
  text: string;
  totals: { rows: Map<string, Counts>; entries: Map<string, Entries & { table: string }>; wal: number; walMine: number; dbRows: number };
} {
  const out: string[] = [];
  const totalRows = new Map<string, Counts>();
  const totalEntries = new Map<string, Entries & { table: string }>();
  let wal = 0;
  let walMine = 0;
  let dbRowsAll = 0;
  // The two passes' schemas differ in name only; leaf partitions are named by date, the same in both.
  for (const [p, phase] of clean.phases.entries()) {
    const cp = counted.phases[p]!;
    const roots = new Map<string, Counts>();
    for (const [leaf, c] of phase.leaves) {
      const root = cleanCat.rootOf.get(leaf) ?? leaf;
      roots.set(root, add(roots.get(root) ?? ZERO, c));
    }
    const touched = [...roots].filter(([, c]) => c.ins + c.upd + c.del > 0).map(([r]) => r);
    touched.sort();
    const rowsOut: string[][] = [];
    const checks: string[] = [];
    let sumRows = ZERO;
    let sumLo = 0;
    let sumHi = 0;
    for (const root of touched) {
      const c = roots.get(root)!;
      sumRows = add(sumRows, c);
      totalRows.set(root, add(totalRows.get(root) ?? ZERO, c));
      rowsOut.push([root, per(c.ins, jobs), per(c.upd, jobs), per(c.hot, jobs), per(c.del, jobs), ""]);
      const byRoot = new Map<string, { e: Entries; pred: string | null; unique: boolean }>();
      for (const index of countedCat.indexes.filter((i) => (countedCat.rootOf.get(i.leaf) ?? i.leaf) === root)) {
        const cleanIndex = cleanCat.indexes.find((i) => i.name === index.name) ?? index;
        const cleanCounts = phase.leaves.get(cleanIndex.leaf) ?? ZERO;
        const countedCounts = cp.leaves.get(index.leaf) ?? ZERO;
        const e = pgEntries(index, cleanCounts, countedCounts, cp.trace, countedCat);
        if (e.problem) checks.push(`${index.name}: ${e.problem}`);
        const prev = byRoot.get(index.root);
        byRoot.set(index.root, {
          e: { lo: (prev?.e.lo ?? 0) + e.lo, hi: (prev?.e.hi ?? 0) + e.hi },
          pred: index.pred,
          unique: index.unique,
        });
      }
      for (const [name, { e, pred, unique }] of [...byRoot].sort()) {
        sumLo += e.lo;
        sumHi += e.hi;
        const t = totalEntries.get(name);
        totalEntries.set(name, { lo: (t?.lo ?? 0) + e.lo, hi: (t?.hi ?? 0) + e.hi, table: root });
        const label = `  ${name}${pred !== null ? " (partial)" : unique ? " (unique)" : ""}`;
        rowsOut.push([label, "", "", "", "", e.lo === e.hi ? per(e.lo, jobs) : `${per(e.lo, jobs)}–${per(e.hi, jobs)}`]);
      }
    }
    rowsOut.push([
      "total",
      per(sumRows.ins, jobs),
      per(sumRows.upd, jobs),
      per(sumRows.hot, jobs),
      per(sumRows.del, jobs),
      sumLo === sumHi ? per(sumLo, jobs) : `${per(sumLo, jobs)}–${per(sumHi, jobs)}`,
    ]);
    // The counted pass's counters against the clean pass's, per leaf (the trace's triggers must not change what is written).
    for (const [leaf, c] of phase.leaves) {
      const d = cp.leaves.get(leaf) ?? ZERO;
      if (!same(c, d)) checks.push(`${leaf}: clean ${JSON.stringify(c)} counted ${JSON.stringify(d)}`);
    }
    wal += phase.walBytes;
    walMine += phase.walMine;
    dbRowsAll += phase.dbRows;
    out.push(
      `phase ${phase.phase}: ${PHASE_NOTES[phase.phase]} — per job (${jobs} jobs, ${phase.ms.toFixed(0)} ms)`,
      table(["table / index", "ins", "upd", "hot_upd", "del", "index entries"], rowsOut, [40, 7, 7, 7, 7, 13]),
      `WAL ${per(phase.walBytes, jobs)} bytes/job (pg_current_wal_lsn delta); records of this run ${per(phase.walMine, jobs)} bytes/job ` +
        `(${per(phase.walMineRecords, jobs)} records, full-page images ${per(phase.walMineFpi, jobs)} bytes), other ${per(phase.walOther, jobs)}`,
      `rows/job (pg_stat_database tup_inserted+tup_updated+tup_deleted) ${per(phase.dbRows, jobs)}; counted-pass rows/job ${per(cp.dbRows, jobs)}`,
      `check: ${checks.length ? checks.join(" | ") : "counted pass = clean pass on every table; trace = counters"}`,
      "",
    );
  }
  return { text: out.join("\n"), totals: { rows: totalRows, entries: totalEntries, wal, walMine, dbRows: dbRowsAll } };
}

async function runPostgres(jobs: number, modes: Mode[]): Promise<string> {
  const fresh = await freshDatabase("rowcount", randomBytes(4).toString("hex"));
  const db = new pg.Client({ connectionString: fresh.url });
  await db.connect();
  const out: string[] = [];
  try {
    await db.query("CREATE EXTENSION pg_walinspect");
    const dbOid = Number((await db.query<{ oid: string }>("SELECT oid FROM pg_database WHERE datname = current_database()")).rows[0]!.oid);
    const version = await postgresVersion();
    const others = async () =>
      Number(
        (
          await db.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname IS DISTINCT FROM current_database() AND state = 'active'",
          )
        ).rows[0]!.n,
      );
    out.push(
      `== PostgreSQL ${version}: ${jobs} one-off queue jobs due now, pool ${POOL}, tenant default; database ${fresh.name} (dropped after); ` +
        `autovacuum ${(await db.query("SHOW autovacuum")).rows[0].autovacuum}`,
      "",
    );
    for (const mode of modes) {
      const before = await others();
      const clean = await pgPass(fresh.url, db, dbOid, jobs, mode, false);
      const counted = await pgPass(fresh.url, db, dbOid, jobs, mode, true);
      const after = await others();
      const legend = new Map(clean.cat.indexes.filter((i) => i.pred !== null).map((i) => [i.root, i.pred!]));
      out.push(
        `-- mode ${mode} (${mode === "separate" ? "lease, then complete, apart" : "acks ride on the next lease"})`,
        `partial indexes: ${[...legend].map(([n, p]) => `${n} WHERE ${p}`).join("; ")}`,
        "",
      );
      const { text, totals } = pgReport(jobs, clean.result, counted.result, clean.cat, counted.cat);
      out.push(text);
      const rows: string[][] = [];
      const sum = [...totals.rows.values()].reduce(add, ZERO);
      const entries = [...totals.entries].filter(([, e]) => e.hi > 0).sort();
      const elo = entries.reduce((s, [, e]) => s + e.lo, 0);
      const ehi = entries.reduce((s, [, e]) => s + e.hi, 0);
      for (const [t, c] of [...totals.rows].sort()) {
        rows.push([t, per(c.ins, jobs), per(c.upd, jobs), per(c.hot, jobs), per(c.del, jobs), ""]);
        for (const [name, e] of entries.filter(([, e]) => e.table === t)) {
          rows.push([`  ${name}`, "", "", "", "", e.lo === e.hi ? per(e.lo, jobs) : `${per(e.lo, jobs)}–${per(e.hi, jobs)}`]);
        }
      }
      rows.push([
        "total",
        per(sum.ins, jobs),
        per(sum.upd, jobs),
        per(sum.hot, jobs),
        per(sum.del, jobs),
        elo === ehi ? per(elo, jobs) : `${per(elo, jobs)}–${per(ehi, jobs)}`,
      ]);
      out.push(
        `all phases (${PHASES[mode].join(" + ")}) — per job; indexes with entries only`,
        table(["table / index", "ins", "upd", "hot_upd", "del", "index entries"], rows, [40, 7, 7, 7, 7, 13]),
        `WAL ${per(totals.wal, jobs)} bytes/job (LSN delta; records of this run ${per(totals.walMine, jobs)}); ` +
          `rows/job (pg_stat_database) ${per(totals.dbRows, jobs)}; row versions+deletes from pg_stat_user_tables ${per(sum.ins + sum.upd + sum.del, jobs)}`,
        `active client backends in other databases: ${before} before, ${after} after this mode's passes`,
        "",
      );
    }
  } finally {
    await db.end();
    await fresh.drop();
  }
  return out.join("\n");
}

// =============================================================================
// SQLite
// =============================================================================

interface SqliteIndex {
  name: string;
  table: string;
  pred: string | null;
  /** What an UPDATE's SET must name for SQLite to rewrite this index. */
  watched: string[];
}

function q(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
const lit = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** The tables (their columns and WITHOUT ROWID flag) and the index b-trees apart from the tables. */
function sqliteCatalog(db: Database.Database) {
  const tables = (
    db
      .prepare("SELECT name, wr FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'rc_counts'")
      .all() as {
      name: string;
      wr: number;
    }[]
  ).map((t) => {
    const info = db.prepare(`SELECT name, pk FROM pragma_table_info(${lit(t.name)})`).all() as { name: string; pk: number }[];
    return { name: t.name, withoutRowid: t.wr === 1, columns: info.map((c) => c.name), pk: info.filter((c) => c.pk > 0).map((c) => c.name) };
  });
  const indexes: SqliteIndex[] = [];
  for (const t of tables) {
    const list = db.prepare(`SELECT name, origin, partial FROM pragma_index_list(${lit(t.name)})`).all() as {
      name: string;
      origin: string;
      partial: number;
    }[];
    for (const i of list) {
      if (t.withoutRowid && i.origin === "pk") continue; // the table's own b-tree
      const xinfo = db.prepare(`SELECT cid, name, key FROM pragma_index_xinfo(${lit(i.name)})`).all() as {
        cid: number;
        name: string | null;
        key: number;
      }[];
      let pred: string | null = null;
      if (i.partial) {
        const sql = (db.prepare("SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = ?").get(i.name) as { sql: string }).sql;
        pred = /\bWHERE\b([\s\S]*)$/i.exec(sql)![1]!.trim();
      }
      const keys = xinfo.filter((x) => x.key === 1);
      const watched = keys.some((x) => x.cid === -2)
        ? t.columns // an expression key: every column, to be safe (none in duetime's schema)
        : [...new Set([...keys.filter((x) => x.cid >= 0).map((x) => x.name!), ...columnsNamed(pred, t.columns), ...(t.withoutRowid ? t.pk : [])])];
      indexes.push({ name: i.name, table: t.name, pred, watched });
    }
  }
  return { tables, indexes };
}

/** The counted pass's triggers (see the header): rows per table, index entries per index. */
function installSqliteCounting(db: Database.Database): void {
  const { tables, indexes } = sqliteCatalog(db);
  db.exec("CREATE TABLE rc_counts (obj TEXT NOT NULL, op TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (obj, op)) WITHOUT ROWID");
  const bump = (obj: string, op: string, row?: { ref: "NEW" | "OLD"; columns: string[]; pred: string | null }) =>
    row
      ? `INSERT INTO rc_counts (obj, op, n) SELECT ${lit(obj)}, ${lit(op)}, 1 FROM (SELECT ${row.columns.map((c) => `${row.ref}.${q(c)} AS ${q(c)}`).join(", ")}) AS r ` +
        `WHERE ${row.pred ?? "1"} ON CONFLICT (obj, op) DO UPDATE SET n = n + 1;`
      : `INSERT INTO rc_counts (obj, op, n) SELECT ${lit(obj)}, ${lit(op)}, 1 WHERE 1 ON CONFLICT (obj, op) DO UPDATE SET n = n + 1;`;
  db.transaction(() => {
    for (const t of tables) {
      const own = indexes.filter((i) => i.table === t.name);
      const on = (ref: "NEW" | "OLD", op: string) => own.map((i) => bump(i.name, op, { ref, columns: t.columns, pred: i.pred })).join("\n");
      db.exec(`CREATE TRIGGER ${q(`rc_${t.name}_ins`)} AFTER INSERT ON ${q(t.name)} BEGIN ${bump(t.name, "ins")}\n${on("NEW", "ins")} END`);
      db.exec(`CREATE TRIGGER ${q(`rc_${t.name}_del`)} AFTER DELETE ON ${q(t.name)} BEGIN ${bump(t.name, "del")}\n${on("OLD", "del")} END`);
      db.exec(`CREATE TRIGGER ${q(`rc_${t.name}_upd`)} AFTER UPDATE ON ${q(t.name)} BEGIN ${bump(t.name, "upd")} END`);
      for (const i of own) {
        db.exec(
          `CREATE TRIGGER ${q(`rc_${i.name}_upd`)} AFTER UPDATE OF ${i.watched.map(q).join(", ")} ON ${q(t.name)} BEGIN ` +
            `${bump(i.name, "del", { ref: "OLD", columns: t.columns, pred: i.pred })}\n${bump(i.name, "ins", { ref: "NEW", columns: t.columns, pred: i.pred })} END`,
        );
      }
    }
  })();
}

interface SqlitePhaseResult {
  phase: Phase;
  ms: number;
  frames: number;
  framesFromSize: number;
  counts: Map<string, number>;
  /** Net change of the cells of each b-tree (dbstat): rows of a table, entries of an index. */
  net: Map<string, number>;
}

/** Cells per b-tree (dbstat): a rowid table's leaf cells are its rows; every cell of an index b-tree (WITHOUT ROWID tables too) is an entry. */
function cells(db: Database.Database, rowidTables: Set<string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of db.prepare("SELECT name, pagetype, sum(ncell) AS n FROM dbstat GROUP BY name, pagetype").all() as {
    name: string;
    pagetype: string;
    n: number;
  }[]) {
    if (rowidTables.has(r.name) && r.pagetype !== "leaf") continue;
    out.set(r.name, (out.get(r.name) ?? 0) + r.n);
  }
  return out;
}

async function sqlitePass(
  jobs: number,
  mode: Mode,
  counted: boolean,
): Promise<{ phases: SqlitePhaseResult[]; pageSize: number; indexes: SqliteIndex[]; tables: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-row-count-"));
  const path = join(dir, "duetime.db");
  try {
    // Migrated by the store, then instrumented on the tool's own connection before any job is written.
    const first = await openStore(`sqlite:${path}`);
    await first.close();
    const db = new Database(path);
    db.pragma("busy_timeout = 5000");
    if (counted) installSqliteCounting(db);
    const { tables, indexes } = sqliteCatalog(db);
    const rowidTables = new Set(tables.filter((t) => !t.withoutRowid).map((t) => t.name));
    let cellsBefore = new Map<string, number>();
    const pageSize = Number(db.pragma("page_size", { simple: true }));
    const store = await openStore(`sqlite:${path}`);
    const service = benchService(store, "row-count");
    const phases: SqlitePhaseResult[] = [];
    let t0 = 0;
    try {
      await workload(service, store, jobs, mode, {
        async begin() {
          if (counted) db.exec("DELETE FROM rc_counts");
          cellsBefore = cells(db, rowidTables);
          const [ck] = db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number; log: number; checkpointed: number }[];
          if (ck!.busy !== 0 || statSync(`${path}-wal`).size !== 0) throw new Error(`the WAL did not truncate: ${JSON.stringify(ck)}`);
          // A read transaction on the empty WAL (read mark 0): no checkpoint backfills while it is open, so the WAL only grows.
          db.exec("BEGIN");
          db.prepare("SELECT count(*) FROM sqlite_schema").get();
          t0 = performance.now();
        },
        async end(phase) {
          const ms = performance.now() - t0;
          await sleep(FLUSH_BOUND_MS + 100); // the store's flush of transitions belongs to the phase
          db.exec("COMMIT");
          const size = statSync(`${path}-wal`).size;
          const [ck] = db.pragma("wal_checkpoint(PASSIVE)") as { busy: number; log: number; checkpointed: number }[];
          const counts = new Map<string, number>();
          if (counted) {
            for (const r of db.prepare("SELECT obj, op, n FROM rc_counts").all() as { obj: string; op: string; n: number }[])
              counts.set(`${r.obj}\n${r.op}`, r.n);
          }
          const after = cells(db, rowidTables);
          const net = new Map(
            [...new Set([...after.keys(), ...cellsBefore.keys()])].map((k) => [k, (after.get(k) ?? 0) - (cellsBefore.get(k) ?? 0)]),
          );
          phases.push({ phase, ms, frames: ck!.log, framesFromSize: size === 0 ? 0 : (size - 32) / (pageSize + 24), counts, net });
        },
      });
    } finally {
      await store.close();
      db.close();
    }
    return { phases, pageSize, indexes, tables: tables.map((t) => t.name) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runSqlite(jobs: number, modes: Mode[]): Promise<string> {
  const out: string[] = [];
  out.push(
    `== SQLite ${new Database(":memory:").prepare("SELECT sqlite_version() AS v").pluck().get()} (better-sqlite3): ${jobs} one-off queue jobs due now, pool ${POOL}, tenant default`,
    "",
  );
  for (const mode of modes) {
    const clean = await sqlitePass(jobs, mode, false);
    const counted = await sqlitePass(jobs, mode, true);
    const partial = counted.indexes.filter((i) => i.pred !== null);
    out.push(
      `-- mode ${mode} (${mode === "separate" ? "lease, then complete, apart" : "acks ride on the next lease"}); page ${clean.pageSize} bytes, a WAL frame ${clean.pageSize + 24}`,
      `partial indexes: ${partial.map((i) => `${i.name} WHERE ${i.pred}`).join("; ")}`,
      "",
    );
    const totals = new Map<string, number>();
    let frames = 0;
    for (const [p, phase] of counted.phases.entries()) {
      const cl = clean.phases[p]!;
      const get = (obj: string, op: string) => phase.counts.get(`${obj}\n${op}`) ?? 0;
      for (const [k, v] of phase.counts) totals.set(k, (totals.get(k) ?? 0) + v);
      const rows: string[][] = [];
      let rowSum = 0;
      let entIns = 0;
      let entDel = 0;
      for (const t of [...counted.tables].sort()) {
        const [ins, upd, del] = [get(t, "ins"), get(t, "upd"), get(t, "del")];
        if (ins + upd + del === 0) continue;
        rowSum += ins + upd + del;
        rows.push([t, per(ins, jobs), per(upd, jobs), per(del, jobs), "", ""]);
        for (const i of counted.indexes.filter((x) => x.table === t).sort((a, b) => a.name.localeCompare(b.name))) {
          const [ii, id] = [get(i.name, "ins"), get(i.name, "del")];
          entIns += ii;
          entDel += id;
          rows.push([`  ${i.name}${i.pred !== null ? " (partial)" : ""}`, "", "", "", per(ii, jobs), per(id, jobs)]);
        }
      }
      rows.push(["total", "", "", "", per(entIns, jobs), per(entDel, jobs)]);
      frames += cl.frames;
      // The triggers' counts against the b-trees themselves: ins - del of every table and index = its net cells (dbstat), same pass.
      const mismatches: string[] = [];
      for (const name of [...counted.tables, ...counted.indexes.map((i) => i.name)]) {
        const net = get(name, "ins") - get(name, "del");
        const cellsNet = phase.net.get(name) ?? 0;
        if (net !== cellsNet) mismatches.push(`${name}: counted ${net}, dbstat ${cellsNet}`);
      }
      out.push(
        `phase ${phase.phase}: ${PHASE_NOTES[phase.phase]} — per job (${jobs} jobs, ${cl.ms.toFixed(0)} ms)`,
        table(["table / index", "ins", "upd", "del", "entry +ins", "entry -del"], rows, [40, 7, 7, 7, 10, 10]),
        `row writes ${per(rowSum, jobs)}/job; WAL ${per(cl.frames, jobs)} frames/job = ${per(cl.frames * (clean.pageSize + 24), jobs)} bytes/job ` +
          `(${cl.frames} frames; -wal file ${cl.framesFromSize} frames)`,
        `check: ${mismatches.length ? mismatches.join(" | ") : "ins - del of every table and index = the net change of its b-tree's cells (dbstat)"}`,
        "",
      );
    }
    const rows: string[][] = [];
    let rowSum = 0;
    let ei = 0;
    let ed = 0;
    for (const t of [...counted.tables].sort()) {
      const g = (op: string) => totals.get(`${t}\n${op}`) ?? 0;
      if (g("ins") + g("upd") + g("del") === 0) continue;
      rowSum += g("ins") + g("upd") + g("del");
      rows.push([t, per(g("ins"), jobs), per(g("upd"), jobs), per(g("del"), jobs), "", ""]);
      for (const i of counted.indexes.filter((x) => x.table === t).sort((a, b) => a.name.localeCompare(b.name))) {
        const [ii, id] = [totals.get(`${i.name}\nins`) ?? 0, totals.get(`${i.name}\ndel`) ?? 0];
        if (ii + id === 0) continue;
        ei += ii;
        ed += id;
        rows.push([`  ${i.name}`, "", "", "", per(ii, jobs), per(id, jobs)]);
      }
    }
    rows.push(["total", "", "", "", per(ei, jobs), per(ed, jobs)]);
    out.push(
      `all phases (${PHASES[mode].join(" + ")}) — per job; indexes with entries only`,
      table(["table / index", "ins", "upd", "del", "entry +ins", "entry -del"], rows, [40, 7, 7, 7, 10, 10]),
      `row writes ${per(rowSum, jobs)}/job; WAL ${per(frames, jobs)} frames/job = ${per(frames * (clean.pageSize + 24), jobs)} bytes/job`,
      "",
    );
  }
  return out.join("\n");
}

// ---- main

const args = parseArgs(process.argv.slice(2));
console.log(
  `row-count: ${args.jobs} jobs; creates of ${CREATE_BATCH}, leases of ${LEASE_BATCH}; modes ${args.modes.join(", ")}; ` +
    `a clean and a counted pass per mode, each in a fresh store (method: the header of bench/row-count.ts)\n`,
);
for (const kind of args.stores) {
  console.log(kind === "sqlite" ? await runSqlite(args.jobs, args.modes) : await runPostgres(args.jobs, args.modes));
}
