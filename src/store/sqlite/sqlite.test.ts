// Runs the store conformance suite (../contract.ts) against the SQLite driver,
// each test on a fresh database file in its own temporary directory.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";

import { storeContract } from "../contract.js";
import { openSqliteStore } from "./index.js";

const dirs: string[] = [];

after(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

storeContract("sqlite", async () => {
  const dir = await mkdtemp(join(tmpdir(), "duetime-sqlite-"));
  dirs.push(dir);
  return openSqliteStore({ path: join(dir, "duetime.db") });
});
