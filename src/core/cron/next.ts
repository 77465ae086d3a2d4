// Next fire times of a cron expression in an IANA time zone, with duetime's
// daylight-saving rule.
//
// Why this is hand-written instead of using croner or cron-parser: neither
// implements this DST rule (cron-parser shifts times in a spring-forward gap
// later, croner skips them; neither fires a fixed-time schedule once at the
// transition instant and only at the first of two repeated wall times), and
// neither supports per-job gap/overlap choices.
//
// The rule. A schedule is FIXED-TIME when neither its minute nor its hour
// field starts with "*"; otherwise it is WILDCARD.
//   gap (spring forward):  wildcard default "skip" — wall times that do not
//     exist do not fire. Fixed-time default "run_at_transition" — if any
//     matching wall time falls in the gap, fire once at the transition
//     instant (merged with the transition's own wall time when that matches).
//   overlap (fall back):   wildcard default "both" — repeated wall times fire
//     at both instants. Fixed-time default "first" — only at the first.
// DstOptions override each part independently.
//
// The algorithm walks the zone's timeline as intervals of constant offset
// [s, e) (zone.ts). Within an interval wall = instant + offset is a
// bijection, so the next matching wall time is found by the field-skipping
// search (match.ts) and mapped back exactly; gaps and overlaps only occur at
// interval boundaries, where the rule is applied. The cost is one wall search
// per interval visited — usually one.

import type { DstOptions } from "@duetime/sdk/contract";
import { compile, matchesWall, nextWall, NO_WALL } from "./match.js";
import type { CronExpression } from "./parse.js";
import { getZone } from "./zone.js";

export interface FireTime {
  /** Epoch ms (UTC) of the real instant it fires. */
  at: number;
  /** The local wall time "YYYY-MM-DDTHH:mm:ss" that matched (for a gap fire: the first matching non-existent wall time). */
  local: string;
  /**
   * "gap" when this fire was moved to a spring-forward transition instant;
   * "overlap" when its wall time occurs twice (a fall-back overlap).
   */
  dst?: "gap" | "overlap";
}

/**
 * How far past `afterMs` (for a running job: its previous firing)
 * nextFireTime searches before it answers "none": 30 × 366 days, a little
 * over 30 years. It bounds the search's work: a request cannot make it walk
 * further (docs/cron.md). Feb 29 on a Monday (every 28 years, mostly) is
 * found; an expression whose next firing is further away has none.
 */
export const HORIZON_MS = 30 * 366 * 86_400_000;

function formatWall(w: number): string {
  return new Date(w).toISOString().slice(0, 19);
}

/**
 * The first fire strictly after afterMs and before afterMs + HORIZON_MS, or
 * null if there is none. Throws RangeError for an unknown time zone.
 */
export function nextFireTime(expr: CronExpression, tz: string, afterMs: number, dst?: DstOptions): FireTime | null {
  if (!Number.isFinite(afterMs)) throw new RangeError(`afterMs must be a finite number, got ${afterMs}`);
  const c = compile(expr);
  const zone = getZone(tz);
  const horizon = afterMs + HORIZON_MS;
  const within = (fire: FireTime): FireTime | null => (fire.at < horizon ? fire : null);
  // The smallest wall time (whole second) whose instant is > afterMs, given offset o.
  const wallAfter = (o: number): number => Math.floor((afterMs + o) / 1000) * 1000 + 1000;

  if (zone.fixedOffset !== null) {
    const o = zone.fixedOffset;
    const w = nextWall(c, wallAfter(o), horizon + o);
    return w === NO_WALL ? null : { at: w - o, local: formatWall(w) };
  }

  const runAtTransition = (dst?.gap ?? (expr.fixedTime ? "run_at_transition" : "skip")) === "run_at_transition";
  const firstOnly = (dst?.overlap ?? (expr.fixedTime ? "first" : "both")) === "first";

  // The interval [s, e) containing afterMs, with offset o; op before s, on after e.
  const prev = zone.prevTransition(afterMs);
  let s = prev === null ? -Infinity : prev.at;
  let o = zone.offsetAt(afterMs);
  let op = prev === null ? o : prev.before;
  for (;;) {
    const next = zone.nextBoundary(Math.max(s, afterMs));
    const e = next.at;
    const on = next.after;

    if (s > afterMs && op < o && runAtTransition) {
      // Spring forward at s: wall times [s+op, s+o) do not exist.
      const g = nextWall(c, s + op, s + o);
      if (g !== NO_WALL && !matchesWall(c, s + o)) return within({ at: s, local: formatWall(g), dst: "gap" });
    }
    let from = Math.max(wallAfter(o), s + o);
    // Fall back at s: wall times [s+o, s+op) are second occurrences.
    if (op > o && firstOnly) from = Math.max(from, s + op);
    const w = nextWall(c, from, e + o);
    if (w !== NO_WALL) {
      const fire: FireTime = { at: w - o, local: formatWall(w) };
      if ((op > o && w < s + op) || (on < o && w >= e + on)) fire.dst = "overlap";
      return within(fire); // the last interval may reach past the horizon
    }
    if (e > horizon) return null;
    s = e;
    op = o;
    o = on;
  }
}

/**
 * How far past its start a list of fire times reaches (fireTimes, and the
 * windows of the run ledger and backfill): 100 × 366 days. Each year a search
 * crosses costs a zone table built from Intl (about 0.7 ms), so 1,000 firings
 * of "Feb 29" (4,000 years) would hold the process for seconds.
 */
export const REACH_MS = 100 * 366 * 86_400_000;

/**
 * The first `count` fires strictly after afterMs and within REACH_MS of it, in
 * order (fewer if the horizon or the reach is met). count is a whole number:
 * callers bound it (the preview takes 1..1000), so Infinity is a RangeError,
 * never an endless loop.
 */
export function fireTimes(expr: CronExpression, tz: string, afterMs: number, count: number, dst?: DstOptions): FireTime[] {
  if (!Number.isSafeInteger(count) || count < 0) throw new RangeError(`count must be a whole number, got ${count}`);
  const out: FireTime[] = [];
  let after = afterMs;
  for (let i = 0; i < count; i++) {
    const f = nextFireTime(expr, tz, after, dst);
    if (f === null || f.at >= afterMs + REACH_MS) break;
    out.push(f);
    after = f.at;
  }
  return out;
}
