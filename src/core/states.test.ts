import assert from "node:assert/strict";
import { test } from "node:test";
import { JOB_STATES } from "./api.js";
import { jobVerdict } from "./states.js";

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
