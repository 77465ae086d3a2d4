// The store contract, in part (index.ts runs the parts in order).
// The head of the Store port: kind, ping, replicaLagMs, pingWrite and migrate.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { newJob, createOne, getJob, type ContractTests } from "./support.js";

export function lifecycleContract({ storeTest }: ContractTests): void {
  describe("lifecycle", () => {
    storeTest("kind names the driver and ping answers", async (store) => {
      assert.equal(typeof store.kind, "string");
      assert.ok(store.kind.length > 0);
      await store.ping();
    });

    storeTest("a primary is no one's replica: replicaLagMs answers Infinity (it never serves as a read replica)", async (store) => {
      assert.equal(await store.replicaLagMs(), Infinity);
    });

    storeTest("pingWrite answers on a healthy store and changes no data", async (store) => {
      const created = await createOne(store, newJob());
      await store.pingWrite();
      await store.pingWrite();
      assert.deepEqual(await getJob(store, created), created);
    });

    storeTest("migrate on an already-migrated store is a no-op that keeps the data", async (store) => {
      const nj = newJob();
      await createOne(store, nj);
      const first = await store.migrate();
      const second = await store.migrate();
      assert.deepEqual(first.applied, [], "the store was opened migrated");
      assert.deepEqual(second, first);
      assert.ok(Number.isInteger(first.version) && first.version >= 1, `version ${first.version}`);
      const got = await getJob(store, nj);
      assert.equal(got.jobId, nj.job.jobId);
    });
  });
}
