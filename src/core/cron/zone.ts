// Time zones from the runtime's Intl data: UTC offsets and transitions.
//
// Intl gives only "instant -> local wall time". From it each zone gets, per
// UTC calendar year and on first use, a table of its offset transitions
// (found by sampling once a day and bisecting to the second). After that an
// offset or the next transition is a lookup; Intl.DateTimeFormat objects are
// created once per zone.

import { DAY_MS } from "./days.js";

/** A change of UTC offset: `before` applies until `at` (exclusive), `after` from `at`. Offsets in ms. */
export interface Transition {
  readonly at: number;
  readonly before: number;
  readonly after: number;
}

interface YearTable {
  /** Offset at the start of the year. */
  readonly startOffset: number;
  /** Transitions with start < at <= end of the year, ascending. */
  readonly transitions: readonly Transition[];
}

// Names accepted by isValidTimeZone: IANA-style names only ("Area/Location",
// "UTC", "EST5EDT", "Etc/GMT+5"); never offsets such as "+02:00" (which newer
// runtimes accept) or the empty string.
const IANA_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

const formatters = new Map<string, Intl.DateTimeFormat | null>();

function formatterFor(tz: string): Intl.DateTimeFormat | null {
  let f = formatters.get(tz);
  if (f !== undefined) return f;
  f = null;
  if (IANA_NAME.test(tz)) {
    try {
      f = new Intl.DateTimeFormat("en-US", {
        timeZone: tz,
        hourCycle: "h23",
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
        hour: "2-digit",
        minute: "2-digit",
        second: "2-digit",
      });
    } catch {
      f = null;
    }
  }
  if (formatters.size > 10_000) formatters.clear(); // bound the cache against garbage input
  formatters.set(tz, f);
  return f;
}

/**
 * Whether tz is an IANA time zone name that the runtime's Intl data knows
 * ("UTC" is valid; "Europe/Lodnon", "" and offsets like "+02:00" are not).
 * Names are matched as Intl matches them, i.e. case-insensitively
 * ("europe/london" is accepted; Intl canonicalises it); links such as
 * "US/Eastern" and "Asia/Calcutta" are accepted.
 */
export function isValidTimeZone(tz: string): boolean {
  return typeof tz === "string" && formatterFor(tz) !== null;
}

/** Year tables kept per zone: more than a horizon's worth (cron/next.ts) and a few years back. */
const YEARS_CACHED = 100;

/** A zone's offsets, with per-year transition tables built on first use. */
export class Zone {
  readonly name: string;
  /** Set for zones that are UTC (no Intl needed). */
  readonly fixedOffset: number | null;
  private readonly dtf: Intl.DateTimeFormat | null;
  private readonly years = new Map<number, YearTable>();

  constructor(name: string) {
    this.name = name;
    const dtf = formatterFor(name);
    if (dtf === null) throw new RangeError(`Invalid time zone: ${JSON.stringify(name)}`);
    const resolved = dtf.resolvedOptions().timeZone;
    this.fixedOffset = resolved === "UTC" || resolved === "Etc/UTC" || resolved === "Etc/GMT" ? 0 : null;
    this.dtf = this.fixedOffset === null ? dtf : null;
  }

  /** Offset (local wall - UTC, in ms) at instant t, straight from Intl. */
  rawOffset(t: number): number {
    if (this.dtf === null) return this.fixedOffset ?? 0;
    const sec = Math.floor(t / 1000) * 1000;
    // "MM/DD/YYYY, HH:mm:ss"
    const s = this.dtf.format(sec);
    const p = s.match(/\d+/g);
    if (p === null || p.length < 6) throw new Error(`unexpected Intl output ${JSON.stringify(s)}`);
    const wall = Date.UTC(Number(p[2]), Number(p[0]) - 1, Number(p[1]), Number(p[3]), Number(p[4]), Number(p[5]));
    // Date.UTC maps years 0-99 to 1900-1999; irrelevant for schedules but keep it exact.
    const fixed = Number(p[2]) < 100 ? new Date(wall).setUTCFullYear(Number(p[2])) : wall;
    return fixed - sec;
  }

  private table(year: number): YearTable {
    let t = this.years.get(year);
    if (t !== undefined) return t;
    const start = yearStart(year);
    const end = yearStart(year + 1);
    const startOffset = this.rawOffset(start);
    const transitions: Transition[] = [];
    let lo = start;
    let loOffset = startOffset;
    while (lo < end) {
      const hi = Math.min(lo + DAY_MS, end);
      if (this.rawOffset(hi) === loOffset) {
        lo = hi;
        continue;
      }
      // Bisect to the second: the first instant in (lo, hi] with another offset.
      let a = lo;
      let b = hi;
      while (b - a > 1000) {
        const mid = a + Math.floor((b - a) / 2000) * 1000;
        if (this.rawOffset(mid) === loOffset) a = mid;
        else b = mid;
      }
      const after = this.rawOffset(b);
      transitions.push({ at: b, before: loOffset, after });
      lo = b;
      loOffset = after;
    }
    t = { startOffset, transitions };
    // Requests choose the years (a preview's `from`): bound the cache like the zone cache.
    if (this.years.size >= YEARS_CACHED) this.years.clear();
    this.years.set(year, t);
    return t;
  }

  /** Offset at instant t (ms). */
  offsetAt(t: number): number {
    if (this.fixedOffset !== null) return this.fixedOffset;
    const year = new Date(t).getUTCFullYear();
    const tab = this.table(year);
    let o = tab.startOffset;
    for (const tr of tab.transitions) {
      if (tr.at > t) break;
      o = tr.after;
    }
    // A transition exactly at the start of the year is stored with the previous year.
    return o;
  }

  /**
   * The first boundary after t: the next transition if there is one in this
   * or the next UTC year, else a pseudo-boundary (before === after) at the
   * start of the next year, at least a year away from any real transition.
   */
  nextBoundary(t: number): Transition {
    const year = new Date(t).getUTCFullYear();
    for (const y of [year, year + 1]) {
      for (const tr of this.table(y).transitions) if (tr.at > t) return tr;
    }
    const o = this.offsetAt(t);
    return { at: yearStart(year + 1), before: o, after: o };
  }

  /** The last transition at or before t within this or the previous UTC year, or null. */
  prevTransition(t: number): Transition | null {
    const year = new Date(t).getUTCFullYear();
    for (const y of [year, year - 1]) {
      const trs = this.table(y).transitions;
      for (let i = trs.length - 1; i >= 0; i--) if (trs[i]!.at <= t) return trs[i]!;
    }
    return null;
  }
}

const zones = new Map<string, Zone>();

/** The (cached) zone for an IANA name; throws RangeError for an unknown zone. */
export function getZone(tz: string): Zone {
  let z = zones.get(tz);
  if (z === undefined) {
    z = new Zone(tz);
    if (zones.size > 10_000) zones.clear();
    zones.set(tz, z);
  }
  return z;
}

/** 00:00 UTC on 1 January of a year; Date.UTC alone maps the years 0-99 to 1900-1999. */
function yearStart(year: number): number {
  return new Date(Date.UTC(2000, 0, 1)).setUTCFullYear(year);
}
