// The store contract, in part (index.ts runs the parts in order).
// Races: two handles on one database (openPair) racing each other, many rounds
// each.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { executionIdFor } from "../../src/core/ids.js";
import { DEFAULT_TENANT_LIMITS, type LeasedRow, type NewJob, type Store } from "../../src/store/store.js";
import {
  T0,
  SECOND,
  MINUTE,
  HOUR,
  CREATED,
  LEASE_MS,
  type JobOverrides,
  newJob,
  cronJob,
  CRON,
  entryOf,
  acquireAll,
  createOne,
  getJob,
  readyExecution,
  lease,
  runningExecution,
  history,
  attemptOf,
  fail,
  countsOf,
  assertOk,
  deadLetters,
  REPLAY_AT,
  bulkReplay,
  driveReplay,
  unmarked,
  RACE_ROUNDS,
  race,
  rescheduled,
  type ContractTests,
} from "./support.js";

/** A job on this shard. */
function jobOnShard(shard: number, overrides: JobOverrides = {}): NewJob {
  for (;;) {
    const nj = newJob(overrides);
    if (nj.job.shard === shard) return nj;
  }
}

export function racesContract({ pairTest }: ContractTests): void {
  // Two handles on one database race each other, many rounds each: SQLite's
  // single writer serialises them, a networked driver must hold the same
  // sentences under true concurrency.
  describe("races (two handles on one database)", () => {
    pairTest(
      "bulk replay: two nodes claim one replay, one holds it; its steps and single replays from the other handle replay each dead letter once",
      async (a, b) => {
        for (let round = 0; round < 10; round++) {
          const tenantId = `replay-${round}`;
          const ids = await deadLetters(a, 6, { tenantId });
          const created = await a.replayCreate(bulkReplay({ filter: { deadBefore: REPLAY_AT } }, { tenantId, ratePerSecond: 1000 }));
          const [byA, byB] = await race(
            round,
            () => a.replayClaim({ owner: "na", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 100 }),
            () => b.replayClaim({ owner: "nb", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 100 }),
          );
          const holders = [...byA, ...byB].filter((r) => r.replayId === created.replayId);
          assert.equal(holders.length, 1, `round ${round}: one node holds the replay`);
          const owner = holders[0]!.owner!;
          const driver = owner === "na" ? a : b;
          const other = owner === "na" ? b : a;
          const single = async (): Promise<number> => {
            let won = 0;
            for (const id of [...ids].reverse()) {
              const replayed = await other.deadLetterReplay({
                tenantId,
                executionId: id,
                now: REPLAY_AT,
                audit: { tenantId, at: REPLAY_AT, actor: "x", action: "dead-letter.replay", subject: id },
              });
              if (replayed) won++;
            }
            return won;
          };
          const [steps, singles] = await race(round, () => driveReplay(driver, created.replayId, { owner, limit: 2 }), single);
          assert.equal(steps.replay.replayed, steps.replayed.length);
          assert.equal(
            steps.replayed.length + singles,
            ids.length,
            `round ${round}: every dead letter replayed exactly once (bulk ${steps.replayed.length}, single ${singles})`,
          );
          assert.deepEqual(await a.deadLetterList({ tenantId, limit: 10 }), []);
        }
      },
    );

    pairTest(
      "two leases at once both charge a tenant's dispatch rate: by any time, grants stay within a burst and a batch of the rate",
      async (a, b) => {
        for (let round = 0; round < 10; round++) {
          const tenantId = `rated-${round}`;
          await a.tenantLimitsPut({ tenantId, limits: { ...DEFAULT_TENANT_LIMITS, dispatchRatePerSecond: 4 }, now: CREATED });
          const jobs = Array.from({ length: 40 }, () => newJob({ tenantId }));
          await a.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
          let granted = 0;
          for (let s = 0; s < 3; s++) {
            const at = T0 + s * SECOND;
            const [x, y] = await race(
              round,
              () => lease(a, at, { max: 10, tenantId }),
              () => lease(b, at, { max: 10 }),
            );
            granted += x.length + y.length;
            // A burst (4), the rate since T0, and one concurrent batch's overshoot (4) at most.
            assert.ok(granted <= 4 + 4 * s + 4, `round ${round}, ${s} s: ${granted} granted`);
          }
          assert.ok(granted >= 4 * 3 - 4, `round ${round}: the rate is used, ${granted} granted`);
        }
      },
    );

    pairTest("two leasers on one pool: every ready execution is granted exactly once, no attempt twice", async (a, b) => {
      const READY = 6;
      for (let round = 0; round < RACE_ROUNDS; round++) {
        const pool = `race-${round}`;
        // One-offs due at T0: READY since their creation.
        const jobs = Array.from({ length: READY }, () => newJob({ target: { type: "queue", pool } }));
        await a.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
        const ready = jobs.map((nj) => executionIdFor(nj.job.jobId, T0));
        /** Leases two at a time until the pool answers none (or more calls than there is work). */
        const drain = async (store: Store, workerId: string): Promise<LeasedRow[]> => {
          const got: LeasedRow[] = [];
          for (let call = 0; call <= READY; call++) {
            const rows = await lease(store, T0, { pool, workerId, max: 2 });
            if (rows.length === 0) break;
            got.push(...rows);
          }
          return got;
        };
        const [byA, byB] = await race(
          round,
          () => drain(a, "wa"),
          () => drain(b, "wb"),
        );
        const grants = [...byA, ...byB].map((r) => `${r.executionId}#${r.attempt}`);
        assert.equal(new Set(grants).size, grants.length, `round ${round}: an attempt was granted twice: ${grants.join(" ")}`);
        assert.deepEqual([...byA, ...byB].map((r) => r.executionId).sort(), ready.sort(), `round ${round}: every ready execution granted once`);
      }
    });

    pairTest("work created while leases across tenants run is never left behind by a tenant put to sleep", async (a, b) => {
      for (let round = 0; round < RACE_ROUNDS; round++) {
        const pool = `wake-${round}`;
        const created: string[] = [];
        const leased: LeasedRow[] = [];
        const create = async () => {
          for (let i = 0; i < 8; i++) {
            const nj = newJob({ tenantId: "late", target: { type: "queue", pool } });
            await a.jobCreateMany({ nodeId: "n1", jobs: [nj], now: CREATED });
            created.push(executionIdFor(nj.job.jobId, T0));
          }
        };
        // Each lease that finds the tenant's work gone puts it to sleep, while the next job may be committing.
        const drain = async () => {
          for (let i = 0; i < 16; i++) leased.push(...(await lease(b, T0, { pool, max: 1 })));
        };
        await race(round, create, drain);
        for (let i = 0; i < 8 && leased.length < created.length; i++) leased.push(...(await lease(b, T0, { pool, max: 8 })));
        assert.deepEqual(leased.map((r) => r.executionId).sort(), created.sort(), `round ${round}: every job created is leased once`);
      }
    });

    pairTest("reaper against a late complete: exactly one wins, and the execution ends as the winner left it", async (a, b) => {
      const epochs = await acquireAll(a, "n1");
      for (let round = 0; round < RACE_ROUNDS; round++) {
        const pool = `race-${round}`;
        const r = await runningExecution(a, epochs, { target: { type: "queue", pool } });
        const { leaseUntil } = r.leased;
        // The complete comes at the lease's last instant, the reaper one millisecond after it.
        const [[completed], reaped] = await race(
          round,
          () => a.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: leaseUntil }),
          () => b.executionReap({ now: leaseUntil + 1, limit: 10 }),
        );
        const reaperWon = reaped.some((x) => x.executionId === r.executionId);
        const attempt1 = attemptOf(await history(a, "t1", r.job.jobId), r.executionId, 1);
        const counts = countsOf(await a.poolCounts({ tenantId: "t1", pool, now: leaseUntil + 1 }), "t1", pool);
        if (reaperWon) {
          assert.deepEqual(unmarked(completed), { status: "lost" }, `round ${round}: the reaper won, so the complete is lost`);
          assert.equal(attempt1.state, "TIMED_OUT");
          assert.deepEqual(counts, { pending: 0, queued: 1, running: 0 }, `round ${round}: ready again for attempt 2`);
        } else {
          assertOk(completed, "SUCCEEDED");
          assert.deepEqual(reaped, [], `round ${round}: the complete won, so nothing was reaped`);
          assert.equal(attempt1.state, "SUCCEEDED");
          assert.deepEqual(counts, { pending: 0, queued: 0, running: 0 });
        }
      }
    });

    pairTest("dispatch against a shard takeover: each occurrence is dispatched once, by the owner of the current epoch", async (a, b) => {
      for (let round = 0; round < RACE_ROUNDS; round++) {
        const now = T0 + round * MINUTE;
        const nj = cronJob({ at: now });
        const shard = nj.job.shard;
        const later = jobOnShard(shard, { ...CRON, at: now });
        await a.jobCreateMany({ nodeId: "n1", jobs: [nj, later], now: CREATED });
        // node-a's lease has expired by `now`, so node-b may take the shard then.
        const [held] = await a.shardAcquire({ owner: "node-a", shards: [shard], leaseMs: SECOND, now: now - 2 * SECOND });
        assert.equal(held?.owner, "node-a");
        const oldEpochs = new Map([[shard, held.epoch]]);
        const items = [{ entry: entryOf(nj), next: null }];
        const [byA, byB] = await race(
          round,
          () => a.dispatchMany({ nodeId: "node-a", epochs: oldEpochs, now, items }),
          async () => {
            const [taken] = await b.shardAcquire({ owner: "node-b", shards: [shard], leaseMs: SECOND, now });
            assert.ok(taken && taken.owner === "node-b" && taken.epoch > held.epoch, `round ${round}: node-b took the shard with a new epoch`);
            // What node-b sees once it holds the shard: node-a's dispatch, if any, committed before the takeover.
            const seen = await history(b, "t1", nj.job.jobId);
            const dispatched = await b.dispatchMany({ nodeId: "node-b", epochs: new Map([[shard, taken.epoch]]), now, items });
            return { seen, dispatched };
          },
        );
        const aWon = byA.dispatched.length > 0;
        const rows = await history(a, "t1", nj.job.jobId);
        assert.equal(rows.length, 1, `round ${round}: one execution: ${JSON.stringify(rows)}`);
        if (aWon) {
          assert.equal(byB.seen.length, 1, `round ${round}: node-a dispatched after node-b had taken the shard`);
          assert.deepEqual(byB.dispatched, { dispatched: [], wouldRun: [], stale: [nj.job.jobId], fenced: [] });
          assert.equal(rows[0]!.dispatchedBy, "node-a");
        } else {
          assert.deepEqual(byA, { dispatched: [], wouldRun: [], stale: [], fenced: [nj.job.jobId] }, `round ${round}`);
          assert.deepEqual(
            byB.dispatched.dispatched.map((d) => d.executionId),
            [rows[0]!.executionId],
          );
          assert.equal(rows[0]!.dispatchedBy, "node-b");
        }
        // After the takeover, node-a's old epoch dispatches nothing.
        const stale = await a.dispatchMany({ nodeId: "node-a", epochs: oldEpochs, now, items: [{ entry: entryOf(later), next: null }] });
        assert.deepEqual(stale, { dispatched: [], wouldRun: [], stale: [], fenced: [later.job.jobId] });
        assert.deepEqual(await history(a, "t1", later.job.jobId), []);
      }
    });

    pairTest("pause against a lease: a one-off's pending execution is either held, never leased after, or leased and left running", async (a, b) => {
      for (let round = 0; round < RACE_ROUNDS; round++) {
        const pool = `race-${round}`;
        const nj = newJob({ target: { type: "queue", pool } });
        await a.jobCreateMany({ nodeId: "n1", jobs: [nj], now: CREATED });
        const executionId = executionIdFor(nj.job.jobId, T0);
        const [paused, leased] = await race(
          round,
          () => a.jobTransition({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: 1, state: "PAUSED", due: null, pending: { hold: T0 }, now: T0 }),
          () => lease(b, T0, { pool }),
        );
        assert.equal(paused?.state, "PAUSED", `round ${round}: the pause applies either way`);
        const state = attemptOf(await history(a, "t1", nj.job.jobId), executionId, leased.length).state;
        if (leased.length === 1) {
          assert.equal(state, "RUNNING", `round ${round}: leased first, it runs on`);
        } else {
          assert.equal(state, "PAUSED", `round ${round}: held first`);
          assert.deepEqual(await lease(b, T0 + HOUR, { pool }), [], `round ${round}: a held execution is never leased`);
        }
      }
    });

    pairTest("a flip to live against a dispatch: the occurrence is recorded once, as the mode the dispatch read; the next one runs", async (a, b) => {
      const epochs = await acquireAll(a, "n1");
      const orders = new Set<string>();
      for (let round = 0; round < RACE_ROUNDS; round++) {
        const nj = cronJob({ mode: "dry_run", target: { type: "queue", pool: `flip-${round}` } });
        await createOne(a, nj);
        const job = await getJob(b, nj);
        const { kind, name, target, payload, schedule, retry, timeoutSeconds, priority } = job;
        const live = { kind, name, target, payload, schedule, retry, timeoutSeconds, priority, mode: "live" as const };
        const next = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
        const [dispatch, flipped] = await race(
          round,
          () => a.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next }] }),
          () => b.jobUpdate({ tenantId: "t1", jobId: nj.job.jobId, fromVersion: job.version, fields: live, due: "keep", nodeId: "n2", now: T0 }),
        );
        assert.equal(flipped?.mode, "live", `round ${round}: the flip applies either way`);
        const executionId = executionIdFor(nj.job.jobId, T0);
        const row = attemptOf(await history(a, "t1", nj.job.jobId), executionId, 0);
        orders.add(dispatch.wouldRun.length === 1 ? "dispatch first" : "flip first");
        if (dispatch.wouldRun.length === 1) {
          assert.deepEqual([dispatch.dispatched, row.state, row.error?.reason], [[], "SKIPPED", "dry_run"], `round ${round}: dispatched first`);
        } else {
          assert.deepEqual(
            [dispatch.dispatched.map((d) => d.executionId), row.state],
            [[executionId], "READY"],
            `round ${round}: flipped first, it runs`,
          );
        }
        const after = await a.dispatchMany({ nodeId: "n1", epochs, now: T0 + HOUR, items: [{ entry: { ...entryOf(nj), ...next }, next: null }] });
        assert.deepEqual([after.dispatched.length, after.wouldRun.length], [1, 0], `round ${round}: the next occurrence runs`);
      }
      // Both orders came up (about a third to a half of the rounds each where this was measured), so both were checked.
      assert.deepEqual([...orders].sort(), ["dispatch first", "flip first"]);
    });

    pairTest("create with one idempotency key from two handles: one job, and both answers name it", async (a, b) => {
      for (let round = 0; round < RACE_ROUNDS; round++) {
        const idempotency = { key: `k-${round}`, requestHash: "h" };
        const [fromA, fromB] = [newJob({ idempotency }), newJob({ idempotency })];
        const [[outA], [outB]] = await race(
          round,
          () => a.jobCreateMany({ nodeId: "n1", jobs: [fromA], now: CREATED }),
          () => b.jobCreateMany({ nodeId: "n1", jobs: [fromB], now: CREATED }),
        );
        assert.ok(outA && outA.status !== "idempotency_mismatch" && outB && outB.status !== "idempotency_mismatch");
        assert.deepEqual([outA.status, outB.status].sort(), ["created", "existing"], `round ${round}`);
        assert.equal(outA.job.jobId, outB.job.jobId, `round ${round}: both answers name one job`);
        const loser = outA.job.jobId === fromA.job.jobId ? fromB : fromA;
        assert.equal(await a.jobGet({ tenantId: "t1", jobId: loser.job.jobId }), null, `round ${round}: the other job was not written`);
      }
    });

    // Cancelling "cancels READY executions and asks RUNNING ones to stop" (jobTransition):
    // no attempt is granted after the cancel commits, and one granted before
    // it sees cancelRequested and cannot go back to READY.
    // A one-off's end is not written on its job (core/states.ts ONE_OFF_END): the job's writes must still see it.
    pairTest(
      "a PATCH against a one-off's completion: refused, or ended by it; the job reads COMPLETED and nothing of it runs again",
      async (a, b) => {
        const epochs = await acquireAll(a, "n1");
        for (let round = 0; round < RACE_ROUNDS; round++) {
          const pool = `race-patch-${round}`;
          const r = await runningExecution(a, epochs, { target: { type: "queue", pool } });
          const { version } = await getJob(a, r.job);
          const later = { scheduledFor: T0 + HOUR, dueAt: T0 + HOUR };
          const [patched, [done]] = await race(
            round,
            () =>
              a.jobUpdate({
                tenantId: "t1",
                jobId: r.job.jobId,
                fromVersion: version,
                fields: rescheduled(r.job, later.scheduledFor),
                due: null,
                pending: { from: null, to: later },
                nodeId: "n1",
                now: T0 + 1,
              }),
            () => b.executionCompleteMany({ items: [{ executionId: r.executionId, tenantId: "t1", attempt: 1 }], now: T0 + 1 }),
          );
          assertOk(done, "SUCCEEDED");
          assert.equal((await getJob(a, r.job)).state, "COMPLETED", `round ${round}`);
          assert.deepEqual(
            await lease(b, T0 + 2 * HOUR, { pool }),
            [],
            `round ${round}: nothing runs again (the PATCH ${patched ? "applied" : "was refused"})`,
          );
        }
      },
    );

    pairTest("cancel against a lease: an attempt is granted only before the cancel, and then it is asked to stop", async (a, b) => {
      const epochs = await acquireAll(a, "n1");
      for (let round = 0; round < RACE_ROUNDS; round++) {
        const pool = `race-${round}`;
        const r = await readyExecution(a, epochs, { target: { type: "queue", pool } });
        const { version } = await getJob(a, r.job);
        const [cancelled, leased] = await race(
          round,
          () =>
            a.jobTransition({
              tenantId: "t1",
              jobId: r.job.jobId,
              fromVersion: version,
              state: "CANCELLED",
              due: null,
              cancelExecutions: true,
              now: T0,
            }),
          () => lease(b, T0, { pool }),
        );
        assert.equal(cancelled?.state, "CANCELLED", `round ${round}: a lease does not move the job's version`);
        if (leased.length > 0) {
          assert.deepEqual(
            leased.map((l) => [l.executionId, l.attempt]),
            [[r.executionId, 1]],
          );
          const beat = await b.executionHeartbeat({ tenantId: "t1", executionId: r.executionId, attempt: 1, now: T0 + 1 });
          assert.deepEqual(
            beat,
            { status: "ok", leaseUntil: T0 + 1 + LEASE_MS, cancelRequested: true },
            `round ${round}: the running attempt is asked to stop`,
          );
          const [failed] = await b.executionFailMany({ items: [fail({ executionId: r.executionId, tenantId: "t1", attempt: 1 })], now: T0 + 2 });
          assert.equal(failed?.status === "ok" && failed.state, "CANCELLED", `round ${round}: a cancelled job's attempt is not retried`);
        } else {
          assert.equal(attemptOf(await history(a, "t1", r.job.jobId), r.executionId, 0).state, "CANCELLED", `round ${round}`);
        }
        assert.deepEqual(await lease(b, T0 + MINUTE, { pool }), [], `round ${round}: nothing to lease after the cancel`);
      }
    });
  });
}
