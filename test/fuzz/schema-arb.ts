// JSON Schema → fast-check: valid values for a schema (the shapes of
// core/schemas.ts as the OpenAPI document carries them), and mutations of a
// valid value that put one hostile thing at one place (a field replaced,
// removed, duplicated, added, or the whole value wrapped).
//
// A few fields need meaning the schema does not carry (a cron expression, an
// IANA zone, "exactly one of" in a schedule): HINTS gives them, by name.

import fc from "fast-check";
import { Entries, RawToken, toJsonText, type FuzzJson } from "./json.js";
import type { Schema } from "./openapi.js";
import { HOSTILE_STRINGS, hostileJson } from "./values.js";

/** Cron expressions that parse, rare ones included (29 February), which searches must survive. */
export const CRONS: readonly string[] = [
  "0 9 * * *",
  "*/5 * * * *",
  "0 9 * * MON-FRI",
  "30 2 * * 0",
  "0 0 1 1 *",
  "0 0 29 2 *",
  "0 */2 * * *",
  "* * * * *",
];
/** Malformed, or well-formed but never firing (30 February). */
const BAD_CRONS = [
  "0 0 30 2 *",
  "0 0 31 4 *",
  "* * * * * * *",
  "60 * * * *",
  "*/0 * * * *",
  "1-0 * * * *",
  "0 0 ? * *",
  "@reboot",
  "L W #",
  `${Array.from({ length: 60 }, (_, i) => i).join(",")} * * * *`,
];
export const ZONES: readonly string[] = ["UTC", "Europe/London", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Chatham"];
const BAD_ZONES = ["Mars/Olympus", "../../etc/localtime", "UTC+25", "+14:00", "Etc/GMT+99", "utc", "Europe/London\u0000"];

/** The schedule's variants: exactly one of these keys, the rest only beside cron (schemas.ts says why it is not in the schema). */
const SCHEDULE_KINDS = ["runAt", "delaySeconds", "cron"] as const;

const HINTS: Record<string, fc.Arbitrary<FuzzJson>> = {
  cron: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...CRONS) }, { weight: 1, arbitrary: fc.constantFrom(...BAD_CRONS) }),
  tz: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...ZONES) }, { weight: 1, arbitrary: fc.constantFrom(...BAD_ZONES) }),
  // A long poll may rightly outlast the answer deadline: valid waits stay short.
  waitSeconds: fc.constantFrom(0, 0.2, 1),
  // The ETag of a young job.
  "if-match": fc.integer({ min: 1, max: 5 }).map((n) => `"${n}"`),
};

const DATE_MIN = new Date("1969-01-01T00:00:00Z");
const DATE_MAX = new Date("2200-01-01T00:00:00Z");

function types(schema: Schema): string[] {
  const t = schema.type;
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === "string" && x !== "null");
  return typeof t === "string" ? [t] : [];
}

const num = (schema: Schema, key: string, fallback: number) => (typeof schema[key] === "number" ? (schema[key] as number) : fallback);

function stringArb(schema: Schema): fc.Arbitrary<FuzzJson> {
  const min = num(schema, "minLength", 0);
  const max = Math.min(num(schema, "maxLength", 40), 64);
  if (schema.format === "date-time") return fc.date({ min: DATE_MIN, max: DATE_MAX, noInvalidDate: true }).map((d) => d.toISOString());
  if (schema.format === "uri") return fc.constantFrom("https://example.invalid/hook", "http://fuzz.invalid:8080/a?b=c", "HTTPS://EXAMPLE.INVALID/");
  if (typeof schema.pattern === "string") {
    const re = new RegExp(schema.pattern);
    return fc.stringMatching(re, { maxLength: max }).filter((s) => s.length >= min && s.length <= max && re.test(s));
  }
  return fc.string({ unit: "grapheme", minLength: Math.max(min, 1), maxLength: Math.max(max, min, 1) });
}

function numberArb(schema: Schema, integer: boolean): fc.Arbitrary<FuzzJson> {
  const min = num(schema, "minimum", -1e6);
  const max = num(schema, "maximum", 1e6);
  const edges = fc.constantFrom(min, max);
  if (!integer) return fc.oneof(fc.double({ min, max, noNaN: true, noDefaultInfinity: true }), edges);
  // fc.integer is 32-bit; the bounds themselves cover the wider ranges.
  return fc.oneof(fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) }), edges);
}

function objectArb(schema: Schema, depth: number): fc.Arbitrary<FuzzJson> {
  const props = (schema.properties ?? {}) as Record<string, Schema>;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const names = Object.keys(props);
  if ("runAt" in props && "cron" in props) return scheduleArb(props, depth);
  if (names.length === 0) {
    const extra = schema.additionalProperties;
    if (extra === false) return fc.constant({});
    if (typeof extra === "object" && extra !== null) {
      const keys = schema.propertyNames
        ? (stringArb(schema.propertyNames as Schema) as fc.Arbitrary<string>)
        : fc.string({ minLength: 1, maxLength: 10 });
      return fc.dictionary(keys, validValue(extra as Schema, depth + 1), { maxKeys: 3 });
    }
    return fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<FuzzJson>;
  }
  const shape: Record<string, fc.Arbitrary<FuzzJson>> = {};
  for (const name of names) shape[name] = fieldValue(name, props[name]!, depth + 1);
  return fc.record(shape, { requiredKeys: names.filter((n) => required.has(n)) }) as fc.Arbitrary<FuzzJson>;
}

