// `duetime compare`, the pure half: reading an old scheduler's run log
// (RFC 3339 instants, or cron's syslog lines), lining its runs up with the
// `would_run` instants of a job's run ledger, and rendering the result for
// people (a table) or machines (--json). No I/O here: the command reads the
// file and fetches the ledger, then calls these.
//
// The tolerance flag is parsed by args.ts's parseDuration/durationOption
// (whole seconds); the command passes seconds × 1000 as toleranceMs.

import { DAY_MS, daysInMonth } from "../core/cron/days.js";
import { getZone, type Zone } from "../core/cron/zone.js";
import { parseRfc3339, toIso } from "../core/time.js";
import { Printer, utc, zoned } from "./output.js";

// ---------------------------------------------------------------------------
// Reading the log

export interface ParseRunLogOptions {
  /** The zone of the host that wrote the log: classic syslog timestamps are wall times there. */
  tz: string;
  /** The year of the first classic syslog line (its timestamps have none). */
  year: number;
  /** Count a cron CMD line only when its command contains this text. */
  match?: string;
}

export interface RunLog {
  /** Epoch ms of the runs, ascending. */
  instants: number[];
  /** Lines that are not runs (blank lines aside), 1-based, with why. */
  ignored: { line: number; reason: string }[];
}

const NOT_CRON = "not a cron CMD line";
const NEITHER = "neither an RFC 3339 instant nor a cron syslog line";
const NO_OFFSET = "time without a UTC offset (Z or ±hh:mm) is ambiguous";
const NO_SUCH_INSTANT = "not a valid RFC 3339 time (no such date or time)";

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/** A whole line that is an RFC 3339 instant (parseRfc3339 checks the numbers). */
const INSTANT = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
/** A whole line that is a date and time without an offset. */
const LOCAL_ONLY = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?$/;
/** rsyslog's high-precision format: an RFC 3339 timestamp (its offset may be missing: refused later), then the rest. */
const RSYSLOG = /^(\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?)([Zz]|[+-]\d{2}:\d{2})?\s+(.*)$/;
/** Classic BSD syslog: "Mar 29 01:00:01 " (the day padded with a space), then the rest. */
const BSD = /^([A-Za-z]{3})\s+(\d{1,2})\s+(\d{2}):(\d{2}):(\d{2})\s+(.*)$/;
/** After the timestamp: host, tag (old Debian writes "/USR/SBIN/CRON"), optional [pid], colon, message. */
const SYSLOG_REST = /^(\S+)\s+(?:\S*\/)?([^\s/[:]+)(?:\[\d+\])?:\s*(.*)$/;
const CRON_TAG = /^crond?$/i;
/** "(root) CMD (/usr/local/bin/backup.sh)"; the command may hold parentheses. CMDOUT/CMDEND lines do not match. */
const CMD = /^\(([^)]*)\)\s+CMD\s+\((.*)\)$/;

/**
 * The runs in an old scheduler's log, as epoch ms ascending, and the lines
 * that are not runs with why (blank lines are skipped without a word).
 *
 * A line is one of:
 * - an RFC 3339 instant with Z or an offset ("2026-03-29T01:00:00Z"); without one it is refused as ambiguous;
 * - a cron syslog line, classic ("Mar 29 01:00:01 host CRON[1234]: (root) CMD (backup.sh)") or with
 *   rsyslog's RFC 3339 timestamp first. Only CMD lines of a process named cron/crond (any case, optional
 *   [pid]) count; with `match`, only those whose command contains it.
 *
 * Classic timestamps are wall times in `tz`, starting in `year`; a month more
 * than 6 before the previous line's is the next year (December → January).
 * In a fall-back overlap the repeated wall times are told apart by the order
 * of the lines: a wall time whose first instant would be earlier than the
 * previous classic line's instant is the second pass (so a log that starts
 * inside the second pass is read as the first, and lines that go backwards
 * by a second within the first pass would be read as the second). Every
 * classic syslog line, cron or not, moves the year and this order along.
 * A wall time in a spring-forward gap is ignored: no real clock shows it.
 *
 * When a line is wrong twice, the reason is about its content first (not a
 * cron CMD line, then the match), its time second. Throws RangeError for an
 * unknown zone.
 */
