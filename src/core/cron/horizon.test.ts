// The next-fire search stops HORIZON_MS (30 × 366 days) after the time it
// starts from: a bound on the work a request or a job can cause, exact in
// every zone. docs/cron.md documents it.

import assert from "node:assert/strict";
import { test } from "node:test";
import { fireTimes, HORIZON_MS, nextFireTime, parseCron, REACH_MS } from "./index.js";

// Feb 29 on a Monday (the fifth Monday of February): 2016, 2044, 2072, then 2112 (2100 is no leap year).
const LEAP_MONDAY = parseCron("0 0 * 2 1#5");
const ZONES = ["UTC", "Europe/London", "America/New_York"];
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

test("a firing 28 years after the previous one is found, in every zone", () => {
  for (const tz of ZONES) {
    const from = nextFireTime(LEAP_MONDAY, tz, Date.parse("2017-01-01T00:00:00Z"))!;
    assert.equal(from.local, "2044-02-29T00:00:00", tz);
    assert.equal(nextFireTime(LEAP_MONDAY, tz, from.at)?.local, "2072-02-29T00:00:00", tz);
  }
});

test("a firing 40 years after the previous one is past the horizon: none", () => {
  for (const tz of ZONES) {
    const last = nextFireTime(LEAP_MONDAY, tz, Date.parse("2072-01-01T00:00:00Z"))!;
    assert.equal(last.local, "2072-02-29T00:00:00", tz);
    assert.equal(nextFireTime(LEAP_MONDAY, tz, last.at), null, tz);
    assert.deepEqual(
      fireTimes(LEAP_MONDAY, tz, Date.parse("2017-01-01T00:00:00Z"), 10).map((f) => f.local),
      ["2044-02-29T00:00:00", "2072-02-29T00:00:00"],
      tz,
    );
  }
});

test("the horizon is exact: a firing just inside it is found, one at it is not", () => {
  for (const tz of ZONES) {
    // 2112: nothing fires in the 30 years before it (2072 is 40 years earlier).
    const target = nextFireTime(LEAP_MONDAY, tz, Date.parse("2112-01-01T00:00:00Z"))!.at;
    assert.equal(iso(nextFireTime(LEAP_MONDAY, tz, target - HORIZON_MS + 1000)?.at), iso(target), tz);
    assert.equal(nextFireTime(LEAP_MONDAY, tz, target - HORIZON_MS), null, tz);
  }
});

test("fireTimes takes a whole count: Infinity is refused, not looped over", () => {
  const daily = parseCron("0 9 * * *");
  for (const count of [Infinity, NaN, -1, 1.5]) {
    assert.throws(() => fireTimes(daily, "UTC", 0, count), RangeError, String(count));
  }
  assert.equal(fireTimes(daily, "UTC", 0, 1000).length, 1000);
});

test("fireTimes reaches 100 years past its start at most: 1,000 Feb 29ths are not 4,000 years of work", () => {
  const leapDay = parseCron("0 0 29 2 *");
  const from = Date.parse("1970-01-01T00:00:00Z");
  for (const tz of ZONES) {
    const times = fireTimes(leapDay, tz, from, 1000);
    assert.equal(times.length, 25, tz); // 1972 … 2068: 2000 is a leap year
    assert.ok(
      times.every((f) => f.at < from + REACH_MS),
      tz,
    );
  }
});
