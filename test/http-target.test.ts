// HTTP targets: the server calls the URL itself under the same lease and
// attempt rules as any worker. Real receivers on loopback, a real server.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { IncomingMessage, ServerResponse } from "node:http";
import { test } from "node:test";
import { verifySignature, DuetimeClient } from "@duetime/sdk";
import { startServer } from "../src/server/index.js";
import {
  listenOnLoopback,
  serverStore,
  spawnServer,
  startTestServer,
  testStore,
  waitFor,
  type ServerProcess,
  type TestServer,
  type TestStore,
} from "./helpers.js";

interface Hit {
  at: number;
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse, hit: Hit, n: number) => void;

async function receiver(handler: Handler) {
  const hits: Hit[] = [];
  const { base, close } = await listenOnLoopback((req, res) => {
    const at = Date.now();
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const hit = { at, path: req.url ?? "", headers: req.headers, body };
      hits.push(hit);
      handler(req, res, hit, hits.length);
    });
  });
  return {
    base,
    url: `${base}/hook`,
    hits,
    close,
  };
}

const answer =
  (status: number, headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    res.writeHead(status, headers);
    res.end("ok");
  };

async function getJson<T>(t: TestServer, path: string): Promise<T> {
  const res = await fetch(`${t.url}${path}`);
  assert.equal(res.status, 200, path);
  return (await res.json()) as T;
}

interface Target {
  origin: string;
  breaker: string;
  inFlight: number;
  waiting: number;
  opened: number;
  released: number;
}

const ALLOW = { allowTargetHosts: ["127.0.0.1"] };
const state = (t: TestServer, jobId: string, want: string) => async () => (await t.client.getJob(jobId)).state === want;

test("a call carries the payload, every contract header and a signature per secret (rotation)", async () => {
  const rx = await receiver(answer(200));
  const t = await startTestServer({ ...ALLOW, signingSecret: ["new-secret", "old-secret"] });
  try {
    const job = await t.client.createJob({
      name: "hook",
      target: { type: "http", url: rx.url, headers: { "x-custom": "yes", "Idempotency-Key": "forged", "Duetime-Attempt": "99" } },
      payload: { event: "ping" },
      schedule: { delaySeconds: 0 },
    });
    await waitFor(state(t, job.jobId, "COMPLETED"), "completed");
    assert.equal(rx.hits.length, 1);
    const { headers, body } = rx.hits[0]!;
    const [execution] = (await t.client.listExecutions(job.jobId)).items;
    assert.deepEqual(JSON.parse(body), { event: "ping" });
    assert.equal(headers["content-type"], "application/json");
    assert.equal(headers["idempotency-key"], `${job.jobId}:${execution!.scheduledFor}`);
    assert.equal(headers["duetime-execution-id"], execution!.executionId);
    assert.equal(headers["duetime-attempt"], "1");
    assert.equal(headers["duetime-scheduled-for"], execution!.scheduledFor);
    assert.match(String(headers["duetime-timestamp"]), /^\d+$/);
    assert.ok(Math.abs(Number(headers["duetime-timestamp"]) - Date.now() / 1000) < 60);
    assert.equal(headers["x-custom"], "yes");
    const signatures = (headers["duetime-signature"] as string).split(",");
    assert.equal(signatures.length, 2);
    assert.ok(signatures.every((s) => /^v1=[0-9a-f]{64}$/.test(s)));
    assert.equal(verifySignature({ secret: "new-secret", headers, body }), true);
    assert.equal(verifySignature({ secret: "old-secret", headers, body }), true);
    assert.equal(verifySignature({ secret: "another", headers, body }), false);
  } finally {
    await t.close();
    await rx.close();
  }
});

