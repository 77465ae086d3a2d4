// The HTTP layer over a real socket: what app.inject cannot show (body limits
// as a client streams them, a client that goes away mid long poll, keep-alive,
// shutdown during a long poll). Raw-socket answers of the HTTP layer itself:
// http-layer.test.ts.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { Agent, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { request } from "undici";
import type { RequestContext } from "../engine/service.js";
import { buildApp, HTTP_TIMEOUTS } from "./app.js";
import { RecordingService } from "./test-support.js";

interface Started {
  app: FastifyInstance;
  svc: RecordingService;
  base: string;
  port: number;
}

async function start(options: { bodyLimitBytes?: number } = {}): Promise<Started> {
  const svc = new RecordingService();
  const app = buildApp({ service: svc, ...options });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return { app, svc, base: `http://127.0.0.1:${port}`, port };
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const QUEUE_JOB = { name: "q", target: { type: "queue", pool: "emails" }, schedule: { delaySeconds: 30 } };

describe("over a real socket", () => {
  let s: Started;
  before(async () => {
    s = await start();
  });
  after(async () => {
    await s.app.close();
  });

  test("a valid create answers 201 with the job", async () => {
    const res = await fetch(`${s.base}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": "k1" },
      body: JSON.stringify(QUEUE_JOB),
    });
    assert.equal(res.status, 201);
    assert.equal(((await res.json()) as { jobId: string }).jobId, "job_1");
    assert.deepEqual(s.svc.last().args, [QUEUE_JOB, { idempotencyKey: "k1" }]);
  });

  test("a 2 MiB body answers 413 PAYLOAD_TOO_LARGE with the envelope", async () => {
    const body = JSON.stringify({ ...QUEUE_JOB, payload: "x".repeat(2 * 1024 * 1024) });
    const res = await request(`${s.base}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body });
    assert.equal(res.statusCode, 413);
    const json = (await res.body.json()) as { error: { code: string; details: { limitBytes: number } } };
    assert.equal(json.error.code, "PAYLOAD_TOO_LARGE");
    assert.equal(json.error.details.limitBytes, 1024 * 1024);
  });

  test("a streamed (chunked) body over the limit answers 413 too", async () => {
    const chunk = "x".repeat(64 * 1024);
    async function* stream() {
      yield '{"name":"q","payload":"';
      for (let i = 0; i < 40; i++) yield chunk;
      yield '"}';
    }
    const res = await request(`${s.base}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: Readable.from(stream()),
    });
    assert.equal(res.statusCode, 413);
    assert.equal(((await res.body.json()) as { error: { code: string } }).error.code, "PAYLOAD_TOO_LARGE");
  });

  test("bad JSON answers 400 INVALID_ARGUMENT on body", async () => {
    const res = await fetch(`${s.base}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: "{'name': 1}" });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: { code: "INVALID_ARGUMENT", message: "body: is not valid JSON", details: { field: "body" } } });
  });

  test("a body without a content type answers 400 on content-type", async () => {
    const res = await request(`${s.base}/v1/jobs`, { method: "POST", body: JSON.stringify(QUEUE_JOB) });
    assert.equal(res.statusCode, 400);
    assert.equal(((await res.body.json()) as { error: { details: { field: string } } }).error.details.field, "content-type");
  });

  test("DELETE and actions accept an empty body with content-type: application/json", async () => {
    const del = await fetch(`${s.base}/v1/jobs/job_1`, { method: "DELETE", headers: { "content-type": "application/json" } });
    assert.equal(del.status, 204);
    const pause = await fetch(`${s.base}/v1/jobs/job_1:pause`, { method: "POST", headers: { "content-type": "application/json" } });
    assert.equal(pause.status, 200);
    const trigger = await fetch(`${s.base}/v1/jobs/job_1:trigger`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    assert.equal(trigger.status, 201);
  });

  test("an unknown route answers 404 with the envelope", async () => {
    const res = await fetch(`${s.base}/v2/jobs`);
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, "NOT_FOUND");
  });

  test("keep-alive: the socket is reused and idles at least 65 s", async () => {
    assert.ok(s.app.server.keepAliveTimeout >= 65_000);
    assert.ok(s.app.server.timeout === 0 || s.app.server.timeout > 60_000);
    assert.equal(s.app.server.keepAliveTimeout, HTTP_TIMEOUTS.keepAliveTimeoutMs);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const get = () =>
        new Promise<{ reused: boolean; keepAlive: string | undefined; status: number | undefined }>((resolve, reject) => {
          const req = httpRequest(`${s.base}/healthz`, { agent }, (res) => {
            res.resume();
            res.on("end", () => resolve({ reused: req.reusedSocket, keepAlive: String(res.headers["keep-alive"] ?? ""), status: res.statusCode }));
          });
          req.on("error", reject);
          req.end();
        });
      const first = await get();
      const second = await get();
      assert.equal(first.status, 200);
      assert.equal(first.reused, false);
      assert.equal(second.reused, true);
      const timeout = Number(/timeout=(\d+)/.exec(second.keepAlive ?? "")?.[1]);
      assert.ok(timeout >= 65, `keep-alive: ${second.keepAlive}`);
    } finally {
      agent.destroy();
    }
  });

  test("a client that goes away mid long poll aborts ctx.signal", async () => {
    const entered = deferred<RequestContext>();
    const aborted = deferred();
    s.svc.override.lease = async (ctx) => {
      const c = ctx as RequestContext;
      entered.resolve(c);
      await new Promise<void>((resolve) => {
        if (c.signal?.aborted) resolve();
        c.signal?.addEventListener("abort", () => resolve(), { once: true });
      });
      aborted.resolve();
      return { items: [] };
    };
    try {
      const client = new AbortController();
      const pending = fetch(`${s.base}/v1/pools/emails/lease`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ workerId: "w1", waitSeconds: 60 }),
        signal: client.signal,
      }).catch((err: unknown) => err);
      const ctx = await withTimeout(entered.promise, 5000, "the lease to reach the service");
      assert.equal(ctx.signal?.aborted, false);
      client.abort();
      await withTimeout(aborted.promise, 5000, "the service to see the abort");
      assert.equal(ctx.signal?.aborted, true);
      assert.ok((await pending) instanceof Error);
    } finally {
      delete s.svc.override.lease;
    }
  });

  test("a request that completes normally does not abort its signal", async () => {
    await fetch(`${s.base}/v1/stats`);
    const ctx = s.svc.last().ctx;
    // A second request on the same keep-alive socket is served after the first response closed.
    await fetch(`${s.base}/v1/stats`);
    assert.notEqual(s.svc.last().ctx, ctx);
    assert.equal(ctx?.signal?.aborted, false);
  });
});

describe("shutdown", () => {
  test("close() ends in-flight long polls at once, then refuses connections", async () => {
    const s = await start();
    const entered = deferred();
    s.svc.override.lease = async (ctx) => {
      const c = ctx as RequestContext;
      entered.resolve();
      await new Promise<void>((resolve) => c.signal?.addEventListener("abort", () => resolve(), { once: true }));
      return { items: [] };
    };
    const poll = fetch(`${s.base}/v1/pools/emails/lease`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ workerId: "w1", waitSeconds: 60 }),
    });
    await withTimeout(entered.promise, 5000, "the long poll to start");
    await withTimeout(s.app.close(), 5000, "close() while a 60 s long poll is open");
    const res = await poll;
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { items: [] });
    await assert.rejects(fetch(`${s.base}/healthz`));
  });

  test("a configured body limit applies over the socket", async () => {
    const s = await start({ bodyLimitBytes: 1000 });
    try {
      const res = await fetch(`${s.base}/v1/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...QUEUE_JOB, payload: "x".repeat(1000) }),
      });
      assert.equal(res.status, 413);
      assert.equal(((await res.json()) as { error: { details: { limitBytes: number } } }).error.details.limitBytes, 1000);
    } finally {
      await s.app.close();
    }
  });
});
