// The SQLite driver's handle: one better-sqlite3 connection per store (WAL),
// its pragmas, prepared statements cached by their text, and the two kinds
// of write transaction: tx (synchronous=FULL, an accepted write) and
// transition (synchronous=NORMAL under "accepted" durability, flushed by the
// next FULL commit or within FLUSH_BOUND_MS). Every write transaction is
// BEGIN IMMEDIATE: it takes the file's one write lock before its first read.

import Database from "better-sqlite3";
import { type Durability, FLUSH_BOUND_MS } from "../store.js";

export type Row = Record<string, unknown>;

/** A cached prepared statement by its text: what every topic's functions are given. */
export type Query = (sql: string) => Database.Statement;

export interface SqliteOpenOptions {
  /** A file path, or ":memory:". */
  path: string;
  /** store.ts Durability (default "accepted"). */
  durability?: Durability;
  /** How long a write waits for another connection's lock before it fails as busy (default 5000). */
  busyTimeoutMs?: number;
}

/** Thrown inside tx() to roll its transaction back and answer `value` (as postgres/db.ts Rollback). */
export class Rollback<T> {
  constructor(readonly value: T) {}
}

export class SqliteDb {
  readonly handle: Database.Database;
  readonly durability: Durability;
  private readonly stmts = new Map<string, Database.Statement>();
  /** This handle's incarnation (store_meta), flushed before its first lease grant records it. */
  private incarnation: number | undefined;
  /** A transition has committed since the last FULL commit; flushTimer will flush it. */
  private unflushed = false;
  /** The last flush failed (the disk refuses its syncs): transitions are flushed one by one until a FULL commit succeeds. */
  private flushFailed = false;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(options: SqliteOpenOptions) {
    this.handle = new Database(options.path);
    this.handle.pragma("journal_mode = WAL");
    // FULL between transitions: every write outside transition() is flushed before it returns.
    this.handle.pragma("synchronous = FULL");
    this.durability = options.durability ?? "accepted";
    this.handle.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    this.handle.pragma("foreign_keys = OFF");
  }

  /** Prepared statements are cached by their text. */
  readonly q: Query = (sql) => {
    let stmt = this.stmts.get(sql);
    if (!stmt) {
      stmt = this.handle.prepare(sql);
      this.stmts.set(sql, stmt);
    }
    return stmt;
  };

  /** An accepted write (or a read that must see one): flushed before it returns, with every transition before it. A Rollback thrown by fn undoes it and answers its value. */
  tx<T>(fn: () => T): T {
    let value: T;
    try {
      value = this.handle.transaction(fn).immediate();
    } catch (error) {
      if (error instanceof Rollback) return error.value as T;
      throw error;
    }
    this.unflushed = false;
    this.flushFailed = false;
    return value;
  }

  /**
   * A transition after acceptance (store.ts Durability): under "accepted",
   * committed with synchronous=NORMAL, so it survives a process crash at once
   * (the WAL is in the OS's cache) and a power loss from the next FULL commit
   * on, which comes within FLUSH_BOUND_MS. A WAL commit's frames are a prefix:
   * the FULL commit's fsync makes every transition before it durable too.
   */
  transition<T>(fn: () => T): T {
    // After a failed flush the bound cannot be kept: a transition is answered only once it is on disk.
    if (this.durability === "strict" || this.flushFailed) return this.tx(fn);
    this.q("PRAGMA synchronous = NORMAL").run();
    try {
      return this.handle.transaction(fn).immediate();
    } finally {
      this.q("PRAGMA synchronous = FULL").run();
      this.unflushed = true;
      this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_BOUND_MS).unref();
    }
  }

  /** A read transaction: its statements see one snapshot. */
  read<T>(fn: () => T): T {
    return this.handle.transaction(fn).deferred();
  }

  /** Makes the transitions committed so far durable: a FULL commit (an empty one writes nothing, so nothing is synced). */
  flush(): void {
    this.flushTimer = undefined;
    if (!this.unflushed || !this.handle.open) return;
    try {
      this.tx(() => this.q("UPDATE store_meta SET flushed_at = ? WHERE id = 1").run(Date.now()));
    } catch {
      // Busy or the disk: the transitions stay unflushed, and the next ones are flushed each in its own FULL commit (which fails as loudly).
      this.flushFailed = true;
    }
  }

  /** The incarnation this handle's grants record: taken at its first grant, in a FULL commit, so it is durable before any token names it. */
  leaseIncarnation(): number {
    this.incarnation ??= (
      this.tx(() => this.q("UPDATE store_meta SET incarnation = incarnation + 1 WHERE id = 1 RETURNING incarnation").get()) as {
        incarnation: number;
      }
    ).incarnation;
    return this.incarnation;
  }

  async pingWrite(): Promise<void> {
    // Empty the WAL first: a failed commit leaves its frames' space at the WAL's
    // end, where a small write fits on a full disk while the next real one fails.
    this.handle.pragma("wal_checkpoint(TRUNCATE)");
    // Setting user_version (unused by duetime) to its own value writes page 1 all the same.
    this.tx(() => this.handle.pragma(`user_version = ${Number(this.handle.pragma("user_version", { simple: true }))}`));
  }

  /** Flushes what is unflushed and closes the handle. */
  close(): void {
    clearTimeout(this.flushTimer);
    this.flush();
    if (this.handle.open) this.handle.close();
  }
}

/**
 * The time a lease call records and judges by (store.ts, "Lease time"): the
 * caller's when it pins one, else the store's own clock, which for SQLite,
 * one process on one host, is the host's.
 */
export const leaseNow = (now: number | undefined): number => now ?? Date.now();

/** A value bound for a JSON text column (undefined: NULL). */
export const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));

/** A JSON text column's value (rows.ts JsonColumn); NULL stays null. */
export const parse = <T>(text: unknown): T => (text === null || text === undefined ? (null as T) : (JSON.parse(text as string) as T));

/** A job's executions: ids "<jobId>-…" sort between "<jobId>-" and "<jobId>." ("." follows "-"). */
export const OF_JOB = "id > ? AND id < ?";
export const OF_JOB_NAMED = "e.id > @from AND e.id < @to";
export const jobRange = (jobId: string): [string, string] => [`${jobId}-`, `${jobId}.`];
