// The SDK (packages/sdk) imports nothing of the server: loading it, from its
// sources or built (as @duetime/sdk, or as this package's duetime/sdk), must
// not pull in a database driver, the engine, the store, the server or the CLI. The package entry
// (server and embedded mode) loads no driver until a store is opened, and
// opening one loads that driver only (store/factory.ts). A child process
// imports the module (and, given STORE, opens and closes that store) with a
// resolve hook that reports every module URL it loads (and we also look at
// the CommonJS cache); control runs importing better-sqlite3 and pg
// themselves show the detector really catches each driver.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { test } from "node:test";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const HOOKS = `
let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  port.postMessage(result.url);
  return result;
}`;

const CHILD = `
import { register, createRequire } from "node:module";
import { MessageChannel } from "node:worker_threads";
const { port1, port2 } = new MessageChannel();
const seen = [];
let markerSeen;
const marker = new Promise((resolve) => (markerSeen = resolve));
port1.on("message", (url) => { seen.push(url); if (url.includes("duetime-marker")) markerSeen(); });
register("data:text/javascript," + encodeURIComponent(process.env.HOOKS), { parentURL: import.meta.url, data: { port: port2 }, transferList: [port2] });
try {
  const mod = await import(process.env.TARGET);
  if (process.env.STORE) await (await mod.openStore(process.env.STORE)).close();
} catch (err) { seen.push("error:" + err.message); }
await import("data:text/javascript,export default 'duetime-marker'");
await marker;
port1.close();
const cjs = Object.keys(createRequire(import.meta.url).cache);
process.stdout.write(JSON.stringify([...seen, ...cjs]));
`;

/** Module URLs and CommonJS paths a fresh process loads importing `target` (and opening `store` with its openStore). */
async function modulesLoadedBy(target: string, store?: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", CHILD], {
    cwd: ROOT,
    env: { ...process.env, HOOKS, TARGET: target, ...(store !== undefined ? { STORE: store } : {}) },
    timeout: 60_000,
  });
  return JSON.parse(stdout) as string[];
}

const SQLITE_DRIVER = /node_modules\/better-sqlite3\//;
const PG_CLIENT = /node_modules\/(pg|pg-[a-z-]+|postgres)\//;
const FORBIDDEN = [SQLITE_DRIVER, PG_CLIENT, /node_modules\/(fastify|pino|prom-client)\//, /\/(src|dist)\/(engine|store|server|cli)\//];
const srcUrl = (path: string): string => new URL(path, `file://${ROOT}/`).href;

test("importing the SDK loads no database driver, engine, store, server or CLI", async () => {
  const loaded = await modulesLoadedBy(srcUrl("packages/sdk/src/index.ts"));
  assert.ok(
    loaded.some((u) => u.endsWith("/packages/sdk/src/worker.ts")),
    `the detector saw the SDK: ${loaded.join("\n")}`,
  );
  assert.ok(loaded.some((u) => u.endsWith("/packages/sdk/src/api.ts")));
  assert.ok(!loaded.some((u) => u.startsWith("error:")), loaded.join("\n"));
  const bad = loaded.filter((u) => FORBIDDEN.some((p) => p.test(u)));
  assert.deepEqual(bad, []);
});

for (const entry of ["duetime/sdk", "@duetime/sdk"]) {
  test(`the built import("${entry}") loads no database driver, engine, store, server or CLI`, async () => {
    const loaded = await modulesLoadedBy(entry);
    assert.ok(
      loaded.some((u) => u.endsWith("/packages/sdk/dist/worker.js")),
      `the detector saw the built SDK: ${loaded.join("\n")}`,
    );
    assert.ok(!loaded.some((u) => u.startsWith("error:")), loaded.join("\n"));
    assert.deepEqual(
      loaded.filter((u) => FORBIDDEN.some((p) => p.test(u))),
      [],
    );
  });
}

test('the built import("duetime") (server and embedded mode) loads no database driver until a store is opened', async () => {
  const loaded = await modulesLoadedBy("duetime");
  assert.ok(
    loaded.some((u) => u.endsWith("/dist/server/index.js")),
    `the detector saw the server: ${loaded.join("\n")}`,
  );
  assert.ok(!loaded.some((u) => u.startsWith("error:")), loaded.join("\n"));
  assert.deepEqual(
    loaded.filter((u) => SQLITE_DRIVER.test(u) || PG_CLIENT.test(u)),
    [],
  );
});

test("opening a sqlite: store loads better-sqlite3 and no PostgreSQL client", async () => {
  const loaded = await modulesLoadedBy(srcUrl("src/store/factory.ts"), "sqlite::memory:");
  assert.ok(!loaded.some((u) => u.startsWith("error:")), loaded.join("\n"));
  assert.ok(
    loaded.some((u) => SQLITE_DRIVER.test(u)),
    `the store opened: ${loaded.join("\n")}`,
  );
  assert.deepEqual(
    loaded.filter((u) => PG_CLIENT.test(u)),
    [],
  );
});

test("opening a postgres:// store loads pg and not better-sqlite3", async () => {
  // A closed port: the driver loads, tries to connect and answers a store fault; no server is needed.
  const loaded = await modulesLoadedBy(srcUrl("src/store/factory.ts"), "postgres://postgres@127.0.0.1:1/test");
  assert.ok(
    loaded.some((u) => u.startsWith("error:") && u.includes("cannot serve")),
    loaded.join("\n"),
  );
  assert.ok(
    loaded.some((u) => /node_modules\/pg\//.test(u)),
    `the driver loaded pg: ${loaded.join("\n")}`,
  );
  assert.deepEqual(
    loaded.filter((u) => SQLITE_DRIVER.test(u)),
    [],
  );
});

for (const [driver, pattern] of [
  ["better-sqlite3", SQLITE_DRIVER],
  ["pg", PG_CLIENT],
] as const) {
  test(`control: the detector catches ${driver} when it is imported`, async () => {
    const loaded = await modulesLoadedBy(driver);
    assert.ok(
      loaded.some((u) => pattern.test(u)),
      loaded.join("\n"),
    );
  });
}
