// The store contract, in part (index.ts runs the parts in order).
// Lease time and fencing: leases set and judged by the store's own clock when
// `now` is omitted, and the fences (owner, attempt, lease token, lease expiry)
// the other sections leave untested.

import assert from "node:assert/strict";
import { describe } from "node:test";

import {
  T0,
  SECOND,
  LEASE_MS,
  cronJob,
  entryOf,
  acquireAll,
  createOne,
  readyExecution,
  leaseOne,
  runningExecution,
  history,
  attemptOf,
  assertOk,
  fail,
  unmarked,
  type ContractTests,
} from "./support.js";

/** How far a networked store's clock may be from this host's in the tests that leave `now` to the store. */
const STORE_CLOCK_TOLERANCE_MS = 5_000;

export function fencingContract({ storeTest }: ContractTests): void {
  // Fences the other sections leave untested: each of these goes red when
  // its one check is deleted from the driver.
  // Lease time (store.ts): without `now` a driver sets and judges leases by
  // its own clock, which for a networked store is not this host's. So these
  // tests pin nothing: they check that a lease's deadline lies within the
  // call's window, give or take STORE_CLOCK_TOLERANCE_MS, and that leases
  // pinned far in the past (T0) are judged expired by the store's clock.
  describe("the store's own clock (now omitted)", () => {
    const window = async <T>(call: () => Promise<T>): Promise<{ value: T; from: number; to: number }> => {
      const from = Date.now() - STORE_CLOCK_TOLERANCE_MS;
      const value = await call();
      return { value, from, to: Date.now() + STORE_CLOCK_TOLERANCE_MS };
    };

    storeTest("storeTime reads the store's clock: within the call's window", async (store) => {
      const { value, from, to } = await window(() => store.storeTime());
      assert.ok(Number.isSafeInteger(value) && value >= from && value <= to, `${value} in [${from}, ${to}]`);
    });

    storeTest("a lease granted, renewed and completed by the store's clock: its deadline is now + leaseMs in the call's window", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs);
      const { value: rows, from, to } = await window(() => store.executionLease({ pool: "p1", workerId: "w1", max: 1, leaseMs: LEASE_MS }));
      const leased = rows[0];
      assert.ok(leased, "leased");
      assert.equal(leased.executionId, r.executionId);
      assert.ok(leased.leaseUntil - LEASE_MS >= from && leased.leaseUntil - LEASE_MS <= to, "leaseUntil - leaseMs lies within the call");
      const beat = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1 });
      assert.equal(beat.status, "ok");
      assert.ok(beat.status === "ok" && beat.leaseUntil >= leased.leaseUntil, "a renewal never moves the deadline back");
      const items = [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }];
      assert.deepEqual(await store.executionCompleteMany({ items }), [{ status: "ok", state: "SUCCEEDED", pool: "p1", tenantId: "t1" }]);
    });

    storeTest("a lease that ended long ago by the store's clock is lost to heartbeats and reaped; a fresh one is not", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const stale = await runningExecution(store, epochs);
      const fresh = await readyExecution(store, epochs);
      assert.equal((await store.executionLease({ pool: "p1", workerId: "w2", max: 1, leaseMs: LEASE_MS }))[0]?.executionId, fresh.executionId);
      assert.deepEqual(unmarked(await store.executionHeartbeat({ tenantId: "t1", executionId: stale.executionId, attempt: 1 })), {
        status: "lost",
      });
      const reaped = await store.executionReap({ limit: 10 });
      assert.deepEqual(
        reaped.map((x) => x.executionId),
        [stale.executionId],
      );
    });

    storeTest("a shard lease that ended long ago is taken over; a fresh one holds against another owner", async (store) => {
      const [old] = await store.shardAcquire({ owner: "a", shards: [3], leaseMs: 10 * SECOND, now: T0 });
      assert.ok(old);
      const { value, from, to } = await window(() => store.shardAcquire({ owner: "b", shards: [3], leaseMs: 10 * SECOND }));
      const [taken] = value;
      assert.equal(taken?.owner, "b");
      assert.ok(taken.epoch > old.epoch, "a new owner bumps the epoch");
      assert.ok(taken.leaseUntil - 10 * SECOND >= from && taken.leaseUntil - 10 * SECOND <= to, "leaseUntil - leaseMs lies within the call");
      assert.deepEqual(await store.shardAcquire({ owner: "a", shards: [3], leaseMs: 10 * SECOND }), []);
    });
  });

  describe("fencing", () => {
    storeTest(
      "dispatch is fenced by owner: another node with the owner's epochs, or the owner after releasing, dispatches nothing",
      async (store) => {
        const epochs = await acquireAll(store, "node-a");
        const nj = cronJob();
        await createOne(store, nj);
        const items = [{ entry: entryOf(nj), next: null }];
        assert.deepEqual((await store.dispatchMany({ nodeId: "node-b", epochs, now: T0, items })).fenced, [nj.job.jobId]);
        await store.shardRelease({ owner: "node-a" });
        assert.deepEqual((await store.dispatchMany({ nodeId: "node-a", epochs, now: T0, items })).fenced, [nj.job.jobId]);
        assert.deepEqual(await history(store, "t1", nj.job.jobId), []);
      },
    );

    storeTest("complete is fenced by attempt: a stale attempt answers lost after a later attempt succeeded", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
      const second = await leaseOne(store, T0 + LEASE_MS + 2);
      assertOk(
        (
          await store.executionCompleteMany({
            items: [{ executionId: r.executionId, tenantId: "t1", attempt: second.attempt }],
            now: T0 + LEASE_MS + 3,
          })
        )[0],
        "SUCCEEDED",
      );
      const [late] = await store.executionCompleteMany({
        items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }],
        now: T0 + LEASE_MS + 4,
      });
      assert.deepEqual(unmarked(late), { status: "lost" });
    });

    storeTest(
      "heartbeat, complete and fail are fenced by the lease token: another token answers lost, changes nothing and records the possible duplicate",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        // Every driver's grants name a token (SQLite's store-handle incarnation, PostgreSQL's lease epoch): opaque here.
        const token = r.leased.leaseToken;
        assert.ok(token !== undefined, "the grant names a lease token");
        const call = { executionId: r.executionId, tenantId: "t1", attempt: 1 };
        const mark = { tenantId: "t1", attempt: 1, reason: "lease_lost" };
        for (const [n, other] of [`${token}0`, "x"].entries()) {
          const stale = { ...call, leaseToken: other };
          const beat = await store.executionHeartbeat({ ...stale, leaseMs: 10 * LEASE_MS, now: T0 + 1 });
          assert.deepEqual(beat, n === 0 ? { status: "lost", possibleDuplicate: mark } : { status: "lost" }, `heartbeat with ${other}`);
          const [done] = await store.executionCompleteMany({ items: [stale], now: T0 + 2 });
          assert.deepEqual(done, { status: "lost" }, `complete with ${other}`);
          const [failed] = await store.executionFailMany({
            items: [{ ...stale, error: { message: "stale", class: "permanent" }, jitter: 0 }],
            now: T0 + 3,
          });
          assert.deepEqual(failed, { status: "lost" }, `fail with ${other}`);
        }
        assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING", "the attempt runs on");
        assert.deepEqual(
          (await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 })).map((d) => [d.executionId, d.duplicateAttempt, d.reason]),
          [[r.executionId, 1, "lease_lost"]],
        );
        // The grant's token holds: it renews the lease and completes the attempt.
        const beat = await store.executionHeartbeat({ ...call, leaseToken: token, now: T0 + 4 });
        assert.deepEqual(beat, { status: "ok", leaseUntil: T0 + 4 + LEASE_MS, cancelRequested: false });
        assertOk((await store.executionCompleteMany({ items: [{ ...call, leaseToken: token }], now: T0 + 5 }))[0], "SUCCEEDED");
        // A success repeated answers ok again with the grant's token, and lost with another.
        assertOk((await store.executionCompleteMany({ items: [{ ...call, leaseToken: token }], now: T0 + 6 }))[0], "SUCCEEDED");
        assert.deepEqual(unmarked((await store.executionCompleteMany({ items: [{ ...call, leaseToken: `${token}0` }], now: T0 + 6 }))[0]), {
          status: "lost",
        });
      },
    );

    storeTest("a call with no lease token is fenced by the attempt alone: heartbeat, fail and complete hold", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const call = { executionId: r.executionId, tenantId: "t1", attempt: 1 };
      assert.equal((await store.executionHeartbeat({ ...call, now: T0 + 1 })).status, "ok");
      assertOk((await store.executionFailMany({ items: [fail({ ...call })], now: T0 + 2 }))[0], "READY");
      const second = await leaseOne(store, T0 + 20 * SECOND);
      assertOk((await store.executionCompleteMany({ items: [{ ...call, attempt: second.attempt }], now: T0 + 21 * SECOND }))[0], "SUCCEEDED");
    });

    storeTest("release is fenced by attempt: a stale attempt answers lost and the running one keeps its lease", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
      const second = await leaseOne(store, T0 + LEASE_MS + 2);
      const release = { executionId: r.executionId, tenantId: "t1", attempt: 1, readyAt: T0 };
      assert.deepEqual(await store.executionRelease({ items: [release], now: T0 + LEASE_MS + 3 }), ["lost"]);
      assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, second.attempt).state, "RUNNING");
    });

    storeTest("release is fenced by lease expiry: an expired lease answers lost, even before the reaper ran", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const release = { executionId: r.executionId, tenantId: "t1", attempt: 1, readyAt: T0 };
      assert.deepEqual(await store.executionRelease({ items: [release], now: r.leased.leaseUntil + 1 }), ["lost"]);
      assert.equal(attemptOf(await history(store, "t1", r.job.jobId), r.executionId, 1).state, "RUNNING");
    });
  });
}
