// Named tests of the daylight-saving rule. Transition instants were checked
// with Intl (Node 20, tzdata 2025c) before writing the expectations; the first
// test pins them so a tzdata change is reported as such.

import { test } from "node:test";
import assert from "node:assert/strict";
import type { DstOptions } from "@duetime/sdk/contract";
import { fireTimes, nextFireTime, parseCron } from "./index.js";
import { referenceFires, referenceTransitions } from "./reference.js";

/** Fires as "UTC-instant local-wall [dst]" strings, e.g. "07:00Z 02:30 gap" style but with full dates. */
function fires(source: string, tz: string, fromIso: string, n: number, dst?: DstOptions): string[] {
  const from = Date.parse(fromIso);
  const got = fireTimes(parseCron(source), tz, from, n, dst);
  // Every named case is also checked against the brute-force reference.
  if (got.length > 0) {
    const last = got[got.length - 1]!.at;
    assert.deepEqual(got, referenceFires(parseCron(source), tz, from, last, dst), `reference for ${source} in ${tz}`);
  }
  return got.map((f) => `${new Date(f.at).toISOString().slice(0, 16)}Z ${f.local.slice(0, 16)}${f.dst ? ` ${f.dst}` : ""}`);
}

test("transition instants used below (tzdata check)", () => {
  const iso = (tz: string, y: number) =>
    referenceTransitions(tz, Date.UTC(y, 0, 1), Date.UTC(y + 1, 0, 1)).map((t) => new Date(t).toISOString().slice(0, 16));
  assert.deepEqual(iso("America/New_York", 2026), ["2026-03-08T07:00", "2026-11-01T06:00"]);
  assert.deepEqual(iso("Europe/London", 2026), ["2026-03-29T01:00", "2026-10-25T01:00"]);
  assert.deepEqual(iso("Australia/Lord_Howe", 2026), ["2026-04-04T15:00", "2026-10-03T15:30"]);
  assert.deepEqual(iso("Pacific/Chatham", 2026), ["2026-04-04T14:00", "2026-09-26T14:00"]);
  assert.deepEqual(iso("Australia/Sydney", 2026), ["2026-04-04T16:00", "2026-10-03T16:00"]);
  assert.deepEqual(iso("America/Sao_Paulo", 2018), ["2018-02-18T02:00", "2018-11-04T03:00"]);
  assert.deepEqual(iso("America/Sao_Paulo", 2019), ["2019-02-17T02:00"]);
  assert.deepEqual(iso("America/Sao_Paulo", 2026), []);
  assert.deepEqual(iso("Asia/Kolkata", 2026), []);
});

// ---------------------------------------------------------------- New York
// 2026-03-08: 02:00 EST -> 03:00 EDT at 07:00Z. 2026-11-01: 02:00 EDT -> 01:00 EST at 06:00Z.

test("New York gap, fixed-time: 30 2 * * * fires once at 03:00 EDT (07:00Z)", () => {
  assert.deepEqual(fires("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 3), [
    "2026-03-08T07:00Z 2026-03-08T02:30 gap",
    "2026-03-09T06:30Z 2026-03-09T02:30",
    "2026-03-10T06:30Z 2026-03-10T02:30",
  ]);
});

test("New York gap, fixed-time with {gap: skip}: no fire that day", () => {
  assert.deepEqual(fires("30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", 2, { gap: "skip" }), [
    "2026-03-07T07:30Z 2026-03-07T02:30",
    "2026-03-09T06:30Z 2026-03-09T02:30",
  ]);
});

test("New York gap: several matching times in one gap fire once", () => {
  assert.deepEqual(fires("0,15,30,45 2 * * *", "America/New_York", "2026-03-08T06:00:00Z", 2), [
    "2026-03-08T07:00Z 2026-03-08T02:00 gap",
    "2026-03-09T06:00Z 2026-03-09T02:00",
  ]);
});

test("New York gap: when the transition's own wall time matches too, one fire at the transition", () => {
  assert.deepEqual(fires("30 2,3 * * *", "America/New_York", "2026-03-08T06:00:00Z", 2), [
    "2026-03-08T07:00Z 2026-03-08T02:30 gap",
    "2026-03-08T07:30Z 2026-03-08T03:30",
  ]);
  assert.deepEqual(fires("0,30 2,3 * * *", "America/New_York", "2026-03-08T06:00:00Z", 2), [
    "2026-03-08T07:00Z 2026-03-08T03:00",
    "2026-03-08T07:30Z 2026-03-08T03:30",
  ]);
});

