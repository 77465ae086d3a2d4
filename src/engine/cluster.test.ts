// Several engines (nodes) on one SQLite file (WAL lets several connections
// share it), each with its own fake clock, set to the same time unless a test
// freezes one: membership, shard balance, handover and takeover.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { SHARD_COUNT, shardOf } from "../core/ids.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { Store } from "../store/store.js";
import { openEngine, type Engine } from "./engine.js";
import { EngineEvents } from "./events.js";
import { Scheduler } from "./scheduler.js";
import { DEFAULT_CONTEXT as ctx, type Service } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-cluster-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const START = Date.parse("2026-03-01T00:00:00Z");
/** The documented default shard lease, renewed every third of it. */
const LEASE_MS = 10_000;
const ROUND_MS = Math.floor(LEASE_MS / 3);

interface Node {
  id: string;
  engine: Engine;
  clock: FakeClock;
  /** A frozen node's clock stands still: its loops never run again (a paused or partitioned process). */
  frozen: boolean;
}

class Cluster {
  readonly nodes: Node[] = [];
  private readonly file = join(dir, `cluster${files++}.sqlite`);
  now = START;

  async join(id: string, options: { pollIntervalMs?: number } = {}): Promise<Node> {
    const clock = new FakeClock(this.now);
    const engine = await openEngine({
      store: `sqlite:${this.file}`,
      clock,
      nodeId: id,
      address: `${id}.internal:8080`,
      httpTargets: false,
      ...options,
    });
    await engine.start();
    const node = { id, engine, clock, frozen: false };
    this.nodes.push(node);
    return node;
  }

  get live(): Node[] {
    return this.nodes.filter((n) => !n.frozen);
  }

  /** Moves the live nodes' clocks on (their timers fire), then lets each finish a shard round and a dispatch pass. */
  async step(ms: number): Promise<void> {
    this.now += ms;
    for (const n of this.live) n.clock.advance(ms);
    for (const n of this.live) {
      await n.engine.scheduler.shards.runOnce();
      await n.engine.scheduler.runOnce();
    }
  }

  /** Shards held (lease not expired at now) by each owner, read from the store. */
  async holdings(): Promise<Map<string, number[]>> {
    const byOwner = new Map<string, number[]>();
    for (const s of (await this.live[0]!.engine.service.cluster(ctx)).shards) {
      if (s.owner !== null && Date.parse(s.leaseUntil) >= this.now) byOwner.set(s.owner, [...(byOwner.get(s.owner) ?? []), s.shard]);
    }
    return byOwner;
  }

  async counts(): Promise<Record<string, number>> {
    return Object.fromEntries([...(await this.holdings())].map(([owner, shards]) => [owner, shards.length]).sort());
  }

  async stop(): Promise<void> {
    for (const n of this.nodes) await n.engine.stop();
  }
}

test("three nodes share the 256 shards evenly; a fourth joins and they rebalance, handing shards over", async () => {
  const cluster = new Cluster();
  for (const id of ["node-a", "node-b", "node-c"]) await cluster.join(id);
  await cluster.step(ROUND_MS);
  assert.deepEqual(await cluster.counts(), { "node-a": 86, "node-b": 85, "node-c": 85 });
  for (const n of cluster.nodes) assert.equal(n.engine.scheduler.ownedShards.length, n.id === "node-a" ? 86 : 85, `${n.id} dispatches what it holds`);

  await cluster.join("node-d");
  // one round: the others hand their surplus over, which node-d takes on its next round, not a lease later
  await cluster.step(0);
  await cluster.step(0);
  assert.deepEqual(await cluster.counts(), { "node-a": 64, "node-b": 64, "node-c": 64, "node-d": 64 });
  const owned = cluster.nodes.flatMap((n) => n.engine.scheduler.ownedShards).sort((x, y) => x - y);
  assert.deepEqual(
    owned,
    Array.from({ length: SHARD_COUNT }, (_, i) => i),
    "every shard dispatched by exactly one node",
  );

  const view = await cluster.nodes[0]!.engine.service.cluster(ctx);
  assert.deepEqual(
    view.nodes.map((n) => [n.nodeId, n.address, n.shards.length, n.lastHeartbeatAt]),
    ["node-a", "node-b", "node-c", "node-d"].map((id) => [id, `${id}.internal:8080`, 64, new Date(cluster.now).toISOString()]),
  );
  assert.equal(view.storeTime, new Date(cluster.now).toISOString(), "ages are by the store's clock (pinned by the fake clocks here)");
  assert.deepEqual(new Set(view.nodes.map((n) => n.heartbeatAgeSeconds)), new Set([0]));
  assert.equal(view.shards.length, SHARD_COUNT);
  for (const s of view.shards) assert.equal(s.leaseRemainingSeconds, (Date.parse(s.leaseUntil) - cluster.now) / 1000);
  assert.ok(
    view.shards.every((s) => s.leaseRemainingSeconds > 0 && s.leaseRemainingSeconds <= LEASE_MS / 1000),
    "every lease live, at most 10 s left",
  );
  await cluster.stop();
});

