// One-off jobs are inserted READY at submit time, so nothing dispatches them:
// a waiting long poll, or the HTTP-target runner, must wake at the due time
// on its own, on any node and after a restart of the node that took the job.
// Real clock, real SQLite file, real HTTP on loopback. The long poll's
// periodic re-check is set to a minute, so only the wake-up can start a job
// due in a second and a half on time.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { JobSpec } from "@duetime/sdk/contract";
import { openEngine, type Engine } from "./engine.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-wakeup-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** Far longer than the delays below: a job started on time was woken, not found by a re-check. */
const RECHECK_MS = 60_000;
/** How late after its due time a woken job may start on a busy 2-core machine. */
const ON_TIME_MS = 1_000;
const DELAY_SECONDS = 1.5;

async function node(file: string, httpTargets = false): Promise<Engine> {
  const engine = await openEngine({
    store: `sqlite:${file}`,
    nodeId: `n${files}`,
    httpTargets,
    allowTargetHosts: ["127.0.0.1"],
    pollIntervalMs: RECHECK_MS,
  });
  await engine.start();
  return engine;
}

/**
 * One turn of the event loop: the SQLite store answers synchronously, so a
 * long poll started before it has made its first lease and its look ahead
 * (finding nothing) by then, and only a wake-up can still reach it.
 */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

const oneOff = (target: JobSpec["target"]): JobSpec => ({ name: "soon", target, schedule: { delaySeconds: DELAY_SECONDS } });

function assertOnTime(startedAt: number, nextRunAt: string | null): void {
  assert.ok(nextRunAt);
  const lag = startedAt - Date.parse(nextRunAt);
  assert.ok(lag >= 0, `started ${-lag} ms before its due time`);
  assert.ok(lag < ON_TIME_MS, `started ${lag} ms after its due time`);
}

/** A long poll of the pool that outlasts the delay; resolves when it gets the job. */
async function longPoll(engine: Engine, pool: string): Promise<{ at: number; jobId: string | undefined }> {
  const { items } = await engine.service.lease(ctx, pool, { workerId: "w", max: 1, waitSeconds: 20 });
  return { at: Date.now(), jobId: items[0]?.jobId };
}

async function receiver() {
  let hit!: (at: number) => void;
  const called = new Promise<number>((resolve) => (hit = resolve));
  const server = createServer((req, res) => {
    const at = Date.now();
    req.resume();
    req.on("end", () => {
      res.end("ok");
      hit(at);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    called,
    close: () => new Promise((r) => server.close(r)),
  };
}

test("a long poll waiting when a one-off is created on its node wakes at the job's due time", async () => {
  const engine = await node(join(dir, `w${files++}.db`));
  try {
    const polling = longPoll(engine, "soon");
    await settled();
    const job = await engine.service.createJob(ctx, oneOff({ type: "queue", pool: "soon" }));
    const got = await polling;
    assert.equal(got.jobId, job.jobId);
    assertOnTime(got.at, job.nextRunAt);
  } finally {
    await engine.stop();
  }
});

test("a long poll on a node restarted after it took a one-off wakes at the job's due time (read from the store)", async () => {
  const file = join(dir, `w${files++}.db`);
  const before = await node(file);
  const job = await before.service.createJob(ctx, oneOff({ type: "queue", pool: "soon" }));
  await before.stop();
  const engine = await node(file);
  try {
    const got = await longPoll(engine, "soon");
    assert.equal(got.jobId, job.jobId);
    assertOnTime(got.at, job.nextRunAt);
  } finally {
    await engine.stop();
  }
});

test("the HTTP-target runner calls a one-off created on its node at the job's due time", async () => {
  const rx = await receiver();
  const engine = await node(join(dir, `w${files++}.db`), true);
  try {
    await settled();
    const job = await engine.service.createJob(ctx, oneOff({ type: "http", url: rx.url }));
    assertOnTime(await rx.called, job.nextRunAt);
  } finally {
    await engine.stop();
    await rx.close();
  }
});

test("the HTTP-target runner of a node restarted after it took a one-off calls it at the job's due time", async () => {
  const rx = await receiver();
  const file = join(dir, `w${files++}.db`);
  const before = await node(file);
  const job = await before.service.createJob(ctx, oneOff({ type: "http", url: rx.url }));
  await before.stop();
  const engine = await node(file, true);
  try {
    assertOnTime(await rx.called, job.nextRunAt);
  } finally {
    await engine.stop();
    await rx.close();
  }
});
