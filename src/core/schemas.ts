// One concept, long on purpose: one schema per part of every operation, side
// by side so that a field's limits read the same everywhere.
//
// JSON Schemas of the HTTP API (docs/api.md): every request body, querystring,
// path parameter and header set, and documentation schemas for the main
// responses. Plain objects, no imports of fastify or ajv: the server feeds
// them to Fastify (routes, OpenAPI) and core/validate.ts compiles them with
// ajv for the server and the embedded client alike.
//
// Two rules are not expressed here on purpose and are checked by hand in
// core/validate.ts, because ajv's oneOf errors are unreadable:
// - a schedule is exactly one of runAt | delaySeconds | cron, and the cron-only
//   fields (tz, jitterSeconds, misfire, overlap, startAt, endAt, dst) appear
//   only beside cron;
// - retry.maxBackoffSeconds >= retry.backoffSeconds when both are given.
// - a PATCH changes at least one field besides `version`;
// - a time window (backfill, occurrences) has from < to.
// The engine re-checks the semantics (cron syntax, IANA zone, defaults).

import type { RequestSchemaName, ResponseSchemaName } from "@duetime/sdk/contract";

export type JsonSchema = { readonly [keyword: string]: unknown };

/** Every range the contract states, in one place (documented where defined). */
export const LIMITS = {
  nameMaxLength: 200,
  idMaxLength: 200,
  poolMaxLength: 200,
  tenantIdMaxLength: 200,
  keyNameMaxLength: 200,
  urlMaxLength: 2048,
  headerNameMaxLength: 256,
  headerValueMaxLength: 8192,
  headersMaxCount: 100,
  /** A request's line and headers together (Node's maxHeaderSize): a longer head is refused while parsing, 431. */
  requestHeadMaxBytes: 16 * 1024,
  idempotencyKeyMaxLength: 255,
  /** 10 years (365.25-day years). */
  delaySecondsMax: 315_576_000,
  maxAttemptsMax: 1000,
  backoffSecondsMax: 86_400,
  /** Not in the contract: a sanity cap of one year so retry arithmetic stays finite. */
  maxBackoffSecondsMax: 31_536_000,
  timeoutSecondsMax: 86_400,
  /** A year: Kubernetes' startingDeadlineSeconds has no upper bound, and a year covers any real one. */
  misfireThresholdSecondsMax: 31_536_000,
  priorityMin: -100,
  priorityMax: 100,
  jitterSecondsMax: 86_400,
  cronMaxLength: 256,
  tzMaxLength: 64,
  batchMax: 1000,
  leaseMaxMax: 1000,
  leaseSecondsMax: 3600,
  waitSecondsMax: 60,
  /** Not in the contract: a sanity cap, like backoffSecondsMax. */
  retryAfterSecondsMax: 86_400,
  /** Not in the contract: a worker's error message (the SDK cuts its own at 2,000). */
  errorMessageMaxLength: 16_384,
  listLimitMax: 500,
  previewCountMax: 1000,
  cursorMaxLength: 1024,
  workerIdMaxLength: 200,
  attemptMax: 2_147_483_647,
  /** Job versions (PATCH `version`, `If-Match`): positive integers a JSON number holds exactly. */
  versionMax: Number.MAX_SAFE_INTEGER,
  /** retry.deadlineSeconds: ten years. */
  retryDeadlineSecondsMax: 315_360_000,
  /** An If-Match header is one (possibly weak, quoted) version: a sanity cap on its length. */
  ifMatchMaxLength: 64,
  /** A bulk dead-letter replay's ratePerSecond. */
  replayRateMin: 0.01,
  replayRateMax: 10_000,
  /** Ids a bulk dead-letter replay may list. */
  replayIdsMax: 1000,
  brokerNameMaxLength: 64,
  natsSubjectMaxLength: 256,
  /** AMQP's short strings: 255 bytes (routing keys are checked in bytes in job-spec.ts). */
  amqpNameMaxLength: 255,
} as const;

/** Ids are opaque and URL-safe. */
export const ID_PATTERN = "^[A-Za-z0-9_-]+$";
/** Pool names travel in URLs: RFC 3986 unreserved characters only. */
export const POOL_PATTERN = "^[A-Za-z0-9._~-]+$";
/** RFC 9110 token. */
export const HEADER_NAME_PATTERN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";
/** No control characters other than horizontal tab (no CR/LF header injection). */
export const HEADER_VALUE_PATTERN = "^[^\\u0000-\\u0008\\u000A-\\u001F\\u007F]+$";
export const HTTP_URL_PATTERN = "^[Hh][Tt][Tt][Pp][Ss]?://";
/** A name given to a broker connection with --broker NAME=URL: the characters of an id. */
export const BROKER_NAME_PATTERN = ID_PATTERN;
/** A JetStream subject to publish to: dot-separated tokens, none empty, no whitespace, no wildcards. */
export const NATS_SUBJECT_PATTERN = "^[^\\s.*>]+(?:\\.[^\\s.*>]+)*$";
/** RabbitMQ's rule for exchange names; "" is the default exchange. */
export const AMQP_EXCHANGE_PATTERN = "^[A-Za-z0-9._:-]*$";
/** No control characters. */
export const AMQP_ROUTING_KEY_PATTERN = "^[^\\u0000-\\u001F\\u007F]*$";

export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

// ---------------------------------------------------------------- building blocks

/**
 * Times are written in the years 1900 to 9999: a scheduler has no use for
 * earlier ones, and the platform's zone data is unreliable before them
 * (year 0 is "1 BC" to Intl).
 */
