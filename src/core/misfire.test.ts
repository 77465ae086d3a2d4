import assert from "node:assert/strict";
import { test } from "node:test";
import { completesAtDispatch, overlapAction, skippedError } from "./misfire.js";

test("overlap: nothing in flight always runs; in flight, allow runs, forbid skips, replace replaces", () => {
  for (const policy of ["allow", "forbid", "replace"] as const) assert.equal(overlapAction(policy, false), "run");
  assert.equal(overlapAction("allow", true), "run");
  assert.equal(overlapAction("forbid", true), "skip");
  assert.equal(overlapAction("replace", true), "replace");
});

test("a recurring job completes at the dispatch of its last occurrence; a one-off never at dispatch", () => {
  assert.equal(completesAtDispatch("cron", false), true);
  assert.equal(completesAtDispatch("cron", true), false);
  assert.equal(completesAtDispatch("once", false), false);
});

test("a skipped execution's error names its reason", () => {
  assert.deepEqual(skippedError("overlap"), { message: "skipped: the previous occurrence was still running (overlap: forbid)", reason: "overlap" });
  assert.deepEqual(skippedError("paused"), { message: "skipped: paused", reason: "paused" });
});
