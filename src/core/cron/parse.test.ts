import { test } from "node:test";
import assert from "node:assert/strict";
import { CronSyntaxError, hashOffset, parseCron, nextFireTime, fireTimes, isValidTimeZone } from "./index.js";
import type { CronExpression } from "./index.js";

const range = (a: number, b: number, step = 1): number[] => {
  const out: number[] = [];
  for (let v = a; v <= b; v += step) out.push(v);
  return out;
};

function rejects(source: string, field: string, token: string, options?: { hashSeed?: string }): CronSyntaxError {
  let caught: unknown;
  try {
    parseCron(source, options);
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof CronSyntaxError, `${JSON.stringify(source)} should be rejected, got ${String(caught)}`);
  assert.ok(caught instanceof Error);
  assert.equal(caught.field, field, `field for ${JSON.stringify(source)}: ${caught.message}`);
  assert.equal(caught.token, token, `token for ${JSON.stringify(source)}: ${caught.message}`);
  assert.ok(caught.message.startsWith(`${field}: `), caught.message);
  assert.ok(caught.message.includes(JSON.stringify(token)), caught.message);
  return caught;
}

/** The fire times (UTC ISO, to the second) of an expression in UTC after an instant. */
function utc(source: string, fromIso: string, n: number): string[] {
  return fireTimes(parseCron(source), "UTC", Date.parse(fromIso), n).map((f) => new Date(f.at).toISOString().slice(0, 19));
}

test("five fields: every field as a plain value", () => {
  const e = parseCron("5 4 3 2 1");
  assert.equal(e.source, "5 4 3 2 1");
  assert.equal(e.hasSeconds, false);
  assert.deepEqual(e.seconds, [0]);
  assert.deepEqual(e.minutes, [5]);
  assert.deepEqual(e.hours, [4]);
  assert.deepEqual(e.daysOfMonth, [3]);
  assert.deepEqual(e.months, [2]);
  assert.deepEqual(e.daysOfWeek, [1]);
  assert.equal(e.dayOfMonthRestricted, true);
  assert.equal(e.dayOfWeekRestricted, true);
});

test("six fields: the leading field is seconds", () => {
  const e = parseCron("*/15 0 12 * * *");
  assert.equal(e.hasSeconds, true);
  assert.deepEqual(e.seconds, [0, 15, 30, 45]);
  assert.deepEqual(e.minutes, [0]);
  assert.deepEqual(e.hours, [12]);
  assert.deepEqual(utc("*/15 0 12 * * *", "2025-01-01T12:00:00Z", 3), ["2025-01-01T12:00:15", "2025-01-01T12:00:30", "2025-01-01T12:00:45"]);
});

test("whitespace: any runs of spaces and tabs, trimmed", () => {
  const e = parseCron("  0\t9   *  *\t MON-FRI \n");
  assert.deepEqual(e.minutes, [0]);
  assert.deepEqual(e.daysOfWeek, [1, 2, 3, 4, 5]);
});

test("wildcards, ranges, steps and lists", () => {
  assert.deepEqual(parseCron("* * * * *").minutes, range(0, 59));
  assert.deepEqual(parseCron("*/20 * * * *").minutes, [0, 20, 40]);
  assert.deepEqual(parseCron("10-14 * * * *").minutes, [10, 11, 12, 13, 14]);
  assert.deepEqual(parseCron("10-30/10 * * * *").minutes, [10, 20, 30]);
  assert.deepEqual(parseCron("50/3 * * * *").minutes, [50, 53, 56, 59]);
  assert.deepEqual(parseCron("0 */7 * * *").hours, [0, 7, 14, 21]);
  assert.deepEqual(parseCron("0 0 */10 * *").daysOfMonth, [1, 11, 21, 31]);
  assert.deepEqual(parseCron("0 0 1 */5 *").months, [1, 6, 11]);
  assert.deepEqual(parseCron("5,1-3,*/30,40/10,58-59/2 * * * *").minutes, [0, 1, 2, 3, 5, 30, 40, 50, 58]);
  assert.deepEqual(parseCron("0 0 * * 1/2").daysOfWeek, [1, 3, 5]);
  assert.deepEqual(parseCron("0 0 * * */2").daysOfWeek, [0, 2, 4, 6]);
  assert.deepEqual(parseCron("07 08 09 10 *").minutes, [7]);
  assert.deepEqual(parseCron("0 0 1 1 *").hours, [0]);
  assert.deepEqual(parseCron("0 0 31 12 *").daysOfMonth, [31]);
  assert.deepEqual(parseCron("59 23 * * *").minutes, [59]);
});

