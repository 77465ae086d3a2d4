// The PostgreSQL driver's connection layer: one pg.Pool per store, epoch-ms
// bigints parsed to numbers for this pool only, transactions with the
// client released in every case, and the database clock as SQL.

import pg from "pg";
import { executionIdFor } from "../../core/ids.js";
import { postgresFaultKind } from "./errors.js";

export type Row = Record<string, unknown>;
export type Db = pg.Pool | pg.PoolClient;

export interface PoolOptions {
  url: string;
  schema: string;
  poolSize: number;
  statementTimeoutMs: number;
  connectTimeoutMs: number;
  applicationName: string;
}

/** A schema name checked by store/names.ts, quoted all the same (a schema may be named like a keyword). */
export const ident = (name: string): string => `"${name}"`;

const INT8_OID = 20;
const parseInt8 = (text: string): number => Number(text);

/**
 * Times are bigint epoch ms and counts are bigint: parsed to numbers for this
 * pool only (pg's global setTypeParser would change every pool in the process).
 */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format ?? "text")) as pg.CustomTypesConfig["getTypeParser"],
};

/** How long past statement_timeout the client waits for an answer before it calls the link dead. */
const QUERY_TIMEOUT_MARGIN_MS = 5_000;

/**
 * How long the server lets a session sit idle inside a transaction before it
 * ends the session (idle_in_transaction_session_timeout). The store's
 * transactions send their statements back to back, so a session idle that
 * long lost its node: a link that went half-open between a dispatch's first
 * statement and its COMMIT left the shard rows locked FOR SHARE, and every
 * other node's shard round waited on them (and lost its own leases) until
 * the server's TCP keepalive, hours later. Well under a shard lease (10 s),
 * so the others renew in time.
 */
const IDLE_IN_TRANSACTION_MS = 5_000;

/** What every connection of the store is opened with, the pool's and the signal listener's. */
export function clientConfig(o: PoolOptions): pg.ClientConfig {
  return {
    connectionString: o.url,
    statement_timeout: o.statementTimeoutMs,
    // The server enforces statement_timeout only on statements it received: on
    // a link that drops packets (half-open) an answer never comes, so the
    // client gives up a little after the server would have, and keepalives
    // find a dead link under an idle connection.
    query_timeout: o.statementTimeoutMs > 0 ? o.statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS : undefined,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    connectionTimeoutMillis: o.connectTimeoutMs,
    application_name: o.applicationName,
    // Every statement names its tables unqualified: the store's schema comes first.
    // No sequential scans: the hot tables swing from empty to a herd within a
    // second, and a plan cached while they were small (a fresh node's empty
    // long polls) would read whole partitions once they have filled. Every
    // statement has an index to go by; planning each call afresh
    // (force_custom_plan) guards as well but costs a quarter more database CPU.
    // No JIT: a disabled scan's cost penalty makes even a read of a few rows
    // look expensive enough to compile (0.45 s of JIT for a 1 ms /v1/stats).
    options: `-c search_path=${ident(o.schema)} -c enable_seqscan=off -c jit=off -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}`,
    types,
  };
}

export function createPool(o: PoolOptions): pg.Pool {
  const pool = new pg.Pool({ ...clientConfig(o), max: o.poolSize });
  // An idle connection the server ends (a restart, pg_terminate_backend) is
  // reported here and dropped from the pool; the next query opens a new one.
  // Without a listener, Node would crash the process on the 'error' event.
  pool.on("error", () => {});
  return pool;
}

/** The database clock in epoch ms. now() is the transaction's start: one call reads one time. */
export const DB_NOW = "floor(extract(epoch from now()) * 1000)::bigint";

/** A pinned time if the caller gave one, else the database clock (River's coalesce(narg('now'), now())). */
export const nowOr = (param: string): string => `coalesce(${param}::bigint, ${DB_NOW})`;

/** Thrown inside a transaction to roll it back and answer `value`. */
export class Rollback<T> {
  constructor(readonly value: T) {}
}