export function parseRunLog(text: string, options: ParseRunLogOptions): RunLog {
  const zone = getZone(options.tz);
  const { match } = options;
  const instants: number[] = [];
  const ignored: RunLog["ignored"] = [];
  let year = options.year;
  let prevMonth: number | undefined;
  let prevInstant: number | undefined;

  const lines = text.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const ignore = (reason: string): void => void ignored.push({ line: i + 1, reason });

    if (INSTANT.test(line)) {
      const at = parseRfc3339(line);
      if (at === null) ignore(NO_SUCH_INSTANT);
      else instants.push(at);
      continue;
    }
    if (LOCAL_ONLY.test(line)) {
      ignore(NO_OFFSET);
      continue;
    }

    const r = RSYSLOG.exec(line);
    if (r) {
      const [, dateTime, offset, rest] = r;
      const problem = cronRunProblem(rest!, match);
      if (problem !== null) ignore(problem);
      else if (offset === undefined) ignore(NO_OFFSET);
      else {
        const at = parseRfc3339(dateTime! + offset);
        if (at === null) ignore(NO_SUCH_INSTANT);
        else instants.push(at);
      }
      continue;
    }

    const b = BSD.exec(line);
    const month = b ? MONTHS.indexOf(b[1]!.toLowerCase()) + 1 : 0;
    if (b && month > 0) {
      if (prevMonth !== undefined && prevMonth - month > 6) year++;
      prevMonth = month;
      const [day, hour, minute, second] = b.slice(2, 6).map(Number) as [number, number, number, number];
      const wallText = `${year}-${pad(month)}-${pad(day)} ${b[3]}:${b[4]}:${b[5]}`;
      let at: number | undefined;
      let timeProblem: string | undefined;
      if (day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59) {
        timeProblem = `no such date or time: ${wallText}`;
      } else {
        const candidates = instantsOfWall(zone, Date.UTC(year, month - 1, day, hour, minute, second));
        if (candidates.length === 0) timeProblem = `${wallText} does not exist in ${options.tz} (the clocks went forward)`;
        else if (candidates.length === 1 || prevInstant === undefined || candidates[0]! >= prevInstant) at = candidates[0]!;
        else at = candidates[1]!; // went backwards within the repeated hour: the second pass
        if (at !== undefined) prevInstant = at;
      }
      const problem = cronRunProblem(b[6]!, match) ?? timeProblem;
      if (problem !== undefined) ignore(problem);
      else instants.push(at!);
      continue;
    }

    ignore(NEITHER);
  }
  instants.sort((a, b) => a - b);
  return { instants, ignored };
}

/** Why the part of a syslog line after its timestamp is not a run to count, or null when it is one. */
function cronRunProblem(rest: string, match: string | undefined): string | null {
  const s = SYSLOG_REST.exec(rest);
  if (!s || !CRON_TAG.test(s[2]!)) return NOT_CRON;
  const cmd = CMD.exec(s[3]!);
  if (!cmd) return NOT_CRON;
  if (match !== undefined && !cmd[2]!.includes(match)) return `command does not contain ${JSON.stringify(match)}`;
  return null;
}

/**
 * The instants (0, 1 or 2, ascending) at which a zone's clocks show a wall
 * time ("wall ms": the local date and time encoded as if UTC). Written here
 * because the project has only the other direction (schedule.ts localTime,
 * Zone.offsetAt) and the cron search, which maps walls back only inside its
 * own interval walk. Like zone.ts it assumes no two offset changes within a
 * day of each other, so the offsets a day before and after are the only
 * ones the wall time can have.
 */
function instantsOfWall(zone: Zone, wall: number): number[] {
  const out: number[] = [];
  for (const offset of new Set([zone.offsetAt(wall - DAY_MS), zone.offsetAt(wall + DAY_MS)])) {
    const at = wall - offset;
    if (zone.offsetAt(at) === offset) out.push(at);
  }
  return out.sort((a, b) => a - b);
}

function pad(n: number): string {
  return String(n).padStart(2, "0");
}

// ---------------------------------------------------------------------------
// Lining up

export interface Pair {
  expected: number;
  actual: number;
  /** actual − expected */
  offsetMs: number;
}

