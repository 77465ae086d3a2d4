// node --import tsx bench/pg-client.ts [--rounds N]
//
// node-postgres (`pg`) against postgres.js (`postgres`) on the statements the
// PostgreSQL store will run: batch insert of executions with unnest arrays
// (and a multi-row VALUES for comparison), leasing with FOR UPDATE SKIP
// LOCKED from 4 connections at once, batch completion as a compare-and-set,
// a one-row round trip, and a 4 KiB jsonb payload round trip. Both clients
// run in the same process, on the same database, with pools of 10; rounds
// alternate which client goes first, and the table shows medians of rounds.
//
// postgres.js (the devDependency `postgres`) is loaded at run time. Writes
// bench/results/pg-client.md.
// Not part of `npm run bench`.

import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem } from "node:os";
import pg from "pg";
import { NoiseGauge, pct } from "./measure.js";
import { freshDatabase, postgresVersion } from "./services.js";
import { packageVersion } from "./versions.js";

const POOL = 10;
const INSERT_BATCH = 1_000;
const INSERT_BATCHES = 10;
const LEASE_BATCH = 100;
const LEASERS = 4;
const PING_CALLS = 2_000;
const PING_IN_FLIGHT = 100;
const PING_PIPELINED_CALLS = 10_000;
const JSON_CALLS = 500;

// ---- schema and statements (the same text for both clients)

const SCHEMA = `
CREATE TABLE executions (
  id            text PRIMARY KEY,
  job_id        text NOT NULL,
  pool          text NOT NULL,
  scheduled_for bigint NOT NULL,
  priority      integer NOT NULL DEFAULT 0,
  state         text NOT NULL DEFAULT 'READY',
  attempt       integer NOT NULL DEFAULT 0,
  ready_at      timestamptz NOT NULL DEFAULT now(),
  lease_until   timestamptz,
  worker_id     text,
  payload       jsonb,
  finished_at   timestamptz,
  UNIQUE (job_id, scheduled_for)
);
CREATE INDEX executions_ready ON executions (pool, priority DESC, ready_at) WHERE state = 'READY';`;

const INSERT_UNNEST = `
INSERT INTO executions (id, job_id, pool, scheduled_for, priority, payload)
SELECT id, job_id, pool, scheduled_for, priority, payload::jsonb
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::int[], $6::text[])
  AS r(id, job_id, pool, scheduled_for, priority, payload)
ON CONFLICT (job_id, scheduled_for) DO NOTHING`;

const INSERT_COLUMNS = 6;
const INSERT_VALUES = `
INSERT INTO executions (id, job_id, pool, scheduled_for, priority, payload)
VALUES ${Array.from({ length: INSERT_BATCH }, (_, r) => {
  const p = (c: number) => `$${r * INSERT_COLUMNS + c + 1}`;
  return `(${p(0)}, ${p(1)}, ${p(2)}, ${p(3)}::bigint, ${p(4)}::int, ${p(5)}::jsonb)`;
}).join(",\n  ")}
ON CONFLICT (job_id, scheduled_for) DO NOTHING`;

const LEASE = `
UPDATE executions e
SET state = 'RUNNING', attempt = e.attempt + 1, worker_id = $1,
    lease_until = now() + interval '30 seconds'
WHERE e.id IN (
  SELECT id FROM executions
  WHERE state = 'READY' AND pool = $2 AND ready_at <= now()
  ORDER BY priority DESC, ready_at
  LIMIT $3
  FOR UPDATE SKIP LOCKED)
RETURNING e.id, e.job_id, e.scheduled_for, e.attempt, e.payload, e.lease_until`;

const COMPLETE = `
UPDATE executions e
SET state = 'SUCCEEDED', finished_at = now(), lease_until = NULL
FROM unnest($1::text[], $2::int[]) AS c(id, attempt)
WHERE e.id = c.id AND e.attempt = c.attempt
  AND e.state = 'RUNNING' AND e.lease_until > now()
RETURNING e.id`;

const PING = "SELECT 1 AS one";
const JSON_ECHO = "SELECT $1::jsonb AS payload";
const COUNT_READY = "SELECT count(*)::int AS n FROM executions WHERE state = 'READY'";

