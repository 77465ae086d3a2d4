// Shape validation of API requests against core/schemas.ts, shared by the HTTP
// server and the embedded client (so it must not import fastify). Any failure
// becomes DuetimeError("INVALID_ARGUMENT", "<dotted.field>: <human message>",
// { field }) through one mapping, ajvErrorToDuetime(), so every layer words
// the same mistake the same way.
//
// Options follow the brief: the first error only (allErrors false), nothing
// removed or defaulted (the engine fills defaults, so GET shows effective
// values), strict schemas, and no coercion by ajv: numbers must be finite
// (strictNumbers), and querystrings and headers, which arrive as text, turn
// into numbers by one rule of our own (numbersFromText below).

import AjvModule, { type ErrorObject, type Options, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import type { BatchCreateItem, BatchCreateResult } from "@duetime/sdk/contract";
import { DuetimeError, invalidArgument, notFound } from "./errors.js";
import { reservedKeyProblem } from "./payload-refs.js";
import {
  AMQP_EXCHANGE_PATTERN,
  AMQP_ROUTING_KEY_PATTERN,
  HEADER_NAME_PATTERN,
  HEADER_VALUE_PATTERN,
  NATS_SUBJECT_PATTERN,
  HTTP_URL_PATTERN,
  ID_PATTERN,
  YEAR_PATTERN,
  POOL_PATTERN,
  REQUEST_SCHEMAS,
  type JsonSchema,
  type SchemaId,
} from "./schemas.js";

// ajv and ajv-formats are CommonJS with a `default` property; under NodeNext
// the default import is module.exports, whose `.default` is the real export.
const Ajv = AjvModule.default;
const addFormats = addFormatsModule.default;

export type RequestPart = "body" | "query" | "params" | "headers";

export interface ValidateOptions {
  /** Dotted prefix for field names, e.g. "jobs.3" when checking one element of a batch. */
  path?: string;
}

function makeAjv(): InstanceType<typeof Ajv> {
  const options: Options = {
    allErrors: false,
    removeAdditional: false,
    useDefaults: false,
    // ajv's coercion takes "Infinity", "1e309" and "0x10" for numbers and
    // checks bounds before it coerces: never use it.
    coerceTypes: false,
    strictNumbers: true, // NaN and ±Infinity are not numbers
    strict: true,
    allowUnionTypes: true,
    discriminator: true,
    verbose: true, // errors carry data and parentSchema, for readable messages
  };
  const ajv = new Ajv(options);
  addFormats(ajv, { mode: "full", formats: ["date-time", "uri"], keywords: false });
  return ajv;
}

const ajv = makeAjv();
const compiled = new WeakMap<object, ValidateFunction>();

function compile(schema: JsonSchema): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) compiled.set(schema, (fn = ajv.compile(schema as object)));
  return fn;
}

/**
 * Id path parameters: the contract answers a malformed id like an unknown one
 * (404 NOT_FOUND), so the HTTP server and the embedded client agree.
 */
const ID_PARAMS: Partial<Record<SchemaId, { name: string; what: string }>> = {
  jobIdParams: { name: "jobId", what: "job" },
  executionIdParams: { name: "executionId", what: "execution" },
  keyIdParams: { name: "keyId", what: "API key" },
  blobIdParams: { name: "blobId", what: "blob" },
};

/** Cross-field rules ajv cannot word well; run after the schema passed. */
const REFINEMENTS: Partial<Record<SchemaId, (value: unknown, path: string) => void>> = {
  createJobBody: checkJobSpec,
  batchItem: checkJobSpec,
  updateJobBody: checkJobPatch,
  updateJobHeaders: (value) => parseIfMatch((value as Record<string, unknown>)["if-match"]),
  backfillBody: checkWindow,
  occurrencesQuery: checkWindow,
};

/**
 * Validates value against a schema of core/schemas.ts (by id) or any schema
 * object, and returns it (for "query" and "headers": a copy with numbers read
 * from text). Throws DuetimeError INVALID_ARGUMENT naming the dotted field,
 * except for a malformed jobId or executionId parameter, which is NOT_FOUND.
 */
