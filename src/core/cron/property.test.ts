// Property-based tests: nextFireTime/fireTimes against the brute-force
// reference (reference.ts) over random expressions generated from the
// grammar, many zones, and start instants between 2024 and 2030 that are
// biased to lie within hours of a DST transition.
//
// Runtime budget: ~60 s on two cores; the reference walks every minute (or
// second) of each window through Intl, so windows are kept short.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { DstOptions } from "@duetime/sdk/contract";
import { CronSyntaxError, fireTimes, nextFireTime, parseCron } from "./index.js";
import type { CronExpression, FireTime } from "./index.js";
import { referenceFires, referenceTransitions } from "./reference.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const ZONES = [
  "America/New_York",
  "Europe/London",
  "Australia/Lord_Howe",
  "Pacific/Chatham",
  "Asia/Kolkata",
  "Australia/Sydney",
  "America/Sao_Paulo",
  "UTC",
  "Europe/Berlin",
  "America/Santiago",
];

const FROM = Date.UTC(2024, 0, 1);
const TO = Date.UTC(2031, 0, 1);
const TRANSITIONS = new Map(ZONES.map((tz) => [tz, referenceTransitions(tz, FROM, TO)]));
// Sao Paulo's last transitions (2018-2019, midnight changes) as an extra source of starts.
const SAO_PAULO_OLD = referenceTransitions("America/Sao_Paulo", Date.UTC(2018, 0, 1), Date.UTC(2019, 11, 1));

test("the zones under test really have transitions (sanity)", () => {
  assert.equal(TRANSITIONS.get("America/New_York")!.length, 14);
  assert.equal(TRANSITIONS.get("Australia/Lord_Howe")!.length, 14);
  assert.equal(TRANSITIONS.get("Pacific/Chatham")!.length, 14);
  assert.equal(TRANSITIONS.get("Asia/Kolkata")!.length, 0);
  assert.equal(TRANSITIONS.get("UTC")!.length, 0);
  assert.equal(TRANSITIONS.get("America/Sao_Paulo")!.length, 0);
  assert.equal(SAO_PAULO_OLD.length, 3);
});

// ------------------------------------------------------------------ grammar

const pick = <T>(...xs: T[]) => fc.constantFrom(...xs);

/** One list item of a numeric field, with values biased towards `hot`. */
function itemArb(min: number, max: number, hot: number[], stepMax: number): fc.Arbitrary<string> {
  const v = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...hot) }, { weight: 2, arbitrary: fc.integer({ min, max }) });
  const step = fc.integer({ min: 1, max: stepMax });
  const range = fc.tuple(v, v).map(([a, b]) => (a <= b ? [a, b] : [b, a]));
  return fc.oneof(
    { weight: 4, arbitrary: v.map(String) },
    { weight: 2, arbitrary: range.map(([a, b]) => `${a}-${b}`) },
    { weight: 1, arbitrary: fc.tuple(range, step).map(([[a, b], s]) => `${a}-${b}/${s}`) },
    { weight: 1, arbitrary: fc.tuple(v, step).map(([a, s]) => `${a}/${s}`) },
    { weight: 1, arbitrary: pick("H", "H/2", `H(${min}-${min + 3})`, "H/5") },
  );
}

function listArb(item: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.array(item, { minLength: 1, maxLength: 3 }).map((xs) => xs.join(","));
}

const secondArb = fc.oneof(pick("*", "*/20", "*/7", "0", "30", "0,30", "59", "H", "10-20/5"), listArb(itemArb(0, 59, [0, 1, 30, 59], 30)));
// Minutes: the offsets' 15/30/45-minute granularity matters (Lord Howe, Chatham, Kolkata).
const minuteArb = fc.oneof(
  { weight: 3, arbitrary: pick("*", "*/15", "*/30", "*/5", "*/45", "*/7") },
  { weight: 5, arbitrary: listArb(itemArb(0, 59, [0, 15, 30, 45, 44, 59, 1, 29], 30)) },
);
// Hours: the transitions happen at local 00:00-04:00 in the zones above.
const hourArb = fc.oneof(
  { weight: 3, arbitrary: pick("*", "*/2", "*/3", "*/12") },
  { weight: 5, arbitrary: listArb(itemArb(0, 23, [0, 1, 2, 3, 4, 23, 22], 12)) },
);
/** Day fields; `star` is the weight of a plain "*" (short windows want mostly "*", or they are empty). */
const domArb = (star: number) =>
  fc.oneof(
    { weight: star, arbitrary: pick("*") },
    { weight: 1, arbitrary: pick("?", "*/2", "L", "L-1", "1,L", "1-15", "*/3") },
    { weight: 2, arbitrary: listArb(itemArb(1, 31, [1, 2, 3, 4, 5, 6, 7, 8, 25, 26, 27, 28, 29, 30, 31], 10)) },
  );
