// Calendar arithmetic and day matching, shared by the parser (never-fires
// check) and the search (match.ts). Wall times are handled as "wall
// milliseconds": the local date and time encoded as if it were UTC.

import type { CronExpression } from "./parse.js";

export const SECOND_MS = 1000;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export function isLeapYear(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

export function daysInMonth(y: number, m: number): number {
  return m === 2 && isLeapYear(y) ? 29 : MONTH_DAYS[m - 1]!;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
export function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Weekday (0 = Sunday) of a days-since-epoch number. */
export function weekdayOfDays(days: number): number {
  return (((days + 4) % 7) + 7) % 7;
}

/**
 * Whether day y-m-d matches the expression's day fields.
 *
 * Vixie rule: when neither the day-of-month nor the day-of-week field starts
 * with `*` (or `?`), a day matches if EITHER field matches; when either
 * starts with `*`, it must match BOTH (a bare `*` matches every day, so it
 * adds no constraint, while `*\/2` still constrains).
 */
export function dayMatches(e: CronExpression, y: number, m: number, d: number): boolean {
  const n = daysInMonth(y, m);
  if (d > n) return false;
  let dom = e.daysOfMonth.includes(d);
  if (!dom) for (const k of e.lastDaysOfMonth) if (n - k === d) dom = true;
  const wd = weekdayOfDays(daysFromCivil(y, m, d));
  let dow = e.daysOfWeek.includes(wd);
  if (!dow) for (const w of e.lastWeekdays) if (w === wd && d + 7 > n) dow = true;
  if (!dow) for (const x of e.nthWeekdays) if (x.weekday === wd && Math.ceil(d / 7) === x.nth) dow = true;
  return e.dayOfMonthRestricted && e.dayOfWeekRestricted ? dom || dow : dom && dow;
}
