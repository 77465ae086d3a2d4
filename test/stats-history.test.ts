// GET /v1/stats/history end to end: a real server, a known workload through
// the worker protocol, then the per-minute history read back per pool and
// per tenant: attempts started, succeeded, failed and dead-lettered, start
// lag percentiles, and the sampled queue depth; a tenant's key sees its own
// tenant only, and a `since` past the day kept is refused naming the field.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { StatsHistory, StatsSeries } from "@duetime/sdk";
import { openEngine } from "../src/engine/engine.js";
import { clientsOf, queueJob, startTestServer, waitFor } from "./helpers.js";

const KEYS = [
  { key: "platform-worker", tenantId: "*", role: "worker" as const },
  { key: "acme-worker", tenantId: "acme", role: "worker" as const },
  { key: "acme-client", tenantId: "acme", role: "client" as const },
  { key: "globex-client", tenantId: "globex", role: "client" as const },
];

const sum = (xs: readonly (number | null)[]): number => xs.reduce<number>((a, b) => a + (b ?? 0), 0);
const last = <T>(xs: readonly T[]): T | undefined => xs[xs.length - 1];

test("the history sums each minute's attempts per pool and per tenant, with start-lag percentiles and the sampled depth; a tenant's key sees its own", async () => {
  // The history written every 100 ms rather than 10 s.
  const t = await startTestServer({ apiKeys: KEYS, openEngine: (options) => openEngine({ ...options, workloadHistory: { flushMs: 100 } }) });
  const c = clientsOf(t);
  try {
    const worker = c.as("platform-worker");
    // acme: 4 jobs in "mail" (3 succeed, 1 dead-letters) and 2 left queued in "sms"; globex: 1 in "mail", succeeds.
    for (let i = 0; i < 4; i++) await c.as("acme-client").createJob(queueJob("mail", { retry: { maxAttempts: 1 } }));
    for (let i = 0; i < 2; i++) await c.as("acme-client").createJob(queueJob("sms"));
    await c.as("globex-client").createJob(queueJob("mail"));
    const { items } = await worker.lease("mail", { workerId: "w", max: 10, leaseSeconds: 60 });
    assert.equal(items.length, 5);
    const [doomed, ...rest] = items;
    await worker.fail(doomed!.executionId, doomed!.attempt, { message: "bad input", class: "permanent" });
    for (const item of rest) await worker.complete(item.executionId, item.attempt);

    const byPool = await waitFor(async () => {
      const h = await worker.statsHistory({ by: "pool" });
      const mail = h.series.mail;
      return mail && sum(mail.succeeded) === 4 && sum(mail.dead) === 1 && last(h.series.sms?.queued ?? []) === 2 ? h : null;
    }, "the history to show the workload");
    const mail = byPool.series.mail as StatsSeries;
    assert.equal(byPool.by, "pool");
    assert.ok(byPool.minutes.length >= 60 && byPool.minutes.length <= 62, `an hour of minutes, got ${byPool.minutes.length}`);
    for (const s of Object.values(byPool.series))
      for (const xs of [s.started, s.queued, s.startLagMs.p50]) assert.equal(xs.length, byPool.minutes.length);
    assert.deepEqual([sum(mail.started), sum(mail.succeeded), sum(mail.failed), sum(mail.dead)], [5, 4, 1, 1]);
    // Minutes before the workload have no starts, so no lag; a minute with starts has ordered percentiles.
    assert.equal(mail.startLagMs.p50[0], null);
    const i = mail.started.findIndex((n) => n > 0);
    const [p50, p90, p99] = [mail.startLagMs.p50[i] ?? null, mail.startLagMs.p90[i] ?? null, mail.startLagMs.p99[i] ?? null];
    assert.ok(p50 !== null && p90 !== null && p99 !== null, `percentiles of minute ${i}`);
    assert.ok(p50 >= 0 && p50 <= p90 && p90 <= p99, `ordered percentiles ${p50} ${p90} ${p99}`);
    // Depth: sms holds its two queued jobs; nothing runs.
    assert.equal(last(byPool.series.sms!.queued), 2);
    assert.equal(last(byPool.series.sms!.running), 0);

    const byTenant = await worker.statsHistory({ by: "tenant" });
    assert.deepEqual(Object.keys(byTenant.series).sort(), ["acme", "globex"]);
    assert.deepEqual([sum(byTenant.series.acme!.started), sum(byTenant.series.acme!.dead)], [4, 1]);
    assert.deepEqual([sum(byTenant.series.globex!.started), sum(byTenant.series.globex!.succeeded)], [1, 1]);

    const own: StatsHistory = await c.as("acme-worker").statsHistory({ by: "tenant" });
    assert.deepEqual(Object.keys(own.series), ["acme"]);
    const ownPools = await c.as("acme-worker").statsHistory({ by: "pool" });
    assert.equal(sum(ownPools.series.mail!.started), 4, "globex's attempt is not in acme's mail series");

    const since = new Date(Date.now() - 10 * 60_000).toISOString();
    const recent = await worker.statsHistory({ since });
    assert.ok(recent.minutes.length >= 10 && recent.minutes.length <= 12, `ten minutes, got ${recent.minutes.length}`);
  } finally {
    await c.close();
    await t.close();
  }
});

test("a since past the day kept, or in the future, is 400 INVALID_ARGUMENT naming since", async () => {
  const t = await startTestServer({ apiKeys: KEYS });
  try {
    for (const since of [new Date(Date.now() - 25 * 3_600_000).toISOString(), new Date(Date.now() + 3_600_000).toISOString(), "yesterday"]) {
      const res = await fetch(`${t.url}/v1/stats/history?since=${encodeURIComponent(since)}`, {
        headers: { authorization: "Bearer platform-worker" },
      });
      assert.equal(res.status, 400, since);
      const body = (await res.json()) as { error: { code: string; message: string; details?: { field?: string } } };
      assert.equal(body.error.code, "INVALID_ARGUMENT");
      assert.match(JSON.stringify(body.error), /since/);
    }
    const client = await fetch(`${t.url}/v1/stats/history`, { headers: { authorization: "Bearer acme-client" } });
    assert.equal(client.status, 403, "the history is the workers' and admins', as /v1/stats is");
  } finally {
    await t.close();
  }
});