export function validate<T = unknown>(schema: SchemaId | JsonSchema, value: unknown, part: RequestPart = "body", options: ValidateOptions = {}): T {
  const schemaObject: JsonSchema = typeof schema === "string" ? REQUEST_SCHEMAS[schema] : schema;
  if (typeof schema === "string" && schemaObject === undefined) throw new Error(`unknown schema id ${schema}`);
  const path = options.path ?? "";
  if (value === undefined && part === "body") {
    throw invalidArgument(path || "body", "is required (send a JSON body)");
  }
  const textual = part === "query" || part === "headers";
  const data = textual && isPlainRecord(value) ? numbersFromText(schemaObject, value) : value;
  const fn = compile(schemaObject);
  if (!fn(data)) {
    const idParam = typeof schema === "string" && part === "params" ? ID_PARAMS[schema] : undefined;
    if (idParam) {
      const id = isPlainRecord(data) ? data[idParam.name] : undefined;
      throw notFound(idParam.what, typeof id === "string" ? id : String(id));
    }
    const first = fn.errors?.[0];
    throw first ? ajvErrorToDuetime(first, part, path) : invalidArgument(path || part, "is invalid");
  }
  if (typeof schema === "string") {
    // The batch envelope leaves its jobs to be checked one by one (each failing alone).
    if ((part === "body" || part === "query") && schema !== "batchCreateEnvelope") checkStorable(data, path, part);
    REFINEMENTS[schema]?.(data, path);
  }
  return data as T;
}

// ---------------------------------------------------------------- numbers

const DECIMAL_INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
const DECIMAL_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/;

/**
 * The one rule for numbers written as text (querystrings, headers): plain
 * decimal digits, an optional "-" and, where the schema allows non-integers,
 * a fraction (`50`, `-3`, `2.5`), whose value is finite. Nothing else becomes
 * a number: not `Infinity`, `NaN`, `1e3`, `0x10`, `0o7`, `0b1`, `010`, `+5`,
 * ` 5`, `""`, nor a parameter given twice (an array). Those stay as they are,
 * so the schema refuses them by type; ajv then checks a number's bounds.
 * Returns a copy: the caller's object is never changed.
 */
function numbersFromText(schema: JsonSchema, value: Record<string, unknown>): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const out = { ...value };
  for (const [name, property] of Object.entries(properties)) {
    const text = out[name];
    const pattern = property.type === "integer" ? DECIMAL_INTEGER : property.type === "number" ? DECIMAL_NUMBER : undefined;
    if (typeof text !== "string" || !pattern?.test(text)) continue;
    const number = Number(text);
    if (Number.isFinite(number)) out[name] = number;
  }
  return out;
}

/**
 * What every store can keep, checked once for every body and query string,
 * free-form values (payload, result) included; typed fields are refused by
 * ajv before this:
 * - finite numbers only: JSON has no Infinity, but JSON.parse reads 1e400 as
 *   one (and JSON.stringify would store it as null);
 * - strings and keys without U+0000 and without unpaired surrogates ("\ud800"
 *   is valid JSON but not Unicode): PostgreSQL's text and jsonb refuse both.
 */
function checkStorable(value: unknown, path: string, part: RequestPart): void {
  const field = path || part;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw invalidArgument(field, `must be a finite number, got ${value}`);
    return;
  }
  if (typeof value === "string") {
    checkText(value, field, "text");
    return;
  }
  if (typeof value !== "object" || value === null) return;
  for (const [key, item] of Object.entries(value)) {
    checkText(key, field, "a key");
    checkStorable(item, joinPath(path, key), part);
  }
}

/** A surrogate half without its other half. */
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why PostgreSQL's text and jsonb would refuse this text, or null: U+0000, or a surrogate half without its other half. */
export function unstorableText(text: string): "nul" | "unpaired_surrogate" | null {
  if (text.includes("\u0000")) return "nul";
  return UNPAIRED_SURROGATE.test(text) ? "unpaired_surrogate" : null;
}

function checkText(text: string, field: string, what: string): void {
  const problem = unstorableText(text);
  if (problem === "nul") throw invalidArgument(field, `${what} must not contain U+0000 (NUL)`);
  if (problem) throw invalidArgument(field, `${what} must be valid Unicode (it has an unpaired surrogate such as \\ud800)`);
}

// ---------------------------------------------------------------- error mapping

