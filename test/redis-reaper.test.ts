// The Redis due index's reaper (lua/reap.lua, run by RedisDueIndex.refresh)
// against a real crash: node A, a process of its own
// (fixtures/redis-claim-node.ts), claims the due ids of 500 recurring jobs
// in Redis (claim.lua moves them from `scheduled` to `leased`, with a
// deadline of Redis TIME + claimMs) and hangs in the store's dueGet, before
// any dispatch; the test SIGKILLs it there. This proves:
// - a claim outlives its claimer: after the kill the ids are still in
//   `leased`, their deadlines ahead, and the store holds no execution;
// - node B (this process, another nodeId, the same store and Redis) takes
//   the shards once A's leases expire, and its refresh returns the claims
//   to `scheduled` once their deadlines pass (not before);
// - B then dispatches every job exactly once (counted per job from B's
//   execution:dispatched events, and in the store), and no claim is left.
// Without the reaper the claimed jobs never run (the reconciler leaves
// claimed ids alone): this test fails.
// The store is testStore's: SQLite (A is dead before B opens the file), or
// PostgreSQL with DUETIME_TEST_STORE=postgres.

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { shardOf } from "../src/core/ids.js";
import { type Engine, openEngine } from "../src/engine/engine.js";
import { RedisDueKeys } from "../src/store/redis/due-keys.js";
import { deletePrefix, REDIS_URL, redisTest, testPrefix } from "../src/store/redis/test-support.js";
import { DEFAULT_CONTEXT as ctx } from "../src/engine/service.js";
import type { NodeAConfig, NodeAMessage } from "./fixtures/redis-claim-node.js";
import { TEST_STORE_KIND, testStore, waitFor } from "./helpers.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FIXTURE = fileURLToPath(new URL("./fixtures/redis-claim-node.ts", import.meta.url));

const JOBS = 500;
const POOL = "reap";
/** How long a claim lasts, and a shard lease unrenewed: short, so the test takes seconds. */
const CLAIM_MS = 3_000;
const SHARD_LEASE_MS = 3_000;
const ALL_SHARDS = Array.from({ length: 256 }, (_, i) => i);

/** Node A: the fixture as a child process, its IPC messages kept in order. */
class NodeA {
  readonly child: ChildProcess;
  private readonly inbox: NodeAMessage[] = [];
  private stderr = "";

  constructor(config: NodeAConfig) {
    this.child = spawn(process.execPath, ["--import", "tsx", FIXTURE, JSON.stringify(config)], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    this.child.stderr!.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.child.on("message", (m) => this.inbox.push(m as NodeAMessage));
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** The first message of this type; fails at once when A reports an error or exits, or after timeoutMs. */
  async next<T extends NodeAMessage["type"]>(type: T, timeoutMs: number): Promise<Extract<NodeAMessage, { type: T }>> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const error = this.inbox.find((m) => m.type === "error");
      if (error) throw new Error(`node A failed: ${error.message}`);
      const found = this.inbox.find((m) => m.type === type);
      if (found) return found as Extract<NodeAMessage, { type: T }>;
      if (this.exited) throw new Error(`node A exited (${this.child.exitCode ?? this.child.signalCode}) before "${type}"; stderr:\n${this.stderr}`);
      if (Date.now() > end) throw new Error(`node A sent no "${type}" within ${timeoutMs} ms; stderr:\n${this.stderr}`);
      await sleep(10);
    }
  }

  /** All messages of this type so far. */
  all<T extends NodeAMessage["type"]>(type: T): Extract<NodeAMessage, { type: T }>[] {
    return this.inbox.filter((m) => m.type === type) as Extract<NodeAMessage, { type: T }>[];
  }

  /** SIGKILL; resolves once the process is gone. */
  async kill(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.kill("SIGKILL");
    await gone;
  }
}

/** Redis's clock minus this host's (ms), read halfway through a TIME round trip. */
async function redisOffset(keys: RedisDueKeys): Promise<number> {
  const sent = Date.now();
  const redisNow = await keys.time();
  return Math.round(redisNow - (sent + Date.now()) / 2);
}

