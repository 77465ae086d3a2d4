// The durability boundary on SQLite (store.ts Durability). A power loss
// leaves the files as of the last flush: what a FULL commit synced, never
// the NORMAL commits after it. The tests make that state by copying the
// database and its WAL right after a flush (better-sqlite3 is synchronous:
// between calls nothing is half written), then opening the copy as the
// recovered store.

import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import Database from "better-sqlite3";

import { newId, shardOf } from "../../core/ids.js";
import type { Durability, NewJob, Store } from "../store.js";
import { FLUSH_BOUND_MS } from "../store.js";
import { SqliteDb } from "./db.js";
import { openSqliteStore } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-durability-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshPath = (): string => join(dir, `store-${++files}.db`);

const T0 = Date.parse("2026-12-05T12:00:00Z");

function oneOff(name: string): NewJob {
  const jobId = newId(T0);
  return {
    job: {
      tenantId: "t1",
      jobId,
      shard: shardOf(jobId),
      kind: "once",
      name,
      state: "SCHEDULED",
      target: { type: "queue", pool: "p1" },
      payload: null,
      schedule: { runAt: new Date(T0).toISOString() } as NewJob["job"]["schedule"],
      retry: { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 3600 },
      timeoutSeconds: 60,
      priority: 0,
      mode: "live",
      createdAt: T0,
    },
    due: null,
    execution: { scheduledFor: T0, dueAt: T0 },
  };
}

async function create(store: Store, ...names: string[]): Promise<void> {
  await store.jobCreateMany({ jobs: names.map(oneOff), nodeId: "n1", now: T0 });
}

const lease = (store: Store, max = 1) => store.executionLease({ pool: "p1", workerId: "w1", max, leaseMs: 30_000, now: T0 + 1 });

/** The files a power loss would leave now: the database and its WAL as last synced (call right after a FULL commit). */
function powerLossCopy(path: string): string {
  const copy = freshPath();
  copyFileSync(path, copy);
  if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
  return copy;
}