/** Turns one ajv error into the API's INVALID_ARGUMENT, with a dotted field path. */
export function ajvErrorToDuetime(error: ErrorObject, part: RequestPart, prefix = ""): DuetimeError {
  const base = joinPath(prefix, pointerToDotted(error.instancePath));
  const field = (name: string) => (part === "headers" ? canonicalHeaderName(name) : name);
  const p = error.params as Record<string, unknown>;
  const parent = (error.parentSchema ?? {}) as Record<string, unknown>;
  const named = (name: unknown) => joinPath(base, String(name));
  const at = (path: string, message: string) => invalidArgument(field(path) || prefix || part, message);

  // A propertyNames failure reports the offending key on the error itself.
  const propertyName = (error as ErrorObject & { propertyName?: string }).propertyName;
  if (propertyName !== undefined) {
    return at(named(propertyName), `is not a valid name (${describeKeyword(error, parent)})`);
  }

  switch (error.keyword) {
    case "type":
      return at(base, part === "query" || part === "headers" ? describeTextType(error) : describeKeyword(error, parent));
    case "required":
      return at(named(p.missingProperty), "is required");
    case "additionalProperties":
      return at(named(p.additionalProperty), "unknown field");
    case "propertyNames":
      return at(named(p.propertyName), "is not a valid name");
    case "discriminator": {
      const tagField = named(p.tag);
      if (p.tagValue === undefined) return at(tagField, "is required");
      if (typeof p.tagValue !== "string") return at(tagField, `must be a string, got ${describeValue(p.tagValue)}`);
      const allowed = discriminatorValues(parent, String(p.tag));
      return at(tagField, `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`);
    }
    default:
      return at(base, describeKeyword(error, parent));
  }
}

const PATTERN_MESSAGES: Record<string, string> = {
  [ID_PATTERN]: "must contain only letters, digits, '_' and '-'",
  [POOL_PATTERN]: "must contain only letters, digits, '.', '_', '~' and '-'",
  [HEADER_NAME_PATTERN]: "must be a valid HTTP header name",
  [HEADER_VALUE_PATTERN]: "must not contain control characters",
  [HTTP_URL_PATTERN]: "must be an http or https URL",
  [YEAR_PATTERN]: "must be a time in the years 1900 to 9999",
  [NATS_SUBJECT_PATTERN]: "must be a NATS subject: tokens separated by '.', none empty, without spaces or the wildcards '*' and '>'",
  [AMQP_EXCHANGE_PATTERN]: "must contain only letters, digits, '.', '_', ':' and '-'",
  [AMQP_ROUTING_KEY_PATTERN]: "must not contain control characters",
};

const FORMAT_MESSAGES: Record<string, string> = {
  "date-time": "must be an RFC 3339 date-time with an offset, like 2026-10-16T09:00:00Z",
  uri: "must be an absolute URL",
};

function describeKeyword(error: ErrorObject, parent: Record<string, unknown>): string {
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "type": {
      const types = String(p.type).split(",");
      return `must be ${types.map(withArticle).join(" or ")}, got ${describeValue(error.data)}`;
    }
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum": {
      const min = parent.minimum;
      const max = parent.maximum;
      if (typeof min === "number" && typeof max === "number") return `must be between ${min} and ${max}`;
      const bound = String(p.limit);
      if (error.keyword === "minimum") return `must be at least ${bound}`;
      if (error.keyword === "maximum") return `must be at most ${bound}`;
      return `must be ${p.comparison} ${bound}`;
    }
    case "minLength":
      return p.limit === 1 ? "must not be empty" : `must be at least ${p.limit} characters long`;
    case "maxLength":
      return `must be at most ${p.limit} characters long`;
    case "minItems":
      return `must have at least ${p.limit} item${p.limit === 1 ? "" : "s"}`;
    case "maxItems":
      return `must have at most ${p.limit} items`;
    case "minProperties":
      return `must have at least ${p.limit} field${p.limit === 1 ? "" : "s"}`;
    case "maxProperties":
      return `must have at most ${p.limit} fields`;
    case "enum":
      return `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    case "const":
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case "pattern":
      return PATTERN_MESSAGES[String(p.pattern)] ?? `must match the pattern ${String(p.pattern)}`;
    case "format":
      return FORMAT_MESSAGES[String(p.format)] ?? `must be a valid ${String(p.format)}`;
    case "oneOf":
    case "anyOf":
      return "does not match any allowed shape";
    default:
      return error.message ?? "is invalid";
  }
}

/** A type error of a querystring or header value, which is text (see numbersFromText). */
function describeTextType(error: ErrorObject): string {
  const type = String((error.params as { type: unknown }).type);
  const data = error.data;
  if (Array.isArray(data)) return `must be given once, got ${data.length} values`;
  if (typeof data === "string" && (type === "integer" || type === "number")) {
    const shown = data.length > 40 ? `${data.slice(0, 40)}...` : data;
    return `must be ${withArticle(type)} in plain decimal digits, like 50; got ${JSON.stringify(shown)}`;
  }
  return `must be ${withArticle(type)}, got ${describeValue(data)}`;
}

function discriminatorValues(parent: Record<string, unknown>, tag: string): string[] {
  const branches = Array.isArray(parent.oneOf) ? (parent.oneOf as Record<string, unknown>[]) : [];
  const values: string[] = [];
  for (const branch of branches) {
    const prop = (branch.properties as Record<string, Record<string, unknown>> | undefined)?.[tag];
    if (prop && typeof prop.const === "string") values.push(prop.const);
    if (prop && Array.isArray(prop.enum)) values.push(...(prop.enum as string[]));
  }
  return values;
}

function withArticle(type: string): string {
  if (type === "null") return "null";
  return `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}

