// PostgreSQL's lease token across a real crash (pg_ctl stop -m immediate on a
// private server): lease grants commit without waiting for their flush
// (durability "accepted"), so a crash may lose one, and its attempt number
// is granted again. The token is the store's lease epoch, kept in an
// UNLOGGED table that crash recovery empties: every grant after the
// recovery carries a token no grant before it carried, a worker holding a
// lost grant's token is refused, and one whose grant survived completes.

import assert from "node:assert/strict";
import { after, test } from "node:test";
import { newId } from "../../src/core/ids.js";
import { openPostgresStore } from "../../src/store/postgres/index.js";
import { oneOffJob } from "../../src/store/postgres/test-support.js";
import type { LeasedRow, Store } from "../../src/store/store.js";
import { waitFor } from "../helpers.js";
import { pgInstancesAvailable, startPrimary, stopAll } from "./pg-instances.js";

after(stopAll);

const LEASE = { pool: "p", workerId: "w1", max: 1, leaseMs: 600_000 };

/** One lease of one execution; after a restart the pool's old connections fail first, so it is asked until it answers. */
const leaseOne = (store: Store): Promise<LeasedRow> =>
  waitFor(async () => (await store.executionLease(LEASE).catch(() => []))[0], "a lease after the restart");

const complete = (store: Store, row: LeasedRow, leaseToken: string) =>
  store.executionCompleteMany({ items: [{ executionId: row.executionId, tenantId: row.tenantId, attempt: row.attempt, leaseToken }] });

if (await pgInstancesAvailable("the lease epoch across a crash")) {
  test("after a crash recovery every grant carries a new token: a lost grant's holder is refused, a kept grant's completes", {
    timeout: 120_000,
  }, async () => {
    const primary = await startPrimary();
    const store = await openPostgresStore({ url: primary.url, schema: "duetime" });
    try {
      const [{ persistence }] = (await primary.query<{ persistence: string }>(
        "SELECT relpersistence AS persistence FROM pg_class WHERE oid = 'duetime.lease_epoch'::regclass",
      )) as [{ persistence: string }];
      assert.equal(persistence, "u", "the epoch lives in an unlogged table");

      const now = Date.now();
      const jobs = [oneOffJob(now, now), oneOffJob(now + 1, now)];
      await store.jobCreateMany({ jobs, nodeId: newId(now), now });
      const kept = await leaseOne(store);
      const lost = await leaseOne(store);
      assert.equal(kept.leaseToken, lost.leaseToken, "one epoch until a recovery");
      await store.pingWrite(); // a synchronous commit: both grants are on disk

      await primary.stop({ mode: "immediate" });
      await primary.start();
      // What a grant lost with its commit looks like: its execution READY, the attempt not granted.
      await primary.query("UPDATE duetime.executions SET state = 'READY', attempt = 0, lease_until = NULL WHERE id = $1", [lost.executionId]);

      const again = await leaseOne(store);
      assert.equal(again.executionId, lost.executionId);
      assert.equal(again.attempt, lost.attempt, "the lost grant's attempt number is granted again");
      assert.notEqual(again.leaseToken, lost.leaseToken, "under a token no grant before the crash carried");

      const [stale] = await complete(store, lost, lost.leaseToken!);
      assert.equal(stale?.status, "lost", "the lost grant's holder is refused");
      const [fresh] = await complete(store, again, again.leaseToken!);
      assert.equal(fresh?.status, "ok");
      const [survivor] = await complete(store, kept, kept.leaseToken!);
      assert.equal(survivor?.status, "ok", "a grant the crash kept completes under its own token");
    } finally {
      await store.close();
    }
  });
}