test("each tenant signs with its own secret; a tenant without one sends no signature", async () => {
  const rx = await receiver(answer(204));
  const t = await startTestServer({
    ...ALLOW,
    signingSecret: "default-secret",
    signingSecrets: { acme: ["acme-secret"] },
    apiKeys: [
      { key: "k-default", tenantId: "default", role: "admin" },
      { key: "k-acme", tenantId: "acme", role: "client" },
      { key: "k-globex", tenantId: "globex", role: "client" },
    ],
  });
  const clients = ["k-default", "k-acme", "k-globex"].map((token) => new DuetimeClient({ url: t.url, token, retries: 0 }));
  try {
    const jobs = await Promise.all(
      clients.map((c, i) =>
        c.createJob({ name: `t${i}`, target: { type: "http", url: `${rx.url}?t=${i}` }, payload: { i }, schedule: { delaySeconds: 0 } }),
      ),
    );
    await waitFor(() => rx.hits.length === 3, "three calls");
    const by = (i: number) => rx.hits.find((h) => h.path.endsWith(`t=${i}`))!;
    assert.equal(verifySignature({ secret: "default-secret", headers: by(0).headers, body: by(0).body }), true);
    assert.equal(verifySignature({ secret: "acme-secret", headers: by(1).headers, body: by(1).body }), true);
    assert.equal(verifySignature({ secret: "default-secret", headers: by(1).headers, body: by(1).body }), false);
    assert.equal(by(2).headers["duetime-signature"], undefined);
    for (const [i, job] of jobs.entries()) await waitFor(async () => (await clients[i]!.getJob(job.jobId)).state === "COMPLETED", `job ${i}`);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await t.close();
    await rx.close();
  }
});

test("a slow receiver: the call is aborted at timeoutSeconds, the attempt is TIMED_OUT, and the retry succeeds", async () => {
  const rx = await receiver((_req, res, _hit, n) => {
    if (n === 1) return; // never answers; the runner must give up on its own
    res.writeHead(200);
    res.end();
  });
  const t = await startTestServer(ALLOW);
  try {
    const job = await t.client.createJob({
      name: "slow",
      target: { type: "http", url: rx.url },
      schedule: { delaySeconds: 0 },
      timeoutSeconds: 1,
      retry: { maxAttempts: 3, backoffSeconds: 0.1, maxBackoffSeconds: 1 },
    });
    await waitFor(state(t, job.jobId, "COMPLETED"), "completed after a timeout", 30_000);
    assert.deepEqual(
      rx.hits.map((h) => h.headers["duetime-attempt"]),
      ["1", "2"],
    );
    assert.equal(rx.hits[0]!.headers["idempotency-key"], rx.hits[1]!.headers["idempotency-key"]);
    assert.ok(rx.hits[1]!.at - rx.hits[0]!.at >= 1000, "the retry came after the timeout");
    const history = (await t.client.listExecutions(job.jobId)).items;
    assert.deepEqual(
      history.map((i) => [i.attempt, i.state]),
      [
        [2, "SUCCEEDED"],
        [1, "TIMED_OUT"],
      ],
    );
    assert.match(history[1]!.error?.message ?? "", /ran past timeoutSeconds \(1 s\); aborted/);
  } finally {
    await t.close();
    await rx.close();
  }
});

test("503 with Retry-After: 3 is throttled: the next attempt comes no sooner than 3 s later", async () => {
  const rx = await receiver((_req, res, _hit, n) => {
    res.writeHead(n === 1 ? 503 : 200, n === 1 ? { "retry-after": "3" } : {});
    res.end();
  });
  const t = await startTestServer(ALLOW);
  try {
    const job = await t.client.createJob({
      name: "throttled",
      target: { type: "http", url: rx.url },
      schedule: { delaySeconds: 0 },
      retry: { maxAttempts: 3, backoffSeconds: 0.1, maxBackoffSeconds: 1 },
    });
    await waitFor(state(t, job.jobId, "COMPLETED"), "completed", 30_000);
    assert.equal(rx.hits.length, 2);
    assert.ok(rx.hits[1]!.at - rx.hits[0]!.at >= 3000, `second attempt ${rx.hits[1]!.at - rx.hits[0]!.at} ms after the first`);
    const failed = (await t.client.listExecutions(job.jobId)).items[1]!;
    assert.equal(failed.error?.class, "throttled");
    assert.equal(failed.error?.retryAfterSeconds, 3);
    assert.equal(failed.error?.status, 503);
  } finally {
    await t.close();
    await rx.close();
  }
});

