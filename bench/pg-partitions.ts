// What time partitions cost the hot path, and what retention's drop saves
// (docs/design-notes.md "Time partitions"). Not a test: a measurement.
//
//   node --import tsx bench/pg-partitions.ts widths        # lease cost: 40 daily vs 6 weekly vs 2 monthly ranges
//   node --import tsx bench/pg-partitions.ts year          # a year of ended history, then retention at 30 days
//
// Each scenario builds a fresh schema (BENCH_PG_URL, default the local test
// database) with ended executions spread over the days (ROWS_PER_DAY, default
// 10,000, one bulk insert), 200 READY and 200 RUNNING rows now, and reports a
// lease of 10 (planning + execution ms, buffers: median of 20, rolled back)
// and the reaper's claim of expired leases.

import pg from "pg";
import { openPostgresStore } from "../src/store/postgres/index.js";
import { LANES_PER_PICK, NO_WORK } from "../src/core/fair-share.js";
import { LEASE_ACROSS_TENANTS } from "../src/store/postgres/leases.js";
import { attachedRanges, createRange, PARTITION_MS, rangeStart } from "../src/store/postgres/partitions.js";

const URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const ROWS_PER_DAY = Number(process.env.ROWS_PER_DAY ?? 10_000);
const DAY = 86_400_000;
const REAP = `SELECT e.* FROM executions e WHERE e.state = 'RUNNING' AND e.lease_until < $1 ORDER BY e.lease_until LIMIT 100 FOR UPDATE OF e SKIP LOCKED`;

interface Built {
  schema: string;
  admin: pg.Pool;
  now: number;
}

/** A fresh schema whose history is cut in ranges of `width` covering `days` up to now, filled with ended rows. */
async function build(name: string, days: number, width: number): Promise<Built> {
  const schema = `duetime_bench_${name}`;
  const admin = new pg.Pool({ connectionString: URL, max: 2, options: `-c search_path=${schema}` });
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  const store = await openPostgresStore({ url: URL, schema });
  const pool = new pg.Pool({ connectionString: URL, max: 2, options: `-c search_path=${schema}` });
  const now = Date.now();
  // The ranges migrate created (a week each) give way to the width measured.
  for (const r of await attachedRanges(admin)) await admin.query(`DROP TABLE ${r.name}, ${r.name.replace("executions", "attempts")}`);
  const start = width === PARTITION_MS ? rangeStart(now - days * DAY) : now - days * DAY;
  for (let from = start; from < now + width; from += width) await createRange(pool, schema, from, from + width);
  await pool.end();
  await store.close();
  const total = days * ROWS_PER_DAY;
  const step = Math.floor((days * DAY) / total);
  const t0 = performance.now();
  await admin.query(
    `INSERT INTO executions (id, tenant_id, job_id, scheduled_for, pool, name, priority, state, attempt, max_attempts, backoff_seconds,
       max_backoff_seconds, timeout_ms, ready_at, target, dispatched_at, started_at, finished_at)
     SELECT 'x' || g, 't1', 'j' || g, s, 'p', 'n', 0, 'SUCCEEDED', 1, 3, 1, 1, 30000, s, '{"type":"queue","pool":"p"}', s, s, s + 1000
     FROM generate_series(0, $3::bigint - 1) g, LATERAL (SELECT $1::bigint + g * $2::bigint AS s) x`,
    [now - days * DAY, step, total],
  );
  await admin.query(
    `INSERT INTO executions (id, tenant_id, job_id, scheduled_for, pool, name, priority, state, attempt, max_attempts, backoff_seconds,
       max_backoff_seconds, timeout_ms, ready_at, lease_until, target, dispatched_at)
     SELECT 'l' || g, 't1', 'l' || g, $1::bigint - g, 'p', 'n', g % 3, CASE WHEN g % 2 = 0 THEN 'READY' ELSE 'RUNNING' END, 0, 3, 1, 1, 30000,
       $1::bigint - g, CASE WHEN g % 2 = 1 THEN $1::bigint + 60000 END, '{"type":"queue","pool":"p"}', $1::bigint
     FROM generate_series(1, 400) g`,
    [now],
  );
  await admin.query("VACUUM ANALYZE executions");
  const ranges = (await attachedRanges(admin)).length;
  console.log(
    `${name}: ${total.toLocaleString("en")} ended rows over ${days} days in ${ranges} ranges + DEFAULT (${((performance.now() - t0) / 1000).toFixed(1)} s to insert)`,
  );
  return { schema, admin, now };
}

