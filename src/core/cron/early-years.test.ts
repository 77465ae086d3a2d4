// Times before 1970 are negative epoch milliseconds: the search must not take
// them for "none" (a -1 sentinel once did), and years 0-99 must not be read as
// 1900-1999. Checked against the brute-force reference from 1900 on.

import assert from "node:assert/strict";
import { test } from "node:test";
import { fireTimes, parseCron } from "./index.js";
import { referenceFires } from "./reference.js";

const DAY = 86_400_000;
// [cron, zone, from]: each case's 12 firings span days, so the minute-walking reference stays cheap.
const cases: [string, string, string][] = [
  ["0 9 * * *", "UTC", "1900-01-01T00:00:00Z"],
  ["0 9 * * *", "Europe/London", "1969-12-25T00:00:00Z"], // British Standard Time: UTC+1 all year
  ["0 9 * * *", "Europe/London", "1900-06-01T00:00:00Z"],
  ["30 1 * * *", "America/New_York", "1950-04-20T00:00:00Z"], // a spring-forward gap at 02:00
  ["*/15 * * * *", "Europe/Paris", "1945-09-10T00:00:00Z"],
  ["0 12 * * 1", "Australia/Sydney", "1916-12-01T00:00:00Z"], // spans Sydney's first daylight saving, 1917-01-01
  ["0 9 * * *", "UTC", "1900-03-01T00:00:00Z"],
];

test("fire times before 1970 match the reference", () => {
  for (const [cron, tz, from] of cases) {
    const expr = parseCron(cron);
    const start = Date.parse(from);
    const got = fireTimes(expr, tz, start, 12);
    assert.ok(got.length > 0, `${cron} ${tz} from ${from}: some firing`);
    const last = got[got.length - 1]!.at;
    const want = referenceFires(expr, tz, start, last).slice(0, 12);
    assert.deepEqual(
      got.map((f) => new Date(f.at).toISOString()),
      want.map((f) => new Date(f.at).toISOString()),
      `${cron} ${tz} from ${from}`,
    );
    assert.ok(last - start < 2 * 366 * DAY, `${cron} ${tz}: found near ${from}, not decades later`);
  }
});
