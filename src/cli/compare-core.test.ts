// `duetime compare`, the pure half: reading run logs (RFC 3339 instants, cron
// syslog lines classic and rsyslog, DST days, the year wrap, the match filter,
// why lines are dropped), lining runs up with a ledger, and the output.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fireTimes, parseCron } from "../core/cron/index.js";
import { compareRuns, comparisonJson, parseRunLog, renderComparison, type Comparison } from "./compare-core.js";

const at = (iso: string): number => {
  const ms = Date.parse(iso);
  assert.ok(Number.isFinite(ms), iso);
  return ms;
};
const isos = (ms: number[]): string[] => ms.map((m) => new Date(m).toISOString());
const SEC = 1000;
const TOL = 30 * SEC;

/** The ledger's would_run instants of a cron job, from the scheduler itself. */
const ledger = (cron: string, tz: string, after: string, count: number): string[] =>
  isos(fireTimes(parseCron(cron), tz, at(after), count).map((f) => f.at));

describe("parseRunLog", () => {
  test("plain RFC 3339 instants, with Z or an offset, sorted; no offset or no such date is refused", () => {
    const log = ["2026-03-29T02:00:00.123+01:00", "2026-03-29T00:00:00Z", "", "2026-03-29T01:00:00", "2026-02-30T01:00:00Z"].join("\n");
    assert.deepEqual(parseRunLog(log, { tz: "UTC", year: 2026 }), {
      instants: [at("2026-03-29T00:00:00Z"), at("2026-03-29T01:00:00.123Z")],
      ignored: [
        { line: 4, reason: "time without a UTC offset (Z or ±hh:mm) is ambiguous" },
        { line: 5, reason: "not a valid RFC 3339 time (no such date or time)" },
      ],
    });
  });

  test("rsyslog lines: their own timestamp and offset (microseconds cut to ms), not tz or year", () => {
    const log = `2026-03-29T01:00:01.123456+00:00 backup-host CRON[1234]: (root) CMD (/usr/local/bin/backup.sh)
2026-03-29T03:00:01.5+01:00 backup-host crond[77]: (root) CMD (/usr/local/bin/backup.sh)
2026-03-29T04:00:01Z backup-host CROND: (root) CMD (/usr/local/bin/backup.sh)
2026-03-29T05:00:01 backup-host CRON[1235]: (root) CMD (/usr/local/bin/backup.sh)
2026-03-29T05:00:02.000000+01:00 backup-host systemd[1]: Started Session 42 of User root.
2026-03-29T05:00:03.000000+01:00 backup-host CRON[1236]: (root) CMDEND (/usr/local/bin/backup.sh)
`;
    assert.deepEqual(parseRunLog(log, { tz: "Asia/Tokyo", year: 1999 }), {
      instants: [at("2026-03-29T01:00:01.123Z"), at("2026-03-29T02:00:01.500Z"), at("2026-03-29T04:00:01Z")],
      ignored: [
        { line: 4, reason: "time without a UTC offset (Z or ±hh:mm) is ambiguous" },
        { line: 5, reason: "not a cron CMD line" },
        { line: 6, reason: "not a cron CMD line" },
      ],
    });
  });

  test("ignored lines are listed with why; blank lines are not", () => {
    const log = [
      "Mar 29 01:00:01 host CRON[100]: pam_unix(cron:session): session opened for user root(uid=0) by (uid=0)",
      "Mar 29 01:00:01 host CRON[101]: (root) CMD (/usr/local/bin/backup.sh)",
      "",
      "Mar 29 01:00:02 host CRON[100]: (root) MAIL (mailed 120 bytes of output but got status 0x004b from MTA)",
      "Mar 29 01:00:02 host /USR/SBIN/CRON[102]: (root) CMD (/usr/local/bin/backup.sh --full (weekly))",
      "Mar 29 01:00:03 host systemd[1]: cron.service: Succeeded.",
      "Mar 29 01:00:04 host CRON[103]: (root) CMDEND (/usr/local/bin/backup.sh)",
      "Mar 29 01:00:05 host anacron[104]: (root) CMD (run-parts /etc/cron.daily)",
      "Feb 30 01:00:00 host CRON[105]: (root) CMD (/usr/local/bin/backup.sh)",
      "[12345.678] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
      "   ",
      "backup finished OK",
    ].join("\r\n");
    assert.deepEqual(parseRunLog(log, { tz: "UTC", year: 2026 }), {
      instants: [at("2026-03-29T01:00:01Z"), at("2026-03-29T01:00:02Z")],
      ignored: [
        { line: 1, reason: "not a cron CMD line" },
        { line: 4, reason: "not a cron CMD line" },
        { line: 6, reason: "not a cron CMD line" },
        { line: 7, reason: "not a cron CMD line" },
        { line: 8, reason: "not a cron CMD line" },
        { line: 9, reason: "no such date or time: 2026-02-30 01:00:00" },
        { line: 10, reason: "neither an RFC 3339 instant nor a cron syslog line" },
        { line: 12, reason: "neither an RFC 3339 instant nor a cron syslog line" },
      ],
    });
  });

  test("match: a CMD line counts only when its command contains the text (classic and rsyslog)", () => {
    const log = `Jun  1 03:00:01 app1 CRON[900]: (root) CMD (/usr/local/bin/backup.sh)
Jun  1 03:05:01 app1 CRON[901]: (root) CMD (/usr/sbin/logrotate /etc/logrotate.conf)
Jun  1 03:10:01 app1 CRON[902]: pam_unix(cron:session): session closed for user root
2026-06-01T04:00:01.000000+00:00 app1 CRON[903]: (root) CMD (/usr/local/bin/backup.sh --verify)
2026-06-01T04:05:01.000000+00:00 app1 CRON[904]: (www-data) CMD (php /var/www/cron.php)
`;
    assert.deepEqual(parseRunLog(log, { tz: "UTC", year: 2026, match: "backup.sh" }), {
      instants: [at("2026-06-01T03:00:01Z"), at("2026-06-01T04:00:01Z")],
      ignored: [
        { line: 2, reason: 'command does not contain "backup.sh"' },
        { line: 3, reason: "not a cron CMD line" },
        { line: 5, reason: 'command does not contain "backup.sh"' },
      ],
    });
    // without the filter every CMD line is a run
    assert.equal(parseRunLog(log, { tz: "UTC", year: 2026 }).instants.length, 4);
  });

  test("classic lines from December into January move to the next year; a small step back does not", () => {
    const log = `Dec 30 23:00:01 db1 CRON[311]: (postgres) CMD (/usr/local/bin/vacuum.sh)
Dec 31 23:00:01 db1 CRON[312]: (postgres) CMD (/usr/local/bin/vacuum.sh)
Jan  1 23:00:01 db1 CRON[313]: (postgres) CMD (/usr/local/bin/vacuum.sh)
Jan  2 23:00:01 db1 CRON[314]: (postgres) CMD (/usr/local/bin/vacuum.sh)
`;
    // New York in winter is UTC-5: 23:00 local is 04:00 UTC the next day
    assert.deepEqual(isos(parseRunLog(log, { tz: "America/New_York", year: 2025 }).instants), [
      "2025-12-31T04:00:01.000Z",
      "2026-01-01T04:00:01.000Z",
      "2026-01-02T04:00:01.000Z",
      "2026-01-03T04:00:01.000Z",
    ]);
    const outOfOrder = `Apr  1 00:00:01 db1 CRON[1]: (root) CMD (a)
Mar 31 23:59:59 db1 CRON[2]: (root) CMD (b)
`;
    assert.deepEqual(isos(parseRunLog(outOfOrder, { tz: "UTC", year: 2026 }).instants), ["2026-03-31T23:59:59.000Z", "2026-04-01T00:00:01.000Z"]);
  });

  test("a wall time inside the spring-forward gap is ignored with a reason; its edges are real", () => {
    const log = `Mar 29 00:59:59 host CRON[1]: (root) CMD (/usr/local/bin/backup.sh)
Mar 29 01:30:00 host CRON[2]: (root) CMD (/usr/local/bin/backup.sh)
Mar 29 02:00:00 host CRON[3]: (root) CMD (/usr/local/bin/backup.sh)
`;
    assert.deepEqual(parseRunLog(log, { tz: "Europe/London", year: 2026 }), {
      instants: [at("2026-03-29T00:59:59Z"), at("2026-03-29T01:00:00Z")],
      ignored: [{ line: 2, reason: "2026-03-29 01:30:00 does not exist in Europe/London (the clocks went forward)" }],
    });
  });

  test("the repeated hour of a fall-back: a wall time that goes backwards is the second pass, and stays there", () => {
    // A `15,45 * * * *` job in London on 25 October 2026: old cron runs it in both passes.
    const log = `Oct 25 00:45:01 host CRON[10]: (root) CMD (/usr/local/bin/sync.sh)
Oct 25 01:15:01 host CRON[11]: (root) CMD (/usr/local/bin/sync.sh)
Oct 25 01:45:01 host CRON[12]: (root) CMD (/usr/local/bin/sync.sh)
Oct 25 01:46:10 host CRON[12]: pam_unix(cron:session): session closed for user root
Oct 25 01:15:01 host CRON[13]: (root) CMD (/usr/local/bin/sync.sh)
Oct 25 01:45:01 host CRON[14]: (root) CMD (/usr/local/bin/sync.sh)
Oct 25 02:15:01 host CRON[15]: (root) CMD (/usr/local/bin/sync.sh)
`;
    const { instants } = parseRunLog(log, { tz: "Europe/London", year: 2026 });
    assert.deepEqual(isos(instants), [
      "2026-10-24T23:45:01.000Z",
      "2026-10-25T00:15:01.000Z", // 01:15 BST
      "2026-10-25T00:45:01.000Z", // 01:45 BST
      "2026-10-25T01:15:01.000Z", // 01:15 GMT
      "2026-10-25T01:45:01.000Z", // 01:45 GMT
      "2026-10-25T02:15:01.000Z",
    ]);
    // and it lines up with the scheduler's ledger (a wildcard schedule fires in both passes)
    const expected = ledger("15,45 * * * *", "Europe/London", "2026-10-24T23:30:00Z", 6);
    const c = compareRuns(expected.map(at), instants, TOL);
    assert.deepEqual([c.agree, c.matched.length, c.offsets?.maxMs], [true, 6, SEC]);
  });
});

