// Reads from a real streaming replica (--read-store): a `duetime serve` on a
// private primary with a private hot standby (pg-instances.ts). Pausing the
// standby's replay (pg_wal_replay_pause) freezes what it shows while the
// primary moves on, so an answer tells which server gave it: a job created
// during the pause is in the primary's list and not in the replica's.

import assert from "node:assert/strict";
import { after, test } from "node:test";
import { DuetimeClient } from "@duetime/sdk";
import { spawnServer, waitFor } from "../helpers.js";
import { parseExposition, value } from "../metrics-text.js";
import { duetimeStore, pgInstancesAvailable, type Primary, type Standby, startPrimary, startStandby, stopAll } from "./pg-instances.js";

after(stopAll);

/** A node on the primary reading lists and history from the standby. */
async function nodeWithReplica(primary: Primary, standby: Standby, maxLag?: string) {
  const node = await spawnServer(duetimeStore(primary), ["--read-store", standby.url, ...(maxLag ? ["--read-store-max-lag", maxLag] : [])]);
  const client = new DuetimeClient({ url: node.url, retries: 0, timeoutMs: 30_000 });
  const serving = async () => value(parseExposition(await client.metrics()), "duetime_read_replica_serving");
  const listed = async () => new Set((await client.listJobs({ limit: 500 })).items.map((j) => j.jobId));
  /** Lists (which checks the replica's lag) until the metric says the replica serves, or the store does. */
  const untilServing = (want: 0 | 1, timeoutMs = 30_000) =>
    waitFor(
      async () => {
        await listed();
        return (await serving()) === want;
      },
      `duetime_read_replica_serving ${want}`,
      timeoutMs,
    );
  return { node, client, serving, listed, untilServing };
}

const queueJob = (name: string, delaySeconds = 0) => ({ name, target: { type: "queue" as const, pool: "replica" }, schedule: { delaySeconds } });

/** How far the standby trails, by its own clock: the age of the last transaction it replayed. */
async function standbyLagMs(standby: Standby): Promise<number> {
  const [row] = await standby.query<{ ms: number }>("SELECT (extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000)::float8 AS ms");
  return row!.ms;
}

