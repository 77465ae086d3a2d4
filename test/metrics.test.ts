// Issue 12's metrics, end to end: a real server, a known workload, then a
// scrape of /metrics parsed (test/metrics-text.ts) and checked for values,
// not just names. Guards: the tenant and pool labels of the lag histograms,
// the tenant cap ("_other"), attempts by outcome, dead letters and lease
// expiries by tenant and pool, dispatches per shard, store call latency by
// method, event-loop delay, and the store-backed gauges (ready depth, oldest
// ready age, due backlog, the next minutes' due buckets) with their cache.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseServe } from "../src/cli/serve.js";
import { shardOf } from "../src/core/ids.js";
import { openEngine } from "../src/engine/engine.js";
import { LabelGuard } from "../src/engine/workload-metrics.js";
import { openStore } from "../src/store/factory.js";
import { clientsOf, queueJob, startTestServer, waitFor, type TestServer } from "./helpers.js";
import { find, parseExposition, value, type Exposition } from "./metrics-text.js";

const KEYS = [
  { key: "platform-worker", tenantId: "*", role: "worker" as const },
  { key: "acme-client", tenantId: "acme", role: "client" as const },
  { key: "globex-client", tenantId: "globex", role: "client" as const },
  { key: "initech-client", tenantId: "initech", role: "client" as const },
];

async function scrape(t: TestServer): Promise<Exposition> {
  const res = await fetch(`${t.url}/metrics`);
  assert.equal(res.status, 200);
  return parseExposition(await res.text());
}

/** A histogram's +Inf bucket must equal its count: the exposition is consistent. */
function histogramCount(e: Exposition, name: string, labels: Record<string, string>): number | undefined {
  const count = value(e, `${name}_count`, labels);
  if (count !== undefined) assert.equal(value(e, `${name}_bucket`, { ...labels, le: "+Inf" }), count, `${name} +Inf bucket`);
  return count;
}

