// Does the PostgreSQL lease plan depend on whether executions was analysed?
// (docs/design-notes.md "Where a SQLite herd's time goes": this machine runs
// with autovacuum off, so a benchmark's tables are never analysed.) Not a
// test: a measurement.
//
//   node --import tsx bench/lease-plan.ts [--jobs 20000] [--lease 100] [--tracks never,create+half,half,empty]
//     [--candidates] [--rewrite join-only|unnest] [--settings "SET LOCAL …; …"]
//
// Per track, a fresh schema in a private database (BENCH_PG_URL admin URL,
// as bench/services.ts): N one-off queue jobs due now created through the
// server's path (Service.createJobs, 1,000 a call), then drained through the
// store: a lease (executionLease, the store's named prepared statement
// "lease_tenant" on its pool, timed alone), then its completion; the second
// half through a second store handle, whose new connections plan the
// statement then (as a pool connection first used mid-drain would). At the named points the lease
// statement itself (LEASE_TENANT, captured as the store sends it) is run
// under EXPLAIN (ANALYZE, BUFFERS) with the store's session settings
// (enable_seqscan=off, jit=off), a lease of 100 of tenant default, in a
// transaction rolled back: as a custom plan (parameters known) and as the
// generic plan a named prepared statement switches to after 5 executions.
// Tracks: "never" analysed (as this machine runs; at half, candidate changes
// are tried on the statement), analysed after the create and again at half
// ("create+half"), analysed first at half ("half"), and analysed only while
// empty, before the create ("empty").

import { randomBytes } from "node:crypto";
import pg from "pg";
import { openStore } from "../src/store/factory.js";
import type { CompleteInput, Store } from "../src/store/store.js";
import { benchService, createOneOffs } from "./one-offs.js";
import { freshDatabase } from "./services.js";

const argv = process.argv.slice(2);
const arg = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const JOBS = Number(arg("--jobs") ?? 20_000);
/** Extra statements run before each EXPLAIN inside its transaction (a candidate fix, e.g. "SET LOCAL enable_hashjoin = off"). */
const SETTINGS = arg("--settings") ?? "";
/** --rewrite KEY (a candidate that rewrites the text): the store's own lease statement is sent so, by this process only (src/ is unchanged). */
const REWRITE = arg("--rewrite");
const POOL = "bench";
const LEASE = Number(arg("--lease") ?? 100);

// The lease statement as the store sends it (db.ts rows(): { name, text, values }).
let leaseSql: string | null = null;
const query = pg.Client.prototype.query as (...a: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...a: unknown[]) {
  const c = a[0] as { name?: string; text?: string } | undefined;
  if (c && typeof c === "object" && c.name === "lease_tenant" && c.text) {
    leaseSql = c.text;
    const rewrite = REWRITE ? CANDIDATES.find((x) => x.key === REWRITE && x.sql) : undefined;
    if (REWRITE && !rewrite)
      throw new Error(
        `--rewrite is one of ${CANDIDATES.filter((x) => x.sql)
          .map((x) => x.key)
          .join(", ")}`,
      );
    if (rewrite) {
      const text = rewrite.sql!(c.text);
      if (text === c.text) throw new Error(`--rewrite ${REWRITE}: the statement did not have the expected GRANT`);
      a[0] = { ...c, name: `lease_tenant_${REWRITE!.replace(/\W/g, "_")}`, text };
    }
  }
  return query.apply(this, a);
} as typeof pg.Client.prototype.query;

interface Drain {
  leased: number;
  /** Each lease call's wall time (executionLease alone: the statement and its round trip). */
  ms: number[];
}

/** Until `upTo` jobs have been leased: a lease of LEASE (timed), then its completion (executionCompleteMany, not timed). */
async function drain(store: Store, d: Drain, upTo: number): Promise<void> {
  while (d.leased < upTo) {
    const t = performance.now();
    const leased = await store.executionLease({ tenantId: "default", pool: POOL, workerId: "w", max: LEASE, leaseMs: 600_000 });
    d.ms.push(performance.now() - t);
    if (leased.length === 0) break;
    d.leased += leased.length;
    const items: CompleteInput[] = leased.map((x) => ({
      executionId: x.executionId,
      tenantId: "default",
      attempt: x.attempt,
      ...(x.leaseToken ? { leaseToken: x.leaseToken } : {}),
    }));
    await store.executionCompleteMany({ items });
  }
}

function summary(ms: number[]): string {
  if (ms.length === 0) return "no calls";
  const s = [...ms].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(1);
  return `${ms.length} calls, p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, max ${s[s.length - 1]!.toFixed(1)} ms, sum ${ms.reduce((a, b) => a + b, 0).toFixed(0)} ms`;
}

