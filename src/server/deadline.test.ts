// Every /v1 request has a server-side deadline, over a real socket: a service
// call that never settles answers 503 UNAVAILABLE (with Retry-After) when the
// deadline passes, and its signal is aborted; a long poll's deadline is its
// waitSeconds more.

import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import { performance } from "node:perf_hooks";
import type { RequestContext } from "../engine/service.js";
import { buildApp } from "./app.js";
import { RecordingService } from "./test-support.js";

const DEADLINE_MS = 300;
const svc = new RecordingService();
const app = buildApp({ service: svc, requestDeadlineMs: DEADLINE_MS });
await app.listen({ host: "127.0.0.1", port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
after(() => app.close());

/** A service method that never settles; resolves `seen` with the request's context. */
function hang(method: string): Promise<RequestContext> {
  return new Promise((seen) => {
    svc.override[method] = async (ctx) => {
      seen(ctx as RequestContext);
      return new Promise(() => {});
    };
  });
}

async function timed(
  path: string,
  init?: RequestInit,
): Promise<{ response: Response; body: { error: { code: string; message: string } }; ms: number }> {
  const start = performance.now();
  const response = await fetch(base + path, init);
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { response, body, ms: performance.now() - start };
}

test("a service call that never settles answers 503 UNAVAILABLE at the deadline, and its signal is aborted", async () => {
  const seen = hang("listJobs");
  const { response, body, ms } = await timed("/v1/jobs");
  assert.equal(response.status, 503);
  assert.equal(body.error.code, "UNAVAILABLE");
  assert.equal(body.error.message, "the request did not finish within its deadline of 0.3 s");
  assert.ok(Number(response.headers.get("retry-after")) > 0, "Retry-After");
  assert.ok(ms >= DEADLINE_MS - 20, `answered after ${ms} ms`);
  const ctx = await seen;
  assert.equal(ctx.signal?.aborted, true);
  assert.equal((ctx.signal!.reason as Error).message, body.error.message);
  // The server is still serving.
  delete svc.override.listJobs;
  assert.equal((await fetch(`${base}/v1/jobs`)).status, 200);
});

test("a long poll's deadline is its waitSeconds more", async () => {
  void hang("lease");
  const { response, body, ms } = await timed("/v1/pools/p/lease", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ workerId: "w", waitSeconds: 1 }),
  });
  assert.equal(response.status, 503);
  assert.match(body.error.message, /deadline of 1\.3 s/);
  assert.ok(ms >= 1000 + DEADLINE_MS - 20, `answered after ${ms} ms`);
  delete svc.override.lease;
});

test("authentication that waits on the store (a stored key, or whether there are any) answers 503 UNAVAILABLE at the deadline too", async () => {
  const stuck = new RecordingService();
  stuck.hasStoredKeys = () => new Promise(() => {}); // the store's answer never comes: a half-open link
  const stuckApp = buildApp({ service: stuck, requestDeadlineMs: DEADLINE_MS });
  await stuckApp.listen({ host: "127.0.0.1", port: 0 });
  try {
    const response = await fetch(`http://127.0.0.1:${(stuckApp.server.address() as AddressInfo).port}/v1/jobs`);
    const body = (await response.json()) as { error: { code: string; message: string } };
    assert.equal(response.status, 503);
    assert.equal(body.error.code, "UNAVAILABLE");
    assert.ok(Number(response.headers.get("retry-after")) > 0, "Retry-After");
  } finally {
    await stuckApp.close();
  }
});