test("metrics by tenant and pool after a known workload: start and dispatch lag counts, attempts by outcome, dead letters, lease expiries, dispatches per shard, store calls by method; tenants past --metrics-max-tenants are _other", async () => {
  const t = await startTestServer({ apiKeys: KEYS, metricsMaxTenants: 2 });
  const c = clientsOf(t);
  try {
    const worker = c.as("platform-worker");
    const acme = c.as("acme-client");
    // acme: 5 jobs in "mail"; 3 succeed, 1 fails for good (dead letter), 1 lease expires and succeeds on its second attempt.
    for (let i = 0; i < 5; i++) await acme.createJob(queueJob("mail", { retry: { maxAttempts: 3 } }));
    const long = await worker.lease("mail", { workerId: "w", max: 4, leaseSeconds: 60 });
    assert.equal(long.items.length, 4);
    const short = await worker.lease("mail", { workerId: "w", max: 1, leaseSeconds: 1 });
    assert.equal(short.items.length, 1);
    for (const item of long.items.slice(0, 3)) await worker.complete(item.executionId, item.attempt);
    const doomed = long.items[3]!;
    await worker.fail(doomed.executionId, doomed.attempt, { message: "bad input", class: "permanent" });
    const again = await waitFor(async () => {
      const { items } = await worker.lease("mail", { workerId: "w", max: 1, leaseSeconds: 60 });
      return items[0];
    }, "the expired lease's execution to be leased again");
    assert.equal(again.executionId, short.items[0]!.executionId);
    assert.equal(again.attempt, 2);
    await worker.complete(again.executionId, again.attempt);
    // globex, then initech: one job each; initech is the third tenant seen, past the cap of 2.
    for (const token of ["globex-client", "initech-client"]) {
      await c.as(token).createJob(queueJob("mail"));
      const { items } = await worker.lease("mail", { workerId: "w", max: 1, leaseSeconds: 60 });
      assert.equal(items.length, 1);
      await worker.complete(items[0]!.executionId, items[0]!.attempt);
    }
    // A recurring job of acme's in "tick", every second, until it has been dispatched twice.
    const cron = await acme.createJob({ name: "tick", target: { type: "queue", pool: "tick" }, schedule: { cron: "* * * * * *" } });
    await waitFor(async () => (await acme.listExecutions(cron.jobId)).items.length >= 2, "two dispatches of the recurring job");
    await acme.cancelJob(cron.jobId);
    const dispatched = new Set((await acme.listExecutions(cron.jobId)).items.map((x) => x.executionId)).size;
    assert.ok(dispatched >= 2);

    const tick = { tenant: "acme", pool: "tick" };
    // Dispatch events are emitted after the dispatch commits: wait for the count to reach what the store holds.
    const e = await waitFor(async () => {
      const s = await scrape(t);
      return histogramCount(s, "duetime_dispatch_lag_seconds", tick) === dispatched ? s : null;
    }, `dispatch lag count of acme/tick to reach ${dispatched}`);

    assert.equal(histogramCount(e, "duetime_start_lag_seconds", { tenant: "acme", pool: "mail" }), 5, "first attempts of acme's 5 jobs");
    assert.equal(histogramCount(e, "duetime_start_lag_seconds", { tenant: "globex", pool: "mail" }), 1);
    assert.equal(histogramCount(e, "duetime_start_lag_seconds", { tenant: "_other", pool: "mail" }), 1, "initech, past the cap");
    assert.deepEqual(find(e, "duetime_start_lag_seconds_count", { tenant: "initech" }), []);
    assert.deepEqual(
      [...new Set(e.samples.filter((s) => s.labels.tenant !== undefined).map((s) => s.labels.tenant))].sort(),
      ["_other", "acme", "globex"],
      "no tenant label beyond the cap",
    );

    assert.equal(value(e, "duetime_attempts_total", { outcome: "succeeded" }), 6);
    assert.equal(value(e, "duetime_attempts_total", { outcome: "dead" }), 1);
    assert.equal(value(e, "duetime_attempts_total", { outcome: "timed_out" }), 1);
    assert.equal(value(e, "duetime_dead_letters_total", { tenant: "acme", pool: "mail" }), 1);
    assert.equal(find(e, "duetime_dead_letters_total").length, 1);
    assert.equal(value(e, "duetime_lease_expiries_total", { tenant: "acme", pool: "mail" }), 1);
    assert.equal(find(e, "duetime_lease_expiries_total").length, 1);

    assert.equal(value(e, "duetime_shard_dispatched_total", { shard: String(shardOf(cron.jobId)) }), dispatched);
    assert.equal(find(e, "duetime_shard_dispatched_total").length, 1, "only the recurring job's shard dispatched");

    // 8 creates, each one store call; leases were store calls too.
    assert.equal(histogramCount(e, "duetime_store_operation_duration_seconds", { op: "jobCreateMany" }), 8);
    assert.ok((histogramCount(e, "duetime_store_operation_duration_seconds", { op: "executionLease" }) ?? 0) >= 5);
  } finally {
    await c.close();
    await t.close();
  }
});