// Text that does not start with a year is left to the date-time format's message.
export const YEAR_PATTERN = "^(?:(?![0-9]{4}-)|(?:19|[2-9][0-9])[0-9]{2}-)";
const dateTime = { type: "string", format: "date-time", maxLength: 64, pattern: YEAR_PATTERN } as const;
const idString = { type: "string", minLength: 1, maxLength: LIMITS.idMaxLength, pattern: ID_PATTERN } as const;
/** Tenant ids of keys created at run time: URL-safe, since they travel in query strings. */
const tenantString = { type: "string", minLength: 1, maxLength: LIMITS.tenantIdMaxLength, pattern: POOL_PATTERN } as const;
/** A key's tenant: a tenant id, or "*" (a platform key, for every tenant). */
const keyTenantString = { ...tenantString, pattern: "^(?:[*]|[A-Za-z0-9._~-]+)$" } as const;
const roleString = { type: "string", enum: ["admin", "client", "worker"] } as const;
const poolString = { type: "string", minLength: 1, maxLength: LIMITS.poolMaxLength, pattern: POOL_PATTERN } as const;
const attempt = { type: "integer", minimum: 1, maximum: LIMITS.attemptMax } as const;
/** The lease's token (LeasedExecution.leaseToken), opaque to the worker: with the attempt, the fence. */
const leaseToken = {
  type: "string",
  minLength: 1,
  maxLength: 64,
  pattern: "^[0-9A-Za-z._~-]+$",
  description: "The leaseToken the lease answered with, sent back as given; absent when the lease gave none.",
} as const;
/** Free-form JSON: any value. */
const anyJson = {} as const;

/** A payload kept by reference (docs/api.md "Large payloads"): the job's, an execution's or a dead letter's `payload` is null then. */
const payloadRefSchema = {
  type: "object",
  required: ["blobId", "bytes", "sha256", "href"],
  description: "The payload is larger than the server's inline limit: GET href for it (payload is null).",
  properties: {
    blobId: { type: "string" },
    bytes: { type: "integer", description: "The payload's size in bytes of JSON (UTF-8)." },
    sha256: { type: "string", description: "SHA-256 (hex) of those bytes." },
    href: { type: "string", description: "/v1/blobs/{blobId}" },
  },
} as const;
const limitQuery = { type: "integer", minimum: 1, maximum: LIMITS.listLimitMax, default: 50 } as const;
const cursorQuery = { type: "string", minLength: 1, maxLength: LIMITS.cursorMaxLength } as const;

const targetHeaders = {
  type: "object",
  maxProperties: LIMITS.headersMaxCount,
  propertyNames: { type: "string", minLength: 1, maxLength: LIMITS.headerNameMaxLength, pattern: HEADER_NAME_PATTERN },
  additionalProperties: {
    type: "string",
    minLength: 1,
    maxLength: LIMITS.headerValueMaxLength,
    pattern: HEADER_VALUE_PATTERN,
  },
} as const;

export const httpTargetSchema = {
  type: "object",
  additionalProperties: false,
  required: ["type", "url"],
  properties: {
    type: { type: "string", const: "http" },
    url: { type: "string", minLength: 1, maxLength: LIMITS.urlMaxLength, pattern: HTTP_URL_PATTERN, format: "uri" },
    method: { type: "string", enum: HTTP_METHODS, default: "POST" },
    headers: targetHeaders,
  },
} as const;

const brokerName = {
  type: "string",
  minLength: 1,
  maxLength: LIMITS.brokerNameMaxLength,
  pattern: BROKER_NAME_PATTERN,
  description: "The server's broker connection (--broker NAME=URL); default: the target's type.",
} as const;

export const natsTargetSchema = {
  type: "object",
  additionalProperties: false,
  required: ["type", "subject"],
  properties: {
    type: { type: "string", const: "nats" },
    subject: { type: "string", minLength: 1, maxLength: LIMITS.natsSubjectMaxLength, pattern: NATS_SUBJECT_PATTERN },
    broker: brokerName,
    headers: targetHeaders,
  },
} as const;

export const amqpTargetSchema = {
  type: "object",
  additionalProperties: false,
  required: ["type", "exchange", "routingKey"],
  properties: {
    type: { type: "string", const: "amqp" },
    exchange: { type: "string", maxLength: LIMITS.amqpNameMaxLength, pattern: AMQP_EXCHANGE_PATTERN, description: '"" is the default exchange.' },
    routingKey: { type: "string", maxLength: LIMITS.amqpNameMaxLength, pattern: AMQP_ROUTING_KEY_PATTERN },
    broker: brokerName,
    headers: targetHeaders,
  },
} as const;

export const queueTargetSchema = {
  type: "object",
  additionalProperties: false,
  required: ["type", "pool"],
  properties: {
    type: { type: "string", const: "queue" },
    pool: poolString,
  },
} as const;

export const TARGET_TYPES = ["http", "queue", "nats", "amqp"] as const;

/** OpenAPI-style discriminator: ajv picks the branch by `type`, so errors name the right fields. */
export const targetSchema = {
  type: "object",
  discriminator: { propertyName: "type" },
  oneOf: [httpTargetSchema, queueTargetSchema, natsTargetSchema, amqpTargetSchema],
} as const;

export const dstSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    gap: { type: "string", enum: ["run_at_transition", "skip"] },
    overlap: { type: "string", enum: ["first", "both"] },
  },
} as const;

/** The union of the three schedule variants; validate.ts enforces "exactly one of". */
export const scheduleSchema = {
  type: "object",
  description:
    "Exactly one of runAt, delaySeconds or cron. tz, jitterSeconds, misfire, misfireThresholdSeconds, overlap, startAt, endAt and dst are allowed only with cron.",
  additionalProperties: false,
  properties: {
    runAt: { ...dateTime, description: "RFC 3339; a time in the past runs at once." },
    delaySeconds: { type: "number", minimum: 0, maximum: LIMITS.delaySecondsMax, description: "0 = now." },
    cron: { type: "string", minLength: 1, maxLength: LIMITS.cronMaxLength },
    tz: { type: "string", minLength: 1, maxLength: LIMITS.tzMaxLength, default: "UTC", description: "IANA zone." },
    jitterSeconds: { type: "number", minimum: 0, maximum: LIMITS.jitterSecondsMax, default: 0 },
    misfire: { type: "string", enum: ["run_once", "skip", "catch_up"], default: "run_once" },
    misfireThresholdSeconds: {
      type: "integer",
      minimum: 1,
      maximum: LIMITS.misfireThresholdSecondsMax,
      description: "An occurrence dispatched more than this after its time is a misfire; default: the server's (--misfire-threshold, 60 s).",
    },
    overlap: { type: "string", enum: ["allow", "forbid", "replace"], default: "allow" },
    startAt: dateTime,
    endAt: dateTime,
    dst: dstSchema,
  },
} as const;

