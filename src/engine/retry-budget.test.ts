// Retry budgets: the pure budget on fake times (the formula, the ratio, all
// keys or none, the sliding window, when a deferred retry comes back, idle
// keys forgotten), and the executor applying it to what the store grants,
// with a fake clock and a real SQLite store: a retry over its tenant's budget
// is handed back unused (no attempt spent) and runs once the budget has room;
// a first attempt handed back by release() is still a first attempt.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { openEngine } from "./engine.js";
import type { EngineEventMap } from "./events.js";
import { RetryBudget, type RetryBudgetSettings } from "./retry-budget.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const K = ["tenant:a"];

/** Takes retries under keys at now until one is refused; how many passed, and the refusal. */
function takeAll(budget: RetryBudget, keys: string[], now: number) {
  for (let passed = 0; passed < 10_000; passed++) {
    const d = budget.take(keys, now);
    if (!d.ok) return { passed, refusal: d };
  }
  throw new Error("the budget never refused");
}

test("retry budget: a retry passes while retries + 1 <= minPerSecond × window + ratio × first attempts in the window (the ratio counts)", () => {
  const budget = new RetryBudget({ ratio: 0.5, minPerSecond: 1, windowSeconds: 10 });
  assert.equal(takeAll(budget, K, T0).passed, 10, "no first attempts: the floor, 1/s over 10 s");
  const other = ["tenant:b"];
  for (let i = 0; i < 40; i++) budget.first(other, T0);
  assert.equal(takeAll(budget, other, T0).passed, 10 + 20, "40 first attempts add 0.5 × 40");
  const noFloor = new RetryBudget({ ratio: 0.1, minPerSecond: 0, windowSeconds: 5 });
  for (let i = 0; i < 25; i++) noFloor.first(K, T0);
  assert.equal(takeAll(noFloor, K, T0).passed, 2, "0.1 × 25 = 2.5: two retries");
});

test("retry budget: ratio 0 and minPerSecond 0 let no retry through, however many first attempts", () => {
  const budget = new RetryBudget({ ratio: 0, minPerSecond: 0, windowSeconds: 10 });
  for (let i = 0; i < 1000; i++) budget.first(K, T0);
  const d = budget.take(K, T0);
  assert.equal(d.ok, false);
  assert.ok(!d.ok && d.at >= T0 + 1000, "told to look again later, not at once");
});

test("retry budget: a retry takes from every key or from none", () => {
  const budget = new RetryBudget({ ratio: 0, minPerSecond: 1, windowSeconds: 2 }); // 2 retries a window per key
  assert.deepEqual(budget.take(["tenant:a", "origin:x"], T0), { ok: true });
  assert.deepEqual(budget.take(["tenant:a", "origin:x"], T0), { ok: true });
  // tenant:b has room, origin:x has none: refused by the origin, and tenant:b's budget is untouched.
  const refused = budget.take(["tenant:b", "origin:x"], T0);
  assert.equal(refused.ok, false);
  assert.equal(!refused.ok && refused.key, "origin:x");
  assert.equal(takeAll(budget, ["tenant:b"], T0).passed, 2);
  assert.equal(budget.take(["tenant:a"], T0).ok, false);
});

test("retry budget: the window slides by the second; a refusal says when the oldest retry leaves it", () => {
  const budget = new RetryBudget({ ratio: 0, minPerSecond: 1, windowSeconds: 3 }); // 3 a window
  assert.equal(budget.take(K, T0 + 200).ok, true); // second 0
  assert.equal(budget.take(K, T0 + 1500).ok, true); // second 1
  assert.equal(budget.take(K, T0 + 2100).ok, true); // second 2
  const refused = budget.take(K, T0 + 2500);
  assert.deepEqual(refused, { ok: false, at: T0 + 3000, key: "tenant:a" }, "second 0 leaves the window at 3 s");
  assert.equal(budget.take(K, T0 + 2999).ok, false);
  assert.equal(budget.take(K, T0 + 3000).ok, true, "room again once second 0 has left");
  assert.equal(budget.take(K, T0 + 3001).ok, false);
  // First attempts leave the window too: their share goes with them.
  const ratio = new RetryBudget({ ratio: 1, minPerSecond: 0, windowSeconds: 2 });
  ratio.first(K, T0);
  assert.equal(ratio.take(K, T0 + 1000).ok, true);
  ratio.first(K, T0 + 1000);
  assert.equal(ratio.take(K, T0 + 2000).ok, false, "the first attempt of second 0 has left; the one left is spent");
});

