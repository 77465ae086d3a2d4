// A real server on an ephemeral port, real SDK clients and workers, real
// SQLite files: the behaviours of docs/api.md end to end.

import assert from "node:assert/strict";
import { test } from "node:test";
import { NonRetryableError, Worker, DuetimeClient } from "@duetime/sdk";
import type { LeasedExecution } from "@duetime/sdk/contract";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { apiError, queueJob, spawnServer, startTestServer, testStore, waitFor } from "./helpers.js";

function worker(
  url: string,
  pool: string,
  handler: (job: LeasedExecution) => Promise<unknown>,
  extra: Partial<ConstructorParameters<typeof Worker>[0]> = {},
) {
  const w = new Worker({ url, pool, concurrency: 4, waitSeconds: 1, handleSignals: false, logger: null, handler, ...extra });
  void w.run();
  return w;
}

test("a delayed job runs at its time, not before, and completes", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("delayed", { schedule: { delaySeconds: 2 } }));
    assert.equal(job.created, true);
    assert.equal(job.state, "SCHEDULED");
    const startedAt: number[] = [];
    const w = worker(t.url, "delayed", async (leased) => {
      startedAt.push(Date.now());
      assert.deepEqual(leased.payload, { hello: "world" });
      return { ok: 1 };
    });
    await waitFor(async () => (await t.client.getJob(job.jobId)).state === "COMPLETED", "job completed");
    await w.shutdown();
    assert.equal(startedAt.length, 1);
    assert.ok(startedAt[0]! >= Date.parse(job.nextRunAt!), "ran before its time");
    const history = await t.client.listExecutions(job.jobId);
    assert.equal(history.items.length, 1);
    assert.equal(history.items[0]!.state, "SUCCEEDED");
    assert.equal(history.items[0]!.attempt, 1);
    assert.equal(history.items[0]!.scheduledFor, job.nextRunAt);
    assert.deepEqual(history.items[0]!.result, { ok: 1 }, "the handler's result is in the history");
  } finally {
    await t.close();
  }
});

test("an expired lease fences the stale attempt and the job runs again with the next attempt", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("fence"));
    const first = await waitFor(async () => (await t.client.lease("fence", { workerId: "slow", max: 1, leaseSeconds: 1 })).items[0], "first lease");
    assert.equal(first.attempt, 1);
    // the worker stalls past its lease; the reaper notices within about a second
    const second = await waitFor(
      async () => (await t.client.lease("fence", { workerId: "fast", max: 1, leaseSeconds: 30 })).items[0],
      "second lease",
      10_000,
    );
    assert.equal(second.attempt, 2);
    assert.equal(second.executionId, first.executionId);
    // One at a time: a call started before the previous one is awaited would reject unhandled meanwhile.
    for (const call of [
      () => t.client.complete(first.executionId, 1),
      () => t.client.fail(first.executionId, 1, { message: "late" }),
      () => t.client.heartbeat(first.executionId, { attempt: 1 }),
    ]) {
      const err = await apiError(call());
      assert.equal(err.status, 409);
      assert.equal(err.code, "LEASE_LOST");
    }
    assert.deepEqual(await t.client.complete(second.executionId, 2, { done: true }), { state: "SUCCEEDED" });
    // a retried complete (lost response) answers 200 again
    assert.deepEqual(await t.client.complete(second.executionId, 2, { done: true }), { state: "SUCCEEDED" });
    const history = await t.client.listExecutions(job.jobId);
    assert.deepEqual(
      history.items.map((i) => [i.attempt, i.state]),
      [
        [2, "SUCCEEDED"],
        [1, "TIMED_OUT"],
      ],
    );
    assert.equal((await t.client.getJob(job.jobId)).state, "COMPLETED");
  } finally {
    await t.close();
  }
});

test("a poison job that keeps losing its lease ends in dead letters after maxAttempts", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("poison", { retry: { maxAttempts: 2 } }));
    for (let attempt = 1; attempt <= 2; attempt++) {
      const leased = await waitFor(
        async () => (await t.client.lease("poison", { workerId: "crashy", max: 1, leaseSeconds: 1 })).items[0],
        `lease ${attempt}`,
        10_000,
      );
      assert.equal(leased.attempt, attempt);
    }
    await waitFor(async () => (await t.client.getJob(job.jobId)).state === "DEAD", "job dead", 10_000);
    const dead = await t.client.listDeadLetters();
    assert.equal(dead.items.length, 1);
    assert.equal(dead.items[0]!.attempts, 2);
    assert.deepEqual(dead.items[0]!.payload, { hello: "world" });
  } finally {
    await t.close();
  }
});

