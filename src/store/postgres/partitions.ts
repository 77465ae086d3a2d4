// Time partitions of history: executions and attempts are PARTITION BY RANGE
// (scheduled_for) (schema.ts), in ranges a week wide starting on Mondays
// 00:00 UTC, named <table>_pYYYYMMDD after their first day, plus a DEFAULT
// partition for what no range holds (far-future one-offs, old backfills).
// Retention's run maintains them (docs/design-notes.md "Time partitions"):
// it creates the current and the next ranges, moving their rows out of
// DEFAULT, and drops a range once every row in it is due for removal.
//
// The lock: leasing cannot prune by time, so every lease locks the parents.
// Dropping or detaching a partition takes ACCESS EXCLUSIVE on its parent, and
// attaching one takes it on DEFAULT: each is asked for under a short
// lock_timeout (a waiting request queues the leases behind it), and a refusal
// waits for the next run. Whether a range may go is probed before the lock
// (cheap: partial indexes) and again under it.

import type pg from "pg";
import { IN_FLIGHT_STATES } from "../../core/states.js";
import { readsItsEnd } from "../rows.js";
import { type Db, DB_NOW, one, rows, transaction } from "./db.js";

const DAY = 86_400_000;
/** A range's width: measured against lease cost (docs/design-notes.md "Time partitions"). */
export const PARTITION_MS = 7 * DAY;
/** 1970-01-05, a Monday: ranges start on Mondays. */
const ORIGIN = 4 * DAY;
/** Ranges kept created after the current one. */
const AHEAD = 2;
/** How long maintenance waits for a lock the leases also take before it leaves the work to the next run. */
const LOCK_TIMEOUT = "200ms";
/** Classid of the maintenance lock (pg_try_advisory_xact_lock(classid, objid)): "part". Nodes take turns. */
const MAINTENANCE_LOCK = 0x70617274;
const TABLES = ["executions", "attempts"] as const;
const ENDED = "('SUCCEEDED', 'DEAD', 'CANCELLED', 'SKIPPED')";

export const rangeStart = (t: number): number => Math.floor((t - ORIGIN) / PARTITION_MS) * PARTITION_MS + ORIGIN;

const partitionName = (table: string, from: number): string => `${table}_p${new Date(from).toISOString().slice(0, 10).replaceAll("-", "")}`;

const isLockRefused = (error: unknown): boolean => (error as { code?: string }).code === "55P03";

