// The store contract, in part (index.ts runs the parts in order).
// The cluster (store.ts, "shards" and "cluster membership"): shard leases,
// executionRelease, shardRelease and nodeHeartbeat, nodeList, nodeLeave.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { T0, SECOND, MINUTE, HOUR, acquireAll, getJob, readyExecution, lease, leaseOne, history, fail, type ContractTests } from "./support.js";

export function clusterContract({ storeTest }: ContractTests): void {
  describe("shards", () => {
    storeTest("acquires free shards with a bumped epoch, visible in shardList", async (store) => {
      const leases = await store.shardAcquire({ owner: "a", shards: [0, 1, 2], leaseMs: 10 * SECOND, now: T0 });
      assert.deepEqual(
        leases.map((l) => l.shard).sort((x, y) => x - y),
        [0, 1, 2],
      );
      for (const l of leases) {
        assert.equal(l.owner, "a");
        assert.ok(l.epoch >= 1, "the epoch grows on a change of owner");
        assert.equal(l.leaseUntil, T0 + 10 * SECOND);
      }
      const listed = (await store.shardList()).filter((l) => l.owner !== null);
      assert.deepEqual(
        listed.map((l) => [l.shard, l.owner, l.leaseUntil]).sort((x, y) => (x[0] as number) - (y[0] as number)),
        [
          [0, "a", T0 + 10 * SECOND],
          [1, "a", T0 + 10 * SECOND],
          [2, "a", T0 + 10 * SECOND],
        ],
      );
    });

    storeTest("does not take a shard owned by another live owner", async (store) => {
      const [a] = await store.shardAcquire({ owner: "a", shards: [5], leaseMs: 10 * SECOND, now: T0 });
      assert.ok(a);
      const b = await store.shardAcquire({ owner: "b", shards: [5, 6], leaseMs: 10 * SECOND, now: T0 + 9 * SECOND });
      assert.deepEqual(
        b.filter((l) => l.owner === "b").map((l) => l.shard),
        [6],
      );
      const five = (await store.shardList()).find((l) => l.shard === 5);
      assert.deepEqual(five, { shard: 5, owner: "a", epoch: a.epoch, leaseUntil: T0 + 10 * SECOND });
    });

    storeTest("takes over a shard whose owner's lease expired, with a higher epoch", async (store) => {
      const [a] = await store.shardAcquire({ owner: "a", shards: [7], leaseMs: 10 * SECOND, now: T0 });
      assert.ok(a);
      const b = await store.shardAcquire({ owner: "b", shards: [7], leaseMs: 10 * SECOND, now: T0 + 10 * SECOND + 1 });
      const taken = b.find((l) => l.shard === 7);
      assert.ok(taken);
      assert.equal(taken.owner, "b");
      assert.ok(taken.epoch > a.epoch, `epoch ${taken.epoch} > ${a.epoch}`);
      assert.equal(taken.leaseUntil, T0 + 20 * SECOND + 1);
      assert.deepEqual(
        (await store.shardList()).find((l) => l.shard === 7),
        taken,
      );
      // The old owner cannot take it back while b's lease lives.
      const back = await store.shardAcquire({ owner: "a", shards: [7], leaseMs: 10 * SECOND, now: T0 + 11 * SECOND });
      assert.deepEqual(
        back.filter((l) => l.owner === "a"),
        [],
      );
    });

    storeTest("re-acquiring by the same owner renews the lease without bumping the epoch", async (store) => {
      const [first] = await store.shardAcquire({ owner: "a", shards: [9], leaseMs: 10 * SECOND, now: T0 });
      assert.ok(first);
      const [renewed] = await store.shardAcquire({ owner: "a", shards: [9], leaseMs: 10 * SECOND, now: T0 + 5 * SECOND });
      assert.deepEqual(renewed, { shard: 9, owner: "a", epoch: first.epoch, leaseUntil: T0 + 15 * SECOND });
      assert.deepEqual(
        (await store.shardList()).find((l) => l.shard === 9),
        renewed,
      );
    });

    storeTest("epochs keep growing across changes of owner", async (store) => {
      const epochs: number[] = [];
      let now = T0;
      for (const owner of ["a", "b", "a", "c"]) {
        const [l] = await store.shardAcquire({ owner, shards: [3], leaseMs: SECOND, now });
        assert.ok(l && l.owner === owner);
        epochs.push(l.epoch);
        now += 2 * SECOND;
      }
      for (let i = 1; i < epochs.length; i++) assert.ok(epochs[i]! > epochs[i - 1]!, `epochs grow: ${epochs.join(", ")}`);
    });
  });

  describe("executionRelease", () => {
    storeTest("a released lease is READY again from readyAt, without spending an attempt; the next grant is the next attempt", async (store) => {
      const epochs = await acquireAll(store, "n1");
      await readyExecution(store, epochs, { retry: { maxAttempts: 2, backoffSeconds: 10, maxBackoffSeconds: 3600 } });
      const first = await leaseOne(store, T0);
      assert.deepEqual(
        await store.executionRelease({
          items: [{ executionId: first.executionId, tenantId: "t1", attempt: 1, readyAt: T0 + MINUTE }],
          now: T0 + SECOND,
        }),
        ["ok"],
      );
      assert.deepEqual(await lease(store, T0 + 2 * SECOND), [], "leasable before readyAt");
      const second = await leaseOne(store, T0 + MINUTE);
      assert.equal(second.attempt, 2);
      assert.deepEqual([first.retry, second.retry], [false, false], "granted again after a hand-back: still a first attempt");
      // maxAttempts 2: had the released attempt counted, this failure would be the last
      const [outcome] = await store.executionFailMany({
        items: [fail({ executionId: second.executionId, tenantId: "t1", attempt: 2 })],
        now: T0 + MINUTE + SECOND,
      });
      assert.equal(outcome?.status === "ok" && outcome.state, "READY");
      assert.equal((await leaseOne(store, T0 + 2 * MINUTE)).retry, true, "after a failed attempt: a retry");
      assert.deepEqual(
        await store.executionRelease({
          items: [{ executionId: first.executionId, tenantId: "t1", attempt: 1, readyAt: T0 }],
          now: T0 + 2 * MINUTE,
        }),
        ["lost"],
      );
    });
    storeTest(
      "a released execution stays in its job's history, READY at the attempt it was handed back from, until its next grant",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const { nj, executionId } = await readyExecution(store, epochs);
        await leaseOne(store, T0);
        await store.executionRelease({ items: [{ executionId, tenantId: "t1", attempt: 1, readyAt: T0 + MINUTE }], now: T0 + SECOND });
        const waiting = await history(store, "t1", nj.job.jobId);
        assert.deepEqual(
          waiting.map((r) => [r.executionId, r.attempt, r.state, r.readyAt]),
          [[executionId, 1, "READY", T0 + MINUTE]],
        );
        await leaseOne(store, T0 + MINUTE);
        const running = await history(store, "t1", nj.job.jobId);
        assert.deepEqual(
          running.map((r) => [r.attempt, r.state]),
          [[2, "RUNNING"]],
          "the handed-back grant left no attempt of its own",
        );
      },
    );
    storeTest("releasing the lease of a job cancelled meanwhile ends the execution CANCELLED; it is never leased again", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const { nj } = await readyExecution(store, epochs);
      const leased = await leaseOne(store, T0);
      const job = await getJob(store, nj);
      await store.jobTransition({
        tenantId: "t1",
        jobId: nj.job.jobId,
        fromVersion: job.version,
        state: "CANCELLED",
        due: null,
        cancelExecutions: true,
        now: T0 + SECOND,
      });
      assert.deepEqual(
        await store.executionRelease({ items: [{ executionId: leased.executionId, tenantId: "t1", attempt: 1, readyAt: T0 }], now: T0 + SECOND }),
        ["ok"],
      );
      assert.deepEqual(await lease(store, T0 + HOUR), []);
    });
  });

  describe("shardRelease", () => {
    storeTest("a released shard is free for the next owner at once, with a higher epoch", async (store) => {
      const a = await acquireAll(store, "node-a", T0, HOUR);
      await store.shardRelease({ owner: "node-a" });
      const b = await store.shardAcquire({ owner: "node-b", shards: [0, 1], leaseMs: HOUR, now: T0 + SECOND });
      assert.deepEqual(
        b.map((l) => l.owner),
        ["node-b", "node-b"],
      );
      assert.ok(b.every((l) => l.epoch > a.get(l.shard)!));
    });
    storeTest("releasing listed shards hands over only those, and only the owner's", async (store) => {
      await acquireAll(store, "node-a", T0, HOUR);
      await store.shardRelease({ owner: "node-a", shards: [1, 2] });
      await store.shardRelease({ owner: "node-b", shards: [3] });
      const b = await store.shardAcquire({ owner: "node-b", shards: [0, 1, 2, 3], leaseMs: HOUR, now: T0 + SECOND });
      assert.deepEqual(
        b.map((l) => l.shard),
        [1, 2],
        "the listed shards are free at once; shard 3 stays node-a's",
      );
      const owners = new Map((await store.shardList()).map((l) => [l.shard, l.owner]));
      assert.equal(owners.get(0), "node-a");
      assert.equal(owners.get(3), "node-a");
    });
  });

  describe("nodeHeartbeat / nodeList / nodeLeave", () => {
    storeTest("a node is live until its heartbeat expires; a heartbeat renews it; leaving removes it", async (store) => {
      await store.nodeHeartbeat({ nodeId: "node-b", address: "10.0.0.2:8080", now: T0, ttlMs: 10 * SECOND });
      await store.nodeHeartbeat({ nodeId: "node-a", address: null, now: T0, ttlMs: 10 * SECOND });
      assert.deepEqual(await store.nodeList({ now: T0 + 10 * SECOND }), [
        { nodeId: "node-a", address: null, lastHeartbeatAt: T0, expiresAt: T0 + 10 * SECOND },
        { nodeId: "node-b", address: "10.0.0.2:8080", lastHeartbeatAt: T0, expiresAt: T0 + 10 * SECOND },
      ]);
      await store.nodeHeartbeat({ nodeId: "node-a", address: "10.0.0.1:8080", now: T0 + 5 * SECOND, ttlMs: 10 * SECOND });
      const later = await store.nodeList({ now: T0 + 10 * SECOND + 1 });
      assert.deepEqual(
        later.map((n) => [n.nodeId, n.address, n.lastHeartbeatAt]),
        [["node-a", "10.0.0.1:8080", T0 + 5 * SECOND]],
      );
      await store.nodeLeave({ nodeId: "node-a" });
      assert.deepEqual(await store.nodeList({ now: T0 }), [
        { nodeId: "node-b", address: "10.0.0.2:8080", lastHeartbeatAt: T0, expiresAt: T0 + 10 * SECOND },
      ]);
    });
  });
}