export const retrySchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    maxAttempts: { type: "integer", minimum: 1, maximum: LIMITS.maxAttemptsMax, default: 3 },
    backoffSeconds: { type: "number", minimum: 0, maximum: LIMITS.backoffSecondsMax, default: 10 },
    maxBackoffSeconds: {
      type: "number",
      minimum: 0,
      maximum: LIMITS.maxBackoffSecondsMax,
      default: 3600,
      description: "Must be >= backoffSeconds.",
    },
    deadlineSeconds: {
      type: "number",
      minimum: 0.001,
      maximum: LIMITS.retryDeadlineSecondsMax,
      description: "No retry starts later than this many seconds after the occurrence's scheduled time; then the execution is dead.",
    },
  },
} as const;

const jobSpecProperties = {
  name: { type: "string", minLength: 1, maxLength: LIMITS.nameMaxLength },
  target: targetSchema,
  payload: anyJson,
  schedule: scheduleSchema,
  retry: retrySchema,
  timeoutSeconds: { type: "number", minimum: 1, maximum: LIMITS.timeoutSecondsMax, default: 300 },
  priority: { type: "integer", minimum: LIMITS.priorityMin, maximum: LIMITS.priorityMax, default: 0 },
  mode: {
    type: "string",
    enum: ["live", "dry_run"],
    default: "live",
    description: "dry_run (recurring jobs only): each occurrence is recorded in the run ledger as would_run, never dispatched.",
  },
} as const;

const idempotencyKey = { type: "string", minLength: 1, maxLength: LIMITS.idempotencyKeyMaxLength } as const;

/** POST /v1/jobs */
export const createJobBody = {
  type: "object",
  additionalProperties: false,
  required: ["name", "target", "schedule"],
  properties: jobSpecProperties,
} as const;

/** One element of POST /v1/jobs:batch. */
export const batchItemSchema = {
  type: "object",
  additionalProperties: false,
  required: ["name", "target", "schedule"],
  properties: { ...jobSpecProperties, idempotencyKey },
} as const;

/** POST /v1/jobs:batch, as documented. The server checks batchCreateEnvelope first, and each job on its own (per-item errors). */
export const batchCreateBody = {
  type: "object",
  additionalProperties: false,
  required: ["jobs"],
  properties: {
    jobs: { type: "array", minItems: 1, maxItems: LIMITS.batchMax, items: batchItemSchema },
    atomic: { type: "boolean", default: false, description: "All or nothing: when any job is invalid, none is created (400, details.errors)." },
  },
} as const;

/** POST /v1/jobs:batch without its jobs' schema: what must hold before any job is looked at. */
export const batchCreateEnvelope = {
  type: "object",
  additionalProperties: false,
  required: ["jobs"],
  properties: { jobs: { type: "array", minItems: 1, maxItems: LIMITS.batchMax }, atomic: { type: "boolean" } },
} as const;

/**
 * PATCH /v1/jobs/{jobId}: every field of a job optional, with the same rules
 * as create; `version` makes it a compare-and-set (like If-Match).
 * validate.ts requires at least one field besides `version` and applies the
 * schedule and retry rules of create to the fields given.
 */
export const updateJobBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    ...jobSpecProperties,
    version: {
      type: "integer",
      minimum: 1,
      maximum: LIMITS.versionMax,
      description: "The version the change applies to; another current version answers 409 VERSION_CONFLICT.",
    },
  },
} as const;

/** Headers of PATCH /v1/jobs/{jobId} (other headers pass); validate.ts parses If-Match. */
export const updateJobHeaders = {
  type: "object",
  properties: {
    "if-match": {
      type: "string",
      minLength: 1,
      maxLength: LIMITS.ifMatchMaxLength,
      description: 'The job version the change applies to: 7, "7" or W/"7" (the ETag of GET); * for any.',
    },
  },
} as const;

/** POST /v1/jobs/{jobId}:backfill; validate.ts checks from < to. */
export const backfillBody = {
  type: "object",
  additionalProperties: false,
  required: ["from", "to"],
  properties: {
    from: { ...dateTime, description: "Start of the window (exclusive)." },
    to: { ...dateTime, description: "End of the window (inclusive); after from." },
  },
} as const;

/**
 * The Prefer request header (RFC 7240) of the creates. Any text is accepted:
 * a preference the server does not understand, or cannot parse, is ignored
 * (never an error). Its maxLength is the whole head's limit, which Node enforces
 * first, so it bounds what the server holds without ever refusing a Prefer.
 * `return=minimal` is honoured (@duetime/sdk's prefer.ts reads it).
 */
const preferHeader = {
  type: "string",
  maxLength: LIMITS.requestHeadMaxBytes,
  description:
    "RFC 7240. return=minimal: each created job answers only its jobId and nextRunAt (answered with Preference-Applied: return=minimal); anything else is ignored.",
} as const;

/** Headers of POST /v1/jobs (other headers pass). */
export const createJobHeaders = {
  type: "object",
  properties: { "idempotency-key": idempotencyKey, prefer: preferHeader },
} as const;

/** Headers of POST /v1/jobs:batch (other headers pass). */
export const batchCreateHeaders = {
  type: "object",
  properties: { prefer: preferHeader },
} as const;

/** DELETE and the action POSTs: no body, or `{}`. */
export const emptyBody = {
  type: "object",
  additionalProperties: false,
  properties: {},
} as const;

/** POST /v1/keys */
export const createKeyBody = {
  type: "object",
  additionalProperties: false,
  required: ["role"],
  properties: {
    tenantId: {
      ...keyTenantString,
      description:
        "The key's tenant; default the caller's; * for every tenant (worker or admin only). Another tenant needs a bootstrap (--api-keys) or platform admin key.",
    },
    role: roleString,
    name: { type: "string", minLength: 1, maxLength: LIMITS.keyNameMaxLength, description: "A label for people; not secret." },
  },
} as const;

