// A split brain: node n1 loses its database while its workers still reach it.
// Three real `duetime serve` processes share one PostgreSQL schema; n1 reaches
// it only through a TCP proxy in this process (tcp-proxy.ts), n2 and n3
// directly, and every node has an SDK worker of its own on one pool that
// carries every-second recurring jobs and a stream of one-offs. The proxy is
// cut (connections refused) or stalled (a half-open link: nothing refused,
// nothing answered). n1 must stop dispatching and granting leases, answer its
// workers 503 with Retry-After, report not ready, and refuse the heartbeats
// and completions it cannot write; n2 and n3 take its shards and carry its
// work. Once the link is back, the data must show every occurrence in the
// window dispatched once, every one-off completed, and every attempt that ran
// again recorded as a possible duplicate.

import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import type { ExecutionItem } from "@duetime/sdk/contract";
import { DuetimeApiError, type DuetimeClient, type WorkerEvent } from "@duetime/sdk";
import { shardOf } from "../../src/core/ids.js";
import { waitFor } from "../helpers.js";
import {
  Cluster,
  type ClusterNode,
  createAll,
  Deliveries,
  dispatchingNow,
  everySecond,
  history,
  mapLimit,
  second,
  waitForLedger,
} from "./harness.js";
import { clusterTest, type ClusterStore, type StoreKind } from "./stores.js";
import { CuttableProxy } from "./tcp-proxy.js";

const STORES: readonly StoreKind[] = ["postgres"];
const POOL = "split";
const RECURRING = 40;
/** The workers' lease: an attempt n1's worker ran but could not acknowledge runs again this long after its grant, at most. */
const LEASE_SECONDS = 5;

type Mode = "cut" | "stall" | "mid-dispatch";
const LINK: Record<Mode, string> = {
  cut: "connections refused",
  stall: "half-open link",
  // The session stays in the database, idle in a transaction that holds n1's shard rows FOR SHARE.
  "mid-dispatch": "half-open link between a dispatch's first statement and its COMMIT",
};

for (const mode of ["cut", "stall", "mid-dispatch"] as const) {
  await clusterTest(
    `n1 cut off from PostgreSQL (${LINK[mode]}) while its workers reach it: ` +
      "it refuses them 503 and is not ready, the others take its shards and its work; back: every occurrence dispatched once, every re-run recorded",
    STORES,
    (t, store) => partition(t, store, mode),
  );
}

/** A call of the API answered: its status and Retry-After (seconds), or the error that stood for an answer. */
interface Answer {
  status: number;
  retryAfter: string | null;
  code?: string;
}

