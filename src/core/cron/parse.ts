// The cron dialect: parsing a source string into explicit value sets.
//
// Everything in duetime that needs a cron schedule goes through parseCron and
// the search in next.ts. This module is pure (no I/O, no clock).

import { dayMatches } from "./days.js";

export type CronField = "second" | "minute" | "hour" | "dayOfMonth" | "month" | "dayOfWeek" | "expression";

/** A cron expression that cannot be parsed, or that could never fire. */
export class CronSyntaxError extends Error {
  /** Which field was wrong ("expression" for problems with the whole string). */
  readonly field: CronField;
  /** The offending token, as written (a value, a list item, or the field). */
  readonly token: string;

  constructor(field: CronField, token: string, problem: string) {
    super(`${field}: ${JSON.stringify(token)} ${problem}`);
    this.name = "CronSyntaxError";
    this.field = field;
    this.token = token;
  }
}

/** The k-th (1..5) given weekday of a month, from `w#k`. */
export interface NthWeekday {
  readonly weekday: number; // 0 = Sunday .. 6 = Saturday
  readonly nth: number; // 1..5
}

/**
 * A parsed cron expression. The value sets are explicit and sorted; day
 * matching follows the Vixie rule described at `dayMatches` (days.ts).
 */
export interface CronExpression {
  readonly source: string;
  /** The seed used for `H` fields ("" when none was given). */
  readonly hashSeed: string;
  readonly hasSeconds: boolean;
  /** true when neither minute nor hour field starts with "*" (macros other than @hourly are fixed-time) */
  readonly fixedTime: boolean;
  readonly seconds: readonly number[]; // 0-59 ([0] when there is no seconds field)
  readonly minutes: readonly number[]; // 0-59
  readonly hours: readonly number[]; // 0-23
  /** Plain days of the month 1-31 (a day that a month does not have never matches). */
  readonly daysOfMonth: readonly number[];
  /** `L` (0) and `L-n` (n): the day n days before the last day of the month. */
  readonly lastDaysOfMonth: readonly number[];
  readonly months: readonly number[]; // 1-12
  /** Plain weekdays 0-6 (0 = Sunday; 7 in the source is folded into 0). */
  readonly daysOfWeek: readonly number[];
  /** `wL`: the last given weekday of the month (0-6). */
  readonly lastWeekdays: readonly number[];
  /** `w#k`: the k-th given weekday of the month. */
  readonly nthWeekdays: readonly NthWeekday[];
  /** The day-of-month field does not start with `*` or `?`. */
  readonly dayOfMonthRestricted: boolean;
  /** The day-of-week field does not start with `*` or `?`. */
  readonly dayOfWeekRestricted: boolean;
}

export interface ParseOptions {
  /** The seed for `H` (Jenkins-style hashed values), normally the job's id or name. Default "". */
  hashSeed?: string;
}

/**
 * A stable, non-negative hash of seed in [0, modulo): FNV-1a over the UTF-16
 * code units, then a murmur3 finaliser so that nearby seeds ("job-1",
 * "job-2") spread over the whole range. Never changes between versions:
 * stored schedules depend on it.
 */
export function hashOffset(seed: string, modulo: number): number {
  if (!Number.isInteger(modulo) || modulo < 1) throw new RangeError(`hashOffset: modulo must be a positive integer, got ${modulo}`);
  let h = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) {
    h ^= seed.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % modulo;
}

const MACROS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

const MONTH_NAMES = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

interface FieldSpec {
  name: Exclude<CronField, "expression">;
  min: number;
  max: number;
  /** The range `H` picks from when no explicit range is given. */
  hashMin: number;
  hashMax: number;
  /** The last value `*`, `*\/n` and `a/n` reach (day of week stops at 6: 7 is only an alias). */
  stepMax: number;
  names?: string[];
  nameBase?: number;
}

