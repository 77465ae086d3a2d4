// The SDK imports only src/core: loading it must not pull in a database
// driver, the engine, the store, the server or the CLI. A child process
// imports the module with a resolve hook that reports every module URL it
// loads (and we also look at the CommonJS cache); a control run importing
// better-sqlite3 itself shows the detector really catches the driver.

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
try { await import(process.env.TARGET); } catch (err) { seen.push("import-error:" + err.message); }
await import("data:text/javascript,export default 'duetime-marker'");
await marker;
port1.close();
const cjs = Object.keys(createRequire(import.meta.url).cache);
process.stdout.write(JSON.stringify([...seen, ...cjs]));
`;

async function modulesLoadedBy(target: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", CHILD], {
    cwd: ROOT,
    env: { ...process.env, HOOKS, TARGET: target },
    timeout: 60_000,
  });
  return JSON.parse(stdout) as string[];
}

const FORBIDDEN = [
  /node_modules\/(better-sqlite3|pg|postgres|fastify|pino|prom-client)\//,
  /\/src\/(engine|store|server|cli)\//,
];

test("importing the SDK loads no database driver, engine, store, server or CLI", async () => {
  const loaded = await modulesLoadedBy(new URL("src/sdk/index.ts", `file://${ROOT}/`).href);
  assert.ok(loaded.some((u) => u.endsWith("/src/sdk/worker.ts")), `the detector saw the SDK: ${loaded.join("\n")}`);
  assert.ok(loaded.some((u) => u.endsWith("/src/core/api.ts")));
  assert.ok(!loaded.some((u) => u.startsWith("import-error:")), loaded.join("\n"));
  const bad = loaded.filter((u) => FORBIDDEN.some((p) => p.test(u)));
  assert.deepEqual(bad, []);
});

test("control: the detector catches better-sqlite3 when it is imported", async () => {
  const loaded = await modulesLoadedBy("better-sqlite3");
  assert.ok(loaded.some((u) => FORBIDDEN[0]!.test(u)), loaded.join("\n"));
});