/** Runs fn in a transaction holding the maintenance lock, under the short lock_timeout; null when another node holds it or a lock was refused. */
async function maintaining<T>(pool: pg.Pool, schema: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T | null> {
  try {
    return await transaction(pool, async (c) => {
      const got = await one<{ got: boolean }>(c, "SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS got", [MAINTENANCE_LOCK, schema]);
      if (!got!.got) return null;
      await c.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      return fn(c);
    });
  } catch (error) {
    if (isLockRefused(error)) return null;
    throw error;
  }
}

/** The ranges attached to executions, by partition name (DEFAULT left out). */
export async function attachedRanges(db: Db): Promise<{ name: string; from: number; to: number }[]> {
  const found = await rows<{ name: string; bound: string }>(
    db,
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'executions'::regclass`,
  );
  return found.flatMap((r) => {
    const m = /FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)/.exec(r.bound);
    return m ? [{ name: r.name, from: Number(m[1]), to: Number(m[2]) }] : [];
  });
}

/** Creates the range holding `now` (default the database clock) and the next AHEAD ones, where absent. */
export async function createAhead(pool: pg.Pool, schema: string, now?: number): Promise<void> {
  const at = now ?? (await one<{ now: number }>(pool, `SELECT ${DB_NOW} AS now`))!.now;
  const have = new Set((await attachedRanges(pool)).map((r) => r.from));
  for (let i = 0; i <= AHEAD; i++) {
    const from = rangeStart(at) + i * PARTITION_MS;
    if (!have.has(from)) await createRange(pool, schema, from, from + PARTITION_MS);
  }
}

/**
 * Creates [from, to) for both tables in one transaction: the table, the rows
 * DEFAULT holds in the range moved into it, then attached (which checks DEFAULT
 * holds none left: kept small, that scan is short). False when left to a later run.
 */
export async function createRange(pool: pg.Pool, schema: string, from: number, to: number): Promise<boolean> {
  const done = await maintaining(pool, schema, async (c) => {
    for (const table of TABLES) {
      const name = partitionName(table, from);
      if ((await one<{ r: string | null }>(c, "SELECT to_regclass($1)::text AS r", [name]))!.r) continue;
      await c.query(`CREATE TABLE ${name} (LIKE ${table} INCLUDING DEFAULTS)`);
      await c.query(`LOCK TABLE ${table}_default IN ACCESS EXCLUSIVE MODE`);
      await c.query(
        `WITH moved AS (DELETE FROM ${table}_default WHERE scheduled_for >= $1 AND scheduled_for < $2 RETURNING *)
         INSERT INTO ${name} SELECT * FROM moved`,
        [from, to],
      );
      await c.query(`ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES FROM (${from}) TO (${to})`);
    }
    return true;
  });
  return done ?? false;
}

/**
 * Whether a partition of executions still holds a row that is not due at
 * $1: "due" (retention without an archive) keeps it for a row in flight or
 * ended at or after $1; "empty" (with an archive, which removes rows one by
 * one once it holds them) keeps it for any row. Each probe is a partial index's.
 */
const keepSql = (partition: string, mode: "due" | "empty"): string => {
  const ended = `EXISTS (SELECT 1 FROM ${partition} WHERE state IN ${ENDED}${mode === "due" ? " AND (finished_at >= $1 OR finished_at IS NULL)" : ""})`;
  const inFlight = IN_FLIGHT_STATES.map((s) => `EXISTS (SELECT 1 FROM ${partition} WHERE state = '${s}')`);
  return `SELECT ${[...inFlight, ended].join(" OR ")} AS keep`;
};

const keeps = async (db: Db, partition: string, mode: "due" | "empty", before: number): Promise<boolean> =>
  (await one<{ keep: boolean }>(db, keepSql(partition, mode), mode === "due" ? [before] : []))!.keep;

/**
 * Drops every range of both tables that ends at or before `before` and holds
 * nothing to keep (keepSql), and any range left detached by a run that
 * stopped halfway. Answers the executions removed with them.
 */
export async function dropEnded(pool: pg.Pool, schema: string, before: number, mode: "due" | "empty"): Promise<{ executions: number; jobs: number }> {
  let executions = 0;
  let jobs = 0;
  for (const range of await attachedRanges(pool)) {
    if (range.to > before || (await keeps(pool, range.name, mode, before))) continue;
    jobs += await detach(pool, schema, range.from, mode, before);
  }
  for (const from of await detachedRanges(pool)) executions += await dropDetached(pool, schema, from);
  return { executions, jobs };
}

/**
 * Detaches [from, …) from both parents, under their lock, if it still holds
 * nothing to keep, and removes the one-off jobs whose last executions it
 * held; answers how many.
 */
async function detach(pool: pg.Pool, schema: string, from: number, mode: "due" | "empty", before: number): Promise<number> {
  const jobs = await maintaining(pool, schema, async (c) => {
    await c.query("LOCK TABLE ONLY executions, ONLY attempts IN ACCESS EXCLUSIVE MODE");
    const name = partitionName("executions", from);
    const attached = (await attachedRanges(c)).some((r) => r.name === name);
    if (!attached || (await keeps(c, name, mode, before))) return 0;
    // Not CONCURRENTLY: PostgreSQL refuses it while a DEFAULT partition exists.
    for (const table of TABLES) await c.query(`ALTER TABLE ${table} DETACH PARTITION ${partitionName(table, from)}`);
    // A one-off's job goes with its last execution (retention.ts CHILDREN), in the same transaction: none is left unreadable.
    const removed = await c.query(
      `DELETE FROM jobs j USING (SELECT DISTINCT job_id FROM ${name} WHERE once) o
       WHERE j.id = o.job_id AND ${readsItsEnd("j")} AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.job_id = j.id)`,
    );
    return removed.rowCount ?? 0;
  });
  return jobs ?? 0;
}

/** Ranges of executions that exist as tables but are no longer partitions. */
async function detachedRanges(db: Db): Promise<number[]> {
  const found = await rows<{ name: string }>(
    db,
    `SELECT relname AS name FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'
       AND NOT relispartition AND relname ~ '^executions_p[0-9]{8}$'`,
  );
  return found.map((r) => Date.parse(`${r.name.slice(-8, -4)}-${r.name.slice(-4, -2)}-${r.name.slice(-2)}T00:00:00Z`));
}

/** Counts a detached range's executions and drops both tables: no lock of a parent is needed now. */
async function dropDetached(pool: pg.Pool, schema: string, from: number): Promise<number> {
  const counted = await maintaining(pool, schema, async (c) => {
    const [executions, attempts] = TABLES.map((t) => partitionName(t, from));
    if (!(await one<{ r: string | null }>(c, "SELECT to_regclass($1)::text AS r", [executions]))!.r) return 0;
    const n = (await one<{ n: number }>(c, `SELECT count(*) AS n FROM ${executions}`))!.n;
    await c.query(`DROP TABLE ${executions}`);
    await c.query(`DROP TABLE IF EXISTS ${attempts}`);
    return n;
  });
  return counted ?? 0;
}
