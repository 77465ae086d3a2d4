// The engine's clock follows the store's: a fake host clock and a fake store
// clock 30 s ahead or behind it (only clocks are faked here; the cluster
// tests run real nodes under faketime against PostgreSQL).

import assert from "node:assert/strict";
import { test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { StoreClock } from "./store-clock.js";

const T0 = Date.parse("2026-03-01T00:00:00Z");

/** A host clock that does not pin the store's time (as in production). */
function hostClock(): FakeClock {
  const clock = new FakeClock(T0);
  clock.storeNow = () => undefined;
  return clock;
}

test("now() is the store's time: a host 30 s behind or ahead reads the store's clock, halfway through the round trip", async () => {
  for (const skew of [30_000, -30_000]) {
    const host = hostClock();
    const clock = new StoreClock(host, {
      async storeTime() {
        host.advance(4); // a 4 ms read: the store answered 2 ms in
        return host.now() - 2 + skew;
      },
    });
    assert.equal(clock.now(), T0, "before the first reading, the host's");
    assert.equal(await clock.sync(), T0 + 2 + skew);
    assert.equal(clock.offset, skew);
    assert.equal(clock.now(), T0 + 4 + skew);
    host.advance(1000);
    assert.equal(clock.now(), T0 + 1004 + skew, "and moves with the host's");
  }
});

test("a clock that pins the store's time (a test's FakeClock) is left as it is", async () => {
  const pinned = new FakeClock(T0);
  let reads = 0;
  const clock = new StoreClock(pinned, {
    async storeTime() {
      reads++;
      return T0 + 30_000;
    },
  });
  assert.equal(await clock.sync(), T0);
  assert.equal(reads, 0);
  assert.equal(clock.now(), T0);
});

test("timers run on the host's clock: a delay is the same on both", async () => {
  const host = hostClock();
  const clock = new StoreClock(host, { storeTime: async () => host.now() + 30_000 });
  await clock.sync();
  let fired = false;
  clock.setTimer(() => (fired = true), 500);
  host.advance(499);
  assert.equal(fired, false);
  host.advance(1);
  assert.equal(fired, true);
});