describe("a DST week in Europe/London, a job at 01:30 local daily", () => {
  test("March 2026: the gap day runs at the change (02:00 BST), and every day agrees", () => {
    const expected = [
      "2026-03-26T01:30:00.000Z",
      "2026-03-27T01:30:00.000Z",
      "2026-03-28T01:30:00.000Z",
      "2026-03-29T01:00:00.000Z", // 01:30 does not exist: the scheduler fires at the change
      "2026-03-30T00:30:00.000Z",
      "2026-03-31T00:30:00.000Z",
      "2026-04-01T00:30:00.000Z",
    ];
    assert.deepEqual(ledger("30 1 * * *", "Europe/London", "2026-03-25T12:00:00Z", 7), expected);
    // old cron runs the jobs of the skipped hour right after the clocks go forward
    const log = `Mar 26 01:30:01 backup-host CRON[21010]: (root) CMD (/usr/local/bin/backup.sh)
Mar 26 01:30:01 backup-host CRON[21009]: pam_unix(cron:session): session opened for user root(uid=0) by (uid=0)
Mar 27 01:30:01 backup-host CRON[21311]: (root) CMD (/usr/local/bin/backup.sh)
Mar 28 01:30:01 backup-host CRON[21622]: (root) CMD (/usr/local/bin/backup.sh)
Mar 29 02:00:01 backup-host CRON[21930]: (root) CMD (/usr/local/bin/backup.sh)
Mar 30 01:30:01 backup-host CRON[22241]: (root) CMD (/usr/local/bin/backup.sh)
Mar 31 01:30:01 backup-host CRON[22550]: (root) CMD (/usr/local/bin/backup.sh)
Apr  1 01:30:01 backup-host CRON[22861]: (root) CMD (/usr/local/bin/backup.sh)
`;
    const { instants, ignored } = parseRunLog(log, { tz: "Europe/London", year: 2026 });
    assert.deepEqual(ignored, [{ line: 2, reason: "not a cron CMD line" }]);
    assert.deepEqual(
      isos(instants),
      expected.map((e) => new Date(at(e) + SEC).toISOString()),
    );
    const c = compareRuns(expected.map(at), instants, TOL);
    assert.deepEqual(c, {
      matched: expected.map((e) => ({ expected: at(e), actual: at(e) + SEC, offsetMs: SEC })),
      off: [],
      missing: [],
      extra: [],
      offsets: { count: 7, minMs: SEC, p50Ms: SEC, p90Ms: SEC, p99Ms: SEC, maxMs: SEC },
      agree: true,
    });
    assert.equal(
      renderComparison(c, { tz: "Europe/London", toleranceMs: TOL, jobId: "nightly-backup" }),
      `job nightly-backup: 7 runs expected by the ledger, 7 runs in the log; tolerance 30s

matched: 7 within 30s
off:     0 (0 late, 0 early)
missing: 0
extra:   0
offsets: min +1s, p50 +1s, p90 +1s, p99 +1s, max +1s (7 pairs, actual − expected)

AGREE within 30s: every expected run is in the log, and no other run
`,
    );
  });

  test("October 2026: the repeated 01:30 runs once, in the first pass (BST), and every day agrees", () => {
    const expected = [
      "2026-10-22T00:30:00.000Z",
      "2026-10-23T00:30:00.000Z",
      "2026-10-24T00:30:00.000Z",
      "2026-10-25T00:30:00.000Z", // 01:30 BST, the first of the two
      "2026-10-26T01:30:00.000Z",
      "2026-10-27T01:30:00.000Z",
      "2026-10-28T01:30:00.000Z",
    ];
    assert.deepEqual(ledger("30 1 * * *", "Europe/London", "2026-10-21T12:00:00Z", 7), expected);
    const log = [22, 23, 24, 25, 26, 27, 28]
      .map((d, i) => `Oct ${d} 01:30:01 backup-host CRON[${31000 + i}]: (root) CMD (/usr/local/bin/backup.sh)`)
      .join("\n");
    const { instants, ignored } = parseRunLog(log, { tz: "Europe/London", year: 2026 });
    assert.deepEqual(ignored, []);
    assert.deepEqual(
      isos(instants),
      expected.map((e) => new Date(at(e) + SEC).toISOString()),
    );
    const c = compareRuns(expected.map(at), instants, TOL);
    assert.deepEqual([c.agree, c.matched.length, c.offsets], [true, 7, { count: 7, minMs: SEC, p50Ms: SEC, p90Ms: SEC, p99Ms: SEC, maxMs: SEC }]);
  });
});