const SECOND: FieldSpec = { name: "second", min: 0, max: 59, hashMin: 0, hashMax: 59, stepMax: 59 };
const MINUTE: FieldSpec = { name: "minute", min: 0, max: 59, hashMin: 0, hashMax: 59, stepMax: 59 };
const HOUR: FieldSpec = { name: "hour", min: 0, max: 23, hashMin: 0, hashMax: 23, stepMax: 23 };
// H in day-of-month picks from 1-28 (as Jenkins does) so that it fires every month.
const DOM: FieldSpec = { name: "dayOfMonth", min: 1, max: 31, hashMin: 1, hashMax: 28, stepMax: 31 };
const MONTH: FieldSpec = { name: "month", min: 1, max: 12, hashMin: 1, hashMax: 12, stepMax: 12, names: MONTH_NAMES, nameBase: 1 };
const DOW: FieldSpec = { name: "dayOfWeek", min: 0, max: 7, hashMin: 0, hashMax: 6, stepMax: 6, names: DAY_NAMES, nameBase: 0 };

const NUMBER = /^\d+$/;

interface ParsedField {
  values: Set<number>;
  lastDays: Set<number>; // dom only
  lastWeekdays: Set<number>; // dow only
  nth: Map<string, NthWeekday>; // dow only
}

/** Parses a single value (number or, where allowed, a name). */
function parseValue(spec: FieldSpec, tok: string): number {
  let v: number;
  if (NUMBER.test(tok)) {
    v = Number(tok);
  } else if (spec.names && /^[A-Za-z]{3}$/.test(tok)) {
    const i = spec.names.indexOf(tok.toUpperCase());
    if (i < 0) throw new CronSyntaxError(spec.name, tok, `is not a known ${spec.name === "month" ? "month" : "weekday"} name`);
    v = i + (spec.nameBase ?? 0);
  } else {
    throw new CronSyntaxError(spec.name, tok, spec.names ? "is not a number or a name" : "is not a number");
  }
  if (v < spec.min || v > spec.max) throw new CronSyntaxError(spec.name, tok, `is out of range ${spec.min}-${spec.max}`);
  return v;
}

function parseStep(spec: FieldSpec, item: string, tok: string): number {
  if (!NUMBER.test(tok)) throw new CronSyntaxError(spec.name, item, "has a step that is not a number");
  const n = Number(tok);
  if (n < 1) throw new CronSyntaxError(spec.name, item, "has step 0; a step must be at least 1");
  if (n > spec.max) throw new CronSyntaxError(spec.name, item, `has step ${tok}, larger than the field's range ${spec.min}-${spec.max}`);
  return n;
}

/** Parses `a-b` (or a single value) into [lo, hi]. */
function parseRange(spec: FieldSpec, item: string, tok: string): [number, number] {
  const dash = tok.indexOf("-");
  if (dash < 0) {
    const v = parseValue(spec, tok);
    return [v, v];
  }
  const a = tok.slice(0, dash);
  const b = tok.slice(dash + 1);
  if (a === "" || b === "" || b.includes("-")) throw new CronSyntaxError(spec.name, item, "is not a valid range");
  const lo = parseValue(spec, a);
  let hi = parseValue(spec, b);
  // "FRI-SUN": a range ending in the name SUN means the Sunday at the end of the week (7).
  if (spec === DOW && hi === 0 && lo > 0 && /^[A-Za-z]+$/.test(b)) hi = 7;
  if (lo > hi) throw new CronSyntaxError(spec.name, item, `is a reversed range (${lo} > ${hi})`);
  return [lo, hi];
}

function addRange(out: Set<number>, lo: number, hi: number, step: number): void {
  for (let v = lo; v <= hi; v += step) out.add(v);
}

function parseHash(spec: FieldSpec, item: string, seed: string, out: Set<number>): void {
  // H, H(a-b), H/n, H(a-b)/n
  const m = /^H(?:\(([^()]*)\))?(?:\/(.*))?$/.exec(item);
  if (!m) throw new CronSyntaxError(spec.name, item, "is not a valid H expression (H, H(a-b), H/n or H(a-b)/n)");
  let lo = spec.hashMin;
  let hi = spec.hashMax;
  if (m[1] !== undefined) {
    if (!m[1].includes("-")) throw new CronSyntaxError(spec.name, item, "needs a range inside H(...), like H(0-29)");
    // H(FRI-SUN) hashes over 5,6,7; a 7 is folded into Sunday below.
    [lo, hi] = parseRange(spec, item, m[1]);
  }
  if (m[2] === undefined) {
    const v = lo + hashOffset(seed, hi - lo + 1);
    out.add(spec === DOW && v === 7 ? 0 : v);
    return;
  }
  const step = parseStep(spec, item, m[2]);
  const end = m[1] !== undefined ? hi : spec.stepMax;
  const start = lo + hashOffset(seed, Math.min(step, end - lo + 1));
  for (let v = start; v <= end; v += step) out.add(spec === DOW && v === 7 ? 0 : v);
}