export const errorRecordSchema = {
  type: "object",
  description: "Free-form: extra keys are kept.",
  additionalProperties: true,
  required: ["message"],
  properties: {
    message: { type: "string", maxLength: LIMITS.errorMessageMaxLength },
    class: { type: "string", enum: ["transient", "permanent", "throttled"], default: "transient" },
    retryAfterSeconds: { type: "number", minimum: 0, maximum: LIMITS.retryAfterSecondsMax },
  },
} as const;

export const completeItemSchema = {
  type: "object",
  additionalProperties: false,
  required: ["executionId", "attempt"],
  properties: { executionId: idString, attempt, leaseToken, result: anyJson },
} as const;

export const failItemSchema = {
  type: "object",
  additionalProperties: false,
  required: ["executionId", "attempt", "error"],
  properties: { executionId: idString, attempt, leaseToken, error: errorRecordSchema },
} as const;

/** POST /v1/pools/{pool}/lease */
export const leaseBody = {
  type: "object",
  additionalProperties: false,
  required: ["workerId"],
  properties: {
    workerId: { type: "string", minLength: 1, maxLength: LIMITS.workerIdMaxLength },
    max: { type: "integer", minimum: 1, maximum: LIMITS.leaseMaxMax, default: 1 },
    leaseSeconds: { type: "number", minimum: 1, maximum: LIMITS.leaseSecondsMax, default: 30 },
    waitSeconds: { type: "number", minimum: 0, maximum: LIMITS.waitSecondsMax, default: 0 },
    complete: { type: "array", maxItems: LIMITS.batchMax, items: completeItemSchema },
    fail: { type: "array", maxItems: LIMITS.batchMax, items: failItemSchema },
  },
} as const;

/** POST /v1/executions/{executionId}/heartbeat */
export const heartbeatBody = {
  type: "object",
  additionalProperties: false,
  required: ["attempt"],
  properties: {
    attempt,
    leaseToken,
    leaseSeconds: { type: "number", minimum: 1, maximum: LIMITS.leaseSecondsMax },
  },
} as const;

/** POST /v1/executions/{executionId}/complete */
export const completeBody = {
  type: "object",
  additionalProperties: false,
  required: ["attempt"],
  properties: { attempt, leaseToken, result: anyJson },
} as const;

/** POST /v1/executions/{executionId}/fail */
export const failBody = {
  type: "object",
  additionalProperties: false,
  required: ["attempt", "error"],
  properties: { attempt, leaseToken, error: errorRecordSchema },
} as const;

/** POST /v1/executions:complete */
export const completeManyBody = {
  type: "object",
  additionalProperties: false,
  required: ["items"],
  properties: { items: { type: "array", minItems: 1, maxItems: LIMITS.batchMax, items: completeItemSchema } },
} as const;

/** POST /v1/executions:fail */
export const failManyBody = {
  type: "object",
  additionalProperties: false,
  required: ["items"],
  properties: { items: { type: "array", minItems: 1, maxItems: LIMITS.batchMax, items: failItemSchema } },
} as const;

// ---------------------------------------------------------------- querystrings and params

/** GET /v1/jobs */
export const listJobsQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    state: { type: "string", enum: ["SCHEDULED", "PAUSED", "CANCELLED", "COMPLETED", "DEAD"] },
    name: { type: "string", minLength: 1, maxLength: LIMITS.nameMaxLength },
    pool: { ...poolString, description: "Jobs whose target is this worker pool." },
    kind: { type: "string", enum: ["once", "cron"] },
    limit: limitQuery,
    cursor: cursorQuery,
  },
} as const;

/** Any other paginated list. */
export const pageQuery = {
  type: "object",
  additionalProperties: false,
  properties: { limit: limitQuery, cursor: cursorQuery },
} as const;

/** GET /v1/schedules/preview */
export const previewQuery = {
  type: "object",
  additionalProperties: false,
  required: ["cron"],
  properties: {
    cron: { type: "string", minLength: 1, maxLength: LIMITS.cronMaxLength },
    tz: { type: "string", minLength: 1, maxLength: LIMITS.tzMaxLength, default: "UTC" },
    from: dateTime,
    count: { type: "integer", minimum: 1, maximum: LIMITS.previewCountMax, default: 10 },
  },
} as const;

/** GET /v1/jobs/{jobId}/occurrences; validate.ts checks from < to. */
export const occurrencesQuery = {
  type: "object",
  additionalProperties: false,
  required: ["from", "to"],
  properties: {
    from: { ...dateTime, description: "Start of the window." },
    to: { ...dateTime, description: "End of the window; after from." },
  },
} as const;

/** GET /v1/keys */
export const listKeysQuery = {
  type: "object",
  additionalProperties: false,
  properties: { limit: limitQuery, cursor: cursorQuery, tenantId: keyTenantString },
} as const;

/** GET /v1/executions: possibleDuplicate=true is the one listing so far. */
export const executionsQuery = {
  type: "object",
  additionalProperties: false,
  required: ["possibleDuplicate"],
  properties: {
    possibleDuplicate: { type: "string", enum: ["true"], description: "true: executions where an attempt ran on after losing its lease" },
    limit: limitQuery,
    cursor: cursorQuery,
  },
} as const;

/** GET /v1/stats/history */
export const statsHistoryQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    since: { ...dateTime, description: "The first minute (default an hour ago; at most a day ago)." },
    by: { type: "string", enum: ["pool", "tenant"], default: "pool" },
  },
} as const;

/** An empty querystring (routes without query parameters still reject unknown ones). */
export const noQuery = { type: "object", additionalProperties: false, properties: {} } as const;

export const jobIdParams = {
  type: "object",
  additionalProperties: false,
  required: ["jobId"],
  properties: { jobId: idString },
} as const;

export const executionIdParams = {
  type: "object",
  additionalProperties: false,
  required: ["executionId"],
  properties: { executionId: idString },
} as const;

export const keyIdParams = {
  type: "object",
  additionalProperties: false,
  required: ["keyId"],
  properties: { keyId: idString },
} as const;

export const poolParams = {
  type: "object",
  additionalProperties: false,
  required: ["pool"],
  properties: { pool: poolString },
} as const;

