// Database connections cut under load (issue 8, "Database restart"): every
// connection of the test's nodes is ended with pg_terminate_backend, again
// and again, while recurring jobs run and new jobs are submitted. The nodes
// reconnect, and every job a node accepted (201) runs; every occurrence runs
// once. Only this test's connections are cut (application_name = its schema),
// so tests running beside it are not disturbed; a real PostgreSQL restart
// would be, and is left out of the default suite.

import assert from "node:assert/strict";
import type { JobSpec } from "@duetime/sdk/contract";
import { DuetimeApiError } from "@duetime/sdk";
import { waitFor } from "../helpers.js";
import { Cluster, createAll, Deliveries, everySecond, mapLimit, second, waitForLedger } from "./harness.js";
import { terminateConnections } from "./postgres.js";
import { clusterTest, type StoreKind } from "./stores.js";

/** The stores this scenario runs on. */
const STORES: readonly StoreKind[] = ["postgres"];
const RECURRING = 60;
const CUTS = 5;
const CUT_EVERY_MS = 2_000;

await clusterTest("connections cut again and again under load: the nodes reconnect and every accepted job runs", STORES, async (t, store) => {
  const cluster = new Cluster(store);
  t.after(() => cluster.close());
  const nodes = await cluster.startAll(["n1", "n2", "n3"]);
  await cluster.waitForCounts({ n1: 86, n2: 85, n3: 85 }, 20_000);
  const deliveries = new Deliveries();
  // Short leases: an attempt granted in a transaction whose answer a cut lost runs again soon.
  for (const node of nodes) cluster.worker(node, "cuts", deliveries, { leaseSeconds: 5 });
  const recurring = await createAll(
    cluster.client,
    Array.from({ length: RECURRING }, (_, i) => everySecond("cuts", i)),
  );
  const startedAt = Date.now();

  // Submissions to every node, one at a time, all through the cuts: those answered 201 were accepted.
  const accepted: string[] = [];
  let refused = 0;
  let submitting = true;
  const submitter = (async () => {
    for (let i = 0; submitting; i++) {
      const spec: JobSpec = { name: `sub-${i}`, target: { type: "queue", pool: "cuts" }, schedule: { delaySeconds: 0 } };
      try {
        accepted.push((await nodes[i % nodes.length]!.client.createJob(spec)).jobId);
      } catch (err) {
        if (!(err instanceof DuetimeApiError)) throw err;
        refused++; // a 503 while the store is away, or no answer at all
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();

  let cut = 0;
  try {
    for (let i = 0; i < CUTS; i++) {
      await waitFor(() => Date.now() > startedAt + (i + 1) * CUT_EVERY_MS, "the next cut", CUT_EVERY_MS * 2);
      cut += await terminateConnections(store.schema!);
    }
  } finally {
    submitting = false;
    await submitter;
  }
  const cutsOverAt = Date.now();
  assert.ok(cut >= CUTS, `the nodes had connections to cut each time (${cut} cut)`);

  // Recovered: every node ready again, the shards shared as before.
  await waitFor(
    async () => (await Promise.all(nodes.map((n) => n.client.ready().catch(() => false)))).every(Boolean),
    "every node ready again",
    20_000,
  );
  await cluster.waitForCounts({ n1: 86, n2: 85, n3: 85 }, 20_000);

  // Nothing accepted is lost: every accepted job ran, every occurrence from before the cuts to after them ran, none twice.
  assert.ok(accepted.length > 0, "jobs were accepted during the cuts");
  await waitFor(() => accepted.every((j) => deliveries.all.some((d) => d.jobId === j)), "every accepted job handed to a worker", 20_000);
  const from = second(startedAt) + 1_000;
  const to = second(cutsOverAt) + 2_000;
  await waitFor(() => Date.now() > to, "the window is over", 10_000);
  await mapLimit(recurring, 4, (jobId) => waitForLedger(cluster.client, jobId, from, to, ["SUCCEEDED", "RUNNING", "QUEUED"], 20_000));
  const occurrences = () =>
    new Set(
      deliveries.all
        .filter((d) => recurring.includes(d.jobId) && d.scheduledFor > from && d.scheduledFor <= to)
        .map((d) => `${d.jobId}@${d.scheduledFor}`),
    );
  await waitFor(() => occurrences().size === RECURRING * ((to - from) / 1000), "every occurrence in the window handed to a worker", 20_000);
  // At least once: an attempt whose grant a cut lost runs again as the next attempt, never the same attempt twice.
  assert.deepEqual(
    deliveries.repeated((d) => `${d.executionId}#${d.attempt}`),
    [],
    "no attempt handed out twice",
  );
  const again = deliveries.repeated((d) => `${d.jobId}@${d.scheduledFor}`).length;
  t.diagnostic(
    `${cut} connections cut in ${CUTS} rounds; ${accepted.length} jobs accepted and run, ${refused} refused; ${occurrences().size} occurrences checked, ${again} ran again after a lost grant or ack`,
  );
});