function parseField(spec: FieldSpec, text: string, seed: string): ParsedField {
  const out: ParsedField = { values: new Set(), lastDays: new Set(), lastWeekdays: new Set(), nth: new Map() };
  const items = text.split(",");
  for (const item of items) {
    if (item === "") throw new CronSyntaxError(spec.name, text, "has an empty list item");
    if (item === "*" || (item === "?" && (spec === DOM || spec === DOW))) {
      addRange(out.values, spec.min, spec.stepMax, 1);
      continue;
    }
    if (item === "?") throw new CronSyntaxError(spec.name, item, "is only allowed in the day-of-month and day-of-week fields");
    if (item.startsWith("H")) {
      parseHash(spec, item, seed, out.values);
      continue;
    }
    if (spec === DOM && /^L/i.test(item)) {
      const m = /^L(?:-(\d+))?$/i.exec(item);
      if (!m) throw new CronSyntaxError(spec.name, item, "is not a valid last-day expression (L or L-n)");
      const n = m[1] === undefined ? 0 : Number(m[1]);
      if (n > 30) throw new CronSyntaxError(spec.name, m[1] ?? item, "is out of range 0-30 for L-n");
      out.lastDays.add(n);
      continue;
    }
    if (spec === DOW && item.includes("#")) {
      const [w, k, extra] = item.split("#");
      if (w === undefined || k === undefined || extra !== undefined || w === "" || k === "") {
        throw new CronSyntaxError(spec.name, item, "is not a valid nth-weekday expression (w#k)");
      }
      const weekday = parseValue(spec, w) % 7;
      if (!NUMBER.test(k)) throw new CronSyntaxError(spec.name, k, "is not a number (the k of w#k)");
      const nth = Number(k);
      if (nth < 1 || nth > 5) throw new CronSyntaxError(spec.name, k, "is out of range 1-5 (the k of w#k)");
      out.nth.set(`${weekday}#${nth}`, { weekday, nth });
      continue;
    }
    if (spec === DOW && /^[^/-]+L$/i.test(item)) {
      out.lastWeekdays.add(parseValue(spec, item.slice(0, -1)) % 7);
      continue;
    }
    const slash = item.indexOf("/");
    if (slash >= 0) {
      const base = item.slice(0, slash);
      const step = parseStep(spec, item, item.slice(slash + 1));
      if (base === "*") {
        addRange(out.values, spec.min, spec.stepMax, step);
      } else if (base === "") {
        throw new CronSyntaxError(spec.name, item, "has a step without a start (use */n)");
      } else if (base.includes("-")) {
        const [lo, hi] = parseRange(spec, item, base);
        addRange(out.values, lo, hi, step);
      } else {
        const lo = parseValue(spec, base);
        addRange(out.values, lo, Math.max(lo, spec.stepMax), step);
      }
      continue;
    }
    const [lo, hi] = parseRange(spec, item, item);
    addRange(out.values, lo, hi, 1);
  }
  if (spec === DOW && out.values.has(7)) {
    out.values.delete(7);
    out.values.add(0);
  }
  return out;
}

const sorted = (s: Iterable<number>): number[] => [...s].sort((a, b) => a - b);
const startsWithStar = (f: string): boolean => f.startsWith("*") || f.startsWith("?");

/**
 * Parses a cron expression: five fields `minute hour day-of-month month
 * day-of-week`, or six with a leading seconds field, or a macro (@yearly,
 * @annually, @monthly, @weekly, @daily, @midnight, @hourly).
 * Throws CronSyntaxError naming the field and token; also rejects
 * expressions whose days can never match (e.g. "0 0 30 2 *").
 */