test("retry budget: deferred retries are told to come back one after another, at the budget's pace", () => {
  const budget = new RetryBudget({ ratio: 0, minPerSecond: 2, windowSeconds: 5 }); // 10 a window: one every 500 ms
  const { passed, refusal } = takeAll(budget, K, T0);
  assert.equal(passed, 10);
  const ats = [refusal.at - T0];
  for (let i = 0; i < 3; i++) {
    const d = budget.take(K, T0 + 100);
    assert.ok(!d.ok);
    ats.push(d.at - T0);
  }
  assert.deepEqual(ats, [5000, 5500, 6000, 6500], "the first when the window frees a retry, the next 500 ms apart");
  // Once the backlog's slots have passed, a refusal is again about the window.
  const later = takeAll(budget, K, T0 + 20_000);
  assert.equal(later.passed, 10);
  assert.equal(later.refusal.at, T0 + 25_000);
  // Whole milliseconds, whatever the pace (stores keep times as integers).
  const thirds = new RetryBudget({ ratio: 0, minPerSecond: 1.5, windowSeconds: 2 }); // 3 a window: one every 666.7 ms
  takeAll(thirds, K, T0);
  const next = [thirds.take(K, T0), thirds.take(K, T0)].map((d) => (d.ok ? Number.NaN : d.at - T0));
  assert.deepEqual(next, [2667, 3334]);
});

test("retry budget: keys whose window has emptied are forgotten", () => {
  const budget = new RetryBudget({ windowSeconds: 2 });
  for (let i = 0; i < 1000; i++) budget.first([`tenant:t${i}`, `origin:http://h${i}:80`], T0);
  assert.equal(budget.keyCount, 2000);
  budget.first(["tenant:late"], T0 + 3000);
  assert.equal(budget.keyCount, 1);
  // A key with deferred retries still to come back is kept until their slots pass.
  const held = new RetryBudget({ ratio: 0, minPerSecond: 0.1, windowSeconds: 2 });
  held.take(K, T0);
  for (let i = 0; i < 5; i++) held.take(K, T0);
  held.first(["tenant:other"], T0 + 5000);
  assert.equal(held.keyCount, 2);
});

test("retry budget: bad settings are refused, naming the field", () => {
  assert.throws(() => new RetryBudget({ ratio: -0.1 }), /retryBudget\.ratio: expected a number from 0/);
  assert.throws(() => new RetryBudget({ minPerSecond: Number.NaN }), /retryBudget\.minPerSecond/);
  assert.throws(() => new RetryBudget({ windowSeconds: 1.5 }), /retryBudget\.windowSeconds: expected an integer from 1 to 60/);
  assert.throws(() => new RetryBudget({ windowSeconds: 0 }), /windowSeconds/);
  assert.deepEqual(new RetryBudget().settings, { ratio: 0.2, minPerSecond: 10, windowSeconds: 10 });
});

// ---- the executor ---------------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), "duetime-retry-budget-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

async function setup(retryBudget: Partial<RetryBudgetSettings>) {
  const clock = new FakeClock(T0);
  const engine = await openEngine({ store: `sqlite:${join(dir, `b${n++}.db`)}`, clock, nodeId: "node-x", httpTargets: false, retryBudget });
  await engine.start();
  const deferred: EngineEventMap["retry:deferred"][] = [];
  engine.events.on("retry:deferred", (e) => deferred.push(e));
  const lease = async (max = 10) => (await engine.service.lease(ctx, "p", { workerId: "w", max })).items;
  const create = (count: number) =>
    engine.service.createJobs(
      ctx,
      Array.from({ length: count }, (_, i) => ({
        name: `j${i}`,
        target: { type: "queue" as const, pool: "p" },
        schedule: { delaySeconds: 0 },
        retry: { maxAttempts: 2, backoffSeconds: 0 },
      })),
    );
  return { clock, engine, deferred, lease, create };
}