/** Median planning + execution ms and buffers of a statement, run 20 times and rolled back. */
async function cost(b: Built, sql: string, values: unknown[]): Promise<string> {
  const runs: { ms: number; plan: number; buffers: number }[] = [];
  const client = await b.admin.connect();
  try {
    for (let i = 0; i < 20; i++) {
      await client.query("BEGIN");
      const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, values);
      await client.query("ROLLBACK");
      const out = (
        rows[0] as {
          "QUERY PLAN": { Plan: Record<string, number>; "Planning Time": number; "Execution Time": number; Planning?: Record<string, number> }[];
        }
      )["QUERY PLAN"][0]!;
      runs.push({
        ms: out["Execution Time"],
        plan: out["Planning Time"],
        buffers: out.Plan["Shared Hit Blocks"]! + out.Plan["Shared Read Blocks"]!,
      });
    }
  } finally {
    client.release();
  }
  const median = (f: (r: (typeof runs)[number]) => number) => runs.map(f).sort((x, y) => x - y)[10]!;
  return `plan ${median((r) => r.plan).toFixed(2)} ms, run ${median((r) => r.ms).toFixed(2)} ms, ${median((r) => r.buffers)} buffers`;
}

async function hotPath(b: Built, label: string): Promise<void> {
  console.log(`  ${label} lease of 10: ${await cost(b, LEASE_ACROSS_TENANTS, [b.now, "p", 10, "w", 30_000, 0, LANES_PER_PICK, NO_WORK])}`);
  console.log(`  ${label} reaper claim: ${await cost(b, REAP, [b.now + 120_000])}`);
}

async function widths(): Promise<void> {
  for (const [name, days, width] of [
    ["daily", 40, DAY],
    ["weekly", 42, PARTITION_MS],
    ["monthly", 60, 30 * DAY],
  ] as const) {
    const b = await build(name, days, width);
    await hotPath(b, name);
    await b.admin.query(`DROP SCHEMA ${b.schema} CASCADE`);
    await b.admin.end();
  }
}

async function year(): Promise<void> {
  const month = await build("month", 35, PARTITION_MS);
  await hotPath(month, "one month of history:");
  await month.admin.query(`DROP SCHEMA ${month.schema} CASCADE`);
  await month.admin.end();

  const b = await build("year", 365, PARTITION_MS);
  await hotPath(b, "a year of history:");
  const store = await openPostgresStore({ url: URL, schema: b.schema });
  try {
    const before = b.now - 30 * DAY;
    let t0 = performance.now();
    const first = await store.retentionPurge({ kind: "executions", before, limit: 500 });
    console.log(
      `  retention at 30 days, first call: ${first.deleted.toLocaleString("en")} rows removed in ${(performance.now() - t0).toFixed(0)} ms`,
    );
    t0 = performance.now();
    const second = await store.retentionPurge({ kind: "executions", before, limit: 500 });
    console.log(
      `  second call (row deletes of the range that ends after the cut-off): ${second.deleted} rows in ${(performance.now() - t0).toFixed(0)} ms`,
    );
    await b.admin.query("VACUUM ANALYZE executions");
    console.log(`  ranges left: ${(await attachedRanges(b.admin)).length} + DEFAULT`);
    await hotPath(b, "after retention:");
    // A month later: the next ranges become due; what one drop costs.
    t0 = performance.now();
    const monthLater = await store.retentionPurge({ kind: "executions", before: b.now, limit: 500 });
    console.log(
      `  a month later (cut-off now): ${monthLater.deleted.toLocaleString("en")} rows removed in ${(performance.now() - t0).toFixed(0)} ms`,
    );
  } finally {
    await store.close();
    await b.admin.query(`DROP SCHEMA ${b.schema} CASCADE`);
    await b.admin.end();
  }
}

const which = process.argv[2];
if (which === "widths") await widths();
else if (which === "year") await year();
else console.error("usage: node --import tsx bench/pg-partitions.ts widths|year");
