// Clock skew (issue 8, "Tests that must exist"): one node runs 30 s ahead and
// one 30 s behind (Debian's libfaketime), beside a node on time. Leases and
// due times are judged by the database's clock, so neither skewed node
// dispatches early, late or twice, steals a shard, or keeps one when it dies.
// PostgreSQL only: a SQLite store has no clock of its own (each process
// reads its host's, which faketime moves).

import assert from "node:assert/strict";
import type { ExecutionItem, JobSpec } from "../../src/core/api.js";
import { waitFor } from "../helpers.js";
import { Cluster, createAll, Deliveries, everySecond, history, mapLimit, second } from "./harness.js";
import { databaseNow } from "./postgres.js";
import { clusterTest, type StoreKind } from "./stores.js";

/** The stores this scenario runs on. */
const STORES: readonly StoreKind[] = ["postgres"];
const RECURRING = 60;
const ONE_OFFS = 20;
/** Longer than a shard lease (10 s): a node that judged leases by its own clock would have stolen by then. */
const WATCH_MS = 14_000;
/** A delivery later than this after its due time was not dispatched on time. */
const LATE_MS = 5_000;

await clusterTest("nodes 30 s ahead and 30 s behind neither dispatch early, late or twice, nor steal or keep a shard", STORES, async (t, store) => {
  const cluster = new Cluster(store);
  t.after(() => cluster.close());
  const normal = await cluster.start("normal");
  await cluster.start("ahead", { launcher: ["faketime", "-f", "+30s"] });
  await cluster.start("behind", { launcher: ["faketime", "-f", "-30s"] });
  const skew = Math.abs((await databaseNow()) - Date.now());
  assert.ok(skew < 1_000, `the database and this process share a clock (${skew} ms apart)`);
  await cluster.waitForCounts({ ahead: 86, behind: 85, normal: 85 }, 20_000, normal.client);
  const epochs = new Map((await normal.client.cluster()).shards.map((s) => [s.shard, `${s.owner}#${s.epoch}`]));

  const deliveries = new Deliveries();
  cluster.worker(normal, "skew", deliveries);
  cluster.worker(normal, "skew", deliveries);
  const recurring = await createAll(normal.client, Array.from({ length: RECURRING }, (_, i) => everySecond("skew", i)));
  const createdAt = Date.now();
  // One-offs taken by the skewed nodes, due at one absolute time (their executions are created at submit).
  const runAt = second(createdAt) + 8_000;
  const oneOff = (i: number): JobSpec => ({ name: `at-${i}`, target: { type: "queue", pool: "skew" }, schedule: { runAt: new Date(runAt).toISOString() } });
  const oneOffs = [
    ...(await createAll(cluster.node("ahead").client, Array.from({ length: ONE_OFFS }, (_, i) => oneOff(i)))),
    ...(await createAll(cluster.node("behind").client, Array.from({ length: ONE_OFFS }, (_, i) => oneOff(ONE_OFFS + i)))),
  ];

  // Watch the shards for longer than a lease: the same owner at the same epoch throughout.
  const moved = new Set<string>();
  await waitFor(async () => {
    for (const s of (await normal.client.cluster()).shards) if (epochs.get(s.shard) !== `${s.owner}#${s.epoch}`) moved.add(`${s.shard}: ${epochs.get(s.shard)} -> ${s.owner}#${s.epoch}`);
    return Date.now() > createdAt + WATCH_MS;
  }, "the watch is over", WATCH_MS + 5_000);
  assert.deepEqual([...moved].slice(0, 5), [], "no shard changed hands while every node lived");

  // Early: an execution that exists before its occurrence is due by the database's clock.
  const early: ExecutionItem[] = [];
  await mapLimit(recurring, 4, async (jobId) => {
    const items = await history(normal.client, jobId);
    const readAt = await databaseNow();
    for (const item of items) if (Date.parse(item.scheduledFor) > readAt) early.push(item);
  });
  const show = (items: ExecutionItem[]) => items.slice(0, 3).map((i) => `${i.scheduledFor} by ${i.dispatchedBy} at ${i.dispatchedAt}`).join("; ");
  assert.equal(early.length, 0, `${early.length} executions existed before they were due, e.g. ${show(early)}`);

  // Handed out: every occurrence of the window once, not before its time, not late.
  const from = second(createdAt) + 2_000;
  const to = second(Date.now()) - LATE_MS;
  const window = deliveries.all.filter((d) => d.scheduledFor > from && d.scheduledFor <= to);
  const missing = RECURRING * ((to - from) / 1000) - new Set(window.map((d) => `${d.jobId}@${d.scheduledFor}`)).size;
  assert.equal(missing, 0, `${missing} occurrences in the window never reached a worker`);
  assert.deepEqual(deliveries.repeated((d) => `${d.jobId}@${d.scheduledFor}`), [], "no occurrence handed out twice");
  const tooEarly = deliveries.all.filter((d) => d.receivedAt < d.scheduledFor);
  assert.equal(tooEarly.length, 0, `handed out before their time: ${JSON.stringify(tooEarly.slice(0, 3))}`);
  const late = window.filter((d) => d.receivedAt - d.scheduledFor > LATE_MS);
  assert.equal(late.length, 0, `${late.length} occurrences handed out more than ${LATE_MS} ms late, e.g. ${JSON.stringify(late.slice(0, 3))}`);
  await waitFor(() => oneOffs.every((j) => deliveries.all.some((d) => d.jobId === j)), "the one-offs ran", 10_000);
  const oneOffDeliveries = deliveries.all.filter((d) => oneOffs.includes(d.jobId));
  assert.equal(oneOffDeliveries.length, oneOffs.length, "each one-off handed out once");
  assert.ok(oneOffDeliveries.every((d) => d.receivedAt >= runAt && d.receivedAt - runAt < LATE_MS), `one-offs ran at their time: ${JSON.stringify(oneOffDeliveries.map((d) => d.receivedAt - runAt))}`);

  // Keep: the node whose clock runs ahead dies; its leases end 10 s after its last renewal by the database's clock.
  const killedAt = Date.now();
  await cluster.node("ahead").stop("SIGKILL");
  await cluster.waitForCounts({ behind: 128, normal: 128 }, 15_000, normal.client);
  t.diagnostic(`ahead's shards taken ${Date.now() - killedAt} ms after SIGKILL; ${window.length} deliveries in the window checked`);
});