test("New York overlap, fixed-time: 30 1 * * * fires once at 05:30Z (EDT, first)", () => {
  assert.deepEqual(fires("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2), [
    "2026-11-01T05:30Z 2026-11-01T01:30 overlap",
    "2026-11-02T06:30Z 2026-11-02T01:30",
  ]);
  // From inside the second pass (01:15 EST) the repeat does not fire.
  assert.deepEqual(fires("30 1 * * *", "America/New_York", "2026-11-01T06:15:00Z", 1), ["2026-11-02T06:30Z 2026-11-02T01:30"]);
});

test("New York overlap, fixed-time with {overlap: both}: fires at both instants", () => {
  assert.deepEqual(fires("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 3, { overlap: "both" }), [
    "2026-11-01T05:30Z 2026-11-01T01:30 overlap",
    "2026-11-01T06:30Z 2026-11-01T01:30 overlap",
    "2026-11-02T06:30Z 2026-11-02T01:30",
  ]);
});

test("New York wildcard */30: 01:00 and 01:30 fire twice on the fall-back day", () => {
  assert.deepEqual(fires("*/30 * * * *", "America/New_York", "2026-11-01T04:00:00Z", 7), [
    "2026-11-01T04:30Z 2026-11-01T00:30",
    "2026-11-01T05:00Z 2026-11-01T01:00 overlap",
    "2026-11-01T05:30Z 2026-11-01T01:30 overlap",
    "2026-11-01T06:00Z 2026-11-01T01:00 overlap",
    "2026-11-01T06:30Z 2026-11-01T01:30 overlap",
    "2026-11-01T07:00Z 2026-11-01T02:00",
    "2026-11-01T07:30Z 2026-11-01T02:30",
  ]);
});

test("New York wildcard */30 with {overlap: first}: repeats do not fire", () => {
  assert.deepEqual(fires("*/30 * * * *", "America/New_York", "2026-11-01T04:00:00Z", 4, { overlap: "first" }), [
    "2026-11-01T04:30Z 2026-11-01T00:30",
    "2026-11-01T05:00Z 2026-11-01T01:00 overlap",
    "2026-11-01T05:30Z 2026-11-01T01:30 overlap",
    "2026-11-01T07:00Z 2026-11-01T02:00",
  ]);
});

test("New York wildcard */30: 02:00 and 02:30 are skipped on spring-forward", () => {
  assert.deepEqual(fires("*/30 * * * *", "America/New_York", "2026-03-08T06:00:00Z", 3), [
    "2026-03-08T06:30Z 2026-03-08T01:30",
    "2026-03-08T07:00Z 2026-03-08T03:00",
    "2026-03-08T07:30Z 2026-03-08T03:30",
  ]);
});

test("New York wildcard with {gap: run_at_transition}: the skipped time fires at the transition", () => {
  assert.deepEqual(fires("15 * * * *", "America/New_York", "2026-03-08T06:00:00Z", 3), [
    "2026-03-08T06:15Z 2026-03-08T01:15",
    "2026-03-08T07:15Z 2026-03-08T03:15",
    "2026-03-08T08:15Z 2026-03-08T04:15",
  ]);
  assert.deepEqual(fires("15 * * * *", "America/New_York", "2026-03-08T06:00:00Z", 3, { gap: "run_at_transition" }), [
    "2026-03-08T06:15Z 2026-03-08T01:15",
    "2026-03-08T07:00Z 2026-03-08T02:15 gap",
    "2026-03-08T07:15Z 2026-03-08T03:15",
  ]);
  // */30 with run_at_transition: 02:00 and 02:30 merge into the transition's own 03:00.
  assert.deepEqual(fires("*/30 * * * *", "America/New_York", "2026-03-08T06:00:00Z", 3, { gap: "run_at_transition" }), [
    "2026-03-08T06:30Z 2026-03-08T01:30",
    "2026-03-08T07:00Z 2026-03-08T03:00",
    "2026-03-08T07:30Z 2026-03-08T03:30",
  ]);
});

test("New York: overrides are independent of each other", () => {
  // fixed-time with only overlap overridden keeps run_at_transition for the gap
  assert.deepEqual(fires("30 2 * * *", "America/New_York", "2026-03-08T00:00:00Z", 1, { overlap: "both" }), [
    "2026-03-08T07:00Z 2026-03-08T02:30 gap",
  ]);
  // wildcard with only gap overridden keeps "both" for the overlap
  assert.equal(fires("*/30 * * * *", "America/New_York", "2026-11-01T04:45:00Z", 4, { gap: "run_at_transition" }).length, 4);
  assert.deepEqual(
    fires("*/30 * * * *", "America/New_York", "2026-11-01T04:45:00Z", 4, { gap: "run_at_transition" })[2],
    "2026-11-01T06:00Z 2026-11-01T01:00 overlap",
  );
});

