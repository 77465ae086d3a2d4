// A brute-force REFERENCE for next fire times, used only by tests.
//
// It shares nothing with the real search (match.ts, zone.ts, next.ts): it
// walks real instants one step at a time (a minute, or a second for
// expressions with a seconds field), converts each to a local wall time with
// its own Intl.DateTimeFormat, matches the wall time against the parsed
// expression's value sets with its own day logic, and applies the DST rule
// literally:
//   - a gap is a local wall time that no instant maps to (detected as a jump
//     of the wall clock between two consecutive steps); its transition
//     instant is the first step after the jump;
//   - an overlap is a local wall time reached by two instants.

import type { DstOptions } from "@duetime/sdk/contract";
import type { FireTime } from "./next.js";
import type { CronExpression } from "./parse.js";

const MINUTE = 60_000;
const HOUR = 3_600_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

function dtf(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-GB", {
      timeZone: tz,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(tz, f);
  }
  return f;
}

/** The local wall time of instant t in tz, as "wall ms" (the wall time read as UTC). */
export function wallOf(tz: string, t: number): number {
  const parts: Record<string, number> = {};
  for (const p of dtf(tz).formatToParts(new Date(t))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
}

/** Does wall time w (as wall ms) match the expression? Independent of match.ts/days.ts. */
export function refMatches(e: CronExpression, w: number): boolean {
  const dt = new Date(w);
  const y = dt.getUTCFullYear();
  const mo = dt.getUTCMonth() + 1;
  const d = dt.getUTCDate();
  if (!e.seconds.includes(dt.getUTCSeconds())) return false;
  if (!e.minutes.includes(dt.getUTCMinutes())) return false;
  if (!e.hours.includes(dt.getUTCHours())) return false;
  if (!e.months.includes(mo)) return false;
  const lastDay = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  const wd = dt.getUTCDay();
  const domMatch = e.daysOfMonth.includes(d) || e.lastDaysOfMonth.some((n) => lastDay - n === d);
  // count how many times this weekday occurred in the month up to d (inclusive)
  let occurrence = 0;
  for (let x = d; x >= 1; x -= 7) occurrence++;
  const isLastOfItsWeekday = d + 7 > lastDay;
  const dowMatch =
    e.daysOfWeek.includes(wd) ||
    e.lastWeekdays.some((x) => x === wd && isLastOfItsWeekday) ||
    e.nthWeekdays.some((x) => x.weekday === wd && x.nth === occurrence);
  if (e.dayOfMonthRestricted && e.dayOfWeekRestricted) return domMatch || dowMatch;
  return domMatch && dowMatch;
}

interface Gap {
  fromWall: number; // first missing wall time
  toWall: number; // first wall time after the gap (exclusive end of missing range)
  transition: number; // the first instant after the gap
}

/**
 * All fires with fromMs < at <= toMs, by brute force. The walk extends
 * `margin` beyond both ends so that repeated and missing wall times near the
 * window's edges are seen whole (margin must exceed the largest DST shift).
 */
export function referenceFires(expr: CronExpression, tz: string, fromMs: number, toMs: number, dst: DstOptions = {}, margin = 3 * HOUR): FireTime[] {
  const step = expr.hasSeconds ? 1000 : MINUTE;
  const gapPolicy = dst.gap ?? (expr.fixedTime ? "run_at_transition" : "skip");
  const overlapPolicy = dst.overlap ?? (expr.fixedTime ? "first" : "both");

  const instantsByWall = new Map<number, number[]>();
  const gaps: Gap[] = [];
  const start = Math.floor((fromMs - margin) / step) * step;
  const end = toMs + margin;
  let prevWall = NaN;
  for (let t = start; t <= end; t += step) {
    const w = wallOf(tz, t);
    const list = instantsByWall.get(w);
    if (list) list.push(t);
    else instantsByWall.set(w, [t]);
    if (w - prevWall > step) gaps.push({ fromWall: prevWall + step, toWall: w, transition: t });
    prevWall = w;
  }

  // Every wall time the walk passed or jumped over.
  const walls = new Set<number>(instantsByWall.keys());
  for (const g of gaps) for (let w = g.fromWall; w < g.toWall; w += step) walls.add(w);

  interface Candidate extends FireTime {
    fromGap: boolean;
  }
  const candidates: Candidate[] = [];
  for (const w of [...walls].sort((a, b) => a - b)) {
    if (!refMatches(expr, w)) continue;
    const local = new Date(w).toISOString().slice(0, 19);
    const instants = instantsByWall.get(w);
    if (!instants) {
      if (gapPolicy === "skip") continue;
      const g = gaps.find((x) => w >= x.fromWall && w < x.toWall)!;
      candidates.push({ at: g.transition, local, dst: "gap", fromGap: true });
    } else if (instants.length === 1) {
      candidates.push({ at: instants[0]!, local, fromGap: false });
    } else {
      if (instants.length !== 2) throw new Error(`reference: wall time ${local} reached ${instants.length} times`);
      const [a, b] = instants as [number, number];
      candidates.push({ at: a, local, dst: "overlap", fromGap: false });
      if (overlapPolicy === "both") candidates.push({ at: b, local, dst: "overlap", fromGap: false });
    }
  }

  // One fire per instant: a real wall-time match at a transition instant wins
  // over gap fires moved there; several gap fires collapse into the earliest.
  const byInstant = new Map<number, Candidate>();
  for (const c of candidates) {
    const have = byInstant.get(c.at);
    if (!have || (have.fromGap && !c.fromGap)) byInstant.set(c.at, c);
  }
  return [...byInstant.values()]
    .filter((c) => c.at > fromMs && c.at <= toMs)
    .sort((a, b) => a.at - b.at)
    .map(({ at, local, dst: flag }) => (flag ? { at, local, dst: flag } : { at, local }));
}

/** Offset transitions of tz in [fromMs, toMs): instants where the UTC offset changes (to the minute). */
export function referenceTransitions(tz: string, fromMs: number, toMs: number): number[] {
  const offset = (t: number): number => wallOf(tz, t) - t;
  const out: number[] = [];
  const probe = 3 * HOUR;
  for (let t = fromMs; t < toMs; t += probe) {
    if (offset(t) === offset(t + probe)) continue;
    let lo = t;
    let hi = t + probe;
    while (hi - lo > MINUTE) {
      const mid = lo + Math.floor((hi - lo) / 2 / MINUTE) * MINUTE;
      if (offset(mid) === offset(lo)) lo = mid;
      else hi = mid;
    }
    out.push(hi);
  }
  return out;
}
