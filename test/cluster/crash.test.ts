// A node crash under load (issue 8, "Tests that must exist"): SIGKILL one of
// three `duetime serve` processes while per-second recurring jobs run; the
// others take its shards once its lease ends, and run every occurrence, none
// twice. Proved from what the workers were handed and from the run ledger.

import assert from "node:assert/strict";
import { shardOf } from "../../src/core/ids.js";
import { waitFor } from "../helpers.js";
import { Cluster, createAll, Deliveries, dispatchingNow, everySecond, history, mapLimit, second, waitForLedger } from "./harness.js";
import { clusterTest, type StoreKind } from "./stores.js";

const JOBS = 120;
const TAKEOVER_BOUND_MS = 15_000;

/** The stores this scenario runs on. */
const STORES: readonly StoreKind[] = ["postgres"];

await clusterTest("a SIGKILLed node's shards are taken within 15 s and every occurrence of its jobs runs, none twice", STORES, async (t, store) => {
  const cluster = new Cluster(store);
  t.after(() => cluster.close());
  await cluster.startAll(["n1", "n2", "n3"]);
  await cluster.waitForCounts({ n1: 86, n2: 85, n3: 85 }, 20_000);
  const lost = new Set((await cluster.holdings()).get("n3"));
  const jobs = await createAll(
    cluster.client,
    Array.from({ length: JOBS }, (_, i) => everySecond("crash", i)),
  );
  const createdAt = Date.now();
  const onN3 = jobs.filter((j) => lost.has(shardOf(j)));
  assert.ok(onN3.length > 0 && onN3.length < JOBS, "some jobs on n3's shards, some elsewhere");

  // Workers lease through the nodes that live on, so a delivery is never lost with the killed one.
  const deliveries = new Deliveries();
  cluster.worker(cluster.node("n1"), "crash", deliveries);
  cluster.worker(cluster.node("n2"), "crash", deliveries);
  // A few seconds of n3 at work, so the window below starts before the kill.
  await waitFor(() => dispatchingNow(cluster, onN3[0]!, "n3", 3), "n3 dispatches its jobs on time");

  const killedAt = Date.now();
  await cluster.node("n3").stop("SIGKILL");
  await cluster.waitForCounts({ n1: 128, n2: 128 }, TAKEOVER_BOUND_MS);
  const takeoverMs = Date.now() - killedAt;

  // The window: from before the kill to well after the takeover, every occurrence of every job.
  const from = Math.max(second(killedAt) - 5_000, second(createdAt) + 1_000);
  const to = second(Date.now()) + 3_000;
  const perJob = (to - from) / 1000;
  await waitFor(() => Date.now() > to, "the window is over", 10_000);
  await mapLimit(jobs, 4, (jobId) => waitForLedger(cluster.client, jobId, from, to, ["SUCCEEDED"], 20_000));

  const inWindow = deliveries.all.filter((d) => d.scheduledFor > from && d.scheduledFor <= to);
  assert.equal(
    new Set(inWindow.map((d) => `${d.jobId}@${d.scheduledFor}`)).size,
    JOBS * perJob,
    "every occurrence in the window was handed to a worker",
  );
  assert.deepEqual(
    deliveries.repeated((d) => `${d.jobId}@${d.scheduledFor}`),
    [],
    "no (job, scheduledFor) handed out twice",
  );
  assert.ok(
    inWindow.every((d) => d.attempt === 1),
    "every occurrence ran at its first attempt",
  );

  // The store says who dispatched what: n3 until it died, the others after, each occurrence once.
  const dispatchers = new Map<string, number>();

  await mapLimit(onN3, 4, async (jobId) => {
    const items = (await history(cluster.client, jobId)).filter((i) => Date.parse(i.scheduledFor) > from && Date.parse(i.scheduledFor) <= to);
    assert.equal(new Set(items.map((i) => i.scheduledFor)).size, perJob, `${jobId}: one execution per occurrence`);
    assert.equal(items.length, perJob, `${jobId}: one attempt per execution`);
    for (const item of items) {
      dispatchers.set(item.dispatchedBy!, (dispatchers.get(item.dispatchedBy!) ?? 0) + 1);
      if (Date.parse(item.dispatchedAt!) > killedAt) assert.notEqual(item.dispatchedBy, "n3", `${item.executionId} dispatched by the dead node`);
    }
  });
  assert.ok(
    (dispatchers.get("n3") ?? 0) > 0 && (dispatchers.get("n1") ?? 0) + (dispatchers.get("n2") ?? 0) > 0,
    `n3's jobs dispatched by n3, then by the others: ${JSON.stringify([...dispatchers])}`,
  );
  t.diagnostic(
    `takeover ${takeoverMs} ms after SIGKILL; ${inWindow.length} deliveries in a ${perJob} s window; n3's jobs dispatched by ${JSON.stringify(Object.fromEntries(dispatchers))}`,
  );
});