test("store-backed gauges: ready depth and oldest ready age per pool (pools past the cap are _other), due backlog and the next minutes' due buckets, read once per cache period", async () => {
  const t = await startTestServer({
    // Every shard is held by a node that is not there, so nothing is dispatched: overdue recurring work stays a backlog.
    openEngine: async (options) => {
      const store = await openStore(options.store, options.storeOptions);
      const all = Array.from({ length: 256 }, (_, i) => i);
      await store.shardAcquire({ owner: "elsewhere", shards: all, leaseMs: 3_600_000 });
      await store.close();
      // The history's depth samples read poolCounts too: not during this test.
      return openEngine({ ...options, metrics: { maxPools: 1 }, workloadHistory: { flushMs: 3_600_000 } });
    },
  });
  try {
    const started = Date.now();
    for (let i = 0; i < 3; i++) await t.client.createJob(queueJob("alpha"));
    for (let i = 0; i < 2; i++) await t.client.createJob(queueJob("beta"));
    await t.client.createJob(queueJob("alpha", { schedule: { delaySeconds: 3600 } })); // pending, not ready
    await t.client.createJob(queueJob("beta", { schedule: { delaySeconds: 150 } })); // pending: a one-off in the third minute ahead
    // Two recurring jobs due in 150 s (the third minute ahead), three every second (overdue at once, never dispatched).
    const at = new Date(Date.now() + 150_000);
    const in150s = `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
    for (let i = 0; i < 2; i++) await t.client.createJob({ name: "later", target: { type: "queue", pool: "alpha" }, schedule: { cron: in150s } });
    for (let i = 0; i < 3; i++)
      await t.client.createJob({ name: "each-second", target: { type: "queue", pool: "alpha" }, schedule: { cron: "* * * * * *" } });
    await new Promise((r) => setTimeout(r, 1_100)); // the each-second jobs' first occurrence is past

    const e = await scrape(t);
    const scrapedAt = Date.now();
    // alpha is the first pool the guard sees: its label; beta is past the cap of 1.
    assert.equal(value(e, "duetime_ready_depth", { pool: "alpha" }), 3);
    assert.equal(value(e, "duetime_ready_depth", { pool: "_other" }), 2);
    assert.equal(find(e, "duetime_ready_depth").length, 2);
    const age = value(e, "duetime_oldest_ready_age_seconds", { pool: "alpha" })!;
    assert.ok(age >= 1 && age <= (scrapedAt - started) / 1000 + 0.5, `oldest ready age ${age}`);
    assert.ok(value(e, "duetime_oldest_ready_age_seconds", { pool: "_other" })! >= 1);
    assert.equal(value(e, "duetime_due_backlog"), 3);
    assert.deepEqual(
      ["1", "2", "3", "4", "5"].map((minute) => value(e, "duetime_due_upcoming", { minute })),
      [0, 0, 3, 0, 0],
      "two recurring occurrences and one one-off due in the third minute",
    );
    assert.equal(value(e, "duetime_due_count_capped"), 0);

    // Within the cache period, more scrapes read nothing from the store and answer the same.
    await t.client.createJob(queueJob("alpha"));
    const again = await scrape(t);
    await scrape(t);
    assert.equal(value(again, "duetime_ready_depth", { pool: "alpha" }), 3, "cached");
    const counted = (x: Exposition) => value(x, "duetime_store_operation_duration_seconds_count", { op: "poolCounts" });
    assert.equal(counted(await scrape(t)), 1, "one poolCounts for four scrapes");
    // After it, the next scrape reads again (within 5 s; a loaded machine's slow reads may stretch it to a minute).
    await waitFor(async () => value(await scrape(t), "duetime_ready_depth", { pool: "alpha" }) === 4, "ready depth 4 after the cache period", 70_000);
  } finally {
    await t.close();
  }
});

test("event-loop delay: a blocked event loop shows in duetime_event_loop_delay_seconds", async () => {
  const t = await startTestServer();
  try {
    // The monitor measures between its own ticks: let it tick once before the block.
    await new Promise((r) => setTimeout(r, 200));
    const blockedUntil = Date.now() + 400;
    while (Date.now() < blockedUntil) {
      // the server shares this process: its event loop is blocked for 400 ms
    }
    const max = await waitFor(
      async () => {
        const v = value(await scrape(t), "duetime_event_loop_delay_seconds", { quantile: "max" }) ?? 0;
        return v >= 0.3 ? v : null;
      },
      "the 400 ms block in the delay's max",
      15_000,
    );
    assert.ok(max < 5, `max ${max}`);
  } finally {
    await t.close();
  }
});

test("cardinality guard: the first N values keep their label, later ones are _other, for ever; --metrics-max-tenants is checked", () => {
  const guard = new LabelGuard(2);
  assert.deepEqual(
    ["a", "b", "c", "a", "d", "b"].map((v) => guard.label(v)),
    ["a", "b", "_other", "a", "_other", "b"],
  );
  assert.equal(parseServe(["--metrics-max-tenants", "5"], {}).options.metricsMaxTenants, 5);
  assert.equal(parseServe([], { DUETIME_METRICS_MAX_TENANTS: "7" }).options.metricsMaxTenants, 7);
  assert.equal(parseServe([], {}).options.metricsMaxTenants, undefined);
  for (const bad of ["0", "10001", "x", "2.5", "-1"]) assert.throws(() => parseServe(["--metrics-max-tenants", bad], {}), /metrics-max-tenants/, bad);
});

test("cardinality guard: openEngine refuses a cap out of range before it opens the store", async () => {
  await assert.rejects(openEngine({ store: "sqlite::memory:", metrics: { maxTenants: 0 } }), /metrics\.maxTenants/);
  await assert.rejects(openEngine({ store: "sqlite::memory:", metrics: { maxPools: 1.5 } }), /metrics\.maxPools/);
});
