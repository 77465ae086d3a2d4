// Tenants share fairly, end to end (issue 11): one tenant's flood does not
// delay another tenant's work, in the server's own HTTP-target pool and in a
// queue pool leased by a platform worker (a key for tenant "*"); weights
// share a pool in proportion; platform keys and tenants' limits follow their
// rules over HTTP. Real servers, real receivers, real workers.

import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { type DuetimeClient, Worker } from "@duetime/sdk";
import type { BatchCreateItem, LeasedExecution } from "@duetime/sdk/contract";
import { apiError, clientsOf, listenOnLoopback, queueJob, startTestServer, waitFor } from "./helpers.js";

const KEYS = [
  { key: "platform-worker", tenantId: "*", role: "worker" as const },
  { key: "platform-admin", tenantId: "*", role: "admin" as const },
  { key: "flood-client", tenantId: "flood", role: "client" as const },
  { key: "quiet-client", tenantId: "quiet", role: "client" as const },
];
const NO_LIMITS = {
  weight: 1,
  maxPendingJobs: null,
  createRatePerSecond: null,
  dispatchRatePerSecond: null,
  maxLeasedAttempts: null,
  maxPayloadBytes: null,
};
/** The seeds' promise: the other tenants' work starts within 2 s of its due time, whatever one tenant floods. */
const START_WITHIN_MS = 2_000;

/** Creates n jobs in batches of 1000. */
async function createMany(client: DuetimeClient, n: number, make: (i: number) => BatchCreateItem): Promise<void> {
  for (let from = 0; from < n; from += 1000) {
    const results = await client.createJobs(Array.from({ length: Math.min(1000, n - from) }, (_, i) => make(from + i)));
    assert.ok(
      results.every((r) => "jobId" in r),
      JSON.stringify(results.find((r) => !("jobId" in r))),
    );
  }
}

/** An HTTP receiver that answers 200 after delayMs, recording each call's job (from its Idempotency-Key, `<jobId>:<scheduledFor>`) and arrival. */
async function receiver(delayMs: number) {
  const calls: { jobId: string; at: number }[] = [];
  const { base, close } = await listenOnLoopback((req, res) => {
    calls.push({ jobId: String(req.headers["idempotency-key"]).split(":")[0] as string, at: Date.now() });
    req.resume();
    setTimeout(() => {
      res.writeHead(200);
      res.end("ok");
    }, delayMs);
  });
  return {
    url: `${base}/hook`,
    calls,
    close,
  };
}

test("HTTP targets: a tenant's flood to a slow receiver does not delay another tenant's calls", async (ctx) => {
  const slow = await receiver(200);
  const fast = await receiver(0);
  const t = await startTestServer({ apiKeys: KEYS, allowTargetHosts: ["127.0.0.1"] });
  const { as, close } = clientsOf(t);
  try {
    await createMany(as("flood-client"), 5_000, (i) => ({
      name: "flood",
      target: { type: "http", url: slow.url },
      payload: { i },
      schedule: { delaySeconds: 0 },
    }));
    await waitFor(() => slow.calls.length >= 50, "the flood is being called");
    const quiet = as("quiet-client");
    const dueAt = Date.now() + 1_000;
    const jobs = await quiet.createJobs(
      Array.from({ length: 50 }, (_, i) => ({
        name: "quiet",
        target: { type: "http" as const, url: fast.url },
        payload: { i },
        schedule: { runAt: new Date(dueAt).toISOString() },
      })),
    );
    const ids = new Set(jobs.map((j) => ("jobId" in j ? j.jobId : "")));
    await waitFor(() => fast.calls.length >= 50, "the quiet tenant's 50 calls", 30_000);
    const lags = fast.calls.map((c) => c.at - dueAt).sort((a, b) => a - b);
    ctx.diagnostic(`quiet calls: ${lags[0]}..${lags.at(-1)} ms after due, while ${slow.calls.length} of the flood's 5,000 were called`);
    assert.ok(lags.at(-1)! <= START_WITHIN_MS, `every quiet call within ${START_WITHIN_MS} ms of its due time; lags ${lags.join(",")} ms`);
    assert.deepEqual(new Set(fast.calls.map((c) => c.jobId)), ids, "each quiet job called");
    assert.equal(new Set(fast.calls.map((c) => c.jobId)).size, fast.calls.length, "no quiet job called twice");
    assert.equal(new Set(slow.calls.map((c) => c.jobId)).size, slow.calls.length, "no flood job called twice");
    assert.ok(slow.calls.length < 5_000, "the flood was still being called when the quiet tenant's work was done");
  } finally {
    await close();
    await t.close();
    await slow.close();
    await fast.close();
  }
});

