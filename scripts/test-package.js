#!/usr/bin/env node
// The packages as a user gets them: `npm pack` of duetime and @duetime/sdk,
// then the tarballs installed into a fresh project that has neither tsx nor
// TypeScript, and used there on plain Node: import duetime/sdk, run a job
// through an embedded engine and a worker, run the installed `duetime
// --help`; then a consumer file type-checked under strict nodenext settings
// with skipLibCheck off (and a wrong call that must not compile). Then the
// SDK's tarball alone in another fresh project: no native module and no
// server framework installed, and its client and worker import on plain
// Node. Installs with --engine-strict, so a dependency that refuses this Node
// fails the run. Prints TAP-like lines and exits non-zero on the first failure.
//
//   npm run test:package            (builds first; needs the npm registry or its cache)

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("..", import.meta.url).pathname;
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
const NODE_TYPES = join(ROOT, "node_modules/@types");
const work = mkdtempSync(join(tmpdir(), "duetime-package-"));
let step = 0;

function ok(what) {
  console.log(`ok ${++step} - ${what}`);
}

function fail(what, detail) {
  console.log(`not ok ${++step} - ${what}`);
  if (detail) console.log(detail.replace(/^/gm, "#   "));
  process.exitCode = 1;
  throw new Error(what);
}

/** Median of 10 cold imports of `specifier` in fresh Node processes in `cwd`, in ms (a measurement, not a check). */
function coldImportMs(specifier, cwd) {
  const times = [];
  for (let i = 0; i < 10; i++) {
    const r = spawnSync(
      "node",
      ["--input-type=module", "-e", `const t = performance.now(); await import(${JSON.stringify(specifier)}); console.log(performance.now() - t);`],
      { cwd, encoding: "utf8" },
    );
    if (r.status !== 0) fail(`import ${specifier}`, r.stderr);
    times.push(Number(r.stdout.trim()));
  }
  times.sort((a, b) => a - b);
  return ((times[4] + times[5]) / 2).toFixed(1);
}

/** Runs a command; its output is kept, and shown only when it fails. */
function sh(what, cmd, args, cwd, expectFailure = false) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", env: { ...process.env, npm_config_fund: "false", npm_config_audit: "false" } });
  const failed = r.status !== 0;
  if (failed !== expectFailure) fail(what, `${cmd} ${args.join(" ")} exited ${r.status}\n${r.stdout}\n${r.stderr}`);
  ok(what);
  return r.stdout;
}

const CONSUMER_JS = `
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const sdk = await import("duetime/sdk");
for (const name of ["DuetimeClient", "Worker", "verifySignature", "DuetimeApiError"]) assert.equal(typeof sdk[name], "function", name);

const { createDuetime } = await import("duetime/embedded");
const dir = mkdtempSync(join(tmpdir(), "duetime-consumer-"));
const duetime = await createDuetime({ store: "sqlite:" + join(dir, "jobs.db") });
const job = await duetime.client.createJob({ name: "hello", target: { type: "queue", pool: "mail" }, payload: { to: "ada" }, schedule: { delaySeconds: 0 } });
let seen;
const ran = new Promise((resolve) => {
  const worker = duetime.worker({ pool: "mail", waitSeconds: 1, handler: async (j) => { seen = j.payload; resolve(); return { sent: true }; } });
  void worker.run();
});
await ran;
await duetime.stop();
assert.deepEqual(seen, { to: "ada" });
console.log("ran " + job.jobId);

const { createTestEnvironment } = await import("duetime/testing");
const env = await createTestEnvironment({ start: "2027-01-01T00:00:00Z" });
const at = [];
env.worker({ pool: "kit", handler: async () => void at.push(env.now().toISOString()) });
await env.client.createJob({ name: "later", target: { type: "queue", pool: "kit" }, schedule: { delaySeconds: 3600 } });
await env.advance(3600_000);
await env.close();
assert.deepEqual(at, ["2027-01-01T01:00:00.000Z"]);
`;