test("New York: a seconds field follows the same rule", () => {
  assert.deepEqual(fires("10 30 2 * * *", "America/New_York", "2026-03-08T06:00:00Z", 1), ["2026-03-08T07:00Z 2026-03-08T02:30 gap"]);
  const f = nextFireTime(parseCron("10 30 2 * * *"), "America/New_York", Date.parse("2026-03-08T06:00:00Z"))!;
  assert.equal(f.local, "2026-03-08T02:30:10");
  assert.equal(f.at, Date.parse("2026-03-08T07:00:00Z"));
  assert.deepEqual(fires("*/20 * 1 * * *", "America/New_York", "2026-11-01T05:59:20Z", 4), [
    "2026-11-01T05:59Z 2026-11-01T01:59 overlap",
    "2026-11-01T06:00Z 2026-11-01T01:00 overlap",
    "2026-11-01T06:00Z 2026-11-01T01:00 overlap",
    "2026-11-01T06:00Z 2026-11-01T01:00 overlap",
  ]);
});

// ---------------------------------------------------------------- London
// 2026-03-29: 01:00 GMT -> 02:00 BST at 01:00Z. 2026-10-25: 02:00 BST -> 01:00 GMT at 01:00Z.

test("London gap: 30 1 * * * fires at the transition (01:00Z); {gap: skip} drops it", () => {
  assert.deepEqual(fires("30 1 * * *", "Europe/London", "2026-03-28T12:00:00Z", 2), [
    "2026-03-29T01:00Z 2026-03-29T01:30 gap",
    "2026-03-30T00:30Z 2026-03-30T01:30",
  ]);
  assert.deepEqual(fires("30 1 * * *", "Europe/London", "2026-03-28T12:00:00Z", 1, { gap: "skip" }), ["2026-03-30T00:30Z 2026-03-30T01:30"]);
  assert.deepEqual(fires("0 1 * * *", "Europe/London", "2026-03-28T12:00:00Z", 1), ["2026-03-29T01:00Z 2026-03-29T01:00 gap"]);
});

test("London overlap: 30 1 * * * fires at 00:30Z (BST) only; {overlap: both} adds 01:30Z", () => {
  assert.deepEqual(fires("30 1 * * *", "Europe/London", "2026-10-24T12:00:00Z", 2), [
    "2026-10-25T00:30Z 2026-10-25T01:30 overlap",
    "2026-10-26T01:30Z 2026-10-26T01:30",
  ]);
  assert.deepEqual(fires("30 1 * * *", "Europe/London", "2026-10-24T12:00:00Z", 2, { overlap: "both" }), [
    "2026-10-25T00:30Z 2026-10-25T01:30 overlap",
    "2026-10-25T01:30Z 2026-10-25T01:30 overlap",
  ]);
});

test("London wildcard hourly: 01:00 skipped in spring, repeated in autumn", () => {
  assert.deepEqual(fires("0 * * * *", "Europe/London", "2026-03-28T23:30:00Z", 3), [
    "2026-03-29T00:00Z 2026-03-29T00:00",
    "2026-03-29T01:00Z 2026-03-29T02:00",
    "2026-03-29T02:00Z 2026-03-29T03:00",
  ]);
  assert.deepEqual(fires("@hourly", "Europe/London", "2026-10-24T22:30:00Z", 4), [
    "2026-10-24T23:00Z 2026-10-25T00:00",
    "2026-10-25T00:00Z 2026-10-25T01:00 overlap",
    "2026-10-25T01:00Z 2026-10-25T01:00 overlap",
    "2026-10-25T02:00Z 2026-10-25T02:00",
  ]);
  assert.deepEqual(fires("0 * * * *", "Europe/London", "2026-10-24T22:30:00Z", 3, { overlap: "first" }), [
    "2026-10-24T23:00Z 2026-10-25T00:00",
    "2026-10-25T00:00Z 2026-10-25T01:00 overlap",
    "2026-10-25T02:00Z 2026-10-25T02:00",
  ]);
});

test("London: fixed-time weekdays keep local time across the change", () => {
  assert.deepEqual(fires("0 9 * * MON-FRI", "Europe/London", "2026-03-26T12:00:00Z", 3), [
    "2026-03-27T09:00Z 2026-03-27T09:00",
    "2026-03-30T08:00Z 2026-03-30T09:00",
    "2026-03-31T08:00Z 2026-03-31T09:00",
  ]);
});

