// Test support for Redis: the shared server at DUETIME_TEST_REDIS_URL
// (default 127.0.0.1:6379), each test under its own key prefix, deleted
// after (never FLUSHDB: the server is shared). Unreachable, the tests FAIL
// with CI=true and skip elsewhere, loudly. What must not touch the shared
// server (SCRIPT FLUSH, cluster mode, a server going away) runs on a private
// redis-server started on a free port: without the binary, those tests fail
// with CI=true too.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, type TestContext, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";

export const REDIS_URL = process.env.DUETIME_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const CI = process.env.CI === "true";

/** A call that hangs fails its test instead of the whole file. */
export const TEST_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------- harness

export async function unreachable(url: string): Promise<string | null> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 3_000 });
  let cause: Error | undefined; // the socket's error (ECONNREFUSED …), more telling than the rejection's
  probe.on("error", (error: Error) => (cause ??= error));
  try {
    await probe.connect();
    await probe.ping();
    return null;
  } catch (error) {
    return (cause ?? (error instanceof Error ? error : new Error(String(error)))).message;
  } finally {
    probe.disconnect();
  }
}

const sharedDown = await unreachable(REDIS_URL);
if (sharedDown !== null && !CI) {
  process.stderr.write(
    `\n${"!".repeat(78)}\n!! SKIPPED: Redis at ${REDIS_URL} is not reachable (${sharedDown}): its tests cannot run.\n!! Start Redis (or set DUETIME_TEST_REDIS_URL) to run them; CI=true fails instead.\n${"!".repeat(78)}\n\n`,
  );
}

/** The admin connection: setup and checks beside the client under test. */
let adminClient: Redis | undefined;
export function admin(): Redis {
  adminClient ??= new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
  return adminClient;
}
after(() => adminClient?.disconnect());

/** A test on the shared server: fails with CI=true when it is unreachable, else skips. */
export function redisTest(name: string, fn: (t: TestContext) => Promise<void>): void {
  if (sharedDown === null) test(name, { timeout: TEST_TIMEOUT_MS }, fn);
  else if (CI)
    test(name, () => {
      throw new Error(`Redis at ${REDIS_URL} is not reachable (${sharedDown}); CI=true requires it`);
    });
  else test(name, { skip: `Redis at ${REDIS_URL} not reachable` }, () => {});
}

let prefixes = 0;

/** A key prefix of this test's own (delete its keys after with deletePrefix). */
export function testPrefix(label: string): string {
  return `dt-test-${process.pid}-${label}-${++prefixes}:`;
}

export async function keysUnder(prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await admin().scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return found;
}

export async function deletePrefix(prefix: string): Promise<void> {
  const found = await keysUnder(prefix);
  if (found.length > 0) await admin().del(...found);
}

export const hasRedisServer = !spawnSync("redis-server", ["--version"]).error;
if (!hasRedisServer && !CI) process.stderr.write("\n!! SKIPPED: no redis-server binary: the tests that need a private Redis cannot run.\n\n");

/**
 * A test that starts its own redis-server (privateRedis), and whatever else
 * `needs` names (a tool it runs): fails with CI=true when one is missing,
 * else skips loudly.
 */
export function privateTest(
  name: string,
  fn: (t: TestContext) => Promise<void>,
  o: { timeoutMs?: number; needs?: { present: boolean; what: string } } = {},
): void {
  const missing = !hasRedisServer ? "the redis-server binary" : o.needs && !o.needs.present ? o.needs.what : null;
  if (missing === null) test(name, { timeout: o.timeoutMs ?? TEST_TIMEOUT_MS }, fn);
  else if (CI)
    test(name, () => {
      throw new Error(`${missing} is not available to start a private Redis test; CI=true requires it`);
    });
  else test(name, { skip: `${missing} is not available` }, () => {});
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** A throwaway redis-server on `port`, stopped (by its pid) after the test or by `stop`. */
export async function privateRedis(t: TestContext, port: number, extra: string[] = []): Promise<{ url: string; stop: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "dt-redis-"));
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extra];
  const child: ChildProcess = spawn("redis-server", args, { stdio: "ignore" });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
  };
  t.after(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 250; i++) {
    if ((await unreachable(url)) === null) return { url, stop };
    await sleep(20);
  }
  throw new Error(`private redis-server on ${port} did not start`);
}
