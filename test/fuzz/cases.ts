// One fuzzed HTTP request per route of the OpenAPI document: every path
// parameter, query parameter, header and body field is either valid, hostile,
// repeated or missing. Ids of real resources are symbolic (a Ref, resolved
// when the case is sent) so a seed replays the same cases against a new server.

import fc from "fast-check";
import { toJsonText, type FuzzJson } from "./json.js";
import type { Param, Route } from "./openapi.js";
import { fieldValue, mutate, mutation, validValue } from "./schema-arb.js";
import { KEYS } from "./server.js";
import {
  CONTENT_TYPES,
  HOSTILE_HEADER_VALUES,
  HOSTILE_QUERY_TEXT,
  HOSTILE_STRINGS,
  NON_FINITE_QUERY_NUMBERS,
  ODD_QUERY_NUMBERS,
  authorizationHeader,
  hostileJson,
} from "./values.js";

/** The index-th known resource of a kind (its path parameter name: jobId, executionId, pool). */
export interface Ref {
  ref: string;
  index: number;
}

export interface HttpCase {
  kind: "http";
  /** "GET /v1/jobs/{jobId}": groups failures. */
  route: string;
  method: string;
  path: Array<string | Ref>;
  /** Already encoded, without the "?". */
  query: string;
  headers: Array<[string, string]>;
  body?: { text: string; encoding: "utf8" | "latin1" };
}

/** Known resource ids by path parameter name, filled in at setup; a Ref picks one by index. */
export type Refs = Record<string, string[]>;

export function resolvePath(c: HttpCase, refs: Refs): string {
  return c.path
    .map((part) => {
      if (typeof part === "string") return part;
      const ids = refs[part.ref] ?? [];
      return ids.length > 0 ? pct(ids[part.index % ids.length]!) : "none";
    })
    .join("");
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/** Percent-encodes the UTF-8 bytes of s; unlike encodeURIComponent it takes lone surrogates (as U+FFFD). */
export function pct(s: string): string {
  let out = "";
  for (const byte of Buffer.from(s, "utf8")) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.!~*'()]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Node's client refuses control characters and code points above 0xff in headers; raw cases send those. */
const headerSafe = (s: string) => s.replace(/[^\t\x20-\x7e\x80-\xff]/g, "?");

function serialize(value: FuzzJson): string {
  return typeof value === "string" ? value : toJsonText(value);
}

/** A parameter's two faces: calm (valid, a known id, or absent when optional) and hostile. */
interface Slot<T> {
  calm: fc.Arbitrary<T>;
  hostile: fc.Arbitrary<T>;
}

function pathSlot(p: Param, refNames: readonly string[]): Slot<string | Ref> {
  const valid = fieldValue(p.name, p.schema).map((v) => pct(serialize(v)));
  const calm = refNames.includes(p.name)
    ? fc.oneof({ weight: 3, arbitrary: fc.nat().map((index): Ref => ({ ref: p.name, index })) }, { weight: 1, arbitrary: valid })
    : valid;
  const hostile = fc.oneof(
    fc.constantFrom(...HOSTILE_STRINGS).map(pct),
    fc.constantFrom("%zz", "%", "..", "%2F", "a%2Fb", "%00", "x".repeat(600), `job_${"0".repeat(26)}`),
  );
  return { calm, hostile };
}

function querySlot(p: Param): Slot<string> {
  const name = pct(p.name);
  const valid = fieldValue(p.name, p.schema).map((v) => pct(serialize(v)));
  // Numbers in query strings are where parsers slip (Infinity, 1e309): a numeric parameter mostly gets those.
  const numeric = ["integer", "number"].includes(String(p.schema.type));
  const value = fc.oneof(
    { weight: numeric ? 4 : 1, arbitrary: fc.constantFrom(...NON_FINITE_QUERY_NUMBERS) },
    { weight: numeric ? 2 : 1, arbitrary: fc.constantFrom(...ODD_QUERY_NUMBERS) },
    { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_QUERY_TEXT) },
    { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_STRINGS).map(pct) },
  );
  const anyValue = fc.oneof(valid, value);
  const calm = p.required
    ? valid.map((v) => `${name}=${v}`)
    : fc.oneof(
        fc.constant(""),
        valid.map((v) => `${name}=${v}`),
      );
  const hostile = fc.oneof(
    { weight: 6, arbitrary: value.map((v) => `${name}=${v}`) },
    { weight: p.required ? 1 : 0, arbitrary: fc.constant("") },
    // Arrays of one and of two via repeated parameters, qs-style brackets, a name without a value.
    { weight: 1, arbitrary: anyValue.map((v) => `${name}=${v}&${name}=${v}`) },
    { weight: 1, arbitrary: fc.tuple(valid, anyValue).map(([a, b]) => `${name}=${a}&${name}=${b}`) },
    { weight: 1, arbitrary: anyValue.map((v) => `${name}[]=${v}`) },
    { weight: 1, arbitrary: fc.constant(name) },
  );
  return { calm, hostile };
}

/**
 * Values for all slots: mostly one hostile slot among calm ones, so the
 * hostile value is the one the server judges (several at once mostly stop at
 * the first); sometimes all calm, sometimes each slot at random.
 */