/** POST /v1/dead-letters:replay: exactly one of executionIds and filter (checked by the service, engine/dead-letter-replays.ts). */
export const replayDeadLettersBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    executionIds: {
      type: "array",
      minItems: 1,
      maxItems: LIMITS.replayIdsMax,
      items: idString,
      description: "The dead letters to replay, in this order.",
    },
    filter: {
      type: "object",
      additionalProperties: false,
      description: "Dead letters of the tenant matching every field given ({}: all), dead by the replay's creation at the latest.",
      properties: {
        pool: poolString,
        errorClass: { type: "string", enum: ["transient", "permanent", "throttled"], description: "The class of the last error." },
        deadAfter: dateTime,
        deadBefore: dateTime,
      },
    },
    ratePerSecond: {
      type: "number",
      minimum: LIMITS.replayRateMin,
      maximum: LIMITS.replayRateMax,
      default: 10,
      description: "Dead letters made ready per second, each at its own slot.",
    },
    tenantId: { ...tenantString, description: "Whose dead letters: default the caller's tenant; another needs an admin for every tenant (*)." },
  },
} as const;

export const replayIdParams = {
  type: "object",
  additionalProperties: false,
  required: ["replayId"],
  properties: { replayId: idString },
} as const;

/** GET /v1/blobs/{blobId}: a malformed id answers 404 like an unknown one. */
export const blobIdParams = {
  type: "object",
  additionalProperties: false,
  required: ["blobId"],
  properties: { blobId: idString },
} as const;

/** Every request schema by id: validate(id, value, part) looks them up here. */
/** GET and PUT /v1/tenants/{tenantId}/limits: a tenant, never "*" (every tenant). */
export const tenantIdParams = {
  type: "object",
  additionalProperties: false,
  required: ["tenantId"],
  properties: { tenantId: tenantString },
} as const;

const quotaInteger = (max: number, description: string) => ({ type: ["integer", "null"], minimum: 1, maximum: max, description }) as const;

export const tenantLimitsBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    weight: {
      type: "number",
      minimum: 0.01,
      maximum: 1000,
      description: "Share of a pool leased across tenants, against the others' weights (default 1).",
    },
    maxPendingJobs: quotaInteger(1_000_000_000, "Jobs not yet ended it may hold; null: no limit (default)."),
    createRatePerSecond: {
      type: ["number", "null"],
      minimum: 0.01,
      maximum: 1_000_000,
      description: "Jobs it may create per second: a token bucket holding one second's worth (at least one job); null: no limit (default).",
    },
    dispatchRatePerSecond: {
      type: ["number", "null"],
      minimum: 0.01,
      maximum: 1_000_000,
      description:
        "Its attempts started per second, every pool together: the excess waits its turn, in order, and the wait is recorded on the attempt (throttledMs); null: no limit (default).",
    },
    maxLeasedAttempts: quotaInteger(1_000_000, "Attempts it may have leased at once; null: no limit (default)."),
    maxPayloadBytes: quotaInteger(104_857_600, "The largest payload of its jobs, in bytes of JSON; null: only the server's body limit (default)."),
  },
} as const;

const nullableNumber = { type: ["number", "null"] } as const;

export const tenantLimitsResponse = {
  type: "object",
  required: ["tenantId", "weight", "maxPendingJobs", "createRatePerSecond", "dispatchRatePerSecond", "maxLeasedAttempts", "maxPayloadBytes"],
  properties: {
    tenantId: { type: "string" },
    weight: { type: "number" },
    maxPendingJobs: nullableNumber,
    createRatePerSecond: nullableNumber,
    dispatchRatePerSecond: nullableNumber,
    maxLeasedAttempts: nullableNumber,
    maxPayloadBytes: nullableNumber,
  },
} as const;

export const REQUEST_SCHEMAS = {
  createJobBody,
  createJobHeaders,
  batchCreateHeaders,
  updateJobBody,
  updateJobHeaders,
  backfillBody,
  batchCreateBody,
  batchCreateEnvelope,
  batchItem: batchItemSchema,
  emptyBody,
  leaseBody,
  heartbeatBody,
  completeBody,
  failBody,
  completeManyBody,
  failManyBody,
  listJobsQuery,
  pageQuery,
  previewQuery,
  occurrencesQuery,
  noQuery,
  jobIdParams,
  executionIdParams,
  poolParams,
  createKeyBody,
  listKeysQuery,
  keyIdParams,
  tenantIdParams,
  tenantLimitsBody,
  replayDeadLettersBody,
  replayIdParams,
  blobIdParams,
  statsHistoryQuery,
  executionsQuery,
} as const satisfies Record<string, JsonSchema>;

export type SchemaId = keyof typeof REQUEST_SCHEMAS;

// ---------------------------------------------------------------- responses (documentation)
//
// These describe responses for OpenAPI only. The server serializes with
// JSON.stringify, never through these schemas, so a field the engine adds is
// never stripped and free-form values (payload, result, error) pass as they
// are. They are left open (no additionalProperties: false): the contract may
// grow fields, and clients must ignore the ones they do not know.

const nullableDateTime = { type: ["string", "null"], format: "date-time" } as const;
const recordedError = {
  type: ["object", "null"],
  additionalProperties: true,
  properties: { message: { type: "string" }, class: errorRecordSchema.properties.class },
} as const;

export const errorEnvelopeSchema = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: { type: "string" },
        message: { type: "string" },
        details: { type: "object", additionalProperties: true, properties: { field: { type: "string" } } },
      },
    },
  },
} as const;

/** Warnings on a create that succeeded (engine/spikes.ts). */
const dueWarnings = {
  type: "array",
  description: "The tenant's work piles up in one second or minute: spread it (Duetime-Warning says the same).",
  items: {
    type: "object",
    required: ["code", "message", "window", "at", "count", "suggestedJitterSeconds"],
    properties: {
      code: { type: "string", enum: ["DUE_SPIKE"] },
      message: { type: "string" },
      window: { type: "string", enum: ["second", "minute"] },
      at: { type: "string" },
      count: { type: "integer" },
      suggestedJitterSeconds: { type: "number" },
    },
  },
} as const;

