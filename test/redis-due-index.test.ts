// The Redis due index (dueIndex: redis://…) under the failures it is built
// to survive. Each test runs the engine on the test store (SQLite, or
// PostgreSQL with DUETIME_TEST_STORE=postgres) in real time, against a
// PRIVATE redis-server it starts on a free port (never the shared one):
// 1. FLUSHALL mid-run: 20,000 recurring jobs due in one second lose the whole
//    index after the first few thousand dispatches; reconciliation rebuilds
//    it from the store, and every job is dispatched exactly once.
// 2. Redis restarted empty under a steady create load: creates keep
//    succeeding (the index writes fail, reported as errors), the engine's
//    client reconnects by itself, and every job's first occurrence is
//    dispatched exactly once.
// 3. Redis Cluster of three masters: the shards' keys spread over all three,
//    every job is dispatched once, and a reconcile cycle repairs members
//    deleted behind the engine's back and drops an orphan.
// The store is the truth throughout: the index only says when to look.

import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import type { BatchCreateItem } from "@duetime/sdk/contract";
import { Cluster, Redis } from "ioredis";
import { shardOf } from "../src/core/ids.js";
import { type Engine, openEngine, type RedisDueIndexSettings } from "../src/engine/engine.js";
import { RedisDueKeys } from "../src/store/redis/due-keys.js";
import { freePort, privateRedis, privateTest } from "../src/store/redis/test-support.js";
import { DEFAULT_CONTEXT as ctx } from "../src/engine/service.js";
import { testStore, waitFor } from "./helpers.js";

const SHARDS = Array.from({ length: 256 }, (_, i) => i);
const POOL = "p";

// ---------------------------------------------------------------- helpers

/** A test on private redis-servers: fails with CI=true when the binary is missing, else skips (as privateTest, with a longer timeout). */
/**
 * Closes registered with `later` run after the test, last first. Call it
 * before starting servers: t.after hooks run in the order registered, so the
 * engine stops before the servers under it do.
 */
function closer(t: TestContext): (close: () => Promise<unknown>) => void {
  const closes: (() => Promise<unknown>)[] = [];
  t.after(async () => {
    for (const close of closes.reverse()) await close().catch(() => {});
  });
  return (close) => closes.push(close);
}

