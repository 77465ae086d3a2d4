// A paused node (issue 8, "Fencing"): SIGSTOP one of three `duetime serve`
// processes past its shard lease, let the others take its shards, then
// SIGCONT it. It must dispatch nothing for the shards it lost, then rejoin.
//
// To make the fence the only thing in the way, n3 wakes with everything
// against it: it was stopped just after a shard round (so its scheduler's
// timer fires before its next round), its window reload is overdue (so it
// reloads its old shards with their old epochs), and the nodes that took its
// shards are themselves stopped for a moment (leases still live), so due
// entries of those shards wait unconsumed when it wakes.

import assert from "node:assert/strict";
import type { ExecutionItem } from "@duetime/sdk/contract";
import { shardOf } from "../../src/core/ids.js";
import { waitFor } from "../helpers.js";
import {
  Cluster,
  type ClusterNode,
  createAll,
  dispatchingNow,
  everySecond,
  history,
  holdingsOf,
  mapLimit,
  second,
  waitForLedger,
} from "./harness.js";
import { clusterTest, type StoreKind } from "./stores.js";

const JOBS = 90;
/** Longer than the shard lease (10 s) and the window reload (15 s): n3 wakes with both overdue. */
const PAUSE_MS = 16_000;
/** How long the new owners stand still around n3's wake: well inside their leases (at least 6.6 s left). */
const OWNERS_PAUSE_MS = 3_000;

/** The stores this scenario runs on. */
const STORES: readonly StoreKind[] = ["postgres"];

await clusterTest("a node paused past its lease dispatches nothing for the shards taken from it, then rejoins", STORES, async (t, store) => {
  const cluster = new Cluster(store);
  t.after(() => cluster.close());
  const [n1, n2, n3] = await cluster.startAll(["n1", "n2", "n3"]);
  await cluster.waitForCounts({ n1: 86, n2: 85, n3: 85 }, 20_000);
  const lost = new Set((await cluster.holdings()).get("n3"));
  const jobs = await createAll(
    cluster.client,
    Array.from({ length: JOBS }, (_, i) => everySecond("paused", i)),
  );
  const createdAt = Date.now();
  const onN3 = jobs.filter((j) => lost.has(shardOf(j)));
  assert.ok(onN3.length > 0, "some jobs on n3's shards");
  await waitFor(() => dispatchingNow(cluster, onN3[0]!, "n3"), "n3 dispatches its jobs on time");

  // Who held n3's old shards, as seen by polls: for each shard, the last poll (by its send time)
  // that saw another node hold it. n3 dispatching that shard after its pause and before then trespassed.
  const lastForeign = new Map<number, number>();
  const look = async () => {
    const sentAt = Date.now();
    const holdings = holdingsOf(await n1!.client.cluster(), sentAt);
    for (const [owner, shards] of holdings) if (owner !== "n3") for (const s of shards) if (lost.has(s)) lastForeign.set(s, sentAt);
    return holdings;
  };

  await stopJustAfterRound(n3!);
  const pausedAt = Date.now();
  // A lease (10 s) and a round (3.3 s), with room for a loaded machine: no bound on takeover is asserted here (crash.test.ts does that).
  await cluster.waitForCounts({ n1: 128, n2: 128 }, 25_000);
  const takenMs = Date.now() - pausedAt;
  await waitFor(() => Date.now() > pausedAt + PAUSE_MS, "n3 paused past its lease and its reload", PAUSE_MS);

  // The new owners stand still: their leases run on, nobody consumes the due entries of n3's old shards.
  const holdings = await look();
  const leaseEnds = new Map((await n1!.client.cluster()).shards.map((s) => [s.shard, Date.parse(s.leaseUntil)]));
  assert.deepEqual([...holdings.keys()].sort(), ["n1", "n2"]);
  n1!.pause();
  n2!.pause();
  const ownersPausedAt = Date.now();
  await waitFor(() => Date.now() > ownersPausedAt + OWNERS_PAUSE_MS / 2, "due entries wait unconsumed", OWNERS_PAUSE_MS);
  n3!.resume();
  await waitFor(() => Date.now() > ownersPausedAt + OWNERS_PAUSE_MS, "n3 awake alone", OWNERS_PAUSE_MS);
  n1!.resume();
  n2!.resume();
  const ownersBackAt = Date.now();
  assert.ok(ownersBackAt < Math.min(...leaseEnds.values()), "the owners were back before their leases ended");

  let polling = true;
  const poller = (async () => {
    while (polling) {
      await look();
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    await cluster.waitForCounts({ n1: 86, n2: 85, n3: 85 }, 20_000);
    const rejoinMs = Date.now() - ownersBackAt;
    const regained = (await cluster.holdings()).get("n3")!;
    const onNew = jobs.filter((j) => regained.includes(shardOf(j)));
    assert.ok(onNew.length > 0, "some jobs on n3's new shards");
    await waitFor(() => dispatchingNow(cluster, onNew[0]!, "n3"), "n3 dispatches again after rejoining");
    t.diagnostic(`n3's shards taken ${takenMs} ms after SIGSTOP; n3 rejoined ${rejoinMs} ms after the owners resumed`);
  } finally {
    polling = false;
    await poller;
  }

  // Nothing lost: every second of every job from before the pause to now has its execution.
  const from = Math.max(second(pausedAt) - 3_000, second(createdAt) + 1_000);
  const to = second(Date.now()) - 1_000;
  await mapLimit(jobs, 4, (jobId) => waitForLedger(cluster.client, jobId, from, to, ["QUEUED", "RUNNING", "SUCCEEDED"], 20_000));

  // The evidence: no execution of n3's old shards dispatched by n3 while another node held the shard:
  // before the owners resumed and their leases ended (no handover while they stood still), or before a poll saw it foreign.
  const trespass: ExecutionItem[] = [];
  let byN3AfterWake = 0;
  await mapLimit(onN3, 4, async (jobId) => {
    const shard = shardOf(jobId);
    const heldElsewhereUntil = Math.max(Math.min(leaseEnds.get(shard)!, ownersBackAt), lastForeign.get(shard)!);
    for (const item of await history(cluster.client, jobId)) {
      const at = Date.parse(item.dispatchedAt!);
      if (item.dispatchedBy !== "n3" || at <= pausedAt) continue;
      if (at <= heldElsewhereUntil) trespass.push(item);
      else byN3AfterWake++;
    }
  });
  const shown = trespass
    .slice(0, 5)
    .map((i) => `${i.executionId} (shard ${shardOf(i.jobId)}, scheduled ${i.scheduledFor}, dispatched ${i.dispatchedAt})`);
  assert.equal(trespass.length, 0, `n3 dispatched ${trespass.length} executions on shards another node held, e.g. ${shown.join("; ")}`);
  t.diagnostic(`${byN3AfterWake} executions of n3's old shards dispatched by n3 after it took them back`);
});

/**
 * SIGSTOP just after the node's shard round (its heartbeat moved): on waking,
 * its scheduler's timer (due within a second) fires before its next round (3.3 s).
 */
async function stopJustAfterRound(node: ClusterNode): Promise<void> {
  const beat = async () => (await node.client.cluster()).nodes.find((n) => n.nodeId === node.id)?.lastHeartbeatAt;
  const before = await beat();
  await waitFor(async () => (await beat()) !== before, `${node.id} renews its shards`, 10_000);
  node.pause();
}
