import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:net";
import { after, describe, test } from "node:test";
import { DuetimeClient } from "./client.js";
import { DuetimeApiError } from "./errors.js";
import { startTestServer, type TestHandler, type TestServer } from "./testing/http-server.js";

const servers: TestServer[] = [];
const clients: DuetimeClient[] = [];
after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.close()));
});

async function serve(handler: TestHandler): Promise<TestServer> {
  const server = await startTestServer(handler);
  servers.push(server);
  return server;
}

function client(url: string, options: Partial<ConstructorParameters<typeof DuetimeClient>[0]> = {}): DuetimeClient {
  const c = new DuetimeClient({ url, retryBaseMs: 20, retryMaxMs: 100, ...options });
  clients.push(c);
  return c;
}

/** A port nobody listens on (bound, then released). */
async function freePort(): Promise<number> {
  const probe = createServer().listen(0, "127.0.0.1");
  await once(probe, "listening");
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const JOB = { jobId: "j1", name: "n", state: "SCHEDULED", nextRunAt: "2026-10-16T09:00:00.000Z" };
const envelope = (code: string, message: string, details?: object) => ({ error: { code, message, ...(details ? { details } : {}) } });

describe("DuetimeClient: errors", () => {
  test("maps the error envelope to DuetimeApiError with code, status and details", async () => {
    const server = await serve(() => ({ status: 400, body: envelope("INVALID_ARGUMENT", "schedule.cron: bad field", { field: "schedule.cron" }) }));
    const err = await client(server.url)
      .createJob({ name: "x", target: { type: "queue", pool: "p" }, schedule: { cron: "nope" } })
      .catch((e) => e);
    assert.ok(err instanceof DuetimeApiError);
    assert.equal(err.code, "INVALID_ARGUMENT");
    assert.equal(err.status, 400);
    assert.equal(err.message, "schedule.cron: bad field");
    assert.deepEqual(err.details, { field: "schedule.cron" });
  });

  test("404 and 409 keep the envelope's code", async () => {
    const server = await serve((req) =>
      req.url.startsWith("/v1/jobs/")
        ? { status: 404, body: envelope("NOT_FOUND", "job not found") }
        : { status: 409, body: envelope("LEASE_LOST", "lost") },
    );
    const c = client(server.url);
    await assert.rejects(c.getJob("nope"), { name: "DuetimeApiError", code: "NOT_FOUND", status: 404 });
    await assert.rejects(c.complete("e1", 1), { code: "LEASE_LOST", status: 409 });
  });

  test("a non-envelope error body gets a code from its status", async () => {
    const server = await serve(() => ({ status: 502, headers: { "content-type": "text/html" }, body: "<h1>Bad gateway</h1>" }));
    const err = await client(server.url, { retries: 0 })
      .getJob("j1")
      .catch((e) => e);
    assert.equal(err.code, "UNAVAILABLE");
    assert.equal(err.status, 502);
    assert.match(err.message, /Bad gateway/);
  });

  test("a 2xx body that is not JSON is an error, not a crash", async () => {
    const server = await serve(() => ({ status: 200, headers: { "content-type": "application/json" }, body: "{nope" }));
    await assert.rejects(client(server.url).getJob("j1"), { code: "INTERNAL", status: 200 });
  });
});

describe("DuetimeClient: retries", () => {
  test("retries a GET on 503, honouring Retry-After", async () => {
    let calls = 0;
    const server = await serve(() =>
      ++calls === 1 ? { status: 503, headers: { "retry-after": "1" }, body: envelope("UNAVAILABLE", "store down") } : { status: 200, body: JOB },
    );
    const delays: number[] = [];
    const started = performance.now();
    const job = await client(server.url, { onRetry: (r) => delays.push(r.delayMs) }).getJob("j1");
    assert.equal(job.jobId, "j1");
    assert.equal(server.requests.length, 2);
    assert.ok(delays[0]! >= 1000, `waited ${delays[0]} ms`);
    assert.ok(performance.now() - started >= 950);
  });

  test("retries on 429 then gives up with the last error after `retries` retries", async () => {
    const server = await serve(() => ({ status: 429, headers: { "retry-after": "0" }, body: envelope("RESOURCE_EXHAUSTED", "slow down") }));
    const err = await client(server.url, { retries: 2 })
      .listJobs()
      .catch((e) => e);
    assert.equal(err.code, "RESOURCE_EXHAUSTED");
    assert.equal(err.status, 429);
    assert.equal(err.retryAfterSeconds, 0);
    assert.equal(server.requests.length, 3);
  });

  test("a Retry-After beyond maxRetryAfterMs is not waited for", async () => {
    const server = await serve(() => ({ status: 503, headers: { "retry-after": "120" }, body: envelope("UNAVAILABLE", "later") }));
    const err = await client(server.url, { maxRetryAfterMs: 5_000 })
      .getJob("j1")
      .catch((e) => e);
    assert.equal(err.retryAfterSeconds, 120);
    assert.equal(server.requests.length, 1);
  });

  test("retries after connection refused, then succeeds once the server is up", async () => {
    const port = await freePort();
    let starting: Promise<TestServer> | undefined;
    const c = client(`http://127.0.0.1:${port}`, {
      retries: 5,
      onRetry: (r) => {
        assert.equal(r.error.code, "UNAVAILABLE");
        assert.equal(r.error.status, 0);
        starting ??= startTestServer(() => ({ status: 200, body: JOB }), port).then((s) => {
          servers.push(s);
          return s;
        });
      },
    });
    const job = await c.getJob("j1");
    assert.equal(job.jobId, "j1");
    assert.ok(starting, "the first attempt should have been refused");
  });

  test("network errors become UNAVAILABLE with status 0 after the retries", async () => {
    const port = await freePort();
    let retries = 0;
    const err = await client(`http://127.0.0.1:${port}`, { retries: 2, onRetry: () => retries++ })
      .getJob("j1")
      .catch((e) => e);
    assert.ok(err instanceof DuetimeApiError);
    assert.equal(err.code, "UNAVAILABLE");
    assert.equal(err.status, 0);
    assert.match(err.message, /ECONNREFUSED/);
    assert.equal(retries, 2);
  });

  test("createJob without an idempotency key is never retried", async () => {
    const server = await serve(() => ({ status: 503, headers: { "retry-after": "0" }, body: envelope("UNAVAILABLE", "down") }));
    const c = client(server.url);
    const spec = { name: "x", target: { type: "queue", pool: "p" }, schedule: { delaySeconds: 0 } } as const;
    await assert.rejects(c.createJob(spec), { code: "UNAVAILABLE", status: 503 });
    assert.equal(server.requests.length, 1);

    const reset = await serve(() => ({ status: 0, destroy: true }));
    await assert.rejects(client(reset.url).createJob(spec), { code: "UNAVAILABLE", status: 0 });
    assert.equal(reset.requests.length, 1);
  });

  test("every call is retried on 429 (the server did nothing), a create without a key included, after its Retry-After", async () => {
    let calls = 0;
    const server = await serve(() =>
      ++calls === 1
        ? { status: 429, headers: { "retry-after": "1" }, body: envelope("RESOURCE_EXHAUSTED", "createRatePerSecond: slow down") }
        : { status: 201, body: { jobId: "j1" } },
    );
    const delays: number[] = [];
    const c = client(server.url, { retries: 1, onRetry: (info) => delays.push(info.delayMs) });
    const job = await c.createJob({ name: "x", target: { type: "queue", pool: "p" }, schedule: { delaySeconds: 0 } });
    assert.equal(job.jobId, "j1");
    assert.equal(server.requests.length, 2);
    assert.ok(delays[0]! >= 1000, `waited the Retry-After, ${delays[0]} ms`);
  });

  test("createJob with an idempotency key is retried and reports created", async () => {
    let calls = 0;
    const server = await serve(() => {
      calls++;
      if (calls === 1) return { status: 0, destroy: true };
      return { status: calls === 2 ? 201 : 200, body: JOB };
    });
    const c = client(server.url);
    const spec = { name: "x", target: { type: "queue", pool: "p" }, schedule: { delaySeconds: 0 } } as const;
    const first = await c.createJob(spec, { idempotencyKey: "k-1" });
    assert.equal(first.created, true);
    assert.equal(server.requests.length, 2);
    assert.equal(server.requests[1]!.headers["idempotency-key"], "k-1");
    const again = await c.createJob(spec, { idempotencyKey: "k-1" });
    assert.equal(again.created, false);
    assert.equal(again.jobId, "j1");
  });

  test("trigger and replay are never retried; a batch is retried only when every item has a key", async () => {
    const server = await serve(() => ({ status: 503, headers: { "retry-after": "0" }, body: envelope("UNAVAILABLE", "down") }));
    const c = client(server.url, { retries: 1 });
    await assert.rejects(c.triggerJob("j1"));
    await assert.rejects(c.replayDeadLetter("e1"));
    const job = { name: "x", target: { type: "queue", pool: "p" }, schedule: { delaySeconds: 0 } } as const;
    await assert.rejects(c.createJobs([{ ...job, idempotencyKey: "a" }, job]));
    assert.equal(server.requests.length, 3);
    await assert.rejects(c.createJobs([{ ...job, idempotencyKey: "a" }]));
    assert.equal(server.requests.length, 5);
  });

  test("an attempt without an answer times out as UNAVAILABLE; a long poll gets its wait on top", async () => {
    const server = await serve((req) =>
      req.url.includes("/lease")
        ? new Promise((resolve) => setTimeout(() => resolve({ status: 200, body: { items: [] } }), 400))
        : new Promise(() => {}),
    );
    const c = client(server.url, { timeoutMs: 150, retries: 0 });
    await assert.rejects(
      c.getJob("j1"),
      (err: DuetimeApiError) => err.code === "UNAVAILABLE" && err.status === 0 && /within 150 ms/.test(err.message),
    );
    const leased = await c.lease("p", { workerId: "w", waitSeconds: 1 });
    assert.deepEqual(leased.items, []);
  });

  test("an aborted call rejects at once with the signal's reason, without retrying", async () => {
    const server = await serve(() => new Promise(() => {}));
    const controller = new AbortController();
    const pending = client(server.url).lease("p", { workerId: "w", waitSeconds: 20 }, { signal: controller.signal });
    await once(server.events, "request");
    controller.abort(new Error("stop"));
    await assert.rejects(pending, { message: "stop" });
    assert.equal(server.requests.length, 1);
  });
});

describe("DuetimeClient: updateJob, backfillJob, listOccurrences", () => {
  const unavailable = { status: 503, headers: { "retry-after": "0" }, body: envelope("UNAVAILABLE", "down") };

  test("updateJob sends PATCH with the patch and If-Match, and answers the job", async () => {
    const server = await serve((req) => ({ status: 200, headers: { etag: '"8"' }, body: { ...JOB, ...(req.body as object), version: 8 } }));
    const c = client(server.url);
    const job = await c.updateJob("a/b", { schedule: { cron: "0 10 * * *", tz: "Europe/London" } }, { ifMatch: 7 });
    assert.equal(job.version, 8);
    const sent = server.requests[0]!;
    assert.equal(sent.method, "PATCH");
    assert.equal(sent.url, "/v1/jobs/a%2Fb");
    assert.equal(sent.headers["if-match"], '"7"');
    assert.equal(sent.headers["content-type"], "application/json");
    assert.deepEqual(sent.body, { schedule: { cron: "0 10 * * *", tz: "Europe/London" } });

    await c.updateJob("j1", { name: "n", version: 3 });
    assert.equal(server.requests[1]!.headers["if-match"], undefined);
    assert.deepEqual(server.requests[1]!.body, { name: "n", version: 3 });
  });

  test("updateJob is retried only with a version (ifMatch or patch.version)", async () => {
    const server = await serve(() => unavailable);
    const c = client(server.url, { retries: 1 });
    await assert.rejects(c.updateJob("j1", { name: "n" }), { code: "UNAVAILABLE", status: 503 });
    assert.equal(server.requests.length, 1, "no version: not retried");
    await assert.rejects(c.updateJob("j1", { name: "n" }, { ifMatch: 2 }), { code: "UNAVAILABLE" });
    assert.equal(server.requests.length, 3, "ifMatch: retried once");
    await assert.rejects(c.updateJob("j1", { name: "n", version: 2 }), { code: "UNAVAILABLE" });
    assert.equal(server.requests.length, 5, "patch.version: retried once");

    const reset = await serve(() => ({ status: 0, destroy: true }));
    await assert.rejects(client(reset.url, { retries: 1 }).updateJob("j1", { priority: 1 }), { code: "UNAVAILABLE", status: 0 });
    assert.equal(reset.requests.length, 1);
  });

  test("a stale version is 409 VERSION_CONFLICT, not retried", async () => {
    const server = await serve(() => ({ status: 409, body: envelope("VERSION_CONFLICT", "job j1 is at version 9, not 7", { currentVersion: 9 }) }));
    const err = await client(server.url)
      .updateJob("j1", { name: "n" }, { ifMatch: 7 })
      .catch((e) => e);
    assert.ok(err instanceof DuetimeApiError);
    assert.equal(err.code, "VERSION_CONFLICT");
    assert.equal(err.status, 409);
    assert.deepEqual(err.details, { currentVersion: 9 });
    assert.equal(server.requests.length, 1);
  });

  test("backfillJob posts the window to :backfill and is retried (a repeat adds nothing)", async () => {
    const answer = { items: [{ scheduledFor: "2026-10-12T08:00:00.000Z", executionId: "e1", created: true, readyAt: "2026-10-16T09:00:00.000Z" }] };
    let calls = 0;
    const server = await serve(() => (++calls === 1 ? unavailable : { status: 201, body: answer }));
    const window = { from: "2026-10-12T00:00:00Z", to: "2026-10-14T00:00:00Z" };
    assert.deepEqual(await client(server.url).backfillJob("j:1", window), answer);
    assert.deepEqual(
      server.requests.map((r) => `${r.method} ${r.url}`),
      ["POST /v1/jobs/j%3A1:backfill", "POST /v1/jobs/j%3A1:backfill"],
    );
    assert.deepEqual(server.requests[1]!.body, window);
  });

  test("listOccurrences is a GET with from and to in the query, retried", async () => {
    const items = [{ scheduledFor: "2026-03-29T01:00:00.000Z", local: "2026-03-29T01:30:00", status: "not_run", reason: "paused", dst: "gap" }];
    let calls = 0;
    const server = await serve(() => (++calls === 1 ? unavailable : { status: 200, body: { items } }));
    const page = await client(server.url).listOccurrences("j1", { from: "2026-03-27T00:00:00+01:00", to: "2026-03-31T00:00:00Z" });
    assert.deepEqual(page.items, items);
    assert.equal(server.requests.length, 2);
    assert.equal(server.requests[1]!.url, "/v1/jobs/j1/occurrences?from=2026-03-27T00%3A00%3A00%2B01%3A00&to=2026-03-31T00%3A00%3A00Z");
  });
});

describe("DuetimeClient: routes", () => {
  test("encodes ids, uses the colon action routes literally and sends the token", async () => {
    const server = await serve((req) => {
      if (req.method === "DELETE") return { status: 204 };
      if (req.url.includes(":batch")) return { status: 200, body: { items: [{ jobId: "j1", nextRunAt: null, created: true }] } };
      if (req.url.startsWith("/v1/executions:")) return { status: 200, body: { items: [] } };
      if (req.url.includes(":trigger")) return { status: 201, body: { executionId: "e1" } };
      if (req.url.includes("/lease")) return { status: 200, body: { items: [], acks: [] } };
      if (req.url.startsWith("/v1/schedules/preview")) return { status: 200, body: { times: ["2026-01-01T00:00:00.000Z"] } };
      return { status: 200, body: req.url.includes("?") || req.url === "/v1/dead-letters" ? { items: [], nextCursor: null } : JOB };
    });
    const c = client(server.url, { token: "secret" });
    assert.equal(await c.cancelJob("a/b c"), undefined);
    await c.pauseJob("a/b c");
    await c.resumeJob("j:1");
    await c.triggerJob("j1");
    await c.createJobs([{ name: "x", target: { type: "queue", pool: "p" }, schedule: { delaySeconds: 1 } }]);
    await c.completeMany([{ executionId: "e1", attempt: 1 }]);
    await c.failMany([{ executionId: "e1", attempt: 1, error: { message: "m" } }]);
    await c.lease("my pool", { workerId: "w", max: 5, complete: [], fail: [] });
    await c.listJobs({ state: "PAUSED", limit: 5, name: undefined });
    await c.listExecutions("j1", { cursor: "c/1" });
    await c.previewSchedule({ cron: "0 9 * * MON-FRI", tz: "Europe/London", count: 3 });
    await c.heartbeat("e/1", { attempt: 2 });
    await c.listDeadLetters();

    const seen = server.requests.map((r) => `${r.method} ${r.url}`);
    assert.deepEqual(seen, [
      "DELETE /v1/jobs/a%2Fb%20c",
      "POST /v1/jobs/a%2Fb%20c:pause",
      "POST /v1/jobs/j%3A1:resume",
      "POST /v1/jobs/j1:trigger",
      "POST /v1/jobs:batch",
      "POST /v1/executions:complete",
      "POST /v1/executions:fail",
      "POST /v1/pools/my%20pool/lease",
      "GET /v1/jobs?state=PAUSED&limit=5",
      "GET /v1/jobs/j1/executions?cursor=c%2F1",
      "GET /v1/schedules/preview?cron=0+9+*+*+MON-FRI&tz=Europe%2FLondon&count=3",
      "POST /v1/executions/e%2F1/heartbeat",
      "GET /v1/dead-letters",
    ]);
    assert.ok(server.requests.every((r) => r.headers.authorization === "Bearer secret"));
    assert.deepEqual(server.requests[1]!.body, {});
    assert.equal(server.requests[0]!.text, "");
    assert.deepEqual(server.requests[7]!.body, { workerId: "w", max: 5 }, "empty ack arrays are left out");
    assert.deepEqual(server.requests[4]!.body, { jobs: [{ name: "x", target: { type: "queue", pool: "p" }, schedule: { delaySeconds: 1 } }] });
    assert.equal(server.requests[4]!.headers["content-type"], "application/json");
  });

  test("createKey, listKeys and revokeKey: routes, bodies, and only the revoke is retried", async () => {
    const KEY = { keyId: "ak_1", tenantId: "acme", role: "worker", name: null, createdAt: "2026-10-16T09:00:00.000Z" };
    let fail = true;
    const server = await serve((req) => {
      if (fail) return { status: 503, headers: { "retry-after": "0" }, body: envelope("UNAVAILABLE", "down") };
      if (req.method === "POST") return { status: 201, body: { ...KEY, key: "dtk_s" } };
      if (req.method === "DELETE") return { status: 204 };
      return { status: 200, body: { items: [{ ...KEY, revokedAt: null }], nextCursor: null } };
    });
    const c = client(server.url, { token: "root", retries: 1 });
    await assert.rejects(c.createKey({ role: "worker" }));
    assert.equal(server.requests.length, 1, "a create is never retried");
    await assert.rejects(c.revokeKey("ak_1"));
    assert.equal(server.requests.length, 3, "a revoke is retried");
    fail = false;
    assert.deepEqual(await c.createKey({ tenantId: "acme", role: "worker", name: "w" }), { ...KEY, key: "dtk_s" });
    assert.equal((await c.listKeys({ tenantId: "acme", limit: 5 })).items[0]?.keyId, "ak_1");
    assert.equal(await c.revokeKey("ak/1"), undefined);
    const seen = server.requests.slice(3).map((r) => `${r.method} ${r.url}`);
    assert.deepEqual(seen, ["POST /v1/keys", "GET /v1/keys?tenantId=acme&limit=5", "DELETE /v1/keys/ak%2F1"]);
    assert.deepEqual(server.requests[3]!.body, { tenantId: "acme", role: "worker", name: "w" });
    assert.ok(server.requests.every((r) => r.headers.authorization === "Bearer root"));
  });

  test("rejects unknown options with a suggestion, and bad URLs", () => {
    assert.throws(() => new DuetimeClient({ url: "http://x", retires: 2 } as never), /unknown option "retires" \(did you mean "retries"\?\)/);
    assert.throws(() => new DuetimeClient({ url: "ftp://x" }), /http or https/);
    assert.throws(() => new DuetimeClient({ url: "http://x", retries: -1 }), RangeError);
  });
});
