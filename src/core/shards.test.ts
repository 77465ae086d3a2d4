import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { SHARD_COUNT } from "./ids.js";
import { planShards, shardTarget, type ShardView } from "./shards.js";

const LEASE_MS = 10_000;
const ROUND_MS = LEASE_MS / 3;

/** A store in memory with the same compare-and-set rules as shardAcquire and shardRelease. */
class Leases {
  readonly rows = new Map<number, ShardView>();
  release(owner: string, shards: readonly number[]): void {
    for (const s of shards) if (this.rows.get(s)?.owner === owner) this.rows.set(s, { shard: s, owner: null, leaseUntil: 0 });
  }
  acquire(owner: string, shards: readonly number[], now: number): void {
    for (const s of shards) {
      const row = this.rows.get(s);
      if (!row || row.owner === owner || row.owner === null || row.leaseUntil < now)
        this.rows.set(s, { shard: s, owner, leaseUntil: now + LEASE_MS });
    }
  }
  held(owner: string): number {
    return [...this.rows.values()].filter((r) => r.owner === owner).length;
  }
}

/** One round: each live node in turn reads the leases, releases, and acquires (its renewal included). */
function round(store: Leases, nodes: readonly string[], now: number): void {
  for (const self of nodes) {
    const plan = planShards({ leases: [...store.rows.values()], liveNodes: nodes, self, now });
    store.release(self, plan.release);
    store.acquire(self, [...plan.keep, ...plan.acquire], now);
  }
}

test("targets add up to exactly 256, each floor or ceil of 256/N", () => {
  for (const n of [1, 2, 3, 4, 5, 7, 100, 256, 300]) {
    const nodes = Array.from({ length: n }, (_, i) => `node-${i}`);
    const targets = nodes.map((self) => shardTarget(nodes, self));
    assert.equal(
      targets.reduce((a, b) => a + b, 0),
      SHARD_COUNT,
      `${n} nodes`,
    );
    for (const t of targets) assert.ok(t === Math.floor(SHARD_COUNT / n) || t === Math.ceil(SHARD_COUNT / n));
  }
});

test("a lone node takes every free shard; an expired owner's shards are free, a live lease is not", () => {
  assert.equal(planShards({ leases: [], liveNodes: ["a"], self: "a", now: 0 }).acquire.length, SHARD_COUNT);
  const leases = [
    { shard: 0, owner: "dead", leaseUntil: 999 },
    { shard: 1, owner: "b", leaseUntil: 1000 },
  ];
  const plan = planShards({ leases, liveNodes: ["a", "b"], self: "a", now: 1000 });
  assert.ok(plan.acquire.includes(0), "expired lease is taken");
  assert.ok(!plan.acquire.includes(1), "a lease held until now is not");
});

test("a node over its target releases the surplus and keeps the rest", () => {
  const leases = Array.from({ length: SHARD_COUNT }, (_, shard) => ({ shard, owner: "a", leaseUntil: 50_000 }));
  const plan = planShards({ leases, liveNodes: ["a", "b"], self: "a", now: 0 });
  assert.equal(plan.keep.length, 128);
  assert.equal(plan.release.length, 128);
  assert.deepEqual(plan.acquire, []);
  const joiner = planShards({ leases, liveNodes: ["a", "b"], self: "b", now: 0 });
  assert.deepEqual(joiner, { keep: [], release: [], acquire: [] }, "nothing to take until a hands over");
});

const startingState = fc.record({
  nodes: fc.uniqueArray(fc.constantFrom("n0", "n1", "n2", "n3", "n4", "n5", "n6"), { minLength: 1, maxLength: 7 }),
  owners: fc.array(
    fc.record({
      owner: fc.option(fc.constantFrom("n0", "n1", "n2", "n3", "n4", "n5", "n6", "gone"), { nil: null }),
      until: fc.integer({ min: -LEASE_MS, max: LEASE_MS }),
    }),
    { minLength: SHARD_COUNT, maxLength: SHARD_COUNT },
  ),
});

test("property: from any starting state, repeated rounds leave every shard owned, each node holding floor or ceil of 256/N", () => {
  fc.assert(
    fc.property(startingState, ({ nodes, owners }) => {
      const store = new Leases();
      owners.forEach((o, shard) => {
        store.rows.set(shard, { shard, owner: o.owner, leaseUntil: o.until });
      });
      // Within a lease and a round every stale lease (a stopped node's, "gone") has expired.
      let now = 0;
      for (let i = 0; i < 6; i++, now += ROUND_MS) round(store, nodes, now);
      const live = new Set<string>(nodes);
      const owned = [...store.rows.values()].filter((r) => r.owner !== null && live.has(r.owner));
      assert.equal(owned.length, SHARD_COUNT, "every shard owned by a live node");
      for (const n of nodes) {
        const held = store.held(n);
        assert.ok(held === Math.floor(SHARD_COUNT / nodes.length) || held === Math.ceil(SHARD_COUNT / nodes.length), `${n} holds ${held}`);
      }
      // and it stays so: a settled cluster moves no shard
      const before = JSON.stringify([...store.rows.values()].map((r) => r.owner));
      round(store, nodes, now);
      assert.equal(JSON.stringify([...store.rows.values()].map((r) => r.owner)), before);
    }),
    { numRuns: 200 },
  );
});

test("property: a node joining or leaving a settled cluster is balanced within two rounds", () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 6 }), fc.boolean(), (n, join) => {
      const store = new Leases();
      const nodes = Array.from({ length: n + 1 }, (_, i) => `n${i}`);
      const before = join ? nodes.slice(0, n) : nodes;
      const after = join ? nodes : nodes.slice(0, n);
      let now = 0;
      for (let i = 0; i < 2; i++, now += ROUND_MS) round(store, before, now);
      if (!join) store.release(nodes[n]!, [...Array(SHARD_COUNT).keys()]); // a graceful stop hands over
      for (let i = 0; i < 2; i++, now += ROUND_MS) round(store, after, now);
      for (const node of after) {
        const held = store.held(node);
        assert.ok(held === Math.floor(SHARD_COUNT / after.length) || held === Math.ceil(SHARD_COUNT / after.length), `${node} holds ${held}`);
      }
    }),
  );
});
