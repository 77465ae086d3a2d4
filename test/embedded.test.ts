// Embedded mode: the engine in-process, the same client API, in-process workers.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createDuetime } from "../src/embedded/index.js";
import { DuetimeError } from "../src/core/errors.js";
import { waitFor } from "./helpers.js";

test("embedded: create, run in an in-process worker, complete, and stop without waiting out the long poll", async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-emb-"));
  try {
    const duetime = await createDuetime({ store: `sqlite:${join(dir, "x.db")}`, httpTargets: false });
    const job = await duetime.client.createJob({
      name: "embedded",
      target: { type: "queue", pool: "local" },
      payload: { n: 1 },
      schedule: { delaySeconds: 0 },
    });
    const seen: unknown[] = [];
    void duetime.worker({ pool: "local", waitSeconds: 30, handler: async (j) => void seen.push(j.payload) }).run();
    await waitFor(async () => (await duetime.client.getJob(job.jobId)).state === "COMPLETED", "completed");
    assert.deepEqual(seen, [{ n: 1 }]);
    const started = Date.now();
    await duetime.stop();
    assert.ok(Date.now() - started < 10_000, "stop waited for the 30 s long poll");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("embedded: bad input is rejected with the same field-naming errors as the server", async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-emb-"));
  const duetime = await createDuetime({ store: `sqlite:${join(dir, "x.db")}`, httpTargets: false });
  try {
    await assert.rejects(
      duetime.client.createJob({ name: "x", target: { type: "queue", pool: "p" }, schedule: { cron: "0 25 * * *" } }),
      (err: unknown) => err instanceof DuetimeError && err.code === "INVALID_ARGUMENT" && err.details?.field === "schedule.cron",
    );
    await assert.rejects(
      duetime.client.createJob({ name: "", target: { type: "queue", pool: "p" }, schedule: { delaySeconds: 1 } }),
      (err: unknown) => err instanceof DuetimeError && err.details?.field === "name",
    );
    await assert.rejects(duetime.client.getJob("not-an-id"), (err: unknown) => err instanceof DuetimeError && err.code === "NOT_FOUND");
  } finally {
    await duetime.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("embedded: a worker that keeps finding due work lets timers run between its calls", async () => {
  // Over HTTP every call waits for I/O; in-process, a lease-run-ack loop could
  // go round on promises alone and starve the event loop (a steady stream of
  // due jobs blocked it for seconds). Count turns of the loop between the
  // worker's store calls: each call must come in a turn of its own.
  const dir = mkdtempSync(join(tmpdir(), "duetime-emb-"));
  let turns = 0;
  let running = true;
  const tick = () => {
    turns++;
    if (running) setImmediate(tick);
  };
  const seenAt: number[] = [];
  const duetime = await createDuetime({
    store: `sqlite:${join(dir, "x.db")}`,
    httpTargets: false,
    storeWrapper: (store) =>
      new Proxy(store, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver);
          if (key !== "executionAckAndLease" || typeof value !== "function") return value;
          return (...args: unknown[]) => {
            seenAt.push(turns);
            return value.apply(target, args);
          };
        },
      }),
  });
  try {
    const jobs = Array.from({ length: 600 }, (_, i) => ({
      name: "busy",
      target: { type: "queue" as const, pool: "busy" },
      payload: { i },
      schedule: { delaySeconds: 0 },
    }));
    await duetime.client.createJobs(jobs);
    let done = 0;
    tick();
    void duetime.worker({ pool: "busy", concurrency: 5, ackDelayMs: 0, waitSeconds: 1, handler: async () => void done++ }).run();
    await waitFor(() => done === jobs.length, "every job ran");
    running = false;
    assert.ok(seenAt.length >= 20, `the worker went round ${seenAt.length} times`);
    const sameTurn = seenAt.filter((t, i) => i > 0 && t === seenAt[i - 1]).length;
    assert.equal(sameTurn, 0, `${sameTurn} of ${seenAt.length} lease calls came in the same turn of the event loop as the one before`);
  } finally {
    running = false;
    await duetime.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
