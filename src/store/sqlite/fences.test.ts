// The SQLite driver's fences are compare-and-sets in the statements that
// write, not checks in JavaScript before them. In the store every write
// transaction takes the file's write lock first (BEGIN IMMEDIATE), which
// would hide a fence read before its write; these tests run the driver's
// functions on a handle without a transaction (each statement its own), and
// commit another handle's write on the same file in between, just before
// the fenced write runs: whatever the first handle read before it, the
// write must see the other's commit and be refused.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import type { DispatchItem, LeaseParams, NewJob } from "../store.js";
import { recurringJobs } from "../test-support.js";
import { acquireShards } from "./cluster.js";
import { type Query, Rollback, SqliteDb } from "./db.js";
import { dispatch } from "./dispatch.js";
import { createJobs } from "./jobs.js";
import { lease } from "./leases.js";
import { claimReplays, createReplay, stepReplay } from "./replays.js";
import { migrate } from "./schema.js";

const T = Date.UTC(2026, 0, 1);
const SHARD = 3;

const dirs: string[] = [];
const handles: SqliteDb[] = [];

after(async () => {
  for (const h of handles) h.close();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Two handles on one fresh file, migrated. */
async function twoHandles(): Promise<[SqliteDb, SqliteDb]> {
  const dir = await mkdtemp(join(tmpdir(), "duetime-fences-"));
  dirs.push(dir);
  const path = join(dir, "duetime.db");
  const a = new SqliteDb({ path });
  migrate(a);
  const b = new SqliteDb({ path });
  handles.push(a, b);
  return [a, b];
}

/** `q`, except that just before the first statement matching `when` is prepared, `between` runs (and commits) on another handle. */
function interleaved(q: Query, when: RegExp, between: () => void): { q: Query; ran: () => boolean } {
  let ran = false;
  return {
    q: (sql) => {
      if (!ran && when.test(sql)) {
        ran = true;
        between();
      }
      return q(sql);
    },
    ran: () => ran,
  };
}

for (const ends of [false, true]) {
  test(`a stale shard owner's dispatch consumes nothing, though its shard was taken over after it began (${ends ? "last occurrence: delete" : "next occurrence: move"})`, async () => {
    const [a, b] = await twoHandles();
    const [nj] = recurringJobs(1, { createdAt: T, dueAt: T, shard: SHARD });
    a.tx(() => createJobs(a.q, [nj!], "a", T));
    const [held] = a.tx(() => acquireShards(a.q, { owner: "a", shards: [SHARD], leaseMs: 1_000 }, T));
    assert.equal(held?.owner, "a");

    // a's lease runs out; b takes the shard over (epoch + 1) while a's dispatch is under way, before it writes.
    const now = T + 5_000;
    const takeOver = () => {
      const [taken] = b.tx(() => acquireShards(b.q, { owner: "b", shards: [SHARD], leaseMs: 60_000 }, now));
      assert.equal(taken?.epoch, held!.epoch + 1);
    };
    const hooked = interleaved(a.q, /^\s*(UPDATE|DELETE FROM) due\b/, takeOver);
    const entry = { jobId: nj!.job.jobId, tenantId: "default", shard: SHARD, scheduledFor: T, dueAt: T, kind: "cron" as const };
    const item: DispatchItem = { entry, next: ends ? null : { scheduledFor: T + 3_600_000, dueAt: T + 3_600_000 } };
    const out = dispatch(hooked.q, { nodeId: "a", epochs: new Map([[SHARD, held!.epoch]]), now, items: [item] });

    assert.ok(hooked.ran(), "the takeover ran before the due entry was written");
    assert.deepEqual(out, { dispatched: [], wouldRun: [], stale: [], fenced: [entry.jobId] });
    // Nothing of a's dispatch is in the file: the due entry is as it was, and no execution exists.
    assert.deepEqual(b.q("SELECT scheduled_for, due_at FROM due WHERE job_id = ?").get(entry.jobId), { scheduled_for: T, due_at: T });
    assert.equal((b.q("SELECT count(*) AS n FROM executions").get() as { n: number }).n, 0);

    // The new owner, at its epoch, dispatches the entry.
    const mine = b.tx(() => dispatch(b.q, { nodeId: "b", epochs: new Map([[SHARD, held!.epoch + 1]]), now, items: [item] }));
    assert.equal(mine.dispatched.length, 1);
  });
}

test("an idempotency key another handle claimed after the create began is not taken over: another request's answers idempotency_mismatch", async () => {
  const [a, b] = await twoHandles();
  const [mine, theirs] = recurringJobs(2, { createdAt: T, dueAt: T + 60_000 });
  const claim = (nj: typeof mine, requestHash: string) => ({ ...nj!, idempotency: { key: "k", requestHash } });
  // b creates its job under the key while a's create is under way, before a writes the key.
  const hooked = interleaved(a.q, /^\s*INSERT (OR REPLACE )?INTO idempotency_keys\b/, () => {
    const [created] = b.tx(() => createJobs(b.q, [claim(theirs, "h-theirs")], "b", T));
    assert.equal(created?.status, "created");
  });
  const [outcome] = createJobs(hooked.q, [claim(mine, "h-mine")], "a", T);

  assert.ok(hooked.ran(), "b's create ran before a's key was written");
  assert.deepEqual(outcome, { status: "idempotency_mismatch" });
  // The key is still b's, and a wrote no job.
  assert.deepEqual(b.q("SELECT request_hash, job_id FROM idempotency_keys WHERE key = 'k'").get(), {
    request_hash: "h-theirs",
    job_id: theirs!.job.jobId,
  });
  assert.equal(b.q("SELECT 1 FROM jobs WHERE id = ?").get(mine!.job.jobId), undefined);
});

test("the same request's create, racing one that claimed its key first, answers existing with that job", async () => {
  const [a, b] = await twoHandles();
  const [first, again] = recurringJobs(2, { createdAt: T, dueAt: T + 60_000 });
  const claim = (nj: typeof first) => ({ ...nj!, idempotency: { key: "k", requestHash: "h" } });
  const hooked = interleaved(a.q, /^\s*INSERT (OR REPLACE )?INTO idempotency_keys\b/, () => {
    b.tx(() => createJobs(b.q, [claim(first)], "b", T));
  });
  const [outcome] = createJobs(hooked.q, [claim(again)], "a", T);

  assert.ok(hooked.ran());
  assert.equal(outcome?.status, "existing");
  assert.equal(outcome?.status === "existing" && outcome.job.jobId, first!.job.jobId);
  assert.equal(b.q("SELECT 1 FROM jobs WHERE id = ?").get(again!.job.jobId), undefined);
});

/** A one-off job of tenant default in `pool`, its execution READY since T. */
function oneOff(pool: string): NewJob {
  const [nj] = recurringJobs(1, { createdAt: T, dueAt: T });
  return { job: { ...nj!.job, kind: "once", target: { type: "queue", pool } }, due: null, execution: { scheduledFor: T, dueAt: T } };
}

/** Tenant default's caps: one attempt leased at a time, or one grant a second. */
const CAPS = {
  max_leased_attempts: "INSERT INTO tenants (tenant_id, max_leased_attempts, updated_at) VALUES ('default', 1, 0)",
  dispatch_rate_per_second: "INSERT INTO tenants (tenant_id, dispatch_rate_per_second, updated_at) VALUES ('default', 1, 0)",
};

for (const [cap, sql] of Object.entries(CAPS)) {
  for (const across of [false, true]) {
    test(`a lease whose tenant's ${cap} was used up by another handle after it picked grants nothing (${across ? "across tenants" : "one tenant"})`, async () => {
      const [a, b] = await twoHandles();
      a.q(sql).run();
      a.tx(() => createJobs(a.q, [oneOff("p"), oneOff("q")], "a", T));
      const now = T + 1_000;
      const params = (pool: string): LeaseParams => ({ pool, workerId: pool, max: 10, leaseMs: 30_000, ...(across ? {} : { tenantId: "default" }) });
      // b leases the tenant's work in pool q while a's lease of pool p has read the caps and picked, before a grants.
      const hooked = interleaved(a.q, /^\s*UPDATE executions SET state = 'RUNNING'/, () => {
        const theirs = b.tx(() => lease(b.q, params("q"), now, 2));
        assert.equal(theirs.length, 1);
      });
      const mine = lease(hooked.q, params("p"), now, 1);

      assert.ok(hooked.ran(), "b's lease ran before a's grant");
      assert.deepEqual(mine, []);
      assert.equal((b.q("SELECT count(*) AS n FROM executions WHERE state = 'RUNNING'").get() as { n: number }).n, 1);
      if (cap === "dispatch_rate_per_second") {
        // b's charge stands, one grant's worth: nothing of a's lease was charged.
        assert.equal((b.q("SELECT dispatch_tat AS tat FROM tenants").get() as { tat: number }).tat, now + 1_000);
      }
    });
  }
}

test("a row another handle granted after a lease picked it is not granted twice", async () => {
  const [a, b] = await twoHandles();
  a.tx(() => createJobs(a.q, [oneOff("p")], "a", T));
  const now = T + 1_000;
  const params: LeaseParams = { pool: "p", workerId: "w", max: 10, leaseMs: 30_000 };
  const hooked = interleaved(a.q, /^\s*UPDATE executions SET state = 'RUNNING'/, () => {
    assert.equal(b.tx(() => lease(b.q, params, now, 2)).length, 1);
  });
  assert.deepEqual(lease(hooked.q, params, now, 1), []);
  assert.ok(hooked.ran());
  assert.deepEqual(b.q("SELECT attempt, lease_incarnation FROM executions").get(), { attempt: 1, lease_incarnation: 2 });
});

test("a replay step whose lease another owner claimed after it began writes no progress, and is rolled back", async () => {
  const [a, b] = await twoHandles();
  const job = oneOff("p");
  a.tx(() => createJobs(a.q, [job], "a", T));
  a.q("UPDATE executions SET state = 'DEAD', dead_at = ?, finished_at = ?, attempt = 1").run(T, T);
  const replayId = "r1";
  a.tx(() =>
    createReplay(a.q, {
      replay: { replayId, tenantId: "default", selection: { filter: { deadBefore: T + 1 } }, ratePerSecond: 100, actor: "t", createdAt: T },
      audit: { tenantId: "default", at: T, actor: "t", action: "replay.create", subject: replayId, details: null },
    }),
  );
  const now = T + 1_000;
  assert.equal(a.tx(() => claimReplays(a.q, { owner: "a", leaseMs: 1_000, limit: 1 }, now)).length, 1);
  // b claims the replay (a's renewed lease ran out) while a's step is under way, before a writes its progress.
  const later = now + 10_000;
  const hooked = interleaved(a.q, /^\s*UPDATE dead_letter_replays SET replayed\b/, () => {
    assert.equal(b.tx(() => claimReplays(b.q, { owner: "b", leaseMs: 60_000, limit: 1 }, later)).length, 1);
  });
  assert.throws(() => stepReplay(hooked.q, { replayId, owner: "a", leaseMs: 1_000, at: now, limit: 10 }, now), Rollback);

  assert.ok(hooked.ran());
  // The replay is b's, as b claimed it: no progress of a's is on it.
  assert.deepEqual(b.q("SELECT owner, lease_until, state, replayed, skipped, cursor FROM dead_letter_replays").get(), {
    owner: "b",
    lease_until: later + 60_000,
    state: "RUNNING",
    replayed: 0,
    skipped: 0,
    cursor: null,
  });
});