test("5xx is retried with the same Idempotency-Key and the next attempt; success completes", async () => {
  const rx = await receiver((_req, res, _hit, n) => {
    res.writeHead(n < 3 ? 500 : 204);
    res.end(n < 3 ? "database on fire" : undefined);
  });
  const t = await startTestServer(ALLOW);
  try {
    const job = await t.client.createJob({
      name: "retry",
      target: { type: "http", url: rx.url },
      schedule: { delaySeconds: 0 },
      retry: { maxAttempts: 5, backoffSeconds: 0.1, maxBackoffSeconds: 1 },
    });
    await waitFor(state(t, job.jobId, "COMPLETED"), "completed");
    assert.deepEqual(
      rx.hits.map((r) => r.headers["duetime-attempt"]),
      ["1", "2", "3"],
    );
    assert.equal(new Set(rx.hits.map((r) => r.headers["idempotency-key"])).size, 1);
    const history = (await t.client.listExecutions(job.jobId)).items;
    assert.deepEqual(
      history.map((i) => i.state),
      ["SUCCEEDED", "FAILED", "FAILED"],
    );
    assert.equal(history[1]!.error?.status, 500);
    assert.equal(history[1]!.error?.body, "database on fire");
    assert.equal(typeof history[1]!.error?.durationMs, "number");
  } finally {
    await t.close();
    await rx.close();
  }
});

test("410 is dead at once", async () => {
  const rx = await receiver(answer(410));
  const t = await startTestServer(ALLOW);
  try {
    const job = await t.client.createJob({
      name: "gone",
      target: { type: "http", url: rx.url },
      schedule: { delaySeconds: 0 },
      retry: { maxAttempts: 5 },
    });
    await waitFor(state(t, job.jobId, "DEAD"), "dead");
    assert.equal(rx.hits.length, 1);
    const dead = (await t.client.listDeadLetters()).items[0]!;
    assert.equal(dead.lastError?.status, 410);
    assert.equal(dead.lastError?.class, "permanent");
    assert.equal(dead.attempts, 1);
  } finally {
    await t.close();
    await rx.close();
  }
});

test("connection refused is transient: retried until the attempts run out", async () => {
  const closed = await receiver(answer(200));
  const url = closed.url;
  await closed.close(); // nothing listens on that port any more
  const t = await startTestServer(ALLOW);
  try {
    const job = await t.client.createJob({
      name: "refused",
      target: { type: "http", url },
      schedule: { delaySeconds: 0 },
      retry: { maxAttempts: 3, backoffSeconds: 0.05, maxBackoffSeconds: 0.2 },
    });
    await waitFor(state(t, job.jobId, "DEAD"), "dead after three attempts");
    const history = (await t.client.listExecutions(job.jobId)).items;
    assert.deepEqual(
      history.map((i) => i.attempt),
      [3, 2, 1],
    );
    for (const item of history) {
      assert.equal(item.error?.class, "transient");
      assert.equal(item.error?.code, "ECONNREFUSED");
    }
  } finally {
    await t.close();
  }
});

