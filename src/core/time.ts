// RFC 3339 in and out. The server writes UTC with millisecond precision and
// accepts any offset; Date.parse alone is too lenient ("2026-1-1", "Tuesday").

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Epoch ms for a strict RFC 3339 timestamp in the years 1900 to 9999 (schemas.ts YEAR_PATTERN), or null. */
export function parseRfc3339(value: string): number | null {
  // Every create parses its times twice or more: no array or Date is made on the way (about 3 µs a call before).
  const m = RFC3339.exec(value);
  if (!m) return null;
  const y = Number(m[1]);
  const mo = Number(m[2]);
  if (y < 1900 || mo < 1 || mo > 12) return null;
  const d = Number(m[3]);
  if (d < 1 || d > daysInMonth(y, mo) || Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 60) return null;
  const ms = Date.parse(value.charCodeAt(10) === 32 ? value.replace(" ", "T") : value);
  return Number.isFinite(ms) ? ms : null;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!;
}

// A lease's rows share their times (its lease end, a herd's due second), and
// toISOString costs about 1 µs: the last answer is kept for the next call.
let lastMs = Number.NaN;
let lastIso = "";

export function toIso(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

export function toIsoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/**
 * Seconds from the API (fractions allowed) as the whole milliseconds every
 * time in the store is: a store keeps epoch ms as integers (PostgreSQL's
 * bigint refuses 1000.0000000000033).
 */
export function msOfSeconds(seconds: number): number {
  return Math.round(seconds * 1000);
}
