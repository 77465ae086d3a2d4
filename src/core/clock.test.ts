import assert from "node:assert/strict";
import { test } from "node:test";
import { FakeClock, systemClock } from "./clock.js";

test("a fake clock pins the time a store judges leases by; the system clock leaves it to the store's own clock", () => {
  const clock = new FakeClock(1_000);
  clock.advance(500);
  assert.equal(clock.storeNow(), 1_500);
  assert.equal(systemClock.storeNow(), undefined);
});