test("a flapping origin opens its breaker: its calls are released without spending attempts, and sent once a probe succeeds", async () => {
  let down = true;
  const rx = await receiver((_req, res) => {
    res.writeHead(down ? 500 : 200);
    res.end();
  });
  const t = await startTestServer({ ...ALLOW, httpTarget: { breaker: { failureThreshold: 3, openSeconds: 1, maxOpenSeconds: 1 } } });
  try {
    // Higher priority: leased ahead of the others, the flaky job is the probe each time the breaker half-opens.
    const a = await t.client.createJob({
      name: "flaky",
      target: { type: "http", url: `${rx.base}/a` },
      priority: 10,
      schedule: { delaySeconds: 0 },
      retry: { maxAttempts: 100, backoffSeconds: 0.05, maxBackoffSeconds: 0.2 },
    });
    const origin = rx.base;
    const target = async () => (await getJson<{ items: Target[] }>(t, "/v1/targets")).items.find((i) => i.origin === origin);
    await waitFor(async () => (await target())?.breaker === "open", "breaker open");

    // Jobs due while the origin is open, with one attempt each: spending an attempt would kill them.
    const bs = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        t.client.createJob({
          name: `b${i}`,
          target: { type: "http", url: `${rx.base}/b` },
          payload: { i },
          schedule: { delaySeconds: 0 },
          retry: { maxAttempts: 1 },
        }),
      ),
    );
    // Released each time they are leased while the breaker is open, ready again when it half-opens: round after round.
    const paused = await waitFor(async () => {
      assert.equal(rx.hits.filter((h) => h.path === "/b").length, 0, "nothing but the probe is sent to an open origin");
      const s = await target();
      return s && s.released >= 15 ? s : null;
    }, "the new calls released, several times");
    assert.ok(paused.opened >= 2, `opened ${paused.opened} times`);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`duetime_http_breaker_state\\{origin="${origin}"\\} [012]`));
    assert.match(metrics, /duetime_http_released_total\{reason="breaker"\} [1-9]/);
    for (const b of bs) {
      assert.notEqual((await t.client.getJob(b.jobId)).state, "DEAD", b.name);
      const items = (await t.client.listExecutions(b.jobId)).items;
      assert.deepEqual(
        items.filter((i) => !["RUNNING", "PENDING", "QUEUED"].includes(i.state)),
        [],
        `${b.name}: a released lease leaves no attempt behind (only the execution, waiting or running)`,
      );
    }

    down = false;
    for (const b of bs) await waitFor(state(t, b.jobId, "COMPLETED"), `${b.name} completed`);
    await waitFor(state(t, a.jobId, "COMPLETED"), "the flaky job completed");
    const sent = rx.hits.filter((h) => h.path === "/b");
    assert.equal(sent.length, 5, "each released call sent once");
    for (const b of bs) {
      const items = (await t.client.listExecutions(b.jobId)).items;
      assert.deepEqual(
        items.map((i) => i.state),
        ["SUCCEEDED"],
        `${b.name}: one attempt, not one per pause`,
      );
      const hit = sent.find((h) => h.headers["duetime-execution-id"] === items[0]!.executionId)!;
      assert.equal(hit.headers["duetime-attempt"], String(items[0]!.attempt), "the call carries the attempt that holds the lease");
    }
    const after = (await target())!;
    assert.equal(after.breaker, "closed");
    assert.equal((await t.client.listDeadLetters()).items.length, 0);
    assert.match(await (await fetch(`${t.url}/metrics`)).text(), /duetime_http_breaker_transitions_total\{state="closed"\} [1-9]/);
  } finally {
    await t.close();
    await rx.close();
  }
});

