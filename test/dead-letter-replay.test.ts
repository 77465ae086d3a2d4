// End to end: bulk dead-letter replay (POST /v1/dead-letters:replay) on a
// real server with a real worker: the rate holds, measured from the replayed
// attempts' start times; progress is a resource; the request is audited; a
// filter takes only the dead letters dead when the replay was created; and a
// replay interrupted by a restart resumes where it stopped, each dead letter
// replayed once.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DuetimeClient, Worker } from "@duetime/sdk";
import { startServer } from "../src/server/index.js";
import { openStore } from "../src/store/factory.js";
import { apiError, queueJob, serverStore, startTestServer, testStore, waitFor } from "./helpers.js";

/** n jobs in pool, leased once (attempt 1 running): `die()` fails them permanently. */
async function doomed(client: DuetimeClient, pool: string, n: number): Promise<{ jobIds: string[]; die: () => Promise<void> }> {
  const jobs = await client.createJobs(Array.from({ length: n }, () => ({ ...queueJob(pool), retry: { maxAttempts: 1 } })));
  const jobIds = jobs.map((j) => ("jobId" in j ? j.jobId : assert.fail(JSON.stringify(j))));
  const leased: { executionId: string; attempt: number }[] = [];
  await waitFor(async () => {
    leased.push(...(await client.lease(pool, { workerId: "dooming", max: n, leaseSeconds: 60 })).items);
    return leased.length >= n;
  }, `${n} executions of ${pool} leased`);
  const die = async () => {
    await client.failMany(leased.map((l) => ({ executionId: l.executionId, attempt: l.attempt, error: { message: "boom", class: "permanent" } })));
  };
  return { jobIds, die };
}

/** n dead letters in pool: jobs leased once and failed permanently. */
async function deadLetters(client: DuetimeClient, pool: string, n: number): Promise<string[]> {
  const { jobIds, die } = await doomed(client, pool, n);
  await die();
  return jobIds;
}

/** The start time of each job's attempt 2 (the replay's), once every one has succeeded. */
async function replayedStarts(client: DuetimeClient, jobIds: string[]): Promise<number[]> {
  return waitFor(
    async () => {
      const starts: number[] = [];
      for (const jobId of jobIds) {
        const items = (await client.listExecutions(jobId)).items;
        const second = items.find((e) => e.attempt === 2);
        if (second?.state !== "SUCCEEDED") return null;
        assert.equal(items.filter((e) => e.attempt > 2).length, 0, `${jobId} was replayed once`);
        starts.push(Date.parse(second.startedAt!));
      }
      return starts.sort((a, b) => a - b);
    },
    "every replayed execution succeeded",
    30_000,
  );
}

function worker(url: string, pool: string): Worker {
  return new Worker({ url, pool, concurrency: 50, waitSeconds: 1, handleSignals: false, logger: null, handler: async () => {} });
}