// ---------------------------------------------------------------- Lord Howe (30-minute shift)
// 2026-04-05: 02:00 (+11) -> 01:30 (+10:30) at 2026-04-04T15:00Z.
// 2026-10-04: 02:00 (+10:30) -> 02:30 (+11) at 2026-10-03T15:30Z.

test("Lord Howe gap (30 min): 15 2 * * * fires at the transition; skip drops it", () => {
  assert.deepEqual(fires("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", 2), [
    "2026-10-03T15:30Z 2026-10-04T02:15 gap",
    "2026-10-04T15:15Z 2026-10-05T02:15",
  ]);
  assert.deepEqual(fires("15 2 * * *", "Australia/Lord_Howe", "2026-10-02T00:00:00Z", 2, { gap: "skip" }), [
    "2026-10-02T15:45Z 2026-10-03T02:15",
    "2026-10-04T15:15Z 2026-10-05T02:15",
  ]);
  // 02:30 is the transition's own wall time: an ordinary fire.
  assert.deepEqual(fires("30 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", 1), ["2026-10-03T15:30Z 2026-10-04T02:30"]);
});

test("Lord Howe wildcard */15: 02:00 and 02:15 skipped", () => {
  assert.deepEqual(fires("*/15 * * * *", "Australia/Lord_Howe", "2026-10-03T15:00:00Z", 3), [
    "2026-10-03T15:15Z 2026-10-04T01:45",
    "2026-10-03T15:30Z 2026-10-04T02:30",
    "2026-10-03T15:45Z 2026-10-04T02:45",
  ]);
});

test("Lord Howe overlap (30 min): 45 1 * * * first only; both; wildcard repeats", () => {
  assert.deepEqual(fires("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z", 2), [
    "2026-04-04T14:45Z 2026-04-05T01:45 overlap",
    "2026-04-05T15:15Z 2026-04-06T01:45",
  ]);
  assert.deepEqual(fires("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z", 2, { overlap: "both" }), [
    "2026-04-04T14:45Z 2026-04-05T01:45 overlap",
    "2026-04-04T15:15Z 2026-04-05T01:45 overlap",
  ]);
  // 01:15 is not repeated (the overlap is 01:30-01:59).
  assert.deepEqual(fires("15 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z", 1), ["2026-04-04T14:15Z 2026-04-05T01:15"]);
  assert.deepEqual(fires("*/15 * * * *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z", 6), [
    "2026-04-04T14:15Z 2026-04-05T01:15",
    "2026-04-04T14:30Z 2026-04-05T01:30 overlap",
    "2026-04-04T14:45Z 2026-04-05T01:45 overlap",
    "2026-04-04T15:00Z 2026-04-05T01:30 overlap",
    "2026-04-04T15:15Z 2026-04-05T01:45 overlap",
    "2026-04-04T15:30Z 2026-04-05T02:00",
  ]);
});

// ---------------------------------------------------------------- Chatham (UTC+12:45 / +13:45)
// 2026-04-05: 03:45 (+13:45) -> 02:45 (+12:45) at 2026-04-04T14:00Z.
// 2026-09-27: 02:45 (+12:45) -> 03:45 (+13:45) at 2026-09-26T14:00Z.

test("Chatham gap (45-minute offset): 0 3 * * * fires at the transition", () => {
  assert.deepEqual(fires("0 3 * * *", "Pacific/Chatham", "2026-09-26T00:00:00Z", 2), [
    "2026-09-26T14:00Z 2026-09-27T03:00 gap",
    "2026-09-27T13:15Z 2026-09-28T03:00",
  ]);
  assert.deepEqual(fires("0,30 3 * * *", "Pacific/Chatham", "2026-09-26T00:00:00Z", 2), [
    "2026-09-26T14:00Z 2026-09-27T03:00 gap",
    "2026-09-27T13:15Z 2026-09-28T03:00",
  ]);
  assert.deepEqual(fires("45 3 * * *", "Pacific/Chatham", "2026-09-26T00:00:00Z", 1), ["2026-09-26T14:00Z 2026-09-27T03:45"]);
  assert.deepEqual(fires("0 3 * * *", "Pacific/Chatham", "2026-09-25T00:00:00Z", 2, { gap: "skip" }), [
    "2026-09-25T14:15Z 2026-09-26T03:00",
    "2026-09-27T13:15Z 2026-09-28T03:00",
  ]);
});