test("month and weekday names, any case, and name ranges", () => {
  assert.deepEqual(parseCron("0 0 1 JAN,mar,Dec *").months, [1, 3, 12]);
  assert.deepEqual(parseCron("0 0 1 feb-APR *").months, [2, 3, 4]);
  assert.deepEqual(parseCron("0 0 1 jan-dec/3 *").months, [1, 4, 7, 10]);
  assert.deepEqual(parseCron("0 9 * * MON-FRI").daysOfWeek, [1, 2, 3, 4, 5]);
  assert.deepEqual(parseCron("0 9 * * sun,Sat").daysOfWeek, [0, 6]);
  assert.deepEqual(parseCron("0 9 * * FRI-SUN").daysOfWeek, [0, 5, 6]);
  assert.deepEqual(parseCron("0 9 * * mon-fri/2").daysOfWeek, [1, 3, 5]);
});

test("day of week: 0 and 7 are both Sunday", () => {
  assert.deepEqual(parseCron("0 0 * * 7").daysOfWeek, [0]);
  assert.deepEqual(parseCron("0 0 * * 0").daysOfWeek, [0]);
  assert.deepEqual(parseCron("0 0 * * 5-7").daysOfWeek, [0, 5, 6]);
  assert.deepEqual(parseCron("0 0 * * 0-7").daysOfWeek, range(0, 6));
  // 2025-01-05 is a Sunday.
  assert.deepEqual(utc("0 0 * * 7", "2025-01-01T00:00:00Z", 2), ["2025-01-05T00:00:00", "2025-01-12T00:00:00"]);
});

test("? is accepted as * in the day fields", () => {
  const e = parseCron("0 0 ? * MON");
  assert.equal(e.dayOfMonthRestricted, false);
  assert.deepEqual(e.daysOfMonth, range(1, 31));
  assert.deepEqual(parseCron("0 0 15 * ?").daysOfWeek, range(0, 6));
  assert.equal(parseCron("0 0 15 * ?").dayOfWeekRestricted, false);
});

test("macros, case-insensitive", () => {
  const cases: Record<string, string> = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
  };
  const strip = (e: CronExpression) => ({ ...e, source: "" });
  for (const [macro, body] of Object.entries(cases)) {
    assert.deepEqual(strip(parseCron(macro)), strip(parseCron(body)), macro);
    assert.deepEqual(strip(parseCron(macro.toUpperCase())), strip(parseCron(body)), macro.toUpperCase());
    assert.equal(parseCron(macro).source, macro);
  }
  assert.deepEqual(utc("@weekly", "2025-01-01T00:00:00Z", 1), ["2025-01-05T00:00:00"]);
  assert.deepEqual(utc("@Hourly", "2025-01-01T00:00:00Z", 2), ["2025-01-01T01:00:00", "2025-01-01T02:00:00"]);
});

