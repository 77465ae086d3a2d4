// The shard keeper goes by the store's clock: a node whose own clock is
// skewed writes heartbeats, and plans its shards, at the store's time.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { systemClock, type Clock } from "../core/clock.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import { EngineEvents } from "./events.js";
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