test("an outage longer than the open time keeps releasing, never spending attempts; a stop releases the calls waiting for a probe, and after a restart they are sent", {
  timeout: 60_000,
}, async () => {
  let down = true;
  const rx = await receiver((_req, res) => {
    // Down, the origin answers 500 after a second: the calls behind a probe wait for its verdict in memory.
    if (!down) return void res.writeHead(200).end();
    setTimeout(() => res.writeHead(500).end(), 1000);
  });
  const dir = mkdtempSync(join(tmpdir(), "duetime-http-outage-"));
  const store = testStore(dir);
  const open = () =>
    startServer({
      host: "127.0.0.1",
      port: 0,
      ...serverStore(store),
      logLevel: "silent",
      ...ALLOW,
      httpTarget: { breaker: { failureThreshold: 1, openSeconds: 1, maxOpenSeconds: 1 } },
    });
  let server = await open();
  let client = new DuetimeClient({ url: server.url, retries: 0 });
  const target = async () =>
    (await getJson<{ items: Target[] }>({ url: server.url } as TestServer, "/v1/targets")).items.find((i) => i.origin === rx.base);
  try {
    const a = await client.createJob({
      name: "probe",
      target: { type: "http", url: `${rx.base}/a` },
      priority: 10,
      schedule: { delaySeconds: 0 },
      timeoutSeconds: 5,
      retry: { maxAttempts: 100, backoffSeconds: 0.05, maxBackoffSeconds: 0.2 },
    });
    await waitFor(async () => (await target())?.breaker === "open", "breaker open");
    const bs = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        client.createJob({
          name: `b${i}`,
          target: { type: "http", url: `${rx.base}/b` },
          payload: { i },
          schedule: { delaySeconds: 0 },
          retry: { maxAttempts: 1 },
        }),
      ),
    );
    await waitFor(async () => ((await target())?.opened ?? 0) >= 3, "three open periods of 1 s", 30_000);
    assert.equal(rx.hits.filter((h) => h.path === "/b").length, 0);
    for (const b of bs) {
      const items = (await client.listExecutions(b.jobId)).items;
      assert.deepEqual(
        items.filter((i) => !["RUNNING", "PENDING", "QUEUED"].includes(i.state)),
        [],
        `${b.name}: no attempt spent by the outage`,
      );
    }

    // Stop while the calls wait for a probe's verdict: they are handed back, not failed.
    await waitFor(async () => {
      const s = await target();
      return s?.breaker === "half_open" && s.waiting >= 5;
    }, "the calls waiting for a probe");
    await client.close();
    await server.close();
    assert.match(await server.engine.metricsText(), /duetime_http_released_total\{reason="stop"\} [1-9]/);

    down = false;
    server = await open();
    client = new DuetimeClient({ url: server.url, retries: 0 });
    for (const b of bs) await waitFor(async () => (await client.getJob(b.jobId)).state === "COMPLETED", `${b.name} completed after the restart`);
    await waitFor(async () => (await client.getJob(a.jobId)).state === "COMPLETED", "the probe job completed");
    for (const b of bs) {
      const items = (await client.listExecutions(b.jobId)).items;
      assert.deepEqual(
        items.map((i) => i.state),
        ["SUCCEEDED"],
        `${b.name}: one attempt`,
      );
    }
    assert.equal(rx.hits.filter((h) => h.path === "/b").length, 5);
    assert.equal((await client.listDeadLetters()).items.length, 0);
  } finally {
    await client.close();
    await server.close();
    await rx.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a 10 MB response is cut, not buffered: the call completes and the connection is closed early", async () => {
  const TEN_MB = 10 * 1024 * 1024;
  let written = 0;
  let closedEarly: boolean | null = null;
  const rx = await receiver((_req, res) => {
    res.writeHead(200, { "content-type": "text/plain", "content-length": String(TEN_MB) });
    const chunk = Buffer.alloc(64 * 1024, "x");
    res.on("close", () => (closedEarly = written < TEN_MB));
    const next = () => {
      if (res.destroyed) return;
      if (written >= TEN_MB) return void res.end();
      written += chunk.length;
      res.write(chunk);
      setTimeout(next, 2); // paced, so the socket's close is seen long before 10 MB have gone
    };
    next();
  });
  const t = await startTestServer(ALLOW);
  try {
    const job = await t.client.createJob({ name: "big", target: { type: "http", url: rx.url }, schedule: { delaySeconds: 0 } });
    await waitFor(state(t, job.jobId, "COMPLETED"), "completed");
    await waitFor(() => closedEarly !== null, "the receiver saw the connection close");
    assert.equal(closedEarly, true, `the runner stopped reading after ${written} bytes`);
    assert.ok(written < TEN_MB);
  } finally {
    await t.close();
    await rx.close();
  }
});