// ---- the two clients behind one small interface

interface Leased {
  id: string;
  attempt: number;
}

interface Client {
  readonly name: string;
  /** Runs a statement with positional parameters, prepared where the client can; returns the rows. */
  query(name: string, text: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  /** Wraps a JS object for a jsonb parameter. */
  json(value: object): unknown;
  /** Runs fn on `n` dedicated connections at once. */
  onConnections<T>(n: number, fn: (query: Client["query"], i: number) => Promise<T>): Promise<T[]>;
  end(): Promise<void>;
}

function nodePostgres(url: string): Client {
  const pool = new pg.Pool({ connectionString: url, max: POOL });
  // A named statement is parsed once per connection and then only bound and executed.
  const run = (c: pg.Pool | pg.PoolClient) => async (name: string, text: string, params: unknown[]) =>
    (await c.query({ name, text, values: params })).rows as Record<string, unknown>[];
  return {
    name: "pg",
    query: run(pool),
    json: (value) => value, // pg serialises objects with JSON.stringify
    async onConnections(n, fn) {
      const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()));
      try {
        return await Promise.all(clients.map((c, i) => fn(run(c), i)));
      } finally {
        for (const c of clients) c.release();
      }
    },
    end: () => pool.end(),
  };
}

/** The part of postgres.js this bench uses (typed here so the bench typechecks without the package installed). */
interface PostgresJsSql {
  unsafe(text: string, params: unknown[], options: { prepare: boolean }): Promise<Record<string, unknown>[]>;
  json(value: object): unknown;
  reserve(): Promise<PostgresJsSql & { release(): void }>;
  end(): Promise<void>;
}
type PostgresJs = (url: string, options: { max: number; onnotice: () => void }) => PostgresJsSql;

async function postgresJs(url: string): Promise<Client> {
  const specifier = "postgres";
  const postgres = ((await import(specifier)) as { default: PostgresJs }).default;
  const sql = postgres(url, { max: POOL, onnotice: () => {} });
  // postgres.js names and caches every statement itself (prepare: true) and pipelines on each connection.
  const run = (s: PostgresJsSql) => (_name: string, text: string, params: unknown[]) => s.unsafe(text, params, { prepare: true });
  return {
    name: "postgres.js",
    query: run(sql),
    json: (value) => sql.json(value),
    async onConnections(n, fn) {
      const reserved = await Promise.all(Array.from({ length: n }, () => sql.reserve()));
      try {
        return await Promise.all(reserved.map((r, i) => fn(run(r), i)));
      } finally {
        for (const r of reserved) r.release();
      }
    },
    end: () => sql.end(),
  };
}

// ---- the operations

interface Sample {
  /** Milliseconds per call, one per call. */
  callMs: number[];
  /** Units (rows or calls) per second over the whole operation. */
  perSecond: number;
}

const PAYLOAD = JSON.stringify({ url: "https://example.test/hook", body: { orderId: 123456, kind: "reminder" } });

function insertRows(prefix: string, batch: number) {
  const ids: string[] = [];
  const jobIds: string[] = [];
  const due: number[] = [];
  for (let i = 0; i < INSERT_BATCH; i++) {
    ids.push(`${prefix}-${batch}-${i}`);
    jobIds.push(`job-${prefix}-${batch}-${i % 100}`);
    due.push(1_767_225_600_000 + i * 1_000);
  }
  return { ids, jobIds, due, pools: ids.map(() => "default"), priorities: ids.map((_, i) => i % 3), payloads: ids.map(() => PAYLOAD) };
}

async function timed(calls: number, fn: (i: number) => Promise<number>): Promise<Sample> {
  const callMs: number[] = [];
  let units = 0;
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    units += await fn(i);
    callMs.push(performance.now() - t);
  }
  return { callMs, perSecond: (units * 1000) / (performance.now() - t0) };
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`check failed: ${what}`);
}

