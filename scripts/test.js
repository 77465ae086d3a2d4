#!/usr/bin/env node
// Runs every *.test.ts under src/, packages/, examples/ and test/ with node's own test runner, then
// the end-to-end files (test/*.test.ts) once more against PostgreSQL
// (DUETIME_TEST_STORE=postgres: each server on a fresh schema), so the
// server is checked end to end on both stores. Node 20's --test does not
// expand globs, so the files are listed here. Extra arguments are passed
// through (a file path runs that file once, on the store DUETIME_TEST_STORE
// names; flags such as --test-name-pattern go to the runner).
//
// Without a PostgreSQL server the second pass fails with CI=true, and is
// skipped with a loud message elsewhere.
//
// The tests import src/ through tsx, but the processes they start run
// bin/duetime.js, which runs the compiled dist/: so dist/ is built first.

import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";

/** End-to-end files that are about SQLite itself (a full disk on a file, the embedded file store). */
const SQLITE_ONLY = new Set(["test/store-full.test.ts", "test/embedded.test.ts", "test/power-loss.test.ts"]);

function find(dir, deep = true) {
  let out = [];
  let entries = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory() && e.name !== "node_modules") out = deep ? out.concat(find(path)) : out;
    else if (e.isFile() && e.name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

/** The runner's closing counts, summed over the passes, so the last lines tell the whole run. */
const totals = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };

/** Runs the files in one node --test process, its output passed through; resolves to its exit code. */
function run(files, flags, env = process.env) {
  const child = spawn(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=2", "--test-timeout=180000", ...flags, ...files], {
    stdio: ["inherit", "pipe", "inherit"],
    env,
  });
  let tail = "";
  child.stdout.on("data", (chunk) => {
    process.stdout.write(chunk);
    const lines = (tail + chunk.toString()).split("\n");
    tail = lines.pop() ?? "";
    for (const line of lines) {
      const m = /^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$/.exec(line);
      if (m) totals[m[1]] += Number(m[2]);
    }
  });
  return new Promise((resolve) => child.once("close", (code) => resolve(code ?? 1)));
}

function printTotals() {
  console.log(`\n# all passes together`);
  for (const [name, n] of Object.entries(totals)) console.log(`# ${name} ${n}`);
}

/** Whether something listens where the tests' PostgreSQL should be. */
function postgresListening() {
  const url = new URL(process.env.DUETIME_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test");
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname, port: Number(url.port || 5432) });
    socket.setTimeout(3000);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** Builds both packages (npm run build); resolves to its exit code. */
function build() {
  const npm = spawn(process.platform === "win32" ? "npm.cmd" : "npm", ["run", "build", "--silent"], { stdio: "inherit" });
  return new Promise((resolve) => npm.once("close", (code) => resolve(code ?? 1)));
}

const built = await build();
if (built !== 0) {
  process.stderr.write("npm test: the build (npm run build) failed; no test ran\n");
  process.exit(built);
}

const args = process.argv.slice(2);
const explicit = args.filter((a) => !a.startsWith("-"));
const flags = args.filter((a) => a.startsWith("-"));
if (explicit.length > 0) process.exit(await run(explicit, flags));

const first = await run([...find("src"), ...find("packages"), ...find("examples"), ...find("test")].sort(), flags);
const endToEnd = find("test", false)
  .filter((f) => !SQLITE_ONLY.has(f))
  .sort();
if (!(await postgresListening()) && process.env.CI !== "true") {
  const bar = "!".repeat(78);
  process.stderr.write(
    `\n${bar}\n!! SKIPPED: the end-to-end tests on PostgreSQL (nothing listens at DUETIME_TEST_PG_URL or 127.0.0.1:5432).\n!! Start PostgreSQL to run them; with CI=true they fail instead.\n${bar}\n\n`,
  );
  printTotals();
  process.exit(first);
}
console.log(`\n# end-to-end tests again, on PostgreSQL: ${endToEnd.join(" ")}\n`);
const second = await run(endToEnd, flags, { ...process.env, DUETIME_TEST_STORE: "postgres" });
printTotals();
process.exit(first !== 0 ? first : second);
