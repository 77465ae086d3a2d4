// startServer's lifecycle with a stand-in engine (the real engine's
// integration tests live under test/): the engine is opened with the
// contract's options and started before the server listens; close() ends
// long polls, closes the app, then stops the engine.

import { createServer } from "node:net";
import { hostname } from "node:os";
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Engine, EngineOptions } from "../engine/engine.js";
import { EngineEvents } from "../engine/events.js";
import type { RequestContext } from "../engine/service.js";
import { startServer, type ServerOptions } from "./index.js";
import { RecordingService } from "./test-support.js";

function fakeEngine(
  log: string[],
  options: { failStart?: boolean } = {},
): { open: (o: EngineOptions) => Promise<Engine>; opened: EngineOptions[]; svc: RecordingService } {
  const svc = new RecordingService();
  const opened: EngineOptions[] = [];
  const engine = {
    nodeId: "node-test",
    service: svc,
    events: new EngineEvents(),
    async start() {
      log.push("start");
      if (options.failStart) throw new Error("cannot start");
    },
    async stop() {
      log.push("stop");
    },
    async metricsText() {
      return "duetime_engine_up 1\n";
    },
  } as unknown as Engine;
  return {
    svc,
    opened,
    async open(o) {
      log.push("open");
      opened.push(o);
      return engine;
    },
  };
}

/** A port free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const base: Omit<ServerOptions, "openEngine"> = {
  host: "127.0.0.1",
  port: 0,
  store: "sqlite::memory:",
  signingSecret: "s3cret",
  allowTargetHosts: ["127.0.0.1", "localhost"],
  retention: { historyMs: 86_400_000, archiveDir: "archive" },
  logLevel: "silent",
};

test("opens the engine with the contract's options, starts it, then listens on the real port", async () => {
  const log: string[] = [];
  const fake = fakeEngine(log);
  const server = await startServer({ ...base, openEngine: fake.open });
  try {
    assert.deepEqual(fake.opened, [
      {
        store: "sqlite::memory:",
        signingSecret: "s3cret",
        allowTargetHosts: ["127.0.0.1", "localhost"],
        retention: { historyMs: 86_400_000, archiveDir: "archive" },
      },
    ]);
    assert.deepEqual(log, ["open", "start"]);
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(server.url, "http://127.0.0.1:0");
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    const stats = await fetch(`${server.url}/v1/stats`);
    assert.equal(stats.status, 200);
    assert.equal(fake.svc.last().method, "stats");
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, /^duetime_engine_up 1$/m);
    assert.match(metrics, /duetime_http_request_duration_seconds/);
  } finally {
    await server.close();
  }
  assert.deepEqual(log, ["open", "start", "stop"]);
});

test("only the options given are passed to the engine", async () => {
  const fake = fakeEngine([]);
  const server = await startServer({ host: "127.0.0.1", port: 0, store: "sqlite::memory:", logLevel: "silent", openEngine: fake.open });
  await server.close();
  assert.deepEqual(fake.opened, [{ store: "sqlite::memory:" }]);
});

test("the node id is given, or HOSTNAME-PORT on a fixed port, which is also the node's address", async () => {
  const given = fakeEngine([]);
  await (await startServer({ ...base, nodeId: "node-a", openEngine: given.open })).close();
  assert.equal(given.opened[0]!.nodeId, "node-a");
  const port = await freePort();
  const fixed = fakeEngine([]);
  await (await startServer({ ...base, port, openEngine: fixed.open })).close();
  assert.equal(fixed.opened[0]!.nodeId, `${hostname()}-${port}`);
  assert.equal(fixed.opened[0]!.address, `127.0.0.1:${port}`);
});

test("API keys and the body limit reach the app", async () => {
  const fake = fakeEngine([]);
  const server = await startServer({
    ...base,
    apiKeys: [{ key: "k1", tenantId: "t1", role: "client" }],
    bodyLimitBytes: 2000,
    openEngine: fake.open,
  });
  try {
    assert.equal((await fetch(`${server.url}/v1/jobs`)).status, 401);
    const ok = await fetch(`${server.url}/v1/jobs`, { headers: { authorization: "Bearer k1" } });
    assert.equal(ok.status, 200);
    assert.equal(fake.svc.last().ctx?.tenantId, "t1");
    const big = await fetch(`${server.url}/v1/jobs/j1:pause`, {
      method: "POST",
      headers: { authorization: "Bearer k1", "content-type": "application/json" },
      body: JSON.stringify({ pad: "x".repeat(3000) }),
    });
    assert.equal(big.status, 413);
  } finally {
    await server.close();
  }
});

test("close() ends a long poll, closes the app before stopping the engine, and is idempotent", async () => {
  const log: string[] = [];
  const fake = fakeEngine(log);
  const server = await startServer({ ...base, openEngine: fake.open });
  let entered!: () => void;
  const inPoll = new Promise<void>((r) => (entered = r));
  fake.svc.override.lease = async (ctx) => {
    entered();
    await new Promise<void>((resolve) => (ctx as RequestContext).signal?.addEventListener("abort", () => resolve(), { once: true }));
    log.push("poll ended");
    return { items: [] };
  };
  const poll = fetch(`${server.url}/v1/pools/p/lease`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ workerId: "w", waitSeconds: 60 }),
  });
  await inPoll;
  await Promise.all([server.close(), server.close()]);
  assert.equal((await poll).status, 200);
  assert.deepEqual(log, ["open", "start", "poll ended", "stop"]);
  await server.close();
  assert.deepEqual(
    log.filter((l) => l === "stop"),
    ["stop"],
  );
});

test("a failing engine start stops the engine and rejects", async () => {
  const log: string[] = [];
  const fake = fakeEngine(log, { failStart: true });
  await assert.rejects(startServer({ ...base, openEngine: fake.open }), /cannot start/);
  assert.deepEqual(log, ["open", "start", "stop"]);
});

test("a port in use stops the engine and rejects", async () => {
  const first = await startServer({ ...base, openEngine: fakeEngine([]).open });
  const log: string[] = [];
  try {
    const port = Number(new URL(first.url).port);
    await assert.rejects(startServer({ ...base, port, openEngine: fakeEngine(log).open }), /EADDRINUSE/);
    assert.deepEqual(log, ["open", "start", "stop"]);
  } finally {
    await first.close();
  }
});