test("failures retry with backoff to dead letters; replay makes a new attempt and keeps history", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("flaky", { retry: { maxAttempts: 3, backoffSeconds: 0.2, maxBackoffSeconds: 1 } }));
    let calls = 0;
    let healthy = false;
    const w = worker(t.url, "flaky", async () => {
      calls++;
      if (!healthy) throw new Error(`boom ${calls}`);
      return "fine";
    });
    await waitFor(async () => (await t.client.getJob(job.jobId)).state === "DEAD", "job dead");
    assert.equal(calls, 3);
    const dead = await t.client.listDeadLetters();
    assert.equal(dead.items[0]!.lastError?.message, "boom 3");
    healthy = true;
    const replayed = await t.client.replayDeadLetter(dead.items[0]!.executionId);
    assert.equal(replayed.executionId, dead.items[0]!.executionId);
    await waitFor(async () => (await t.client.getJob(job.jobId)).state === "COMPLETED", "job completed after replay");
    await w.shutdown();
    const history = await t.client.listExecutions(job.jobId);
    assert.deepEqual(
      history.items.map((i) => [i.attempt, i.state]),
      [
        [4, "SUCCEEDED"],
        [3, "DEAD"],
        [2, "FAILED"],
        [1, "FAILED"],
      ],
    );
    assert.equal((await t.client.listDeadLetters()).items.length, 0);
  } finally {
    await t.close();
  }
});

test("a permanent failure is dead at once", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("perm", { retry: { maxAttempts: 5 } }));
    let calls = 0;
    const w = worker(t.url, "perm", async () => {
      calls++;
      throw new NonRetryableError("bad payload");
    });
    await waitFor(async () => (await t.client.getJob(job.jobId)).state === "DEAD", "dead");
    await w.shutdown();
    assert.equal(calls, 1);
  } finally {
    await t.close();
  }
});

test("a job cancelled while queued never runs", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("cancel-race"));
    await waitFor(async () => (await t.client.listExecutions(job.jobId)).items[0]?.state === "QUEUED", "queued");
    await t.client.cancelJob(job.jobId);
    await t.client.cancelJob(job.jobId); // repeating answers 204 again
    // a control job queued after it: once the worker ran that, it has leased
    // everything that was ready before, so the cancelled one had its chance
    const control = await t.client.createJob(queueJob("cancel-race"));
    const ran: string[] = [];
    const w = worker(t.url, "cancel-race", async (leased) => void ran.push(leased.jobId));
    await waitFor(() => ran.includes(control.jobId), "the control job ran");
    await w.shutdown();
    assert.deepEqual(ran, [control.jobId]);
    assert.equal((await t.client.getJob(job.jobId)).state, "CANCELLED");
    assert.equal((await t.client.listExecutions(job.jobId)).items[0]!.state, "CANCELLED");
  } finally {
    await t.close();
  }
});

test("a running attempt sees cancelRequested on its heartbeat", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("cancel-running"));
    const leased = await waitFor(async () => (await t.client.lease("cancel-running", { workerId: "w", max: 1 })).items[0], "lease");
    assert.equal((await t.client.heartbeat(leased.executionId, { attempt: 1 })).cancelRequested, false);
    await t.client.cancelJob(job.jobId);
    assert.equal((await t.client.heartbeat(leased.executionId, { attempt: 1 })).cancelRequested, true);
  } finally {
    await t.close();
  }
});

test("pause stops new executions; resuming a one-off whose time passed runs it at once", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("pause", { schedule: { delaySeconds: 1 } }));
    const paused = await t.client.pauseJob(job.jobId);
    assert.equal(paused.state, "PAUSED");
    assert.equal(paused.nextRunAt, null);
    assert.equal((await t.client.pauseJob(job.jobId)).state, "PAUSED"); // no-op
    // a control job due just after it: once that is leased, the paused job's due time has passed
    await t.client.createJob(queueJob("pause-control", { schedule: { delaySeconds: 1 } }));
    await waitFor(async () => (await t.client.lease("pause-control", { workerId: "w", max: 1 })).items.length > 0, "the control job ran", 5_000);
    assert.deepEqual(
      (await t.client.listExecutions(job.jobId)).items.map((e) => e.state),
      ["PAUSED"],
      "its execution is held",
    );
    assert.equal((await t.client.lease("pause", { workerId: "w", max: 1 })).items.length, 0);
    const resumed = await t.client.resumeJob(job.jobId);
    assert.equal(resumed.state, "SCHEDULED");
    const leased = await waitFor(async () => (await t.client.lease("pause", { workerId: "w", max: 1 })).items[0], "runs after resume", 5_000);
    assert.equal(leased.jobId, job.jobId);
  } finally {
    await t.close();
  }
});