/** Deadlock, or a serialization failure: the transaction did nothing and may run again. */
const RETRYABLE = new Set(["40P01", "40001"]);
const TX_ATTEMPTS = 3;

/**
 * A transaction that failed without doing anything and may run again
 * (transaction(), up to TX_ATTEMPTS in all): a deadlock, a serialization failure, or PostgreSQL's internal
 * "ModifyTable should not be called during EvalPlanQual" (XX000, seen on 15
 * in the contract suite's two-leaser race): a lease's UPDATE CTEs (lanes,
 * tenants) met a row another lease had just changed, and the READ COMMITTED
 * recheck of that row reached a data-modifying CTE.
 */
export function mayRunAgain(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  return RETRYABLE.has(code ?? "") || (code === "XX000" && /during EvalPlanQual/.test(message ?? ""));
}

/** BEGIN for a transition (store.ts Durability): its commit does not wait for the WAL flush (the WAL writer, or the next synchronous commit, flushes it). */
const BEGIN_RELAXED = "BEGIN; SET LOCAL synchronous_commit = off";

/**
 * Runs fn in one transaction (READ COMMITTED) on a client of its own, and
 * releases the client whatever happens: destroyed when its connection broke.
 * A deadlock (two batches locking rows in different orders), or another
 * failure mayRunAgain names, runs it again. relaxed: the commit does not
 * wait for its flush (a transition under "accepted" durability).
 */
export async function transaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>, relaxed = false): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    let broken: Error | undefined;
    // A checked-out client has no listener of the pool's: a connection lost
    // now would otherwise crash the process (the pending query rejects too).
    const onError = (err: Error): void => {
      broken = err;
    };
    client.on("error", onError);
    let begun = false;
    try {
      await client.query(relaxed ? BEGIN_RELAXED : "BEGIN");
      begun = true;
      const value = await fn(client);
      await client.query("COMMIT");
      return value;
    } catch (error) {
      // A lost link (the client's read timeout among them) would leave ROLLBACK waiting as long again: drop the connection.
      if (!broken && postgresFaultKind(error) === "connection") broken = error as Error;
      if (!broken) {
        await client.query("ROLLBACK").catch((err: Error) => {
          broken = err;
        });
      }
      if (error instanceof Rollback) return error.value as T;
      // A pooled connection the server ended while idle fails at BEGIN, before anything of fn ran: another client may serve.
      const deadAtBegin = !begun && postgresFaultKind(error) === "connection";
      if (attempt < TX_ATTEMPTS && (deadAtBegin || mayRunAgain(error))) continue;
      throw error;
    } finally {
      client.removeListener("error", onError);
      client.release(broken);
    }
  }
}

export async function rows<R = Row>(db: Db, text: string, values: unknown[] = [], name?: string): Promise<R[]> {
  const result = await db.query(name ? { name, text, values } : { text, values });
  return result.rows as R[];
}

export async function one<R = Row>(db: Db, text: string, values: unknown[] = [], name?: string): Promise<R | undefined> {
  return (await rows<R>(db, text, values, name))[0];
}

/** A value bound for a jsonb column: text, cast in SQL (pg would send a JS array as a PostgreSQL array). */
export const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));

/**
 * The key of an execution: its id is executionIdFor(jobId, scheduledFor)
 * (core/ids.ts), so every lookup by id is a lookup by the primary key
 * (job_id, scheduled_for), which is also the key time partitions range on.
 * Null for an id that is not one.
 */
export function executionKey(id: string): { jobId: string; scheduledFor: number } | null {
  const m = /^([0-9a-z]+)-(-?[0-9a-z]+)$/.exec(id);
  if (!m) return null;
  const jobId = m[1]!;
  const scheduledFor = parseInt(m[2]!, 36);
  return Number.isSafeInteger(scheduledFor) && executionIdFor(jobId, scheduledFor) === id ? { jobId, scheduledFor } : null;
}