function scheduleArb(props: Record<string, Schema>, depth: number): fc.Arbitrary<FuzzJson> {
  const cronOnly = Object.keys(props).filter((k) => !(SCHEDULE_KINDS as readonly string[]).includes(k));
  const field = (k: string) => fieldValue(k, props[k]!, depth + 1);
  return fc.constantFrom(...SCHEDULE_KINDS).chain((kind) => {
    const shape: Record<string, fc.Arbitrary<FuzzJson>> = { [kind]: field(kind) };
    if (kind === "cron") for (const k of cronOnly) shape[k] = field(k);
    return fc.record(shape, { requiredKeys: [kind] }) as fc.Arbitrary<FuzzJson>;
  });
}

/** A valid value for the field (or query parameter) of that name. */
export function fieldValue(name: string, schema: Schema, depth = 0): fc.Arbitrary<FuzzJson> {
  return HINTS[name] ?? validValue(schema, depth);
}

/** A value the schema accepts (give or take the rules validate.ts checks by hand). */
export function validValue(schema: Schema, depth = 0): fc.Arbitrary<FuzzJson> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as FuzzJson[]));
  if ("const" in schema) return fc.constant(schema.const as FuzzJson);
  if (Array.isArray(schema.oneOf)) return fc.oneof(...(schema.oneOf as Schema[]).map((s) => validValue(s, depth + 1)));
  const [type] = types(schema);
  switch (type) {
    case "string":
      return stringArb(schema);
    case "integer":
    case "number":
      return numberArb(schema, type === "integer");
    case "boolean":
      return fc.boolean();
    case "array": {
      const items = (schema.items ?? {}) as Schema;
      const minLength = num(schema, "minItems", 0);
      return fc.array(validValue(items, depth + 1), { minLength, maxLength: Math.max(minLength, Math.min(num(schema, "maxItems", 3), 3)) });
    }
    case "object":
      return objectArb(schema, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<FuzzJson>;
  }
}

// ---------------------------------------------------------------- mutations

type Path = Array<string | number>;

/** Every place in a value (the root included) a mutation can aim at. */
function places(value: FuzzJson, path: Path = [], out: Path[] = []): Path[] {
  out.push(path);
  if (Array.isArray(value)) value.forEach((v, i) => void places(v, [...path, i], out));
  else if (isPlainObject(value)) for (const [k, v] of Object.entries(value)) places(v, [...path, k], out);
  return out;
}

function isPlainObject(value: FuzzJson): value is { [key: string]: FuzzJson } {
  return value !== null && typeof value === "object" && !Array.isArray(value) && !(value instanceof RawToken) && !(value instanceof Entries);
}

/** A copy of root with the value at path replaced by fn(old). */
function replaceAt(root: FuzzJson, path: Path, fn: (old: FuzzJson) => FuzzJson | undefined): FuzzJson {
  if (path.length === 0) return fn(root) ?? null;
  const [head, ...rest] = path;
  if (Array.isArray(root)) return root.flatMap((v, i) => (i === head ? [replaceAt(v, rest, fn)] : [v]));
  if (!isPlainObject(root)) return root;
  const out: Record<string, FuzzJson> = {};
  for (const [k, v] of Object.entries(root)) {
    if (k !== head) out[k] = v;
    else if (rest.length > 0) out[k] = replaceAt(v, rest, fn);
    else {
      const next = fn(v);
      if (next !== undefined) out[k] = next;
    }
  }
  return out;
}

export type Mutation =
  | { op: "replace"; value: FuzzJson }
  | { op: "remove" }
  | { op: "duplicate-key"; value: FuzzJson }
  | { op: "add-field"; name: string; value: FuzzJson }
  | { op: "wrap-array" }
  | { op: "string-to-number" };

export function mutation(): fc.Arbitrary<Mutation> {
  return fc.oneof(
    { weight: 6, arbitrary: hostileJson().map((value) => ({ op: "replace" as const, value })) },
    { weight: 2, arbitrary: fc.constant({ op: "remove" as const }) },
    { weight: 2, arbitrary: hostileJson().map((value) => ({ op: "duplicate-key" as const, value })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom("unknown", "__proto__", "constructor", "", "version", ...HOSTILE_STRINGS.slice(0, 8)), hostileJson())
        .map(([name, value]) => ({ op: "add-field" as const, name, value })),
    },
    { weight: 1, arbitrary: fc.constant({ op: "wrap-array" as const }) },
    { weight: 1, arbitrary: fc.constant({ op: "string-to-number" as const }) },
  );
}

/** Applies the mutation at the place picked by `at` (an index modulo the number of places). */
export function mutate(value: FuzzJson, at: number, m: Mutation): FuzzJson {
  const all = places(value);
  const path = all[at % all.length]!;
  const parent = path.slice(0, -1);
  const key = path.at(-1);
  switch (m.op) {
    case "replace":
      return replaceAt(value, path, () => m.value);
    case "remove":
      return path.length === 0 ? null : replaceAt(value, path, () => undefined);
    case "wrap-array":
      return replaceAt(value, path, (old) => [old]);
    case "string-to-number":
      return replaceAt(value, path, (old) =>
        typeof old === "string" ? new RawToken(/^-?\d/.test(old) ? old : "1e309") : new RawToken(JSON.stringify(toJsonText(old))),
      );
    case "duplicate-key":
    case "add-field":
      // Aim at the object holding the place (or the place itself when it is the root).
      return replaceAt(value, typeof key === "string" ? parent : path, (obj) => {
        if (!isPlainObject(obj)) return obj;
        const entries = Object.entries(obj);
        if (m.op === "add-field") return new Entries([...entries, [m.name, m.value]]);
        const name = typeof key === "string" ? key : (entries[0]?.[0] ?? "dup");
        return new Entries([...entries, [name, m.value]]);
      });
  }
}