async function insertUnnest(c: Client, prefix: string): Promise<Sample> {
  const sample = await timed(INSERT_BATCHES, async (b) => {
    const r = insertRows(prefix, b);
    const rows = await c.query("insert_unnest", `${INSERT_UNNEST} RETURNING id`, [r.ids, r.jobIds, r.pools, r.due, r.priorities, r.payloads]);
    check(rows.length === INSERT_BATCH, `${c.name} unnest inserted ${rows.length} of ${INSERT_BATCH}`);
    return rows.length;
  });
  // The same occurrences again under new ids: the unique key makes it a no-op.
  const again = insertRows(prefix, 0);
  const dup = await c.query("insert_unnest", `${INSERT_UNNEST} RETURNING id`, [
    again.ids.map((id) => `${id}-again`),
    again.jobIds,
    again.pools,
    again.due,
    again.priorities,
    again.payloads,
  ]);
  check(dup.length === 0, `${c.name} ON CONFLICT DO NOTHING inserted ${dup.length} duplicates`);
  return sample;
}

async function insertValues(c: Client, prefix: string): Promise<Sample> {
  return timed(INSERT_BATCHES, async (b) => {
    const r = insertRows(prefix, b);
    const params = r.ids.flatMap((id, i) => [id, r.jobIds[i], r.pools[i], r.due[i], r.priorities[i], r.payloads[i]]);
    const rows = await c.query("insert_values", `${INSERT_VALUES} RETURNING id`, params);
    check(rows.length === INSERT_BATCH, `${c.name} VALUES inserted ${rows.length} of ${INSERT_BATCH}`);
    return rows.length;
  });
}

/** Leases every ready row, 100 at a time, from 4 connections at once; returns the batches leased. */
async function lease(c: Client, ready: number): Promise<{ sample: Sample; batches: Leased[][] }> {
  const callMs: number[] = [];
  const t0 = performance.now();
  const perConnection = await c.onConnections(LEASERS, async (query, i) => {
    const batches: Leased[][] = [];
    for (;;) {
      const t = performance.now();
      const rows = await query("lease", LEASE, [`worker-${i}`, "default", LEASE_BATCH]);
      callMs.push(performance.now() - t);
      if (rows.length === 0) return batches;
      batches.push(rows.map((row) => ({ id: String(row.id), attempt: Number(row.attempt) })));
    }
  });
  const seconds = (performance.now() - t0) / 1000;
  const batches = perConnection.flat();
  const ids = batches.flat().map((l) => l.id);
  check(new Set(ids).size === ids.length, `${c.name} leased ${ids.length - new Set(ids).size} rows twice`);
  check(ids.length === ready, `${c.name} leased ${ids.length} of ${ready} ready rows`);
  const left = await c.query("count_ready", COUNT_READY, []);
  check(Number(left[0]?.n) === 0, `${c.name} left ${String(left[0]?.n)} rows ready`);
  return { sample: { callMs, perSecond: ids.length / seconds }, batches };
}

async function complete(c: Client, batches: Leased[][]): Promise<Sample> {
  const sample = await timed(batches.length, async (b) => {
    const batch = batches[b]!;
    const rows = await c.query("complete", COMPLETE, [batch.map((l) => l.id), batch.map((l) => l.attempt)]);
    check(rows.length === batch.length, `${c.name} completed ${rows.length} of ${batch.length}`);
    return rows.length;
  });
  // The compare-and-set: completing again (no longer RUNNING) changes nothing.
  const first = batches[0]!;
  const again = await c.query("complete", COMPLETE, [first.map((l) => l.id), first.map((l) => l.attempt)]);
  check(again.length === 0, `${c.name} completed ${again.length} rows twice`);
  return sample;
}

async function ping(c: Client): Promise<Sample> {
  return timed(PING_CALLS, async () => {
    const rows = await c.query("ping", PING, []);
    check(Number(rows[0]?.one) === 1, `${c.name} SELECT 1`);
    return 1;
  });
}

/** SELECT 1 with 100 calls in flight on the pool of 10: pipelining shows here. */
async function pingInFlight(c: Client): Promise<Sample> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: PING_IN_FLIGHT }, async () => {
      while (next++ < PING_PIPELINED_CALLS) await c.query("ping", PING, []);
    }),
  );
  return { callMs: [], perSecond: (PING_PIPELINED_CALLS * 1000) / (performance.now() - t0) };
}