/** Per 2,000 jobs leased: median call time, to see where a drain slows. */
function windows(ms: number[]): string {
  const out: string[] = [];
  const n = Math.max(1, Math.round(2000 / LEASE));
  for (let i = 0; i < ms.length; i += n) {
    const w = [...ms.slice(i, i + n)].sort((a, b) => a - b);
    out.push(w[Math.floor(w.length / 2)]!.toFixed(1));
  }
  return out.join(" ");
}

async function stats(c: pg.Client): Promise<string> {
  const { rows } = await c.query(
    `SELECT s.relname, c.reltuples::bigint AS reltuples, c.relpages, pg_relation_size(c.oid) / 8192 AS pages_now, s.n_live_tup, s.n_dead_tup,
       s.last_analyze IS NOT NULL AS analysed, s.n_mod_since_analyze
     FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.schemaname = current_schema() AND s.relname LIKE 'executions_p%'
       AND s.n_live_tup > 0`,
  );
  return rows
    .map(
      (r) =>
        `${r.relname}: reltuples ${r.reltuples}, relpages ${r.relpages} (now ${r.pages_now}), live ${r.n_live_tup}, dead ${r.n_dead_tup}, analysed ${r.analysed}, modified since ${r.n_mod_since_analyze}`,
    )
    .join("; ");
}

/** The GRANT's key lookup as leases.ts writes it: by the keys as arrays and by the join on picked. */
const GRANT_KEYS = `FROM picked, t
WHERE e.job_id = ANY(ARRAY(SELECT job_id FROM picked)) AND e.scheduled_for = ANY(ARRAY(SELECT scheduled_for FROM picked))
  AND e.job_id = picked.job_id AND e.scheduled_for = picked.scheduled_for`;

/** Candidate changes, tried on the statement: settings before it, or its text rewritten. */
const CANDIDATES: { key: string; label: string; settings?: string; sql?: (s: string) => string }[] = [
  { key: "as-is", label: "as is" },
  { key: "nestloop-off", label: "SET LOCAL enable_nestloop = off", settings: "SET LOCAL enable_nestloop = off" },
  {
    key: "join-only",
    label: "GRANT by the join on picked only (no ANY arrays)",
    sql: (s) => s.replace(GRANT_KEYS, "FROM picked, t\nWHERE e.job_id = picked.job_id AND e.scheduled_for = picked.scheduled_for"),
  },
  {
    key: "unnest",
    label: "GRANT joined to unnest of the key arrays, built in one pass over picked (no ANY arrays)",
    sql: (s) =>
      s.replace(
        GRANT_KEYS,
        "FROM (SELECT array_agg(job_id) AS job_ids, array_agg(scheduled_for) AS fors FROM picked) k,\n" +
          "  unnest(k.job_ids, k.fors) AS picked(job_id, scheduled_for), t\n" +
          "WHERE e.job_id = picked.job_id AND e.scheduled_for = picked.scheduled_for",
      ),
  },
];
/** --candidates: try every candidate at each point (their rolled-back runs add dead row versions to the table, as aborted leases would). */
const TRY_CANDIDATES = argv.includes("--candidates");

