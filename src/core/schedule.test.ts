// Per-job jitter: a stable offset within [0, jitterSeconds], for any jitter the
// schema accepts, fractions of a millisecond included.

import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { jitterMs } from "./schedule.js";

test("jitter: any accepted jitterSeconds (fractions of a millisecond too) gives a stable whole-ms offset within it", () => {
  for (const jitterSeconds of [0.0001, 0.0015, 0.5, 1, 300]) {
    const offset = jitterMs(jitterSeconds, "job-a");
    assert.ok(Number.isInteger(offset) && offset >= 0 && offset <= Math.round(jitterSeconds * 1000), `${jitterSeconds} s → ${offset} ms`);
    assert.equal(jitterMs(jitterSeconds, "job-a"), offset, "stable for one job");
  }
  fc.assert(
    fc.property(fc.double({ min: 0, max: 86_400, noNaN: true }), fc.string(), (jitterSeconds, jobId) => {
      const offset = jitterMs(jitterSeconds, jobId);
      return Number.isInteger(offset) && offset >= 0 && offset <= Math.round(jitterSeconds * 1000);
    }),
  );
  assert.equal(jitterMs(0, "job-a"), 0);
});
