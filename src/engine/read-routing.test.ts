// Read routing to a replica (--read-store): two real SQLite stores stand in
// for the primary and the replica, holding different jobs so each answer
// shows which one served it; the replica's lag and failures are injected
// into its replicaLagMs and jobList (SQLite has no replication of its own).
// The same routing over a real PostgreSQL pair is in
// test/cluster/replica.test.ts.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { StoreUnavailableError } from "../core/errors.js";
import { newId, shardOf } from "../core/ids.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { Store } from "../store/store.js";
import { EngineEvents, type EngineEventMap } from "./events.js";
import { readRouting } from "./read-routing.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-reads-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const T0 = Date.parse("2026-03-01T00:00:00Z");

async function storeWithJob(file: string, name: string): Promise<Store> {
  const store = await openSqliteStore({ path: join(dir, file) });
  const jobId = newId(T0);
  await store.jobCreateMany({
    now: T0,
    nodeId: "n1",
    jobs: [
      {
        job: {
          tenantId: "t1",
          jobId,
          shard: shardOf(jobId),
          kind: "once",
          name,
          state: "SCHEDULED",
          target: { type: "queue", pool: "p1" },
          mode: "live",
          payload: null,
          schedule: { runAt: new Date(T0 + 60_000).toISOString() },
          retry: { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 3600 },
          timeoutSeconds: 300,
          priority: 0,
          createdAt: T0,
        },
        due: null,
        execution: { scheduledFor: T0 + 60_000, dueAt: T0 + 60_000 },
      },
    ],
  });
  return store;
}

/** A replica whose lag and jobList the test controls; every other call is the real store's. */
function controlledReplica(store: Store): Store & { lagMs: number; failing: boolean } {
  const replica = Object.create(store) as Store & { lagMs: number; failing: boolean };
  replica.lagMs = 0;
  replica.failing = false;
  replica.replicaLagMs = async () => replica.lagMs;
  replica.jobList = async (params) => {
    if (replica.failing) throw new StoreUnavailableError("connection", new Error("connection refused"));
    return store.jobList(params);
  };
  return replica;
}

const names = async (reads: Pick<Store, "jobList">): Promise<string[]> => (await reads.jobList({ tenantId: "t1", limit: 10 })).map((j) => j.name);
/** Lets the background lag check (a promise chain) finish. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test("list reads go to a fresh replica, to the primary while it lags past the bound or fails, and back when it recovers", async () => {
  const primary = await storeWithJob("primary.db", "on-primary");
  const replicaStore = await storeWithJob("replica.db", "on-replica");
  const replica = controlledReplica(replicaStore);
  const clock = new FakeClock(T0);
  const events = new EngineEvents();
  const seen: EngineEventMap["reads:replica"][] = [];
  events.on("reads:replica", (e) => seen.push(e));
  const reads = readRouting({ primary, replica, clock, events, maxLagMs: 5000 });
  try {
    assert.deepEqual(await names(reads), ["on-replica"], "the first read waits for the lag check: a replica within the bound serves");
    assert.equal(reads.usingReplica, true);

    replica.lagMs = 5001;
    assert.deepEqual(await names(reads), ["on-replica"], "the lag is checked at most once a second");
    clock.advance(1000);
    assert.deepEqual(await names(reads), ["on-primary"], "a read after a second waits for a new check: a replica past the bound does not serve");
    assert.equal(seen.at(-1)?.serving, false);
    assert.equal(seen.at(-1)?.lagMs, 5001);

    replica.lagMs = Infinity; // not streaming
    clock.advance(60_000); // a quiet spell: the judgment before it is stale
    assert.deepEqual(await names(reads), ["on-primary"]);

    replica.lagMs = 0;
    clock.advance(1000);
    assert.deepEqual(await names(reads), ["on-replica"], "a replica that caught up serves again");
    assert.equal(seen.at(-1)?.serving, true);

    replica.failing = true;
    assert.deepEqual(await names(reads), ["on-primary"], "a failing replica's read is answered by the primary, not an error");
    assert.ok(seen.at(-1)?.error instanceof StoreUnavailableError);
    replica.failing = false;
    assert.deepEqual(await names(reads), ["on-primary"], "and the primary serves until the next check");
    clock.advance(1000);
    assert.deepEqual(await names(reads), ["on-replica"]);
    assert.deepEqual(
      seen.map((e) => e.serving),
      [true, false, true, false, true],
    );
  } finally {
    await Promise.all([primary.close(), replicaStore.close()]);
  }
});

test("a replica's other errors are not hidden: they reach the caller", async () => {
  const primary = await storeWithJob("p2.db", "on-primary");
  const replicaStore = await storeWithJob("r2.db", "on-replica");
  const replica = Object.create(replicaStore) as Store;
  replica.replicaLagMs = async () => 0;
  replica.jobList = async () => {
    throw new TypeError("a bug");
  };
  const reads = readRouting({ primary, replica, clock: new FakeClock(T0), events: new EngineEvents() });
  try {
    await assert.rejects(names(reads), TypeError);
  } finally {
    await Promise.all([primary.close(), replicaStore.close()]);
  }
});

test("a replica whose lag check does not answer within a second is judged out: the read goes to the primary, and the next ones at once", async () => {
  const primary = await storeWithJob("p3.db", "on-primary");
  const replicaStore = await storeWithJob("r3.db", "on-replica");
  const replica = controlledReplica(replicaStore);
  const clock = new FakeClock(T0);
  const events = new EngineEvents();
  const seen: EngineEventMap["reads:replica"][] = [];
  events.on("reads:replica", (e) => seen.push(e));
  const reads = readRouting({ primary, replica, clock, events });
  try {
    assert.deepEqual(await names(reads), ["on-replica"]);
    let answer: (lagMs: number) => void = () => {};
    replica.replicaLagMs = () => new Promise((resolve) => (answer = resolve)); // a half-open link: no answer
    clock.advance(1000);
    const waiting = names(reads);
    await settle();
    clock.advance(1000); // the check's bound
    assert.deepEqual(await waiting, ["on-primary"]);
    assert.equal(seen.at(-1)?.serving, false);
    assert.ok(seen.at(-1)?.error instanceof StoreUnavailableError);
    clock.advance(5000);
    assert.deepEqual(await names(reads), ["on-primary"], "while that check hangs, reads go to the primary without waiting");
    answer(0);
    await settle();
    assert.equal(seen.at(-1)?.serving, true, "the late answer counts: the replica was within the bound");
    replica.replicaLagMs = async () => replica.lagMs;
    clock.advance(1000);
    assert.deepEqual(await names(reads), ["on-replica"], "and it serves again");
  } finally {
    await Promise.all([primary.close(), replicaStore.close()]);
  }
});