test("fixedTime: neither minute nor hour starts with *; macros except @hourly are fixed-time", () => {
  assert.equal(parseCron("30 2 * * *").fixedTime, true);
  assert.equal(parseCron("0,30 1-3 * * *").fixedTime, true);
  assert.equal(parseCron("H H * * *").fixedTime, true);
  assert.equal(parseCron("0 */2 * * *").fixedTime, false);
  assert.equal(parseCron("*/30 * * * *").fixedTime, false);
  assert.equal(parseCron("* 2 * * *").fixedTime, false);
  assert.equal(parseCron("*/10 0 2 * * *").fixedTime, true, "a seconds field does not matter");
  assert.equal(parseCron("0 * 2 * * *").fixedTime, false);
  for (const m of ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight"]) assert.equal(parseCron(m).fixedTime, true, m);
  assert.equal(parseCron("@hourly").fixedTime, false);
});

test("L in day-of-month: the last day, and L-n", () => {
  assert.deepEqual(parseCron("0 0 L * *").lastDaysOfMonth, [0]);
  assert.deepEqual(utc("0 0 L * *", "2024-01-15T00:00:00Z", 4), [
    "2024-01-31T00:00:00",
    "2024-02-29T00:00:00",
    "2024-03-31T00:00:00",
    "2024-04-30T00:00:00",
  ]);
  assert.deepEqual(utc("0 0 L-2 2 *", "2025-01-01T00:00:00Z", 2), ["2025-02-26T00:00:00", "2026-02-26T00:00:00"]);
  assert.deepEqual(utc("0 0 1,L * *", "2025-01-02T00:00:00Z", 3), ["2025-01-31T00:00:00", "2025-02-01T00:00:00", "2025-02-28T00:00:00"]);
  assert.deepEqual(parseCron("0 0 l * *").lastDaysOfMonth, [0]);
});

test("nL in day-of-week: the last given weekday of the month", () => {
  const e = parseCron("0 18 * * 5L");
  assert.deepEqual(e.lastWeekdays, [5]);
  assert.deepEqual(e.daysOfWeek, []);
  // Last Fridays: 2025-01-31, 2025-02-28, 2025-03-28
  assert.deepEqual(utc("0 18 * * 5L", "2025-01-01T00:00:00Z", 3), ["2025-01-31T18:00:00", "2025-02-28T18:00:00", "2025-03-28T18:00:00"]);
  assert.deepEqual(parseCron("0 0 * * FRIL").lastWeekdays, [5]);
  assert.deepEqual(parseCron("0 0 * * 7L").lastWeekdays, [0]);
});

test("n#k in day-of-week: the k-th given weekday", () => {
  const e = parseCron("0 10 * * 1#3");
  assert.deepEqual(e.nthWeekdays, [{ weekday: 1, nth: 3 }]);
  // Third Mondays: 2025-01-20, 2025-02-17
  assert.deepEqual(utc("0 10 * * 1#3", "2025-01-01T00:00:00Z", 2), ["2025-01-20T10:00:00", "2025-02-17T10:00:00"]);
  // Fifth Sundays skip months without one: 2025-03-30, 2025-06-29
  assert.deepEqual(utc("0 0 * * 0#5", "2025-03-01T00:00:00Z", 2), ["2025-03-30T00:00:00", "2025-06-29T00:00:00"]);
  assert.deepEqual(parseCron("0 0 * * MON#1,FRI#2").nthWeekdays, [
    { weekday: 1, nth: 1 },
    { weekday: 5, nth: 2 },
  ]);
});

test("Vixie day rule: both restricted means either; a * in either means both", () => {
  // 2025-06: the 13th is a Friday. 13th OR Friday:
  assert.deepEqual(utc("0 0 13 * 5", "2025-06-01T00:00:00Z", 4), [
    "2025-06-06T00:00:00",
    "2025-06-13T00:00:00",
    "2025-06-20T00:00:00",
    "2025-06-27T00:00:00",
  ]);
  assert.deepEqual(utc("0 0 13 * 5", "2025-07-01T00:00:00Z", 3), ["2025-07-04T00:00:00", "2025-07-11T00:00:00", "2025-07-13T00:00:00"]);
  // * in day-of-week adds no constraint: only the 13th.
  assert.deepEqual(utc("0 0 13 * *", "2025-06-01T00:00:00Z", 2), ["2025-06-13T00:00:00", "2025-07-13T00:00:00"]);
  // * in day-of-month: only Fridays.
  assert.deepEqual(utc("0 0 * * 5", "2025-06-01T00:00:00Z", 2), ["2025-06-06T00:00:00", "2025-06-13T00:00:00"]);
  // */2 in day-of-month still constrains, and then BOTH must match: odd days that are Fridays.
  assert.deepEqual(utc("0 0 */2 * 5", "2025-06-01T00:00:00Z", 3), ["2025-06-13T00:00:00", "2025-06-27T00:00:00", "2025-07-11T00:00:00"]);
  // ? counts as *.
  assert.deepEqual(utc("0 0 ? * 5", "2025-06-01T00:00:00Z", 1), ["2025-06-06T00:00:00"]);
  // L or nL with the either rule
  assert.deepEqual(utc("0 0 L * 1#1", "2025-06-01T00:00:00Z", 3), ["2025-06-02T00:00:00", "2025-06-30T00:00:00", "2025-07-07T00:00:00"]);
});

test("H: hashed values within the field, H(a-b), H/n", () => {
  const seed = "job-42";
  assert.deepEqual(parseCron("H * * * *", { hashSeed: seed }).minutes, [hashOffset(seed, 60)]);
  assert.deepEqual(parseCron("0 H * * *", { hashSeed: seed }).hours, [hashOffset(seed, 24)]);
  assert.deepEqual(parseCron("0 0 H * *", { hashSeed: seed }).daysOfMonth, [1 + hashOffset(seed, 28)]);
  assert.deepEqual(parseCron("0 0 1 H *", { hashSeed: seed }).months, [1 + hashOffset(seed, 12)]);
  assert.deepEqual(parseCron("0 0 * * H", { hashSeed: seed }).daysOfWeek, [hashOffset(seed, 7)]);
  assert.deepEqual(parseCron("H(10-19) * * * *", { hashSeed: seed }).minutes, [10 + hashOffset(seed, 10)]);
  const start = hashOffset(seed, 15);
  assert.deepEqual(parseCron("H/15 * * * *", { hashSeed: seed }).minutes, [start, start + 15, start + 30, start + 45]);
  const h = hashOffset(seed, 6);
  assert.deepEqual(parseCron("0 H(0-11)/6 * * *", { hashSeed: seed }).hours, [h, h + 6]);
  assert.deepEqual(parseCron("H H(9-17) * * MON-FRI", { hashSeed: seed }).hours.length, 1);
  assert.deepEqual(parseCron("0 0 * * H(MON-FRI)", { hashSeed: seed }).daysOfWeek, [1 + hashOffset(seed, 5)]);
  // the default seed is ""
  assert.deepEqual(parseCron("H * * * *").minutes, [hashOffset("", 60)]);
  assert.equal(parseCron("H * * * *", { hashSeed: seed }).hashSeed, seed);
});

test("H is stable for a seed and spreads across seeds", () => {
  for (const seed of ["", "a", "job-1", "nightly-report", "ünïcødé ✓"]) {
    const a = parseCron("H H * * *", { hashSeed: seed });
    const b = parseCron("H H * * *", { hashSeed: seed });
    assert.deepEqual([a.minutes, a.hours], [b.minutes, b.hours]);
    for (const m of [1, 7, 60, 3600, 1_000_003]) {
      const v = hashOffset(seed, m);
      assert.ok(Number.isInteger(v) && v >= 0 && v < m);
      assert.equal(hashOffset(seed, m), v);
    }
  }
  // Pinned values: the hash must never change between versions (stored schedules depend on it).
  assert.deepEqual(
    ["", "job-1", "job-2", "nightly-report"].map((s) => hashOffset(s, 60)),
    [23, 9, 34, 28],
  );
  // 1000 consecutive seeds hit every minute, none more than ~3x the mean.
  const counts = new Array<number>(60).fill(0);
  for (let i = 0; i < 1000; i++) counts[parseCron("H * * * *", { hashSeed: `job-${i}` }).minutes[0]!]!++;
  assert.ok(
    counts.every((c) => c > 0),
    `every minute used: ${counts.join(",")}`,
  );
  assert.ok(Math.max(...counts) < 50, `no minute crowded: ${Math.max(...counts)}`);
  // modulo 2 is balanced
  let ones = 0;
  for (let i = 0; i < 1000; i++) ones += hashOffset(`seed${i}`, 2);
  assert.ok(ones > 430 && ones < 570, `balanced: ${ones}`);
  assert.throws(() => hashOffset("x", 0), RangeError);
});

test("rejects a wrong number of fields", () => {
  rejects("* * * *", "expression", "* * * *");
  rejects("* * * * * * *", "expression", "* * * * * * *");
  rejects("", "expression", "");
  rejects("   ", "expression", "   ");
  const e = rejects("1 2 3", "expression", "1 2 3");
  assert.match(e.message, /3 fields/);
});

test("rejects unknown macros", () => {
  rejects("@fortnightly", "expression", "@fortnightly");
  rejects("@daily 5", "expression", "@daily 5");
});

test("rejects out-of-range values, naming field and token", () => {
  const e = rejects("61 * * * *", "minute", "61");
  assert.equal(e.message, 'minute: "61" is out of range 0-59');
  rejects("60 0 * * * *", "second", "60");
  rejects("0 24 * * *", "hour", "24");
  rejects("0 0 0 * *", "dayOfMonth", "0");
  rejects("0 0 32 * *", "dayOfMonth", "32");
  rejects("0 0 1 0 *", "month", "0");
  rejects("0 0 1 13 *", "month", "13");
  rejects("0 0 * * 8", "dayOfWeek", "8");
  rejects("5-61 * * * *", "minute", "61");
  rejects("1,2,99 * * * *", "minute", "99");
  rejects("0 0 * * 1#6", "dayOfWeek", "6");
  rejects("0 0 * * 1#0", "dayOfWeek", "0");
  rejects("0 0 * * 9#1", "dayOfWeek", "9");
  rejects("0 0 L-31 * *", "dayOfMonth", "31");
  rejects("H(0-60) * * * *", "minute", "60");
});

test("rejects step 0 and bad steps", () => {
  rejects("*/0 * * * *", "minute", "*/0");
  rejects("0 1-5/0 * * *", "hour", "1-5/0");
  rejects("0 0 */x * *", "dayOfMonth", "*/x");
  rejects("*/ * * * *", "minute", "*/");
  rejects("*/5/2 * * * *", "minute", "*/5/2");
  rejects("/5 * * * *", "minute", "/5");
  rejects("*/61 * * * *", "minute", "*/61");
  rejects("H/0 * * * *", "minute", "H/0");
});

test("rejects reversed ranges", () => {
  const e = rejects("30-10 * * * *", "minute", "30-10");
  assert.match(e.message, /reversed/);
  rejects("0 0 * * FRI-MON", "dayOfWeek", "FRI-MON");
  rejects("0 0 1 DEC-JAN *", "month", "DEC-JAN");
  rejects("0 0 * * 5-0", "dayOfWeek", "5-0");
  rejects("H(20-10) * * * *", "minute", "H(20-10)");
});

test("rejects empty list items", () => {
  rejects("1,,2 * * * *", "minute", "1,,2");
  rejects("0 1, * * *", "hour", "1,");
  rejects("0 0 ,1 * *", "dayOfMonth", ",1");
});

test("rejects unknown names and garbage", () => {
  rejects("0 0 1 FOO *", "month", "FOO");
  rejects("0 0 * * MOX", "dayOfWeek", "MOX");
  rejects("0 0 * * MONDAY", "dayOfWeek", "MONDAY");
  rejects("JAN * * * *", "minute", "JAN");
  rejects("0 0 * JAN-FOO *", "month", "FOO");
  rejects("abc * * * *", "minute", "abc");
  rejects("1.5 * * * *", "minute", "1.5");
  rejects("-1 * * * *", "minute", "-1");
  rejects("1-2-3 * * * *", "minute", "1-2-3");
  rejects("? * * * *", "minute", "?");
  rejects("0 0 LW * *", "dayOfMonth", "LW");
  rejects("0 0 * * L", "dayOfWeek", "L");
  rejects("0 0 * * 1#", "dayOfWeek", "1#");
  rejects("0 0 * * 1#2#3", "dayOfWeek", "1#2#3");
  rejects("0 0 * * 1#x", "dayOfWeek", "x");
  rejects("0 0 5L * *", "dayOfMonth", "5L");
  rejects("Hx * * * *", "minute", "Hx");
  rejects("H(5) * * * *", "minute", "H(5)");
  rejects("0 0 * * +1", "dayOfWeek", "+1");
});

test("rejects expressions that can never fire", () => {
  const e = rejects("0 0 30 2 *", "dayOfMonth", "30");
  assert.match(e.message, /never/);
  rejects("0 0 31 4 *", "dayOfMonth", "31");
  rejects("0 0 31 APR,JUN,SEP,NOV *", "dayOfMonth", "31");
  rejects("0 0 30-31 2 *", "dayOfMonth", "30-31");
  rejects("0 0 L-29 2 *", "dayOfMonth", "L-29");
  // "*/31" starts with * so BOTH must match: the 1st is never a second Monday.
  rejects("0 0 */31 * 1#2", "dayOfMonth", "*/31");
  rejects("0 0 */31 * 5L", "dayOfMonth", "*/31");
  // With a plain 1 both fields are restricted, the either rule applies, and it fires.
  parseCron("0 0 1 * 1#2");
});

test("accepts rare but possible expressions", () => {
  assert.deepEqual(utc("0 0 29 2 *", "2025-01-01T00:00:00Z", 2), ["2028-02-29T00:00:00", "2032-02-29T00:00:00"]);
  // Fifth Monday of February: only in a leap year whose Feb 1 is a Monday (2016, 2044).
  assert.deepEqual(utc("0 0 * 2 1#5", "2017-01-01T00:00:00Z", 1), ["2044-02-29T00:00:00"]);
  parseCron("0 0 30 2 MON"); // either rule: Mondays in February
  parseCron("0 0 31 2,3 *");
  parseCron("0 0 L-28 2 *"); // Feb 1 in non-leap years... and Feb 1 (29-28) in leap years
});

test("nextFireTime: strictly after, null past the horizon, invalid zones throw", () => {
  const e = parseCron("0 12 * * *");
  const t = Date.parse("2025-05-05T12:00:00Z");
  assert.equal(nextFireTime(e, "UTC", t)!.at, Date.parse("2025-05-06T12:00:00Z"));
  assert.equal(nextFireTime(e, "UTC", t - 1)!.at, t);
  assert.deepEqual(nextFireTime(e, "UTC", t - 0.5), { at: t, local: "2025-05-05T12:00:00" });
  // Fifth Monday of February from 2045: 2072 is within 30 years.
  assert.equal(
    new Date(nextFireTime(parseCron("0 0 * 2 1#5"), "UTC", Date.parse("2045-01-01T00:00:00Z"))!.at).toISOString(),
    "2072-02-29T00:00:00.000Z",
  );
  assert.equal(nextFireTime(parseCron("0 0 * 2 1#5"), "Europe/London", Date.parse("2045-01-01T00:00:00Z"))!.local, "2072-02-29T00:00:00");
  assert.throws(() => nextFireTime(e, "Europe/Lodnon", t), RangeError);
  assert.deepEqual(fireTimes(e, "UTC", t, 0), []);
});

test("isValidTimeZone is strict", () => {
  for (const tz of [
    "UTC",
    "Europe/London",
    "America/New_York",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Asia/Kolkata",
    "Etc/GMT+5",
    "America/Argentina/Buenos_Aires",
    "US/Eastern",
  ]) {
    assert.equal(isValidTimeZone(tz), true, tz);
  }
  for (const tz of ["Europe/Lodnon", "", " ", "+02:00", "-05:00", "UTC+2", "Mars/Olympus", "Europe/London ", "../etc/passwd", "Europe//London"]) {
    assert.equal(isValidTimeZone(tz), false, JSON.stringify(tz));
  }
  assert.equal(isValidTimeZone(undefined as unknown as string), false);
});