const CONSUMER_TS = `
import { DuetimeClient, Worker, verifySignature, type LeasedExecution } from "duetime/sdk";
import { createDuetime } from "duetime/embedded";
import { startServer } from "duetime/server";
import { createTestEnvironment } from "duetime/testing";

const client = new DuetimeClient({ url: "http://127.0.0.1:8080" });
const handler = async (job: LeasedExecution): Promise<{ ok: boolean }> => ({ ok: job.attempt > 0 });
const worker = new Worker({ url: "http://127.0.0.1:8080", pool: "mail", handler });
const valid: boolean = verifySignature({ secret: "s", headers: { "duetime-timestamp": "1" }, body: "{}" });
export async function main(): Promise<void> {
  const duetime = await createDuetime({ store: "sqlite:jobs.db" });
  await duetime.client.createJob({ name: "x", target: { type: "queue", pool: "mail" }, schedule: { delaySeconds: 5 } });
  await duetime.stop();
  await client.close();
  await worker.shutdown();
  void valid;
  void startServer;
  const env = await createTestEnvironment({ start: "2027-01-01T00:00:00Z" });
  await env.advance(1_000);
  await env.close();
}
`;

const WRONG_TS = `
import { Worker } from "duetime/sdk";
// pool must be a string: this must not compile.
new Worker({ url: "http://127.0.0.1:8080", pool: 42, handler: async () => undefined });
`;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: "nodenext",
    moduleResolution: "nodenext",
    target: "es2022",
    skipLibCheck: false,
    noEmit: true,
    exactOptionalPropertyTypes: true,
    typeRoots: [NODE_TYPES],
    types: ["node"],
  },
};

