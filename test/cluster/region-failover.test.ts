// A promotion drill, active–passive regions (issue "faults a real deployment
// meets"): region A's two nodes run on a private primary under load (one-offs
// created through the API, recurring every-second jobs, SDK workers), region
// B's standby streams from it. The link to region B stalls (the primary's
// walsender is stopped: replication lag, as a slow cross-region link makes
// it), the primary crashes (pg_ctl stop -m immediate) with creates in flight,
// the standby is promoted, and region B's two nodes start on it.
//
// What is measured, from the data: which jobs answered 201 are missing on the
// new primary (the RPO), and which executions ran in both regions. What is
// asserted is what the replication mode guarantees, never a count that can
// flake: asynchronous, nothing answered before the standby last caught up is
// lost, and everything created after the link stalled is; synchronous, no job
// that got a 201 is lost. Asynchronous only: an attempt granted on the old
// primary after the stall is granted again on the new one under the same
// number, and the old region's completion of it, sent to region B with its
// lease token, is refused (the token is the lease epoch, which the promoted
// standby writes anew: its unlogged tables start empty) while the new
// holder's stands. Then the split brain: the old primary comes back as a
// primary of its own with a region-A node still on it, and another region-A
// node restarts on the new primary. The epoch fence
// is per database: the new primary's ledger has each occurrence once and
// nothing of the node left on the old one, which runs the schedule there too.

import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import type { JobSpec } from "@duetime/sdk/contract";
import { DuetimeApiError, type DuetimeClient } from "@duetime/sdk";
import { waitFor } from "../helpers.js";
import { Cluster, type ClusterNode, Deliveries, createAll, everySecond, history, mapLimit, second, waitForLedger } from "./harness.js";
import { pgInstancesAvailable, type Primary, type Standby, startPrimary, startStandby, stopAll } from "./pg-instances.js";
import type { ClusterStore } from "./stores.js";

const POOL = "drill";
const RECURRING = 20;
const CREATORS = 4;
/** Creates answered 201 after the link to region B stalled, before the primary is crashed. */
const AFTER_STALL = 30;
const STANDBY = "region_b";
/** One-offs on the standby before the stall, due just after it: granted in region A after the stall, so never on the standby. */
const PROBES = 5;
const PROBE_DELAY_MS = 1_500;

/**
 * The nodes' store: the private server's postgres database, schema duetime
 * (region B's nodes migrate the same schema, replicated). With a synchronous
 * standby the nodes run --durability strict, so their lease grants wait for
 * it too: under "accepted" a grant commits without waiting, as completions do.
 */
function storeOn(server: { url: string }, synchronous: boolean): ClusterStore {
  const args = ["--store", server.url, "--schema", "duetime", ...(synchronous ? ["--durability", "strict"] : [])];
  return { kind: "postgres", args, schema: "duetime", drop: async () => {} };
}

/** One create, as the test saw it: sent, and answered 201. */
interface Accepted {
  jobId: string;
  sentAt: number;
  answeredAt: number;
}

/**
 * One-offs created without pause through the nodes, CREATORS at a time,
 * until stopped: every 201 is recorded; a 503 or no answer (the store gone)
 * is counted as refused.
 */
