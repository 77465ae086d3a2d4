// The store contract, in part (index.ts runs the parts in order).
// Bulk dead-letter replays (store.ts, "dead letters"): replayCreate,
// replayGet, replayList, replayClaim, replayRelease, replayStep and
// replayCancel.

import assert from "node:assert/strict";
import { describe } from "node:test";

import { executionIdFor, newId } from "../../src/core/ids.js";
import { T0, SECOND, HOUR, FATAL, lease, deadLetters, REPLAY_AT, bulkReplay, driveReplay, type ContractTests } from "./support.js";

export function replaysContract({ storeTest }: ContractTests): void {
  describe("bulk dead-letter replays", () => {
    storeTest(
      "replay by filter: the tenant's dead letters dead by deadBefore, oldest first, a batch a step, each at the rate's next slot",
      async (store) => {
        const ids = await deadLetters(store, 5);
        const [late] = await deadLetters(store, 1, { deadFrom: T0 + 10 * SECOND });
        const [theirs] = await deadLetters(store, 1, { tenantId: "t2" });
        const created = await store.replayCreate(bulkReplay({ filter: { deadBefore: T0 + 5 * SECOND } }, { ratePerSecond: 2 }));
        assert.equal(created.state, "RUNNING");
        assert.equal(created.total, null);
        assert.equal(created.replayed, 0);
        assert.deepEqual(
          await store.replayClaim({ owner: "n1", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 10 }).then((r) => r.map((x) => x.replayId)),
          [created.replayId],
        );
        const first = await store.replayStep({
          replayId: created.replayId,
          owner: "n1",
          leaseMs: 10 * SECOND,
          now: REPLAY_AT,
          at: REPLAY_AT,
          limit: 2,
        });
        assert.ok(first);
        assert.deepEqual(first.replayed, [
          { executionId: ids[0], pool: "p1", readyAt: REPLAY_AT },
          { executionId: ids[1], pool: "p1", readyAt: REPLAY_AT + 500 },
        ]);
        assert.equal(first.replay.state, "RUNNING");
        assert.equal(first.replay.replayed, 2);
        assert.equal(first.replay.nextAt, REPLAY_AT + 1000);
        const rest = await driveReplay(store, created.replayId);
        assert.deepEqual(
          rest.replayed.map((r) => [r.executionId, r.readyAt]),
          [
            [ids[2], REPLAY_AT + 1000],
            [ids[3], REPLAY_AT + 1500],
            [ids[4], REPLAY_AT + 2000],
          ],
          "a step before the next slot still spaces by the rate",
        );
        const done = rest.replay;
        assert.equal(done.state, "DONE");
        assert.equal(done.replayed, 5);
        assert.equal(done.skipped, 0);
        assert.equal(done.finishedAt, REPLAY_AT);
        assert.equal(done.owner, null);
        assert.deepEqual(
          (await store.deadLetterList({ tenantId: "t1", limit: 10 })).map((d) => d.executionId),
          [late],
          "a dead letter later than deadBefore is not selected",
        );
        assert.deepEqual(
          (await store.deadLetterList({ tenantId: "t2", limit: 10 })).map((d) => d.executionId),
          [theirs],
        );
        // READY at their slots: the first leasable now, the last only 2 s later.
        assert.equal((await lease(store, REPLAY_AT, { tenantId: "t1" })).length, 1);
        assert.equal((await lease(store, REPLAY_AT + 2000, { tenantId: "t1" })).length, 4);
        assert.equal(
          await store.replayStep({ replayId: created.replayId, owner: "n1", leaseMs: SECOND, now: REPLAY_AT, at: REPLAY_AT, limit: 2 }),
          null,
        );
        const [entry] = await store.auditList({ tenantId: "t1", limit: 10 });
        assert.equal(entry?.action, "dead-letter.replay-bulk");
        assert.equal(entry?.subject, created.replayId);
        assert.equal((await store.auditList({ tenantId: "t1", limit: 10 })).length, 1, "one audit entry for the bulk replay");
      },
    );

    storeTest("replay by filter selects by pool, error class and deadAfter", async (store) => {
      const p1 = await deadLetters(store, 2, { pool: "p1", error: { message: "x", class: "transient" } });
      await deadLetters(store, 1, { pool: "p2", error: { message: "x", class: "transient" } });
      await deadLetters(store, 1, { pool: "p1", error: FATAL, deadFrom: T0 + 3 * SECOND });
      const early = await deadLetters(store, 1, { pool: "p1", error: { message: "x", class: "transient" }, deadFrom: T0 - HOUR });
      const created = await store.replayCreate(bulkReplay({ filter: { pool: "p1", errorClass: "transient", deadAfter: T0, deadBefore: T0 + HOUR } }));
      await store.replayClaim({ owner: "n1", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 10 });
      const { replayed, replay } = await driveReplay(store, created.replayId, { limit: 1 });
      assert.deepEqual(
        replayed.map((r) => r.executionId),
        p1,
      );
      assert.equal(replay.replayed, 2);
      const left = (await store.deadLetterList({ tenantId: "t1", limit: 10 })).map((d) => d.executionId);
      assert.equal(left.length, 3);
      assert.ok(left.includes(early[0]!));
    });

    storeTest(
      "replay by ids: ids no longer dead (replayed meanwhile, another tenant's, unknown) are skipped and counted, the others replayed once",
      async (store) => {
        const [a, c, d] = await deadLetters(store, 3);
        const [theirs] = await deadLetters(store, 1, { tenantId: "t2" });
        const unknown = executionIdFor(newId(T0), T0);
        const created = await store.replayCreate(bulkReplay({ executionIds: [a!, theirs!, c!, unknown, d!] }, { ratePerSecond: 10 }));
        assert.equal(created.total, 5);
        assert.ok(
          await store.deadLetterReplay({
            tenantId: "t1",
            executionId: a!,
            now: REPLAY_AT,
            audit: { tenantId: "t1", at: REPLAY_AT, actor: "x", action: "dead-letter.replay", subject: a! },
          }),
        );
        await store.replayClaim({ owner: "n1", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 10 });
        const { replayed, replay } = await driveReplay(store, created.replayId, { limit: 2 });
        assert.deepEqual(
          replayed.map((r) => [r.executionId, r.readyAt]),
          [
            [c, REPLAY_AT],
            [d, REPLAY_AT + 100],
          ],
        );
        assert.equal(replay.state, "DONE");
        assert.equal(replay.replayed, 2);
        assert.equal(replay.skipped, 3);
        assert.equal((await store.deadLetterList({ tenantId: "t2", limit: 10 })).length, 1, "another tenant's dead letter stays dead");
      },
    );

    storeTest(
      "a step is fenced by the replay's lease: another owner, an expired lease or a cancelled replay answer null and change nothing",
      async (store) => {
        await deadLetters(store, 3);
        const created = await store.replayCreate(bulkReplay({ filter: { deadBefore: REPLAY_AT } }));
        const step = (owner: string, now: number) =>
          store.replayStep({ replayId: created.replayId, owner, leaseMs: 10 * SECOND, now, at: now, limit: 1 });
        assert.equal(await step("n1", REPLAY_AT), null, "not claimed yet");
        assert.equal((await store.replayClaim({ owner: "n1", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 10 })).length, 1);
        assert.deepEqual(await store.replayClaim({ owner: "n2", leaseMs: 10 * SECOND, now: REPLAY_AT + 5 * SECOND, limit: 10 }), [], "held by n1");
        // A clean stop gives the lease up: n2 claims at once, and n1 is fenced out; n2 then gives it back.
        await store.replayRelease({ owner: "n2" });
        assert.deepEqual(
          await store.replayClaim({ owner: "n2", leaseMs: 10 * SECOND, now: REPLAY_AT + SECOND, limit: 10 }),
          [],
          "another owner's release frees nothing",
        );
        await store.replayRelease({ owner: "n1" });
        assert.equal(
          (await store.replayClaim({ owner: "n2", leaseMs: 10 * SECOND, now: REPLAY_AT + SECOND, limit: 10 }))[0]?.owner,
          "n2",
          "released: claimed at once",
        );
        assert.equal(await step("n1", REPLAY_AT + SECOND), null, "the releasing owner is fenced out");
        await store.replayRelease({ owner: "n2" });
        assert.equal((await store.replayClaim({ owner: "n1", leaseMs: 10 * SECOND, now: REPLAY_AT, limit: 10 })).length, 1, "and n1 takes it back");
        assert.equal(await step("n2", REPLAY_AT + 5 * SECOND), null);
        assert.equal((await step("n1", REPLAY_AT + 5 * SECOND))?.replayed.length, 1, "the step extends n1's lease to +15 s");
        assert.deepEqual(await store.replayClaim({ owner: "n2", leaseMs: 10 * SECOND, now: REPLAY_AT + 15 * SECOND, limit: 10 }), []);
        assert.equal(await step("n1", REPLAY_AT + 15 * SECOND + 1), null, "n1's own lease has expired");
        const taken = await store.replayClaim({ owner: "n2", leaseMs: 10 * SECOND, now: REPLAY_AT + 15 * SECOND + 1, limit: 10 });
        assert.equal(taken[0]?.owner, "n2", "an expired lease is taken over");
        assert.equal(taken[0]?.replayed, 1, "progress survives the takeover");
        assert.equal(await step("n1", REPLAY_AT + 16 * SECOND), null, "the old owner is fenced out");
        assert.equal((await step("n2", REPLAY_AT + 16 * SECOND))?.replay.replayed, 2);
        const cancelAudit = {
          tenantId: "t1",
          at: REPLAY_AT + 17 * SECOND,
          actor: "admin-key",
          action: "dead-letter.replay-cancel",
          subject: created.replayId,
        };
        assert.equal(
          await store.replayCancel({ replayId: created.replayId, tenantId: "t2", now: REPLAY_AT + 17 * SECOND, audit: cancelAudit }),
          null,
          "another tenant's",
        );
        const cancelled = await store.replayCancel({
          replayId: created.replayId,
          tenantId: "t1",
          now: REPLAY_AT + 17 * SECOND,
          audit: cancelAudit,
        });
        assert.equal(cancelled?.changed, true);
        assert.equal(cancelled?.replay.state, "CANCELLED");
        assert.equal(cancelled?.replay.finishedAt, REPLAY_AT + 17 * SECOND);
        assert.equal(await step("n2", REPLAY_AT + 18 * SECOND), null, "a cancelled replay goes no further");
        assert.deepEqual(await store.replayClaim({ owner: "n3", leaseMs: SECOND, now: REPLAY_AT + HOUR, limit: 10 }), []);
        assert.equal((await store.deadLetterList({ tenantId: "t1", limit: 10 })).length, 1);
        const again = await store.replayCancel({ replayId: created.replayId, now: REPLAY_AT + 20 * SECOND, audit: cancelAudit });
        assert.equal(again?.changed, false);
        assert.equal(again?.replay.finishedAt, REPLAY_AT + 17 * SECOND);
        assert.equal((await store.auditList({ tenantId: "t1", limit: 10 })).filter((e) => e.action === "dead-letter.replay-cancel").length, 1);
      },
    );

    storeTest("replayGet and replayList are tenant-scoped; the list pages newest first", async (store) => {
      const made: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = bulkReplay({ executionIds: ["x"] });
        r.replay.createdAt = REPLAY_AT + Math.floor(i / 2) * SECOND;
        made.push((await store.replayCreate(r)).replayId);
      }
      const theirs = await store.replayCreate(bulkReplay({ executionIds: ["x"] }, { tenantId: "t2" }));
      assert.equal(await store.replayGet({ replayId: theirs.replayId, tenantId: "t1" }), null);
      assert.equal((await store.replayGet({ replayId: theirs.replayId }))?.tenantId, "t2");
      assert.equal((await store.replayGet({ replayId: made[0]!, tenantId: "t1" }))?.replayId, made[0]);
      const seen: string[] = [];
      let after: { createdAt: number; replayId: string } | undefined;
      for (let page = 0; page < 10; page++) {
        const rows = await store.replayList({ tenantId: "t1", limit: 2, ...(after ? { after } : {}) });
        if (rows.length === 0) break;
        seen.push(...rows.map((r) => r.replayId));
        const last = rows[rows.length - 1]!;
        after = { createdAt: last.createdAt, replayId: last.replayId };
      }
      assert.equal(seen.length, 5);
      assert.deepEqual(new Set(seen), new Set(made));
      const all = await store.replayList({ tenantId: "t1", limit: 10 });
      for (let i = 1; i < all.length; i++) assert.ok(all[i - 1]!.createdAt >= all[i]!.createdAt, "newest first");
    });
  });
}
