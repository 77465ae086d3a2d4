// Shared test helpers: a real server on an ephemeral loopback port with its
// own store, and waiting on conditions instead of sleeping.
//
// The store: a SQLite file in the test's directory, or, with
// DUETIME_TEST_STORE=postgres (npm test runs the end-to-end files both
// ways), a fresh schema of its own in the test PostgreSQL database.

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type RequestListener } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type RunningServer, type ServerOptions } from "../src/server/index.js";
import { DuetimeApiError, DuetimeClient } from "@duetime/sdk";
import type { StoreOptions } from "../src/store/factory.js";
import { freshPostgresSchema } from "../src/store/postgres/test-support.js";

/** Which store the end-to-end tests use. */
export const TEST_STORE_KIND: "sqlite" | "postgres" = process.env.DUETIME_TEST_STORE === "postgres" ? "postgres" : "sqlite";

/** A store for one test: a file in `dir`, or a schema of its own (dropped when the file's tests end). */
export interface TestStore {
  url: string;
  options: StoreOptions;
  /** The `duetime serve` flags that name it. */
  args: string[];
}

/** The startServer options that open it. */
export const serverStore = (store: TestStore): Pick<ServerOptions, "store" | "storeOptions"> => ({ store: store.url, storeOptions: store.options });

export function testStore(dir: string): TestStore {
  if (TEST_STORE_KIND === "postgres") {
    const { url, schema } = freshPostgresSchema();
    return { url, options: { schema }, args: ["--store", url, "--schema", schema] };
  }
  const url = `sqlite:${join(dir, "duetime.db")}`;
  return { url, options: {}, args: ["--store", url] };
}

export interface TestServer {
  server: RunningServer;
  url: string;
  client: DuetimeClient;
  dir: string;
  close(): Promise<void>;
}

export async function startTestServer(options: Partial<ServerOptions> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-it-"));
  const store = testStore(dir);
  const server = await startServer({
    host: "127.0.0.1",
    port: 0,
    store: store.url,
    storeOptions: store.options,
    logLevel: "silent",
    ...options,
  });
  const client = new DuetimeClient({ url: server.url, retries: 0 });
  return {
    server,
    url: server.url,
    client,
    dir,
    async close() {
      await client.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls until check() returns a truthy value; fails with the message after timeoutMs. */
export async function waitFor<T>(check: () => Promise<T> | T, message: string, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${message}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Serves `handler` on an ephemeral loopback port (a test's receiver): its base URL, and a close that drops kept-alive connections too. */
export async function listenOnLoopback(handler: RequestListener): Promise<{ base: string; close: () => Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/** API clients of a test server, one per token, closed together. */
export function clientsOf(t: Pick<TestServer, "url">) {
  const made: DuetimeClient[] = [];
  const as = (token: string) => {
    const c = new DuetimeClient({ url: t.url, token, retries: 0 });
    made.push(c);
    return c;
  };
  return { as, close: () => Promise.all(made.map((c) => c.close())) };
}

export const queueJob = (pool: string, extra: Record<string, unknown> = {}) => ({
  name: "test-job",
  target: { type: "queue" as const, pool },
  payload: { hello: "world" },
  schedule: { delaySeconds: 0 },
  ...extra,
});

const BIN = new URL("../bin/duetime.js", import.meta.url).pathname;

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  /** SIGTERM (a clean stop) or SIGKILL (a crash); resolves when the process is gone. */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<void>;
}

/**
 * `duetime serve` as a child process on an ephemeral port; resolves once it
 * listens. A launcher runs it through another command (["sh", "-c", script]
 * gets node's path as $0 and the rest as "$@").
 */
export async function spawnServer(store: TestStore, extraArgs: string[] = [], launcher: string[] = []): Promise<ServerProcess> {
  const argv = [process.execPath, BIN, "serve", "--port", "0", ...store.args, "--log-level", "warn", ...extraArgs];
  const [command, ...args] = [...launcher, ...argv] as [string, ...string[]];
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = /http:\/\/[^\s]+/.exec(out);
      if (m) resolve(m[0]);
    });
    child.once("exit", (code) => reject(new Error(`duetime serve exited early with ${code}`)));
  });
  return {
    child,
    url,
    async stop(signal = "SIGTERM") {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once("exit", r));
      child.kill(signal);
      await gone;
    },
  };
}

/** The DuetimeApiError a call fails with; fails the test when the call succeeds or fails otherwise. */
export async function apiError(promise: Promise<unknown>): Promise<DuetimeApiError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof DuetimeApiError) return err;
    throw err;
  }
  assert.fail("expected the call to fail");
}
