// The HTTP-target runner driven by runOnce() on a fake clock, against a real
// SQLite store and a real HTTP server on loopback: a pass leases what is
// ready and calls it, a pass with nothing ready answers at once (it never
// long-polls), and stop() writes the outcome of what a pass started.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { openEngine } from "./engine.js";
import { HttpTargetRunner } from "./http-target.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-http-target-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("runOnce: a pass calls what is ready, a pass with nothing ready answers at once, stop() records the outcome", async () => {
  const requests: IncomingMessage[] = [];
  let called: () => void = () => {};
  const server = createServer((req, res) => {
    requests.push(req);
    res.end("ok");
    called();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

  const clock = new FakeClock(Date.parse("2026-03-01T00:00:00Z"));
  const engine = await openEngine({ store: `sqlite:${join(dir, "runner.db")}`, clock, nodeId: "node-x", httpTargets: false });
  const runner = new HttpTargetRunner({
    executor: engine.executor,
    events: engine.events,
    clock,
    nodeId: "node-x",
    heartbeat: async () => ({ status: "not_found" }),
    allowTargetHosts: ["127.0.0.1"],
  });
  try {
    // Not started: nothing leases unless a pass is run, and an empty pass does not wait for work.
    assert.equal(await runner.runOnce(), 0);

    const job = await engine.service.createJob(ctx, { name: "hook", target: { type: "http", url }, schedule: { delaySeconds: 0 } });
    const reached = new Promise<void>((resolve) => (called = resolve));
    assert.equal(await runner.runOnce(), 1, "the ready call is leased");
    await reached;
    assert.equal(requests.length, 1);
    assert.equal(requests[0]!.url, "/hook");

    await runner.stop();
    assert.equal((await engine.service.getJob(ctx, job.jobId)).state, "COMPLETED", "the outcome was written at stop()");
    assert.equal(await runner.runOnce(), 0, "a stopped runner leases nothing");
  } finally {
    await runner.stop();
    await engine.stop();
    await new Promise((resolve) => server.close(resolve));
  }
});