/** Both sets' members of every shard. */
const counts = (keys: RedisDueKeys) => keys.counts(ALL_SHARDS);

function byShard(jobIds: readonly string[]): Map<number, string[]> {
  const groups = new Map<number, string[]>();
  for (const id of jobIds) {
    const shard = shardOf(id);
    let list = groups.get(shard);
    if (!list) groups.set(shard, (list = []));
    list.push(id);
  }
  return groups;
}

redisTest("Reaper: a node SIGKILLed between claim and dispatch; its claims return after their deadline, and they run once", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-reaper-"));
  const store = testStore(dir);
  const prefix = testPrefix("reaper");
  const keys = RedisDueKeys.connect({ url: REDIS_URL, prefix });
  let a: NodeA | null = null;
  let b: Engine | null = null;
  const killA = () => a?.child.kill("SIGKILL"); // the test process ending abnormally takes node A with it
  process.once("exit", killA);
  t.after(async () => {
    process.removeListener("exit", killA);
    const steps: [string, () => Promise<unknown> | undefined][] = [
      ["kill node A", () => a?.kill()],
      ["stop node B", () => b?.stop()],
      ["close the Redis client", () => keys.close()],
      ["delete the prefix", () => deletePrefix(prefix)],
    ];
    for (const [what, step] of steps) await Promise.resolve(step()).catch((error: unknown) => t.diagnostic(`cleanup: ${what}: ${String(error)}`));
    rmSync(dir, { recursive: true, force: true });
  });

  // ---- node A: creates the jobs, claims them when due, hangs before dispatch
  const startedAt = Date.now();
  a = new NodeA({
    store: store.url,
    storeOptions: store.options,
    redisUrl: REDIS_URL,
    prefix,
    nodeId: "node-a",
    jobs: JOBS,
    pool: POOL,
    claimMs: CLAIM_MS,
    shardLeaseMs: SHARD_LEASE_MS,
  });
  const created = await a.next("created", 15_000);
  const jobIds = created.jobIds;
  assert.equal(new Set(jobIds).size, JOBS);
  const hung = await a.next("dueGet", created.at - Date.now() + 10_000);
  await a.kill();
  const killedAt = Date.now();
  assert.equal(a.child.signalCode, "SIGKILL");
  assert.equal(a.all("dueGet").length, 1, "node A reached dueGet once, and hung there");
  const claimed = hung.jobIds;
  assert.ok(claimed.length > 0, "node A claimed some of the jobs");
  const all = new Set(jobIds);
  assert.ok(
    claimed.every((id) => all.has(id)),
    "node A claimed only the test's jobs",
  );
  assert.equal(new Set(claimed).size, claimed.length);

  // ---- the claims outlived node A: in `leased`, deadlines ahead; nothing dispatched
  const offset = await redisOffset(keys);
  const redisNow = Date.now() + offset;
  const deadlines = new Map<string, number>();
  for (const [shard, ids] of byShard(claimed)) {
    const { scheduled, leased } = await keys.scores(shard, ids);
    ids.forEach((id, i) => {
      assert.equal(scheduled[i], null, `${id} left scheduled when claimed`);
      const deadline = leased[i];
      assert.ok(deadline != null, `${id} is still claimed after node A died`);
      assert.ok(deadline > redisNow, `${id}'s claim deadline is ahead (${deadline - redisNow} ms)`);
      assert.ok(deadline <= redisNow + CLAIM_MS, `${id}'s claim deadline is at most claimMs ahead`);
      deadlines.set(id, deadline);
    });
  }
  assert.deepEqual(await counts(keys), { scheduled: JOBS - claimed.length, leased: claimed.length }, "every claim, and only those, is in leased");
  const firstDeadline = Math.min(...deadlines.values());
  const lastDeadline = Math.max(...deadlines.values());

  b = await openEngine({
    store: store.url,
    storeOptions: store.options,
    nodeId: "node-b",
    httpTargets: false,
    scheduler: { shardLeaseMs: SHARD_LEASE_MS },
    dueIndex: { url: REDIS_URL, prefix, claimMs: CLAIM_MS, refreshMs: 250 },
  });
  const engineB = b;
  const before = await Promise.all(jobIds.map(async (id) => (await engineB.service.listExecutions(ctx, id, {})).items.length));
  assert.equal(
    before.reduce((x, y) => x + y, 0),
    0,
    "node A dispatched nothing: the store has no execution of these jobs",
  );

  // ---- node B: takes the shards, reaps the claims after their deadline, dispatches each job once
  const dispatches = new Map<string, number[]>(); // job id -> when B dispatched it (this host's clock)
  engineB.events.on("execution:dispatched", (e) => {
    let times = dispatches.get(e.jobId);
    if (!times) dispatches.set(e.jobId, (times = []));
    times.push(Date.now());
  });
  let tookOverAt: number | null = null;
  engineB.events.on("shard:taken_over", () => (tookOverAt ??= Date.now()));
  await engineB.start();
  // Expected about a second after the last deadline; 15 s keeps the test well under its 30 s timeout.
  await waitFor(() => jobIds.every((id) => dispatches.has(id)), `node B dispatches all ${JOBS} jobs`, 15_000).catch(async (error: unknown) => {
    const c = await counts(keys);
    throw new Error(`${(error as Error).message}: ${dispatches.size} dispatched; Redis holds ${c.scheduled} scheduled, ${c.leased} leased`);
  });
  const lastDispatchAt = Math.max(...[...dispatches.values()].flat());
  // Settled: each claim ended, each job's next occurrence (a year on) scheduled.
  await waitFor(
    async () => {
      const c = await counts(keys);
      return c.leased === 0 && c.scheduled === JOBS;
    },
    "node B settles every claim (leased empty, every job's next occurrence scheduled)",
    5_000,
  );
  // A second dispatch would come from a claim returned again: with leased empty and every next
  // occurrence a year away there is none left to return; watch a little longer all the same.
  await sleep(500);

  const twice = [...dispatches].filter(([, times]) => times.length !== 1).map(([id, times]) => `${id}×${times.length}`);
  assert.deepEqual(twice, [], "no job dispatched twice");
  assert.deepEqual(
    [...dispatches.keys()].filter((id) => !all.has(id)),
    [],
    "B dispatched only the test's jobs",
  );
  // Returned by the reaper: a claimed job runs only once its claim's deadline has passed (Redis's clock; 50 ms for the offset's error).
  const early = claimed.filter((id) => dispatches.get(id)![0]! + offset < deadlines.get(id)! - 50);
  assert.deepEqual(early, [], "no claimed job dispatched before its claim's deadline");
  const after = await Promise.all(jobIds.map(async (id) => (await engineB.service.listExecutions(ctx, id, {})).items.length));
  assert.deepEqual([...new Set(after)], [1], "the store holds exactly one execution of each job");
  assert.deepEqual(await counts(keys), { scheduled: JOBS, leased: 0 }, "no claim is left");

  const rel = (at: number) => `${at - killedAt} ms`;
  t.diagnostic(
    `store ${TEST_STORE_KIND}; times from the kill: node A spawned ${rel(startedAt)}, ` +
      `claimed ${claimed.length}/${JOBS}, due ${rel(created.at)}, dueGet entered ${rel(hung.at)}, killed 0 ms; ` +
      `claim deadlines ${rel(firstDeadline - offset)}..${rel(lastDeadline - offset)}; ` +
      `B took over shards ${tookOverAt === null ? "(none taken over)" : rel(tookOverAt)}; ` +
      `claimed jobs dispatched ${rel(Math.min(...claimed.map((id) => dispatches.get(id)![0]!)))}..${rel(Math.max(...claimed.map((id) => dispatches.get(id)![0]!)))}; ` +
      `last dispatch ${rel(lastDispatchAt)}; total ${Date.now() - startedAt} ms`,
  );
});
