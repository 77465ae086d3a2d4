// Private PostgreSQL 15 clusters for the tests that need a server of their
// own to stop, start, replicate from and promote: a primary on a free port in
// a temporary directory, and streaming standbys made from it by
// pg_basebackup. Never the machine's server on 5432, which other tests share.
// As root (CI), the servers run as the postgres user through runuser;
// otherwise as the current user.
//
//   if (await pgInstancesAvailable("my replica tests")) {
//     test("…", async () => {
//       const primary = await startPrimary();
//       const standby = await startStandby(primary);
//       try { … } finally { await stopAll(); }
//     });
//   }

import { execFile, execFileSync } from "node:child_process";
import { appendFileSync, chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import pg from "pg";
import { type TestStore, waitFor } from "../helpers.js";

const run = promisify(execFile);

export const PG_BIN = process.env.DUETIME_TEST_PG_BIN ?? "/usr/lib/postgresql/15/bin";
const TOOLS = ["initdb", "pg_ctl", "pg_basebackup", "postgres"] as const;
const asRoot = process.getuid?.() === 0;

/** Null when private clusters can run here, else why not. */
function unavailable(): string | null {
  const missing = TOOLS.filter((tool) => !existsSync(join(PG_BIN, tool)));
  if (missing.length > 0) return `${missing.join(", ")} not found in ${PG_BIN}`;
  if (asRoot) {
    try {
      execFileSync("id", ["-u", "postgres"], { stdio: "ignore" });
    } catch {
      return "running as root, but there is no postgres user to run the servers as";
    }
  }
  return null;
}

/**
 * Gate for a test file's private-cluster tests: true when they can run.
 * Otherwise registers one test named after `what` that fails with CI=true
 * and is skipped elsewhere (with a banner on stderr), and answers false.
 */
export async function pgInstancesAvailable(what: string): Promise<boolean> {
  const reason = unavailable();
  if (reason === null) return true;
  const message = `private PostgreSQL clusters cannot run (${reason}): ${what} cannot run`;
  if (process.env.CI === "true") {
    test(`${what}: PostgreSQL 15 binaries are required with CI=true`, () => {
      throw new Error(`${message}. Install postgresql-15 or set DUETIME_TEST_PG_BIN.`);
    });
  } else {
    process.stderr.write(
      `\n${"!".repeat(78)}\n!! SKIPPED: ${message}.\n!! Install postgresql-15 (or set DUETIME_TEST_PG_BIN) to run them; CI=true fails instead.\n${"!".repeat(78)}\n\n`,
    );
    test(`${what} (skipped: no private PostgreSQL)`, { skip: message }, () => {});
  }
  return false;
}

/** Runs a PostgreSQL tool as the servers' user; rejects with its output on failure. */
async function tool(name: (typeof TOOLS)[number], args: string[]): Promise<string> {
  const [command, ...argv] = asRoot ? ["runuser", "-u", "postgres", "--", join(PG_BIN, name), ...args] : [join(PG_BIN, name), ...args];
  try {
    const { stdout } = await run(command!, argv, { maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${name} ${args.join(" ")} failed: ${e.message}\n${e.stdout ?? ""}${e.stderr ?? ""}`);
  }
}

/** A port nothing listens on now (the kernel's pick, released at once). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A temporary directory the servers' user owns. */
function ownedTempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "duetime-pg-"));
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    chownSync(dir, uid, gid);
  }
  return dir;
}

export type StopMode = "immediate" | "fast";

export interface PgInstance {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** pg_ctl stop: immediate is a crash (no checkpoint, recovery at the next start), fast a clean shutdown. */
  stop(options?: { mode?: StopMode }): Promise<void>;
  /** pg_ctl start on the same port and data; resolves once the server accepts connections. */
  start(): Promise<void>;
  /** One statement on a connection of its own, opened and closed for it. */
  query<R extends pg.QueryResultRow = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
}

export interface Primary extends PgInstance {
  readonly synchronousStandby: boolean;
}

export interface Standby extends PgInstance {
  readonly name: string;
  /** pg_wal_replay_pause, and waits until replay is paused: WAL is still received, not applied. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** pg_promote, and waits until the server is out of recovery (a primary). */
  promote(): Promise<void>;
  /** Waits until the standby has replayed everything the primary has written so far. */
  waitCaughtUp(timeoutMs?: number): Promise<void>;
}

const live = new Set<{ dir: string; running: () => boolean }>();

function instance(dir: string, port: number): PgInstance & { running: boolean } {
  const data = join(dir, "data");
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const self = {
    url,
    port,
    dir,
    running: false,
    async start() {
      await tool("pg_ctl", ["start", "-w", "-t", "60", "-D", data, "-l", join(dir, "server.log")]);
      self.running = true;
    },
    async stop({ mode = "fast" }: { mode?: StopMode } = {}) {
      if (!self.running) return;
      await tool("pg_ctl", ["stop", "-w", "-t", "60", "-D", data, "-m", mode]);
      self.running = false;
    },
    async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
      client.on("error", () => {});
      try {
        await client.connect();
        return (await client.query<R>(sql, params)).rows;
      } finally {
        await client.end().catch(() => {});
      }
    },
  };
  live.add({ dir, running: () => self.running });
  return self;
}

/** The settings every private server runs with, after whatever its data directory already holds (later lines win). */
function settings(dir: string, port: number): string {
  return [
    `port = ${port}`,
    `unix_socket_directories = '${dir}'`,
    "listen_addresses = '127.0.0.1'",
    "wal_level = replica",
    "max_wal_senders = 5",
    "max_replication_slots = 5",
    "hot_standby = on",
    "fsync = off", // a test's server: a machine crash loses the test, not data anyone keeps
    "",
  ].join("\n");
}

/**
 * A fresh primary (initdb, trust auth, superuser postgres) on a free port.
 * With synchronousStandby, commits wait for a standby named "standby" once
 * one streams (startStandby turns synchronous_standby_names on then, so the
 * primary does not hang on commits before it has a standby).
 */
export async function startPrimary(options: { synchronousStandby?: boolean } = {}): Promise<Primary> {
  const dir = ownedTempDir();
  await tool("initdb", ["-D", join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"]);
  const port = await freePort();
  appendFileSync(join(dir, "data", "postgresql.conf"), `\n# duetime test server\n${settings(dir, port)}`);
  const primary = Object.assign(instance(dir, port), { synchronousStandby: options.synchronousStandby ?? false });
  await primary.start();
  return primary;
}

/**
 * A streaming standby of `primary` (pg_basebackup -R with a replication slot
 * of its name, so the primary keeps the WAL it has not received while it is
 * down), on a port of its own; resolves once it streams. Its
 * application_name is its name, which synchronous_standby_names matches.
 */
export async function startStandby(primary: Primary, options: { name?: string; applyDelayMs?: number } = {}): Promise<Standby> {
  const name = options.name ?? "standby";
  const dir = ownedTempDir();
  const data = join(dir, "data");
  await tool("pg_basebackup", [
    "-D",
    data,
    "-h",
    "127.0.0.1",
    "-p",
    String(primary.port),
    "-U",
    "postgres",
    "-X",
    "stream",
    "-R",
    "-C",
    "-S",
    name,
    "--no-sync",
  ]);
  const port = await freePort();
  // postgresql.auto.conf, where -R wrote primary_conninfo: read last, so these win over both.
  const conninfo = `host=127.0.0.1 port=${primary.port} user=postgres application_name=${name}`;
  appendFileSync(
    join(data, "postgresql.auto.conf"),
    `\n${settings(dir, port)}primary_conninfo = '${conninfo}'\nprimary_slot_name = '${name}'\n` +
      (options.applyDelayMs ? `recovery_min_apply_delay = '${options.applyDelayMs}ms'\n` : ""),
  );
  const base = instance(dir, port);
  const standby: Standby = Object.assign(base, {
    name,
    async pauseReplay() {
      await base.query("SELECT pg_wal_replay_pause()");
      await waitFor(
        async () => (await base.query<{ s: string }>("SELECT pg_get_wal_replay_pause_state() AS s"))[0]!.s === "paused",
        `${name}: replay paused`,
      );
    },
    async resumeReplay() {
      await base.query("SELECT pg_wal_replay_resume()");
    },
    async promote() {
      await base.query("SELECT pg_promote(true, 60)");
      await waitFor(async () => !(await base.query<{ r: boolean }>("SELECT pg_is_in_recovery() AS r"))[0]!.r, `${name}: out of recovery`);
    },
    async waitCaughtUp(timeoutMs = 30_000) {
      const [{ lsn }] = (await primary.query<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn")) as [{ lsn: string }];
      await waitFor(
        async () => (await base.query<{ ok: boolean }>("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok", [lsn]))[0]!.ok,
        `${name}: replayed up to the primary's ${lsn}`,
        timeoutMs,
      );
    },
  });
  await standby.start();
  await waitFor(
    async () => (await primary.query("SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'", [name])).length > 0,
    `${name}: streaming from the primary`,
    30_000,
  );
  if (primary.synchronousStandby) {
    await primary.query(`ALTER SYSTEM SET synchronous_standby_names = '${name}'`);
    await primary.query("ALTER SYSTEM SET synchronous_commit = on");
    await primary.query("SELECT pg_reload_conf()");
    await waitFor(
      async () => (await primary.query("SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND sync_state = 'sync'", [name])).length > 0,
      `${name}: the primary's synchronous standby`,
    );
  }
  return standby;
}

/** A duetime store on a private server, for spawnServer: `duetime serve` migrates the schema into it on start. */
export function duetimeStore(server: PgInstance, schema = "duetime"): TestStore {
  return { url: server.url, options: { schema }, args: ["--store", server.url, "--schema", schema] };
}

/** Stops every private server this process started (immediate: nothing to keep) and removes their directories. */
export async function stopAll(): Promise<void> {
  for (const entry of [...live]) {
    live.delete(entry);
    if (entry.running()) await tool("pg_ctl", ["stop", "-w", "-D", join(entry.dir, "data"), "-m", "immediate"]).catch(() => {});
    rmSync(entry.dir, { recursive: true, force: true });
  }
}

// Best effort when a test dies before its stopAll: no server left behind on the machine.
process.on("exit", () => {
  for (const entry of live) {
    const args = ["stop", "-D", join(entry.dir, "data"), "-m", "immediate"];
    try {
      execFileSync(asRoot ? "runuser" : join(PG_BIN, "pg_ctl"), asRoot ? ["-u", "postgres", "--", join(PG_BIN, "pg_ctl"), ...args] : args, {
        stdio: "ignore",
      });
    } catch {}
    rmSync(entry.dir, { recursive: true, force: true });
  }
});