export const jobResponse = {
  type: "object",
  required: ["jobId", "name", "state", "target", "schedule", "retry", "timeoutSeconds", "priority", "nextRunAt", "version", "createdAt", "updatedAt"],
  properties: {
    jobId: { type: "string" },
    name: { type: "string" },
    state: listJobsQuery.properties.state,
    target: { type: "object", additionalProperties: true, required: ["type"], properties: { type: { type: "string", enum: TARGET_TYPES } } },
    payload: anyJson,
    payloadRef: payloadRefSchema,
    schedule: { type: "object", additionalProperties: true },
    retry: {
      type: "object",
      required: ["maxAttempts", "backoffSeconds", "maxBackoffSeconds"],
      properties: retrySchema.properties,
    },
    timeoutSeconds: { type: "number" },
    priority: { type: "integer" },
    nextRunAt: nullableDateTime,
    nextRunAtLocal: {
      type: ["string", "null"],
      description: 'A cron job\'s nextRunAt as wall time in its zone: "YYYY-MM-DDTHH:mm:ss±hh:mm[Zone/Name]".',
    },
    version: { type: "integer" },
    createdAt: dateTime,
    updatedAt: dateTime,
    created: { type: "boolean", description: "false when an Idempotency-Key matched an earlier request." },
    warnings: dueWarnings,
  },
} as const;

/** POST /v1/jobs with Prefer: return=minimal: the job's id and next run time only. */
export const jobMinimalResponse = {
  type: "object",
  description: "{jobId, nextRunAt} only.",
  additionalProperties: false,
  required: ["jobId", "nextRunAt"],
  properties: { jobId: { type: "string" }, nextRunAt: nullableDateTime },
} as const;

/** The envelope of every paginated list: {"items": [...], "nextCursor": "..." | null}. */
function pageOf<const Item>(item: Item) {
  return {
    type: "object",
    required: ["items", "nextCursor"],
    properties: { items: { type: "array", items: item }, nextCursor: { type: ["string", "null"] } },
  } as const;
}

export const jobPageResponse = pageOf(jobResponse);

export const executionItemResponse = {
  type: "object",
  required: ["executionId", "jobId", "scheduledFor", "attempt", "state"],
  properties: {
    executionId: { type: "string" },
    jobId: { type: "string" },
    scheduledFor: dateTime,
    attempt: { type: "integer", minimum: 0 },
    state: {
      type: "string",
      enum: ["PENDING", "PAUSED", "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED", "SKIPPED", "DEAD"],
    },
    dispatchedAt: nullableDateTime,
    dispatchedBy: { type: ["string", "null"] },
    startedAt: nullableDateTime,
    finishedAt: nullableDateTime,
    error: recordedError,
    workerId: { type: ["string", "null"] },
    throttledMs: {
      type: "integer",
      minimum: 0,
      description: "How long the tenant's dispatchRatePerSecond held this attempt back (absent: not at all).",
    },
  },
} as const;

export const executionPageResponse = pageOf(executionItemResponse);

export const deadLetterPageResponse = pageOf({
  type: "object",
  required: ["executionId", "jobId", "name", "scheduledFor", "attempts", "deadAt"],
  properties: {
    executionId: { type: "string" },
    jobId: { type: "string" },
    name: { type: "string" },
    scheduledFor: dateTime,
    attempts: { type: "integer" },
    lastError: recordedError,
    deadAt: dateTime,
    payload: anyJson,
    payloadRef: payloadRefSchema,
  },
});

export const deadLetterReplayResponse = {
  type: "object",
  required: [
    "replayId",
    "tenantId",
    "state",
    "selection",
    "ratePerSecond",
    "total",
    "replayed",
    "skipped",
    "actor",
    "createdAt",
    "updatedAt",
    "finishedAt",
  ],
  properties: {
    replayId: { type: "string" },
    tenantId: { type: "string" },
    state: { type: "string", enum: ["RUNNING", "DONE", "CANCELLED"] },
    selection: {
      type: "object",
      description: "{executionIds: [...]} or {filter: {pool?, errorClass?, deadAfter?, deadBefore}}",
      properties: {
        executionIds: { type: "array", items: { type: "string" } },
        filter: {
          type: "object",
          properties: {
            pool: { type: "string" },
            errorClass: { type: "string" },
            deadAfter: dateTime,
            deadBefore: dateTime,
          },
        },
      },
    },
    ratePerSecond: { type: "number" },
    total: { type: ["integer", "null"] },
    replayed: { type: "integer" },
    skipped: { type: "integer" },
    actor: { type: "string" },
    createdAt: dateTime,
    updatedAt: dateTime,
    finishedAt: nullableDateTime,
  },
} as const;

export const deadLetterReplayPageResponse = pageOf(deadLetterReplayResponse);

export const possibleDuplicatePageResponse = pageOf({
  type: "object",
  required: ["executionId", "jobId", "name", "pool", "scheduledFor", "state", "attempt", "possibleDuplicate"],
  properties: {
    executionId: { type: "string" },
    jobId: { type: "string" },
    name: { type: "string" },
    pool: { type: "string" },
    scheduledFor: dateTime,
    state: { type: "string" },
    attempt: { type: "integer" },
    possibleDuplicate: {
      type: "object",
      required: ["attempt", "reason", "at"],
      properties: { attempt: { type: "integer" }, reason: { type: "string", enum: ["lease_lost", "expired_then_succeeded"] }, at: dateTime },
    },
  },
});

export const batchCreateResponse = {
  type: "object",
  required: ["items"],
  properties: {
    items: {
      type: "array",
      description: "In request order: {jobId, nextRunAt, created} or {error}.",
      items: {
        type: "object",
        properties: {
          jobId: { type: "string" },
          nextRunAt: nullableDateTime,
          created: { type: "boolean" },
          warnings: dueWarnings,
          error: errorEnvelopeSchema.properties.error,
        },
      },
    },
  },
} as const;

