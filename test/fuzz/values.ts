// Hostile values: the pools every field, query parameter and header draws
// from when the fuzz is not sending a valid value.

import fc from "fast-check";
import { Entries, RawToken, type FuzzJson } from "./json.js";

/** Strings that break naive handling: odd Unicode, NUL, injection-shaped text, numbers and dates in disguise. */
export const HOSTILE_STRINGS: readonly string[] = [
  "",
  " ",
  "\t\n",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff\ud800",
  "\u202eevil\u202c",
  "\u05e9\u05dc\u05d5\u05dd",
  "\ufeff",
  "\uffff",
  "👩‍👩‍👧‍👦",
  "e\u0301\u0301\u0301\u0301",
  "Ω≈ç√∫",
  "０１２",
  "٣",
  "../../etc/passwd",
  "%00",
  "%zz",
  "' OR 1=1 --",
  "<script>alert(1)</script>",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a hostile literal on purpose (log4shell), not a template
  "${jndi:ldap://x}",
  "__proto__",
  "constructor",
  "null",
  "true",
  "1",
  "-1",
  "1e309",
  "NaN",
  "Infinity",
  "0x10",
  "2026-13-45T25:61:61Z",
  "0000-01-01T00:00:00Z",
  "9999-12-31T23:59:59.999Z",
  "+275760-09-13T00:00:00.000Z",
  "1970-01-01T00:00:00Z",
  "2026-10-16T09:00:00+14:00",
  "2026-10-16",
  "x".repeat(201),
  "y".repeat(5000),
];

/** Number tokens as JSON text: overflow, precision loss, negative zero, and non-JSON spellings. */
export const HOSTILE_NUMBER_TOKENS: readonly string[] = [
  "0",
  "-0",
  "-1",
  "0.5",
  "1e309",
  "-1e309",
  "1E400",
  "1e-400",
  "9007199254740993",
  "123456789012345678901234567890",
  "2147483648",
  "-2147483649",
  "1.7976931348623157e308",
  "5e-324",
];

/** Query-string numbers that are not finite (or overflow to Infinity): where number parsing slips most. */
export const NON_FINITE_QUERY_NUMBERS: readonly string[] = ["Infinity", "-Infinity", "NaN", "1e309", "-1e309"];

/** Other query-string numbers: spellings besides decimal, fractions, signs, beyond 2^53. */
export const ODD_QUERY_NUMBERS: readonly string[] = ["1e3", "0x10", "0b1", "1.5", "-1", "0", "+1", "9007199254740993", "99999999999999999999999"];

/** Other query-string values (already URL-encoded): empties, bad encodings, odd Unicode. */
export const HOSTILE_QUERY_TEXT: readonly string[] = [
  "",
  "%20",
  "%00",
  "%zz",
  "%",
  "%ff%fe",
  "%ED%A0%80",
  "%E2%80%AE",
  "%EF%BC%91",
  "true",
  "null",
  "[]",
  "{}",
  "a".repeat(2000),
];

/** Nesting far past the server's depth limit, written as text (a tree this deep would overflow our own stack). */
const deep = (n: number, open: string, close: string) => new RawToken(open.repeat(n) + close.repeat(n));

/** Any hostile JSON value: wrong types, overflowing numbers, odd strings, deep or huge containers. */
export function hostileJson(): fc.Arbitrary<FuzzJson> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
    { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_NUMBER_TOKENS).map((t) => new RawToken(t)) },
    { weight: 2, arbitrary: fc.constantFrom<FuzzJson>(null, true, false, [], {}, [null], { "": null }, -1, 0, 1.5, 2 ** 53) },
    { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
    { weight: 1, arbitrary: fc.constantFrom(63, 64, 65, 10_000).map((n) => deep(n, "[", "]")) },
    { weight: 1, arbitrary: fc.constantFrom(63, 65).map((n) => new RawToken(`${'{"a":'.repeat(n)}1${"}".repeat(n)}`)) },
    { weight: 1, arbitrary: fc.constantFrom(1001, 20_000).map((n): FuzzJson => Array.from({ length: n }, () => 0)) },
    { weight: 1, arbitrary: fc.constantFrom(1000, 20_000).map((n) => new Entries(Array.from({ length: n }, (_, i) => [`k${i}`, i] as const))) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<FuzzJson> },
  );
}

/** Authorization headers: mostly the fuzzed tenant's admin key, else other roles and broken credentials. */
export function authorizationHeader(keys: { admin: string; client: string; worker: string }): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 40, arbitrary: fc.constant(`Bearer ${keys.admin}`) },
    {
      weight: 6,
      arbitrary: fc.constantFrom<string | undefined>(
        `Bearer ${keys.client}`,
        `Bearer ${keys.worker}`,
        `bearer ${keys.admin}`,
        `Bearer  ${keys.admin} `,
        `Bearer ${keys.admin} extra`,
        undefined,
        "",
        "Bearer",
        "Bearer ",
        "Basic Zm9vOmJhcg==",
        "Bearer nope",
        `Bearer ${"k".repeat(8000)}`,
        "Bearer \u00ff\u00fe",
        `Token ${keys.admin}`,
      ),
    },
  );
}

/** Content types: JSON ones the server accepts, and ones it must refuse with an envelope. */
export const CONTENT_TYPES: readonly (string | undefined)[] = [
  undefined,
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json; charset=utf-16",
  "application/json, text/plain",
  "application/vnd.api+json",
  "APPLICATION/JSON",
  "application/jsonx",
  "",
  ";",
  "application/json; charset=\u00ff",
];

/** Values for If-Match, Idempotency-Key and other headers (node's client refuses control characters; raw cases send those). */
export const HOSTILE_HEADER_VALUES: readonly string[] = [
  "",
  " ",
  "*",
  "1",
  '"1"',
  'W/"1"',
  'W/"',
  '"',
  "W/",
  "0",
  "-1",
  "1e309",
  "Infinity",
  "NaN",
  "99999999999999999999",
  "9007199254740993",
  '"1", "2"',
  "1, 2",
  "\u00ff\u00e9",
  "k".repeat(256),
  "k".repeat(9000),
];
