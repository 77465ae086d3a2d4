import assert from "node:assert/strict";
import { test } from "node:test";
import { parseRfc3339, toIso } from "./time.js";

test("parses RFC 3339 with Z, offsets and fractions", () => {
  assert.equal(parseRfc3339("2026-10-16T09:00:00Z"), Date.UTC(2026, 9, 16, 9));
  assert.equal(parseRfc3339("2026-10-16T10:00:00+01:00"), Date.UTC(2026, 9, 16, 9));
  assert.equal(parseRfc3339("2026-10-16T09:00:00.123Z"), Date.UTC(2026, 9, 16, 9, 0, 0, 123));
});

test("rejects what is not RFC 3339", () => {
  for (const bad of ["2026-10-16", "2026-10-16T09:00:00", "tomorrow", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-1-1T00:00:00Z", ""]) {
    assert.equal(parseRfc3339(bad), null, bad);
  }
});

test("knows each month's last day, leap years by the Gregorian rule", () => {
  assert.equal(parseRfc3339("2024-02-29T00:00:00Z"), Date.UTC(2024, 1, 29));
  assert.equal(parseRfc3339("2000-02-29T00:00:00Z"), Date.UTC(2000, 1, 29));
  assert.equal(parseRfc3339("2026-12-31 23:59:59Z"), Date.UTC(2026, 11, 31, 23, 59, 59));
  for (const bad of ["2026-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-10-16T24:00:00Z", "1899-12-31T23:59:59Z"]) {
    assert.equal(parseRfc3339(bad), null, bad);
  }
});

test("writes UTC with millisecond precision", () => {
  assert.equal(toIso(Date.UTC(2026, 9, 16, 9)), "2026-10-16T09:00:00.000Z");
});

test("toIso answers each time its own string, however the calls alternate, and refuses what is not a time", () => {
  const a = Date.UTC(2026, 9, 16, 9);
  const b = a + 1;
  assert.deepEqual(
    [toIso(a), toIso(a), toIso(b), toIso(a)],
    ["2026-10-16T09:00:00.000Z", "2026-10-16T09:00:00.000Z", "2026-10-16T09:00:00.001Z", "2026-10-16T09:00:00.000Z"],
  );
  assert.throws(() => toIso(Number.NaN), RangeError);
  assert.equal(toIso(b), "2026-10-16T09:00:00.001Z");
});
