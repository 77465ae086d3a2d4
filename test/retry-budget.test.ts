// Retry budgets end to end (engine/retry-budget.ts): against a receiver that
// always answers 503, the retry rate stays within the budget of its origin
// (shared by two tenants), and after the receiver recovers every execution
// completes; a worker pool's retries are held to their tenant's budget the
// same way; the serve flags set the budget or turn it off. Real servers, a
// real receiver on loopback, a real SDK worker.

import assert from "node:assert/strict";
import { test } from "node:test";
import { DuetimeClient, Worker } from "@duetime/sdk";
import { UsageError } from "../src/cli/args.js";
import { main } from "../src/cli/main.js";
import { parseServe } from "../src/cli/serve.js";
import { captureIo } from "../src/cli/test-support.js";
import type { RetryBudgetSettings } from "../src/engine/retry-budget.js";
import { listenOnLoopback, queueJob, startTestServer, waitFor, type TestServer } from "./helpers.js";

interface Call {
  at: number;
  executionId: string;
}

/**
 * The calls that were retries (a later call of an execution already called),
 * and the most the budget lets through between the first and the last call.
 * The budget counts in one-second buckets: over any windowSeconds of
 * consecutive buckets, at most minPerSecond × windowSeconds retries plus
 * ratio × the first attempts of those buckets and of the window before them
 * (each first attempt counts in two such groups at most). The calls span at
 * most their duration + 2 buckets, plus one for the moment between a
 * retry's lease and its arrival here.
 */
function retriesWithin(calls: Call[], budget: RetryBudgetSettings, firstAttempts: number) {
  const seen = new Set<string>();
  let retries = 0;
  for (const c of calls) {
    if (seen.has(c.executionId)) retries++;
    seen.add(c.executionId);
  }
  const spanMs = calls.at(-1)!.at - calls[0]!.at;
  const buckets = Math.ceil(spanMs / 1000) + 3;
  const groups = Math.ceil(buckets / budget.windowSeconds);
  const allowed = groups * budget.minPerSecond * budget.windowSeconds + 2 * budget.ratio * firstAttempts;
  return { retries, allowed, spanMs };
}

/** The value of a counter in a /metrics text (0 when absent). */
async function counter(t: TestServer, series: string): Promise<number> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

/** A receiver that answers 503 while down() says so, 200 after; records each call. */
async function receiver(down: () => boolean) {
  const calls: (Call & { status: number })[] = [];
  const { base, close } = await listenOnLoopback((req, res) => {
    const status = down() ? 503 : 200;
    calls.push({ at: Date.now(), executionId: String(req.headers["duetime-execution-id"]), status });
    req.resume();
    res.writeHead(status).end();
  });
  return {
    url: `${base}/hook`,
    calls,
    close,
  };
}

