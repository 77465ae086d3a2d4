// The shard keeper goes by the store's clock: a node whose own clock is
// skewed writes heartbeats, and plans its shards, at the store's time. A node
// that cannot reach its store for a whole lease gives its shards up, and is
// not ready, even while its store calls hang.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { FakeClock, systemClock, type Clock } from "../core/clock.js";
import { StoreUnavailableError } from "../core/errors.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { Store } from "../store/store.js";
import { ClusterService } from "./cluster-view.js";
import { EngineEvents, type EngineEventMap } from "./events.js";
import { ShardKeeper } from "./shard-keeper.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-keeper-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a node whose clock runs 60 s ahead heartbeats at the store's time, not its own", async () => {
  const store = await openSqliteStore({ path: join(dir, "skew.db") });
  const skewed: Clock = { ...systemClock, now: () => systemClock.now() + 60_000, storeNow: () => undefined };
  const keeper = new ShardKeeper({ store, clock: skewed, nodeId: "ahead", address: null, events: new EngineEvents(), onShards: () => {} });
  try {
    const from = Date.now();
    await keeper.runOnce();
    const to = Date.now();
    const [node] = await store.nodeList({ now: to });
    assert.equal(node?.nodeId, "ahead");
    assert.ok(
      node.lastHeartbeatAt >= from && node.lastHeartbeatAt <= to,
      `heartbeat at ${node.lastHeartbeatAt - from} ms into [${from}, ${to}], not 60 s ahead`,
    );
    assert.equal((await store.shardList()).filter((s) => s.owner === "ahead").length, 256, "a lone node takes every shard");
  } finally {
    await keeper.stop();
    await store.close();
  }
});

/** The store as a node behind a link that may be cut: every call fails with a connection fault while `cut` is set. */
function behindLink(store: Store): { store: Store; link: { cut: boolean } } {
  const link = { cut: false };
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) =>
        link.cut ? Promise.reject(new StoreUnavailableError("connection", new Error("link cut"))) : value.apply(target, args);
    },
  });
  return { store: wrapped, link };
}

/** Lets the keeper's store calls (SQLite, answered at once) settle after a fake timer fired. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

test("a node that cannot renew for a whole shard lease drops its shards and says so, then takes them back when a round renews", async () => {
  const real = await openSqliteStore({ path: join(dir, "lapse.db") });
  const { store, link } = behindLink(real);
  const clock = new FakeClock();
  const events = new EngineEvents();
  events.on("error", () => {}); // the failed rounds: reported, and retried
  const lapsed: EngineEventMap["shards:lapsed"][] = [];
  events.on("shards:lapsed", (e) => lapsed.push(e));
  const told: number[] = [];
  const keeper = new ShardKeeper({ store, clock, nodeId: "n", address: null, events, leaseMs: 10_000, onShards: (e) => told.push(e.size) });
  try {
    await keeper.start();
    assert.deepEqual(told, [256]);
    assert.equal(keeper.lapsesAt(), clock.now() + 10_000);

    link.cut = true;
    for (let i = 0; i < 99; i++) {
      clock.advance(100);
      await settle();
    }
    clock.advance(99);
    await settle();
    assert.deepEqual(lapsed, [], "not before the lease it last wrote runs out");
    clock.advance(1);
    await settle();
    assert.deepEqual(lapsed, [{ held: 256, sinceMs: 10_000 }]);
    assert.deepEqual(told, [256, 0], "the scheduler is told it holds nothing");

    link.cut = false;
    for (let i = 0; i < 40 && told.length < 3; i++) {
      clock.advance(100);
      await settle();
    }
    assert.deepEqual(told, [256, 0, 256], "the first round that renews takes them back");
    assert.ok(keeper.lapsesAt()! > clock.now());
  } finally {
    await keeper.stop();
    await real.close();
  }
});

test("readiness: not ready once the membership lapses, even while the store's answer hangs (a half-open link)", async () => {
  const clock = new FakeClock();
  let lapsesAt: number | null = clock.now() + 4_000;
  const hanging = new Promise<boolean>(() => {});
  const cluster = new ClusterService({
    store: undefined as unknown as Store, // readiness reads neither the store nor the shards here
    clock,
    storeHealth: { ready: () => hanging },
    membership: { lapsesAt: () => lapsesAt },
  });
  let answer: boolean | undefined;
  void cluster.ready().then((ok) => (answer = ok));
  clock.advance(3_999);
  await settle();
  assert.equal(answer, undefined, "the store has not answered, and the membership holds");
  clock.advance(1);
  await settle();
  assert.equal(answer, false, "the membership lapsed: not ready, without waiting for the store");
  assert.equal(await cluster.ready(), false, "and at once after it");
  lapsesAt = null; // the keeper stopped or never started: the store alone decides
  const ready = new ClusterService({
    store: undefined as unknown as Store,
    clock,
    storeHealth: { ready: async () => true },
    membership: { lapsesAt: () => lapsesAt },
  });
  assert.equal(await ready.ready(), true);
});