/** POST /v1/jobs:batch with Prefer: return=minimal: a created job's id and next run time; a failed one's error as in the full form. */
export const batchCreateMinimalResponse = {
  type: "object",
  description: "in request order, {jobId, nextRunAt} or {error}.",
  required: ["items"],
  properties: {
    items: {
      type: "array",
      items: {
        anyOf: [
          {
            type: "object",
            additionalProperties: false,
            required: ["jobId", "nextRunAt"],
            properties: { jobId: { type: "string" }, nextRunAt: nullableDateTime },
          },
          { type: "object", additionalProperties: false, required: ["error"], properties: { error: errorEnvelopeSchema.properties.error } },
        ],
      },
    },
  },
} as const;

const ackItem = {
  type: "object",
  required: ["executionId", "attempt", "status"],
  properties: {
    executionId: { type: "string" },
    attempt: { type: "integer" },
    status: { type: "integer", enum: [200, 400, 404, 409] },
    state: { type: "string" },
    retryAt: dateTime,
    dead: { type: "boolean" },
    error: errorEnvelopeSchema.properties.error,
  },
} as const;

export const ackListResponse = {
  type: "object",
  required: ["items"],
  properties: { items: { type: "array", items: ackItem } },
} as const;

export const leaseResponse = {
  type: "object",
  required: ["items"],
  properties: {
    items: {
      type: "array",
      items: {
        type: "object",
        required: ["executionId", "tenantId", "jobId", "attempt", "scheduledFor", "leaseUntil"],
        properties: {
          executionId: { type: "string" },
          tenantId: { type: "string" },
          jobId: { type: "string" },
          name: { type: "string" },
          attempt: { type: "integer" },
          leaseToken: { type: "string", description: "With the attempt, the fencing token: send it back on heartbeat, complete and fail." },
          payload: anyJson,
          payloadRef: payloadRefSchema,
          scheduledFor: dateTime,
          leaseUntil: dateTime,
          timeoutSeconds: { type: "number" },
          traceparent: { type: "string" },
        },
      },
    },
    acks: { type: "array", items: ackItem },
  },
} as const;

export const heartbeatResponse = {
  type: "object",
  required: ["leaseUntil", "cancelRequested"],
  properties: { leaseUntil: dateTime, cancelRequested: { type: "boolean" } },
} as const;

export const completeResponse = {
  type: "object",
  required: ["state"],
  properties: { state: { type: "string", enum: ["SUCCEEDED"] } },
} as const;

export const failResponse = {
  type: "object",
  required: ["state"],
  properties: {
    state: { type: "string", enum: ["FAILED", "DEAD"] },
    retryAt: dateTime,
    dead: { type: "boolean" },
  },
} as const;

export const poolStatsResponse = {
  type: "object",
  required: ["pending", "queued", "running"],
  properties: {
    pending: { type: "integer", description: "Not yet due." },
    queued: { type: "integer" },
    running: { type: "integer" },
  },
} as const;

export const statsResponse = {
  type: "object",
  required: ["pools", "tenants"],
  properties: {
    pools: { type: "object", additionalProperties: poolStatsResponse },
    tenants: { type: "object", additionalProperties: poolStatsResponse },
  },
} as const;

const countsPerMinute = { type: "array", items: { type: "integer" } } as const;
const sampledPerMinute = { type: "array", items: { type: ["integer", "null"] } } as const;
const lagPerMinute = { type: "array", items: { type: ["number", "null"] } } as const;

export const statsHistoryResponse = {
  type: "object",
  required: ["by", "minutes", "series"],
  properties: {
    by: { type: "string", enum: ["pool", "tenant"] },
    minutes: { type: "array", items: dateTime, description: "Each minute's start, oldest first." },
    series: {
      type: "object",
      description: "Per pool or tenant: arrays aligned with minutes.",
      additionalProperties: {
        type: "object",
        required: ["started", "succeeded", "failed", "dead", "startLagMs", "pending", "queued", "running"],
        properties: {
          started: countsPerMinute,
          succeeded: countsPerMinute,
          failed: countsPerMinute,
          dead: countsPerMinute,
          startLagMs: {
            type: "object",
            required: ["p50", "p90", "p99"],
            properties: { p50: lagPerMinute, p90: lagPerMinute, p99: lagPerMinute },
          },
          pending: sampledPerMinute,
          queued: sampledPerMinute,
          running: sampledPerMinute,
        },
      },
    },
  },
} as const;

export const previewResponse = {
  type: "object",
  required: ["times"],
  properties: {
    times: { type: "array", items: dateTime },
    local: { type: "array", description: "Each time as wall time in the zone, YYYY-MM-DDTHH:mm:ss.", items: { type: "string" } },
    dst: {
      type: "array",
      description: '"gap": moved to a spring-forward transition; "overlap": its wall time occurs twice; else null.',
      items: { type: ["string", "null"], enum: ["gap", "overlap", null] },
    },
  },
} as const;

export const backfillResponse = {
  type: "object",
  required: ["items"],
  properties: {
    items: {
      type: "array",
      items: {
        type: "object",
        required: ["scheduledFor", "executionId", "created"],
        properties: {
          scheduledFor: dateTime,
          executionId: { type: "string" },
          created: { type: "boolean", description: "false when the occurrence existed already (a repeated backfill adds nothing)." },
          readyAt: nullableDateTime,
        },
      },
    },
  },
} as const;

export const occurrencesResponse = {
  type: "object",
  required: ["items"],
  properties: {
    items: {
      type: "array",
      items: {
        type: "object",
        required: ["scheduledFor", "local", "status"],
        properties: {
          scheduledFor: dateTime,
          local: { type: "string", description: "Wall time in the job's zone, YYYY-MM-DDTHH:mm:ss." },
          status: { type: "string", enum: ["dispatched", "skipped", "due", "not_run", "unknown"] },
          reason: {
            type: "string",
            enum: ["misfire", "overlap", "paused", "cancelled", "before_creation", "outside_window", "schedule_changed", "expired"],
          },
          dst: { type: "string", enum: ["gap", "overlap"] },
          executionId: { type: "string" },
          executionState: executionItemResponse.properties.state,
        },
      },
    },
  },
} as const;