const monthArb = (star: number) =>
  fc.oneof(
    { weight: star, arbitrary: pick("*") },
    { weight: 2, arbitrary: pick("3,4,9,10,11", "MAR-APR,SEP-NOV", "*/2", "2-11", "oct", "APR,Mar,Sep,oct,nov") },
  );
const dowItemArb = fc.oneof(
  fc.integer({ min: 0, max: 7 }).map(String),
  pick("MON-FRI", "SAT,SUN", "sun", "FRI-SUN", "1-5", "0-3", "*/2", "6", "?"),
  fc.tuple(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 1, max: 5 })).map(([w, k]) => `${w}#${k}`),
  fc.integer({ min: 0, max: 7 }).map((w) => `${w}L`),
  pick("SUN#1", "SUN#2", "SAT#1", "SUNL", "SATL"),
);
const dowArb = (star: number) => fc.oneof({ weight: star, arbitrary: pick("*") }, { weight: 3, arbitrary: listArb(dowItemArb) });

interface Case {
  source: string;
  seed: string;
}

const caseArb = (withSeconds: boolean, star: number): fc.Arbitrary<Case> =>
  fc
    .tuple(
      withSeconds ? secondArb : fc.constant(null),
      minuteArb,
      hourArb,
      domArb(star),
      monthArb(star),
      dowArb(star),
      fc.constantFrom("", "job-1", "x"),
    )
    .map(([s, mi, h, dom, mon, dow, seed]) => ({ source: [s, mi, h, dom, mon, dow].filter((x) => x !== null).join(" "), seed }));

const macroArb: fc.Arbitrary<Case> = pick("@yearly", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@DAILY").map((source) => ({
  source,
  seed: "",
}));

const dstArb: fc.Arbitrary<DstOptions | undefined> = pick<DstOptions | undefined>(
  undefined,
  undefined,
  undefined,
  {},
  { gap: "skip" },
  { gap: "run_at_transition" },
  { overlap: "first" },
  { overlap: "both" },
  { gap: "skip", overlap: "first" },
  { gap: "run_at_transition", overlap: "both" },
);

/** A start instant: mostly within hours of a transition of tz, otherwise anywhere in 2024-2030. */
const startArb = (tz: string, before: number, after: number): fc.Arbitrary<number> => {
  const trs = tz === "America/Sao_Paulo" ? SAO_PAULO_OLD : TRANSITIONS.get(tz)!;
  const anywhere = fc.integer({ min: FROM, max: TO - 2 * DAY });
  if (trs.length === 0) return anywhere;
  const near = fc
    .tuple(fc.constantFrom(...trs), fc.integer({ min: -before, max: after }), fc.constantFrom(0, 0, 0, 1, 999, -1, 59_999, 30_000))
    .map(([t, d, ms]) => Math.floor((t + d) / 60_000) * 60_000 + ms);
  return fc.oneof({ weight: 4, arbitrary: near }, { weight: 1, arbitrary: anywhere });
};

// ------------------------------------------------------------------ checking

function tryParse(c: Case): CronExpression | null {
  try {
    return parseCron(c.source, { hashSeed: c.seed });
  } catch (e) {
    if (e instanceof CronSyntaxError && e.field === "dayOfMonth" && /never/.test(e.message)) return null;
    throw e;
  }
}

const stats = { runs: 0, fires: 0, gap: 0, overlap: 0, empty: 0 };

/** All fires of the real implementation in (from, to], by repeated nextFireTime. */
function implFires(expr: CronExpression, tz: string, from: number, to: number, dst?: DstOptions): FireTime[] {
  const out: FireTime[] = [];
  let after = from;
  for (;;) {
    const f = nextFireTime(expr, tz, after, dst);
    if (f === null || f.at > to) return out;
    assert.ok(f.at > after, "strictly after");
    out.push(f);
    after = f.at;
    if (out.length > 200_000) throw new Error("runaway");
  }
}