function createContinuously(nodes: ClusterNode[]) {
  const accepted: Accepted[] = [];
  let refused = 0;
  let running = true;
  const loops = Array.from({ length: CREATORS }, async (_, c) => {
    for (let i = 0; running; i++) {
      const spec: JobSpec = { name: `once-${c}-${i}`, target: { type: "queue", pool: POOL }, schedule: { delaySeconds: 0 } };
      const sentAt = Date.now();
      try {
        const { jobId } = await nodes[(c + i) % nodes.length]!.client.createJob(spec);
        accepted.push({ jobId, sentAt, answeredAt: Date.now() });
      } catch (err) {
        if (!(err instanceof DuetimeApiError)) throw err;
        refused++;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
  return {
    accepted,
    get refused() {
      return refused;
    },
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/**
 * Marks, again and again, a time before which every create answered 201 is
 * on the standby: its commit was flushed (creates commit synchronously), so
 * it lies below the primary's WAL position read after the mark, which the
 * standby then replayed. Stops by itself once the primary is gone or the
 * standby no longer catches up.
 */
function trackCaughtUp(standby: Standby) {
  const state = { at: 0, running: true };
  const loop = (async () => {
    while (state.running) {
      const mark = Date.now();
      try {
        await standby.waitCaughtUp(3_000);
      } catch {
        return;
      }
      state.at = mark;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    get at() {
      return state.at;
    },
    async stop() {
      state.running = false;
      await loop;
    },
  };
}

/** The link to the standby stalls: the primary's walsender for it is stopped, so nothing more reaches region B. */
async function stallReplication(primary: Primary): Promise<void> {
  const [sender] = await primary.query<{ pid: number }>("SELECT pid FROM pg_stat_replication WHERE application_name = $1", [STANDBY]);
  assert.ok(sender, "the standby streams from the primary");
  process.kill(sender.pid, "SIGSTOP"); // SIGKILLed by the postmaster's immediate shutdown, stopped or not
}

/** The accepted jobs the client's store does not have (404). */
async function missing(client: DuetimeClient, accepted: readonly Accepted[]): Promise<Accepted[]> {
  const found = await mapLimit(accepted, 8, async (a) => {
    try {
      await client.getJob(a.jobId);
      return true;
    } catch (err) {
      if (err instanceof DuetimeApiError && err.status === 404) return false;
      throw err;
    }
  });
  return accepted.filter((_, i) => !found[i]);
}

/** Waits until every one of the one-offs is COMPLETED (a job done is not read again). */
async function completedAll(client: DuetimeClient, jobIds: readonly string[]): Promise<void> {
  let left = [...jobIds];
  await waitFor(
    async () => {
      const done = await mapLimit(left, 8, async (id) => (await client.getJob(id)).state === "COMPLETED");
      left = left.filter((_, i) => !done[i]);
      return left.length === 0;
    },
    `every kept one-off completed (${jobIds.length})`,
    60_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; not yet: ${left.slice(0, 5).join(", ")} (${left.length} in all)`);
  });
}

const regionOf = (via: string) => via[0];

async function drill(t: TestContext, synchronous: boolean): Promise<void> {
  t.after(() => stopAll());
  const primary = await startPrimary({ synchronousStandby: synchronous });
  const standby = await startStandby(primary, { name: STANDBY });

  // Region A under load.
  const regionA = new Cluster(storeOn(primary, synchronous));
  t.after(() => regionA.close());
  const [a1, a2] = await regionA.startAll(["a1", "a2"]);
  await regionA.waitForCounts({ a1: 128, a2: 128 }, 20_000);
  const deliveries = new Deliveries();
  // Short leases: an attempt whose completion region B never saw runs again soon after the takeover.
  for (const node of [a1!, a2!]) regionA.worker(node, POOL, deliveries, { leaseSeconds: 5 });
  const recurring = await createAll(
    a1!.client,
    Array.from({ length: RECURRING }, (_, i) => everySecond(POOL, i)),
  );
  const startedAt = Date.now();
  const creates = createContinuously([a1!, a2!]);
  const caughtUp = trackCaughtUp(standby);
  await waitFor(() => creates.accepted.length >= 200 && caughtUp.at > startedAt, "region A accepts jobs, the standby keeps up", 30_000);

  // Asynchronous: probes the standby has, due after the stall, so region A grants them where region B never sees it.
  const probeDue = Date.now() + PROBE_DELAY_MS;
  const probes = synchronous
    ? []
    : await createAll(
        a1!.client,
        Array.from({ length: PROBES }, (_, i) => ({
          name: `probe-${i}`,
          target: { type: "queue", pool: POOL },
          schedule: { runAt: new Date(probeDue).toISOString() },
        })),
      );
  if (!synchronous) await standby.waitCaughtUp(5_000);

  // The link to region B stalls. Asynchronous: the primary goes on accepting; synchronous: its commits wait for the standby.
  await stallReplication(primary);
  const stalledAt = Date.now();
  if (!synchronous) {
    assert.ok(stalledAt < probeDue, `the link stalled before the probes were due (${probeDue - stalledAt} ms before)`);
    await waitFor(() => creates.accepted.filter((a) => a.sentAt > stalledAt).length >= AFTER_STALL, "creates accepted after the stall", 20_000);
    await waitFor(() => probes.every((id) => deliveries.all.some((d) => d.jobId === id)), "every probe granted in region A after the stall", 20_000);
  } else {
    // Creates sent after the stall are in flight (their commits wait), and the deliveries of a second go on in region A's workers.
    await waitFor(() => Date.now() > stalledAt + 2_000, "two seconds of stall", 5_000);
  }
  const crashedAt = Date.now();
  await primary.stop({ mode: "immediate" });
  const stoppedAt = Date.now();
  await creates.stop();
  await caughtUp.stop();

  await standby.promote();
  const promotedAt = Date.now();

  // Region B: two nodes on the promoted standby, with workers.
  const regionB = new Cluster(storeOn(standby, synchronous));
  t.after(() => regionB.close());
  const [b1, b2] = await regionB.startAll(["b1", "b2"]);
  for (const node of [b1!, b2!]) regionB.worker(node, POOL, deliveries, { leaseSeconds: 5 });
  // Region A's shard leases run out on the new primary (10 s after their last renewal), then B's nodes take them.
  await regionB.waitForCounts({ b1: 128, b2: 128 }, 30_000);
  const takenOverAt = Date.now();

  // The RPO: accepted jobs the new primary does not have.
  const lost = await missing(b1!.client, creates.accepted);
  const lostIds = new Set(lost.map((a) => a.jobId));
  const lastCaughtUp = caughtUp.at;
  assert.ok(lastCaughtUp > startedAt, "the standby caught up during the load");
  assert.deepEqual(
    lost.filter((a) => a.answeredAt < lastCaughtUp),
    [],
    "no job answered 201 before the standby last caught up is lost",
  );
  if (synchronous) {
    assert.deepEqual(lost, [], "synchronous replication: no job that got a 201 is lost");
    assert.equal(creates.accepted.filter((a) => a.sentAt > stalledAt).length, 0, "synchronous: no create sent after the stall was answered 201");
  } else {
    assert.deepEqual(
      creates.accepted.filter((a) => a.sentAt > stalledAt && !lostIds.has(a.jobId)),
      [],
      "asynchronous: every job created after the link stalled is lost with the primary",
    );
  }

  // Every accepted job the new primary has runs there; every occurrence across the failover runs on it (catch_up).
  await completedAll(
    b1!.client,
    creates.accepted.filter((a) => !lostIds.has(a.jobId)).map((a) => a.jobId),
  );
  const from = second(startedAt) + 1_000;
  const to = second(takenOverAt) + 2_000;
  await waitFor(() => Date.now() > to, "the window is over", 10_000);
  await mapLimit(recurring, 4, (jobId) => waitForLedger(b1!.client, jobId, from, to, ["SUCCEEDED"], 30_000));

  // What ran twice: executions handed out in both regions (their completion, or their dispatch, did not reach the standby).
  const regions = new Map<string, Set<string>>();
  for (const d of deliveries.all) regions.set(d.executionId, (regions.get(d.executionId) ?? new Set()).add(regionOf(d.via)!));
  const twice = [...regions].filter(([, r]) => r.size === 2).map(([id]) => id);
  const attemptTwice = deliveries.repeated((d) => `${d.executionId}#${d.attempt}`).length;
  assert.deepEqual(
    deliveries.repeated((d) => `${regionOf(d.via)}:${d.executionId}#${d.attempt}`),
    [],
    "within one region no attempt is handed out twice: each database grants an attempt once",
  );
  const recorded = new Set((await b1!.client.listPossibleDuplicates({ limit: 500 })).items.map((i) => i.executionId));
  if (synchronous) {
    // Grants commit synchronously (strict), so each is on the standby before its worker has it: region B reaps the attempt
    // and runs the next one, and the store records the possible duplicate.
    assert.equal(attemptTwice, 0, "synchronous: no attempt number granted twice across the failover");
    assert.deepEqual(
      twice.filter((id) => !recorded.has(id)),
      [],
      "synchronous: every execution that ran in both regions is a recorded possible duplicate",
    );
  }
  t.diagnostic(
    `${synchronous ? "synchronous" : "asynchronous"}: ${creates.accepted.length} jobs accepted (201), ` +
      `${creates.accepted.filter((a) => a.answeredAt >= lastCaughtUp).length} after the standby last caught up, ` +
      `${creates.accepted.filter((a) => a.sentAt > stalledAt).length} sent after the stall; ${lost.length} lost on the new primary; ` +
      `${creates.refused} creates refused or unanswered; ${twice.length} executions ran in both regions ` +
      `(${attemptTwice} with the same attempt number), ${twice.filter((id) => recorded.has(id)).length} of them recorded possible duplicates; ` +
      `stall ${crashedAt - stalledAt} ms, crash ${stoppedAt - crashedAt} ms, promotion ${promotedAt - stoppedAt} ms, region B's takeover ${takenOverAt - promotedAt} ms after it`,
  );

  if (!synchronous) await staleCompletions(t, { client: b1!.client, deliveries, probes });
  if (!synchronous) await splitBrain(t, { primary, regionA, regionB, recurring, deliveries });
}

/**
 * Asynchronous: the attempts region A was granted and region B granted again
 * under the same number (every probe among them). Each one's completion by
 * region A's worker, sent to region B with region A's lease token, is refused
 * LEASE_LOST and recorded as a possible duplicate; the new holder's success
 * stands, and its own token's completion, repeated, answers ok.
 */
async function staleCompletions(t: TestContext, c: { client: DuetimeClient; deliveries: Deliveries; probes: readonly string[] }): Promise<void> {
  const { client, deliveries, probes } = c;
  const inRegion = (region: string) => deliveries.all.filter((d) => regionOf(d.via) === region);
  const regrants = inRegion("a").flatMap((old) => {
    const holder = inRegion("b").find((d) => d.executionId === old.executionId && d.attempt === old.attempt);
    return holder ? [{ old, holder }] : [];
  });
  assert.deepEqual(
    probes.filter((id) => !regrants.some((r) => r.old.jobId === id)),
    [],
    "every probe was granted in both regions under the same attempt number",
  );
  for (const { old, holder } of regrants) {
    assert.ok(old.leaseToken !== undefined && holder.leaseToken !== undefined, `${old.executionId}: both grants carry a lease token`);
    assert.notEqual(old.leaseToken, holder.leaseToken, `${old.executionId}#${old.attempt}: the promotion moved the token on`);
  }
  const marks = async () =>
    new Map((await client.listPossibleDuplicates({ limit: 500 })).items.map((i) => [i.executionId, i.possibleDuplicate] as const));
  const before = await marks();
  await mapLimit(regrants, 4, async ({ old, holder }) => {
    const succeeded = async () =>
      (await history(client, old.jobId)).find((i) => i.executionId === old.executionId && i.attempt === old.attempt && i.state === "SUCCEEDED");
    await waitFor(async () => (await succeeded()) !== undefined, `${old.executionId}#${old.attempt}: the new holder's success`, 30_000);
    await assert.rejects(client.complete(old.executionId, old.attempt, null, { leaseToken: old.leaseToken! }), (err: unknown) => {
      assert.ok(err instanceof DuetimeApiError, String(err));
      assert.equal(err.status, 409, `${old.executionId}#${old.attempt}: region A's completion, with its token`);
      assert.equal(err.code, "LEASE_LOST");
      return true;
    });
    await client.complete(holder.executionId, holder.attempt, null, { leaseToken: holder.leaseToken! });
    assert.equal((await succeeded())?.workerId, holder.workerId, `${old.executionId}#${old.attempt}: the new holder's success stands`);
  });
  const after = await marks();
  for (const { old } of regrants) {
    const mark = after.get(old.executionId);
    assert.deepEqual(
      mark && { attempt: mark.attempt, reason: mark.reason },
      { attempt: old.attempt, reason: "lease_lost" },
      `${old.executionId}: region A's attempt ${old.attempt} recorded as a possible duplicate`,
    );
    assert.notDeepEqual(before.get(old.executionId), mark, `${old.executionId}: recorded by the refused completion`);
  }
  t.diagnostic(
    `stale completions: ${regrants.length} attempts granted in both regions under one number (${probes.length} probes among them), ` +
      `tokens ${JSON.stringify([...new Set(regrants.map((r) => r.old.leaseToken))])} in region A and ` +
      `${JSON.stringify([...new Set(regrants.map((r) => r.holder.leaseToken))])} in region B; every one refused LEASE_LOST and recorded`,
  );
}

/**
 * The old primary comes back as a primary of its own (its standby promoted
 * meanwhile: two primaries). a2 stays on it; a1 restarts on the new primary.
 * What the data proves: a1 takes its share on the new primary through the
 * shard protocol and the new primary's ledger holds each occurrence once,
 * none dispatched by a2; a2 runs the whole schedule on the old primary, so
 * each occurrence runs in both databases, which no fence inside one database
 * can prevent: the old primary must be fenced off before region B starts.
 */
async function splitBrain(
  t: TestContext,
  c: { primary: Primary; regionA: Cluster; regionB: Cluster; recurring: string[]; deliveries: Deliveries },
): Promise<void> {
  const { primary, regionA, regionB, recurring, deliveries } = c;
  await primary.start();
  const a2 = regionA.node("a2");
  await regionA.node("a1").stop("SIGKILL");
  await regionB.start("a1");
  const b1 = regionB.node("b1");
  await regionB.waitForCounts({ a1: 86, b1: 85, b2: 85 }, 30_000);
  await waitFor(() => a2.client.ready().catch(() => false), "a2 serves again on the old primary", 30_000);
  await regionA.waitForCounts({ a2: 256 }, 30_000, a2.client);
  const splitFrom = second(Date.now()) + 1_000;
  const splitTo = splitFrom + 5_000;
  await waitFor(() => Date.now() > splitTo + 1_000, "five seconds of split brain", 10_000);

  // The new primary: every occurrence of the window once, dispatched by its own nodes only; a1 among them.
  const dispatchers = new Map<string, number>();
  await mapLimit(recurring, 4, async (jobId) => {
    await waitForLedger(b1.client, jobId, splitFrom, splitTo, ["SUCCEEDED"], 30_000);
    const items = (await history(b1.client, jobId)).filter((i) => Date.parse(i.scheduledFor) > splitFrom && Date.parse(i.scheduledFor) <= splitTo);
    assert.equal(new Set(items.map((i) => i.scheduledFor)).size, 5, `${jobId}: every occurrence on the new primary`);
    assert.equal(items.length, 5, `${jobId}: one execution, one attempt per occurrence on the new primary`);
    for (const item of items) dispatchers.set(item.dispatchedBy!, (dispatchers.get(item.dispatchedBy!) ?? 0) + 1);
  });
  assert.equal(dispatchers.get("a2") ?? 0, 0, "the node left on the old primary dispatched nothing on the new one");
  assert.ok((dispatchers.get("a1") ?? 0) > 0, `a1, restarted on the new primary, dispatches its share: ${JSON.stringify([...dispatchers])}`);

  // The old primary: a2 dispatches the same occurrences there (catch_up, however late it resumed); its worker runs them again.
  let onOld = 0;
  let lagMs = 0;
  await mapLimit(recurring, 4, async (jobId) => {
    await waitForLedger(a2.client, jobId, splitFrom, splitTo, ["SUCCEEDED"], 60_000);
    const items = (await history(a2.client, jobId)).filter((i) => Date.parse(i.scheduledFor) > splitFrom && Date.parse(i.scheduledFor) <= splitTo);
    for (const item of items) {
      assert.equal(item.dispatchedBy, "a2", "only a2 dispatches on the old primary");
      lagMs = Math.max(lagMs, Date.parse(item.dispatchedAt!) - Date.parse(item.scheduledFor));
    }
    onOld += items.length;
  });
  assert.ok(onOld > 0, "a2 runs the schedule on the old primary: split brain");
  const inWindow = deliveries.all.filter((d) => d.scheduledFor > splitFrom && d.scheduledFor <= splitTo);
  const newRegion = inWindow.filter((d) => d.via !== "a2");
  assert.deepEqual(
    new Set(newRegion.map((d) => `${d.jobId}@${d.scheduledFor}`)).size,
    newRegion.length,
    "no occurrence handed out twice through the new primary's nodes",
  );
  t.diagnostic(
    `split brain, ${(splitTo - splitFrom) / 1000} s: new primary dispatched ${JSON.stringify(Object.fromEntries(dispatchers))}; ` +
      `the old primary (a2) ${onOld} of the same occurrences (the latest ${lagMs} ms after its time); ${inWindow.length - newRegion.length} handed out there too`,
  );
}

if (await pgInstancesAvailable("the region failover drill")) {
  test("region failover, asynchronous replication: what a promotion loses and runs twice, and the split brain", { timeout: 300_000 }, (t) =>
    drill(t, false),
  );
  test("region failover, synchronous replication: no job that got a 201 is lost", { timeout: 300_000 }, (t) => drill(t, true));
}
