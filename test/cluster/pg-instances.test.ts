// The private-cluster harness itself (pg-instances.ts): a primary and a
// streaming standby that replays, pauses, restarts and promotes, the duetime
// schema made on the primary and read on the standby, a synchronous standby,
// and nothing left behind.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, test } from "node:test";
import { newId } from "../../src/core/ids.js";
import { openPostgresStore } from "../../src/store/postgres/index.js";
import { oneOffJob } from "../../src/store/postgres/test-support.js";
import { pgInstancesAvailable, startPrimary, startStandby, stopAll } from "./pg-instances.js";

after(stopAll);

const count = async (q: (sql: string) => Promise<{ n: number }[]>) => (await q("SELECT count(*)::int AS n FROM t"))[0]!.n;

if (await pgInstancesAvailable("the private PostgreSQL harness")) {
  test("a standby streams from its primary: replays, pauses, comes back after a stop, promotes; stopAll removes both", {
    timeout: 120_000,
  }, async () => {
    const primary = await startPrimary();
    const standby = await startStandby(primary);
    assert.notEqual(primary.port, 5432);
    assert.notEqual(standby.port, primary.port);

    await primary.query("CREATE TABLE t (v int)");
    await primary.query("INSERT INTO t VALUES (1)");
    await standby.waitCaughtUp();
    assert.equal(await count((s) => standby.query(s)), 1);
    assert.equal((await standby.query<{ r: boolean }>("SELECT pg_is_in_recovery() AS r"))[0]!.r, true);

    await standby.pauseReplay();
    await primary.query("INSERT INTO t VALUES (2)");
    assert.equal(await count((s) => standby.query(s)), 1, "paused: received, not applied");
    await standby.resumeReplay();
    await standby.waitCaughtUp();
    assert.equal(await count((s) => standby.query(s)), 2);

    await standby.stop({ mode: "immediate" });
    await primary.query("INSERT INTO t VALUES (3)"); // kept for it by its replication slot
    await standby.start();
    await standby.waitCaughtUp();
    assert.equal(await count((s) => standby.query(s)), 3);

    await primary.stop({ mode: "immediate" });
    await standby.promote();
    await standby.query("INSERT INTO t VALUES (4)");
    assert.equal(await count((s) => standby.query(s)), 4);

    await stopAll();
    assert.equal(existsSync(primary.dir), false);
    assert.equal(existsSync(standby.dir), false);
  });

  test("the duetime schema migrated on the primary is read on the standby, which refuses writes", { timeout: 120_000 }, async () => {
    const primary = await startPrimary();
    const standby = await startStandby(primary);
    const store = await openPostgresStore({ url: primary.url, schema: "duetime" });
    const replica = await openPostgresStore({ url: standby.url, schema: "duetime", migrate: false });
    try {
      const now = Date.now();
      const job = oneOffJob(now, now + 60_000);
      await store.jobCreateMany({ jobs: [job], nodeId: newId(now), now });
      await standby.waitCaughtUp();
      const listed = await replica.jobList({ tenantId: "t1", limit: 10 });
      assert.deepEqual(
        listed.map((j) => j.jobId),
        [job.job.jobId],
      );
      assert.equal(await replica.replicaLagMs(), 0, "caught up with an idle primary");
      assert.equal(await store.replicaLagMs(), Infinity, "a primary is no one's replica");
      await assert.rejects(replica.pingWrite(), "a standby is read-only");
    } finally {
      await replica.close();
      await store.close();
    }
  });

  test("a synchronous standby: commits wait for it once it streams", { timeout: 120_000 }, async () => {
    const primary = await startPrimary({ synchronousStandby: true });
    const standby = await startStandby(primary);
    const [{ names }] = (await primary.query<{ names: string }>("SELECT current_setting('synchronous_standby_names') AS names")) as [
      { names: string },
    ];
    assert.equal(names, "standby");
    const [{ state }] = (await primary.query<{ state: string }>("SELECT sync_state AS state FROM pg_stat_replication")) as [{ state: string }];
    assert.equal(state, "sync");
    await primary.query("CREATE TABLE t (v int)");
    await primary.query("INSERT INTO t VALUES (1)");
    await standby.waitCaughtUp();
    assert.equal(await count((s) => standby.query(s)), 1);
  });
}