test("a shared worker pool: a platform worker serves a tenant's 20,000 queued jobs and another tenant's work on time", async (ctx) => {
  const t = await startTestServer({ apiKeys: KEYS });
  const { as, close } = clientsOf(t);
  const started = new Map<string, { tenantId: string; lagMs: number; times: number }>();
  const worker = new Worker({
    url: t.url,
    token: "platform-worker",
    pool: "shared",
    concurrency: 50,
    waitSeconds: 1,
    handleSignals: false,
    logger: null,
    handler: async (job: LeasedExecution) => {
      const seen = started.get(job.jobId);
      started.set(job.jobId, { tenantId: job.tenantId, lagMs: Date.now() - Date.parse(job.scheduledFor), times: (seen?.times ?? 0) + 1 });
      if (job.tenantId === "flood") await sleep(20);
    },
  });
  const running = worker.run();
  try {
    await createMany(as("flood-client"), 20_000, (i) => queueJob("shared", { name: "flood", payload: { i } }));
    await waitFor(() => started.size >= 500, "the flood is being worked");
    const dueAt = Date.now() + 1_000;
    const jobs = await as("quiet-client").createJobs(
      Array.from({ length: 50 }, (_, i) => queueJob("shared", { name: "quiet", payload: { i }, schedule: { runAt: new Date(dueAt).toISOString() } })),
    );
    const quietIds = jobs.map((j) => ("jobId" in j ? j.jobId : ""));
    await waitFor(() => quietIds.every((id) => started.has(id)), "the quiet tenant's 50 jobs started", 30_000);
    const quiet = quietIds.map((id) => started.get(id)!);
    assert.ok(
      quiet.every((s) => s.tenantId === "quiet"),
      "leased items name their tenant",
    );
    const lags = quiet.map((s) => s.lagMs).sort((a, b) => a - b);
    assert.ok(lags.at(-1)! <= START_WITHIN_MS, `every quiet job started within ${START_WITHIN_MS} ms of its due time; lags ${lags.join(",")} ms`);
    const flood = [...started.values()].filter((s) => s.tenantId === "flood").length;
    ctx.diagnostic(`quiet starts: ${lags[0]}..${lags.at(-1)} ms after due, while ${flood} of the flood's 20,000 had started`);
    assert.ok(flood < 20_000, `the flood (${flood} started) was still queued when the quiet tenant's work was done`);
    assert.ok(
      [...started.values()].every((s) => s.times === 1),
      "no job ran twice",
    );
  } finally {
    await worker.shutdown();
    await running;
    await close();
    await t.close();
  }
});

test("weights: with both tenants backlogged, a platform worker's leases follow their 3:1 weights", async () => {
  const t = await startTestServer({ apiKeys: KEYS });
  const { as, close } = clientsOf(t);
  try {
    const admin = as("platform-admin");
    assert.deepEqual(await admin.putTenantLimits("flood", { weight: 3 }), { tenantId: "flood", ...NO_LIMITS, weight: 3 });
    await createMany(as("flood-client"), 1_000, (i) => queueJob("weighted", { payload: { i } }));
    await createMany(as("quiet-client"), 1_000, (i) => queueJob("weighted", { payload: { i } }));
    const platform = as("platform-worker");
    const counts: Record<string, number> = {};
    for (let i = 0; i < 10; i++) {
      const { items } = await platform.lease("weighted", { workerId: "w", max: 40 });
      for (const item of items) counts[item.tenantId] = (counts[item.tenantId] ?? 0) + 1;
    }
    assert.equal((counts.flood ?? 0) + (counts.quiet ?? 0), 400);
    const ratio = (counts.flood ?? 0) / (counts.quiet ?? 1);
    assert.ok(Math.abs(ratio - 3) <= 0.3, `3:1 within 10%, got ${JSON.stringify(counts)}`);
  } finally {
    await close();
    await t.close();
  }
});

