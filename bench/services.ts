// The machine's PostgreSQL and Redis, as the contenders use them: a fresh
// PostgreSQL database per run (dropped afterwards), a dedicated Redis db
// that is flushed before and after each run (BullMQ), and a key prefix per
// run in the URL's own db for duetime's Redis due index (never flushed: the
// db may be shared, so only the prefix's keys are deleted).
//
// BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres) is the
// admin connection used to create and drop databases; BENCH_REDIS_URL
// (default redis://127.0.0.1:6379) and BENCH_REDIS_DB (default 15) say where
// the Redis contenders run.

import pg from "pg";
import { Redis } from "ioredis";
import { pidsWithCmdline } from "./procstat.js";

const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
export const REDIS_DB = Number(process.env.BENCH_REDIS_DB ?? 15);

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface FreshDatabase {
  readonly name: string;
  /** Connection string of the fresh database. */
  readonly url: string;
  sizeBytes(): Promise<number>;
  /** The PostgreSQL backends connected to this database (their command line names it). */
  backendPids(): number[];
  /**
   * Rows written to this database so far: tup_inserted + tup_updated +
   * tup_deleted of pg_stat_database (every table, the catalogs too), as the
   * backends have flushed them: see STATS_SETTLE_MS in scenarios.ts.
   */
  rowsWritten(): Promise<number>;
  /** Drops the database, ending any connection left open to it. */
  drop(): Promise<void>;
}

/** Creates database `bench_<contender>_<runId>`; fails with a clear message when PostgreSQL is down. */
export async function freshDatabase(contender: string, runId: string): Promise<FreshDatabase> {
  const name = `bench_${contender.replace(/[^a-z0-9]/gi, "_")}_${runId}`.toLowerCase();
  try {
    await admin(async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.query(`CREATE DATABASE ${name}`);
    });
  } catch (e) {
    throw new Error(`PostgreSQL at ${PG_ADMIN_URL} is not usable (${(e as Error).message}); start it, see README "Performance"`);
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    sizeBytes: () => admin(async (c) => Number((await c.query("SELECT pg_database_size($1) AS n", [name])).rows[0].n)),
    backendPids: () => pidsWithCmdline(` ${name} `),
    rowsWritten: () =>
      admin(async (c) => {
        const sql = "SELECT tup_inserted + tup_updated + tup_deleted AS n FROM pg_stat_database WHERE datname = $1";
        return Number((await c.query(sql, [name])).rows[0].n);
      }),
    drop: () => admin(async (c) => void (await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))),
  };
}

export async function postgresVersion(): Promise<string> {
  return admin(async (c) => String((await c.query("SHOW server_version")).rows[0].server_version).split(" ")[0]!);
}

export interface RedisTarget {
  host: string;
  port: number;
  db: number;
}

export function redisTarget(): RedisTarget {
  const u = new URL(REDIS_URL);
  return { host: u.hostname, port: Number(u.port || 6379), db: REDIS_DB };
}

/** A connection to the benchmark's Redis db; FLUSHDB it before use. */
export async function redisAdmin(): Promise<Redis> {
  const t = redisTarget();
  const redis = new Redis({ ...t, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  try {
    await redis.connect();
  } catch (e) {
    redis.disconnect();
    throw new Error(`Redis at ${REDIS_URL} is not reachable (${(e as Error).message}); start it, see README "Performance"`);
  }
  return redis;
}

export async function redisInfo(redis: Redis, field: string): Promise<string> {
  const info = await redis.info();
  const m = new RegExp(`^${field}:(.*)$`, "m").exec(info);
  return m?.[1]?.trim() ?? "?";
}

/** A run's own key prefix on the Redis at BENCH_REDIS_URL (in that URL's db), for `duetime serve --due-index`. */
export interface RedisPrefix {
  /** The --due-index URL. */
  readonly url: string;
  /** The --due-index-prefix, unique per run. */
  readonly prefix: string;
  /** MEMORY USAGE (SAMPLES 0: every member counted) summed over the prefix's keys. */
  bytes(): Promise<number>;
  /** Redis's own used_memory (INFO memory), the whole server. */
  usedMemory(): Promise<number>;
  /** Deletes the prefix's keys (SCAN MATCH + DEL), as a Redis that lost its data would have them. */
  clear(): Promise<void>;
  /** clear(), then closes the connection. */
  drop(): Promise<void>;
}

export async function redisPrefix(prefix: string): Promise<RedisPrefix> {
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(prefix)) throw new Error(`not a --due-index-prefix: ${prefix}`);
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  try {
    await redis.connect();
  } catch (e) {
    redis.disconnect();
    throw new Error(`Redis at ${REDIS_URL} is not reachable (${(e as Error).message}); start it, see README "Performance"`);
  }
  // The prefix holds no glob characters (checked above), so MATCH takes it as it is.
  async function* keys(): AsyncGenerator<string[]> {
    let cursor = "0";
    do {
      const [next, found] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      cursor = next;
      if (found.length > 0) yield found;
    } while (cursor !== "0");
  }
  const clear = async () => {
    for await (const batch of keys()) await redis.del(...batch);
  };
  return {
    url: REDIS_URL,
    prefix,
    async bytes() {
      let total = 0;
      for await (const batch of keys()) for (const key of batch) total += (await redis.memory("USAGE", key, "SAMPLES", 0)) ?? 0;
      return total;
    },
    usedMemory: async () => Number(await redisInfo(redis, "used_memory")),
    clear,
    async drop() {
      await clear();
      redis.disconnect();
    },
  };
}