/** A 4 KiB object sent as a jsonb parameter and parsed back. */
const DOCUMENT = (() => {
  const doc: { id: string; tags: string[]; items: { sku: string; qty: number; note: string }[] } = { id: "order-1", tags: ["a", "b"], items: [] };
  while (JSON.stringify(doc).length < 4096)
    doc.items.push({ sku: `sku-${doc.items.length}`, qty: doc.items.length, note: 'café ✓ "quoted" \\ slash' });
  return doc;
})();

async function jsonRoundTrip(c: Client): Promise<Sample> {
  const expected = JSON.stringify(DOCUMENT);
  return timed(JSON_CALLS, async () => {
    const rows = await c.query("json_echo", JSON_ECHO, [c.json(DOCUMENT)]);
    const back = rows[0]?.payload;
    check(
      typeof back === "object" && back !== null && (back as { items: unknown[] }).items.length === DOCUMENT.items.length,
      `${c.name} jsonb came back as ${typeof back}`,
    );
    check(JSON.stringify(back).length === expected.length, `${c.name} jsonb changed in the round trip`);
    return 1;
  });
}

// ---- rounds and report

const DOCUMENT_KIB = (JSON.stringify(DOCUMENT).length / 1024).toFixed(1);
const OPERATIONS = [
  { key: "insertUnnest", label: `insert ${INSERT_BATCH.toLocaleString("en-US")} executions, unnest arrays, ON CONFLICT DO NOTHING`, unit: "rows/s" },
  {
    key: "insertValues",
    label: `insert ${INSERT_BATCH.toLocaleString("en-US")} executions, multi-row VALUES (${(INSERT_BATCH * INSERT_COLUMNS).toLocaleString("en-US")} parameters)`,
    unit: "rows/s",
  },
  { key: "lease", label: `lease ${LEASE_BATCH} ready rows, FOR UPDATE SKIP LOCKED, ${LEASERS} connections at once`, unit: "rows/s" },
  { key: "complete", label: `complete ${LEASE_BATCH} by id array, compare-and-set on attempt and lease_until`, unit: "rows/s" },
  { key: "ping", label: "SELECT 1, one at a time (prepared)", unit: "calls/s" },
  { key: "pingInFlight", label: `SELECT 1, ${PING_IN_FLIGHT} in flight on the pool`, unit: "calls/s" },
  { key: "json", label: `jsonb round trip of a ${DOCUMENT_KIB} KiB object`, unit: "calls/s" },
] as const;
type OpKey = (typeof OPERATIONS)[number]["key"];
type Round = Record<OpKey, Sample> & { noise: number };

