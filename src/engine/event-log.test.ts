// The event log's choices that a workload does not show: floods told once
// per 10 s with a count of what was skipped, store faults not told again as
// loop errors, retention runs at info only when they removed something, and
// nothing written after the unsubscribe.

import assert from "node:assert/strict";
import { test } from "node:test";
import { pino } from "pino";
import { StoreUnavailableError } from "../core/errors.js";
import { logEngineEvents } from "./event-log.js";
import { EngineEvents } from "./events.js";

function setup(level = "info") {
  const raw: string[] = [];
  const events = new EngineEvents();
  let t = 0;
  const off = logEngineEvents(events, pino({ level }, { write: (l: string) => void raw.push(l) }), { now: () => t });
  return {
    events,
    off,
    advance: (ms: number) => (t += ms),
    lines: () => raw.map((l) => JSON.parse(l) as { level: number; msg: string; [k: string]: unknown }),
  };
}

test("store faults and due spikes are told once per 10 s per kind, with how many were skipped", () => {
  const s = setup();
  for (let i = 0; i < 5; i++) s.events.emit("store:fault", { op: "executionLease", kind: "connection" });
  s.events.emit("store:fault", { op: "jobCreateMany", kind: "connection" });
  s.events.emit("due:spike", { tenantId: "acme", window: "second" });
  s.events.emit("due:spike", { tenantId: "acme", window: "second" });
  s.advance(10_000);
  s.events.emit("store:fault", { op: "executionLease", kind: "connection" });
  const lines = s.lines().map((l) => [l.level, l.msg, l.op ?? l.tenantId, l.suppressed]);
  assert.deepEqual(lines, [
    [50, "store call failed: the store cannot serve", "executionLease", 0],
    [50, "store call failed: the store cannot serve", "jobCreateMany", 0],
    [40, "due spike: a tenant's work piles up in one window (DUE_SPIKE)", "acme", 0],
    [50, "store call failed: the store cannot serve", "executionLease", 4],
  ]);
});

test("a loop's store fault is not an error line; any other failure is, with where", () => {
  const s = setup();
  s.events.emit("error", { where: "scheduler", error: new StoreUnavailableError("full", "disk full") });
  s.events.emit("error", { where: "reaper", error: new Error("bug") });
  const lines = s.lines();
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.level, 50);
  assert.equal(lines[0]!.where, "reaper");
  assert.equal((lines[0]!.err as { message: string }).message, "bug");
});

test("a retention run is info when it removed rows, debug otherwise; nothing is written after the unsubscribe", () => {
  const s = setup();
  const none = { executions: 0, jobs: 0, idempotency: 0, audit: 0 };
  s.events.emit("retention:ran", { deleted: none, ms: 3 });
  s.events.emit("retention:ran", { deleted: { ...none, executions: 500 }, ms: 40 });
  s.off();
  s.events.emit("retention:ran", { deleted: { ...none, jobs: 1 }, ms: 1 });
  assert.deepEqual(
    s.lines().map((l) => [l.level, l.msg, (l.deleted as typeof none).executions]),
    [[30, "retention run", 500]],
  );
});
