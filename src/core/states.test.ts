import assert from "node:assert/strict";
import { test } from "node:test";
import { JOB_STATES } from "@duetime/sdk/contract";
import {
  DISPATCHING_STATES,
  inFlightOnCancel,
  IN_FLIGHT_STATES,
  jobVerdict,
  LAST_DISPATCH_JOB_CHANGE,
  ONE_OFF_END,
  occurrenceHome,
  PENDING_ON_ACTION,
} from "./states.js";

test("cancel: scheduled and paused jobs are cancelled, repeating is a no-op, finished jobs refuse", () => {
  assert.deepEqual(jobVerdict("SCHEDULED", "cancel"), { kind: "apply", to: "CANCELLED" });
  assert.deepEqual(jobVerdict("PAUSED", "cancel"), { kind: "apply", to: "CANCELLED" });
  assert.deepEqual(jobVerdict("CANCELLED", "cancel"), { kind: "noop" });
  assert.deepEqual(jobVerdict("COMPLETED", "cancel"), { kind: "invalid" });
  assert.deepEqual(jobVerdict("DEAD", "cancel"), { kind: "invalid" });
});

test("pause and resume are no-ops when already there and invalid on ended jobs", () => {
  assert.deepEqual(jobVerdict("SCHEDULED", "pause"), { kind: "apply", to: "PAUSED" });
  assert.deepEqual(jobVerdict("PAUSED", "pause"), { kind: "noop" });
  assert.deepEqual(jobVerdict("PAUSED", "resume"), { kind: "apply", to: "SCHEDULED" });
  assert.deepEqual(jobVerdict("SCHEDULED", "resume"), { kind: "noop" });
  for (const s of ["CANCELLED", "COMPLETED", "DEAD"] as const) {
    assert.deepEqual(jobVerdict(s, "pause"), { kind: "invalid" });
    assert.deepEqual(jobVerdict(s, "resume"), { kind: "invalid" });
    assert.deepEqual(jobVerdict(s, "trigger"), { kind: "invalid" });
  }
});

test("every state has a verdict for every action", () => {
  for (const s of JOB_STATES) for (const a of ["cancel", "pause", "resume", "trigger"] as const) assert.ok(jobVerdict(s, a));
});

test("a one-off's end is read from its execution while its job is scheduled or paused; a cancel stays", () => {
  assert.deepEqual(ONE_OFF_END.over, ["SCHEDULED", "PAUSED"]);
  assert.deepEqual(ONE_OFF_END.by, { SUCCEEDED: "COMPLETED", DEAD: "DEAD" });
});

test("a last dispatch completes a scheduled job; only scheduled jobs are dispatched", () => {
  assert.deepEqual(LAST_DISPATCH_JOB_CHANGE, { from: "SCHEDULED", to: "COMPLETED" });
  assert.deepEqual(DISPATCHING_STATES, ["SCHEDULED"]);
});

test("cancelling in-flight executions ends waiting and held ones and asks running ones to stop, covering every in-flight state", () => {
  assert.deepEqual(inFlightOnCancel("end"), ["READY", "PAUSED"]);
  assert.deepEqual(inFlightOnCancel("ask_to_stop"), ["RUNNING"]);
  assert.deepEqual([...inFlightOnCancel("end"), ...inFlightOnCancel("ask_to_stop")].sort(), [...IN_FLIGHT_STATES].sort());
});

test("a one-off's occurrence is its execution, a recurring job's a due entry; pause holds a one-off's pending execution, resume releases it", () => {
  assert.equal(occurrenceHome("once"), "execution");
  assert.equal(occurrenceHome("cron"), "due");
  assert.deepEqual(PENDING_ON_ACTION, { pause: "hold", resume: "release" });
});