describe("compareRuns", () => {
  test("a missing run, an extra run and a late run each land in their category (and in the output)", () => {
    const expected = [1, 2, 3, 4, 5].map((d) => at(`2026-05-0${d}T02:00:00Z`));
    const log = `May  1 02:00:01 backup-host CRON[4101]: (root) CMD (/usr/local/bin/backup.sh)
May  2 02:00:01 backup-host CRON[4388]: (root) CMD (/usr/local/bin/backup.sh)
May  2 09:15:42 backup-host CRON[5120]: (root) CMD (/usr/local/bin/backup.sh)
May  4 02:03:12 backup-host CRON[4671]: (root) CMD (/usr/local/bin/backup.sh)
May  5 02:00:01 backup-host CRON[4702]: (root) CMD (/usr/local/bin/backup.sh)
`;
    const { instants } = parseRunLog(log, { tz: "UTC", year: 2026 });
    const c = compareRuns(expected, instants, TOL);
    assert.deepEqual(c, {
      matched: [
        { expected: at("2026-05-01T02:00:00Z"), actual: at("2026-05-01T02:00:01Z"), offsetMs: 1000 },
        { expected: at("2026-05-02T02:00:00Z"), actual: at("2026-05-02T02:00:01Z"), offsetMs: 1000 },
        { expected: at("2026-05-05T02:00:00Z"), actual: at("2026-05-05T02:00:01Z"), offsetMs: 1000 },
      ],
      off: [{ expected: at("2026-05-04T02:00:00Z"), actual: at("2026-05-04T02:03:12Z"), offsetMs: 192_000 }],
      missing: [at("2026-05-03T02:00:00Z")],
      extra: [at("2026-05-02T09:15:42Z")],
      offsets: { count: 4, minMs: 1000, p50Ms: 1000, p90Ms: 192_000, p99Ms: 192_000, maxMs: 192_000 },
      agree: false,
    } satisfies Comparison);

    const o = { tz: "Europe/London", toleranceMs: TOL, jobId: "nightly-backup" };
    assert.equal(
      renderComparison(c, o),
      `job nightly-backup: 5 runs expected by the ledger, 5 runs in the log; tolerance 30s

STATUS   EXPECTED (UTC)            EXPECTED (Europe/London)   ACTUAL (UTC)              ACTUAL (Europe/London)     OFFSET
extra    -                         -                          2026-05-02T09:15:42.000Z  2026-05-02T10:15:42+01:00  -
missing  2026-05-03T02:00:00.000Z  2026-05-03T03:00:00+01:00  -                         -                          -
late     2026-05-04T02:00:00.000Z  2026-05-04T03:00:00+01:00  2026-05-04T02:03:12.000Z  2026-05-04T03:03:12+01:00  +3m12s

matched: 3 within 30s
off:     1 (1 late, 0 early)
missing: 1
extra:   1
offsets: min +1s, p50 +1s, p90 +3m12s, p99 +3m12s, max +3m12s (4 pairs, actual − expected)

DISAGREE within 30s: 1 off, 1 missing, 1 extra
`,
    );
    assert.deepEqual(comparisonJson(c, o), {
      jobId: "nightly-backup",
      tz: "Europe/London",
      toleranceMs: 30_000,
      agree: false,
      counts: { expected: 5, log: 5, matched: 3, off: 1, missing: 1, extra: 1 },
      offsets: { count: 4, minMs: 1000, p50Ms: 1000, p90Ms: 192_000, p99Ms: 192_000, maxMs: 192_000 },
      matched: [
        { expected: "2026-05-01T02:00:00.000Z", actual: "2026-05-01T02:00:01.000Z", offsetMs: 1000 },
        { expected: "2026-05-02T02:00:00.000Z", actual: "2026-05-02T02:00:01.000Z", offsetMs: 1000 },
        { expected: "2026-05-05T02:00:00.000Z", actual: "2026-05-05T02:00:01.000Z", offsetMs: 1000 },
      ],
      off: [{ expected: "2026-05-04T02:00:00.000Z", actual: "2026-05-04T02:03:12.000Z", offsetMs: 192_000, status: "late" }],
      missing: ["2026-05-03T02:00:00.000Z"],
      extra: ["2026-05-02T09:15:42.000Z"],
    });
  });

  test("the tolerance boundary: exactly at it matches, 1 ms beyond is off (late or early)", () => {
    const e = at("2026-07-01T09:00:00Z");
    const pair = (offsetMs: number) => ({ expected: e, actual: e + offsetMs, offsetMs });
    assert.deepEqual(compareRuns([e], [e + TOL], TOL).matched, [pair(TOL)]);
    assert.deepEqual(compareRuns([e], [e - TOL], TOL).matched, [pair(-TOL)]);
    const late = compareRuns([e], [e + TOL + 1], TOL);
    assert.deepEqual([late.matched, late.off, late.agree], [[], [pair(TOL + 1)], false]);
    const early = compareRuns([e], [e - TOL - 1], TOL);
    assert.deepEqual([early.matched, early.off, early.agree], [[], [pair(-TOL - 1)], false]);
    assert.match(renderComparison(early, { tz: "UTC", toleranceMs: TOL, jobId: "j" }), /\nearly +2026-07-01T09:00:00\.000Z .* -30\.001s\n/);
  });

  test("two runs near one occurrence: the closer is matched, the other extra; of two equally close the earlier", () => {
    const e = at("2026-07-01T10:00:00Z");
    const c = compareRuns([e], [e + 5 * SEC, e + 1 * SEC], TOL);
    assert.deepEqual([c.matched, c.extra, c.missing, c.agree], [[{ expected: e, actual: e + SEC, offsetMs: SEC }], [e + 5 * SEC], [], false]);
    const tie = compareRuns([e], [e - 2 * SEC, e + 2 * SEC], TOL);
    assert.deepEqual([tie.matched, tie.extra], [[{ expected: e, actual: e - 2 * SEC, offsetMs: -2 * SEC }], [e + 2 * SEC]]);
  });

  test("a run exactly halfway between two occurrences belongs to the earlier one", () => {
    const e1 = at("2026-07-01T00:00:00Z");
    const e2 = at("2026-07-01T01:00:00Z");
    const half = at("2026-07-01T00:30:00Z");
    assert.deepEqual(compareRuns([e1, e2], [half], TOL), {
      matched: [],
      off: [{ expected: e1, actual: half, offsetMs: 30 * 60 * SEC }],
      missing: [e2],
      extra: [],
      offsets: { count: 1, minMs: 1_800_000, p50Ms: 1_800_000, p90Ms: 1_800_000, p99Ms: 1_800_000, maxMs: 1_800_000 },
      agree: false,
    });
    // one ms past halfway it is the later one's
    assert.deepEqual(compareRuns([e1, e2], [half + 1], TOL).missing, [e1]);
  });

  test("an empty log: every expected run is missing", () => {
    const e = [at("2026-07-01T00:00:00Z"), at("2026-07-02T00:00:00Z")];
    const c = compareRuns(e, [], TOL);
    assert.deepEqual(c, { matched: [], off: [], missing: e, extra: [], offsets: null, agree: false });
    assert.equal(
      renderComparison(c, { tz: "UTC", toleranceMs: TOL, jobId: "j" }),
      `job j: 2 runs expected by the ledger, 0 runs in the log; tolerance 30s

STATUS   EXPECTED (UTC)            EXPECTED (UTC)             ACTUAL (UTC)  ACTUAL (UTC)  OFFSET
missing  2026-07-01T00:00:00.000Z  2026-07-01T00:00:00+00:00  -             -             -
missing  2026-07-02T00:00:00.000Z  2026-07-02T00:00:00+00:00  -             -             -

matched: 0 within 30s
off:     0 (0 late, 0 early)
missing: 2
extra:   0
offsets: none (no run paired with an expected one)

DISAGREE within 30s: 0 off, 2 missing, 0 extra
`,
    );
  });

  test("an empty ledger: every run is extra; both empty agree with nothing to compare", () => {
    const runs = [at("2026-07-01T00:00:01Z"), at("2026-07-01T01:00:01Z")];
    assert.deepEqual(compareRuns([], [runs[1]!, runs[0]!], TOL), { matched: [], off: [], missing: [], extra: runs, offsets: null, agree: false });
    const none = compareRuns([], [], TOL);
    assert.deepEqual(none, { matched: [], off: [], missing: [], extra: [], offsets: null, agree: true });
    const text = renderComparison(none, { tz: "UTC", toleranceMs: 500, jobId: "j" });
    assert.equal(text.split("\n").at(-2), "AGREE within 500ms, but there was nothing to compare: the ledger expects no runs and the log has none");
    assert.ok(!text.includes("STATUS"));
  });

  test("offset percentiles are nearest-rank over matched and off pairs, signed", () => {
    const base = at("2026-08-01T00:00:00Z");
    const expected = Array.from({ length: 10 }, (_, i) => base + i * 3_600_000);
    const deltas = [-3000, -1000, 0, 1000, 2000, 3000, 4000, 5000, 6000, 60_000];
    const c = compareRuns(
      expected,
      expected.map((e, i) => e + deltas[i]!),
      TOL,
    );
    assert.deepEqual(c.offsets, { count: 10, minMs: -3000, p50Ms: 2000, p90Ms: 6000, p99Ms: 60_000, maxMs: 60_000 });
    assert.deepEqual([c.matched.length, c.off.length], [9, 1]);
  });
});