test("bulk dead-letter replay: the rate is honoured (attempt start times), progress is visible, the request audited, the filter bounded by the creation time", {
  timeout: 120_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-dlq-replay-"));
  const server = await startServer({ host: "127.0.0.1", port: 0, ...serverStore(testStore(dir)), logLevel: "silent" });
  const client = new DuetimeClient({ url: server.url, retries: 0 });
  const w = worker(server.url, "replays");
  try {
    const N = 10;
    const RATE = 5;
    const jobIds = await deadLetters(client, "replays", N);
    const [otherPool] = await deadLetters(client, "elsewhere", 1);
    const later = await doomed(client, "replays", 1);
    const created = await client.replayDeadLetters({ filter: { pool: "replays" }, ratePerSecond: RATE });
    assert.equal(created.state, "RUNNING");
    assert.equal(created.ratePerSecond, RATE);
    assert.ok("filter" in created.selection && created.selection.filter.deadBefore === created.createdAt, "a filter ends at the creation");
    // Dies after the replay was created: not part of it.
    await later.die();
    const [late] = later.jobIds;
    void w.run();
    const done = await waitFor(
      async () => {
        const r = await client.getDeadLetterReplay(created.replayId);
        return r.state === "DONE" ? r : null;
      },
      "the replay is done",
      30_000,
    );
    assert.equal(done.replayed, N);
    assert.equal(done.skipped, 0);
    assert.ok(done.finishedAt);
    const starts = await replayedStarts(client, jobIds);
    assert.equal(starts.length, N);
    // Each replayed execution has its own slot, 1/rate apart from the creation: the i-th start comes no earlier than the i-th slot
    // (not "the span from the first start": the first may wait for the worker to come up, shortening the span).
    const gap = 1000 / RATE;
    const base = Date.parse(created.createdAt);
    starts.forEach((at, i) => {
      assert.ok(
        at >= base + i * gap - 50,
        `attempt ${i + 1} of ${N} at ${RATE}/s started ${at - base} ms after the replay, before its slot at ${i * gap} ms`,
      );
    });
    // (No bound on starts per second: slots already past when the worker comes up, on a loaded machine, start together by design;
    // the slots are what the rate governs, and the check above holds each start to its own.)
    const letters = (await client.listDeadLetters()).items.map((d) => d.jobId).sort();
    assert.deepEqual(letters, [otherPool, late].sort(), "another pool's and a later dead letter are left dead");
    const [listed] = (await client.listDeadLetterReplays()).items;
    assert.equal(listed?.replayId, created.replayId);
    const audit = (await client.listAudit()).items.filter((e) => e.action === "dead-letter.replay-bulk");
    assert.equal(audit.length, 1, "one audit entry for the bulk request");
    assert.equal(audit[0]!.subject, created.replayId);
    assert.deepEqual(audit[0]!.details, { selection: created.selection, ratePerSecond: RATE });
  } finally {
    await w.shutdown();
    await client.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("bulk dead-letter replay resumes after a restart where it stopped: each dead letter replayed once", { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-dlq-restart-"));
  const store = testStore(dir);
  const open = () => startServer({ host: "127.0.0.1", port: 0, ...serverStore(store), nodeId: "replay-node", logLevel: "silent" });
  const first = await open();
  let client = new DuetimeClient({ url: first.url, retries: 0 });
  try {
    const N = 12;
    const jobIds = await deadLetters(client, "replays", N);
    const created = await client.replayDeadLetters({ executionIds: await executionIds(client, jobIds), ratePerSecond: 3 });
    assert.equal(created.total, N);
    const before = await waitFor(async () => {
      const r = await client.getDeadLetterReplay(created.replayId);
      return r.replayed > 0 ? r : null;
    }, "the replay has started");
    await client.close();
    await first.close();
    assert.equal(before.state, "RUNNING", `stopped mid-way: ${before.replayed} of ${N} replayed`);
    assert.ok(before.replayed < N);
    // The clean stop gave the replay's lease up: any node may take it on at once, not only when the lease expires.
    const peek = await openStore(store.url, store.options);
    try {
      const held = await peek.replayGet({ replayId: created.replayId });
      assert.deepEqual([held?.state, held?.owner, held?.leaseUntil], ["RUNNING", null, null]);
    } finally {
      await peek.close();
    }
    const second = await open();
    client = new DuetimeClient({ url: second.url, retries: 0 });
    const w = worker(second.url, "replays");
    void w.run();
    try {
      const done = await waitFor(
        async () => {
          const r = await client.getDeadLetterReplay(created.replayId);
          return r.state === "DONE" ? r : null;
        },
        "the replay is done after the restart",
        30_000,
      );
      assert.equal(done.replayed, N, "the rest were replayed after the restart");
      assert.equal(done.skipped, 0, "none was taken twice");
      assert.equal((await replayedStarts(client, jobIds)).length, N);
      assert.deepEqual((await client.listDeadLetters()).items, []);
    } finally {
      await w.shutdown();
      await client.close();
      await second.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

async function executionIds(client: DuetimeClient, jobIds: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const jobId of jobIds) ids.push((await client.listExecutions(jobId)).items[0]!.executionId);
  return ids;
}

test("bulk dead-letter replay is tenant-scoped: a tenant's admin replays and sees its own; a platform admin names the tenant; the selection is checked", {
  timeout: 60_000,
}, async () => {
  // Keys from --api-keys are bootstrap keys, acting for every tenant: the tenants' own keys are stored ones.
  const t = await startTestServer({ apiKeys: [{ key: "platform-admin", tenantId: "*", role: "admin" }] });
  const as = (token: string) => new DuetimeClient({ url: t.url, token, retries: 0 });
  const platform = as("platform-admin");
  const stored = async (tenantId: string, role: "admin" | "client") => as((await platform.createKey({ tenantId, role })).key);
  const [a, b, aClient] = [await stored("a", "admin"), await stored("b", "admin"), await stored("a", "client")];
  try {
    await deadLetters(a, "p", 2);
    const [theirs] = await deadLetters(b, "p", 1);
    const denied = await apiError(a.replayDeadLetters({ filter: {}, tenantId: "b" }));
    assert.equal(denied.status, 403);
    assert.equal(denied.details?.field, "tenantId");
    assert.equal((await apiError(aClient.replayDeadLetters({ filter: {} }))).status, 403, "role admin only");
    const unnamed = await apiError(platform.replayDeadLetters({ filter: {} }));
    assert.equal(unnamed.status, 400);
    assert.equal(unnamed.details?.field, "tenantId");
    for (const body of [{}, { filter: {}, executionIds: ["x"] }]) {
      const bad = await apiError(a.replayDeadLetters(body));
      assert.equal(bad.status, 400);
      assert.equal(bad.details?.field, "filter");
    }
    const late = await apiError(a.replayDeadLetters({ filter: { deadAfter: "2999-01-01T00:00:00Z" } }));
    assert.equal(late.details?.field, "filter.deadAfter");
    const rate = await apiError(a.replayDeadLetters({ filter: {}, ratePerSecond: 0 }));
    assert.equal(rate.details?.field, "ratePerSecond");

    const mine = await a.replayDeadLetters({ filter: {}, ratePerSecond: 100 });
    assert.equal(mine.tenantId, "a");
    const done = await waitFor(async () => {
      const r = await a.getDeadLetterReplay(mine.replayId);
      return r.state === "DONE" ? r : null;
    }, "a's replay is done");
    assert.equal(done.replayed, 2, "a's dead letters only");
    assert.deepEqual(
      (await b.listDeadLetters()).items.map((d) => d.jobId),
      [theirs],
      "b's dead letter is left dead",
    );
    assert.equal((await apiError(b.getDeadLetterReplay(mine.replayId))).status, 404, "another tenant's replay is not found");
    assert.equal((await apiError(b.cancelDeadLetterReplay(mine.replayId))).status, 404);
    assert.deepEqual((await b.listDeadLetterReplays()).items, []);
    const cancelDone = await apiError(a.cancelDeadLetterReplay(mine.replayId));
    assert.equal(cancelDone.status, 409);
    assert.equal(cancelDone.code, "INVALID_STATE");

    const forB = await platform.replayDeadLetters({
      // At 0.01/s the second id's slot is 100 s away: RUNNING until cancelled.
      executionIds: [(await b.listDeadLetters()).items[0]!.executionId, "zzz"],
      tenantId: "b",
      ratePerSecond: 0.01,
    });
    assert.equal(forB.tenantId, "b");
    assert.equal((await platform.getDeadLetterReplay(forB.replayId)).tenantId, "b");
    assert.equal((await b.getDeadLetterReplay(forB.replayId)).replayId, forB.replayId);
    const cancelled = await b.cancelDeadLetterReplay(forB.replayId);
    assert.equal(cancelled.state, "CANCELLED");
    assert.equal((await b.cancelDeadLetterReplay(forB.replayId)).state, "CANCELLED", "a repeat answers 200 again");
    const audit = (await b.listAudit()).items.map((e) => e.action);
    assert.ok(audit.includes("dead-letter.replay-bulk") && audit.includes("dead-letter.replay-cancel"), audit.join(", "));
  } finally {
    for (const c of [a, b, aClient, platform]) await c.close();
    await t.close();
  }
});