test("Chatham wildcard */30 across both changes", () => {
  assert.deepEqual(fires("*/30 * * * *", "Pacific/Chatham", "2026-09-26T13:30:00Z", 2), [
    "2026-09-26T13:45Z 2026-09-27T02:30",
    "2026-09-26T14:15Z 2026-09-27T04:00",
  ]);
  assert.deepEqual(fires("*/30 * * * *", "Pacific/Chatham", "2026-04-04T12:30:00Z", 6), [
    "2026-04-04T12:45Z 2026-04-05T02:30",
    "2026-04-04T13:15Z 2026-04-05T03:00 overlap",
    "2026-04-04T13:45Z 2026-04-05T03:30 overlap",
    "2026-04-04T14:15Z 2026-04-05T03:00 overlap",
    "2026-04-04T14:45Z 2026-04-05T03:30 overlap",
    "2026-04-04T15:15Z 2026-04-05T04:00",
  ]);
});

test("Chatham overlap: 0 3 * * * fires at the first 03:00 only, or both", () => {
  assert.deepEqual(fires("0 3 * * *", "Pacific/Chatham", "2026-04-04T00:00:00Z", 2), [
    "2026-04-04T13:15Z 2026-04-05T03:00 overlap",
    "2026-04-05T14:15Z 2026-04-06T03:00",
  ]);
  assert.deepEqual(fires("0 3 * * *", "Pacific/Chatham", "2026-04-04T00:00:00Z", 2, { overlap: "both" }), [
    "2026-04-04T13:15Z 2026-04-05T03:00 overlap",
    "2026-04-04T14:15Z 2026-04-05T03:00 overlap",
  ]);
});

// ---------------------------------------------------------------- other zones

test("Sydney (southern hemisphere): spring forward in October, back in April", () => {
  assert.deepEqual(fires("30 2 * * *", "Australia/Sydney", "2026-10-03T00:00:00Z", 2), [
    "2026-10-03T16:00Z 2026-10-04T02:30 gap",
    "2026-10-04T15:30Z 2026-10-05T02:30",
  ]);
  assert.deepEqual(fires("30 2 * * *", "Australia/Sydney", "2026-04-04T00:00:00Z", 2), [
    "2026-04-04T15:30Z 2026-04-05T02:30 overlap",
    "2026-04-05T16:30Z 2026-04-06T02:30",
  ]);
});

test("Sao Paulo: midnight transitions in 2018/2019, none since DST was abolished", () => {
  // 2018-11-04 00:00 -03 -> 01:00 -02: midnight does not exist.
  assert.deepEqual(fires("@daily", "America/Sao_Paulo", "2018-11-03T00:00:00Z", 2), [
    "2018-11-03T03:00Z 2018-11-03T00:00",
    "2018-11-04T03:00Z 2018-11-04T00:00 gap",
  ]);
  assert.deepEqual(fires("0 * * * *", "America/Sao_Paulo", "2018-11-04T01:30:00Z", 2), [
    "2018-11-04T02:00Z 2018-11-03T23:00",
    "2018-11-04T03:00Z 2018-11-04T01:00",
  ]);
  // 2019-02-17 00:00 -02 -> 2019-02-16 23:00 -03: 23:xx on the 16th repeats.
  assert.deepEqual(fires("30 23 * * *", "America/Sao_Paulo", "2019-02-16T12:00:00Z", 2), [
    "2019-02-17T01:30Z 2019-02-16T23:30 overlap",
    "2019-02-18T02:30Z 2019-02-17T23:30",
  ]);
  // Since 2019: always UTC-3.
  assert.deepEqual(fires("30 2 * * *", "America/Sao_Paulo", "2026-11-01T00:00:00Z", 2), [
    "2026-11-01T05:30Z 2026-11-01T02:30",
    "2026-11-02T05:30Z 2026-11-02T02:30",
  ]);
});

test("Kolkata (UTC+5:30, no DST) and UTC", () => {
  assert.deepEqual(fires("0 9 * * *", "Asia/Kolkata", "2026-03-08T00:00:00Z", 2), [
    "2026-03-08T03:30Z 2026-03-08T09:00",
    "2026-03-09T03:30Z 2026-03-09T09:00",
  ]);
  assert.deepEqual(fires("30 2 * * *", "UTC", "2026-03-08T00:00:00Z", 2), [
    "2026-03-08T02:30Z 2026-03-08T02:30",
    "2026-03-09T02:30Z 2026-03-09T02:30",
  ]);
});

test("every occurrence uses the offset at its own date, not the start's", () => {
  const got = fireTimes(parseCron("0 12 1 * *"), "America/New_York", Date.parse("2026-01-01T00:00:00Z"), 12);
  const hoursUtc = got.map((f) => new Date(f.at).getUTCHours());
  assert.deepEqual(hoursUtc, [17, 17, 17, 16, 16, 16, 16, 16, 16, 16, 17, 17]);
  assert.ok(got.every((f) => f.local.endsWith("T12:00:00") && f.dst === undefined));
});