test("state rules: cancelling a completed job, or pausing a cancelled one, is 409 INVALID_STATE", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("states"));
    const leased = await waitFor(async () => (await t.client.lease("states", { workerId: "w", max: 1 })).items[0], "lease");
    await t.client.complete(leased.executionId, leased.attempt);
    assert.equal((await apiError(t.client.cancelJob(job.jobId))).code, "INVALID_STATE");
    const other = await t.client.createJob(queueJob("states", { schedule: { delaySeconds: 60 } }));
    await t.client.cancelJob(other.jobId);
    assert.equal((await apiError(t.client.pauseJob(other.jobId))).code, "INVALID_STATE");
    assert.equal((await apiError(t.client.resumeJob(other.jobId))).code, "INVALID_STATE");
  } finally {
    await t.close();
  }
});

test("trigger creates an extra execution due now", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("trigger", { schedule: { cron: "0 0 1 1 *" } }));
    const execution = await t.client.triggerJob(job.jobId);
    assert.equal(execution.jobId, job.jobId);
    assert.equal(execution.attempt, 0);
    const leased = await waitFor(async () => (await t.client.lease("trigger", { workerId: "w", max: 1 })).items[0], "lease");
    assert.equal(leased.executionId, execution.executionId);
    assert.equal((await t.client.getJob(job.jobId)).nextRunAt, job.nextRunAt, "the schedule is unchanged");
  } finally {
    await t.close();
  }
});

test("idempotent create: same key and body answer the same job; another body is 409", async () => {
  const t = await startTestServer();
  try {
    const spec = queueJob("idem", { schedule: { delaySeconds: 60 } });
    const concurrent = await Promise.all(Array.from({ length: 10 }, () => t.client.createJob(spec, { idempotencyKey: "k1" })));
    assert.equal(new Set(concurrent.map((j) => j.jobId)).size, 1);
    assert.equal(concurrent.filter((j) => j.created).length, 1);
    const again = await t.client.createJob({ ...spec, payload: { hello: "world" } }, { idempotencyKey: "k1" });
    assert.equal(again.jobId, concurrent[0]!.jobId);
    assert.equal(again.created, false);
    const mismatch = await apiError(t.client.createJob({ ...spec, name: "other" }, { idempotencyKey: "k1" }));
    assert.equal(mismatch.status, 409);
    assert.equal(mismatch.code, "IDEMPOTENCY_MISMATCH");
    assert.equal((await t.client.listJobs()).items.length, 1);
  } finally {
    await t.close();
  }
});