function slotsArb<T>(slots: ReadonlyArray<Slot<T>>): fc.Arbitrary<T[]> {
  if (slots.length === 0) return fc.constant([]);
  const oneHostile = fc.integer({ min: 0, max: slots.length - 1 }).chain((i) => fc.tuple(...slots.map((s, j) => (i === j ? s.hostile : s.calm))));
  return fc.oneof(
    { weight: 1, arbitrary: fc.tuple(...slots.map((s) => s.calm)) },
    { weight: 6, arbitrary: oneHostile },
    { weight: 1, arbitrary: fc.tuple(...slots.map((s) => fc.oneof(s.calm, s.hostile))) },
  );
}

function headerParam(p: Param): fc.Arbitrary<Array<[string, string]>> {
  const valid = fieldValue(p.name, p.schema).map(serialize);
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant<Array<[string, string]>>([]) },
    { weight: 3, arbitrary: valid.map((v): Array<[string, string]> => [[p.name, headerSafe(v)]]) },
    { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_HEADER_VALUES).map((v): Array<[string, string]> => [[p.name, v]]) },
  );
}

function bodyOf(route: Route): fc.Arbitrary<HttpCase["body"] | undefined> {
  const json = (value: FuzzJson) => ({ text: toJsonText(value), encoding: "utf8" as const });
  if (!route.body) return fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: hostileJson().map(json) });
  const valid = validValue(route.body);
  return fc.oneof(
    { weight: 4, arbitrary: valid.map(json) },
    { weight: 6, arbitrary: fc.tuple(valid, fc.nat(), mutation()).map(([v, at, m]) => json(mutate(v, at, m))) },
    { weight: 1, arbitrary: hostileJson().map(json) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom("", " ", "{", '{"a":1}x', "[1,]", "{'a':1}", "\u0000", "null", "NaN")
        .map((text) => ({ text, encoding: "utf8" as const })),
    },
    // Invalid UTF-8 inside a JSON string: overlong, lone continuation, surrogate half.
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('{"name":"\xc0\xaf"}', '{"name":"\x80"}', '{"name":"\xed\xa0\x80"}')
        .map((text) => ({ text, encoding: "latin1" as const })),
    },
  );
}

/** "/v1/jobs/{jobId}:pause" → ["/v1/jobs/", "{jobId}", ":pause"]. */
const pathParts = (route: Route) => route.path.split(/(\{[^}]+\})/).filter((s) => s !== "");

/** The path and the query, their parameters filled by slotsArb. */
function urlArb(route: Route, refNames: readonly string[]): fc.Arbitrary<{ path: Array<string | Ref>; query: string }> {
  const parts = pathParts(route);
  const params = parts.map((part) => route.pathParams.find((p) => `{${p.name}}` === part));
  const slots: Array<Slot<string | Ref>> = [
    ...params.filter((p): p is Param => p !== undefined).map((p) => pathSlot(p, refNames)),
    ...(route.query.map(querySlot) as Array<Slot<string | Ref>>),
  ];
  return slotsArb(slots).map((values) => {
    let next = 0;
    const path = parts.map((part, i) => (params[i] ? values[next++]! : part));
    const query = (values.slice(next) as string[]).filter((q) => q !== "").join("&");
    return { path, query };
  });
}

export function httpCase(routes: readonly Route[], refNames: readonly string[]): fc.Arbitrary<HttpCase> {
  // Routes with more to vary are drawn more often, so each field gets its share.
  const weighted = routes.map((route) => ({
    weight: 1 + route.pathParams.length + route.query.length + route.headers.length + (route.body ? 3 : 0),
    arbitrary: fc.constant(route),
  }));
  return fc.oneof(...weighted).chain((route) => {
    const contentType = fc.oneof(
      { weight: 8, arbitrary: fc.constant<string | undefined>("application/json") },
      { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
    );
    const method = fc.oneof({ weight: 20, arbitrary: fc.constant(route.method) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) });
    const unknownQuery = fc.oneof(
      { weight: 9, arbitrary: fc.constant("") },
      { weight: 1, arbitrary: fc.constantFrom("unknown=1", "__proto__[x]=1", "limit", "&&", "a=%zz") },
    );
    return fc
      .record({
        method,
        url: urlArb(route, refNames),
        unknownQuery,
        headers: fc.tuple(...route.headers.map(headerParam)),
        authorization: authorizationHeader(KEYS),
        contentType,
        body: bodyOf(route),
      })
      .map((r): HttpCase => {
        const headers: Array<[string, string]> = r.headers.flat();
        if (r.authorization !== undefined) headers.push(["authorization", r.authorization]);
        if (r.body !== undefined && r.contentType !== undefined) headers.push(["content-type", r.contentType]);
        const query = [r.url.query, r.unknownQuery].filter((q) => q !== "").join("&");
        return {
          kind: "http",
          route: `${route.method} ${route.path}`,
          method: r.method,
          path: r.url.path,
          query,
          headers,
          ...(r.body !== undefined ? { body: r.body } : {}),
        };
      });
  });
}