async function round(c: Client, prefix: string): Promise<Round> {
  await c.query("truncate", "TRUNCATE executions", []);
  const gauge = new NoiseGauge(() => []);
  const insertUnnestSample = await insertUnnest(c, `${prefix}u`);
  const insertValuesSample = await insertValues(c, `${prefix}v`);
  const leased = await lease(c, 2 * INSERT_BATCH * INSERT_BATCHES);
  return {
    insertUnnest: insertUnnestSample,
    insertValues: insertValuesSample,
    lease: leased.sample,
    complete: await complete(c, leased.batches),
    ping: await ping(c),
    pingInFlight: await pingInFlight(c),
    json: await jsonRoundTrip(c),
    noise: gauge.foreignPercent(),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const num = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => (Number.isNaN(n) ? "–" : n < 1 ? n.toFixed(3) : n.toFixed(2));

/** "p50 ms (p99 ms)" of the calls of a round, median over rounds. */
function latency(rounds: Round[], key: OpKey): string {
  if (rounds[0]![key].callMs.length === 0) return "–";
  const sorted = rounds.map((r) => Float64Array.from(r[key].callMs).sort());
  return `${ms(median(sorted.map((s) => pct(s, 0.5))))} (${ms(median(sorted.map((s) => pct(s, 0.99))))})`;
}

function table(results: Map<string, Round[]>): string[] {
  const [a, b] = [...results.keys()] as [string, string];
  const rows = [
    `| operation | ${a} ms p50 (p99) | ${a} throughput | ${b} ms p50 (p99) | ${b} throughput | ${b} ÷ ${a} |`,
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const op of OPERATIONS) {
    const [ra, rb] = [results.get(a)!, results.get(b)!];
    const [ta, tb] = [median(ra.map((r) => r[op.key].perSecond)), median(rb.map((r) => r[op.key].perSecond))];
    rows.push(
      `| ${op.label} | ${latency(ra, op.key)} | ${num(ta)} ${op.unit} | ${latency(rb, op.key)} | ${num(tb)} ${op.unit} | ${(tb / ta).toFixed(2)}× |`,
    );
  }
  return rows;
}

async function main(): Promise<void> {
  const roundsArg = process.argv.indexOf("--rounds");
  const rounds = roundsArg >= 0 ? Number(process.argv[roundsArg + 1]) : 5;
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error("--rounds needs a whole number ≥ 1");

  const db = await freshDatabase("pgclient", randomUUID().slice(0, 8));
  const results = new Map<string, Round[]>();
  const load = loadavg()[0]!;
  try {
    const clients = [nodePostgres(db.url), await postgresJs(db.url)];
    const setup = new pg.Client({ connectionString: db.url });
    await setup.connect();
    await setup.query(SCHEMA); // several statements: the simple protocol, unprepared
    await setup.end();
    for (const c of clients) results.set(c.name, []);
    for (let r = 0; r < rounds; r++) {
      // Alternate who goes first so that warm caches and noise fall on both.
      for (const c of r % 2 ? [...clients].reverse() : clients) {
        results.get(c.name)!.push(await round(c, `r${r}`));
        process.stderr.write(`round ${r + 1}/${rounds} ${c.name} done\n`);
      }
    }
    for (const c of clients) await c.end();
  } finally {
    await db.drop();
  }

  const noise = [...results.values()].flat().map((r) => r.noise);
  const cpu = cpus();
  const report = [
    "# PostgreSQL clients: node-postgres vs postgres.js",
    "",
    `- ${new Date().toISOString()}; ${cpu[0]?.model ?? "cpu"} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${release()}; load average ${load.toFixed(2)} at start; noise (CPU of other processes, share of all cores) median ${median(noise).toFixed(0)}%, max ${Math.max(...noise).toFixed(0)}%`,
    `- Node ${process.version}; PostgreSQL ${await postgresVersion()} on loopback; pg ${packageVersion("pg")} (pure JS, no pg-native); postgres.js ${await postgresJsVersion()}`,
    `- command: \`node --import tsx bench/pg-client.ts --rounds ${rounds}\`; pool of ${POOL} per client; each figure is the median of ${rounds} rounds (within a round: p50/p99 over the calls, throughput over the whole operation); rounds alternate which client goes first`,
    `- per round: ${INSERT_BATCHES} insert batches of each kind, then every ready row (${(2 * INSERT_BATCH * INSERT_BATCHES).toLocaleString("en-US")}) leased 100 at a time by ${LEASERS} connections until none is left, then completed 100 at a time; ${PING_CALLS.toLocaleString("en-US")} sequential and ${PING_PIPELINED_CALLS.toLocaleString("en-US")} concurrent SELECT 1; ${JSON_CALLS} jsonb round trips`,
    "- checked every round: no row leased twice and none left ready, every completion matched, a second completion of a batch changes nothing, a re-insert of the same (job_id, scheduled_for) inserts nothing, the jsonb document comes back parsed and whole",
    "- pg runs each statement as a named prepared statement (`{ name, text, values }`); postgres.js runs the same text with `prepare: true` (its default)",
    "",
    ...table(results),
    "",
  ].join("\n");
  console.log(report);
  writeFileSync(new URL("./results/pg-client.md", import.meta.url), report);
}

async function postgresJsVersion(): Promise<string> {
  return packageVersion("postgres");
}

await main();