function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return "an integer";
  return withArticle(typeof value);
}

/** "/jobs/3/target/url" → "jobs.3.target.url" (JSON Pointer escapes undone). */
export function pointerToDotted(pointer: string): string {
  if (pointer === "") return "";
  return pointer
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
    .join(".");
}

/** "idempotency-key" → "Idempotency-Key": headers are named as people write them. */
function canonicalHeaderName(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

function joinPath(a: string, b: string): string {
  if (!a) return b;
  if (!b) return a;
  return `${a}.${b}`;
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------- refinements

const SCHEDULE_KINDS = ["runAt", "delaySeconds", "cron"] as const;
const CRON_ONLY = ["tz", "jitterSeconds", "misfire", "misfireThresholdSeconds", "overlap", "startAt", "endAt", "dst"] as const;

/** The rules of a job spec that are not plain shape: one schedule variant, backoff order. */
function checkJobSpec(value: unknown, path: string): void {
  const spec = value as { schedule: Record<string, unknown>; retry?: Record<string, unknown>; payload?: unknown };
  checkSchedule(spec.schedule, joinPath(path, "schedule"));
  checkRetry(spec.retry, joinPath(path, "retry"));
  checkPayloadKeys(spec.payload, joinPath(path, "payload"));
}

/** A payload may not look like a reference to a stored one (core/payload-refs.ts). */
function checkPayloadKeys(payload: unknown, payloadPath: string): void {
  const problem = reservedKeyProblem(payload);
  if (problem) throw invalidArgument(payloadPath, problem);
}

/** Exactly one of runAt | delaySeconds | cron, and the cron-only fields only beside cron. */
function checkSchedule(schedule: Record<string, unknown>, schedulePath: string): void {
  const kinds = SCHEDULE_KINDS.filter((k) => schedule[k] !== undefined);
  const [first, second] = kinds;
  if (first === undefined) throw invalidArgument(schedulePath, "must have one of runAt, delaySeconds or cron");
  if (second !== undefined) {
    throw invalidArgument(joinPath(schedulePath, second), `cannot be combined with schedule.${first}; use exactly one`);
  }
  if (first !== "cron") {
    for (const key of CRON_ONLY) {
      if (schedule[key] !== undefined) {
        throw invalidArgument(joinPath(schedulePath, key), "is only allowed with schedule.cron");
      }
    }
  }
}

function checkRetry(retry: Record<string, unknown> | undefined, retryPath: string): void {
  const backoff = retry?.backoffSeconds;
  const maxBackoff = retry?.maxBackoffSeconds;
  if (typeof backoff === "number" && typeof maxBackoff === "number" && maxBackoff < backoff) {
    throw invalidArgument(joinPath(retryPath, "maxBackoffSeconds"), "must be at least retry.backoffSeconds");
  }
}

/** The fields a PATCH may change (every field of updateJobBody but `version`). */
const PATCH_FIELDS = ["name", "target", "payload", "schedule", "retry", "timeoutSeconds", "priority", "mode"] as const;

/**
 * A PATCH changes at least one field; a schedule it gives is a whole schedule
 * (exactly one variant, as on create). retry is checked on its own: when only
 * one of backoffSeconds and maxBackoffSeconds is given, the engine checks the
 * merged policy.
 */
function checkJobPatch(value: unknown, path: string): void {
  const patch = value as { schedule?: Record<string, unknown>; retry?: Record<string, unknown> } & Record<string, unknown>;
  if (!PATCH_FIELDS.some((f) => patch[f] !== undefined)) {
    throw invalidArgument(path || "body", `must change at least one of ${PATCH_FIELDS.join(", ")} (version alone changes nothing)`);
  }
  if (patch.schedule !== undefined) checkSchedule(patch.schedule, joinPath(path, "schedule"));
  checkRetry(patch.retry, joinPath(path, "retry"));
  checkPayloadKeys(patch.payload, joinPath(path, "payload"));
}

/** A time window: from < to when both are real instants (the formats are checked by the schema). */
function checkWindow(value: unknown, path: string): void {
  const window = value as { from: string; to: string };
  const from = Date.parse(window.from);
  const to = Date.parse(window.to);
  if (!Number.isNaN(from) && !Number.isNaN(to) && from >= to) {
    throw invalidArgument(joinPath(path, "to"), `must be after from (${window.from})`);
  }
}

// ---------------------------------------------------------------- versions (PATCH)

const IF_MATCH = /^(?:W\/)?"?([0-9]{1,16})"?$/;

/**
 * The version an If-Match header names: `7`, `"7"` or `W/"7"` (the ETag GET
 * answers) → 7; `*` (any current version) → undefined. Anything else, a list
 * of several versions included, is 400 INVALID_ARGUMENT on field If-Match.
 * The embedded client passes its `ifMatch` number here too, so both layers
 * word the same mistake the same way.
 */
export function parseIfMatch(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "number") {
    if (Number.isSafeInteger(value) && value >= 1) return value;
    throw invalidArgument("If-Match", `must be a positive integer version, got ${value}`);
  }
  if (typeof value !== "string") throw invalidArgument("If-Match", `must be a version such as "7", got ${describeValue(value)}`);
  const text = value.trim();
  if (text === "*") return undefined;
  const match = IF_MATCH.exec(text);
  const quotes = (text.match(/"/g) ?? []).length;
  const version = match ? Number(match[1]) : NaN;
  if (!match || (quotes !== 0 && quotes !== 2) || (text.startsWith("W/") && quotes !== 2) || !Number.isSafeInteger(version) || version < 1) {
    throw invalidArgument(
      "If-Match",
      `must be one job version such as "7" (the ETag of GET /v1/jobs/{jobId}), got ${JSON.stringify(value.slice(0, 40))}`,
    );
  }
  return version;
}

/**
 * The expected version of a PATCH: from If-Match, or the body's `version`;
 * both given and different is 400 (naming If-Match). undefined: no check.
 */
export function expectedVersion(ifMatch: unknown, bodyVersion: number | undefined): number | undefined {
  const fromHeader = parseIfMatch(ifMatch);
  if (fromHeader !== undefined && bodyVersion !== undefined && fromHeader !== bodyVersion) {
    throw invalidArgument("If-Match", `names version ${fromHeader} but the body's version is ${bodyVersion}; send one, or the same`);
  }
  return fromHeader ?? bodyVersion;
}

// ---------------------------------------------------------------- batches

export interface CheckedBatch {
  /** The jobs that passed, in request order, to hand to createJobs. */
  valid: BatchCreateItem[];
  /** The request index of each valid job (for the field names of later errors). */
  indexes: number[];
  /** Per-index errors of the jobs that did not. */
  errors: Map<number, DuetimeError>;
  /** Puts createJobs' answers (one per valid job) and the errors back in request order. */
  merge(results: readonly BatchCreateResult[]): BatchCreateResult[];
}

/**
 * Checks a POST /v1/jobs:batch body. A bad envelope (not an object, no jobs,
 * 0 or more than 1000 jobs, unknown fields) throws; a bad job becomes that
 * job's {error} answer, named "jobs.<i>.<field>", and the others go ahead:
 * the contract commits the valid jobs of a batch and answers per item.
 */
export function validateBatch(body: unknown): CheckedBatch {
  const envelope = validate<{ jobs: unknown[] }>("batchCreateEnvelope", body, "body");
  const valid: BatchCreateItem[] = [];
  const indexes: number[] = [];
  const errors = new Map<number, DuetimeError>();
  envelope.jobs.forEach((job, index) => {
    try {
      valid.push(validate<BatchCreateItem>("batchItem", job, "body", { path: `jobs.${index}` }));
      indexes.push(index);
    } catch (err) {
      if (!(err instanceof DuetimeError)) throw err;
      errors.set(index, err);
    }
  });
  const total = envelope.jobs.length;
  return {
    valid,
    indexes,
    errors,
    merge(results) {
      if (results.length !== valid.length) {
        throw new Error(`createJobs answered ${results.length} results for ${valid.length} jobs`);
      }
      const out: BatchCreateResult[] = [];
      let next = 0;
      for (let i = 0; i < total; i++) {
        const error = errors.get(i);
        out.push(error ? error.toJSON() : (results[next++] as BatchCreateResult));
      }
      return out;
    },
  };
}
