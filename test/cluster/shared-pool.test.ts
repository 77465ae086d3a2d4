// One pool across the cluster (issue 8, "Tests that must exist"): workers
// leasing through different `duetime serve` processes share one pool, run
// work submitted to another node, and no attempt is handed out twice.

import assert from "node:assert/strict";
import type { JobSpec } from "@duetime/sdk/contract";
import { waitFor } from "../helpers.js";
import { Cluster, countJobs, createAll, Deliveries, history } from "./harness.js";
import { clusterTest, type StoreKind } from "./stores.js";

const JOBS = 600;
const NODES = ["n1", "n2", "n3"];

/** The stores this scenario runs on: on SQLite too, cheaply, since several processes may share a file in development. */
const STORES: readonly StoreKind[] = ["postgres", "sqlite"];

await clusterTest(
  "workers on two nodes lease one pool: the jobs submitted to the third run through both, each handed out once, at its first attempt",
  STORES,
  async (t, store) => {
    const cluster = new Cluster(store);
    t.after(() => cluster.close());
    await cluster.startAll(NODES);
    await cluster.waitForCounts({ n1: 86, n2: 85, n3: 85 }, 20_000);

    // Two workers on n1 and two on n2, none on n3: the jobs submitted to n3 (a one-off's execution
    // is created by the node that takes the job) can only run through the others, whose lease
    // calls race for them (a herd due together). Each job keeps its worker busy a while, so no
    // one node's workers drain the herd alone.
    const deliveries = new Deliveries();
    for (const id of ["n1", "n2"])
      for (let w = 0; w < 2; w++) cluster.worker(cluster.node(id), "shared", deliveries, { concurrency: 8, busyMs: 100 });
    const runAt = new Date(Date.now() + 3_000).toISOString();
    const spec = (i: number): JobSpec => ({ name: `one-${i}`, target: { type: "queue", pool: "shared" }, payload: { i }, schedule: { runAt } });
    const jobs = await createAll(
      cluster.node("n3").client,
      Array.from({ length: JOBS }, (_, i) => spec(i)),
    );

    await waitFor(() => new Set(deliveries.all.map((d) => d.jobId)).size === JOBS, "every job handed to a worker", 30_000);
    await waitFor(async () => (await countJobs(cluster.client, "COMPLETED")) === JOBS, "every job completed", 20_000);

    assert.deepEqual(
      deliveries.repeated((d) => `${d.executionId}#${d.attempt}`),
      [],
      "no attempt handed out twice",
    );
    assert.deepEqual(
      deliveries.repeated((d) => d.jobId),
      [],
      "no job handed out twice",
    );
    assert.equal(deliveries.all.length, JOBS);
    assert.ok(
      deliveries.all.every((d) => d.attempt === 1),
      "every job ran at its first attempt",
    );
    assert.deepEqual(new Set(jobs), new Set(deliveries.all.map((d) => d.jobId)));

    // One pool, not three: n3's work ran through both other nodes.
    const through = Object.fromEntries(["n1", "n2"].map((id) => [id, deliveries.all.filter((d) => d.via === id).length]));
    assert.ok(through.n1! > 0 && through.n2! > 0, `n3's work leased through n1 and n2: ${JSON.stringify(through)}`);
    const sample = await history(cluster.client, jobs[0]!);
    assert.equal(sample[0]?.dispatchedBy, "n3", "the execution was created by n3");
    t.diagnostic(`${JOBS} jobs submitted to n3, leased through ${JSON.stringify(through)}`);
  },
);
