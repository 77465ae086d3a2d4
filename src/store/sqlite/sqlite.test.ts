// Runs the store conformance suite (test/store-contract/) against the SQLite
// driver, each test on a fresh database file in its own temporary directory;
// a pair is two connections on one file.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";

import { storeContract } from "../../../test/store-contract/index.js";
import { openSqliteStore } from "./index.js";

const dirs: string[] = [];

after(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function freshPath(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "duetime-sqlite-"));
  dirs.push(dir);
  return join(dir, "duetime.db");
}

storeContract(
  "sqlite",
  async () => openSqliteStore({ path: await freshPath() }),
  async () => {
    const path = await freshPath();
    const first = await openSqliteStore({ path });
    return [first, await openSqliteStore({ path })];
  },
);
