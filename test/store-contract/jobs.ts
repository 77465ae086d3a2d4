// The store contract, in part (index.ts runs the parts in order).
// Jobs (store.ts, "jobs"): jobCreateMany, jobGet, jobList and jobTransition.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { executionIdFor, newId } from "../../src/core/ids.js";
import type { JobRecord } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  HOUR,
  CREATED,
  LEASE_MS,
  CRON_SCHEDULE,
  newJob,
  cronJob,
  CRON,
  acquireAll,
  createOne,
  getJob,
  readyExecution,
  lease,
  leaseOne,
  runningExecution,
  history,
  attemptOf,
  fail,
  countsOf,
  type ContractTests,
} from "./support.js";

export function jobsContract({ storeTest }: ContractTests): void {
  describe("jobCreateMany", () => {
    storeTest("keeps a fractional timeoutSeconds as given, and judges its deadline in whole ms", async (store) => {
      const nj = newJob({ timeoutSeconds: 2.5004 });
      await createOne(store, nj);
      assert.equal((await getJob(store, nj)).timeoutSeconds, 2.5004);
      const row = await leaseOne(store, T0, { leaseMs: 60 * SECOND });
      assert.equal(row.timeoutSeconds, 2.5);
      assert.equal(row.leaseUntil, T0 + 2500, "the lease ends at the deadline, now + 2,500 ms (rounded to whole ms)");
    });

    storeTest("creates a job SCHEDULED at version 1 with nextRunAt = due.scheduledFor and updatedAt = createdAt", async (store) => {
      const nj = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 1500 } });
      const [outcome] = await store.jobCreateMany({ nodeId: "n1", jobs: [nj], now: CREATED });
      assert.ok(outcome && outcome.status === "created");
      assert.equal(outcome.job.state, "SCHEDULED");
      assert.equal(outcome.job.version, 1);
      assert.equal(outcome.job.nextRunAt, T0);
      assert.equal(outcome.job.nextDueAt, T0 + 1500);
      assert.equal(outcome.job.createdAt, CREATED);
      assert.equal(outcome.job.updatedAt, CREATED);
      assert.deepEqual(await getJob(store, nj), outcome.job);
    });

    storeTest("stores every field as given: kind, name, shard, target, payload, schedule, retry, timeout, priority", async (store) => {
      const nj = cronJob({
        name: "nightly-report ☾",
        target: { type: "http", url: "https://example.com/hook?x=1", method: "PUT", headers: { "x-a": "b" } },
        payload: { nested: { list: [1, "two", null, true], emoji: "⏰" }, n: 1.5 },
        schedule: {
          cron: "30 9 * * 1-5",
          tz: "Europe/London",
          jitterSeconds: 30,
          misfire: "skip",
          overlap: "forbid",
          startAt: "2026-01-01T00:00:00.000Z",
          dst: { gap: "skip", overlap: "both" },
        },
        retry: { maxAttempts: 7, backoffSeconds: 2, maxBackoffSeconds: 60 },
        timeoutSeconds: 45,
        priority: -3,
      });
      const created = await createOne(store, nj);
      const got = await getJob(store, nj);
      assert.deepEqual(got, created);
      const fields = Object.fromEntries(Object.keys(nj.job).map((k) => [k, got[k as keyof JobRecord]]));
      assert.deepEqual(fields, nj.job);
      assert.equal(got.version, 1);
      assert.equal(got.updatedAt, CREATED);
      assert.equal(got.nextRunAt, T0);
    });

    storeTest("a null payload is kept as null", async (store) => {
      const nj = newJob({ payload: null });
      await createOne(store, nj);
      assert.equal((await getJob(store, nj)).payload, null);
    });

    storeTest("creates a batch of many jobs in one call, answering in request order", async (store) => {
      const jobs = Array.from({ length: 300 }, (_, i) => newJob({ name: `j${i}`, at: T0 + i * SECOND }));
      const outcomes = await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
      assert.equal(outcomes.length, jobs.length);
      outcomes.forEach((o, i) => {
        assert.ok(o.status === "created", `item ${i} created`);
        assert.equal(o.job.jobId, jobs[i]!.job.jobId);
        assert.equal(o.job.name, `j${i}`);
        assert.equal(o.job.nextRunAt, T0 + i * SECOND);
      });
      const listed = await store.jobList({ tenantId: "t1", limit: 1000 });
      assert.equal(listed.length, 300);
    });

    storeTest(
      "a one-off is created with its execution: READY from its due time at attempt 0, dispatched by the creating node at creation",
      async (store) => {
        const nj = newJob({ execution: { scheduledFor: T0, dueAt: T0 + 1500 } });
        const created = await createOne(store, nj, CREATED + 7);
        assert.equal(created.nextRunAt, T0);
        assert.equal(created.nextDueAt, T0 + 1500);
        assert.deepEqual(await getJob(store, nj), created);
        const rows = await history(store, "t1", nj.job.jobId);
        assert.equal(rows.length, 1);
        const row = attemptOf(rows, executionIdFor(nj.job.jobId, T0), 0);
        assert.equal(row.state, "READY");
        assert.equal(row.scheduledFor, T0);
        assert.equal(row.readyAt, T0 + 1500);
        assert.equal(row.dispatchedAt, CREATED + 7);
        assert.equal(row.dispatchedBy, "n1");
        assert.equal(row.startedAt, null);
        assert.deepEqual(await store.dueLoad({ shards: [nj.job.shard], before: T0 + HOUR, limit: 10 }), [], "a one-off has no due entry");
      },
    );

    storeTest("a one-off's execution is leased from its pool once due, with the job's payload and priority, never before", async (store) => {
      const nj = newJob({
        execution: { scheduledFor: T0, dueAt: T0 + 1500 },
        target: { type: "queue", pool: "mail" },
        payload: { to: "ada" },
        priority: 5,
      });
      await createOne(store, nj);
      assert.deepEqual(await lease(store, T0 + 1499, { pool: "mail" }), []);
      assert.deepEqual(countsOf(await store.poolCounts({ now: T0 + 1499 }), "t1", "mail"), { pending: 1, queued: 0, running: 0 });
      const leased = await leaseOne(store, T0 + 1500, { pool: "mail" });
      assert.equal(leased.executionId, executionIdFor(nj.job.jobId, T0));
      assert.equal(leased.attempt, 1);
      assert.deepEqual(leased.payload, { to: "ada" });
      assert.equal(leased.scheduledFor, T0);
    });

    storeTest("a one-off's nextRunAt is its pending execution's: none once it started", async (store) => {
      const nj = newJob();
      await createOne(store, nj);
      await leaseOne(store, T0);
      const job = await getJob(store, nj);
      assert.equal(job.nextRunAt, null);
      assert.equal(job.nextDueAt, null);
    });

    storeTest("a job with due null has nextRunAt and nextDueAt null and no due entry", async (store) => {
      const nj = cronJob({ due: null });
      const created = await createOne(store, nj);
      assert.equal(created.nextRunAt, null);
      assert.equal(created.nextDueAt, null);
      assert.equal((await getJob(store, nj)).nextRunAt, null);
      assert.deepEqual(await store.dueLoad({ shards: [nj.job.shard], before: T0 + 365 * 24 * HOUR, limit: 10 }), []);
    });

    storeTest("the same idempotency key and hash answers existing with the first job, writing nothing", async (store) => {
      const first = newJob({ idempotency: { key: "k1", requestHash: "h1" } });
      const created = await createOne(store, first);
      const retry = newJob({ at: T0 + HOUR, idempotency: { key: "k1", requestHash: "h1" } });
      const [outcome] = await store.jobCreateMany({ nodeId: "n1", jobs: [retry], now: CREATED + 10 });
      assert.ok(outcome && outcome.status === "existing", JSON.stringify(outcome));
      assert.deepEqual(outcome.job, created);
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: retry.job.jobId }), null);
      assert.deepEqual(await history(store, "t1", retry.job.jobId), [], "no execution of the job not created");
      assert.equal((await history(store, "t1", first.job.jobId)).length, 1, "the first job has one execution");
      assert.equal((await store.jobList({ tenantId: "t1", limit: 10 })).length, 1);
      assert.deepEqual(
        await store
          .dueLoad({ shards: [retry.job.shard], before: T0 + 2 * HOUR, limit: 10 })
          .then((r) => r.filter((e) => e.jobId === retry.job.jobId)),
        [],
      );
    });

    storeTest("the same idempotency key with another hash answers idempotency_mismatch, writing nothing", async (store) => {
      const created = await createOne(store, newJob({ idempotency: { key: "k1", requestHash: "h1" } }));
      const other = newJob({ idempotency: { key: "k1", requestHash: "h2" } });
      const [outcome] = await store.jobCreateMany({ nodeId: "n1", jobs: [other], now: CREATED + 10 });
      assert.deepEqual(outcome, { status: "idempotency_mismatch" });
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: other.job.jobId }), null);
      const listed = await store.jobList({ tenantId: "t1", limit: 10 });
      assert.deepEqual(
        listed.map((j) => j.jobId),
        [created.jobId],
      );
    });

    storeTest("idempotency keys are per tenant: the same key in another tenant creates", async (store) => {
      await createOne(store, newJob({ idempotency: { key: "k1", requestHash: "h1" } }));
      const t2 = newJob({ tenantId: "t2", idempotency: { key: "k1", requestHash: "h1" } });
      const [outcome] = await store.jobCreateMany({ nodeId: "n1", jobs: [t2], now: CREATED });
      assert.ok(outcome && outcome.status === "created", JSON.stringify(outcome));
      assert.equal(outcome.job.tenantId, "t2");
      const t2other = newJob({ tenantId: "t2", idempotency: { key: "k2", requestHash: "h9" } });
      assert.equal((await store.jobCreateMany({ nodeId: "n1", jobs: [t2other], now: CREATED }))[0]?.status, "created");
    });

    storeTest("the same key twice in one batch: the second answers existing with the first's job", async (store) => {
      const a = newJob({ idempotency: { key: "k1", requestHash: "h1" } });
      const b = newJob({ idempotency: { key: "k1", requestHash: "h1" } });
      const outcomes = await store.jobCreateMany({ nodeId: "n1", jobs: [a, b], now: CREATED });
      assert.equal(outcomes.length, 2);
      assert.ok(outcomes[0]?.status === "created");
      assert.ok(outcomes[1]?.status === "existing", JSON.stringify(outcomes[1]));
      assert.equal(outcomes[1].job.jobId, a.job.jobId);
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: b.job.jobId }), null);
      assert.equal((await store.jobList({ tenantId: "t1", limit: 10 })).length, 1);
    });

    storeTest("the same key twice in one batch with another hash: the second answers idempotency_mismatch", async (store) => {
      const a = newJob({ idempotency: { key: "k1", requestHash: "h1" } });
      const b = newJob({ idempotency: { key: "k1", requestHash: "h2" } });
      const c = newJob();
      const outcomes = await store.jobCreateMany({ nodeId: "n1", jobs: [a, b, c], now: CREATED });
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ["created", "idempotency_mismatch", "created"],
      );
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: b.job.jobId }), null);
      assert.ok(await store.jobGet({ tenantId: "t1", jobId: c.job.jobId }));
    });
  });

  describe("jobGet", () => {
    storeTest("returns the job to its tenant, null to another tenant and for an unknown id", async (store) => {
      const nj = newJob();
      const created = await createOne(store, nj);
      assert.deepEqual(await store.jobGet({ tenantId: "t1", jobId: nj.job.jobId }), created);
      assert.equal(await store.jobGet({ tenantId: "t2", jobId: nj.job.jobId }), null);
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: newId(T0) }), null);
    });
  });

  describe("jobList", () => {
    storeTest("lists newest first by createdAt, ties broken by jobId descending", async (store) => {
      const jobs = [
        newJob({ createdAt: CREATED - 3000 }),
        newJob({ createdAt: CREATED - 1000 }),
        newJob({ createdAt: CREATED - 2000 }),
        newJob({ createdAt: CREATED - 2000 }),
        newJob({ createdAt: CREATED - 2000 }),
      ];
      await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
      const expected = jobs
        .map((j) => j.job)
        .sort((x, y) => y.createdAt - x.createdAt || (y.jobId < x.jobId ? -1 : y.jobId > x.jobId ? 1 : 0))
        .map((j) => j.jobId);
      const listed = await store.jobList({ tenantId: "t1", limit: 10 });
      assert.deepEqual(
        listed.map((j) => j.jobId),
        expected,
      );
    });

    storeTest("filters by state and by name", async (store) => {
      const a = newJob({ name: "alpha", createdAt: CREATED - 3 });
      const b = newJob({ name: "beta", createdAt: CREATED - 2 });
      const c = newJob({ name: "alpha", createdAt: CREATED - 1 });
      await store.jobCreateMany({ nodeId: "n1", jobs: [a, b, c], now: CREATED });
      await store.jobTransition({ tenantId: "t1", jobId: a.job.jobId, fromVersion: 1, state: "PAUSED", due: null, now: CREATED + 1 });
      const ids = (js: JobRecord[]): string[] => js.map((j) => j.jobId);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", state: "PAUSED", limit: 10 })), [a.job.jobId]);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", state: "SCHEDULED", limit: 10 })), [c.job.jobId, b.job.jobId]);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", name: "alpha", limit: 10 })), [c.job.jobId, a.job.jobId]);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", name: "alpha", state: "SCHEDULED", limit: 10 })), [c.job.jobId]);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", name: "gamma", limit: 10 })), []);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", state: "DEAD", limit: 10 })), []);
    });

    storeTest("filters by pool and by kind, with the other filters and the cursor", async (store) => {
      const mail = { type: "queue", pool: "mail" } as const;
      const jobs = [
        newJob({ target: mail, createdAt: CREATED - 5 }),
        cronJob({ target: mail, createdAt: CREATED - 4 }),
        newJob({ createdAt: CREATED - 3 }),
        cronJob({ createdAt: CREATED - 2 }),
        cronJob({ target: mail, name: "digest", createdAt: CREATED - 1 }),
        newJob({ tenantId: "t2", target: mail, createdAt: CREATED }),
      ];
      await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
      const id = (i: number): string => jobs[i]!.job.jobId;
      const ids = (js: JobRecord[]): string[] => js.map((j) => j.jobId);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", pool: "mail", limit: 10 })), [id(4), id(1), id(0)]);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", kind: "cron", limit: 10 })), [id(4), id(3), id(1)]);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", kind: "once", limit: 10 })), [id(2), id(0)]);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", pool: "mail", kind: "cron", name: "digest", limit: 10 })), [id(4)]);
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", pool: "nope", limit: 10 })), []);
      const first = await store.jobList({ tenantId: "t1", pool: "mail", kind: "cron", limit: 1 });
      const after = { createdAt: first[0]!.createdAt, jobId: first[0]!.jobId };
      assert.deepEqual(ids(await store.jobList({ tenantId: "t1", pool: "mail", kind: "cron", limit: 1, after })), [id(1)]);
    });

    storeTest("respects limit, and the after cursor pages through every job exactly once in order", async (store) => {
      const jobs = Array.from({ length: 11 }, (_, i) => newJob({ createdAt: CREATED - Math.floor(i / 3) * 1000 }));
      await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
      const all = await store.jobList({ tenantId: "t1", limit: 100 });
      assert.equal(all.length, 11);
      assert.equal((await store.jobList({ tenantId: "t1", limit: 4 })).length, 4);
      const seen: string[] = [];
      let after: { createdAt: number; jobId: string } | undefined;
      for (let page = 0; page < 20; page++) {
        const rows = await store.jobList({ tenantId: "t1", limit: 4, ...(after ? { after } : {}) });
        assert.ok(rows.length <= 4);
        if (rows.length === 0) break;
        seen.push(...rows.map((r) => r.jobId));
        const last = rows[rows.length - 1]!;
        after = { createdAt: last.createdAt, jobId: last.jobId };
      }
      assert.deepEqual(
        seen,
        all.map((j) => j.jobId),
      );
    });

    storeTest("sees only the caller's tenant", async (store) => {
      const mine = newJob();
      await store.jobCreateMany({ nodeId: "n1", jobs: [mine, newJob({ tenantId: "t2" }), newJob({ tenantId: "t2" })], now: CREATED });
      assert.deepEqual(
        (await store.jobList({ tenantId: "t1", limit: 10 })).map((j) => j.jobId),
        [mine.job.jobId],
      );
      assert.equal((await store.jobList({ tenantId: "t2", limit: 10 })).length, 2);
      assert.deepEqual(await store.jobList({ tenantId: "t3", limit: 10 }), []);
    });
  });

  describe("jobTransition", () => {
    storeTest("sets the state, bumps the version and sets updatedAt = now", async (store) => {
      const nj = newJob();
      await createOne(store, nj);
      const paused = await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: T0 - 5 });
      assert.ok(paused);
      assert.equal(paused.state, "PAUSED");
      assert.equal(paused.version, 2);
      assert.equal(paused.updatedAt, T0 - 5);
      assert.equal(paused.createdAt, CREATED);
      assert.deepEqual(await getJob(store, nj), paused);
      const resumed = await store.jobTransition({
        tenantId: "t1",
        jobId: nj.job.jobId,
        fromVersion: 2,
        state: "SCHEDULED",
        due: "keep",
        now: T0 - 4,
      });
      assert.equal(resumed?.version, 3);
      assert.equal(resumed?.state, "SCHEDULED");
    });

    storeTest("a stale fromVersion answers null and changes nothing", async (store) => {
      const nj = cronJob();
      await createOne(store, nj);
      const moved = await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: T0 - 5 });
      assert.ok(moved);
      const stale = await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 - 4 });
      assert.equal(stale, null);
      const ahead = await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 3, state: "CANCELLED", due: null, now: T0 - 4 });
      assert.equal(ahead, null);
      assert.deepEqual(await getJob(store, nj), moved);
      assert.equal((await store.dueLoad({ shards: [nj.job.shard], before: T0, limit: 10 })).filter((e) => e.jobId === nj.job.jobId).length, 1);
    });

    storeTest("another tenant's or an unknown job answers null and changes nothing", async (store) => {
      const nj = newJob();
      const created = await createOne(store, nj);
      assert.equal(await store.jobTransition({ tenantId: "t2", jobId: nj.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 }), null);
      assert.equal(await store.jobTransition({ tenantId: "t1", jobId: newId(T0), fromVersion: 1, state: "CANCELLED", due: null, now: T0 }), null);
      assert.deepEqual(await getJob(store, nj), created);
    });

    storeTest("a new due replaces the entry: nextRunAt, nextDueAt and dueLoad follow", async (store) => {
      const nj = cronJob();
      await createOne(store, nj);
      const moved = await store.jobTransition({
        tenantId: "t1",
        jobId: nj.job.jobId,
        fromVersion: 1,
        state: "SCHEDULED",
        due: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR + 500 },
        now: T0 - 5,
      });
      assert.equal(moved?.nextRunAt, T0 + HOUR);
      assert.equal(moved?.nextDueAt, T0 + HOUR + 500);
      assert.equal((await getJob(store, nj)).nextRunAt, T0 + HOUR);
      const loaded = await store.dueLoad({ shards: [nj.job.shard], before: T0 + 2 * HOUR, limit: 10 });
      const mine = loaded.filter((e) => e.jobId === nj.job.jobId);
      assert.equal(mine.length, 1, "one due entry per job");
      assert.equal(mine[0]!.scheduledFor, T0 + HOUR);
      assert.equal(mine[0]!.dueAt, T0 + HOUR + 500);
    });

    storeTest("due null removes the entry: nextRunAt and nextDueAt null, nothing to load", async (store) => {
      const nj = cronJob();
      await createOne(store, nj);
      const cancelled = await store.jobTransition({
        tenantId: "t1",
        jobId: nj.job.jobId,
        fromVersion: 1,
        state: "CANCELLED",
        due: null,
        now: T0 - 5,
      });
      assert.equal(cancelled?.state, "CANCELLED");
      assert.equal(cancelled?.nextRunAt, null);
      assert.equal(cancelled?.nextDueAt, null);
      assert.equal((await getJob(store, nj)).nextRunAt, null);
      assert.deepEqual(await store.dueLoad({ shards: [nj.job.shard], before: T0 + HOUR, limit: 10 }), []);
    });

    storeTest('due "keep" leaves the entry as it was', async (store) => {
      const nj = cronJob({ due: { scheduledFor: T0, dueAt: T0 + 700 } });
      await createOne(store, nj);
      const paused = await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: T0 - 5 });
      assert.equal(paused?.nextRunAt, T0);
      assert.equal(paused?.nextDueAt, T0 + 700);
      const loaded = await store.dueLoad({ shards: [nj.job.shard], before: T0 + HOUR, limit: 10 });
      assert.deepEqual(
        loaded.map((e) => [e.jobId, e.scheduledFor, e.dueAt]),
        [[nj.job.jobId, T0, T0 + 700]],
      );
    });

    storeTest("cancelExecutions cancels READY executions: never leased afterwards, history shows CANCELLED", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs, { kind: "cron", schedule: { ...CRON_SCHEDULE } }, { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR });
      const job = await getJob(store, r.nj);
      const cancelled = await store.jobTransition({
        tenantId: "t1",
        jobId: r.job.jobId,
        fromVersion: job.version,
        state: "CANCELLED",
        due: null,
        cancelExecutions: true,
        now: T0 + 10,
      });
      assert.equal(cancelled?.state, "CANCELLED");
      assert.deepEqual(await lease(store, T0 + 20), []);
      assert.deepEqual(await lease(store, T0 + 10 * HOUR), []);
      const rows = await history(store, "t1", r.job.jobId);
      assert.equal(rows.length, 1);
      assert.equal(attemptOf(rows, r.executionId, 0).state, "CANCELLED");
      assert.equal(countsOf(await store.poolCounts({ now: T0 + 20 }), "t1", "p1").queued, 0);
    });

    storeTest("cancelExecutions asks a RUNNING attempt to stop: its heartbeat sees cancelRequested", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const before = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 1000 });
      assert.ok(before.status === "ok");
      assert.equal(before.cancelRequested, false);
      const job = await getJob(store, r.nj);
      const cancelled = await store.jobTransition({
        tenantId: "t1",
        jobId: r.job.jobId,
        fromVersion: job.version,
        state: "CANCELLED",
        due: null,
        cancelExecutions: true,
        now: T0 + 2000,
      });
      assert.ok(cancelled);
      const after = await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 3000 });
      assert.ok(after.status === "ok", JSON.stringify(after));
      assert.equal(after.cancelRequested, true);
    });

    storeTest("a RUNNING execution asked to stop is not retried when its attempt fails", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const job = await getJob(store, r.nj);
      await store.jobTransition({
        tenantId: "t1",
        jobId: r.job.jobId,
        fromVersion: job.version,
        state: "CANCELLED",
        due: null,
        cancelExecutions: true,
        now: T0 + SECOND,
      });
      const [outcome] = await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error: { message: "stopped on request" } })],
        now: T0 + 2 * SECOND,
      });
      assert.equal(outcome?.status, "ok");
      assert.deepEqual(await lease(store, T0 + HOUR), [], "a cancelled job's execution never runs again");
      assert.equal((await getJob(store, r.nj)).state, "CANCELLED");
    });

    storeTest("a RUNNING execution asked to stop is not retried when its lease is reaped", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await runningExecution(store, epochs);
      const job = await getJob(store, r.nj);
      await store.jobTransition({
        tenantId: "t1",
        jobId: r.job.jobId,
        fromVersion: job.version,
        state: "CANCELLED",
        due: null,
        cancelExecutions: true,
        now: T0 + SECOND,
      });
      const reaped = await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
      assert.deepEqual(
        reaped.map((x) => x.executionId),
        [r.executionId],
      );
      assert.deepEqual(await lease(store, T0 + HOUR), [], "a cancelled job's execution never runs again");
      assert.equal((await getJob(store, r.nj)).state, "CANCELLED");
    });

    storeTest("without cancelExecutions, READY executions stay leasable", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs, CRON);
      const job = await getJob(store, r.nj);
      await store.jobTransition({ tenantId: "t1", jobId: r.job.jobId, fromVersion: job.version, state: "PAUSED", due: null, now: T0 + 10 });
      const leased = await leaseOne(store, T0 + 20);
      assert.equal(leased.executionId, r.executionId);
    });
  });
}