test("platform keys act for every tenant only where that makes sense; tenants' limits are read by their admin and set by a platform admin", async () => {
  const t = await startTestServer({ apiKeys: KEYS });
  const { as, close } = clientsOf(t);
  try {
    const platform = as("platform-worker");
    const refused = await apiError(platform.createJob(queueJob("p")));
    assert.equal(refused.status, 403);
    assert.equal(refused.code, "PERMISSION_DENIED");
    assert.equal((await apiError(as("platform-admin").listJobs())).status, 403);

    // A platform worker acknowledges any tenant's attempt; a tenant's own key sees only its own.
    const job = await as("quiet-client").createJob(queueJob("acks"));
    const { items } = await platform.lease("acks", { workerId: "w", max: 5 });
    assert.deepEqual(
      items.map((i) => [i.jobId, i.tenantId]),
      [[job.jobId, "quiet"]],
    );
    await platform.heartbeat(items[0]!.executionId, { attempt: 1 });
    assert.deepEqual(await platform.complete(items[0]!.executionId, 1, { ok: true }), { state: "SUCCEEDED" });
    assert.equal((await as("quiet-client").getJob(job.jobId)).state, "COMPLETED");
    assert.equal((await platform.poolStats("acks")).running, 0);

    const admin = as("platform-admin");
    assert.deepEqual(await admin.getTenantLimits("quiet"), { tenantId: "quiet", ...NO_LIMITS });
    assert.deepEqual(await admin.putTenantLimits("quiet", { weight: 2.5 }), { tenantId: "quiet", ...NO_LIMITS, weight: 2.5 });
    // A stored key: keys given in the configuration are bootstrap keys, admins of every tenant.
    const quietAdmin = as((await admin.createKey({ tenantId: "quiet", role: "admin" })).key);
    assert.deepEqual(await quietAdmin.getTenantLimits("quiet"), { tenantId: "quiet", ...NO_LIMITS, weight: 2.5 });
    assert.equal((await apiError(quietAdmin.getTenantLimits("flood"))).status, 403);
    assert.equal((await apiError(quietAdmin.putTenantLimits("quiet", { weight: 9 }))).status, 403);
    const bad = await apiError(admin.putTenantLimits("quiet", { weight: 0 }));
    assert.equal(bad.status, 400);
    assert.equal(bad.details?.field, "weight");
    assert.equal((await apiError(admin.getTenantLimits("*"))).status, 400, "no tenant is named *");
    // Left out, a limit takes its default again.
    assert.deepEqual(await admin.putTenantLimits("quiet", {}), { tenantId: "quiet", ...NO_LIMITS });
    const audit = await quietAdmin.listAudit();
    assert.ok(audit.items.some((a) => a.action === "tenant.limits" && a.subject === "quiet"));

    // Keys for every tenant: worker or admin only.
    const client = await apiError(admin.createKey({ tenantId: "*", role: "client" }));
    assert.equal(client.status, 400);
    assert.equal(client.details?.field, "role");
    const created = await admin.createKey({ tenantId: "*", role: "worker", name: "fleet" });
    assert.equal(created.tenantId, "*");
  } finally {
    await close();
    await t.close();
  }
});