test("a node that stops gracefully hands its shards over at once: the others take them in their next round", async () => {
  const cluster = new Cluster();
  for (const id of ["node-a", "node-b", "node-c", "node-d"]) await cluster.join(id);
  await cluster.step(ROUND_MS);
  await cluster.step(ROUND_MS);
  assert.equal((await cluster.holdings()).get("node-d")?.length, 64);

  await cluster.nodes[3]!.engine.stop();
  cluster.nodes.pop();
  await cluster.step(0); // no time passes: no lease has expired
  assert.deepEqual(await cluster.counts(), { "node-a": 86, "node-b": 85, "node-c": 85 });
  assert.deepEqual(
    (await cluster.nodes[0]!.engine.service.cluster(ctx)).nodes.map((n) => n.nodeId),
    ["node-a", "node-b", "node-c"],
  );
  await cluster.stop();
});

test("a node that stops renewing keeps its shards until its 10 s lease ends; then the others take them over and run its due work", async () => {
  const cluster = new Cluster();
  for (const id of ["node-a", "node-b", "node-c"]) await cluster.join(id);
  await cluster.step(ROUND_MS);
  const c = cluster.nodes[2]!;
  const cShards = new Set((await cluster.holdings()).get("node-c"));
  const jobs = [];
  // Recurring jobs with one occurrence, a second from now: dispatched by their shard's owner.
  const once = { cron: "* * * * * *", endAt: new Date(cluster.now + 1000).toISOString() };
  for (let i = 0; i < 12; i++)
    jobs.push(await cluster.nodes[0]!.engine.service.createJob(ctx, { name: `j${i}`, target: { type: "queue", pool: "p" }, schedule: once }));
  const onC = jobs.filter((j) => cShards.has(shardOf(j.jobId)));
  assert.ok(onC.length > 0 && onC.length < jobs.length, "some jobs on node-c's shards, some elsewhere");
  // A one-off passes through no shard owner: its execution exists from submit, leasable at its time.
  let oneOff: Awaited<ReturnType<Service["createJob"]>>;
  do
    oneOff = await cluster.nodes[0]!.engine.service.createJob(ctx, {
      name: "one-off",
      target: { type: "queue", pool: "o" },
      schedule: { delaySeconds: 1 },
    });
  while (!cShards.has(shardOf(oneOff.jobId)));

  c.frozen = true; // its last round was at START + ROUND_MS: its lease and heartbeat last until START + ROUND_MS + 10 s
  for (let t = ROUND_MS; t + ROUND_MS < ROUND_MS + LEASE_MS; t += ROUND_MS) await cluster.step(ROUND_MS);
  assert.equal((await cluster.holdings()).get("node-c")?.length, 85, "a live lease is never taken");
  for (const j of onC) assert.equal((await cluster.nodes[0]!.engine.service.listExecutions(ctx, j.jobId, {})).items.length, 0, "node-c's work waits");
  const leased = (await cluster.nodes[0]!.engine.service.lease(ctx, "o", { workerId: "w", max: 1000 })).items.map((i) => i.jobId);
  assert.ok(leased.includes(oneOff.jobId), "a one-off on node-c's shard does not wait");

  await cluster.step(ROUND_MS); // past the lease: taken over within one round
  assert.deepEqual(await cluster.counts(), { "node-a": 128, "node-b": 128 });
  // The metrics tell the takeover: every one of node-c's 85 shards was taken, within a round of its expiry.
  let takenOver = 0;
  for (const n of cluster.live) {
    const text = await n.engine.metricsText();
    assert.match(text, /^duetime_shards_owned 128$/m, n.id);
    const changes = (change: string) => Number(new RegExp(`^duetime_shard_changes_total\\{change="${change}"\\} (\\d+)$`, "m").exec(text)?.[1]);
    assert.equal(changes("gained") - changes("lost"), 128, `${n.id}: what it gained less what it lost is what it holds`);
    takenOver += Number(/^duetime_shard_takeover_seconds_count (\d+)$/m.exec(text)?.[1]);
    assert.match(text, /^duetime_shard_takeover_seconds_bucket\{le="5"\} (\d+)$/m, n.id);
    assert.equal(
      /^duetime_shard_takeover_seconds_bucket\{le="5"\} (\d+)$/m.exec(text)?.[1],
      /^duetime_shard_takeover_seconds_count (\d+)$/m.exec(text)?.[1],
      `${n.id}: within a round`,
    );
  }
  assert.equal(takenOver, 85);
  for (const j of jobs) {
    const runs = (await cluster.nodes[0]!.engine.service.listExecutions(ctx, j.jobId, {})).items;
    assert.equal(runs.length, 1, `${j.jobId} ran once`);
    if (cShards.has(shardOf(j.jobId))) assert.notEqual(runs[0]!.dispatchedBy, "node-c");
  }
  await cluster.stop();
});