try {
  sh("npm run build", "npm", ["run", "build", "--silent"], ROOT);
  const pack = (what, args) => JSON.parse(sh(what, "npm", ["pack", "--json", "--pack-destination", work, ...args], ROOT))[0];
  const sdkPacked = pack("npm pack @duetime/sdk", ["--workspace", "@duetime/sdk"]);
  const packed = pack("npm pack duetime", []);
  for (const p of [sdkPacked, packed]) {
    console.log(`# tarball ${p.filename}: ${p.entryCount} files, ${p.size} bytes packed, ${p.unpackedSize} bytes unpacked`);
    // duetime ships its testing kit (dist/testing); the SDK's test helpers (its src/testing) are never built into it.
    const notShipped = p === sdkPacked ? /(^|\/)(test|testing|bench|scripts|src)\// : /(^|\/)(test|bench|scripts|\.ci|src|packages|examples)\//;
    const leaked = p.files.map((f) => f.path).filter((path) => notShipped.test(path) || /\.test\.|\.tsbuildinfo$/.test(path));
    if (leaked.length) fail(`${p.name}'s tarball holds no tests, bench, scripts or sources`, leaked.join("\n"));
    ok(`${p.name}'s tarball holds no tests, bench, scripts or sources`);
    if (p === packed) {
      // The dashboard is built into the package (served by duetime serve; no CDN).
      const paths = p.files.map((f) => f.path);
      if (!paths.includes("dist/dashboard/index.html") || !paths.some((path) => /^dist\/dashboard\/assets\/[^/]+\.js$/.test(path)))
        fail("duetime's tarball holds the built dashboard (dist/dashboard)", paths.filter((path) => path.startsWith("dist/dashboard")).join("\n"));
      ok("duetime's tarball holds the built dashboard (dist/dashboard)");
    }
  }
  const tarballs = [join(work, sdkPacked.filename), join(work, packed.filename)];

  const app = join(work, "app");
  spawnSync("mkdir", ["-p", app]);
  // What a consumer writes: the SQLite driver's build approved (README, "Use it from your project").
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module", allowScripts: { "better-sqlite3": true } }, null, 2),
  );
  const t0 = Date.now();
  sh("the tarballs install with --engine-strict on this Node", "npm", ["install", "--engine-strict", "--prefer-offline", ...tarballs], app);
  console.log(`# install took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const installed = JSON.parse(readFileSync(join(app, "node_modules/duetime/package.json"), "utf8"));
  for (const dev of ["tsx", "typescript"]) {
    if (spawnSync("node", ["-e", `require.resolve("${dev}")`], { cwd: app }).status === 0) fail(`${dev} is not installed for the consumer`);
  }
  ok(`duetime ${installed.version} installed without tsx or TypeScript`);

  writeFileSync(join(app, "consumer.mjs"), CONSUMER_JS);
  sh(
    "plain Node: duetime/sdk imports, an embedded engine runs a job through a worker, duetime/testing runs one on fake time",
    "node",
    ["consumer.mjs"],
    app,
  );
  console.log(
    `# cold import("duetime/sdk"): ${coldImportMs("duetime/sdk", app)} ms, import("duetime"): ${coldImportMs("duetime", app)} ms (median of 10)`,
  );
  const help = sh("the installed `duetime --help` exits 0", join(app, "node_modules/.bin/duetime"), ["--help"], app);
  if (!/serve/.test(help)) fail("`duetime --help` lists the serve command", help);
  ok("`duetime --help` lists the serve command");

  writeFileSync(join(app, "tsconfig.json"), JSON.stringify({ ...TSCONFIG, files: ["consumer.ts"] }, null, 2));
  writeFileSync(join(app, "consumer.ts"), CONSUMER_TS);
  sh("a consumer type-checks: strict, nodenext, exactOptionalPropertyTypes, skipLibCheck off", "node", [TSC, "-p", "tsconfig.json"], app);
  writeFileSync(join(app, "tsconfig.wrong.json"), JSON.stringify({ ...TSCONFIG, files: ["wrong.ts"] }, null, 2));
  writeFileSync(join(app, "wrong.ts"), WRONG_TS);
  const wrong = sh("a wrong call does not compile", "node", [TSC, "-p", "tsconfig.wrong.json"], app, true);
  if (!/wrong\.ts\(4,[0-9]+\): error TS2322: Type 'number' is not assignable to type 'string'/.test(wrong))
    fail("the compile error is the wrong pool", wrong);
  ok("the compile error is the wrong pool");

  const light = join(work, "worker-only");
  spawnSync("mkdir", ["-p", light]);
  writeFileSync(join(light, "package.json"), JSON.stringify({ name: "worker-only", private: true, type: "module" }, null, 2));
  const t1 = Date.now();
  sh("@duetime/sdk alone installs with --engine-strict", "npm", ["install", "--engine-strict", "--prefer-offline", tarballs[0]], light);
  console.log(`# SDK install took ${((Date.now() - t1) / 1000).toFixed(1)} s`);
  const tree = sh("npm ls --all --parseable", "npm", ["ls", "--all", "--parseable"], light);
  const heavy = tree
    .split("\n")
    .filter((p) => /node_modules\/(better-sqlite3|pg|fastify|pino|prom-client|node-gyp|prebuild-install|bindings)$/.test(p));
  if (heavy.length) fail("the SDK pulls no native module and no server framework", heavy.join("\n"));
  ok(`the SDK pulls no native module and no server framework (${tree.trim().split("\n").length - 1} packages)`);
  writeFileSync(
    join(light, "worker.mjs"),
    `
import assert from "node:assert/strict";
import { DuetimeClient, Worker, verifySignature } from "@duetime/sdk";
const client = new DuetimeClient({ url: "http://127.0.0.1:9" });
const worker = new Worker({ url: "http://127.0.0.1:9", pool: "p", handleSignals: false, handler: async () => undefined });
assert.equal(typeof verifySignature, "function");
await worker.shutdown();
await client.close();
console.log("imported");
`,
  );
  sh("plain Node: @duetime/sdk's client and worker import and construct", "node", ["worker.mjs"], light);
  console.log(`# cold import("@duetime/sdk"), installed alone: ${coldImportMs("@duetime/sdk", light)} ms (median of 10)`);
} catch (error) {
  if (!process.exitCode) {
    console.log(`not ok ${++step} - ${String(error)}`);
    process.exitCode = 1;
  }
} finally {
  rmSync(work, { recursive: true, force: true });
  console.log(`1..${step}`);
}