test("herd smoothing: a tenant's dispatchRatePerSecond spreads its herd over the following seconds, in order, with the wait in its history", async (ctx) => {
  const hook = await receiver(0);
  const t = await startTestServer({ apiKeys: KEYS, allowTargetHosts: ["127.0.0.1"] });
  const { as, close } = clientsOf(t);
  try {
    const RATE = 10;
    const HERD = 40;
    await as("platform-admin").putTenantLimits("flood", { dispatchRatePerSecond: RATE });
    const flood = as("flood-client");
    const due = Date.now() + 1_000;
    const job = (name: string, i: number) => ({
      name,
      target: { type: "http" as const, url: hook.url },
      schedule: { runAt: new Date(due + i).toISOString() },
    });
    const herd = (await flood.createJobs(Array.from({ length: HERD }, (_, i) => job("herd", i)))).map((r) => ("jobId" in r ? r.jobId : ""));
    const quietClient = as("quiet-client");
    const quiet = (await quietClient.createJobs(Array.from({ length: 10 }, (_, i) => job("quiet", i)))).map((r) => ("jobId" in r ? r.jobId : ""));
    await waitFor(() => hook.calls.length >= HERD + quiet.length, "every call", 30_000);

    const calledAt = new Map(hook.calls.map((c) => [c.jobId, c.at]));
    const quietLags = quiet.map((id) => (calledAt.get(id) as number) - due);
    assert.ok(Math.max(...quietLags) <= START_WITHIN_MS, `the other tenant is not held back: ${quietLags.join(",")} ms`);
    // Started (leased, by the store's clock) at the rate, in due order; the wait is in each one's history.
    const firstAttempt = async (jobId: string, client = flood) => (await client.listExecutions(jobId)).items.find((e) => e.attempt === 1)!;
    const attempts = await Promise.all(herd.map((id) => firstAttempt(id)));
    const started = attempts.map((a) => Date.parse(a.startedAt as string));
    const busiest = Math.max(...started.map((at) => started.filter((x) => x >= at && x < at + 1_000).length));
    const span = started.at(-1)! - started[0]!;
    ctx.diagnostic(`herd of ${HERD} at ${RATE}/s: started over ${span} ms, at most ${busiest} in any second`);
    assert.ok(busiest <= 2 * RATE, `a burst and a second's rate at most in any second, got ${busiest}`);
    assert.ok(span >= ((HERD - RATE) / RATE) * 1000 * 0.8, `the excess spread over the following seconds (${span} ms)`);
    assert.ok(
      started.every((at, i) => i === 0 || at >= started[i - 1]!),
      "started in due order",
    );
    assert.equal(attempts[0]!.throttledMs, undefined, "the first burst waited for nothing");
    const last = attempts.at(-1)!;
    assert.ok((last.throttledMs ?? 0) >= 2_000, `the last waited about ${(HERD - RATE) / RATE} s for the rate: ${last.throttledMs} ms`);
    assert.equal((await firstAttempt(quiet[0]!, quietClient)).throttledMs, undefined);
  } finally {
    await close();
    await t.close();
    await hook.close();
  }
});

