// Clock skew (issue 8, "Tests that must exist"): one node runs 30 s ahead and
// one 30 s behind (Debian's libfaketime), beside a node on time. Leases and
// due times are judged by the database's clock, so neither skewed node
// dispatches early, late or twice, steals a shard, or keeps one when it dies.
// PostgreSQL only: a SQLite store has no clock of its own (each process
// reads its host's, which faketime moves).

import assert from "node:assert/strict";
import type { ExecutionItem, JobSpec } from "@duetime/sdk/contract";
import { shardOf } from "../../src/core/ids.js";
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
  const recurring = await createAll(
    normal.client,
    Array.from({ length: RECURRING }, (_, i) => everySecond("skew", i)),
  );
  const createdAt = Date.now();
  // One-offs taken by the skewed nodes, due at one absolute time (their executions are created at submit).
  const runAt = second(createdAt) + 8_000;
  const oneOff = (i: number): JobSpec => ({
    name: `at-${i}`,
    target: { type: "queue", pool: "skew" },
    schedule: { runAt: new Date(runAt).toISOString() },
  });
  const oneOffs = [
    ...(await createAll(
      cluster.node("ahead").client,
      Array.from({ length: ONE_OFFS }, (_, i) => oneOff(i)),
    )),
    ...(await createAll(
      cluster.node("behind").client,
      Array.from({ length: ONE_OFFS }, (_, i) => oneOff(ONE_OFFS + i)),
    )),
  ];

  // Every finding is gathered before the test fails, so one run tells all that a skewed clock did.
  const findings: string[] = [];
  const owner = (jobId: string) => epochs.get(shardOf(jobId))!.split("#")[0]!;
  const byOwner = (jobIds: string[]) =>
    JSON.stringify(Object.fromEntries(["ahead", "behind", "normal"].map((n) => [n, jobIds.filter((j) => owner(j) === n).length])));

  // Watch the shards for longer than a lease: the same owner at the same epoch throughout.
  const moved = new Set<string>();
  await waitFor(
    async () => {
      for (const s of (await normal.client.cluster()).shards)
        if (epochs.get(s.shard) !== `${s.owner}#${s.epoch}`) moved.add(`${s.shard}: ${epochs.get(s.shard)} -> ${s.owner}#${s.epoch}`);
      return Date.now() > createdAt + WATCH_MS;
    },
    "the watch is over",
    WATCH_MS + 5_000,
  );
  if (moved.size > 0) findings.push(`${moved.size} shards changed hands while every node lived, e.g. ${[...moved].slice(0, 3).join("; ")}`);

  // Early: an execution that exists before its occurrence is due by the database's clock.
  // So is one whose recorded dispatch or start (the store's times, by the engine's store clock) precedes it.
  const early: ExecutionItem[] = [];
  const stampedEarly: ExecutionItem[] = [];
  await mapLimit(recurring, 4, async (jobId) => {
    const items = await history(normal.client, jobId);
    const readAt = await databaseNow();
    for (const item of items) {
      const due = Date.parse(item.scheduledFor);
      if (due > readAt) early.push(item);
      if (Date.parse(item.dispatchedAt!) < due || (item.startedAt !== null && Date.parse(item.startedAt) < due)) stampedEarly.push(item);
    }
  });
  if (stampedEarly.length > 0) {
    const e = stampedEarly
      .slice(0, 2)
      .map((i) => `${i.scheduledFor} dispatched at ${i.dispatchedAt} by ${i.dispatchedBy}, started ${i.startedAt}`)
      .join("; ");
    findings.push(`${stampedEarly.length} executions dispatched or started before their time, e.g. ${e}`);
  }
  if (early.length > 0) {
    const e = early
      .slice(0, 2)
      .map((i) => `${i.scheduledFor} dispatched by ${i.dispatchedBy} "at" ${i.dispatchedAt}`)
      .join("; ");
    findings.push(
      `${early.length} executions existed before they were due by the database's clock (dispatched by ${byOwner(early.map((i) => i.jobId))}), e.g. ${e}`,
    );
  }

  // Handed out: every occurrence of the window once, not before its time, not late.
  const from = second(createdAt) + 2_000;
  const to = second(Date.now()) - LATE_MS;
  const window = deliveries.all.filter((d) => recurring.includes(d.jobId) && d.scheduledFor > from && d.scheduledFor <= to);
  const handed = new Set(window.map((d) => `${d.jobId}@${d.scheduledFor}`));
  const missing: string[] = [];
  for (const jobId of recurring) for (let at = from + 1000; at <= to; at += 1000) if (!handed.has(`${jobId}@${at}`)) missing.push(jobId);
  if (missing.length > 0)
    findings.push(`${missing.length} occurrences due ${LATE_MS} ms ago or more never reached a worker (jobs on the shards of ${byOwner(missing)})`);
  const twice = deliveries.repeated((d) => `${d.jobId}@${d.scheduledFor}`);
  if (twice.length > 0) findings.push(`${twice.length} occurrences handed out twice, e.g. ${JSON.stringify(twice.slice(0, 3))}`);
  const tooEarly = deliveries.all.filter((d) => d.receivedAt < d.scheduledFor);
  if (tooEarly.length > 0) findings.push(`${tooEarly.length} handed to a worker before their time, e.g. ${JSON.stringify(tooEarly.slice(0, 2))}`);
  const late = window.filter((d) => d.receivedAt - d.scheduledFor > LATE_MS);
  if (late.length > 0)
    findings.push(`${late.length} occurrences handed out more than ${LATE_MS} ms late (jobs on the shards of ${byOwner(late.map((d) => d.jobId))})`);

  await waitFor(() => Date.now() > runAt + LATE_MS, "the one-offs' time is past", 2 * LATE_MS);
  const ran = deliveries.all.filter((d) => oneOffs.includes(d.jobId));
  const onTime = ran.filter((d) => d.receivedAt >= runAt && d.receivedAt - runAt <= LATE_MS);
  if (onTime.length !== oneOffs.length || ran.length !== oneOffs.length) {
    findings.push(
      `of ${oneOffs.length} one-offs due at ${new Date(runAt).toISOString()}, submitted to ahead and behind, ${onTime.length} ran on time, ${ran.length} ran at all; ms after their time: ${JSON.stringify(ran.map((d) => d.receivedAt - runAt))}`,
    );
  }

  // Keep: the node whose clock runs ahead dies; its leases end 10 s after its last renewal by the database's clock.
  const killedAt = Date.now();
  await cluster.node("ahead").stop("SIGKILL");
  try {
    await cluster.waitForCounts({ behind: 128, normal: 128 }, 15_000, normal.client);
  } catch (err) {
    findings.push(`ahead's shards were not taken within 15 s of its death: ${(err as Error).message}`);
  }
  t.diagnostic(`ahead's shards taken ${Date.now() - killedAt} ms after SIGKILL; ${window.length} deliveries in the window checked`);
  assert.equal(findings.length, 0, `what the skewed clocks did:\n${findings.join("\n")}`);
});