async function call(node: ClusterNode, path: string, body: unknown): Promise<Answer> {
  const res = await fetch(`${node.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const envelope = (await res.json().catch(() => null)) as { error?: { code?: string } } | null;
  return { status: res.status, retryAfter: res.headers.get("retry-after"), ...(envelope?.error?.code ? { code: envelope.error.code } : {}) };
}

async function partition(t: TestContext, store: ClusterStore, mode: Mode): Promise<void> {
  const proxy = new CuttableProxy();
  await proxy.open();
  const cluster = new Cluster(store);
  t.after(async () => {
    await cluster.close();
    await proxy.cut();
  });
  // n2 first: it creates the schema; n1 reaches the same store through the proxy.
  const b = await cluster.start("n2");
  const behind = ["--store", proxy.urlOf(store.args[1]!), ...store.args.slice(2)];
  const [a, c] = await Promise.all([cluster.start("n1", { storeArgs: behind }), cluster.start("n3")]);
  const via: DuetimeClient = b.client; // every read of the cluster's state goes through a node that reaches the store
  await cluster.waitForCounts({ n1: 86, n2: 85, n3: 85 }, 20_000, via);
  const aShards = new Set((await cluster.holdings(via)).get("n1"));

  const deliveries = new Deliveries();
  /** What n1's worker was told when a call failed. */
  const refusals: { at: number; during: string; status?: number; code?: string; retryAfterSeconds?: number }[] = [];
  let running = 0; // attempts n1's worker is running now
  const onEvent = (e: WorkerEvent) => {
    if (e.type === "job:start") running++;
    if (e.type === "job:complete" || e.type === "job:fail" || e.type === "job:drop") running--;
    if (e.type !== "error") return;
    const err = e.error instanceof DuetimeApiError ? e.error : null;
    refusals.push({
      at: Date.now(),
      during: e.during,
      ...(err ? { status: err.status, code: err.code } : { code: String(e.error) }),
      ...(err?.retryAfterSeconds !== undefined ? { retryAfterSeconds: err.retryAfterSeconds } : {}),
    });
  };
  // Busy handlers: n1's worker holds attempts when the link goes, whose acknowledgements n1 cannot write.
  const workerOf = { n1: "via-n1", n2: "via-n2", n3: "via-n3" };
  cluster.worker(a, POOL, deliveries, { workerId: workerOf.n1, leaseSeconds: LEASE_SECONDS, busyMs: 300, onEvent });
  cluster.worker(b, POOL, deliveries, { workerId: workerOf.n2, leaseSeconds: LEASE_SECONDS, busyMs: 300 });
  cluster.worker(c, POOL, deliveries, { workerId: workerOf.n3, leaseSeconds: LEASE_SECONDS, busyMs: 300 });

  const recurring = await createAll(
    via,
    Array.from({ length: RECURRING }, (_, i) => everySecond(POOL, i)),
  );
  const createdAt = Date.now();
  const onA = recurring.filter((j) => aShards.has(shardOf(j)));
  assert.ok(onA.length > 0 && onA.length < RECURRING, "some recurring jobs on n1's shards, some elsewhere");

  // One-offs all along, through every node while it answers, some due a few seconds on (into the partition).
  const oneOffs: string[] = [];
  let submitting = true;
  const submitter = (async () => {
    for (let i = 0; submitting; i++) {
      const node = [b, c, a][i % 3]!;
      try {
        const job = await node.client.createJob({ name: `one-${i}`, target: { type: "queue", pool: POOL }, schedule: { delaySeconds: i % 4 } });
        oneOffs.push(job.jobId);
      } catch (err) {
        if (!(err instanceof DuetimeApiError) || node !== a) throw err; // only the cut-off node may refuse
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  t.after(async () => {
    submitting = false;
    await submitter.catch(() => {});
  });

  // An attempt held through n1 by a worker of the test's own, to heartbeat and complete while the link is gone.
  const probeJob = await via.createJob({ name: "probe", target: { type: "queue", pool: "probe" }, schedule: { delaySeconds: 0 } });
  const held = await waitFor(
    async () => (await a.client.lease("probe", { workerId: "probe-w", max: 1, leaseSeconds: LEASE_SECONDS })).items[0],
    "the probe leased through n1",
  );
  assert.equal(held.jobId, probeJob.jobId);
  await waitFor(() => dispatchingNow(cluster, onA[0]!, "n1", 3), "n1 dispatches its jobs on time", 20_000);
  // The link goes while n1's worker runs attempts: their acknowledgements are what n1 cannot write.
  await waitFor(() => running > 0, "n1's worker runs attempts", 10_000);

  // What n1 says in its log (pino, on its stdout): the lapse is the operator's word that it gave its shards up.
  let lapsedAt: number | null = null;
  a.child.stdout!.on("data", (chunk: Buffer) => {
    if (lapsedAt === null && chunk.toString().includes("shard leases lapsed")) lapsedAt = Date.now();
  });

  if (mode === "mid-dispatch") await proxy.stallAfter("dispatch_consume_due");
  const cutAt = Date.now();
  if (mode === "cut") await proxy.cut();
  else if (mode === "stall") proxy.stall();

  // Measured side by side: n1 not ready, n1's first 503 to a lease call, the others owning n1's shards.
  const since = () => Date.now() - cutAt;
  const readyz = async () => (await fetch(`${a.url}/readyz`)).status;
  const [notReadyMs, refused, takeoverMs, heartbeat, complete] = await Promise.all([
    waitFor(async () => (await readyz()) === 503, "n1's /readyz answers 503", 90_000).then(since),
    waitFor(
      async () => {
        const answer = await call(a, `/v1/pools/${POOL}/lease`, { workerId: "probe-lease", max: 1, waitSeconds: 0 });
        assert.notEqual(answer.status, 200, "n1 grants no lease while cut off");
        return answer.status === 503 ? { ...answer, afterMs: since() } : null;
      },
      "n1 answers a lease call 503",
      90_000,
    ),
    cluster.waitForCounts({ n2: 128, n3: 128 }, 90_000, via).then(async () => {
      const at = since();
      // n1 gave the shards up when the lease it last wrote ran out, before anyone could take them.
      assert.ok(lapsedAt !== null, "by the time the others own n1's shards, n1 has logged that its shard leases lapsed");
      assert.equal(await readyz(), 503, "and it is not ready");
      return at;
    }),
    call(a, `/v1/executions/${held.executionId}/heartbeat`, { attempt: held.attempt, leaseSeconds: LEASE_SECONDS }),
    call(a, `/v1/executions/${held.executionId}/complete`, { attempt: held.attempt }),
  ]);
  t.diagnostic(
    `${mode}: n1 not ready after ${notReadyMs} ms, its first 503 to a lease after ${refused.afterMs} ms (${refused.code}), ` +
      `its shard leases lapsed after ${lapsedAt! - cutAt} ms, its shards owned by n2 and n3 after ${takeoverMs} ms; ` +
      `its heartbeat answered ${heartbeat.status} ${heartbeat.code}, its complete ${complete.status} ${complete.code}`,
  );
  // STORE_UNAVAILABLE once a store call fails; UNAVAILABLE when the request's deadline (10 s) passes first, on a half-open link.
  assert.ok(["STORE_UNAVAILABLE", "UNAVAILABLE"].includes(refused.code ?? ""), `the lease refused: ${JSON.stringify(refused)}`);
  assert.match(refused.retryAfter ?? "", /^\d+$/, "the 503 says when to come back (Retry-After)");
  for (const [name, answer] of [
    ["heartbeat", heartbeat],
    ["complete", complete],
  ] as const) {
    assert.equal(answer.status, 503, `a ${name} n1 cannot write is refused, never answered OK: ${JSON.stringify(answer)}`);
    assert.ok(["STORE_UNAVAILABLE", "UNAVAILABLE"].includes(answer.code ?? ""), `${name}: ${JSON.stringify(answer)}`);
    assert.match(answer.retryAfter ?? "", /^\d+$/);
  }
  assert.equal((await fetch(`${a.url}/healthz`)).status, 200, "n1 is alive");

  // The others carry n1's work: its recurring jobs, and one-offs submitted since the cut.
  const takenAt = Date.now();
  await waitFor(
    async () => {
      const [latest] = await history(via, onA[0]!);
      return latest !== undefined && latest.dispatchedBy !== "n1" && Date.parse(latest.scheduledFor) > takenAt;
    },
    "n1's recurring jobs dispatched by the others",
    20_000,
  );
  const submittedSince = oneOffs.length;
  await waitFor(
    () => deliveries.all.some((d) => d.via !== "n1" && d.receivedAt > takenAt && oneOffs.indexOf(d.jobId) >= submittedSince - 1),
    "one-offs submitted during the partition run on the others",
    20_000,
  );
  const workerSaw = refusals.find((r) => r.at > cutAt && r.status === 503);
  t.diagnostic(
    `${mode}: n1's own worker got its first 503 after ${workerSaw ? `${workerSaw.at - cutAt} ms (${workerSaw.during}, ${workerSaw.code}, Retry-After ${workerSaw.retryAfterSeconds})` : "never"}; ` +
      `its errors: ${JSON.stringify(summarise(refusals.filter((r) => r.at > cutAt)))}`,
  );
  assert.ok(
    // Status 0: no answer before the client's own timeout (30 s), which is the client's word, not n1's.
    refusals.filter((r) => r.at > cutAt && (r.status ?? 0) > 0).every((r) => r.status === 503 && r.retryAfterSeconds !== undefined),
    `every answer n1's worker got while cut off is a 503 with Retry-After: ${JSON.stringify(summarise(refusals))}`,
  );

  // The link is back: n1 ready again and its share back.
  const restoredAt = Date.now();
  if (mode === "cut") await proxy.open();
  else proxy.unstall();
  await waitFor(async () => (await readyz()) === 200, "n1 ready again", 60_000);
  await cluster.waitForCounts({ n1: 86, n2: 85, n3: 85 }, 30_000, via);
  const rejoinedMs = Date.now() - restoredAt;

  // The probe's attempt lost its lease meanwhile: a late complete through n1 is refused, once another attempt holds it.
  const again = await waitFor(
    async () => (await b.client.lease("probe", { workerId: "probe-w2", max: 1, leaseSeconds: 60 })).items[0],
    "the probe leased again after its lease ran out",
  );
  assert.equal(again.attempt, held.attempt + 1);
  const late = await call(a, `/v1/executions/${held.executionId}/complete`, { attempt: held.attempt });
  assert.equal(late.status, 409, `the late complete of the attempt that lost its lease: ${JSON.stringify(late)}`);
  assert.equal(late.code, "LEASE_LOST");
  await b.client.complete(again.executionId, again.attempt);

  // The window: from before the cut to after the rejoin, every occurrence of every recurring job.
  const from = Math.max(second(cutAt) - 3_000, second(createdAt) + 1_000);
  const to = second(Date.now()) + 3_000;
  const perJob = (to - from) / 1000;
  await waitFor(() => Date.now() > to, "the window is over", 10_000);
  submitting = false;
  await submitter;
  await mapLimit(recurring, 4, (jobId) => waitForLedger(via, jobId, from, to, ["SUCCEEDED"], 30_000));

  const attempts: ExecutionItem[] = [];
  await mapLimit(recurring, 4, async (jobId) => {
    const items = (await history(via, jobId)).filter((i) => Date.parse(i.scheduledFor) > from && Date.parse(i.scheduledFor) <= to);
    assert.equal(new Set(items.map((i) => i.scheduledFor)).size, perJob, `${jobId}: one execution per occurrence`);
    attempts.push(...items);
  });
  const oneOffAttempts = await mapLimit(oneOffs, 8, async (jobId) =>
    waitFor(
      async () => {
        const items = await history(via, jobId);
        return items[0]?.state === "SUCCEEDED" ? items : null;
      },
      `one-off ${jobId} completed`,
      30_000,
    ),
  );
  attempts.push(...oneOffAttempts.flat());

  // n1 neither dispatched nor granted anything while it could not reach the store.
  const during = (iso: string | null) => iso !== null && Date.parse(iso) > cutAt && Date.parse(iso) < restoredAt;
  assert.deepEqual(
    attempts.filter((i) => i.dispatchedBy === "n1" && during(i.dispatchedAt)),
    [],
    "n1 dispatched nothing while cut off",
  );
  assert.deepEqual(
    attempts.filter((i) => i.workerId === workerOf.n1 && during(i.startedAt)),
    [],
    "n1 granted no lease while cut off",
  );

  // At least once, and no more than the fencing allows: only an attempt n1's worker ran and n1 could not
  // acknowledge runs again, and every execution that ran twice is listed as a possible duplicate.
  assert.deepEqual(
    deliveries.repeated((d) => `${d.executionId}#${d.attempt}`),
    [],
    "no attempt handed out twice",
  );
  const duplicates = new Map((await allPossibleDuplicates(via)).map((d) => [d.executionId, d]));
  const ranTwice = deliveries.repeated((d) => d.executionId).map(([executionId]) => executionId);
  for (const executionId of ranTwice) {
    const runs = deliveries.all.filter((d) => d.executionId === executionId).sort((x, y) => x.attempt - y.attempt);
    for (const earlier of runs.slice(0, -1)) {
      assert.equal(earlier.via, "n1", `${executionId}: only an attempt leased through the cut-off node runs again (${JSON.stringify(runs)})`);
      assert.ok(earlier.receivedAt < restoredAt, `${executionId}: its attempt ${earlier.attempt} ran before the link came back`);
    }
    assert.ok(duplicates.has(executionId), `${executionId} ran ${runs.length} times and is recorded as a possible duplicate`);
  }
  assert.ok(duplicates.has(held.executionId), "the probe's late complete is recorded as a possible duplicate");
  const reruns = attempts.filter((i) => i.attempt > 1).length;
  t.diagnostic(
    `${mode}: ${attempts.length} attempts checked (${recurring.length} recurring × ${perJob} occurrences, ${oneOffs.length} one-offs); ` +
      `${ranTwice.length} executions ran twice, ${reruns} attempts after the first, ${duplicates.size} possible duplicates recorded ` +
      `(${JSON.stringify(countBy([...duplicates.values()].map((d) => d.possibleDuplicate.reason)))}); n1 rejoined ${rejoinedMs} ms after the link came back`,
  );
}

async function allPossibleDuplicates(client: DuetimeClient) {
  const items = [];
  let cursor: string | undefined;
  do {
    const page = await client.listPossibleDuplicates({ limit: 500, ...(cursor ? { cursor } : {}) });
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return items;
}

function summarise(refusals: { during: string; status?: number; code?: string }[]): Record<string, number> {
  return countBy(refusals.map((r) => `${r.during} ${r.status ?? ""} ${r.code ?? ""}`.trim()));
}

function countBy(keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}