test("a redirect is recorded with its status and location, and not followed", async () => {
  const rx = await receiver((req, res) => {
    if (req.url === "/hook") res.writeHead(302, { location: "/elsewhere" });
    else res.writeHead(200);
    res.end();
  });
  const t = await startTestServer(ALLOW);
  try {
    const job = await t.client.createJob({
      name: "moved",
      target: { type: "http", url: rx.url },
      schedule: { delaySeconds: 0 },
      retry: { maxAttempts: 1 },
    });
    await waitFor(state(t, job.jobId, "DEAD"), "dead after its one attempt");
    assert.deepEqual(
      rx.hits.map((h) => h.path),
      ["/hook"],
    );
    const [attempt] = (await t.client.listExecutions(job.jobId)).items;
    assert.equal(attempt!.error?.status, 302);
    assert.equal(attempt!.error?.location, "/elsewhere");
    assert.match(attempt!.error?.message ?? "", /redirect to \/elsewhere not followed/);
  } finally {
    await t.close();
    await rx.close();
  }
});

test("loopback targets are refused without the allowlist, permanently: IP literal, mapped IPv6, and a name (checked at connect time)", async () => {
  const rx = await receiver(answer(200));
  const port = new URL(rx.url).port;
  const t = await startTestServer();
  try {
    for (const url of [rx.url, `http://[::ffff:127.0.0.1]:${port}/hook`, `http://localhost:${port}/hook`]) {
      const job = await t.client.createJob({ name: "ssrf", target: { type: "http", url }, schedule: { delaySeconds: 0 }, retry: { maxAttempts: 5 } });
      await waitFor(state(t, job.jobId, "DEAD"), `${url} dead`);
      const [attempt] = (await t.client.listExecutions(job.jobId)).items;
      assert.equal(attempt!.attempt, 1, url);
      assert.equal(attempt!.error?.class, "permanent", url);
      assert.match(attempt!.error?.message ?? "", /restricted address.*--allow-target-hosts/, url);
    }
    assert.equal(rx.hits.length, 0);
  } finally {
    await t.close();
    await rx.close();
  }
});

/** How late a call may arrive at a receiver on a loaded machine, for the rate-limit bounds. */
const ARRIVAL_SLACK_MS = 200;

test("per-origin limits: never more calls in flight than the cap, never faster than the rate", async () => {
  let inFlight = 0;
  let most = 0;
  const rx = await receiver((_req, res) => {
    most = Math.max(most, ++inFlight);
    setTimeout(() => {
      inFlight--;
      res.writeHead(200);
      res.end();
    }, 50);
  });
  const slow = await receiver(answer(200));
  const slowOrigin = new URL(slow.url).origin;
  const t = await startTestServer({
    ...ALLOW,
    httpTarget: { origin: { concurrency: 3 }, origins: { [slowOrigin]: { ratePerSecond: 4, burst: 2 } } },
  });
  try {
    await t.client.createJobs(
      Array.from({ length: 20 }, (_, i) => ({ name: `capped-${i}`, target: { type: "http" as const, url: rx.url }, schedule: { delaySeconds: 0 } })),
    );
    await t.client.createJobs(
      Array.from({ length: 8 }, (_, i) => ({ name: `rated-${i}`, target: { type: "http" as const, url: slow.url }, schedule: { delaySeconds: 0 } })),
    );
    await waitFor(() => rx.hits.length === 20 && slow.hits.length === 8, "every call made");
    assert.ok(most <= 3, `${most} calls in flight at once`);
    // A token bucket of rate 4/s and burst 2 allows at most 2 + 4 × (t_j − t_i) calls in [t_i, t_j]. Times are
    // taken at the receiver, where a loaded machine can delay one arrival: ARRIVAL_SLACK_MS allows for that, and
    // calls sent without the limit (all within a few ms) still break the bound.
    const at = slow.hits.map((h) => h.at);
    for (let i = 0; i < at.length; i++) {
      for (let j = i + 1; j < at.length; j++)
        assert.ok(j - i + 1 <= 2 + (4 * (at[j]! - at[i]! + ARRIVAL_SLACK_MS)) / 1000, `calls ${i}..${j} within ${at[j]! - at[i]!} ms`);
    }
    const targets = (await getJson<{ items: (Target & { limits: { concurrency: number; ratePerSecond: number | null } })[] }>(t, "/v1/targets"))
      .items;
    assert.deepEqual(targets.find((x) => x.origin === `${slowOrigin}`)?.limits, { concurrency: 3, ratePerSecond: 4 });
  } finally {
    await t.close();
    await rx.close();
    await slow.close();
  }
});

