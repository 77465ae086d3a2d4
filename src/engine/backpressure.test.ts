// Backpressure against a real SQLite store slowed on purpose (a driver
// wrapper, the test seam EngineOptions.storeWrapper): creates answer 429
// with Retry-After while reads, leases, completes, pauses and cancels still
// answer; once the store is fast again, creates pass.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { JobSpec } from "@duetime/sdk/contract";
import { Registry } from "prom-client";
import { FakeClock } from "../core/clock.js";
import { DuetimeError, StoreUnavailableError } from "../core/errors.js";
import type { Store } from "../store/store.js";
import { Backpressure } from "./backpressure.js";
import { openEngine } from "./engine.js";
import { EngineEvents } from "./events.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-backpressure-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const job = (name: string): JobSpec => ({ name, target: { type: "queue", pool: "bp" }, schedule: { delaySeconds: 0 } });

/** Polls check until it is true, or fails after timeoutMs. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const refused = (err: unknown): DuetimeError | null => (err instanceof DuetimeError && err.code === "RESOURCE_EXHAUSTED" ? err : null);

test("a slowed store: creates answer 429 with Retry-After, the rest still answers; fast again, creates pass", async () => {
  let delayMs = 0;
  const slowed = (store: Store): Store =>
    new Proxy(store, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          if (delayMs > 0) await sleep(delayMs);
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    });
  const engine = await openEngine({
    store: `sqlite:${join(dir, "slow.db")}`,
    storeWrapper: slowed,
    backpressure: { storeLatencyMs: 100 },
    httpTargets: false,
  });
  await engine.start();
  const service = engine.service;
  try {
    const running = await service.createJob(ctx, job("running"));
    const other = await service.createJob(ctx, job("other"));
    const { items } = await service.lease(ctx, "bp", { workerId: "w", max: 1 });
    assert.equal(items.length, 1);

    delayMs = 200;
    let error: DuetimeError | null = null;
    await until(async () => {
      await Promise.all([1, 2, 3].map(() => service.getJob(ctx, running.jobId))); // store calls for the sample to measure
      error = await service.createJob(ctx, job("refused")).then(() => null, refused);
      return error !== null;
    }, "a create refused under a slow store");
    const e = error as unknown as DuetimeError;
    assert.equal(e.status, 429);
    assert.equal(e.retryAfterSeconds, 2);
    assert.deepEqual({ ...e.details, valueMs: 0 }, { reason: "backpressure", signal: "store_latency", valueMs: 0, thresholdMs: 100 });
    assert.ok((e.details?.valueMs as number) >= 100, `the signal's value is reported: ${e.details?.valueMs} ms`);

    // Everything but creates goes on, slowly.
    assert.equal((await service.getJob(ctx, running.jobId)).name, "running");
    assert.ok((await service.listJobs(ctx, {})).items.length >= 2);
    assert.deepEqual(await service.complete(ctx, items[0]!.executionId, items[0]!.attempt), { state: "SUCCEEDED" });
    assert.equal((await service.pauseJob(ctx, other.jobId)).state, "PAUSED");
    await service.cancelJob(ctx, other.jobId);
    assert.ok(Array.isArray((await service.lease(ctx, "bp", { workerId: "w", max: 1 })).items));

    delayMs = 0;
    await until(
      async () =>
        await service.createJob(ctx, job("later")).then(
          () => true,
          (err) => (refused(err) ? false : Promise.reject(err)),
        ),
      "creates pass again",
    );
    assert.match(await engine.metricsText(), /^duetime_backpressure_threshold_ms\{signal="store_latency"\} 100$/m);
  } finally {
    delayMs = 0;
    await engine.stop();
  }
});

test("the event loop held busy past its threshold sheds creates; a signal at 0 is off", async () => {
  const events = new EngineEvents();
  const clock = new FakeClock(); // samples are taken by runOnce() below, never by a timer
  const off = new Backpressure({ eventLoopDelayMs: 0, storeLatencyMs: 0, dueLagMs: 0 }, events, clock);
  const on = new Backpressure({ eventLoopDelayMs: 20, storeLatencyMs: 0, dueLagMs: 0 }, events, clock);
  on.start();
  off.start();
  try {
    await sleep(30); // the delay monitor's timer starts once the loop turns
    const busyUntil = performance.now() + 150;
    while (performance.now() < busyUntil) {} // holds the event loop, on purpose
    await sleep(20); // the histogram records the delay once the loop turns again
    await on.runOnce();
    await off.runOnce();
    const registry = new Registry();
    on.register(registry);
    assert.match(await registry.metrics(), /^duetime_backpressure_shedding 1$/m);
    assert.match(await registry.metrics(), /^duetime_backpressure_threshold_ms\{signal="event_loop_delay"\} 20$/m);
    assert.throws(
      () => on.checkCreate(),
      (err: DuetimeError) => err.details?.signal === "event_loop_delay" && (err.details.valueMs as number) > 20,
    );
    off.checkCreate();
  } finally {
    await on.stop();
    await off.stop();
  }
});

test("store calls that failed for a lost link do not shed creates (a half-open link's calls all end when it comes back); timeouts do", async () => {
  const backpressure = new Backpressure({ storeLatencyMs: 2_000 }, new EngineEvents(), new FakeClock());
  for (let i = 0; i < 5; i++) backpressure.observeStoreCall(35_000, new StoreUnavailableError("connection", new Error("Query read timeout")));
  backpressure.observeStoreCall(3);
  await backpressure.runOnce();
  assert.doesNotThrow(() => backpressure.checkCreate(), "a lost link is not load");
  for (let i = 0; i < 5; i++)
    backpressure.observeStoreCall(30_000, new StoreUnavailableError("timeout", new Error("canceling statement due to statement timeout")));
  await backpressure.runOnce();
  assert.throws(
    () => backpressure.checkCreate(),
    (err: unknown) => refused(err) !== null,
    "statements past their timeout are",
  );
});
