// Request validation against core/schemas.ts: each schema's limits and the
// one wording of every mistake, case by case.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { DuetimeError } from "./errors.js";
import { LIMITS, REQUEST_SCHEMAS, type JsonSchema, type SchemaId } from "./schemas.js";
import { expectedVersion, parseIfMatch, pointerToDotted, validate, validateBatch, type RequestPart } from "./validate.js";

const JOB = {
  name: "send-reminder",
  target: { type: "http", url: "https://example.test/hook", method: "POST", headers: { "x-a": "b" } },
  payload: { any: "json" },
  schedule: { runAt: "2026-10-16T09:00:00Z" },
  retry: { maxAttempts: 5, backoffSeconds: 10, maxBackoffSeconds: 3600 },
  timeoutSeconds: 300,
  priority: 0,
};

/** A copy of JOB with `patch` applied at a dotted path (undefined deletes). */
function job(path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(JOB) as Record<string, unknown>;
  const keys = path.split(".");
  let node = copy as Record<string, unknown>;
  for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>;
  const last = keys.at(-1) as string;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return copy;
}

function failure(fn: () => unknown): DuetimeError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof DuetimeError, `expected a DuetimeError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected validation to fail");
}

interface Case {
  schema: SchemaId;
  part?: RequestPart;
  value: unknown;
  field: string;
  message?: RegExp;
}

const cases: Case[] = [
  // job spec: types, missing and unknown fields
  { schema: "createJobBody", value: job("name", 5), field: "name", message: /must be a string/ },
  { schema: "createJobBody", value: job("name", ""), field: "name", message: /must not be empty/ },
  { schema: "createJobBody", value: job("name", "x".repeat(201)), field: "name", message: /at most 200/ },
  { schema: "createJobBody", value: job("name", undefined), field: "name", message: /^name: is required$/ },
  { schema: "createJobBody", value: job("target", undefined), field: "target", message: /is required/ },
  { schema: "createJobBody", value: { ...JOB, extra: 1 }, field: "extra", message: /^extra: unknown field$/ },
  { schema: "createJobBody", value: "job", field: "body", message: /must be an object, got a string/ },
  { schema: "createJobBody", value: null, field: "body", message: /must be an object, got null/ },
  { schema: "createJobBody", value: [JOB], field: "body", message: /got an array/ },
  // target
  {
    schema: "createJobBody",
    value: job("target", { type: "ftp", url: "ftp://x" }),
    field: "target.type",
    message: /"http", "queue", "nats", "amqp"/,
  },
  { schema: "createJobBody", value: job("target", { url: "https://x.test" }), field: "target.type", message: /is required/ },
  { schema: "createJobBody", value: job("target", "https://x.test"), field: "target", message: /must be an object/ },
  { schema: "createJobBody", value: job("target.url", "ftp://x.test/a"), field: "target.url", message: /http or https/ },
  { schema: "createJobBody", value: job("target.url", "http://exa mple.test"), field: "target.url", message: /URL/ },
  { schema: "createJobBody", value: job("target.url", `https://x.test/${"a".repeat(2048)}`), field: "target.url", message: /at most 2048/ },
  { schema: "createJobBody", value: job("target.method", "post"), field: "target.method", message: /one of "GET"/ },
  { schema: "createJobBody", value: job("target.pool", "emails"), field: "target.pool", message: /unknown field/ },
  { schema: "createJobBody", value: job("target.headers", { "x-a": "" }), field: "target.headers.x-a", message: /must not be empty/ },
  { schema: "createJobBody", value: job("target.headers", { "x-a": 1 }), field: "target.headers.x-a", message: /must be a string/ },
  { schema: "createJobBody", value: job("target.headers", { "x-a": "a\r\nx: y" }), field: "target.headers.x-a", message: /control/ },
  { schema: "createJobBody", value: job("target.headers", { "bad name": "v" }), field: "target.headers.bad name", message: /header name/ },
  { schema: "createJobBody", value: job("target", { type: "queue", pool: "" }), field: "target.pool", message: /must not be empty/ },
  { schema: "createJobBody", value: job("target", { type: "queue", pool: "a/b" }), field: "target.pool", message: /letters, digits/ },
  { schema: "createJobBody", value: job("target", { type: "queue", pool: "p", url: "x" }), field: "target.url", message: /unknown field/ },
  // broker targets
  { schema: "createJobBody", value: job("target", { type: "nats" }), field: "target.subject", message: /is required/ },
  { schema: "createJobBody", value: job("target", { type: "nats", subject: "" }), field: "target.subject", message: /must not be empty/ },
  { schema: "createJobBody", value: job("target", { type: "nats", subject: "orders.*" }), field: "target.subject", message: /wildcards/ },
  { schema: "createJobBody", value: job("target", { type: "nats", subject: "orders.>" }), field: "target.subject", message: /wildcards/ },
  { schema: "createJobBody", value: job("target", { type: "nats", subject: "orders..due" }), field: "target.subject", message: /none empty/ },
  { schema: "createJobBody", value: job("target", { type: "nats", subject: "a b" }), field: "target.subject", message: /without spaces/ },
  { schema: "createJobBody", value: job("target", { type: "nats", subject: "a".repeat(257) }), field: "target.subject", message: /at most 256/ },
  {
    schema: "createJobBody",
    value: job("target", { type: "nats", subject: "a", broker: "a b" }),
    field: "target.broker",
    message: /letters, digits/,
  },
  { schema: "createJobBody", value: job("target", { type: "nats", subject: "a", pool: "p" }), field: "target.pool", message: /unknown field/ },
  {
    schema: "createJobBody",
    value: job("target", { type: "nats", subject: "a", headers: { "x-a": "a\nb" } }),
    field: "target.headers.x-a",
    message: /control/,
  },
  { schema: "createJobBody", value: job("target", { type: "amqp", exchange: "x" }), field: "target.routingKey", message: /is required/ },
  { schema: "createJobBody", value: job("target", { type: "amqp", routingKey: "k" }), field: "target.exchange", message: /is required/ },
  {
    schema: "createJobBody",
    value: job("target", { type: "amqp", exchange: "a/b", routingKey: "k" }),
    field: "target.exchange",
    message: /letters, digits/,
  },
  {
    schema: "createJobBody",
    value: job("target", { type: "amqp", exchange: "x", routingKey: "k\u0000" }),
    field: "target.routingKey",
    message: /control/,
  },
  {
    schema: "createJobBody",
    value: job("target", { type: "amqp", exchange: "x", routingKey: "k".repeat(256) }),
    field: "target.routingKey",
    message: /at most 255/,
  },
  {
    schema: "createJobBody",
    value: job("target", { type: "amqp", exchange: "x".repeat(256), routingKey: "k" }),
    field: "target.exchange",
    message: /at most 255/,
  },
  // schedule
  { schema: "createJobBody", value: job("schedule", { cronn: "* * * * *" }), field: "schedule.cronn", message: /^schedule\.cronn: unknown field$/ },
  { schema: "createJobBody", value: job("schedule", {}), field: "schedule", message: /one of runAt, delaySeconds or cron/ },
  { schema: "createJobBody", value: job("schedule", { runAt: "tomorrow" }), field: "schedule.runAt", message: /RFC 3339/ },
  { schema: "createJobBody", value: job("schedule", { runAt: "2026-10-16T09:00:00" }), field: "schedule.runAt", message: /RFC 3339/ },
  { schema: "createJobBody", value: job("schedule", { runAt: "2026-02-30T09:00:00Z" }), field: "schedule.runAt" },
  { schema: "createJobBody", value: job("schedule", { runAt: 1760605200000 }), field: "schedule.runAt", message: /must be a string/ },
  { schema: "createJobBody", value: job("schedule", { delaySeconds: -1 }), field: "schedule.delaySeconds", message: /between 0 and/ },
  { schema: "createJobBody", value: job("schedule", { delaySeconds: 315_576_001 }), field: "schedule.delaySeconds" },
  { schema: "createJobBody", value: job("schedule", { delaySeconds: "30" }), field: "schedule.delaySeconds", message: /must be a number/ },
  {
    schema: "createJobBody",
    value: job("schedule", { runAt: "2026-10-16T09:00:00Z", delaySeconds: 5 }),
    field: "schedule.delaySeconds",
    message: /exactly one/,
  },
  { schema: "createJobBody", value: job("schedule", { delaySeconds: 5, cron: "* * * * *" }), field: "schedule.cron", message: /exactly one/ },
  {
    schema: "createJobBody",
    value: job("schedule", { delaySeconds: 5, tz: "UTC" }),
    field: "schedule.tz",
    message: /only allowed with schedule.cron/,
  },
  { schema: "createJobBody", value: job("schedule", { runAt: "2026-10-16T09:00:00Z", misfire: "skip" }), field: "schedule.misfire" },
  { schema: "createJobBody", value: job("schedule", { cron: "" }), field: "schedule.cron", message: /must not be empty/ },
  {
    schema: "createJobBody",
    value: job("schedule", { cron: "* * * * *", jitterSeconds: 86_401 }),
    field: "schedule.jitterSeconds",
    message: /between 0 and 86400/,
  },
  {
    schema: "createJobBody",
    value: job("schedule", { cron: "* * * * *", misfire: "later" }),
    field: "schedule.misfire",
    message: /"run_once", "skip", "catch_up"/,
  },
  { schema: "createJobBody", value: job("schedule", { cron: "* * * * *", overlap: "never" }), field: "schedule.overlap" },
  { schema: "createJobBody", value: job("schedule", { cron: "* * * * *", endAt: "soon" }), field: "schedule.endAt" },
  { schema: "createJobBody", value: job("schedule", { cron: "* * * * *", dst: { gap: "jump" } }), field: "schedule.dst.gap" },
  {
    schema: "createJobBody",
    value: job("schedule", { cron: "* * * * *", dst: { fold: "first" } }),
    field: "schedule.dst.fold",
    message: /unknown field/,
  },
  // retry, timeout, priority
  { schema: "createJobBody", value: job("retry.maxAttempts", 0), field: "retry.maxAttempts", message: /between 1 and 1000/ },
  { schema: "createJobBody", value: job("retry.maxAttempts", 1001), field: "retry.maxAttempts" },
  { schema: "createJobBody", value: job("retry.maxAttempts", 2.5), field: "retry.maxAttempts", message: /must be an integer/ },
  { schema: "createJobBody", value: job("retry.backoffSeconds", 86_401), field: "retry.backoffSeconds" },
  { schema: "createJobBody", value: job("retry.backoffSeconds", -1), field: "retry.backoffSeconds" },
  {
    schema: "createJobBody",
    value: job("retry", { backoffSeconds: 60, maxBackoffSeconds: 30 }),
    field: "retry.maxBackoffSeconds",
    message: /at least retry.backoffSeconds/,
  },
  { schema: "createJobBody", value: job("retry.jitter", 1), field: "retry.jitter", message: /unknown field/ },
  { schema: "createJobBody", value: job("timeoutSeconds", 0), field: "timeoutSeconds", message: /between 1 and 86400/ },
  { schema: "createJobBody", value: job("timeoutSeconds", 86_401), field: "timeoutSeconds" },
  { schema: "createJobBody", value: job("priority", 101), field: "priority", message: /between -100 and 100/ },
  { schema: "createJobBody", value: job("priority", -101), field: "priority" },
  { schema: "createJobBody", value: job("priority", 0.5), field: "priority", message: /integer/ },
  // headers
  { schema: "createJobHeaders", part: "headers", value: { "idempotency-key": "k".repeat(256) }, field: "Idempotency-Key", message: /at most 255/ },
  { schema: "createJobHeaders", part: "headers", value: { "idempotency-key": "" }, field: "Idempotency-Key" },
  // batch item (index prefix is added by validateBatch)
  { schema: "batchItem", value: { ...JOB, idempotencyKey: "" }, field: "idempotencyKey" },
  // worker protocol
  { schema: "leaseBody", value: {}, field: "workerId", message: /is required/ },
  { schema: "leaseBody", value: { workerId: "w", max: 0 }, field: "max", message: /between 1 and 1000/ },
  { schema: "leaseBody", value: { workerId: "w", max: 1001 }, field: "max" },
  { schema: "leaseBody", value: { workerId: "w", leaseSeconds: 3601 }, field: "leaseSeconds" },
  { schema: "leaseBody", value: { workerId: "w", leaseSeconds: 0 }, field: "leaseSeconds" },
  { schema: "leaseBody", value: { workerId: "w", waitSeconds: 61 }, field: "waitSeconds", message: /between 0 and 60/ },
  { schema: "leaseBody", value: { workerId: "w", complete: [{ executionId: "e1", attempt: "1" }] }, field: "complete.0.attempt" },
  { schema: "leaseBody", value: { workerId: "w", fail: [{ executionId: "e1", attempt: 1 }] }, field: "fail.0.error", message: /is required/ },
  {
    schema: "leaseBody",
    value: { workerId: "w", fail: [{ executionId: "e1", attempt: 1, error: { message: "x", class: "fatal" } }] },
    field: "fail.0.error.class",
  },
  { schema: "heartbeatBody", value: {}, field: "attempt", message: /is required/ },
  { schema: "heartbeatBody", value: { attempt: 0 }, field: "attempt" },
  { schema: "heartbeatBody", value: { attempt: 1, leaseSeconds: 0 }, field: "leaseSeconds" },
  { schema: "completeBody", value: { attempt: "1" }, field: "attempt", message: /must be an integer, got a string/ },
  { schema: "completeBody", value: { attempt: 1, results: {} }, field: "results", message: /unknown field/ },
  { schema: "failBody", value: { attempt: 1, error: {} }, field: "error.message", message: /is required/ },
  { schema: "failBody", value: { attempt: 1, error: { message: "x", retryAfterSeconds: -1 } }, field: "error.retryAfterSeconds" },
  { schema: "completeManyBody", value: { items: [] }, field: "items", message: /at least 1 item/ },
  {
    schema: "completeManyBody",
    value: {
      items: [
        { executionId: "e1", attempt: 1 },
        { executionId: "e1", attempt: 1 },
        { executionId: "a b", attempt: 1 },
      ],
    },
    field: "items.2.executionId",
    message: /letters, digits/,
  },
  { schema: "failManyBody", value: {}, field: "items" },
  // querystrings (strings, coerced)
  { schema: "listJobsQuery", part: "query", value: { limit: "0" }, field: "limit", message: /between 1 and 500/ },
  { schema: "listJobsQuery", part: "query", value: { limit: "501" }, field: "limit" },
  { schema: "listJobsQuery", part: "query", value: { limit: "abc" }, field: "limit", message: /integer/ },
  { schema: "listJobsQuery", part: "query", value: { limit: "" }, field: "limit" },
  { schema: "listJobsQuery", part: "query", value: { cursor: "" }, field: "cursor" },
  { schema: "listJobsQuery", part: "query", value: { cursor: ["a", "b"] }, field: "cursor", message: /must be given once, got 2 values/ },
  { schema: "listJobsQuery", part: "query", value: { state: "RUNNING" }, field: "state" },
  { schema: "listJobsQuery", part: "query", value: { sort: "name" }, field: "sort", message: /unknown field/ },
  { schema: "pageQuery", part: "query", value: { limit: "1.5" }, field: "limit" },
  { schema: "previewQuery", part: "query", value: {}, field: "cron", message: /is required/ },
  { schema: "previewQuery", part: "query", value: { cron: "* * * * *", count: "1001" }, field: "count" },
  { schema: "previewQuery", part: "query", value: { cron: "* * * * *", from: "now" }, field: "from" },
  // params
  { schema: "poolParams", part: "params", value: { pool: "a b" }, field: "pool" },
  // PATCH /v1/jobs/{jobId}: the create rules on the fields given, plus version
  { schema: "updateJobBody", value: {}, field: "body", message: /must change at least one of name, target/ },
  { schema: "updateJobBody", value: { version: 2 }, field: "body", message: /version alone changes nothing/ },
  { schema: "updateJobBody", value: { name: "a", id: "j" }, field: "id", message: /unknown field/ },
  { schema: "updateJobBody", value: { name: "" }, field: "name", message: /must not be empty/ },
  { schema: "updateJobBody", value: { name: "x".repeat(201) }, field: "name", message: /at most 200/ },
  { schema: "updateJobBody", value: { schedule: {} }, field: "schedule", message: /one of runAt, delaySeconds or cron/ },
  {
    schema: "updateJobBody",
    value: { schedule: { delaySeconds: 1, runAt: "2026-10-16T09:00:00Z" } },
    field: "schedule.delaySeconds",
    message: /exactly one/,
  },
  {
    schema: "updateJobBody",
    value: { schedule: { delaySeconds: 1, jitterSeconds: 5 } },
    field: "schedule.jitterSeconds",
    message: /only allowed with schedule.cron/,
  },
  { schema: "updateJobBody", value: { schedule: { cron: "* * * * *", dst: { gap: "later" } } }, field: "schedule.dst.gap" },
  { schema: "updateJobBody", value: { retry: { maxAttempts: 1001 } }, field: "retry.maxAttempts" },
  {
    schema: "updateJobBody",
    value: { retry: { backoffSeconds: 9, maxBackoffSeconds: 8 } },
    field: "retry.maxBackoffSeconds",
    message: /at least retry.backoffSeconds/,
  },
  { schema: "updateJobBody", value: { timeoutSeconds: 0 }, field: "timeoutSeconds" },
  { schema: "updateJobBody", value: { priority: -101 }, field: "priority" },
  { schema: "updateJobBody", value: { target: { type: "queue" } }, field: "target.pool", message: /is required/ },
  { schema: "updateJobBody", value: { name: "a", version: 0 }, field: "version", message: /at least 1|between 1/ },
  { schema: "updateJobBody", value: { name: "a", version: 2.5 }, field: "version", message: /integer/ },
  { schema: "updateJobBody", value: { name: "a", version: null }, field: "version", message: /got null/ },
  { schema: "updateJobHeaders", part: "headers", value: { "if-match": "" }, field: "If-Match" },
  { schema: "updateJobHeaders", part: "headers", value: { "if-match": "1".repeat(65) }, field: "If-Match", message: /at most 64/ },
  // backfill and occurrences windows
  { schema: "backfillBody", value: {}, field: "from", message: /is required/ },
  { schema: "backfillBody", value: { from: "2026-10-13T00:00:00Z" }, field: "to", message: /is required/ },
  { schema: "backfillBody", value: { from: "2026-10-13", to: "2026-10-14T00:00:00Z" }, field: "from", message: /RFC 3339/ },
  { schema: "backfillBody", value: { from: "2026-10-14T00:00:00Z", to: "2026-10-14T00:00:00Z" }, field: "to", message: /must be after from/ },
  {
    schema: "backfillBody",
    value: { from: "2026-10-14T00:00:00Z", to: "2026-10-13T23:00:00+02:00" },
    field: "to",
    message: /must be after from \(2026-10-14T00:00:00Z\)/,
  },
  { schema: "backfillBody", value: { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00Z", pool: "p" }, field: "pool", message: /unknown field/ },
  { schema: "occurrencesQuery", part: "query", value: { to: "2026-10-14T00:00:00Z" }, field: "from", message: /is required/ },
  { schema: "occurrencesQuery", part: "query", value: { from: "2026-10-13T00:00:00Z", to: "later" }, field: "to", message: /RFC 3339/ },
  {
    schema: "occurrencesQuery",
    part: "query",
    value: { from: "2026-10-15T00:00:00Z", to: "2026-10-14T00:00:00Z" },
    field: "to",
    message: /must be after from/,
  },
  {
    schema: "occurrencesQuery",
    part: "query",
    value: { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00Z", cursor: "c" },
    field: "cursor",
    message: /unknown field/,
  },
  // times are in the years 1900 to 9999
  {
    schema: "occurrencesQuery",
    part: "query",
    value: { from: "0000-01-01T00:00:00Z", to: "2181-07-05T18:57:54.611Z" },
    field: "from",
    message: /years 1900 to 9999/,
  },
  { schema: "previewQuery", part: "query", value: { cron: "0 9 * * *", from: "1899-12-31T23:59:59Z" }, field: "from", message: /years 1900 to 9999/ },
  {
    schema: "createJobBody",
    value: { name: "a", target: { type: "queue", pool: "p" }, schedule: { runAt: "0999-01-01T00:00:00Z" } },
    field: "schedule.runAt",
    message: /years 1900 to 9999/,
  },
];

describe("validate: field paths and messages", () => {
  for (const c of cases) {
    const label = `${c.schema} → ${c.field}${c.message ? ` ${c.message}` : ""}`;
    test(label, () => {
      const err = failure(() => validate(c.schema, c.value, c.part ?? "body"));
      assert.equal(err.code, "INVALID_ARGUMENT");
      assert.equal(err.status, 400);
      assert.equal(err.details?.field, c.field, err.message);
      assert.ok(err.message.startsWith(`${c.field}: `), err.message);
      if (c.message) assert.match(err.message, c.message);
    });
  }
});

describe("validate: valid input", () => {
  test("the contract's example job passes unchanged (no defaults, nothing removed)", () => {
    const input = structuredClone(JOB);
    const out = validate("createJobBody", input);
    assert.deepEqual(out, JOB);
    assert.equal(out, input);
  });

  test("each schedule variant and each target type passes", () => {
    const variants = [
      { runAt: "2026-10-16T09:00:00+01:00" },
      { runAt: "2026-10-16T09:00:00.123Z" },
      { delaySeconds: 0 },
      { delaySeconds: 1.5 },
      {
        cron: "0 9 * * MON-FRI",
        tz: "Europe/London",
        jitterSeconds: 300,
        misfire: "catch_up",
        overlap: "forbid",
        startAt: "2026-01-01T00:00:00Z",
        endAt: "2027-01-01T00:00:00Z",
        dst: { gap: "skip", overlap: "both" },
      },
    ];
    for (const schedule of variants) validate("createJobBody", { ...JOB, schedule });
    validate("createJobBody", { name: "q", target: { type: "queue", pool: "emails.v2~x_y-z" }, schedule: { delaySeconds: 0 } });
  });

  test("payload is free-form: any JSON value, any keys", () => {
    for (const payload of [null, 1, "s", [1, { a: 2 }], { unknown: { deep: true } }]) {
      validate("createJobBody", { ...JOB, payload });
    }
  });

  test("error records keep extra keys; results are free-form", () => {
    validate("failBody", { attempt: 1, error: { message: "x", class: "throttled", retryAfterSeconds: 5, httpStatus: 429 } });
    validate("completeBody", { attempt: 1, result: [1, "two", { three: 3 }] });
  });

  test("querystrings read numbers into a copy; the caller's object is untouched", () => {
    const raw = { limit: "20", cursor: "abc", state: "PAUSED", name: "n" };
    const out = validate<Record<string, unknown>>("listJobsQuery", raw, "query");
    assert.deepEqual(out, { limit: 20, cursor: "abc", state: "PAUSED", name: "n" });
    assert.equal(raw.limit, "20");
  });

  test("bodies are never coerced", () => {
    const err = failure(() => validate("heartbeatBody", { attempt: "1" }));
    assert.equal(err.details?.field, "attempt");
  });

  test("headers pass other headers through", () => {
    validate("createJobHeaders", { "idempotency-key": "k".repeat(255), host: "x", "content-type": "application/json" }, "headers");
  });

  test("an absent body is named", () => {
    const err = failure(() => validate("createJobBody", undefined, "body"));
    assert.equal(err.details?.field, "body");
    assert.match(err.message, /is required/);
  });

  test("a schema object can be passed instead of an id", () => {
    assert.deepEqual(validate({ type: "object", properties: { n: { type: "integer" } } }, { n: "3" }, "query"), { n: 3 });
  });

  test("every request schema compiles in strict mode", () => {
    for (const id of Object.keys(REQUEST_SCHEMAS) as SchemaId[]) {
      try {
        validate(id, {}, id.endsWith("Query") ? "query" : id.endsWith("Params") ? "params" : id.endsWith("Headers") ? "headers" : "body");
      } catch (err) {
        assert.ok(err instanceof DuetimeError, `${id}: ${String(err)}`);
      }
    }
  });
});

describe("validateBatch", () => {
  const ok = { name: "a", target: { type: "queue", pool: "p" }, schedule: { delaySeconds: 0 } };

  test("bad jobs answer per item with jobs.<i>.<field>; good ones go ahead, in order", () => {
    const checked = validateBatch({ jobs: [ok, job("target.url", 5), { ...ok, idempotencyKey: "k1" }, "nope"] });
    assert.equal(checked.valid.length, 2);
    assert.equal(checked.valid[1]?.idempotencyKey, "k1");
    const merged = checked.merge([
      { jobId: "j0", nextRunAt: null, created: true },
      { jobId: "j2", nextRunAt: null, created: false },
    ]);
    assert.deepEqual(merged[0], { jobId: "j0", nextRunAt: null, created: true });
    assert.deepEqual(merged[1], {
      error: { code: "INVALID_ARGUMENT", message: "jobs.1.target.url: must be a string, got an integer", details: { field: "jobs.1.target.url" } },
    });
    assert.deepEqual(merged[2], { jobId: "j2", nextRunAt: null, created: false });
    assert.equal((merged[3] as { error: { details?: Record<string, unknown> } }).error.details?.field, "jobs.3");
  });

  test("refinements run per item too", () => {
    const checked = validateBatch({ jobs: [job("schedule", { delaySeconds: 1, runAt: "2026-10-16T09:00:00Z" })] });
    assert.equal(checked.errors.get(0)?.details?.field, "jobs.0.schedule.delaySeconds");
  });

  test("a bad envelope throws", () => {
    assert.equal(failure(() => validateBatch({ jobs: [] })).details?.field, "jobs");
    assert.equal(failure(() => validateBatch({ jobs: Array.from({ length: 1001 }, () => ok) })).details?.field, "jobs");
    assert.equal(failure(() => validateBatch({ jobs: {} })).details?.field, "jobs");
    assert.equal(failure(() => validateBatch({ jobs: [ok], dryRun: true })).details?.field, "dryRun");
    assert.equal(failure(() => validateBatch(undefined)).details?.field, "body");
  });

  test("merge refuses a result count that does not match", () => {
    const checked = validateBatch({ jobs: [ok, ok] });
    assert.throws(() => checked.merge([{ jobId: "j", nextRunAt: null, created: true }]), /answered 1 results for 2 jobs/);
  });
});

test("a malformed id parameter is NOT_FOUND, like an unknown id; a bad pool is INVALID_ARGUMENT", () => {
  for (const [schema, value] of [
    ["jobIdParams", { jobId: "a:b" }],
    ["jobIdParams", { jobId: "" }],
    ["executionIdParams", { executionId: "x".repeat(201) }],
  ] as const) {
    const err = failure(() => validate(schema, value, "params"));
    assert.equal(err.code, "NOT_FOUND");
    assert.equal(err.status, 404);
  }
  assert.deepEqual(validate("jobIdParams", { jobId: "job_A-1" }, "params"), { jobId: "job_A-1" });
  assert.equal(failure(() => validate("poolParams", { pool: "a b" }, "params")).details?.field, "pool");
});

describe("PATCH bodies and versions", () => {
  test("any one field is a valid patch, with or without a version; nothing is defaulted", () => {
    const patches: Record<string, unknown>[] = [
      { name: "n" },
      { payload: null },
      { payload: { any: ["json"] }, version: 3 },
      { schedule: { cron: "0 9 * * *", tz: "Europe/London", dst: { gap: "skip" } } },
      { schedule: { runAt: "2026-10-16T09:00:00+01:00" } },
      { schedule: { delaySeconds: 0 } },
      { retry: { maxBackoffSeconds: 5 } },
      { target: { type: "http", url: "https://example.test/x", method: "PUT" } },
      { timeoutSeconds: 1, priority: -100, version: Number.MAX_SAFE_INTEGER },
    ];
    for (const patch of patches) assert.deepEqual(validate("updateJobBody", structuredClone(patch)), patch);
  });

  test("windows with from before to pass, whatever the offsets", () => {
    validate("backfillBody", { from: "2026-10-14T01:00:00+02:00", to: "2026-10-14T00:00:00Z" });
    validate("occurrencesQuery", { from: "2026-10-13T00:00:00.000Z", to: "2026-10-13T00:00:00.001Z" }, "query");
  });

  test("parseIfMatch: a version bare, quoted or weak; * is any version", () => {
    const good: [unknown, number | undefined][] = [
      [undefined, undefined],
      ["7", 7],
      ['"7"', 7],
      ['W/"7"', 7],
      [' "12" ', 12],
      ["*", undefined],
      [9, 9],
      [String(Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER],
    ];
    for (const [input, version] of good) assert.equal(parseIfMatch(input), version, JSON.stringify(input));
    const bad: unknown[] = ["", "abc", '"7', '7"', "W/7", 'w/"7"', '"1", "2"', "0", '"0"', "-1", "1.5", "9007199254740992", 0, -3, 1.5, null, true];
    for (const input of bad) {
      const err = failure(() => parseIfMatch(input));
      assert.equal(err.details?.field, "If-Match", JSON.stringify(input));
      assert.ok(err.message.startsWith("If-Match: "), err.message);
    }
  });

  test("expectedVersion: If-Match or the body's version; both must agree", () => {
    assert.equal(expectedVersion(undefined, undefined), undefined);
    assert.equal(expectedVersion('"4"', undefined), 4);
    assert.equal(expectedVersion(undefined, 4), 4);
    assert.equal(expectedVersion('W/"4"', 4), 4);
    assert.equal(expectedVersion("*", 4), 4);
    const err = failure(() => expectedVersion('"5"', 4));
    assert.equal(err.details?.field, "If-Match");
    assert.match(err.message, /version 5 but the body's version is 4/);
  });
});

test("pointerToDotted undoes JSON Pointer escapes", () => {
  assert.equal(pointerToDotted(""), "");
  assert.equal(pointerToDotted("/jobs/3/target/url"), "jobs.3.target.url");
  assert.equal(pointerToDotted("/target/headers/a~1b~0c"), "target.headers.a/b~c");
});

describe("numbers: one rule for text, finite values everywhere", () => {
  // Every way a querystring or header can spell something that is not a plain decimal number.
  const HOSTILE_TEXT: unknown[] = [
    "Infinity",
    "-Infinity",
    "+Infinity",
    "NaN",
    "1e309",
    "-1e309",
    "1e3",
    "1E3",
    "0x10",
    "0X10",
    "0o17",
    "0b11",
    "010",
    "00",
    "+5",
    " 5",
    "5 ",
    "\t5",
    "5\n",
    "",
    " ",
    "5.",
    ".5",
    "5.0",
    "1.5",
    "1_000",
    "1,000",
    "٥",
    "５",
    "5e0",
    "0x",
    "-",
    "null",
    "true",
    "9".repeat(400),
    ["5", "5"],
    ["5"],
    [],
  ];
  const INTEGER_QUERIES: [SchemaId, Record<string, unknown>, string][] = [
    ["listJobsQuery", {}, "limit"],
    ["pageQuery", {}, "limit"],
    ["listKeysQuery", {}, "limit"],
    ["previewQuery", { cron: "0 9 * * *" }, "count"],
  ];

  for (const [schema, base, field] of INTEGER_QUERIES) {
    test(`${schema}: ${field} refuses every hostile spelling, naming the field`, () => {
      for (const text of HOSTILE_TEXT) {
        const err = failure(() => validate(schema, { ...base, [field]: text }, "query"));
        assert.equal(err.code, "INVALID_ARGUMENT", `${JSON.stringify(text)}: ${err.message}`);
        assert.equal(err.details?.field, field, `${JSON.stringify(text)}: ${err.message}`);
      }
    });
  }

  test("the messages say what to send", () => {
    assert.equal(
      failure(() => validate("pageQuery", { limit: "0x10" }, "query")).message,
      'limit: must be an integer in plain decimal digits, like 50; got "0x10"',
    );
    assert.equal(failure(() => validate("pageQuery", { limit: ["5", "5"] }, "query")).message, "limit: must be given once, got 2 values");
    assert.match(failure(() => validate("pageQuery", { limit: "9".repeat(400) }, "query")).message, /got "9{40}\.\.\."$/);
    assert.equal(failure(() => validate("pageQuery", { limit: "99999999999999999999" }, "query")).message, "limit: must be between 1 and 500");
    assert.equal(failure(() => validate("pageQuery", { limit: Infinity }, "query")).message, "limit: must be an integer, got Infinity");
  });

  test("plain decimal integers pass as numbers, at both bounds", () => {
    for (const [text, n] of [
      ["1", 1],
      ["50", 50],
      ["500", 500],
    ] as const) {
      assert.deepEqual(validate("pageQuery", { limit: text }, "query"), { limit: n });
    }
    assert.deepEqual(validate("previewQuery", { cron: "0 9 * * *", count: String(LIMITS.previewCountMax) }, "query"), {
      cron: "0 9 * * *",
      count: LIMITS.previewCountMax,
    });
    for (const text of ["0", "-1", "501"]) assert.match(failure(() => validate("pageQuery", { limit: text }, "query")).message, /between 1 and 500/);
  });

  test("a non-integer field takes a decimal fraction, and nothing else", () => {
    const schema: JsonSchema = { type: "object", properties: { x: { type: "number", minimum: -10, maximum: 10 } } };
    for (const [text, n] of [
      ["2.5", 2.5],
      ["-0.25", -0.25],
      ["3", 3],
      ["0", 0],
    ] as const) {
      assert.deepEqual(validate(schema, { x: text }, "query"), { x: n });
    }
    for (const text of HOSTILE_TEXT.filter((t) => t !== "5.0" && t !== "1.5")) {
      assert.equal(failure(() => validate(schema, { x: text }, "query")).details?.field, "x", JSON.stringify(text));
    }
  });

  test("headers follow the same rule, and are named as people write them", () => {
    const schema: JsonSchema = { type: "object", properties: { "x-count": { type: "integer", minimum: 1, maximum: 9 } } };
    assert.deepEqual(validate(schema, { "x-count": "7", host: "h" }, "headers"), { "x-count": 7, host: "h" });
    for (const text of ["0x7", "7.0", "+7", " 7", "Infinity"]) {
      assert.equal(failure(() => validate(schema, { "x-count": text }, "headers")).details?.field, "X-Count", text);
    }
  });

  test("numbers given as numbers (the embedded client) must be finite too", () => {
    // biome-ignore lint/correctness/noPrecisionLoss: 1e309 overflows to Infinity on purpose
    for (const n of [Infinity, -Infinity, NaN, 1e309, 1.5, 2 ** 53]) {
      assert.equal(failure(() => validate("pageQuery", { limit: n }, "query")).details?.field, "limit", String(n));
      assert.equal(failure(() => validate("heartbeatBody", { attempt: n })).details?.field, "attempt", String(n));
    }
    // biome-ignore lint/correctness/noPrecisionLoss: 1e309 overflows to Infinity on purpose
    for (const n of [Infinity, -Infinity, NaN, 1e309]) {
      assert.equal(failure(() => validate("createJobBody", job("timeoutSeconds", n))).details?.field, "timeoutSeconds", String(n));
    }
  });

  test("bodies refuse 1e400 (JSON.parse reads it as Infinity), free-form values included", () => {
    const parsed = (text: string) => JSON.parse(text) as unknown;
    const cases: [SchemaId, unknown, string][] = [
      ["createJobBody", { ...JOB, timeoutSeconds: parsed("1e400") }, "timeoutSeconds"],
      ["createJobBody", { ...JOB, schedule: { delaySeconds: parsed("-1e400") } }, "schedule.delaySeconds"],
      ["createJobBody", { ...JOB, payload: parsed('{"a": [1, 1e400]}') }, "payload.a.1"],
      ["createJobBody", { ...JOB, payload: parsed("-1e400") }, "payload"],
      ["completeBody", { attempt: 1, result: parsed('{"n": 1e999}') }, "result.n"],
      ["failBody", { attempt: 1, error: { message: "m", detail: parsed("1e400") } }, "error.detail"],
      ["leaseBody", { workerId: "w", waitSeconds: parsed("1e400") }, "waitSeconds"],
      ["updateJobBody", { version: parsed("1e400"), name: "n" }, "version"],
      ["updateJobBody", { version: 2 ** 53, name: "n" }, "version"],
    ];
    for (const [schema, value, field] of cases) {
      const err = failure(() => validate(schema, value));
      assert.equal(err.details?.field, field, err.message);
      assert.equal(err.code, "INVALID_ARGUMENT");
    }
    const batch = validateBatch({ jobs: [{ ...JOB, payload: parsed("[1e400]") }, JOB] });
    assert.equal(batch.errors.get(0)?.details?.field, "jobs.0.payload.0");
    assert.equal(batch.valid.length, 1);
  });
});

describe("every request schema bounds what input can make the server hold", () => {
  // Open objects (additionalProperties absent or true: payload, result, the
  // extra keys of an error record, the header set) are free-form JSON, bounded
  // by the body limit and JSON depth, or by Node's header size limit.
  function walk(schema: JsonSchema, at: string, problems: string[]): void {
    const types = ([] as unknown[]).concat(schema.type ?? []);
    const bounded = (key: string) => typeof schema[key] === "number" || problems.push(`${at}: no ${key}`);
    if (types.includes("string") && schema.enum === undefined && schema.const === undefined) bounded("maxLength");
    if (types.includes("integer") || types.includes("number")) {
      bounded("minimum");
      bounded("maximum");
      if (Math.abs(Number(schema.minimum)) > Number.MAX_SAFE_INTEGER || Math.abs(Number(schema.maximum)) > Number.MAX_SAFE_INTEGER) {
        problems.push(`${at}: bounds beyond the safe integers`);
      }
    }
    if (types.includes("array")) bounded("maxItems");
    const extra = schema.additionalProperties;
    if (typeof extra === "object" && extra !== null) {
      bounded("maxProperties");
      walk(extra as JsonSchema, `${at}.*`, problems);
    }
    for (const [name, sub] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) walk(sub, `${at}.${name}`, problems);
    if (schema.items) walk(schema.items as JsonSchema, `${at}[]`, problems);
    if (schema.propertyNames) walk(schema.propertyNames as JsonSchema, `${at}{name}`, problems);
    for (const branch of (schema.oneOf ?? []) as JsonSchema[]) walk(branch, at, problems);
  }

  test("strings have maxLength, numbers finite bounds, arrays maxItems, maps maxProperties", () => {
    const problems: string[] = [];
    for (const [id, schema] of Object.entries(REQUEST_SCHEMAS)) walk(schema, id, problems);
    assert.deepEqual(problems, []);
  });
});

describe("text every store can keep: no NUL, no unpaired surrogate", () => {
  const parsed = (text: string) => JSON.parse(text) as unknown;

  test("bodies and query strings refuse U+0000 and lone surrogates, in values and keys, naming the field", () => {
    const cases: [SchemaId, unknown, string, RequestPart?][] = [
      ["createJobBody", { ...JOB, name: parsed('"a\\u0000b"') }, "name"],
      ["createJobBody", { ...JOB, payload: parsed('{"to": "x\\u0000"}') }, "payload.to"],
      ["createJobBody", { ...JOB, payload: parsed('{"list": ["ok", "\\ud800"]}') }, "payload.list.1"],
      ["createJobBody", { ...JOB, payload: parsed('{"\\udc00": 1}') }, "payload"],
      ["createJobBody", { ...JOB, payload: parsed('{"a\\u0000": 1}') }, "payload"],
      ["failBody", { attempt: 1, error: { message: parsed('"boom\\u0000"') } }, "error.message"],
      ["completeBody", { attempt: 1, result: parsed('"\\ud83d"') }, "result"],
      ["listJobsQuery", { name: "a\u0000" }, "name", "query"],
    ];
    for (const [schema, value, field, part] of cases) {
      const err = failure(() => validate(schema, value, part ?? "body"));
      assert.equal(err.code, "INVALID_ARGUMENT");
      assert.equal(err.details?.field, field, err.message);
      assert.match(err.message, /U\+0000|unpaired surrogate/);
    }
  });

  test("paired surrogates (emoji) and other control characters are fine", () => {
    const ok = { ...JOB, name: "report \u{1F4C8}", payload: parsed('{"\\ud83d\\ude00": "tab\\there\\u0001"}') };
    assert.deepEqual(validate("createJobBody", ok), ok);
  });
});