test("executor: a queue pool's retries over their tenant's budget are handed back unused, counted, and run once it has room", async () => {
  // 1 retry a 10 s window; 2 attempts per job: a deferral that spent an attempt would leave nothing to run.
  const { clock, engine, deferred, lease, create } = await setup({ ratio: 0, minPerSecond: 0.1, windowSeconds: 10 });
  try {
    await create(3);
    const firsts = await lease();
    assert.equal(firsts.length, 3, "first attempts are never held back");
    for (const item of firsts) await engine.service.fail(ctx, item.executionId, item.attempt, { message: "boom", class: "transient" });

    const retries = await lease();
    assert.equal(retries.length, 1, "one retry fits the budget");
    assert.equal(deferred.length, 2);
    assert.deepEqual(new Set(deferred.map((d) => d.scope)), new Set(["tenant"]));
    assert.equal(deferred[0]!.readyAt, T0 + 10_000, "back when the admitted retry leaves the window");
    assert.equal(deferred[1]!.readyAt, T0 + 20_000, "the next one a window later: the budget's pace");
    assert.match(await engine.metricsText(), /duetime_retries_deferred_total\{scope="tenant"\} 2\b/);
    assert.match(await engine.metricsText(), /duetime_retries_leased_total 1\b/);
    assert.deepEqual(await lease(), [], "the deferred retries wait");
    await engine.service.complete(ctx, retries[0]!.executionId, retries[0]!.attempt, undefined);

    clock.advance(10_000);
    const second = await lease();
    assert.equal(second.length, 1);
    assert.equal(second[0]!.executionId, deferred[0]!.executionId);
    await engine.service.complete(ctx, second[0]!.executionId, second[0]!.attempt, undefined);
    clock.advance(10_000);
    const third = await lease();
    assert.equal(third.length, 1);
    await engine.service.complete(ctx, third[0]!.executionId, third[0]!.attempt, undefined);

    const jobs = (await engine.service.listJobs(ctx, {})).items;
    assert.equal(jobs.length, 3);
    assert.deepEqual(
      jobs.map((j) => j.state),
      ["COMPLETED", "COMPLETED", "COMPLETED"],
      "every job completed on its second counted attempt",
    );
    assert.equal((await engine.service.listDeadLetters(ctx, {})).items.length, 0);
  } finally {
    await engine.stop();
  }
});

test("executor: a long poll whose grant was all over budget keeps waiting, and gets the retry when the budget has room", async () => {
  const { clock, engine, deferred, lease, create } = await setup({ ratio: 0, minPerSecond: 0.1, windowSeconds: 10 });
  try {
    await create(2);
    for (const item of await lease()) await engine.service.fail(ctx, item.executionId, item.attempt, { message: "boom", class: "transient" });
    assert.equal((await lease(1)).length, 1, "the window's one retry");
    const polling = engine.service.lease(ctx, "p", { workerId: "w", max: 1, waitSeconds: 30 });
    let answered = false;
    void polling.then(() => (answered = true));
    /** Lets the event loop turn until done() or 200 turns have passed: a missing wake-up fails the assertion after it, not the test's timeout. */
    const turnsUntil = async (done: () => boolean) => {
      for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setImmediate(r));
    };
    await turnsUntil(() => deferred.length > 0);
    assert.equal(deferred.length, 1, "the long poll's grant was handed back");
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.equal(answered, false, "an empty answer is not given early: the poll waits");
    clock.advance(10_000);
    await turnsUntil(() => answered);
    assert.equal(answered, true, "the poll is answered once the deferred retry's budget has room, long before its 30 s");
    const { items } = await polling;
    assert.equal(items.length, 1, "the retry, once its budget had room");
    assert.equal(items[0]!.executionId, deferred[0]!.executionId);
  } finally {
    await engine.stop();
  }
});

test("executor: a first attempt handed back unused (release) is still a first attempt when granted again, outside the retry budget", async () => {
  const { engine, deferred, lease, create } = await setup({ ratio: 0, minPerSecond: 0 }); // no retry ever passes
  try {
    await create(1);
    const [first] = await lease();
    assert.equal(first!.attempt, 1);
    await engine.executor.release([{ executionId: first!.executionId, tenantId: first!.tenantId, attempt: 1, readyAt: T0, pool: "p" }]);
    const [again] = await lease();
    assert.equal(again?.attempt, 2, "the store's attempt number grew");
    await engine.executor.release([{ executionId: again!.executionId, tenantId: again!.tenantId, attempt: 2, readyAt: T0, pool: "p" }]);
    const [third] = await lease();
    assert.equal(third?.attempt, 3, "handed back twice, still a first attempt");
    assert.equal(deferred.length, 0);
    await engine.service.fail(ctx, third!.executionId, third!.attempt, { message: "boom", class: "transient" });
    assert.deepEqual(await lease(), [], "its retry is held to the budget, which lets none through");
    assert.equal(deferred.length, 1);
  } finally {
    await engine.stop();
  }
});
