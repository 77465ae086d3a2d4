// The store contract, in part (index.ts runs the parts in order).
// Rules: the drivers evaluate some of core's rules inside their own SQL, for
// speed (the lease deadline, the dry-run skip, the possible duplicates, the
// fair share and the dispatch rate). Each test here runs a driver over
// generated cases and holds every answer to core's function for the rule.

import assert from "node:assert/strict";
import { describe } from "node:test";

import type { JobMode } from "@duetime/sdk/contract";
import {
  attemptDeadline,
  insertedExecutionState,
  leaseEnd,
  lostAnswerIsDuplicate,
  succeededAfterExpiry,
  type LostAnswerFacts,
} from "../../src/core/attempt-rules.js";
import { chargeDispatch, dispatchAllowance } from "../../src/core/dispatch-rate.js";
import { fairPick, laneOfferLimit } from "../../src/core/fair-share.js";
import { DEFAULT_TENANT_LIMITS, type AckOutcome } from "../../src/store/store.js";
import {
  CREATED,
  LEASE_MS,
  SECOND,
  T0,
  acquireAll,
  createOne,
  cronJob,
  entryOf,
  history,
  lease,
  leaseOne,
  newJob,
  readyExecution,
  type ContractTests,
} from "./support.js";

/** Every combination of the given values, as objects. */
function casesOf<T extends Record<string, readonly unknown[]>>(axes: T): { [K in keyof T]: T[K][number] }[] {
  return Object.entries(axes).reduce<Record<string, unknown>[]>(
    (cases, [key, values]) => cases.flatMap((c) => values.map((v) => ({ ...c, [key]: v }))),
    [{}],
  ) as { [K in keyof T]: T[K][number] }[];
}