test("bulk create commits the valid jobs and answers per item in order", async () => {
  const t = await startTestServer();
  try {
    const jobs = Array.from({ length: 1000 }, (_, i) => queueJob("bulk", { payload: { i }, schedule: { delaySeconds: 3600 } }));
    // A job refused by its shape (index 100) and one by its meaning (an impossible cron, index 500): each is named by its own index.
    (jobs[100] as Record<string, unknown>).target = { type: "http", url: "ftp://x" };
    (jobs[500] as Record<string, unknown>).schedule = { cron: "61 * * * *" };
    const results = await t.client.createJobs(jobs);
    assert.equal(results.length, 1000);
    const fields = [100, 500].map((i) => (results[i] as { error: { code: string; details?: { field?: string } } }).error);
    assert.deepEqual(
      fields.map((e) => [e.code, e.details?.field]),
      [
        ["INVALID_ARGUMENT", "jobs.100.target.url"],
        ["INVALID_ARGUMENT", "jobs.500.schedule.cron"],
      ],
    );
    assert.equal(results.filter((r) => "jobId" in r).length, 998);
    let count = 0;
    let cursor: string | undefined;
    do {
      const page = await t.client.listJobs({ limit: 500, ...(cursor ? { cursor } : {}) });
      count += page.items.length;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    assert.equal(count, 998);
    // retrying a batch with idempotency keys creates nothing new
    const keyed = [queueJob("bulk", { idempotencyKey: "b1" }), queueJob("bulk", { idempotencyKey: "b2" })];
    const a = await t.client.createJobs(keyed);
    const b = await t.client.createJobs(keyed);
    assert.deepEqual(
      b.map((r) => ("jobId" in r ? r.jobId : null)),
      a.map((r) => ("jobId" in r ? r.jobId : null)),
    );
  } finally {
    await t.close();
  }
});

test("bad input answers 400 naming the field and changes no other job", async () => {
  const t = await startTestServer();
  try {
    const keep = await t.client.createJob(queueJob("keep", { schedule: { delaySeconds: 3600 } }));
    const cases: [Record<string, unknown>, string][] = [
      [{ schedule: { cron: "not a cron" } }, "schedule.cron"],
      [{ schedule: { cron: "0 9 * * *", tz: "Mars/Olympus" } }, "schedule.tz"],
      [{ schedule: { runAt: "next tuesday" } }, "schedule.runAt"],
      [{ retry: { maxAttempts: 0 } }, "retry.maxAttempts"],
      [{ retry: { backoffSeconds: 100, maxBackoffSeconds: 10 } }, "retry.maxBackoffSeconds"],
      [{ target: { type: "carrier-pigeon" } }, "target.type"],
      [{ priority: 101 }, "priority"],
      [{ surprise: true }, "surprise"],
    ];
    for (const [patch, field] of cases) {
      const err = await apiError(t.client.createJob({ ...queueJob("bad"), ...patch } as never));
      assert.equal(err.status, 400, field);
      assert.equal(err.code, "INVALID_ARGUMENT", field);
      assert.equal(err.details?.field, field);
      assert.match(err.message, new RegExp(field.replace(".", "\\.")));
    }
    const raw = await fetch(`${t.url}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" });
    assert.equal(raw.status, 400);
    assert.equal(((await raw.json()) as { error: { code: string } }).error.code, "INVALID_ARGUMENT");
    const big = await fetch(`${t.url}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      // A create may carry the payload limit (16 MiB) on top of the body limit (1 MiB): over both together is 413.
      body: JSON.stringify({ ...queueJob("big"), payload: "x".repeat(18 * 1024 * 1024) }),
    });
    assert.equal(big.status, 413);
    assert.equal(((await big.json()) as { error: { code: string } }).error.code, "PAYLOAD_TOO_LARGE");
    assert.equal((await apiError(t.client.getJob("nope"))).status, 404);
    const { created: _created, ...kept } = keep;
    assert.deepEqual(await t.client.getJob(keep.jobId), kept);
    assert.equal((await t.client.listJobs()).items.length, 1);
  } finally {
    await t.close();
  }
});

test("long poll returns as soon as work is due", async () => {
  const t = await startTestServer();
  try {
    const job = await t.client.createJob(queueJob("poll", { schedule: { delaySeconds: 1 } }));
    const started = Date.now();
    const res = await t.client.lease("poll", { workerId: "w", max: 10, waitSeconds: 10 });
    assert.equal(res.items.length, 1);
    assert.equal(res.items[0]!.jobId, job.jobId);
    assert.ok(Date.now() - started < 5_000, "long poll waited for its whole window");
    const stats = await t.client.poolStats("poll");
    assert.deepEqual(stats, { pending: 0, queued: 0, running: 1 });
  } finally {
    await t.close();
  }
});

test("two `duetime serve` processes on one store share the shards; a SIGTERM hands its half to the other", async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-cluster-"));
  const store = testStore(dir);
  const a = await spawnServer(store, ["--node-id", "node-a"]);
  const b = await spawnServer(store, ["--node-id", "node-b"]);
  const client = new DuetimeClient({ url: a.url, retries: 0 });
  const held = async () => Object.fromEntries((await client.cluster()).nodes.map((n) => [n.nodeId, n.shards.length]));
  try {
    await waitFor(async () => JSON.stringify(await held()) === JSON.stringify({ "node-a": 128, "node-b": 128 }), "128 shards each");
    await b.stop("SIGTERM");
    // handed over: node-a takes them on its next round (every 3.3 s), not after node-b's 10 s lease
    const stoppedAt = Date.now();
    await waitFor(async () => JSON.stringify(await held()) === JSON.stringify({ "node-a": 256 }), "node-a holds every shard", 8_000);
    assert.ok(Date.now() - stoppedAt < 10_000, "taken before node-b's lease would have expired");
  } finally {
    await client.close();
    await b.stop();
    await a.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