const flushedAt = (path: string): number | null => {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare("SELECT flushed_at FROM store_meta").get() as { flushed_at: number | null }).flushed_at;
  } finally {
    db.close();
  }
};

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("SQLite durability", () => {
  test("every handle grants under a new incarnation: a token after a reopen differs from every token before it", async () => {
    const path = freshPath();
    const seen = new Set<string>();
    for (let open = 0; open < 5; open++) {
      const store = await openSqliteStore({ path });
      await create(store, `job-${open}-a`, `job-${open}-b`);
      const granted = await lease(store, 2);
      assert.equal(granted.length, 2);
      const tokens = new Set(granted.map((g) => g.leaseToken));
      assert.equal(tokens.size, 1, "one handle, one incarnation");
      const [token] = tokens;
      assert.ok(token !== undefined && !seen.has(token), `token ${token} is new`);
      seen.add(token);
      await store.close();
    }
  });

  test("a grant lost in a power loss and made again refuses the token from before it, and records the possible duplicate", async () => {
    const path = freshPath();
    const survivor = await openSqliteStore({ path });
    await create(survivor, "warm-up");
    // The handle's first grant takes its incarnation in a FULL commit: a power loss from here on keeps it.
    assert.equal((await lease(survivor, 1)).length, 1);
    // The create is an accepted write, on disk when it answers; the power loss comes after it and takes the grant below (NORMAL, not yet flushed).
    await create(survivor, "x");
    const disk = powerLossCopy(path);
    const [first] = await lease(survivor, 1);
    assert.ok(first?.leaseToken);
    // The store restarts on what the disk held: the grant is gone, its worker (still running elsewhere) holds its token.
    const recovered = await openSqliteStore({ path: disk });
    const again = (await lease(recovered, 10)).find((g) => g.executionId === first.executionId);
    assert.ok(again, "the lost grant's execution is leased again");
    assert.equal(again.attempt, first.attempt, "the same attempt number, granted twice");
    assert.notEqual(again.leaseToken, first.leaseToken, "under another token");

    const stale = { executionId: first.executionId, tenantId: "t1", attempt: first.attempt, leaseToken: first.leaseToken };
    assert.equal((await recovered.executionHeartbeat({ ...stale, now: T0 + 2 })).status, "lost");
    const [completed] = await recovered.executionCompleteMany({ items: [stale], now: T0 + 2 });
    assert.equal(completed?.status, "lost");
    const [failed] = await recovered.executionFailMany({
      items: [{ ...stale, error: { message: "stale" }, jitter: 0 }],
      now: T0 + 2,
    });
    assert.equal(failed?.status, "lost");
    const duplicates = await recovered.executionPossibleDuplicates({ tenantId: "t1", limit: 10 });
    assert.deepEqual(
      duplicates.map((d) => [d.executionId, d.duplicateAttempt, d.reason]),
      [[first.executionId, first.attempt, "lease_lost"]],
    );

    const holder = { ...stale, leaseToken: again.leaseToken };
    assert.equal((await recovered.executionHeartbeat({ ...holder, now: T0 + 3 })).status, "ok");
    const [done] = await recovered.executionCompleteMany({ items: [holder], now: T0 + 3 });
    assert.equal(done?.status, "ok");
    // A repeat of the holder's success answers ok again; the stale token's does not.
    assert.equal((await recovered.executionCompleteMany({ items: [holder], now: T0 + 4 }))[0]?.status, "ok");
    assert.equal((await recovered.executionCompleteMany({ items: [stale], now: T0 + 4 }))[0]?.status, "lost");
    await Promise.all([survivor.close(), recovered.close()]);
  });

  test("a token no grant gave, or a malformed one, never matches; a call without a token is fenced by the attempt alone", async () => {
    const store = await openSqliteStore({ path: freshPath() });
    await create(store, "a");
    const [g] = await lease(store, 1);
    assert.ok(g?.leaseToken);
    const base = { executionId: g.executionId, tenantId: "t1", attempt: g.attempt, now: T0 + 2 };
    for (const leaseToken of ["999999", "0", "x", "1.5"])
      assert.equal((await store.executionHeartbeat({ ...base, leaseToken })).status, "lost", leaseToken);
    assert.equal((await store.executionHeartbeat(base)).status, "ok");
    await store.close();
  });

  for (const durability of ["accepted", "strict"] as Durability[]) {
    test(`${durability}: a transition is flushed ${durability === "accepted" ? `by the store within ${FLUSH_BOUND_MS} ms` : "by its own commit"}`, async () => {
      const path = freshPath();
      const store = await openSqliteStore({ path, durability });
      await create(store, "a");
      assert.equal(flushedAt(path), null);
      const [g] = await lease(store, 1);
      assert.ok(g);
      const [done] = await store.executionCompleteMany({ items: [{ executionId: g.executionId, tenantId: "t1", attempt: g.attempt }], now: T0 + 2 });
      assert.equal(done?.status, "ok");
      if (durability === "accepted") await until("the periodic flush", () => flushedAt(path) !== null);
      else {
        // Nothing is left to flush: no flush is written, even after the bound.
        await new Promise((resolve) => setTimeout(resolve, FLUSH_BOUND_MS * 2));
        assert.equal(flushedAt(path), null);
      }
      await store.close();
    });
  }

  test("close flushes what is left: the transitions are on disk when it returns", async () => {
    const path = freshPath();
    const store = await openSqliteStore({ path });
    await create(store, "a");
    const [g] = await lease(store, 1);
    assert.ok(g);
    await store.executionCompleteMany({ items: [{ executionId: g.executionId, tenantId: "t1", attempt: g.attempt }], now: T0 + 2 });
    await store.close();
    assert.notEqual(flushedAt(path), null);
  });
  test("after a flush fails, each transition is flushed by its own commit, until a FULL commit succeeds", () => {
    const path = freshPath();
    const db = new SqliteDb({ path, busyTimeoutMs: 10 });
    const other = new Database(path);
    try {
      db.handle.exec("CREATE TABLE t (n INTEGER)");
      const level = () => db.transition(() => db.handle.pragma("synchronous", { simple: true }));
      assert.equal(level(), 1, "a transition commits with synchronous=NORMAL");
      // The flush fails: here another connection holds the write lock (a disk that refuses its syncs fails it as well).
      other.exec("BEGIN IMMEDIATE");
      db.flush();
      other.exec("COMMIT");
      assert.equal(level(), 2, "the transition after a failed flush commits with synchronous=FULL");
      assert.equal(level(), 1, "that FULL commit flushed: transitions are relaxed again");
    } finally {
      other.close();
      db.close();
    }
  });
});
