// Shard balance across real `duetime serve` processes (issue 8, "Many nodes"):
// three nodes share the 256 shards evenly, a fourth joins and receives its
// share by handover, and a node stopped with SIGTERM hands its shards over so
// that dispatch of its jobs goes on without a gap.

import assert from "node:assert/strict";
import { shardOf } from "../../src/core/ids.js";
import { waitFor } from "../helpers.js";
import { Cluster, createAll, dispatchingNow, everySecond, history, ledger, mapLimit, second } from "./harness.js";
import { clusterTest, type StoreKind } from "./stores.js";

/** The default shard lease: a node that stops renewing keeps its shards this long. */
const LEASE_MS = 10_000;
const JOBS = 64;

/** The stores this scenario runs on. */
const STORES: readonly StoreKind[] = ["postgres"];

await clusterTest(
  "three nodes share the shards 86/85/85; a fourth takes 64 by handover, not expiry; a SIGTERM hands its shards over with no gap in dispatch",
  STORES,
  async (t, store) => {
    const cluster = new Cluster(store);
    t.after(() => cluster.close());
    await cluster.startAll(["n1", "n2", "n3"]);
    await cluster.waitForCounts({ n1: 86, n2: 85, n3: 85 }, 20_000);

    const jobs = await createAll(
      cluster.client,
      Array.from({ length: JOBS }, (_, i) => everySecond("balance", i)),
    );
    const createdAt = Date.now();

    const n4 = await cluster.start("n4");
    const joinMs = await cluster.waitForCounts({ n1: 64, n2: 64, n3: 64, n4: 64 }, LEASE_MS);
    assert.ok(joinMs < LEASE_MS, `rebalanced in ${joinMs} ms: handed over, not left to expire`);

    // n4 dispatches its shards' jobs before it stops (the positive signal the gap check needs)
    const held = new Set((await cluster.holdings()).get("n4"));
    const onN4 = jobs.filter((j) => held.has(shardOf(j)));
    assert.ok(onN4.length > 0, "some jobs are on n4's shards");
    await waitFor(() => dispatchingNow(cluster, onN4[0]!, "n4", 2), "n4 dispatches its jobs on time");

    const stoppedAt = Date.now();
    await n4.stop("SIGTERM");
    await cluster.waitForCounts({ n1: 86, n2: 85, n3: 85 }, LEASE_MS);
    const leaveMs = Date.now() - stoppedAt;
    assert.ok(leaveMs < LEASE_MS, `n4's shards were taken ${leaveMs} ms after SIGTERM: handed over, not left to expire`);

    // No gap: every second of n4's jobs around the stop has its execution, each dispatched promptly by
    // whoever held the shard; a takeover by expiry would leave a hole of at least the lease.
    const from = Math.max(second(stoppedAt) - 3_000, second(createdAt) + 1_000);
    const to = second(stoppedAt) + 8_000;
    await waitFor(async () => Date.now() > to + 1_000, "the window is over", 15_000);
    const lags: number[] = [];
    const by = new Set<string>();
    await mapLimit(onN4, 4, async (jobId) => {
      const occurrences = await ledger(cluster.client, jobId, from, to);
      assert.equal(occurrences.length, (to - from) / 1000, `${jobId}: one occurrence per second`);
      const missing = occurrences.filter((o) => o.status !== "dispatched");
      assert.deepEqual(missing, [], `${jobId}: every occurrence dispatched`);
      for (const item of await history(cluster.client, jobId)) {
        const at = Date.parse(item.scheduledFor);
        if (at <= from || at > to) continue;
        lags.push(Date.parse(item.dispatchedAt!) - at);
        by.add(item.dispatchedBy!);
      }
    });
    assert.equal(lags.length, onN4.length * ((to - from) / 1000));
    assert.ok(by.has("n4") && by.size > 1, `dispatched by n4 before the stop and by others after: ${[...by].join(",")}`);
    const worst = Math.max(...lags);
    t.diagnostic(`join handover ${joinMs} ms, SIGTERM handover ${leaveMs} ms, worst dispatch lag ${worst} ms over ${lags.length} executions`);
    assert.ok(worst < LEASE_MS / 2, `worst dispatch lag ${worst} ms around the stop`);
  },
);