/** An engine on a fresh test store, indexing due work in Redis; stopped (and its store removed) after the test. */
async function openIndexed(later: ReturnType<typeof closer>, dueIndex: RedisDueIndexSettings): Promise<Engine> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-redis-it-"));
  const store = testStore(dir);
  const engine = await openEngine({ store: store.url, storeOptions: store.options, nodeId: "n", httpTargets: false, dueIndex });
  later(async () => {
    await engine.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  await engine.start();
  return engine;
}

/** The next whole second `s` seconds on: a due time s to s+1 seconds ahead. */
const secondsFromNow = (s: number) => Math.ceil(Date.now() / 1000) * 1000 + s * 1000;

/** `count` yearly six-field crons whose next occurrence is the whole second `at`. */
function cronsAt(at: number, count: number): BatchCreateItem[] {
  const d = new Date(at);
  const cron = `${d.getUTCSeconds()} ${d.getUTCMinutes()} ${d.getUTCHours()} ${d.getUTCDate()} ${d.getUTCMonth() + 1} *`;
  return Array.from({ length: count }, (_, i) => ({ name: `c${i}`, target: { type: "queue", pool: POOL }, schedule: { cron, tz: "UTC" } }));
}

/** Creates the jobs; every item must be created (the store takes creates whatever Redis does). */
async function create(engine: Engine, items: BatchCreateItem[]): Promise<string[]> {
  const results = await engine.service.createJobs(ctx, items);
  return results.map((r, i) => {
    assert.ok("jobId" in r, `item ${i} was not created: ${JSON.stringify(r)}`);
    return r.jobId;
  });
}

/**
 * `count` crons due at `at`, created in batches of 1,000 (the most one call
 * takes), their ids pushed to `jobIds` as they come. A batch created so late
 * that `at` is under 3 s away is due 3 s on instead (a loaded machine): never
 * next year, beyond the test.
 */
async function createCrons(engine: Engine, at: number, count: number, jobIds: string[] = []): Promise<string[]> {
  for (let i = 0; i < count; i += 1000) jobIds.push(...(await create(engine, cronsAt(Math.max(at, secondsFromNow(3)), Math.min(1000, count - i)))));
  return jobIds;
}

/** Counts the engine's dispatches per job, from the start. */
function countDispatches(engine: Engine): Map<string, number> {
  const byJob = new Map<string, number>();
  engine.events.on("execution:dispatched", (e) => byJob.set(e.jobId, (byJob.get(e.jobId) ?? 0) + 1));
  return byJob;
}

/**
 * Waits until every job has been dispatched, then a little longer (a second
 * dispatch would show), and checks each was dispatched once. Answers when
 * the last first dispatch was seen.
 */
async function dispatchedOnce(byJob: Map<string, number>, jobIds: readonly string[], timeoutMs: number): Promise<number> {
  await waitFor(() => byJob.size >= jobIds.length, `${jobIds.length} jobs dispatched`, timeoutMs).catch((error: Error) => {
    throw new Error(`${error.message}: ${byJob.size} were`);
  });
  const allAt = Date.now();
  await sleep(1_000);
  const missing = jobIds.filter((id) => !byJob.has(id));
  assert.deepEqual(missing.slice(0, 5), [], `${missing.length} jobs never dispatched`);
  assert.equal(byJob.size, jobIds.length, "only the created jobs were dispatched");
  const twice = [...byJob].filter(([, n]) => n !== 1);
  assert.deepEqual(twice.slice(0, 5), [], `${twice.length} jobs dispatched more than once`);
  return allAt;
}

/** The store's side: leases every queued execution of the pool; answers how many each job has. */
async function queuedByJob(engine: Engine): Promise<Map<string, number>> {
  const byJob = new Map<string, number>();
  for (;;) {
    const { items } = await engine.service.lease(ctx, POOL, { workerId: "w", max: 1000, leaseSeconds: 600 });
    if (items.length === 0) return byJob;
    for (const item of items) byJob.set(item.jobId, (byJob.get(item.jobId) ?? 0) + 1);
  }
}

/** Members of every shard's scheduled and leased sets. */
const indexed = async (keys: RedisDueKeys) => {
  const { scheduled, leased } = await keys.counts(SHARDS);
  return scheduled + leased;
};

/** A RedisDueKeys of the test's own on the index the engine uses, closed after. */
function keysOf(later: ReturnType<typeof closer>, o: Parameters<typeof RedisDueKeys.connect>[0]): RedisDueKeys {
  const keys = RedisDueKeys.connect(o);
  later(() => keys.close());
  return keys;
}

// ---------------------------------------------------------------- 1. flush

privateTest(
  "FLUSHALL mid-run: 20,000 recurring jobs due in one second are each dispatched exactly once",
  async (t) => {
    const later = closer(t);
    const redis = await privateRedis(t, await freePort());
    const prefix = "flush:";
    const engine = await openIndexed(later, { url: redis.url, prefix, refreshMs: 300, reconcile: { pageSize: 200, stepMs: 10 } });
    const keys = keysOf(later, { url: redis.url, prefix });
    const byJob = countDispatches(engine);
    let repaired = 0;
    engine.events.on("due-index:repaired", (e) => (repaired += e.added));

    // Mid-run by construction: the flush is sent from the dispatch event that
    // brings the count to 2,000 (dispatches come in claims of up to 1,000).
    const N = 20_000;
    const jobIds: string[] = [];
    const admin = new Redis(redis.url);
    later(async () => admin.disconnect());
    const flush = { sentAt: -1, doneAt: -1, created: -1 };
    const flushed = new Promise<void>((resolve, reject) => {
      const off = engine.events.on("execution:dispatched", () => {
        if (byJob.size < 2_000) return;
        off();
        flush.sentAt = byJob.size;
        admin.flushall().then(() => {
          flush.doneAt = byJob.size;
          flush.created = jobIds.length;
          resolve();
        }, reject);
      });
    });

    // One herd: 20,000 creates take 2–7 s here (SQLite, PostgreSQL), inside
    // the lead; on a machine too loaded for that, the late batches come after.
    const at = secondsFromNow(10);
    const createdFrom = Date.now();
    await createCrons(engine, at, N, jobIds);
    const late = Date.now() > at - 3_000;
    t.diagnostic(`${N} jobs created in ${Date.now() - createdFrom} ms${late ? ", some due after the herd's second" : ""}`);
    if (!late) {
      await waitFor(async () => (await indexed(keys)) >= N, `the index holds all ${N} jobs`, 10_000);
      assert.equal(byJob.size, 0, "nothing dispatched before the due second");
    }

    await flushed;
    const flushedAt = Date.now();
    assert.ok(flush.doneAt <= N - 10_000, `the flush landed mid-run (${flush.doneAt} of ${N} dispatched)`);

    const allAt = await dispatchedOnce(byJob, jobIds, 60_000);
    t.diagnostic(
      `FLUSHALL sent at ${flush.sentAt} and done at ${flush.doneAt} of ${N} dispatched; ` +
        `all dispatched ${allAt - flushedAt} ms later; reconciliation re-added ${repaired}`,
    );
    // What was created and not yet dispatched when the flush landed was found
    // again by reconciliation alone, but for one claim in flight (at most
    // 1,000) and one create whose index writes came after the flush.
    assert.ok(repaired >= flush.created - flush.doneAt - 2_000, `reconciliation re-added the members the flush took (${repaired})`);
    assert.ok(repaired <= N, "and no more than there are jobs");

    // The store agrees: one queued execution per job, no job twice.
    const queued = await queuedByJob(engine);
    assert.equal(queued.size, N, "every job has a queued execution");
    assert.deepEqual(
      [...queued.values()].filter((n) => n !== 1),
      [],
      "no job has two",
    );
    for (const jobId of jobIds.slice(0, 25)) {
      const { items } = await engine.service.listExecutions(ctx, jobId, { limit: 10 });
      assert.equal(items.length, 1, `job ${jobId} has one execution`);
    }
    // And the index is whole again: each job's next occurrence (a year on), none claimed.
    await waitFor(async () => (await keys.counts(SHARDS)).scheduled === N, "every job's next occurrence indexed", 10_000);
    assert.deepEqual(await keys.counts(SHARDS), { scheduled: N, leased: 0 });
  },
  { timeoutMs: 90_000 },
);

// ---------------------------------------------------------------- 2. restart

/** Creates jobs due 1–3 s ahead at `perSecond` for `ms`, their ids pushed to `jobIds` as they come. */
async function steadyCreates(engine: Engine, perSecond: number, ms: number, jobIds: string[]): Promise<void> {
  const start = Date.now();
  for (let tick = 0; Date.now() - start < ms; tick++) {
    const owed = Math.floor(((Date.now() - start) / 1000) * perSecond) - jobIds.length;
    if (owed > 0) jobIds.push(...(await create(engine, cronsAt(secondsFromNow(1 + (tick % 2)), owed))));
    await sleep(50);
  }
}

privateTest(
  "Redis restarted empty under steady creates: nothing is lost, and the client reconnects by itself",
  async (t) => {
    const later = closer(t);
    const port = await freePort();
    const first = await privateRedis(t, port); // --save "" --appendonly no: a restart comes back empty
    const prefix = "restart:";
    const engine = await openIndexed(later, { url: first.url, prefix, refreshMs: 300, reconcile: { pageSize: 200, stepMs: 10 } });
    const byJob = countDispatches(engine);
    const offerErrors: number[] = []; // when each failed index write after a create was reported
    engine.events.on("error", (e) => {
      if (e.where === "due-index:offer") offerErrors.push(Date.now());
    });

    const jobIds: string[] = [];
    const load = steadyCreates(engine, 200, 8_000, jobIds);
    await sleep(2_500);
    const before = RedisDueKeys.connect({ url: first.url, prefix });
    assert.ok((await indexed(before)) > 0, "before the restart, creates are indexed");
    await before.close();
    await first.stop();
    const downAt = Date.now();
    const createdBefore = jobIds.length;
    await sleep(2_000); // creates go on meanwhile
    const createdDuring = jobIds.length - createdBefore;
    const second = await privateRedis(t, port);
    const upAt = Date.now();
    const failedDuring = offerErrors.filter((at) => at >= downAt && at <= upAt).length;
    t.diagnostic(`Redis down for ${upAt - downAt} ms: ${createdDuring} jobs created, ${failedDuring} index writes failed`);
    assert.ok(createdDuring >= 200, `creates went on while Redis was down (${createdDuring})`);
    assert.ok(failedDuring > 0, "index writes failed while Redis was down, and were reported");
    const keys = keysOf(later, { url: second.url, prefix });

    // The engine's own client comes back to the new server: what is created now is indexed there.
    await waitFor(async () => (await indexed(keys)) > 0, "the new server indexes new creates", 10_000);
    const reconnectedAt = Date.now();
    await load; // every create succeeded, Redis or not (create asserts it)
    t.diagnostic(`${jobIds.length} jobs created at 200/s over 8 s; ${offerErrors.length} index writes failed`);
    assert.ok(jobIds.length >= 1_500, `the load kept its rate through the outage (${jobIds.length} created)`);
    const allAt = await dispatchedOnce(byJob, jobIds, 60_000);
    t.diagnostic(`the last job was first dispatched ${allAt - upAt} ms after the new server was up`);
    assert.deepEqual(
      offerErrors.filter((at) => at > reconnectedAt + 1_000),
      [],
      "no index write failed once the client was back",
    );
    // The store agrees: one queued execution per job.
    const queued = await queuedByJob(engine);
    assert.equal(queued.size, jobIds.length);
    assert.ok(
      [...queued.values()].every((n) => n === 1),
      "no job has two executions",
    );
  },
  { timeoutMs: 90_000 },
);

// ---------------------------------------------------------------- 3. cluster

const run = promisify(execFile);
/** redis-cli with the cluster manager (--cluster create); its help exits 1, so read what it lists. */
const hasClusterCli = /^\s*create\s/m.test(spawnSync("redis-cli", ["--cluster", "help"], { encoding: "utf8" }).stdout ?? "");

/** Keys under `prefix` on one node (SCAN sees that node's keys only). */
async function keysOnNode(node: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await node.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return found;
}

privateTest(
  "Redis Cluster of three masters: shards spread over every node, jobs fire once, reconciliation repairs",
  async (t) => {
    const later = closer(t);
    const ports = [await freePort(), await freePort(), await freePort()];
    for (const port of ports) await privateRedis(t, port, ["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`]);
    await run("redis-cli", ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"]);
    const nodes = ports.map((port) => new Redis(port, "127.0.0.1"));
    later(async () => {
      for (const node of nodes) node.disconnect();
    });
    await waitFor(async () => {
      const infos = await Promise.all(nodes.map((n) => n.cluster("INFO") as Promise<string>));
      return infos.every((info) => info.includes("cluster_state:ok"));
    }, "cluster_state:ok on all three nodes");

    const prefix = "cluster:";
    const url = `redis://127.0.0.1:${ports[0]}`;
    const engine = await openIndexed(later, { url, cluster: true, prefix, refreshMs: 300, reconcile: { pageSize: 200, stepMs: 10 } });
    const keys = keysOf(later, { url, cluster: true, prefix });
    const byJob = countDispatches(engine);

    const N = 2_000;
    const jobIds = await createCrons(engine, secondsFromNow(4), N);
    const shards = new Set(jobIds.map(shardOf));
    assert.ok(shards.size >= 240, `the jobs cover the shards (${shards.size} of 256)`);
    await waitFor(async () => (await indexed(keys)) >= N, `the cluster index holds all ${N} jobs`);
    await dispatchedOnce(byJob, jobIds, 30_000);
    await waitFor(async () => (await keys.counts(SHARDS)).scheduled === N, "every job's next occurrence indexed");
    assert.deepEqual(await keys.counts(SHARDS), { scheduled: N, leased: 0 }, "each job's next (a year on) is indexed, no claim is left");

    // Each master holds some shards' sets, and together exactly one per shard in use, beside the index's
    // generation and the reconciler's marks of shards it has passed, each mark on its shard's master.
    const perNode = await Promise.all(nodes.map((n) => keysOnNode(n, prefix)));
    t.diagnostic(`keys per master: ${perNode.map((k) => k.length).join(", ")}`);
    for (const [i, found] of perNode.entries()) assert.ok(found.length > 0, `master ${ports[i]} holds keys`);
    const isMark = (key: string) => /^[^{]*\{dt:\d+\}:built$/.test(key);
    const all = perNode.flat().filter((k) => !isMark(k));
    assert.deepEqual(all.sort(), [...[...shards].map((s) => `${prefix}{dt:${s}}:scheduled`), `${prefix}{dt:meta}:generation`].sort());
    for (const found of perNode) {
      for (const mark of found.filter(isMark)) {
        const scheduled = mark.replace(/:built$/, ":scheduled");
        if (all.includes(scheduled)) assert.ok(found.includes(scheduled), `${mark} shares its master with ${scheduled}`);
      }
    }

    // Reconciliation in cluster mode, stepped by hand: members deleted behind
    // the engine's back come back with the store's due time; an orphan goes.
    await engine.reconciler!.stop();
    const direct = new Cluster([{ host: "127.0.0.1", port: ports[0]! }]);
    later(async () => direct.disconnect());
    const victims = jobIds.slice(0, 60);
    const nextYear = Number(await direct.zscore(`${prefix}{dt:${shardOf(victims[0]!)}}:scheduled`, victims[0]!));
    for (const jobId of victims) assert.equal(await direct.zrem(`${prefix}{dt:${shardOf(jobId)}}:scheduled`, jobId), 1);
    await direct.zadd(`${prefix}{dt:7}:scheduled`, Date.now() + 3_600_000, "job_notinthestore");
    assert.equal((await keys.counts(SHARDS)).scheduled, N - victims.length + 1);
    assert.deepEqual(await engine.reconciler!.runCycle(), { added: victims.length, removed: 1 });
    for (const jobId of victims) assert.equal(Number(await direct.zscore(`${prefix}{dt:${shardOf(jobId)}}:scheduled`, jobId)), nextYear);
    assert.deepEqual(await keys.counts(SHARDS), { scheduled: N, leased: 0 });
  },
  { timeoutMs: 90_000, needs: { present: hasClusterCli, what: "redis-cli --cluster" } },
);
