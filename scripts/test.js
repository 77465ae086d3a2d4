#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's own test runner.
// Node 20's --test does not expand globs, so the files are listed here.
// Extra arguments are passed through (e.g. a file path, or --test-name-pattern).

import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

function find(dir) {
  let out = [];
  let entries = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory() && e.name !== "node_modules") out = out.concat(find(path));
    else if (e.isFile() && e.name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const args = process.argv.slice(2);
const explicit = args.filter((a) => !a.startsWith("-"));
const flags = args.filter((a) => a.startsWith("-"));
const files = explicit.length > 0 ? explicit : [...find("src"), ...find("test")].sort();
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", "--test-concurrency=2", "--test-timeout=180000", ...flags, ...files],
  { stdio: "inherit" },
);
process.exit(result.status ?? 1);