test("a call that would wait more than a few seconds for a rate limit is released, not kept: no attempt spent, the rate still holds", async () => {
  const rx = await receiver(answer(200));
  const t = await startTestServer({ ...ALLOW, httpTarget: { origins: { [rx.base]: { ratePerSecond: 2, burst: 1 } } } });
  try {
    const jobs = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.client.createJob({
          name: `rated-${i}`,
          target: { type: "http", url: rx.url },
          payload: { i },
          schedule: { delaySeconds: 0 },
          retry: { maxAttempts: 1 },
        }),
      ),
    );
    for (const job of jobs) await waitFor(state(t, job.jobId, "COMPLETED"), `${job.name} completed`);
    assert.equal(rx.hits.length, 12);
    const at = rx.hits.map((h) => h.at);
    for (let i = 0; i < at.length; i++) {
      for (let j = i + 1; j < at.length; j++)
        assert.ok(j - i + 1 <= 1 + (2 * (at[j]! - at[i]! + ARRIVAL_SLACK_MS)) / 1000, `calls ${i}..${j} within ${at[j]! - at[i]!} ms`);
    }
    for (const job of jobs) {
      assert.deepEqual(
        (await t.client.listExecutions(job.jobId)).items.map((i) => i.state),
        ["SUCCEEDED"],
        job.name,
      );
    }
    assert.match(await (await fetch(`${t.url}/metrics`)).text(), /duetime_http_released_total\{reason="wait"\} [1-9]/);
  } finally {
    await t.close();
    await rx.close();
  }
});

const serve = (store: TestStore) => spawnServer(store, ["--allow-target-hosts", "127.0.0.1"]);

test("SIGKILL mid-call: after a restart the receiver gets the same Idempotency-Key with the next attempt, and the job succeeds", {
  timeout: 60_000,
}, async () => {
  const rx = await receiver((_req, res, _hit, n) => {
    if (n === 1) return; // the first call hangs until its server dies
    res.writeHead(200);
    res.end();
  });
  const dir = mkdtempSync(join(tmpdir(), "duetime-http-kill-"));
  const store = testStore(dir);
  let first: ServerProcess | undefined;
  let second: ServerProcess | undefined;
  try {
    first = await serve(store);
    const client = new DuetimeClient({ url: first.url, retries: 0 });
    const job = await client.createJob({
      name: "mid-call",
      target: { type: "http", url: rx.url },
      payload: { charge: 42 },
      schedule: { delaySeconds: 0 },
      timeoutSeconds: 2, // the lease ends timeoutSeconds + 5 s after the call was sent
      retry: { maxAttempts: 3, backoffSeconds: 0.1 },
    });
    await client.close();
    await waitFor(() => rx.hits.length === 1, "the first call arrived", 30_000);
    await first.stop("SIGKILL");

    second = await serve(store);
    const again = new DuetimeClient({ url: second.url, retries: 0 });
    try {
      await waitFor(async () => (await again.getJob(job.jobId)).state === "COMPLETED", "completed after the restart", 30_000);
      const history = (await again.listExecutions(job.jobId)).items;
      assert.deepEqual(
        history.map((i) => [i.attempt, i.state]),
        [
          [2, "SUCCEEDED"],
          [1, "TIMED_OUT"],
        ],
      );
    } finally {
      await again.close();
    }
    assert.equal(rx.hits.length, 2);
    const [a, b] = rx.hits as [Hit, Hit];
    assert.equal(b.headers["idempotency-key"], a.headers["idempotency-key"]);
    assert.equal(b.headers["duetime-execution-id"], a.headers["duetime-execution-id"]);
    assert.deepEqual([a.headers["duetime-attempt"], b.headers["duetime-attempt"]], ["1", "2"]);
    assert.equal(b.body, a.body);
    assert.ok(b.at - a.at >= 2000, "the lease was honoured before the call was sent again");
  } finally {
    for (const node of [first, second]) await node?.stop("SIGKILL");
    await rx.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