test("quotas: each answers 429 with Retry-After and the quota named; raising it lets the same request through; accepted jobs are untouched", async () => {
  const t = await startTestServer({ apiKeys: KEYS });
  const { as, close } = clientsOf(t);
  try {
    const admin = as("platform-admin");
    const quiet = as("quiet-client");
    const kept = await quiet.createJob(queueJob("quota", { schedule: { delaySeconds: 3600 } }));
    /** Sends with a raw fetch, to see the status and Retry-After a client would. */
    const post = (path: string, body: unknown) =>
      fetch(`${t.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer quiet-client" },
        body: JSON.stringify(body),
      });
    const refused = async (path: string, body: unknown, quota: string) => {
      const res = await post(path, body);
      const text = await res.text();
      assert.equal(res.status, 429, text);
      assert.ok(Number(res.headers.get("retry-after")) >= 1, `Retry-After on ${quota}`);
      const error = (JSON.parse(text) as { error: { code: string; message: string; details: { quota: string } } }).error;
      assert.equal(error.code, "RESOURCE_EXHAUSTED");
      assert.equal(error.details.quota, quota);
      assert.match(error.message, new RegExp(`^${quota}: `));
    };
    const accepted = async (path: string, body: unknown) => assert.ok((await post(path, body)).status < 300);

    // payload size
    const big = queueJob("quota", { payload: { blob: "x".repeat(2_000) } });
    await admin.putTenantLimits("quiet", { maxPayloadBytes: 1_000 });
    await refused("/v1/jobs", big, "maxPayloadBytes");
    const batch = (await quiet.createJobs([queueJob("quota"), big])) as { error?: { code: string; details: { quota: string } } }[];
    assert.equal(batch[1]?.error?.details.quota, "maxPayloadBytes", "in a batch, the job over the quota answers alone");
    await admin.putTenantLimits("quiet", { maxPayloadBytes: 10_000 });
    await accepted("/v1/jobs", big);

    // pending jobs: the tenant holds 3 now (kept, the batch's first, big; none ended)
    await admin.putTenantLimits("quiet", { maxPendingJobs: 3 });
    await refused("/v1/jobs", queueJob("quota"), "maxPendingJobs");
    await refused("/v1/jobs:batch", { jobs: [queueJob("quota"), queueJob("quota")] }, "maxPendingJobs");
    await admin.putTenantLimits("quiet", { maxPendingJobs: 5 });
    await accepted("/v1/jobs:batch", { jobs: [queueJob("quota"), queueJob("quota")] });

    // create rate: a bucket of 2 jobs, refilled at 2 per second (a PUT sets the limits whole: no pending quota now)
    await admin.putTenantLimits("quiet", { createRatePerSecond: 2 });
    await accepted("/v1/jobs:batch", { jobs: [queueJob("quota"), queueJob("quota")] });
    await refused("/v1/jobs", queueJob("quota"), "createRatePerSecond");
    await admin.putTenantLimits("quiet", { createRatePerSecond: 1000 });
    await accepted("/v1/jobs", queueJob("quota"));

    // Another tenant is not limited by quiet's quotas, and nothing accepted was touched.
    await as("flood-client").createJob(queueJob("quota", { payload: { blob: "x".repeat(2_000) } }));
    const job = await quiet.getJob(kept.jobId);
    assert.equal(job.state, "SCHEDULED");
    assert.equal(job.version, kept.version);
    const jobs = await quiet.listJobs({ limit: 100 });
    assert.equal(jobs.items.length, 8, "kept, 2 + 1 (big), 2, 2 and 1: every job answered 2xx, no refused one");
  } finally {
    await close();
    await t.close();
  }
});

test("spiky schedules are warned about at submit time: a thousand one-offs in one second, five thousand cron jobs in one minute", async () => {
  const t = await startTestServer({ apiKeys: KEYS });
  const { as, close } = clientsOf(t);
  try {
    const quiet = as("quiet-client");
    const second = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000).toISOString();
    // 999 due in one second: no warning yet
    await createMany(quiet, 999, () => queueJob("spiky", { schedule: { runAt: second } }));
    const calm = await quiet.createJob(queueJob("spiky", { schedule: { runAt: new Date(Date.parse(second) + 1000).toISOString() } }));
    assert.equal(calm.warnings, undefined);
    // the thousandth earns one, in the body and in Duetime-Warning
    const res = await fetch(`${t.url}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer quiet-client" },
      body: JSON.stringify(queueJob("spiky", { schedule: { runAt: second } })),
    });
    assert.equal(res.status, 201);
    const job = (await res.json()) as { warnings?: { code: string; window: string; at: string; count: number; suggestedJitterSeconds: number }[] };
    assert.deepEqual(
      job.warnings?.map((w) => [w.code, w.window, w.at, w.count]),
      [["DUE_SPIKE", "second", second, 1000]],
    );
    assert.ok(job.warnings![0]!.suggestedJitterSeconds >= 2);
    assert.match(res.headers.get("duetime-warning") ?? "", /^DUE_SPIKE 1000 or more of this tenant's jobs in pool "spiky" are due in the second /);
    // Another tenant, the same second: its own histogram, no warning.
    assert.equal((await as("flood-client").createJob(queueJob("spiky", { schedule: { runAt: second } }))).warnings, undefined);

    // Recurring jobs sharing one minute: each item of the batch that tips it over says so.
    const cron = (i: number) => queueJob("cron-spike", { payload: { i }, schedule: { cron: "0 3 * * *", tz: "UTC" } });
    await createMany(quiet, 4_000, cron);
    const last = await quiet.createJobs(Array.from({ length: 1000 }, (_, i) => cron(4_000 + i)));
    const warned = last.filter((r) => "jobId" in r && r.warnings?.[0]?.window === "minute");
    assert.equal(warned.length, 1000, "the batch's jobs are all in the spiking minute");
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    assert.match(metrics, /^duetime_due_spike_warnings_total\{window="second"\} [1-9]/m);
    assert.match(metrics, /^duetime_due_spike_warnings_total\{window="minute"\} [1-9]/m);
  } finally {
    await close();
    await t.close();
  }
});
