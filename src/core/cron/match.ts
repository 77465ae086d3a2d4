// The wall-clock search: the next local wall time (as wall milliseconds, see
// days.ts) that matches an expression, skipping by fields — month, then day,
// then hour, minute, second — never by scanning minute after minute.

import { daysFromCivil, daysInMonth, weekdayOfDays, DAY_MS } from "./days.js";
import type { CronExpression } from "./parse.js";

/** An expression compiled into lookup tables. */
export interface Compiled {
  /** next[v] = the smallest allowed value >= v, or -1 (one extra slot past the max, always -1). */
  readonly nextSecond: Int8Array;
  readonly nextMinute: Int8Array;
  readonly nextHour: Int8Array;
  readonly nextMonth: Int8Array;
  /** Bit d-1 set for each plain day of the month d. */
  readonly domBits: number;
  readonly lastDays: readonly number[];
  /** For each weekday of the 1st of a month: bit d-1 set when day d's weekday is in daysOfWeek. */
  readonly weekBitsByFirst: readonly number[];
  readonly lastWeekdays: readonly number[];
  readonly nth: readonly { weekday: number; nth: number }[];
  readonly either: boolean;
  /** One-entry cache of monthMask. */
  maskKey: number;
  maskValue: number;
}

function nextTable(values: readonly number[], size: number): Int8Array {
  const t = new Int8Array(size + 1).fill(-1);
  let next = -1;
  const set = new Set(values);
  for (let v = size - 1; v >= 0; v--) {
    if (set.has(v)) next = v;
    t[v] = next;
  }
  return t;
}

const cache = new WeakMap<CronExpression, Compiled>();

export function compile(e: CronExpression): Compiled {
  let c = cache.get(e);
  if (c !== undefined) return c;
  let domBits = 0;
  for (const d of e.daysOfMonth) domBits |= 1 << (d - 1);
  const weekBitsByFirst: number[] = [];
  for (let first = 0; first < 7; first++) {
    let bits = 0;
    for (let d = 1; d <= 31; d++) if (e.daysOfWeek.includes((first + d - 1) % 7)) bits |= 1 << (d - 1);
    weekBitsByFirst.push(bits);
  }
  c = {
    nextSecond: nextTable(e.seconds, 60),
    nextMinute: nextTable(e.minutes, 60),
    nextHour: nextTable(e.hours, 24),
    nextMonth: nextTable(e.months, 13),
    domBits,
    lastDays: e.lastDaysOfMonth,
    weekBitsByFirst,
    lastWeekdays: e.lastWeekdays,
    nth: e.nthWeekdays,
    either: e.dayOfMonthRestricted && e.dayOfWeekRestricted,
    maskKey: -1,
    maskValue: 0,
  };
  cache.set(e, c);
  return c;
}

/** Bit d-1 set for each day d of month m of year y that matches (Vixie rule, see dayMatches). */
export function monthMask(c: Compiled, y: number, m: number): number {
  const key = y * 16 + m;
  if (c.maskKey === key) return c.maskValue;
  const n = daysInMonth(y, m);
  const first = weekdayOfDays(daysFromCivil(y, m, 1));
  let dom = c.domBits;
  for (const k of c.lastDays) if (n - k >= 1) dom |= 1 << (n - k - 1);
  let dow = c.weekBitsByFirst[first]!;
  for (const x of c.nth) {
    const d = 1 + ((x.weekday - first + 7) % 7) + 7 * (x.nth - 1);
    if (d <= n) dow |= 1 << (d - 1);
  }
  for (const w of c.lastWeekdays) {
    const lastWd = (first + n - 1) % 7;
    dow |= 1 << (n - ((lastWd - w + 7) % 7) - 1);
  }
  const all = n === 31 ? 0x7fffffff : (1 << n) - 1;
  const mask = (c.either ? dom | dow : dom & dow) & all;
  c.maskKey = key;
  c.maskValue = mask;
  return mask;
}

/** nextWall's "none": not -1, since wall times before 1970 are negative. */
export const NO_WALL = Number.NEGATIVE_INFINITY;

/**
 * The first matching wall time w with from <= w < until (wall milliseconds;
 * from is rounded up to a whole second), or NO_WALL if there is none.
 */
export function nextWall(c: Compiled, from: number, until: number): number {
  from = Math.ceil(from / 1000) * 1000;
  if (!(from < until)) return NO_WALL;
  let days = Math.floor(from / DAY_MS);
  const sod = (from - days * DAY_MS) / 1000;
  // civil_from_days (H. Hinnant)
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  let d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  let m = mp < 10 ? mp + 3 : mp - 9;
  let y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  let h = Math.floor(sod / 3600);
  let mi = Math.floor(sod / 60) % 60;
  let s = sod % 60;
  const untilDays = Math.floor((until - 1) / DAY_MS);

  for (;;) {
    const nm = c.nextMonth[m]!;
    if (nm < 0) {
      y++;
      m = 1;
      d = 1;
      h = mi = s = 0;
      if (daysFromCivil(y, 1, 1) > untilDays) return NO_WALL;
      continue;
    }
    if (nm !== m) {
      m = nm;
      d = 1;
      h = mi = s = 0;
    }
    const dm = d > 31 ? 0 : monthMask(c, y, m) & ~((1 << (d - 1)) - 1);
    if (dm === 0) {
      m++;
      d = 1;
      h = mi = s = 0;
      if (m > 12) {
        y++;
        m = 1;
      }
      if (daysFromCivil(y, m, 1) > untilDays) return NO_WALL;
      continue;
    }
    const nd = 32 - Math.clz32(dm & -dm);
    if (nd !== d) {
      d = nd;
      h = mi = s = 0;
    }
    days = daysFromCivil(y, m, d);
    if (days > untilDays) return NO_WALL;
    const nh = c.nextHour[h]!;
    if (nh < 0) {
      d++;
      h = mi = s = 0;
      continue;
    }
    if (nh !== h) {
      h = nh;
      mi = s = 0;
    }
    const nmi = c.nextMinute[mi]!;
    if (nmi < 0) {
      h++;
      mi = s = 0;
      continue;
    }
    if (nmi !== mi) {
      mi = nmi;
      s = 0;
    }
    const ns = c.nextSecond[s]!;
    if (ns < 0) {
      mi++;
      s = 0;
      continue;
    }
    s = ns;
    const w = days * DAY_MS + (h * 3600 + mi * 60 + s) * 1000;
    return w < until ? w : NO_WALL;
  }
}

/** Whether the wall time w (a whole second) matches. */
export function matchesWall(c: Compiled, w: number): boolean {
  return nextWall(c, w, w + 1) === w;
}