/** The lease's plan, custom and generic, EXPLAIN ANALYZE'd and rolled back (3 runs each: the last one's plan, all three times). */
async function explain(c: pg.Client, label: string, candidate: (typeof CANDIDATES)[number] = CANDIDATES[0]!, brief = false): Promise<void> {
  const values = [null, POOL, LEASE, "explain", 600_000, 0, "default"];
  const sql = candidate.sql ? candidate.sql(leaseSql!) : leaseSql!;
  if (candidate.sql && sql === leaseSql) throw new Error(`${candidate.label}: the statement did not have the expected GRANT`);
  console.log(`\n#### ${label}${candidate.label !== "as is" ? ` — candidate: ${candidate.label}` : ""}\n${await stats(c)}`);
  for (const kind of ["custom", "generic"] as const) {
    const times: string[] = [];
    let plan = "";
    for (let i = 0; i < 3; i++) {
      await c.query("BEGIN");
      if (SETTINGS) await c.query(SETTINGS);
      if (candidate.settings) await c.query(candidate.settings);
      let r: pg.QueryResult;
      if (kind === "custom") r = await c.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, values);
      else {
        await c.query("SET LOCAL plan_cache_mode = force_generic_plan");
        await c.query(`PREPARE lp AS ${sql}`);
        r = await c.query(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE lp(NULL, '${POOL}', ${LEASE}, 'explain', 600000, 0, 'default')`);
      }
      await c.query("ROLLBACK");
      if (kind === "generic") await c.query("DEALLOCATE lp").catch(() => {});
      plan = r.rows.map((x) => x["QUERY PLAN"]).join("\n");
      const exec = /Execution Time: ([\d.]+) ms/.exec(plan)?.[1];
      const planning = /Planning Time: ([\d.]+) ms/.exec(plan)?.[1];
      times.push(`${planning ?? "?"}+${exec} ms`);
    }
    const grant = plan.split("\n").findIndex((l) => l.includes("CTE granted"));
    const shape = plan
      .split("\n")
      .slice(grant, grant + 40)
      .filter(
        (l) =>
          /Hash Join|Nested Loop|Bitmap Heap Scan on executions_p|Index Scan using executions_p\d+_pkey|Update on executions e_|loops=/.test(l) &&
          !/never executed/.test(l),
      )
      .slice(0, 8)
      .join("\n");
    console.log(`--- ${kind} plan (planning+execution, 3 runs: ${times.join(", ")})\n${brief ? `GRANT's key lookup:\n${shape}` : plan}`);
  }
}

/** When executions is analysed: never (as this machine runs), after the create and again at half, first at half, or only while empty (before the create). */
type Analyse = "never" | "create+half" | "half" | "empty";

async function track(url: string, analyse: Analyse): Promise<void> {
  const name = analyse;
  const schema = `lease_plan_${randomBytes(4).toString("hex")}`;
  const store = await openStore(url, { schema });
  const c = new pg.Client({ connectionString: url, options: `-c search_path=${schema} -c enable_seqscan=off -c jit=off` });
  await c.connect();
  const analyseNow = async () => {
    const a = performance.now();
    await c.query("ANALYZE executions");
    console.log(`\nANALYZE executions: ${(performance.now() - a).toFixed(1)} ms`);
  };
  try {
    if (analyse === "empty") await analyseNow();
    const t = performance.now();
    await createOneOffs(benchService(store, "lease-plan"), POOL, JOBS);
    console.log(`\n=== track "analysed ${name}": ${JOBS} jobs created in ${(performance.now() - t).toFixed(0)} ms`);
    await store.executionLease({ tenantId: "default", pool: POOL, workerId: "w", max: 0, leaseMs: 1 }); // captures the statement; grants nothing
    if (!leaseSql) throw new Error("the lease statement was not captured");
    if (analyse === "create+half") await analyseNow();
    const first = `${name}: ${JOBS} READY, ${analyse === "create+half" ? "just analysed" : analyse === "empty" ? "analysed only while empty" : "never analysed"}`;
    await explain(c, first);
    if (TRY_CANDIDATES) for (const candidate of CANDIDATES.slice(1)) await explain(c, first, candidate, true);
    const d: Drain = { leased: 0, ms: [] };
    await drain(store, d, JOBS / 2);
    console.log(`\ndrain to half: ${summary(d.ms)}; median per 2,000 jobs: ${windows(d.ms)}`);
    await explain(
      c,
      `${name}: half leased and completed (${JOBS / 2} READY left), ${analyse === "create+half" ? "stats from before the drain" : analyse === "empty" ? "stats from while empty" : "never analysed"}`,
    );
    if (TRY_CANDIDATES) for (const candidate of CANDIDATES.slice(1)) await explain(c, `${name}: half drained, as above`, candidate, true);
    if (analyse === "create+half" || analyse === "half") {
      await analyseNow();
      const again = `${name}: half drained, ${analyse === "create+half" ? "analysed again" : "analysed for the first time"}`;
      await explain(c, again);
      if (TRY_CANDIDATES) for (const candidate of CANDIDATES.slice(1)) await explain(c, again, candidate, true);
    }
    const half = d.ms.length;
    // The second half through a new store handle: new connections plan the statement now, as a pool connection
    // first used mid-drain does (the first handle's connection keeps the plan it cached while the table was small).
    const second = await openStore(url, { schema });
    try {
      await drain(second, d, JOBS);
    } finally {
      await second.close();
    }
    console.log(
      `\ndrain, second half (new store handle): ${summary(d.ms.slice(half))}; whole drain: ${summary(d.ms)}\nmedian per 2,000 jobs: ${windows(d.ms)}`,
    );
  } finally {
    await c.end();
    await store.close();
  }
}

const fresh = await freshDatabase("leaseplan", randomBytes(4).toString("hex"));
try {
  console.log(`lease plan: ${JOBS} jobs, leases of ${LEASE}, database ${fresh.name}${SETTINGS ? `, EXPLAIN under: ${SETTINGS}` : ""}`);
  if (REWRITE) console.log(`the store's lease statement is sent rewritten: --rewrite ${REWRITE}`);
  if (TRY_CANDIDATES) console.log("candidates tried at each point");
  const tracks = (arg("--tracks") ?? "never,create+half,half").split(",") as Analyse[];
  for (const t of tracks) await track(fresh.url, t);
} finally {
  await fresh.drop();
}