export function rulesContract({ storeTest }: ContractTests): void {
  describe("rules of core that the drivers evaluate in SQL", () => {
    storeTest("a grant's and a heartbeat's lease end are core's leaseEnd of attemptDeadline", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const cases = casesOf({ timeoutSeconds: [1, 60, 300], leaseMs: [1_000, 30_000, 600_000], graceMs: [0, 5_000], renewMs: [2_000, 900_000] });
      for (const [i, c] of cases.entries()) {
        const pool = `deadline-${i}`;
        await readyExecution(store, epochs, { timeoutSeconds: c.timeoutSeconds, target: { type: "queue", pool } });
        const [granted] = await store.executionLease({ pool, workerId: "w1", max: 1, leaseMs: c.leaseMs, graceMs: c.graceMs, now: T0 });
        assert.ok(granted, `case ${JSON.stringify(c)}: granted`);
        const deadline = attemptDeadline({ now: T0, timeoutMs: c.timeoutSeconds * SECOND, graceMs: c.graceMs });
        assert.equal(granted.leaseUntil, leaseEnd({ now: T0, leaseMs: c.leaseMs, deadline }), `grant of ${JSON.stringify(c)}`);
        const at = T0 + 500;
        const beat = await store.executionHeartbeat({ tenantId: "t1", executionId: granted.executionId, attempt: 1, leaseMs: c.renewMs, now: at });
        assert.ok(beat.status === "ok", `case ${JSON.stringify(c)}: renewed`);
        assert.equal(beat.leaseUntil, leaseEnd({ now: at, leaseMs: c.renewMs, deadline }), `heartbeat of ${JSON.stringify(c)}`);
      }
    });

    storeTest("a new execution's state is core's insertedExecutionState: schedule, trigger and a one-off's own, live and dry run", async (store) => {
      const epochs = await acquireAll(store, "n1");
      for (const c of casesOf({ mode: ["live", "dry_run"] as JobMode[], path: ["dispatch", "trigger", "with its job"] as const })) {
        const nj = c.path === "dispatch" ? cronJob({ mode: c.mode }) : newJob({ mode: c.mode, at: T0 + 3_600 * SECOND });
        await createOne(store, nj);
        if (c.path === "dispatch") {
          await store.dispatchMany({ nodeId: "n1", epochs, now: T0, items: [{ entry: entryOf(nj), next: null }] });
        } else if (c.path === "trigger") {
          await store.executionCreateMany({ tenantId: "t1", jobId: nj.job.jobId, nodeId: "n1", now: T0, items: [{ scheduledFor: T0, readyAt: T0 }] });
        }
        const rows = await history(store, "t1", nj.job.jobId);
        const row = rows.find((r) => r.scheduledFor === (c.path === "with its job" ? T0 + 3_600 * SECOND : T0));
        assert.ok(row, `case ${JSON.stringify(c)}: an execution`);
        const expected = insertedExecutionState({ mode: c.mode, state: "READY", writtenWithJob: c.path === "with its job" });
        assert.equal(row.state, expected.state, `case ${JSON.stringify(c)}`);
        assert.equal(row.error?.reason === "dry_run", expected.dryRun, `case ${JSON.stringify(c)}: reason`);
      }
    });

    storeTest("lost answers record the possible duplicates core's rules name, and a success after a reap its reaped attempt", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const expired = T0 + LEASE_MS + 1;
      /** A job whose attempt 1 was reaped at `expired` and whose attempt 2 runs, leased then. */
      const overtaken = async () => {
        const r = await readyExecution(store, epochs, { tenantId: "dup" });
        await leaseOne(store, T0, { tenantId: "dup" });
        assert.equal((await store.executionReap({ now: expired, limit: 10 })).length, 1);
        assert.equal((await leaseOne(store, expired, { tenantId: "dup" })).attempt, 2);
        return r.executionId;
      };
      const running2: LostAnswerFacts = { attempt: 2, state: "RUNNING", leaseUntil: expired + LEASE_MS, tokenHeld: true, duplicateAttempt: null };
      const complete = (executionId: string, attempt: number, now: number) =>
        store.executionCompleteMany({ items: [{ executionId, tenantId: "dup", attempt }], now });
      const heartbeat = (executionId: string, attempt: number, now: number) =>
        store.executionHeartbeat({ tenantId: "dup", executionId, attempt, now });
      const marks = (o: AckOutcome | Awaited<ReturnType<typeof heartbeat>> | undefined) =>
        o !== undefined && "possibleDuplicate" in o && o.possibleDuplicate !== undefined;

      const a = await overtaken();
      const at = expired + 10;
      for (const [attempt, facts] of [
        [0, running2],
        [3, running2],
        [1, running2],
        [1, { ...running2, duplicateAttempt: 1 }],
      ] as const) {
        const [outcome] = await complete(a, attempt, at);
        assert.equal(outcome?.status, "lost");
        assert.equal(marks(outcome), lostAnswerIsDuplicate(facts, attempt, at), `attempt ${attempt} against ${JSON.stringify(facts)}`);
      }
      // Attempt 1 was recorded by its lost answer: attempt 2's success records nothing more.
      const [afterLost] = await complete(a, 2, at + 1);
      assert.equal(marks(afterLost), succeededAfterExpiry({ expiredAttempt: 1, duplicateAttempt: 1 }) !== null);

      const b = await overtaken();
      const [success] = await complete(b, 2, at + 2);
      const reaped = succeededAfterExpiry({ expiredAttempt: 1, duplicateAttempt: null });
      assert.ok(success?.status === "ok");
      assert.equal(success.possibleDuplicate?.attempt ?? null, reaped);

      // The current attempt past its own lease, not reaped yet.
      await readyExecution(store, epochs, { tenantId: "dup", target: { type: "queue", pool: "late" } });
      const late = await leaseOne(store, T0, { tenantId: "dup", pool: "late" });
      const facts: LostAnswerFacts = { attempt: 1, state: "RUNNING", leaseUntil: late.leaseUntil, tokenHeld: true, duplicateAttempt: null };
      const now = late.leaseUntil + 1;
      const beat = await heartbeat(late.executionId, 1, now);
      assert.equal(beat.status, "lost");
      assert.equal(marks(beat), lostAnswerIsDuplicate(facts, 1, now));
    });

    storeTest("a lease across backlogged tenants grants each what core's fairPick grants, below laneOfferLimit", async (store) => {
      // Weights that are binary fractions: the finish tags' sums are exact in both the driver and core, so ties break alike.
      const cases = casesOf({
        weights: [
          [1, 1],
          [4, 1],
          [0.5, 1, 2],
          [1, 2, 4, 0.5, 1],
        ],
        max: [1, 7, 40],
      });
      for (const [i, c] of cases.entries()) {
        const pool = `fair-${i}`;
        const total = c.weights.reduce((sum, w) => sum + w, 0);
        const lanes = c.weights.map((weight, j) => ({ tenantId: `fair-${i}-${j}`, vtime: 0, weight }));
        for (const lane of lanes) {
          await store.tenantLimitsPut({ tenantId: lane.tenantId, limits: { ...DEFAULT_TENANT_LIMITS, weight: lane.weight }, now: CREATED });
          const rows = laneOfferLimit(c.max, lane.weight, total) + 1;
          const jobs = Array.from({ length: rows }, () => newJob({ tenantId: lane.tenantId, target: { type: "queue", pool } }));
          await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
        }
        const granted = await lease(store, T0, { pool, max: c.max });
        const counts = Object.fromEntries(lanes.map((l) => [l.tenantId, granted.filter((r) => r.tenantId === l.tenantId).length]));
        let next = 0;
        const pick = fairPick(
          c.max,
          (k) => lanes.splice(0, k).map((l) => ({ ...l })),
          (lane, n) => Array.from({ length: n }, () => `${lane.tenantId}:${next++}`),
        );
        const expected = Object.fromEntries(pick.lanes.map((l) => [l.tenantId, l.granted]));
        assert.deepEqual(counts, expected, `weights ${c.weights}, max ${c.max}`);
        for (const l of pick.lanes) assert.ok(l.granted < laneOfferLimit(c.max, l.weight, total));
      }
    });

    storeTest("a tenant's grants under a dispatch rate are core's dispatchAllowance, charged by chargeDispatch", async (store) => {
      const cases = casesOf({
        rate: [0.5, 1, 3, 8, 40],
        steps: [
          [0, 100, 400, 1_000, 2_500, 2_501, 6_000],
          [0, 0, 125, 3_000],
        ],
      });
      for (const [i, c] of cases.entries()) {
        const tenantId = `rate-${i}`;
        await store.tenantLimitsPut({ tenantId, limits: { ...DEFAULT_TENANT_LIMITS, dispatchRatePerSecond: c.rate }, now: CREATED });
        const backlog = 120;
        const jobs = Array.from({ length: backlog }, () => newJob({ tenantId, at: T0 - SECOND }));
        await store.jobCreateMany({ nodeId: "n1", jobs, now: CREATED });
        let tat: number | null = null;
        let left = backlog;
        for (const step of c.steps) {
          const now = T0 + step;
          const expected = Math.min(50, left, dispatchAllowance(c.rate, tat, now));
          const granted = await lease(store, now, { tenantId, max: 50 });
          assert.equal(granted.length, expected, `rate ${c.rate} at +${step} ms`);
          if (expected > 0) tat = chargeDispatch(c.rate, tat, now, expected);
          left -= expected;
        }
      }
    });
  });
}