export function parseCron(source: string, options: ParseOptions = {}): CronExpression {
  if (typeof source !== "string") throw new CronSyntaxError("expression", String(source), "is not a string");
  const seed = options.hashSeed ?? "";
  const trimmed = source.trim();
  if (trimmed === "") throw new CronSyntaxError("expression", source, "is empty; expected 5 or 6 fields or a macro");
  let body = trimmed;
  if (trimmed.startsWith("@")) {
    const macro = MACROS[trimmed.toLowerCase()];
    if (macro === undefined)
      throw new CronSyntaxError("expression", trimmed, "is not a known macro (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)");
    body = macro;
  }
  const fields = body.split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new CronSyntaxError(
      "expression",
      trimmed,
      `has ${fields.length} fields; expected 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)`,
    );
  }
  const hasSeconds = fields.length === 6;
  const [secF, minF, hourF, domF, monF, dowF] = (hasSeconds ? fields : ["0", ...fields]) as [string, string, string, string, string, string];

  const sec = parseField(SECOND, secF, seed);
  const min = parseField(MINUTE, minF, seed);
  const hour = parseField(HOUR, hourF, seed);
  const dom = parseField(DOM, domF, seed);
  const mon = parseField(MONTH, monF, seed);
  const dow = parseField(DOW, dowF, seed);

  const expr: CronExpression = Object.freeze({
    source,
    hashSeed: seed,
    hasSeconds,
    fixedTime: !minF.startsWith("*") && !hourF.startsWith("*"),
    seconds: Object.freeze(sorted(sec.values)),
    minutes: Object.freeze(sorted(min.values)),
    hours: Object.freeze(sorted(hour.values)),
    daysOfMonth: Object.freeze(sorted(dom.values)),
    lastDaysOfMonth: Object.freeze(sorted(dom.lastDays)),
    months: Object.freeze(sorted(mon.values)),
    daysOfWeek: Object.freeze(sorted(dow.values)),
    lastWeekdays: Object.freeze(sorted(dow.lastWeekdays)),
    nthWeekdays: Object.freeze([...dow.nth.values()].sort((a, b) => a.weekday - b.weekday || a.nth - b.nth)),
    dayOfMonthRestricted: !startsWithStar(domF),
    dayOfWeekRestricted: !startsWithStar(dowF),
  });
  if (!canEverFire(expr)) {
    throw new CronSyntaxError(
      "dayOfMonth",
      domF,
      `can never match a day together with month ${JSON.stringify(monF)} and day-of-week ${JSON.stringify(dowF)}`,
    );
  }
  return expr;
}

const DAYS_IN_MONTH_MAX = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Whether any day ever matches. A quick structural check covers the common
 * cases; otherwise one full 400-year Gregorian cycle is scanned (the scan
 * stops at the first matching day, so it is only long for expressions that
 * really never fire).
 */
function canEverFire(e: CronExpression): boolean {
  const monthsOk = (pred: (maxDays: number) => boolean): boolean => e.months.some((m) => pred(DAYS_IN_MONTH_MAX[m - 1]!));
  const onlyDom = e.dayOfMonthRestricted && !e.dayOfWeekRestricted && e.daysOfWeek.length === 7;
  if (onlyDom) {
    if (e.lastDaysOfMonth.some((n) => monthsOk((d) => d - n >= 1))) return true;
    if (e.daysOfMonth.some((d) => monthsOk((max) => d <= max))) return true;
    return false;
  }
  if (!e.dayOfMonthRestricted && !e.dayOfWeekRestricted && e.daysOfWeek.length === 7 && e.daysOfMonth.length === 31) return true;
  // Scan 2000-01-01 .. 2399-12-31 (one whole cycle of the calendar), months first.
  for (let y = 2000; y < 2400; y++) {
    for (const m of e.months) {
      const n = new Date(Date.UTC(y, m, 0)).getUTCDate();
      for (let d = 1; d <= n; d++) if (dayMatches(e, y, m, d)) return true;
    }
  }
  return false;
}