export interface OffsetStats {
  count: number;
  minMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface Comparison {
  /** Expected instants whose closest run is within the tolerance, by expected. */
  matched: Pair[];
  /** Expected instants whose closest run is beyond the tolerance (late or early), by expected. */
  off: Pair[];
  /** Expected, no run in the log. Ascending. */
  missing: number[];
  /** Runs in the log that the ledger does not expect. Ascending. */
  extra: number[];
  /** Signed offsets (actual − expected) of matched and off pairs: min, p50, p90, p99, max; null when none. */
  offsets: OffsetStats | null;
  /** True when nothing is off, missing or extra. */
  agree: boolean;
}

/**
 * Lines up the runs of a log (`actual`) with the ledger's would_run instants
 * (`expected`), both epoch ms (sorted here, so their order does not matter).
 *
 * Each run belongs to the expected instant nearest to it; a run exactly
 * halfway between two belongs to the earlier. Of the runs that belong to one
 * expected instant the closest is its pair (of two equally close, the earlier
 * run): `matched` when |actual − expected| <= toleranceMs, else `off`. The
 * others that belong to it are `extra`, and so is every run when nothing is
 * expected. An expected instant that no run belongs to is `missing` — even
 * when a run sits within the tolerance of it but nearer to another expected
 * instant (which can only happen with a tolerance above half the spacing).
 * Percentiles are nearest-rank. Throws RangeError for a negative or
 * non-finite tolerance.
 */
export function compareRuns(expected: number[], actual: number[], toleranceMs: number): Comparison {
  if (!Number.isFinite(toleranceMs) || toleranceMs < 0) throw new RangeError(`toleranceMs must be a finite number >= 0, got ${toleranceMs}`);
  const exp = [...expected].sort((a, b) => a - b);
  const act = [...actual].sort((a, b) => a - b);
  const belonging: number[][] = exp.map(() => []);
  const extra: number[] = [];
  for (const a of act) {
    if (exp.length === 0) extra.push(a);
    else belonging[nearestIndex(exp, a)]!.push(a);
  }

  const matched: Pair[] = [];
  const off: Pair[] = [];
  const missing: number[] = [];
  for (const [i, e] of exp.entries()) {
    const runs = belonging[i]!;
    if (runs.length === 0) {
      missing.push(e);
      continue;
    }
    let best = runs[0]!;
    for (const r of runs) if (Math.abs(r - e) < Math.abs(best - e)) best = r; // runs ascend: a tie keeps the earlier
    for (const r of runs) if (r !== best) extra.push(r);
    const pair = { expected: e, actual: best, offsetMs: best - e };
    (Math.abs(pair.offsetMs) <= toleranceMs ? matched : off).push(pair);
  }
  extra.sort((a, b) => a - b);

  const offsets = offsetStats([...matched, ...off].map((p) => p.offsetMs));
  return { matched, off, missing, extra, offsets, agree: off.length === 0 && missing.length === 0 && extra.length === 0 };
}

/** Index of the element of sorted (non-empty) xs nearest to x; ties to the earlier. */
function nearestIndex(xs: number[], x: number): number {
  let lo = 0;
  let hi = xs.length; // first index with xs[i] >= x
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  if (lo === 0) return 0;
  if (lo === xs.length) return lo - 1;
  return x - xs[lo - 1]! <= xs[lo]! - x ? lo - 1 : lo;
}

function offsetStats(values: number[]): OffsetStats | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const rank = (p: number): number => s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)]!;
  return { count: s.length, minMs: s[0]!, p50Ms: rank(50), p90Ms: rank(90), p99Ms: rank(99), maxMs: s[s.length - 1]! };
}

// ---------------------------------------------------------------------------
// Rendering

export interface CompareRenderOptions {
  /** Zone for the wall times shown beside UTC (an unknown zone shows UTC). */
  tz: string;
  toleranceMs: number;
  jobId: string;
}

/**
 * The comparison for people, ending in a newline: a header, a table of every
 * off (late/early), missing and extra item in time order (none: no table),
 * the counts, the offset distribution, and a last line that says whether the
 * two agree within the tolerance.
 */