test("shard leases are renewed on their own loop, while a dispatch pass is stuck", async () => {
  const clock = new FakeClock(START);
  const raw = await openSqliteStore({ path: join(dir, `stuck${files++}.sqlite`) });
  let unblock!: () => void;
  const blocked = new Promise<void>((resolve) => (unblock = resolve));
  // the window load never returns until unblocked: the scheduler's pass hangs
  const store = new Proxy(raw, {
    get(target, prop, receiver) {
      if (prop === "dueLoad")
        return async (p: Parameters<Store["dueLoad"]>[0]) => {
          await blocked;
          return target.dueLoad(p);
        };
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const scheduler = new Scheduler({ store, clock, nodeId: "n", events: new EngineEvents(), onDispatched: () => {} });
  const starting = scheduler.start();
  for (let t = 0; t < 3 * LEASE_MS; t += 500) {
    clock.advance(500);
    await new Promise((resolve) => setImmediate(resolve));
  }
  const leases = await raw.shardList();
  assert.equal(leases.length, SHARD_COUNT);
  assert.ok(
    leases.every((l) => l.owner === "n" && l.leaseUntil >= clock.now()),
    "every lease still held, 30 s into a stuck pass",
  );
  unblock();
  await starting;
  await scheduler.stop();
  await raw.close();
});

/** Resolves when `node` has received `count` signals from other nodes (engines on one file hear each other in this process). */
function signalsReceived(node: Node, count: number): Promise<void> {
  let heard = 0;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${node.id} heard ${heard} of ${count} signals in 10 s`)), 10_000);
    const off = node.engine.events.on("signals", (e) => {
      if (e.direction === "received") heard += e.count;
      if (heard >= count) {
        off();
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

/** Creates recurring jobs on `on` until one lands on a shard that `owner` holds. */
async function jobOnShardOf(cluster: Cluster, on: Node, owner: string, spec: Parameters<Engine["service"]["createJob"]>[1]) {
  const shards = new Set((await cluster.holdings()).get(owner));
  for (;;) {
    const received = signalsReceived(cluster.nodes.find((n) => n.id === owner)!, 1);
    const job = await on.engine.service.createJob(ctx, spec);
    if (shards.has(shardOf(job.jobId))) return { job, received };
    await on.engine.service.cancelJob(ctx, job.jobId);
  }
}

test("a recurring job created on one node reaches its shard's owner at once: dispatched at its due time, not at the owner's next reload", async () => {
  const cluster = new Cluster();
  const [a] = [await cluster.join("node-a"), await cluster.join("node-b")];
  await cluster.step(ROUND_MS); // balanced, and node-b's window loaded: its next reload is 15 s away
  const dueIn = 2000;
  const { job, received } = await jobOnShardOf(cluster, a!, "node-b", {
    name: "soon",
    target: { type: "queue", pool: "p" },
    schedule: { cron: "* * * * * *", endAt: new Date(cluster.now + dueIn).toISOString() },
  });
  await received; // node-b heard of the new due entry
  await cluster.step(dueIn);
  const runs = (await a!.engine.service.listExecutions(ctx, job.jobId, {})).items;
  assert.ok(runs.length >= 1, "dispatched within its first seconds, long before node-b's reload");
  assert.ok(runs.every((r) => r.dispatchedBy === "node-b"));
  await cluster.stop();
});

test("a long poll on one node wakes when another node readies work for its pool", async () => {
  const cluster = new Cluster();
  const a = await cluster.join("node-a", { pollIntervalMs: 60_000 }); // no re-check within the test: only a signal wakes it
  await cluster.join("node-b");
  await cluster.step(ROUND_MS);
  const { job, received } = await jobOnShardOf(cluster, a, "node-b", {
    name: "w",
    target: { type: "queue", pool: "wake" },
    schedule: { cron: "* * * * * *", endAt: new Date(cluster.now + 1000).toISOString() },
  });
  await received;
  const leasing = a.engine.service.lease(ctx, "wake", { workerId: "w1", max: 1, waitSeconds: 30 });
  const ready = signalsReceived(a, 1); // node-b's dispatch tells node-a its pool has work
  await cluster.step(1000);
  await ready;
  const leased = await leasing;
  assert.deepEqual(
    leased.items.map((i) => i.jobId),
    [job.jobId],
    "leased at once, 29 s before the long poll would have ended",
  );
  await cluster.stop();
});
