// The store contract, in part (index.ts runs the parts in order).
// What is kept of attempts (store.ts, "executions" and "dead letters"):
// executionHistory, dead letters (deadLetterList, deadLetterReplay, the audit
// they write) and possible duplicates.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { executionIdFor, newId } from "../../src/core/ids.js";
import { poolOf } from "../../src/core/targets.js";
import type { AckOutcome, Store } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  HOUR,
  LEASE_MS,
  FATAL,
  type JobOverrides,
  cronJob,
  entryOf,
  acquireAll,
  createOne,
  getJob,
  type Ready,
  readyExecution,
  leaseOne,
  runningExecution,
  history,
  attemptOf,
  fail,
  assertOk,
  type ContractTests,
} from "./support.js";

export function historyContract({ storeTest }: ContractTests): void {
  describe("executionHistory", () => {
    storeTest("one row per attempt plus attempt 0 for a never-attempted execution, newest first by (scheduledFor, attempt)", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
      await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next }] });
      const first = executionIdFor(nj.job.jobId, T0);
      await leaseOne(store, T0);
      await store.executionFailMany({ items: [fail({ executionId: first, tenantId: "t1", attempt: 1 })], now: T0 });
      await leaseOne(store, T0 + 10 * SECOND);
      await store.executionCompleteMany({ items: [{ executionId: first, tenantId: "t1", attempt: 2 }], now: T0 + 11 * SECOND });
      await store.dispatchMany({
        nodeId: "n1",
        epochs,
        now: T0 + HOUR,
        items: [{ entry: { ...entryOf(nj), ...next }, next: { scheduledFor: T0 + 2 * HOUR, dueAt: T0 + 2 * HOUR } }],
      });
      const second = executionIdFor(nj.job.jobId, T0 + HOUR);
      const rows = await history(store, "t1", nj.job.jobId);
      assert.deepEqual(
        rows.map((r) => [r.executionId, r.scheduledFor, r.attempt, r.state]),
        [
          [second, T0 + HOUR, 0, "READY"],
          [first, T0, 2, "SUCCEEDED"],
          [first, T0, 1, "FAILED"],
        ],
      );
      for (const r of rows) assert.equal(r.jobId, nj.job.jobId);
    });

    storeTest("pages with the after cursor, strictly after it", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      let entry = entryOf(nj);
      for (let i = 1; i <= 4; i++) {
        const next = { scheduledFor: T0 + i * HOUR, dueAt: T0 + i * HOUR };
        await store.dispatchMany({ nodeId: "n1", epochs, now: entry.dueAt, items: [{ entry, next }] });
        entry = { ...entry, ...next };
      }
      // Give the first occurrence two attempts.
      const first = executionIdFor(nj.job.jobId, T0);
      await leaseOne(store, T0);
      await store.executionFailMany({ items: [fail({ executionId: first, tenantId: "t1", attempt: 1 })], now: T0 + 1 });
      await leaseOne(store, T0 + 1 + 10 * SECOND);
      const all = await history(store, "t1", nj.job.jobId);
      assert.equal(all.length, 5);
      const seen: [number, number][] = [];
      let after: { scheduledFor: number; attempt: number } | undefined;
      for (let page = 0; page < 10; page++) {
        const rows = await store.executionHistory({ tenantId: "t1", jobId: nj.job.jobId, limit: 2, ...(after ? { after } : {}) });
        assert.ok(rows.length <= 2);
        if (rows.length === 0) break;
        seen.push(...rows.map((r): [number, number] => [r.scheduledFor, r.attempt]));
        const last = rows[rows.length - 1]!;
        after = { scheduledFor: last.scheduledFor, attempt: last.attempt };
      }
      assert.deepEqual(seen, [
        [T0 + 3 * HOUR, 0],
        [T0 + 2 * HOUR, 0],
        [T0 + HOUR, 0],
        [T0, 2],
        [T0, 1],
      ]);
      assert.deepEqual(
        seen,
        all.map((r) => [r.scheduledFor, r.attempt]),
      );
    });

    storeTest("sees only the caller's tenant", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs);
      assert.deepEqual(await history(store, "t2", r.job.jobId), []);
      assert.deepEqual(await history(store, "t1", newId(T0)), []);
      assert.equal((await history(store, "t1", r.job.jobId)).length, 1);
    });
  });

  describe("dead letters", () => {
    async function deadExecution(store: Store, epochs: ReadonlyMap<number, number>, overrides: JobOverrides = {}, now = T0 + SECOND): Promise<Ready> {
      const r = await readyExecution(store, epochs, overrides);
      const leased = await leaseOne(store, T0, { pool: poolOf(r.job.target), tenantId: r.job.tenantId });
      assert.equal(leased.executionId, r.executionId);
      const [outcome] = await store.executionFailMany({
        items: [fail({ executionId: r.executionId, tenantId: r.job.tenantId, attempt: 1, error: { message: `dead at ${now}`, class: "permanent" } })],
        now,
      });
      assertOk(outcome, "DEAD");
      return r;
    }

    const audit = (subject: string) => ({
      tenantId: "t1",
      at: T0 + HOUR,
      actor: "admin-key",
      action: "dead_letter.replay",
      subject,
      details: { reason: "fixed" },
    });

    storeTest("lists dead executions of the caller's tenant only", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const mine = await deadExecution(store, epochs);
      await deadExecution(store, epochs, { tenantId: "t2" });
      await readyExecution(store, epochs); // alive: not listed
      const letters = await store.deadLetterList({ tenantId: "t1", limit: 10 });
      assert.deepEqual(
        letters.map((l) => l.executionId),
        [mine.executionId],
      );
      assert.equal(letters[0]!.tenantId, "t1");
      assert.deepEqual(letters[0]!.lastError, { message: `dead at ${T0 + SECOND}`, class: "permanent" });
      assert.equal((await store.deadLetterList({ tenantId: "t2", limit: 10 })).length, 1);
      assert.deepEqual(await store.deadLetterList({ tenantId: "t3", limit: 10 }), []);
    });

    storeTest("respects limit, and the after cursor pages through every dead letter exactly once", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const ids = new Set<string>();
      for (let i = 0; i < 7; i++) ids.add((await deadExecution(store, epochs, {}, T0 + SECOND * (1 + Math.floor(i / 2)))).executionId);
      assert.equal((await store.deadLetterList({ tenantId: "t1", limit: 3 })).length, 3);
      const seen: string[] = [];
      let after: { deadAt: number; executionId: string } | undefined;
      for (let page = 0; page < 10; page++) {
        const rows = await store.deadLetterList({ tenantId: "t1", limit: 3, ...(after ? { after } : {}) });
        assert.ok(rows.length <= 3);
        if (rows.length === 0) break;
        seen.push(...rows.map((r) => r.executionId));
        const last = rows[rows.length - 1]!;
        after = { deadAt: last.deadAt, executionId: last.executionId };
      }
      assert.equal(seen.length, 7, "no dead letter seen twice");
      assert.deepEqual(new Set(seen), ids);
    });

    storeTest("replay makes the execution READY now, leasable with the next attempt, history kept, one-off job SCHEDULED again", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await deadExecution(store, epochs, { payload: { p: 1 } });
      assert.equal((await getJob(store, r.nj)).state, "DEAD");
      const at = T0 + HOUR;
      const replayed = await store.deadLetterReplay({ tenantId: "t1", executionId: r.executionId, now: at, audit: audit(r.executionId) });
      assert.ok(replayed);
      assert.equal(replayed.pool, "p1");
      assert.equal(replayed.row.executionId, r.executionId);
      assert.equal(replayed.row.jobId, r.job.jobId);
      assert.equal(replayed.row.scheduledFor, T0);
      assert.equal(replayed.row.readyAt, at);
      assert.equal(replayed.row.state, "READY");
      assert.equal(replayed.row.attempt, 1, "the row carries the attempts made so far; the next lease is attempt + 1");
      assert.equal((await getJob(store, r.nj)).state, "SCHEDULED");
      assert.deepEqual(await store.deadLetterList({ tenantId: "t1", limit: 10 }), []);
      const leased = await leaseOne(store, at);
      assert.equal(leased.executionId, r.executionId);
      assert.equal(leased.attempt, 2);
      assert.equal(leased.retry, false, "a replay starts afresh: its first attempt is not a retry");
      assert.deepEqual(leased.payload, { p: 1 });
      const rows = await history(store, "t1", r.job.jobId);
      assert.equal(attemptOf(rows, r.executionId, 1).error?.message, `dead at ${T0 + SECOND}`);
      assert.equal(attemptOf(rows, r.executionId, 2).state, "RUNNING");
      assertOk(
        (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 2 }], now: at + 1 }))[0],
        "SUCCEEDED",
      );
      assert.equal((await getJob(store, r.nj)).state, "COMPLETED");
    });

    storeTest("a replayed execution gets a fresh budget of maxAttempts, its attempt numbers still growing", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await readyExecution(store, epochs, { retry: { maxAttempts: 3, backoffSeconds: 1, maxBackoffSeconds: 1 } });
      let now = T0;
      const reapOnce = async (expectAttempt: number): Promise<string> => {
        assert.equal((await leaseOne(store, now)).attempt, expectAttempt);
        now += LEASE_MS + 1;
        const reaped = await store.executionReap({ now, limit: 10 });
        assert.equal(reaped.length, 1);
        return reaped[0]!.state;
      };
      const failOnce = async (expectAttempt: number): Promise<AckOutcome | undefined> => {
        assert.equal((await leaseOne(store, now)).attempt, expectAttempt);
        const [outcome] = await store.executionFailMany({
          items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: expectAttempt })],
          now: now + 1,
        });
        now += 2 * SECOND; // past the 1 s backoff
        return outcome;
      };
      assert.deepEqual([await reapOnce(1), await reapOnce(2), await reapOnce(3)], ["READY", "READY", "DEAD"]);
      const replayed = await store.deadLetterReplay({ tenantId: "t1", executionId: r.executionId, now, audit: audit(r.executionId) });
      assert.equal(replayed?.row.attempt, 3);
      // Counted from the first attempt, each of these would be past maxAttempts.
      assertOk(await failOnce(4), "READY");
      assert.equal(await reapOnce(5), "READY", "the reaper counts attempts since the replay too");
      assertOk(await failOnce(6), "DEAD");
      const [letter] = await store.deadLetterList({ tenantId: "t1", limit: 10 });
      assert.equal(letter?.attempts, 6, "dead letters count every attempt");
      assert.equal((await history(store, "t1", r.job.jobId)).length, 6);
    });

    storeTest("replay of a cron job's execution leaves the job SCHEDULED", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const nj = cronJob();
      await createOne(store, nj);
      await store.dispatchMany({
        nodeId: "n1",
        epochs,
        now: T0,
        items: [{ entry: entryOf(nj), next: { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR } }],
      });
      const executionId = executionIdFor(nj.job.jobId, T0);
      await leaseOne(store, T0);
      await store.executionFailMany({ items: [fail({ executionId, tenantId: "t1", attempt: 1, error: FATAL })], now: T0 + 1 });
      const replayed = await store.deadLetterReplay({ tenantId: "t1", executionId, now: T0 + 2, audit: audit(executionId) });
      assert.ok(replayed);
      const job = await getJob(store, nj);
      assert.equal(job.state, "SCHEDULED");
      assert.equal(job.nextRunAt, T0 + HOUR);
      assert.equal((await leaseOne(store, T0 + 2)).attempt, 2);
    });

    storeTest("replay is audited", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const r = await deadExecution(store, epochs);
      await store.deadLetterReplay({ tenantId: "t1", executionId: r.executionId, now: T0 + HOUR, audit: audit(r.executionId) });
      const entries = await store.auditList({ tenantId: "t1", limit: 10 });
      assert.equal(entries.length, 1);
      const { id, ...entry } = entries[0]!;
      assert.equal(typeof id, "number");
      assert.deepEqual(entry, audit(r.executionId));
      assert.deepEqual(await store.auditList({ tenantId: "t2", limit: 10 }), []);
    });

    storeTest("auditList pages newest first with the after cursor, visiting every entry once", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const subjects: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await deadExecution(store, epochs);
        subjects.push(r.executionId);
        const at = T0 + HOUR + Math.floor(i / 2) * SECOND; // two entries share each instant
        await store.deadLetterReplay({ tenantId: "t1", executionId: r.executionId, now: at, audit: { ...audit(r.executionId), at } });
        assert.equal((await leaseOne(store, at)).executionId, r.executionId); // keep the next dead letter's lease unambiguous
        await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 2 }], now: at });
      }
      const all = await store.auditList({ tenantId: "t1", limit: 100 });
      assert.equal(all.length, 5);
      for (let i = 1; i < all.length; i++) assert.ok(all[i - 1]!.at >= all[i]!.at, "newest first");
      const seen: number[] = [];
      let after: { at: number; id: number } | undefined;
      for (let page = 0; page < 10; page++) {
        const rows = await store.auditList({ tenantId: "t1", limit: 2, ...(after ? { after } : {}) });
        assert.ok(rows.length <= 2);
        if (rows.length === 0) break;
        seen.push(...rows.map((r) => r.id));
        const last = rows[rows.length - 1]!;
        after = { at: last.at, id: last.id };
      }
      assert.deepEqual(
        seen,
        all.map((e) => e.id),
      );
      assert.deepEqual(new Set(all.map((e) => e.subject)), new Set(subjects));
    });

    storeTest("replaying an execution that is not dead answers null and audits nothing", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const dl = await deadExecution(store, epochs, { tenantId: "t1" });
      const ready = await readyExecution(store, epochs);
      const now = T0 + HOUR;
      assert.equal(await store.deadLetterReplay({ tenantId: "t1", executionId: ready.executionId, now, audit: audit(ready.executionId) }), null);
      assert.equal(
        await store.deadLetterReplay({ tenantId: "t2", executionId: dl.executionId, now, audit: { ...audit(dl.executionId), tenantId: "t2" } }),
        null,
      );
      assert.equal(await store.deadLetterReplay({ tenantId: "t1", executionId: executionIdFor(newId(T0), T0), now, audit: audit("x") }), null);
      assert.deepEqual(await store.auditList({ tenantId: "t1", limit: 10 }), []);
      assert.deepEqual(await store.auditList({ tenantId: "t2", limit: 10 }), []);
      // Replaying twice: the second finds it no longer dead.
      assert.ok(await store.deadLetterReplay({ tenantId: "t1", executionId: dl.executionId, now, audit: audit(dl.executionId) }));
      assert.equal(await store.deadLetterReplay({ tenantId: "t1", executionId: dl.executionId, now: now + 1, audit: audit(dl.executionId) }), null);
      assert.equal((await store.auditList({ tenantId: "t1", limit: 10 })).length, 1);
    });
  });

  describe("possible duplicates", () => {
    /** An execution whose attempt 1 lost its lease (reaped) and whose attempt 2 runs. */
    async function overtaken(store: Store, epochs: ReadonlyMap<number, number>, overrides: JobOverrides = {}) {
      const r = await runningExecution(store, epochs, overrides);
      const reaped = await store.executionReap({ now: T0 + LEASE_MS + 1, limit: 10 });
      assert.equal(reaped.length, 1);
      const second = await leaseOne(store, T0 + LEASE_MS + 2, { pool: poolOf(r.job.target), tenantId: r.job.tenantId });
      assert.equal(second.attempt, 2);
      return r;
    }

    storeTest(
      "a lost complete, fail or heartbeat of a granted attempt records a possible duplicate, once per attempt; the list is newest first, by tenant",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const a = await overtaken(store, epochs);
        const at = T0 + LEASE_MS + 10;
        const [lostComplete] = await store.executionCompleteMany({ items: [{ executionId: a.executionId, tenantId: "t1", attempt: 1 }], now: at });
        assert.deepEqual(lostComplete, { status: "lost", possibleDuplicate: { tenantId: "t1", attempt: 1, reason: "lease_lost" } });
        assert.deepEqual(
          await store.executionHeartbeat({ tenantId: "t1", executionId: a.executionId, attempt: 1, now: at + 1 }),
          { status: "lost" },
          "recorded once",
        );
        assert.deepEqual(
          await store.executionHeartbeat({ tenantId: "t1", executionId: a.executionId, attempt: 7, now: at + 1 }),
          { status: "lost" },
          "never granted: no duplicate",
        );
        assert.deepEqual(await store.executionHeartbeat({ tenantId: "t2", executionId: a.executionId, attempt: 1, now: at + 1 }), {
          status: "not_found",
        });
        const b = await overtaken(store, epochs, { tenantId: "t1" });
        const [lostFail] = await store.executionFailMany({
          items: [fail({ executionId: b.executionId, tenantId: null, attempt: 1 })],
          now: at + 2,
        });
        assert.deepEqual(lostFail, { status: "lost", possibleDuplicate: { tenantId: "t1", attempt: 1, reason: "lease_lost" } });
        const c = await overtaken(store, epochs, { tenantId: "t2" });
        const beat = await store.executionHeartbeat({ tenantId: null, executionId: c.executionId, attempt: 1, now: at + 3 });
        assert.deepEqual(beat, { status: "lost", possibleDuplicate: { tenantId: "t2", attempt: 1, reason: "lease_lost" } });
        const listed = await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 });
        assert.deepEqual(
          listed.map((d) => [d.executionId, d.duplicateAttempt, d.reason, d.at, d.attempt, d.state]),
          [
            [b.executionId, 1, "lease_lost", at + 2, 2, "RUNNING"],
            [a.executionId, 1, "lease_lost", at, 2, "RUNNING"],
          ],
        );
        assert.equal(listed[0]!.jobId, b.job.jobId);
        assert.equal(listed[0]!.pool, "p1");
        const page = await store.executionPossibleDuplicates({ tenantId: "t1", limit: 1, after: { at: at + 2, executionId: b.executionId } });
        assert.deepEqual(
          page.map((d) => d.executionId),
          [a.executionId],
        );
        assert.deepEqual(
          (await store.executionPossibleDuplicates({ tenantId: "t2", limit: 10 })).map((d) => d.executionId),
          [c.executionId],
        );
        // The current attempt still holds its lease: its acks are not duplicates.
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: a.executionId, tenantId: "t1", attempt: 2 }], now: at + 4 }))[0],
          "SUCCEEDED",
        );
        assert.equal((await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 })).length, 2);
      },
    );

    storeTest(
      "a call after the attempt's own acknowledgement is not a possible duplicate; a call past an expired lease not yet reaped is one",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await runningExecution(store, epochs);
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 1 }))[0],
          "SUCCEEDED",
        );
        assertOk(
          (await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 2 }))[0],
          "SUCCEEDED",
        );
        assert.deepEqual(
          await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 3 }),
          { status: "lost" },
          "a heartbeat racing its own complete",
        );
        assert.deepEqual(await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 }), []);
        const expired = await runningExecution(store, epochs);
        assert.deepEqual(
          await store.executionHeartbeat({ tenantId: "t1", executionId: expired.executionId, attempt: 1, now: T0 + LEASE_MS + 1 }),
          { status: "lost", possibleDuplicate: { tenantId: "t1", attempt: 1, reason: "lease_lost" } },
          "its lease expired, not yet reaped: the worker runs on",
        );
      },
    );

    storeTest(
      "the success of an execution whose earlier attempt the reaper ended for an expired lease records that attempt, once, in the complete",
      async (store) => {
        const epochs = await acquireAll(store, "n1");
        const r = await overtaken(store, epochs);
        const at = T0 + LEASE_MS + 20;
        const [done] = await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 2 }], now: at });
        assert.deepEqual(done, {
          status: "ok",
          state: "SUCCEEDED",
          pool: "p1",
          tenantId: "t1",
          possibleDuplicate: { tenantId: "t1", attempt: 1, reason: "expired_then_succeeded" },
        });
        const [again] = await store.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 2 }], now: at + 1 });
        assert.deepEqual(again, { status: "ok", state: "SUCCEEDED", pool: "p1", tenantId: "t1" }, "a repeated complete records nothing more");
        assert.deepEqual(
          await store.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: at + 2 }),
          { status: "lost" },
          "the same attempt showing up later is the same duplicate",
        );
        const listed = await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 });
        assert.deepEqual(
          listed.map((d) => [d.executionId, d.duplicateAttempt, d.reason, d.at, d.state]),
          [[r.executionId, 1, "expired_then_succeeded", at, "SUCCEEDED"]],
        );
        // A failed attempt (acknowledged by its worker) then a success: nothing ran twice.
        const f = await runningExecution(store, epochs, { retry: { maxAttempts: 3, backoffSeconds: 1, maxBackoffSeconds: 1 } });
        assertOk(
          (await store.executionFailMany({ items: [fail({ executionId: f.executionId, tenantId: "t1", attempt: 1 })], now: T0 + 1 }))[0],
          "READY",
        );
        const retried = await leaseOne(store, T0 + 5 * SECOND);
        assert.equal(retried.executionId, f.executionId);
        const [ok] = await store.executionCompleteMany({
          items: [{ executionId: f.executionId, tenantId: "t1", attempt: 2 }],
          now: T0 + 6 * SECOND,
        });
        assert.deepEqual(ok, { status: "ok", state: "SUCCEEDED", pool: "p1", tenantId: "t1" });
        assert.equal((await store.executionPossibleDuplicates({ tenantId: "t1", limit: 10 })).length, 1);
      },
    );
  });
}