test("retry budgets: against a receiver that always answers 503, the retry rate stays within its origin's budget; after it recovers every execution completes", {
  timeout: 180_000,
}, async (ctx) => {
  // The origin's budget binds: two tenants call it, each with a budget as large as the origin's.
  const budget: RetryBudgetSettings = { ratio: 0.1, minPerSecond: 10, windowSeconds: 2 };
  const perTenant = 50;
  let down = true;
  const rx = await receiver(() => down);
  const t = await startTestServer({
    apiKeys: [
      { key: "acme", tenantId: "acme", role: "client" },
      { key: "globex", tenantId: "globex", role: "client" },
    ],
    allowTargetHosts: ["127.0.0.1"],
    // The breaker would hold the failing origin's calls back by itself: kept closed, so only the budget limits retries.
    httpTarget: { breaker: { failureThreshold: 1_000_000 } },
    retryBudget: budget,
  });
  const clients = ["acme", "globex"].map((token) => new DuetimeClient({ url: t.url, token, retries: 0 }));
  try {
    for (const client of clients) {
      const created = await client.createJobs(
        Array.from({ length: perTenant }, (_, i) => ({
          name: "hook",
          target: { type: "http" as const, url: rx.url },
          payload: { i },
          schedule: { delaySeconds: 0 },
          // No backoff: without a budget every failure is retried at once.
          retry: { maxAttempts: 1000, backoffSeconds: 0 },
        })),
      );
      assert.equal(created.filter((r) => "jobId" in r).length, perTenant);
    }
    const total = perTenant * clients.length;
    await waitFor(() => new Set(rx.calls.map((c) => c.executionId)).size === total, "every job called once", 30_000);
    // Down for at least three windows, until the budget has deferred retries.
    const firstCall = rx.calls[0]!.at;
    const deferred = async () =>
      (await counter(t, 'duetime_retries_deferred_total{scope="origin"}')) + (await counter(t, 'duetime_retries_deferred_total{scope="tenant"}'));
    await waitFor(
      async () => Date.now() - firstCall >= 3 * budget.windowSeconds * 1000 && (await deferred()) > 0,
      "three windows of 503s, and retries deferred",
      60_000,
    );
    const downCalls = rx.calls.length;
    down = false;
    const whileDown = retriesWithin(rx.calls.slice(0, downCalls), budget, total);
    assert.ok(whileDown.retries > 0, "retries went through while the receiver was down");

    // Recovery: the retries waiting their turn run, still within the budget, and every job completes.
    const completed = async () => {
      let n = 0;
      for (const client of clients) n += (await client.listJobs({ state: "COMPLETED", limit: 500 })).items.length;
      return n === total;
    };
    await waitFor(completed, `all ${total} jobs completed`, 120_000);
    const all = retriesWithin(rx.calls, budget, total);
    ctx.diagnostic(
      `${whileDown.retries} retries while down (${whileDown.spanMs} ms, allowed ${whileDown.allowed}); ${all.retries} in all over ${all.spanMs} ms (allowed ${all.allowed})`,
    );
    assert.ok(all.retries <= all.allowed, `${all.retries} retries in ${all.spanMs} ms: the budget allows ${all.allowed}`);
    assert.ok(whileDown.retries <= whileDown.allowed, `while down: ${whileDown.retries} retries, allowed ${whileDown.allowed}`);
    assert.ok((await counter(t, 'duetime_retries_deferred_total{scope="origin"}')) > 0, "the origin's budget deferred retries");

    const succeeded = new Set(rx.calls.filter((c) => c.status === 200).map((c) => c.executionId));
    assert.equal(succeeded.size, total, "every execution succeeded at the receiver");
    for (const client of clients) {
      assert.deepEqual((await client.listDeadLetters()).items, [], "no execution dead");
      const jobs = (await client.listJobs({ limit: 500 })).items;
      assert.equal(jobs.length, perTenant);
      assert.deepEqual(new Set(jobs.map((j) => j.state)), new Set(["COMPLETED"]));
    }
    assert.ok((await counter(t, "duetime_retries_leased_total")) >= all.retries);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await t.close();
    await rx.close();
  }
});