if (await pgInstancesAvailable("the read replica tests")) {
  test("lists and history come from the replica while it is fresh; reads that decide see the primary", { timeout: 120_000 }, async () => {
    const primary = await startPrimary();
    const standby = await startStandby(primary);
    const { node, client, listed, serving, untilServing } = await nodeWithReplica(primary, standby, "1h");
    try {
      await untilServing(1);
      const ran = await client.createJob(queueJob("ran"));
      await standby.waitCaughtUp();

      await standby.pauseReplay();
      const [leased] = (await client.lease("replica", { workerId: "w", max: 1 })).items;
      assert.equal(leased?.jobId, ran.jobId);
      await client.complete(leased!.executionId, leased!.attempt, { ok: 1 });
      const unseen = await client.createJob(queueJob("unseen", 3600));

      assert.equal((await client.getJob(unseen.jobId)).state, "SCHEDULED", "a job's own read sees the primary");
      const list = await listed();
      assert.ok(list.has(ran.jobId), "the replica has the job created before the pause");
      assert.ok(!list.has(unseen.jobId), "the list is the replica's: it does not have the job created during the pause");
      const history = (await client.listExecutions(ran.jobId)).items.map((e) => e.state);
      assert.ok(!history.includes("SUCCEEDED"), `the history is the replica's, from before the attempt ended: ${history}`);
      await client.updateJob(unseen.jobId, { name: "renamed" }, { ifMatch: (await client.getJob(unseen.jobId)).version });
      await client.cancelJob(unseen.jobId); // both decide on the primary's job, which the replica does not have
      assert.equal((await client.getJob(unseen.jobId)).state, "CANCELLED");
      assert.equal(await serving(), 1);

      await standby.resumeReplay();
      await waitFor(async () => (await listed()).has(unseen.jobId), "the list shows the job once the replica replays it");
      assert.ok((await client.listExecutions(ran.jobId)).items.some((e) => e.state === "SUCCEEDED"));
    } finally {
      await node.stop("SIGKILL");
      await client.close();
    }
  });

  test("a replica past --read-store-max-lag: the very next list is the primary's, the metric says 0; caught up: the replica again", {
    timeout: 120_000,
  }, async () => {
    const primary = await startPrimary();
    const standby = await startStandby(primary);
    const { node, client, listed, serving, untilServing } = await nodeWithReplica(primary, standby, "2s");
    try {
      await untilServing(1);
      await standby.pauseReplay();
      const job = await client.createJob(queueJob("during-pause", 3600));
      assert.equal((await client.getJob(job.jobId)).state, "SCHEDULED");
      // No reads meanwhile: the first one after the replica fell behind must not be its.
      await waitFor(async () => (await standbyLagMs(standby)) > 3_000, "the standby trails by more than the bound (2 s) plus a check (1 s)");
      assert.ok((await listed()).has(job.jobId), "the first list after the replica fell past the bound is the primary's");
      assert.equal(await serving(), 0, "that list's check judged the replica out");
      await client.cancelJob(job.jobId);

      await standby.resumeReplay();
      const resumedAt = Date.now();
      await untilServing(1);
      const backMs = Date.now() - resumedAt;
      assert.ok((await listed()).has(job.jobId));

      // Under steady reads: how long a job created at a pause stays out of the list.
      await standby.pauseReplay();
      const again = await client.createJob(queueJob("listed-steadily", 3600));
      const createdAt = Date.now();
      await waitFor(async () => (await listed()).has(again.jobId), "the job is listed once the replica is past the bound");
      console.log(
        `# max-lag 2s: resumed, metric 1 again after ${backMs} ms; under steady reads a job created at a pause listed after ${Date.now() - createdAt} ms`,
      );
      await standby.resumeReplay();
    } finally {
      await node.stop("SIGKILL");
      await client.close();
    }
  });

  test("the replica stops: every read answers from the primary, no error; it starts again: reads go back to it", { timeout: 120_000 }, async () => {
    const primary = await startPrimary();
    const standby = await startStandby(primary);
    const { node, client, listed, serving, untilServing } = await nodeWithReplica(primary, standby);
    try {
      await untilServing(1);
      await standby.stop({ mode: "immediate" });
      const job = await client.createJob(queueJob("replica-down", 3600));
      // Reads right after the stop: the failed replica read is answered by the primary.
      let slowestMs = 0;
      for (let i = 0; i < 5; i++) {
        const t0 = Date.now();
        assert.ok((await listed()).has(job.jobId), "a list while the replica is down is the primary's");
        slowestMs = Math.max(slowestMs, Date.now() - t0);
      }
      assert.deepEqual((await client.listExecutions(job.jobId)).items.length, 1);
      assert.equal(await serving(), 0, "the first failed replica read judged it out");

      await standby.start();
      const startedAt = Date.now();
      await untilServing(1);
      const backMs = Date.now() - startedAt;
      console.log(`# replica stopped: the slowest of the first 5 lists ${slowestMs} ms; started: 1 again after ${backMs} ms`);
      await standby.waitCaughtUp();
      assert.ok((await listed()).has(job.jobId));
    } finally {
      await node.stop("SIGKILL");
      await client.close();
    }
  });

  test("the replica is promoted (it no longer follows the store): reads go to the primary, the metric says 0", { timeout: 120_000 }, async () => {
    const primary = await startPrimary();
    const standby = await startStandby(primary);
    const { node, client, listed, serving, untilServing } = await nodeWithReplica(primary, standby);
    try {
      await untilServing(1);
      await standby.promote();
      const job = await client.createJob(queueJob("after-promotion", 3600));
      await waitFor(async () => (await listed()).has(job.jobId), "the list shows a job created after the replica's promotion");
      assert.equal(await serving(), 0);
    } finally {
      await node.stop("SIGKILL");
      await client.close();
    }
  });
}
