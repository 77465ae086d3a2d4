// `duetime migrate` and the store flags it shares with serve: parsing, and a
// real run on a fresh SQLite file (the PostgreSQL run is in
// src/store/postgres/migrate.test.ts).

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { UsageError } from "./args.js";
import { main, parseCommand } from "./main.js";
import { captureIo } from "./test-support.js";

const usageError = (argv: string[], pattern: RegExp, env: Record<string, string> = {}): void => {
  assert.throws(
    () => parseCommand(argv, env),
    (err: unknown) => err instanceof UsageError && pattern.test(err.message),
    `${argv.join(" ")} should fail with ${pattern}`,
  );
};

describe("CLI parsing: the store flags (migrate and serve)", () => {
  test("migrate takes --store, --schema, --pool-size and --json, from flags or the environment", () => {
    assert.deepEqual(parseCommand(["migrate"], {}), { command: "migrate", store: { url: "sqlite:./duetime.db", options: {} }, json: false });
    const env = { DUETIME_STORE: "postgres://duetime@db:5432/app", DUETIME_SCHEMA: "jobs_eu", DUETIME_POOL_SIZE: "20" };
    assert.deepEqual(parseCommand(["migrate", "--json"], env), {
      command: "migrate",
      store: { url: "postgres://duetime@db:5432/app", options: { schema: "jobs_eu", poolSize: 20 } },
      json: true,
    });
    const flags = parseCommand(["migrate", "--schema", "other", "--pool-size", "3"], env);
    assert.ok(flags.command === "migrate");
    assert.deepEqual(flags.store.options, { schema: "other", poolSize: 3 });
  });

  test("serve passes the schema and pool size on to the store", () => {
    const cmd = parseCommand(["serve", "--store", "postgresql://db/app", "--schema", "duetime_blue", "--pool-size", "50"], {});
    assert.ok(cmd.command === "serve");
    assert.deepEqual(cmd.options.storeOptions, { schema: "duetime_blue", poolSize: 50 });
    const plain = parseCommand(["serve"], {});
    assert.ok(plain.command === "serve");
    assert.equal(plain.options.storeOptions, undefined);
  });

  test("serve takes a read replica and its lag bound, only with a PostgreSQL store", () => {
    const cmd = parseCommand(
      ["serve", "--store", "postgres://primary/app", "--read-store", "postgres://replica/app", "--read-store-max-lag", "30s"],
      {},
    );
    assert.ok(cmd.command === "serve");
    assert.equal(cmd.options.readStore, "postgres://replica/app");
    assert.equal(cmd.options.readStoreMaxLagSeconds, 30);
    const env = parseCommand(["serve"], { DUETIME_STORE: "postgres://p/a", DUETIME_READ_STORE: "postgresql://r/a" });
    assert.ok(env.command === "serve");
    assert.equal(env.options.readStore, "postgresql://r/a");
    usageError(["serve", "--read-store", "postgres://r/a"], /--read-store: a read replica needs a PostgreSQL --store/);
    usageError(["serve", "--store", "postgres://p/a", "--read-store", "sqlite:x.db"], /--read-store: expected postgres:\/\//);
    usageError(["serve", "--store", "postgres://p/a", "--read-store-max-lag", "5s"], /--read-store-max-lag: only applies with --read-store/);
    usageError(
      ["serve", "--store", "postgres://p/a", "--read-store", "postgres://r/a", "--read-store-max-lag", "0"],
      /--read-store-max-lag: expected a duration from 1s to 1h/,
    );
    usageError(
      ["serve", "--store", "postgres://p/a", "--read-store", "postgres://r/a", "--read-store-max-lag", "2h"],
      /--read-store-max-lag: expected a duration/,
    );
  });

  test("refuses a bad schema or pool size, and either on SQLite, naming the flag", () => {
    for (const command of ["migrate", "serve"]) {
      usageError([command, "--store", "postgres://db/app", "--schema", "Duetime"], /--schema: expected 1 to 63 lower-case letters/);
      usageError([command, "--store", "postgres://db/app", "--schema", "1abc"], /--schema: expected/);
      usageError([command, "--store", "postgres://db/app", "--schema", "a".repeat(64)], /--schema: expected/);
      usageError([command, "--store", "postgres://db/app", "--schema", 'x"; drop'], /--schema: expected/);
      usageError([command, "--store", "postgres://db/app"], /DUETIME_SCHEMA: expected/, { DUETIME_SCHEMA: "a-b" });
      usageError([command, "--schema", "jobs"], /--schema: only a PostgreSQL store has schemas/);
      usageError([command, "--store", "postgres://db/app", "--pool-size", "0"], /--pool-size: must be between 1 and 1000/);
      usageError([command, "--pool-size", "5"], /--pool-size: only a PostgreSQL store/);
      usageError([command, "--store", "mysql://x"], /--store: expected sqlite:PATH or postgres/);
    }
    usageError(["migrate", "extra"], /unexpected argument "extra"/);
  });

  test("--help explains migrate", () => {
    const cmd = parseCommand(["migrate", "--help"], {});
    assert.ok(cmd.command === "help");
    assert.match(cmd.text, /Usage: duetime migrate/);
    assert.match(cmd.text, /advisory lock/);
  });
});

describe("duetime migrate on SQLite", () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  test("a fresh file gets every migration once; a second run applies none", async () => {
    const dir = await mkdtemp(join(tmpdir(), "duetime-migrate-"));
    dirs.push(dir);
    const store = `sqlite:${join(dir, "m.db")}`;
    const first = captureIo();
    assert.equal(await main(["migrate", "--store", store, "--json"], first), 0, first.err);
    const applied = JSON.parse(first.out) as { applied: number[]; version: number };
    assert.ok(applied.applied.length >= 5, first.out);
    assert.deepEqual(
      applied.applied,
      [...applied.applied].sort((a, b) => a - b),
    );
    assert.equal(applied.version, applied.applied.at(-1));
    const second = captureIo();
    assert.equal(await main(["migrate", "--store", store], second), 0, second.err);
    assert.equal(second.out, `${store}: already current; at version ${applied.version}\n`);
  });

  test("a store that cannot be opened exits 1 with the reason", async () => {
    const io = captureIo();
    assert.equal(await main(["migrate", "--store", "sqlite:/nonexistent-dir/x/y.db"], io), 1);
    assert.match(io.err, /^error: /);
  });
});