function check(c: Case, tz: string, from: number, windowMs: number, dst: DstOptions | undefined): void {
  const expr = tryParse(c);
  fc.pre(expr !== null);
  const to = from + windowMs;
  const want = referenceFires(expr!, tz, from, to, dst, expr!.hasSeconds ? 80 * 60_000 : 3 * HOUR);
  const got = implFires(expr!, tz, from, to, dst);
  assert.deepEqual(got, want, `${JSON.stringify(c)} in ${tz} after ${new Date(from).toISOString()} dst=${JSON.stringify(dst)}`);
  // fireTimes agrees with repeated nextFireTime
  const k = Math.min(got.length, 5);
  if (k > 0) assert.deepEqual(fireTimes(expr!, tz, from, k, dst), got.slice(0, k));
  stats.runs++;
  stats.fires += want.length;
  if (want.length === 0) stats.empty++;
  if (want.some((f) => f.dst === "gap")) stats.gap++;
  if (want.some((f) => f.dst === "overlap")) stats.overlap++;
}

const zoneArb = fc.constantFrom(...ZONES);

test("property: five-field expressions match the reference over 26-hour windows near transitions", () => {
  fc.assert(
    fc.property(
      zoneArb.chain((tz) => fc.tuple(fc.constant(tz), startArb(tz, 20 * HOUR, 2 * HOUR))),
      fc.oneof({ weight: 12, arbitrary: caseArb(false, 20) }, { weight: 1, arbitrary: macroArb }),
      dstArb,
      ([tz, from], c, dst) => check(c, tz, from, 26 * HOUR, dst),
    ),
    { numRuns: 1000 },
  );
});

test("property: six-field (seconds) expressions match the reference over 50-minute windows at transitions", () => {
  fc.assert(
    fc.property(
      zoneArb.chain((tz) => fc.tuple(fc.constant(tz), startArb(tz, 45 * 60_000, 5 * 60_000))),
      caseArb(true, 20),
      dstArb,
      ([tz, from], c, dst) => check(c, tz, from, 50 * 60_000, dst),
    ),
    { numRuns: 120 },
  );
});

test("property: day-level features (L, nL, #, Vixie rule) match the reference over 40-day windows", () => {
  const dayCase = fc
    .tuple(
      pick("0", "30", "45", "0,30"),
      pick("0", "2", "1,3", "12"),
      domArb(3),
      pick("*", "*", "2,3,4", "9-11"),
      dowArb(3),
      fc.constantFrom("", "s"),
    )
    .map(([mi, h, dom, mon, dow, seed]) => ({ source: `${mi} ${h} ${dom} ${mon} ${dow}`, seed }));
  fc.assert(
    fc.property(
      zoneArb.chain((tz) => fc.tuple(fc.constant(tz), startArb(tz, 30 * DAY, 2 * DAY))),
      dayCase,
      dstArb,
      ([tz, from], c, dst) => check(c, tz, from, 40 * DAY, dst),
    ),
    { numRuns: 25 },
  );
});

test("property: exotic zones (Apia 2011 day skip, Troll 2-hour shift, Casablanca, Gaza, Havana, ...) 2010-2030", () => {
  const exotic = [
    "Pacific/Apia",
    "Antarctica/Troll",
    "Africa/Casablanca",
    "Asia/Gaza",
    "America/Havana",
    "America/Santiago",
    "Asia/Tehran",
    "Africa/Cairo",
    "Europe/Dublin",
  ];
  const trs = exotic.flatMap((tz) => referenceTransitions(tz, Date.UTC(2010, 0, 1), TO).map((t) => [tz, t] as const));
  fc.assert(
    fc.property(
      fc.constantFrom(...trs),
      fc.integer({ min: -20 * HOUR, max: 2 * HOUR }),
      fc.oneof(
        caseArb(false, 20),
        pick<Case>({ source: "0 0 * * *", seed: "" }, { source: "30 0 * * *", seed: "" }, { source: "0 12 * * *", seed: "" }),
      ),
      dstArb,
      ([tz, t], d, c, dst) => check(c, tz, t + d, 26 * HOUR, dst),
    ),
    { numRuns: 120 },
  );
});

test("the properties exercised DST (coverage of the runs above)", () => {
  // The three properties above ran first (node:test runs tests in order).
  assert.ok(stats.runs > 500, `runs: ${stats.runs}`);
  assert.ok(stats.gap > 10, `runs with a gap fire: ${stats.gap}`);
  assert.ok(stats.overlap > 40, `runs with an overlap fire: ${stats.overlap}`);
  console.log(`# property coverage: ${JSON.stringify(stats)}`);
});