export function renderComparison(c: Comparison, o: CompareRenderOptions): string {
  let text = "";
  const out = new Printer(
    {
      stdout: (t) => void (text += t),
      stderr: () => {},
      env: {},
      readFile: () => Promise.reject(new Error("no files here")),
    },
    false,
  );
  const tol = formatDuration(o.toleranceMs);
  const expectedCount = c.matched.length + c.off.length + c.missing.length;
  const logCount = c.matched.length + c.off.length + c.extra.length;
  out.line(`job ${o.jobId}: ${plural(expectedCount, "run")} expected by the ledger, ${plural(logCount, "run")} in the log; tolerance ${tol}`);

  const iso = (ms: number): string => utc(toIso(ms));
  const local = (ms: number): string => zoned(toIso(ms), o.tz);
  const rows: { at: number; cells: string[] }[] = [
    ...c.off.map((p) => ({
      at: p.expected,
      cells: [p.offsetMs > 0 ? "late" : "early", iso(p.expected), local(p.expected), iso(p.actual), local(p.actual), signedDuration(p.offsetMs)],
    })),
    ...c.missing.map((e) => ({ at: e, cells: ["missing", iso(e), local(e), "-", "-", "-"] })),
    ...c.extra.map((a) => ({ at: a, cells: ["extra", "-", "-", iso(a), local(a), "-"] })),
  ];
  if (rows.length > 0) {
    rows.sort((a, b) => a.at - b.at);
    out.line();
    out.table(
      ["STATUS", "EXPECTED (UTC)", `EXPECTED (${o.tz})`, "ACTUAL (UTC)", `ACTUAL (${o.tz})`, "OFFSET"],
      rows.map((r) => r.cells),
    );
  }

  out.line();
  const late = c.off.filter((p) => p.offsetMs > 0).length;
  const s = c.offsets;
  out.fields([
    ["matched", `${c.matched.length} within ${tol}`],
    ["off", `${c.off.length} (${late} late, ${c.off.length - late} early)`],
    ["missing", String(c.missing.length)],
    ["extra", String(c.extra.length)],
    [
      "offsets",
      s === null
        ? "none (no run paired with an expected one)"
        : `min ${signedDuration(s.minMs)}, p50 ${signedDuration(s.p50Ms)}, p90 ${signedDuration(s.p90Ms)}, ` +
          `p99 ${signedDuration(s.p99Ms)}, max ${signedDuration(s.maxMs)} (${plural(s.count, "pair")}, actual − expected)`,
    ],
  ]);

  out.line();
  if (!c.agree) {
    out.line(`DISAGREE within ${tol}: ${c.off.length} off, ${c.missing.length} missing, ${c.extra.length} extra`);
  } else if (expectedCount === 0) {
    out.line(`AGREE within ${tol}, but there was nothing to compare: the ledger expects no runs and the log has none`);
  } else {
    out.line(`AGREE within ${tol}: every expected run is in the log, and no other run`);
  }
  return text;
}

export interface ComparisonJson {
  jobId: string;
  tz: string;
  toleranceMs: number;
  agree: boolean;
  counts: { expected: number; log: number; matched: number; off: number; missing: number; extra: number };
  offsets: OffsetStats | null;
  matched: { expected: string; actual: string; offsetMs: number }[];
  off: { expected: string; actual: string; offsetMs: number; status: "late" | "early" }[];
  missing: string[];
  extra: string[];
}

/** The comparison as plain JSON for --json: instants as UTC ISO strings, durations as ms. */
export function comparisonJson(c: Comparison, o: CompareRenderOptions): ComparisonJson {
  const pair = (p: Pair) => ({ expected: toIso(p.expected), actual: toIso(p.actual), offsetMs: p.offsetMs });
  return {
    jobId: o.jobId,
    tz: o.tz,
    toleranceMs: o.toleranceMs,
    agree: c.agree,
    counts: {
      expected: c.matched.length + c.off.length + c.missing.length,
      log: c.matched.length + c.off.length + c.extra.length,
      matched: c.matched.length,
      off: c.off.length,
      missing: c.missing.length,
      extra: c.extra.length,
    },
    offsets: c.offsets === null ? null : { ...c.offsets },
    matched: c.matched.map(pair),
    off: c.off.map((p) => ({ ...pair(p), status: p.offsetMs > 0 ? "late" : "early" })),
    missing: c.missing.map(toIso),
    extra: c.extra.map(toIso),
  };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** A duration in ms >= 0 as "0s", "500ms", "30s", "1.5s", "2m5s", "1h", "1h3s". */
function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const sec = (ms % 60_000) / 1000;
  return `${h > 0 ? `${h}h` : ""}${m > 0 ? `${m}m` : ""}${sec > 0 ? `${sec}s` : ""}`;
}

/** A signed offset: "+2m5s", "-500ms", "0s". */
function signedDuration(ms: number): string {
  return ms > 0 ? `+${formatDuration(ms)}` : ms < 0 ? `-${formatDuration(-ms)}` : "0s";
}
