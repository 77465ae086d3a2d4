// The store contract, in part (index.ts runs the parts in order).
// Retention (store.ts, "retention"): retentionExpired and retentionPurge.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { newId } from "../../src/core/ids.js";
import type { PurgedRow, RetentionKind, Store } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  MINUTE,
  HOUR,
  CRON,
  FATAL,
  type JobOverrides,
  newJob,
  cronJob,
  acquireAll,
  createOne,
  getJob,
  type Ready,
  readyExecution,
  lease,
  runningExecution,
  history,
  fail,
  assertOk,
  type ContractTests,
} from "./support.js";

/** The retention helpers' jobs are recurring unless asked: a one-off's job goes with its last execution, which these tests check on their own. */
const ONE_OFF: JobOverrides = {};

export function retentionContract({ storeTest }: ContractTests): void {
  describe("retention", () => {
    /** A job in its own pool (so leases never mix), leased at T0 and completed at `at`. */
    async function succeededAt(store: Store, epochs: ReadonlyMap<number, number>, at: number, overrides: JobOverrides = CRON): Promise<Ready> {
      const r = await runningExecution(store, epochs, { target: { type: "queue", pool: `p-${newId(at)}` }, ...overrides });
      assertOk((await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: at }))[0], "SUCCEEDED");
      return r;
    }

    async function deadAt(store: Store, epochs: ReadonlyMap<number, number>, at: number, overrides: JobOverrides = CRON): Promise<Ready> {
      const r = await runningExecution(store, epochs, { target: { type: "queue", pool: `p-${newId(at)}` }, payload: { order: 7 }, ...overrides });
      const [outcome] = await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1, error: FATAL })],
        now: at,
      });
      assertOk(outcome, "DEAD");
      return r;
    }

    const executionIds = async (store: Store, r: Ready): Promise<string[]> => (await history(store, "t1", r.job.jobId)).map((h) => h.executionId);

    /** What the engine does with an archive: reads the due rows, then removes exactly those. */
    async function expireAndPurge(
      store: Store,
      p: { kind: RetentionKind; before: number; limit: number },
    ): Promise<{ rows: PurgedRow[]; deleted: number }> {
      const rows = await store.retentionExpired(p);
      return { rows, deleted: (await store.retentionPurge({ ...p, only: rows })).deleted };
    }

    storeTest("executions: removes ended ones that finished before `before`, with their attempts; never a READY or RUNNING one", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const old = await succeededAt(store, epochs, T0 + SECOND, ONE_OFF);
      const oldDead = await deadAt(store, epochs, T0 + 2 * SECOND);
      const recent = await succeededAt(store, epochs, T0 + 20 * SECOND, ONE_OFF);
      const running = await runningExecution(store, epochs, { target: { type: "queue", pool: "p-running" } });
      const ready = await readyExecution(store, epochs, { target: { type: "queue", pool: "p-ready" } });

      assert.deepEqual(await store.retentionPurge({ kind: "executions", before: T0 + 10 * SECOND, limit: 100 }), { deleted: 2, jobs: 1 });
      assert.deepEqual(await executionIds(store, old), []);
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: old.job.jobId }), null, "a one-off's job goes with its last execution");
      assert.deepEqual(await executionIds(store, oldDead), [], "the attempts went with the execution");
      assert.equal((await getJob(store, oldDead.nj)).state, "SCHEDULED", "a recurring job stays");
      assert.equal((await getJob(store, recent.nj)).state, "COMPLETED", "a one-off whose execution stays: read from it");
      assert.deepEqual(await store.deadLetterList({ tenantId: "t1", limit: 10 }), [], "a dead letter follows the history retention");
      // The same occurrence made again (a backfill) starts afresh: no attempt of the removed one is left behind.
      await store.executionCreateMany({
        tenantId: "t1",
        jobId: oldDead.job.jobId,
        nodeId: "n1",
        now: T0 + MINUTE,
        items: [{ scheduledFor: oldDead.scheduledFor, readyAt: T0 + MINUTE }],
      });
      assert.deepEqual(
        (await history(store, "t1", oldDead.job.jobId)).map((h) => [h.executionId, h.attempt]),
        [[oldDead.executionId, 0]],
      );
      assert.deepEqual(await executionIds(store, recent), [recent.executionId]);

      assert.deepEqual(await store.retentionPurge({ kind: "executions", before: T0 + 1000 * HOUR, limit: 100 }), { deleted: 1, jobs: 1 });
      assert.deepEqual(await executionIds(store, running), [running.executionId], "RUNNING is never removed");
      assert.deepEqual(await executionIds(store, ready), [ready.executionId], "READY is never removed");
      assert.equal((await lease(store, T0 + 1000 * HOUR, { pool: "p-ready" })).length, 1, "and still leasable");
    });

    storeTest("a batch removes at most `limit` rows, oldest first", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const done: Ready[] = [];
      for (let i = 5; i >= 1; i--) done.push(await succeededAt(store, epochs, T0 + i * SECOND));
      const before = T0 + MINUTE;
      assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 2 }), { deleted: 2 });
      const left = async () => (await Promise.all(done.map((r) => executionIds(store, r)))).flat();
      assert.deepEqual(
        await left(),
        done.slice(0, 3).map((r) => r.executionId),
        "the two that finished first went",
      );
      assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 2 }), { deleted: 2 });
      assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 2 }), { deleted: 1 });
      assert.deepEqual(await store.retentionPurge({ kind: "executions", before, limit: 2 }), { deleted: 0 });
    });

    storeTest("retentionExpired answers the due rows oldest first, as stored (attempts included), and removes nothing", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await deadAt(store, epochs, T0 + 2 * SECOND);
      const older = await succeededAt(store, epochs, T0 + SECOND);
      const recent = await succeededAt(store, epochs, T0 + 20 * SECOND);
      const p = { kind: "executions", before: T0 + 10 * SECOND, limit: 10 } as const;
      const rows = await store.retentionExpired(p);
      assert.deepEqual(
        rows.map((x) => x.id),
        [older.executionId, r.executionId],
      );
      assert.deepEqual(
        (await store.retentionExpired({ ...p, limit: 1 })).map((x) => x.id),
        [older.executionId],
        "bounded by limit, oldest first",
      );
      const row = rows[1]!;
      assert.deepEqual([row.kind, row.id, row.tenantId, row.jobId, row.at], ["executions", r.executionId, "t1", r.job.jobId, T0 + 2 * SECOND]);
      assert.equal(row.row.state, "DEAD");
      assert.deepEqual(row.row.payload, { order: 7 }, "JSON columns are parsed");
      const attempts = row.row.attempts as Record<string, unknown>[];
      assert.deepEqual(
        attempts.map((a) => [a.attempt, a.state]),
        [[1, "DEAD"]],
      );
      assert.deepEqual(attempts[0]!.error, FATAL);
      for (const x of [r, older, recent]) assert.deepEqual(await executionIds(store, x), [x.executionId], "nothing removed");
      assert.equal((await store.deadLetterList({ tenantId: "t1", limit: 10 })).length, 1);
    });

    storeTest("retentionPurge with `only` removes exactly the listed rows (at most `limit`), with their attempts", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const due = [
        await succeededAt(store, epochs, T0 + SECOND),
        await deadAt(store, epochs, T0 + 2 * SECOND),
        await succeededAt(store, epochs, T0 + 3 * SECOND),
      ];
      const p = { kind: "executions", before: T0 + MINUTE, limit: 10 } as const;
      const [first, second, third] = await store.retentionExpired(p);
      assert.deepEqual(await store.retentionPurge({ ...p, only: [second!] }), { deleted: 1 });
      assert.deepEqual(await executionIds(store, due[1]!), [], "the listed one went, its attempts too");
      assert.deepEqual(await store.retentionPurge({ ...p, limit: 1, only: [third!, first!] }), { deleted: 1 });
      assert.deepEqual(await executionIds(store, due[2]!), []);
      assert.deepEqual(await executionIds(store, due[0]!), [due[0]!.executionId], "beyond limit: kept");
      assert.deepEqual(await store.retentionPurge({ ...p, only: [] }), { deleted: 0 });
    });

    // The compare-and-set: what is due is checked again by the delete itself.
    storeTest(
      "retentionPurge with `only` keeps a row that is no longer due: a replayed dead letter, a job brought back or given an execution, a later `before`",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await deadAt(store, epochs, T0 + SECOND);
        const [deadRow] = await store.retentionExpired({ kind: "executions", before: T0 + MINUTE, limit: 10 });
        const replay = { tenantId: "t1", at: T0 + 2 * SECOND, actor: "admin", action: "dead_letter.replay", subject: r.executionId };
        const replayed = await store.deadLetterReplay({ tenantId: "t1", executionId: r.executionId, now: T0 + 2 * SECOND, audit: replay });
        assert.ok(replayed);
        assert.deepEqual(await store.retentionPurge({ kind: "executions", before: T0 + MINUTE, limit: 10, only: [deadRow!] }), { deleted: 0 });
        assert.deepEqual(
          (await history(store, "t1", r.job.jobId)).map((h) => [h.attempt, h.state]),
          [[1, "DEAD"]],
          "its attempt stays",
        );
        assert.equal((await lease(store, T0 + 3 * SECOND, { pool: replayed.pool })).length, 1, "and the replayed execution is leased");

        const jobs = [cronJob({ at: T0 + 1000 * HOUR }), cronJob({ at: T0 + 1000 * HOUR }), cronJob({ at: T0 + 1000 * HOUR })];
        for (const nj of jobs) {
          await createOne(store, nj);
          assert.ok(await store.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 }));
        }
        const p = { kind: "jobs", before: T0 + MINUTE, limit: 10 } as const;
        const rows = await store.retentionExpired(p);
        assert.equal(rows.length, 3);
        const [revived, withExecution, later] = jobs.map((nj) => nj.job.jobId);
        assert.ok(await store.jobTransition({ tenantId: "t1", jobId: revived!, fromVersion: 2, state: "SCHEDULED", due: null, now: T0 }));
        await store.executionCreateMany({
          tenantId: "t1",
          jobId: withExecution!,
          nodeId: "n1",
          now: T0,
          items: [{ scheduledFor: T0, readyAt: T0 }],
        });
        assert.deepEqual(await store.retentionPurge({ ...p, only: rows }), { deleted: 1 });
        assert.equal(await store.jobGet({ tenantId: "t1", jobId: later! }), null);
        assert.equal((await store.jobGet({ tenantId: "t1", jobId: revived! }))?.state, "SCHEDULED");
        assert.equal((await store.jobGet({ tenantId: "t1", jobId: withExecution! }))?.state, "CANCELLED");

        const [entry] = await store.retentionExpired({ kind: "audit", before: T0 + HOUR, limit: 1 });
        assert.ok(entry);
        assert.deepEqual(
          await store.retentionPurge({ kind: "audit", before: entry.at, limit: 1, only: [entry] }),
          { deleted: 0 },
          "not before `before`: kept",
        );
        assert.deepEqual(await store.retentionPurge({ kind: "audit", before: T0 + HOUR, limit: 1, only: [entry] }), { deleted: 1 });
      },
    );

    storeTest("jobs: removes ended jobs last changed before `before` once no execution is left; never a live one", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const cancelled = cronJob({ at: T0 + 1000 * HOUR });
      await createOne(store, cancelled);
      assert.ok(await store.jobTransition({ tenantId: "t1", jobId: cancelled.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 }));
      const completed = await succeededAt(store, epochs, T0 + SECOND, ONE_OFF);
      assert.equal((await getJob(store, completed.nj)).state, "COMPLETED");
      const cancelledLater = cronJob({ at: T0 + 1000 * HOUR });
      await createOne(store, cancelledLater);
      const cancelLater = {
        tenantId: "t1",
        jobId: cancelledLater.job.jobId,
        fromVersion: 1,
        state: "CANCELLED",
        due: null,
        now: T0 + 30 * SECOND,
      } as const;
      assert.ok(await store.jobTransition(cancelLater));
      const live = cronJob({ at: T0 + 1000 * HOUR });
      await createOne(store, live);
      const paused = cronJob({ at: T0 + 1000 * HOUR });
      await createOne(store, paused);
      assert.ok(await store.jobTransition({ tenantId: "t1", jobId: paused.job.jobId, fromVersion: 1, state: "PAUSED", due: "keep", now: T0 }));

      const purge = () => expireAndPurge(store, { kind: "jobs", before: T0 + SECOND, limit: 10 });
      const { rows, deleted } = await purge();
      assert.equal(deleted, 1);
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: cancelled.job.jobId }), null);
      assert.deepEqual(
        rows.map((a) => [a.kind, a.id, a.jobId, a.at]),
        [["jobs", cancelled.job.jobId, cancelled.job.jobId, T0]],
      );
      assert.equal((await getJob(store, completed.nj)).state, "COMPLETED", "kept while its execution is");
      assert.equal((await store.retentionPurge({ kind: "jobs", before: T0 + MINUTE, limit: 10 })).deleted, 1, "without `only` too");
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: cancelledLater.job.jobId }), null);
      assert.equal((await getJob(store, completed.nj)).state, "COMPLETED", "a one-off's end is read from its execution, which stays");

      const read = await store.retentionExpired({ kind: "executions", before: T0 + MINUTE, limit: 10 });
      assert.deepEqual(
        read.map((r) => [r.kind, r.id, r.jobId]),
        [
          ["executions", completed.executionId, completed.job.jobId],
          ["jobs", completed.job.jobId, completed.job.jobId],
        ],
        "the one-off's job is read with its last execution, for the archive",
      );
      assert.deepEqual([read[1]!.row.kind, read[1]!.row.state], ["once", "COMPLETED"], "as read, not as stored");
      const only = read.filter((r) => r.kind === "executions");
      assert.deepEqual(await store.retentionPurge({ kind: "executions", before: T0 + MINUTE, limit: 10, only }), { deleted: 1, jobs: 1 });
      assert.equal(await store.jobGet({ tenantId: "t1", jobId: completed.job.jobId }), null, "and removed with it");
      assert.equal((await getJob(store, live)).state, "SCHEDULED");
      assert.equal((await getJob(store, paused)).state, "PAUSED");
      assert.equal((await store.dueLoad({ shards: [...epochs.keys()], before: T0 + 2000 * HOUR, limit: 10 })).length, 2, "live due entries kept");
    });

    storeTest("idempotency: removes keys stored before `before`; the same key then creates a new job", async (store) => {
      const key = (k: string, requestHash: string) => ({ idempotency: { key: k, requestHash } });
      const first = newJob(key("k-old", "h1"));
      await createOne(store, first, T0);
      await createOne(store, newJob(key("k-new", "h1")), T0 + HOUR);
      const { rows, deleted } = await expireAndPurge(store, { kind: "idempotency", before: T0 + MINUTE, limit: 10 });
      assert.equal(deleted, 1);
      assert.deepEqual(
        rows.map((a) => [a.kind, a.id, a.tenantId, a.jobId, a.at]),
        [["idempotency", "k-old", "t1", first.job.jobId, T0]],
      );
      const [again] = await store.jobCreateMany({ nodeId: "n1", jobs: [newJob(key("k-old", "h2"))], now: T0 + 2 * HOUR });
      assert.equal(again?.status, "created", "a removed key no longer answers");
      const [kept] = await store.jobCreateMany({ nodeId: "n1", jobs: [newJob(key("k-new", "h2"))], now: T0 + 2 * HOUR });
      assert.equal(kept?.status, "idempotency_mismatch", "a later key is kept");
    });

    storeTest("audit: removes entries recorded before `before`, oldest first", async (store) => {
      const entry = (at: number, subject: string) => ({ tenantId: "t1", at, actor: "admin", action: "key.create", subject, details: { n: 1 } });
      for (const [id, at] of [
        ["ak_2", T0 + SECOND],
        ["ak_1", T0],
        ["ak_3", T0 + HOUR],
      ] as const) {
        await store.apiKeyCreate({ id, tenantId: "t1", role: "worker", digest: id, now: at, audit: entry(at, id) });
      }
      const { rows, deleted } = await expireAndPurge(store, { kind: "audit", before: T0 + MINUTE, limit: 1 });
      assert.equal(deleted, 1);
      assert.deepEqual(
        rows.map((a) => [a.kind, a.row.subject, a.jobId, a.at, a.row.details]),
        [["audit", "ak_1", null, T0, { n: 1 }]],
      );
      assert.deepEqual(await store.retentionPurge({ kind: "audit", before: T0 + MINUTE, limit: 10 }), { deleted: 1 });
      assert.deepEqual(
        (await store.auditList({ tenantId: "t1", limit: 10 })).map((a) => a.subject),
        ["ak_3"],
      );
    });
  });
}