export const auditPageResponse = pageOf({
  type: "object",
  required: ["at", "actor", "action", "subject"],
  properties: {
    at: dateTime,
    actor: { type: "string" },
    action: { type: "string" },
    subject: { type: "string" },
    details: anyJson,
  },
});

const apiKeyProperties = {
  keyId: { type: "string" },
  tenantId: { type: "string" },
  role: roleString,
  name: { type: ["string", "null"] },
  createdAt: dateTime,
} as const;

/** GET /v1/keys items: never the secret. */
export const apiKeyResponse = {
  type: "object",
  required: ["keyId", "tenantId", "role", "name", "createdAt", "revokedAt"],
  properties: { ...apiKeyProperties, revokedAt: nullableDateTime },
} as const;

/** POST /v1/keys: the secret `key`, shown this once. */
export const createdKeyResponse = {
  type: "object",
  required: ["keyId", "key", "tenantId", "role", "name", "createdAt"],
  properties: {
    ...apiKeyProperties,
    key: { type: "string", description: "The secret, shown only in this answer: send it as Authorization: Bearer <key>." },
  },
} as const;

export const keyPageResponse = pageOf(apiKeyResponse);

export const clusterResponse = {
  type: "object",
  required: ["storeTime", "nodes", "shards"],
  properties: {
    storeTime: dateTime,
    nodes: {
      type: "array",
      items: {
        type: "object",
        required: ["nodeId", "address", "shards", "lastHeartbeatAt", "heartbeatAgeSeconds"],
        properties: {
          nodeId: { type: "string" },
          address: { type: ["string", "null"] },
          shards: { type: "array", items: { type: "integer" } },
          lastHeartbeatAt: dateTime,
          heartbeatAgeSeconds: { type: "number" },
        },
      },
    },
    shards: {
      type: "array",
      items: {
        type: "object",
        required: ["shard", "owner", "epoch", "leaseUntil", "leaseRemainingSeconds"],
        properties: {
          shard: { type: "integer" },
          owner: { type: ["string", "null"] },
          epoch: { type: "integer" },
          leaseUntil: dateTime,
          leaseRemainingSeconds: { type: "number" },
        },
      },
    },
  },
} as const;

/** GET /v1/secrets/signing: the caller's tenant's callback signing secrets, newest first. */
export const signingSecretsResponse = {
  type: "object",
  required: ["tenantId", "secrets", "source"],
  properties: {
    tenantId: { type: "string" },
    secrets: { type: "array", items: { type: "string" }, description: "Newest first; every one signs each call (Duetime-Signature)." },
    source: {
      type: "string",
      enum: ["config", "store"],
      description: "config: --signing-secret / DUETIME_SIGNING_SECRET; store: generated once and kept in the store.",
    },
  },
} as const;

/** GET /v1/targets: the origins HTTP targets call on this node (extra facts beside the required ones are kept). */
export const targetsResponse = {
  type: "object",
  required: ["items"],
  properties: {
    items: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: true,
        required: ["origin", "breaker", "inFlight"],
        properties: {
          origin: { type: "string" },
          breaker: { type: "string", enum: ["closed", "open", "half_open"] },
          inFlight: { type: "integer" },
          waiting: { type: "integer" },
          consecutiveFailures: { type: "integer" },
          openUntil: { type: ["string", "null"], format: "date-time" },
          opened: { type: "integer" },
          lastOpenedAt: { type: ["string", "null"], format: "date-time" },
          limits: {
            type: "object",
            properties: { concurrency: { type: "integer" }, ratePerSecond: { type: ["number", "null"] } },
          },
          calls: { type: "integer" },
          failures: { type: "integer" },
          lastStatus: { type: ["integer", "null"] },
          lastError: { type: ["string", "null"] },
          lastCallAt: { type: ["string", "null"], format: "date-time" },
        },
      },
    },
  },
} as const;

export const whoamiResponse = {
  type: "object",
  required: ["role", "tenantId", "keyId"],
  properties: {
    role: { type: "string", enum: ["admin", "client", "worker"] },
    tenantId: { type: "string", description: '"*" for a platform key.' },
    keyId: {
      type: ["string", "null"],
      description: 'A stored key\'s id ("ak_…"), a configured key\'s "key_" + 12 hex digits of its SHA-256; null without keys (development mode).',
    },
  },
} as const;

/** GET /v1/blobs/{blobId}: the payload itself, any JSON. */
export const payloadBlobResponse = { description: "The payload, as it was created (any JSON)." } as const;

export const statusResponse = {
  type: "object",
  required: ["status"],
  properties: { status: { type: "string" } },
} as const;

/** The answers of the operation table (@duetime/sdk/contract's OPERATIONS) by the names it gives them. */
export const RESPONSE_SCHEMAS = {
  job: jobResponse,
  jobMinimal: jobMinimalResponse,
  jobPage: jobPageResponse,
  batchCreate: batchCreateResponse,
  batchCreateMinimal: batchCreateMinimalResponse,
  executionItem: executionItemResponse,
  executionPage: executionPageResponse,
  occurrences: occurrencesResponse,
  backfill: backfillResponse,
  lease: leaseResponse,
  heartbeat: heartbeatResponse,
  complete: completeResponse,
  fail: failResponse,
  ackList: ackListResponse,
  poolStats: poolStatsResponse,
  stats: statsResponse,
  statsHistory: statsHistoryResponse,
  deadLetterPage: deadLetterPageResponse,
  auditPage: auditPageResponse,
  cluster: clusterResponse,
  targets: targetsResponse,
  signingSecrets: signingSecretsResponse,
  createdKey: createdKeyResponse,
  keyPage: keyPageResponse,
  preview: previewResponse,
  tenantLimits: tenantLimitsResponse,
  deadLetterReplay: deadLetterReplayResponse,
  deadLetterReplayPage: deadLetterReplayPageResponse,
  possibleDuplicatePage: possibleDuplicatePageResponse,
  whoami: whoamiResponse,
  payloadBlob: payloadBlobResponse,
} as const satisfies Record<ResponseSchemaName, JsonSchema>;

// Every request schema the operation table names exists (a compile error names the one that does not).
REQUEST_SCHEMAS satisfies Record<RequestSchemaName, JsonSchema>;