test("retry budgets: a worker pool's retries are held to their tenant's budget, and all complete once the handler recovers", {
  timeout: 180_000,
}, async (ctx) => {
  const budget: RetryBudgetSettings = { ratio: 0.1, minPerSecond: 5, windowSeconds: 2 };
  const jobs = 40;
  let down = true;
  const calls: Call[] = [];
  const t = await startTestServer({ retryBudget: budget });
  const worker = new Worker({
    url: t.url,
    pool: "flaky",
    concurrency: 20,
    waitSeconds: 1,
    handleSignals: false,
    logger: null,
    handler: async (job) => {
      calls.push({ at: Date.now(), executionId: job.executionId });
      if (down) throw new Error("the dependency is down");
    },
  });
  const running = worker.run();
  try {
    const created = await t.client.createJobs(
      Array.from({ length: jobs }, (_, i) => queueJob("flaky", { payload: { i }, retry: { maxAttempts: 1000, backoffSeconds: 0 } })),
    );
    assert.equal(created.filter((r) => "jobId" in r).length, jobs);
    await waitFor(() => new Set(calls.map((c) => c.executionId)).size === jobs, "every job ran once", 30_000);
    const firstCall = calls[0]!.at;
    await waitFor(
      async () =>
        Date.now() - firstCall >= 3 * budget.windowSeconds * 1000 && (await counter(t, 'duetime_retries_deferred_total{scope="tenant"}')) > 0,
      "three windows of failures, and retries deferred by the tenant's budget",
      60_000,
    );
    down = false;
    await waitFor(
      async () => (await t.client.listJobs({ state: "COMPLETED", limit: 500 })).items.length === jobs,
      `all ${jobs} jobs completed`,
      120_000,
    );
    const { retries, allowed, spanMs } = retriesWithin(calls, budget, jobs);
    ctx.diagnostic(`${retries} retries over ${spanMs} ms (allowed ${allowed})`);
    assert.ok(retries > 0);
    assert.ok(retries <= allowed, `${retries} retries in ${spanMs} ms: the budget allows ${allowed}`);
    assert.deepEqual((await t.client.listDeadLetters()).items, [], "no execution dead");
    assert.equal(await counter(t, 'duetime_retries_deferred_total{scope="origin"}'), 0, "no origin in a worker pool");
  } finally {
    await worker.shutdown();
    await running;
    await t.close();
  }
});

test("retry budgets: the serve flags set the budget, 'off' turns it off, and a bad value names its flag (exit 2)", async () => {
  assert.equal(parseServe([], {}).options.retryBudget, undefined);
  assert.deepEqual(
    parseServe(["--retry-budget-ratio", "0.5", "--retry-budget-window-seconds", "30"], { DUETIME_RETRY_BUDGET_MIN_PER_SECOND: "2.5" }).options
      .retryBudget,
    { ratio: 0.5, minPerSecond: 2.5, windowSeconds: 30 },
  );
  assert.equal(parseServe([], { DUETIME_RETRY_BUDGET_RATIO: "off" }).options.retryBudget, false);
  assert.deepEqual(parseServe(["--retry-budget-ratio", "0"], { DUETIME_RETRY_BUDGET_RATIO: "off" }).options.retryBudget, { ratio: 0 }, "a flag wins");
  const bad: [string[], RegExp][] = [
    [["--retry-budget-ratio=-1"], /--retry-budget-ratio: expected a number from 0 to 100, or "off", got "-1"/],
    [["--retry-budget-ratio", ""], /--retry-budget-ratio: expected a number/],
    [["--retry-budget-min-per-second", "lots"], /--retry-budget-min-per-second: expected a number from 0/],
    [["--retry-budget-window-seconds", "0"], /--retry-budget-window-seconds: expected an integer from 1 to 60, got "0"/],
    [["--retry-budget-window-seconds", "2.5"], /--retry-budget-window-seconds: expected an integer/],
    [
      ["--retry-budget-ratio", "off", "--retry-budget-window-seconds", "5"],
      /--retry-budget-window-seconds: retry budgets are off \(--retry-budget-ratio off\)/,
    ],
  ];
  for (const [args, message] of bad)
    assert.throws(
      () => parseServe(args, {}),
      (err: unknown) => err instanceof UsageError && message.test(err.message),
      args.join(" "),
    );
  assert.throws(() => parseServe([], { DUETIME_RETRY_BUDGET_WINDOW_SECONDS: "61" }), /DUETIME_RETRY_BUDGET_WINDOW_SECONDS: expected an integer/);
  const io = captureIo();
  assert.equal(await main(["serve", "--retry-budget-ratio", "many"], io), 2);
  assert.match(io.err, /--retry-budget-ratio/);
});
