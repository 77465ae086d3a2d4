// The wire types of the HTTP API (docs/api.md), shared by the server, the
// engine's service layer, the SDK client and the embedded client. Times are
// RFC 3339 strings here; the engine works in epoch milliseconds internally.

export type JobState = "SCHEDULED" | "PAUSED" | "CANCELLED" | "COMPLETED" | "DEAD";
export const JOB_STATES: readonly JobState[] = ["SCHEDULED", "PAUSED", "CANCELLED", "COMPLETED", "DEAD"];

export type AttemptState = "PENDING" | "PAUSED" | "QUEUED" | "RUNNING" | "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "CANCELLED" | "SKIPPED" | "DEAD";

export type Misfire = "run_once" | "skip" | "catch_up";
export type Overlap = "allow" | "forbid" | "replace";
export type ErrorClass = "transient" | "permanent" | "throttled";
export type Role = "admin" | "client" | "worker";

/**
 * The tenant of a platform key: a worker or admin key for tenant "*" acts
 * for every tenant (a worker fleet shared by many tenants leases a pool's
 * work across them, fairly). No tenant can be named "*".
 */
export const ALL_TENANTS = "*";

export interface HttpTarget {
  type: "http";
  url: string;
  method?: string;
  headers?: Record<string, string>;
}
export interface QueueTarget {
  type: "queue";
  pool: string;
}
/** Published to a JetStream subject by the server's outbox relay (docs/brokers/nats.md). */
export interface NatsTarget {
  type: "nats";
  subject: string;
  /** The server's broker connection (--broker NAME=nats://…); default "nats". */
  broker?: string;
  headers?: Record<string, string>;
}
/** Published to a RabbitMQ exchange by the server's outbox relay (docs/brokers/rabbitmq.md). */
export interface AmqpTarget {
  type: "amqp";
  /** "" is the default exchange, which routes to the queue named by routingKey. */
  exchange: string;
  routingKey: string;
  /** The server's broker connection (--broker NAME=amqp://…); default "amqp". */
  broker?: string;
  headers?: Record<string, string>;
}
export type BrokerTarget = NatsTarget | AmqpTarget;
export type Target = HttpTarget | QueueTarget | BrokerTarget;

export interface DstOptions {
  gap?: "run_at_transition" | "skip";
  overlap?: "first" | "both";
}

export interface RunAtSchedule {
  runAt: string;
}
export interface DelaySchedule {
  delaySeconds: number;
}
export interface CronSchedule {
  cron: string;
  tz?: string;
  jitterSeconds?: number;
  misfire?: Misfire;
  /** An occurrence dispatched more than this many seconds after its time is a misfire (default: the server's, 60). */
  misfireThresholdSeconds?: number;
  overlap?: Overlap;
  startAt?: string;
  endAt?: string;
  dst?: DstOptions;
}
export type ScheduleSpec = RunAtSchedule | DelaySchedule | CronSchedule;

export interface RetryPolicy {
  maxAttempts: number;
  backoffSeconds: number;
  maxBackoffSeconds: number;
  /** No retry starts later than this many seconds after the occurrence's scheduled time; past it, the execution is dead (reason in its last error). */
  deadlineSeconds?: number;
}

/**
 * live: occurrences run. dry_run (recurring jobs only): each occurrence is
 * recorded in the run ledger as would_run at its exact instant and never
 * dispatched; PATCH it to live when it fires as the system it replaces did.
 */
export type JobMode = "live" | "dry_run";

/** What a client sends to create a job (POST /v1/jobs). */
export interface JobSpec {
  name: string;
  target: Target;
  payload?: unknown;
  schedule: ScheduleSpec;
  retry?: Partial<RetryPolicy>;
  timeoutSeconds?: number;
  priority?: number;
  /** Default live. */
  mode?: JobMode;
}

/** A job as GET shows it: every default filled in. */
/**
 * A payload kept by reference: larger than the server's inline limit, it was
 * stored once in the server's blob store, and the job, its executions and
 * its dead letters carry this in place of it (their `payload` is null).
 * GET `href` (`/v1/blobs/{blobId}`, with the caller's key) answers the
 * payload as it was created; the SDK's Worker does so before the handler
 * runs, so a handler sees the payload as if it were inline.
 */
export interface PayloadRef {
  blobId: string;
  /** The payload's size in bytes of JSON (UTF-8). */
  bytes: number;
  /** SHA-256 (hex) of those bytes. */
  sha256: string;
  /** Where to fetch it: `/v1/blobs/{blobId}`, relative to the server. */
  href: string;
}

export interface Job {
  jobId: string;
  name: string;
  state: JobState;
  target: Target;
  /** Null when the payload is kept by reference (payloadRef). */
  payload: unknown;
  /** Present when the payload is larger than the server's inline limit: where to fetch it. */
  payloadRef?: PayloadRef;
  /** A delaySeconds job shows runAt (the computed time); a cron job its effective tz, misfire, overlap, jitter. */
  schedule: RunAtSchedule | (Required<Pick<CronSchedule, "cron" | "tz" | "jitterSeconds" | "misfire" | "overlap">> & CronSchedule);
  retry: RetryPolicy;
  timeoutSeconds: number;
  priority: number;
  mode: JobMode;
  nextRunAt: string | null;
  /** For a cron job: nextRunAt as wall time in its zone, "YYYY-MM-DDTHH:mm:ss±hh:mm[Zone/Name]". */
  nextRunAtLocal?: string | null;
  version: number;
  createdAt: string;
  updatedAt: string;
}

/** PATCH /v1/jobs/{id}: the fields to change; `version` (or If-Match) makes it a compare-and-set. */
export interface JobPatch {
  name?: string;
  target?: Target;
  payload?: unknown;
  schedule?: ScheduleSpec;
  retry?: Partial<RetryPolicy>;
  timeoutSeconds?: number;
  priority?: number;
  mode?: JobMode;
  version?: number;
}

/** POST /v1/jobs/{id}:backfill: the occurrences of a past window, (from, to]. */
export interface BackfillRequest {
  from: string;
  to: string;
}
export interface BackfillResponse {
  items: { scheduledFor: string; executionId: string; created: boolean; readyAt: string | null }[];
}

/** One nominal fire time of a recurring job and what became of it (the run ledger). */
export interface OccurrenceItem {
  scheduledFor: string;
  /** Wall time in the job's zone, "YYYY-MM-DDTHH:mm:ss". */
  local: string;
  /**
   * dispatched: an execution ran or runs; would_run: a dry-run job's occurrence, recorded at the instant it would have
   * been dispatched, never run; skipped: recorded SKIPPED (reason says why); due: still to come; not_run: none was
   * created (reason says why); unknown: older than the history retention, its record is gone (reason expired).
   */
  status: "dispatched" | "would_run" | "skipped" | "due" | "not_run" | "unknown";
  reason?: "misfire" | "overlap" | "paused" | "cancelled" | "before_creation" | "outside_window" | "schedule_changed" | "expired";
  /** The fire was moved by a spring-forward gap, or is one of two in a fall-back overlap. */
  dst?: "gap" | "overlap";
  executionId?: string;
  executionState?: AttemptState;
}
export interface OccurrencesQuery {
  from: string;
  to: string;
}

export interface CreatedJob extends Job {
  /** false when an Idempotency-Key matched an earlier request (HTTP 200 instead of 201). */
  created?: boolean;
  /** Warnings about the schedule (a spike of due work); absent when there are none. */
  warnings?: DueWarning[];
}

/**
 * POST /v1/jobs asked with `Prefer: return=minimal` (the client's
 * `returnMinimal` option): the new job's id and next run time, without the
 * rest of the job; `created` as in CreatedJob (from the status, 201 or 200).
 */
export interface CreatedJobMinimal {
  jobId: string;
  nextRunAt: string | null;
  created: boolean;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface ListJobsQuery {
  state?: JobState;
  name?: string;
  /** Jobs whose target is this worker pool. */
  pool?: string;
  kind?: "once" | "cron";
  limit?: number;
  cursor?: string;
}

export interface PageQuery {
  limit?: number;
  cursor?: string;
}

export interface ErrorRecord {
  message: string;
  class?: ErrorClass;
  retryAfterSeconds?: number;
  /** Extra facts recorded by the server (an HTTP status, a redirect location). */
  [key: string]: unknown;
}

/** One attempt of an execution, or attempt 0 for an execution not yet attempted. */
export interface ExecutionItem {
  executionId: string;
  jobId: string;
  scheduledFor: string;
  attempt: number;
  state: AttemptState;
  dispatchedAt: string | null;
  dispatchedBy: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  error: ErrorRecord | null;
  workerId: string | null;
  /** What a succeeded attempt returned (a worker's result; an HTTP target's status and timing). */
  result?: unknown;
  /** How long the tenant's dispatchRatePerSecond held this attempt back (absent: not at all). */
  throttledMs?: number;
}

export interface DeadLetter {
  executionId: string;
  jobId: string;
  name: string;
  scheduledFor: string;
  attempts: number;
  lastError: ErrorRecord | null;
  deadAt: string;
  /** Null when the payload is kept by reference (payloadRef). */
  payload: unknown;
  payloadRef?: PayloadRef;
}

/** What fences every call about a leased attempt: its execution, its number and, when the lease gave one, its token. */
export interface AttemptFence {
  executionId: string;
  attempt: number;
  leaseToken?: string;
}

/** The fence of an attempt, from a leased execution or an acknowledgement (nothing else of it; no token field when there is none). */
export function fenceOf(i: AttemptFence): AttemptFence {
  const { executionId, attempt, leaseToken } = i;
  return leaseToken === undefined ? { executionId, attempt } : { executionId, attempt, leaseToken };
}

export interface CompleteItem {
  executionId: string;
  attempt: number;
  /** The lease's token as the lease gave it (LeasedExecution.leaseToken): send it back with the attempt. */
  leaseToken?: string;
  result?: unknown;
}
export interface FailItem {
  executionId: string;
  attempt: number;
  /** As CompleteItem's. */
  leaseToken?: string;
  error: ErrorRecord;
}

export interface LeaseRequest {
  workerId: string;
  max?: number;
  leaseSeconds?: number;
  waitSeconds?: number;
  complete?: CompleteItem[];
  fail?: FailItem[];
}

export interface LeasedExecution {
  executionId: string;
  /** The tenant whose job this is (a platform worker, tenant "*", leases every tenant's). */
  tenantId: string;
  jobId: string;
  name: string;
  attempt: number;
  /**
   * With the attempt, the fencing token: a store that may lose a lease grant
   * in a power loss (SQLite's default durability) names the grant here, so a
   * grant lost and made again never matches a token from before. Send it back
   * on heartbeat, complete and fail; absent when the store never loses a grant.
   */
  leaseToken?: string;
  /** The payload; null when it is kept by reference (payloadRef), which the SDK's Worker fetches before the handler runs. */
  payload: unknown;
  /** Present when the payload is larger than the server's inline limit: GET its href for the payload. */
  payloadRef?: PayloadRef;
  scheduledFor: string;
  leaseUntil: string;
  timeoutSeconds: number;
  /** The W3C traceparent of the job's create span, when the server traces (`--tracing`); the Worker runs the handler in a child span of it. */
  traceparent?: string;
}

/** The answer to one complete or fail item; status mirrors the single call's HTTP status. */
export type AckItem =
  | { executionId: string; attempt: number; status: 200; state: "SUCCEEDED" | "FAILED" | "DEAD" | "CANCELLED"; retryAt?: string; dead?: boolean }
  | { executionId: string; attempt: number; status: 409 | 404 | 400; error: { code: string; message: string } };

export interface LeaseResponse {
  items: LeasedExecution[];
  acks?: AckItem[];
}

export interface HeartbeatRequest {
  attempt: number;
  /** As CompleteItem's. */
  leaseToken?: string;
  leaseSeconds?: number;
}
export interface HeartbeatResponse {
  leaseUntil: string;
  cancelRequested: boolean;
}

export interface CompleteResponse {
  state: "SUCCEEDED";
}
/** CANCELLED (an extension of the contract): the job was cancelled while the attempt ran, so it is not retried. */
export type FailResponse = { state: "FAILED"; retryAt: string } | { state: "DEAD"; dead: true } | { state: "CANCELLED" };

export interface PoolStats {
  pending: number;
  queued: number;
  running: number;
}
export interface Stats {
  pools: Record<string, PoolStats>;
  tenants: Record<string, PoolStats>;
}

/** GET /v1/stats/history: per-minute figures since `since` (default an hour ago, at most a day), summed per pool or per tenant. */
export interface StatsHistoryQuery {
  since?: string;
  by?: "pool" | "tenant";
}

/** One pool's or tenant's figures, each array aligned with StatsHistory.minutes. */
export interface StatsSeries {
  /** Attempts leased (started), succeeded, and failed (a timeout counts as a failure); dead: failures that dead-lettered. */
  started: number[];
  succeeded: number[];
  failed: number[];
  dead: number[];
  /** Start lag (ready to leased) percentiles of the minute's attempts, from a histogram; null when none started. */
  startLagMs: { p50: (number | null)[]; p90: (number | null)[]; p99: (number | null)[] };
  /** The counts of GET /v1/stats as sampled in the minute; null when no node sampled it. */
  pending: (number | null)[];
  queued: (number | null)[];
  running: (number | null)[];
}

export interface StatsHistory {
  by: "pool" | "tenant";
  /** The minutes' starts (RFC 3339, UTC), oldest first, the current one last. */
  minutes: string[];
  series: Record<string, StatsSeries>;
}

export interface BatchCreateItem extends JobSpec {
  idempotencyKey?: string;
}
/**
 * A warning on a create that succeeded: today, that the tenant's work piles
 * up in one second (one-offs) or one minute (cron jobs), with the jitter
 * that would spread it. Also sent as a Duetime-Warning header.
 */
export interface DueWarning {
  code: "DUE_SPIKE";
  message: string;
  /** The second or minute the work piles up in. */
  window: "second" | "minute";
  /** Its start. */
  at: string;
  /** The tenant's occurrences due in it (counted up to the threshold's double). */
  count: number;
  /** A schedule.jitterSeconds (cron) or spread of runAt (one-offs) that would keep it under the threshold. */
  suggestedJitterSeconds: number;
}

export type BatchCreateResult =
  | { jobId: string; nextRunAt: string | null; created: boolean; warnings?: DueWarning[] }
  | { error: { code: string; message: string; details?: Record<string, unknown> } };
/**
 * An item of POST /v1/jobs:batch asked with `Prefer: return=minimal` (the
 * client's `returnMinimal` option): a created job's id and next run time only
 * (its warnings still come in the Duetime-Warning header), a failed job's
 * error as in BatchCreateResult. Every BatchCreateResult is one too.
 */
export type BatchCreateMinimalResult = { jobId: string; nextRunAt: string | null } | Extract<BatchCreateResult, { error: unknown }>;

export interface PreviewQuery {
  cron: string;
  tz?: string;
  from?: string;
  count?: number;
}
export interface PreviewResponse {
  times: string[];
  /** Wall times in the zone, "YYYY-MM-DDTHH:mm:ss". */
  local?: string[];
  /** "gap": moved to the end of a spring-forward gap; "overlap": a wall time that occurs twice. */
  dst?: ("gap" | "overlap" | null)[];
}

/** GET /v1/executions: only `possibleDuplicate=true` for now. */
export interface ExecutionsQuery extends PageQuery {
  possibleDuplicate: true;
}

/** An execution with a possible duplicate: an attempt whose worker ran on after losing its lease. */
export interface PossibleDuplicateExecution {
  executionId: string;
  jobId: string;
  name: string;
  pool: string;
  scheduledFor: string;
  state: string;
  /** The execution's latest attempt. */
  attempt: number;
  possibleDuplicate: {
    /** The attempt that ran on. */
    attempt: number;
    /**
     * lease_lost: it called (heartbeat, complete, fail) after a later attempt
     * began, or after its lease expired; expired_then_succeeded: the reaper
     * ended it for an expired lease and a later attempt succeeded.
     */
    reason: "lease_lost" | "expired_then_succeeded";
    /** When that call came. */
    at: string;
  };
}

/** Which dead letters a bulk replay takes: those listed, or those a filter matches (every field optional; `{}`: all of them). */
export interface DeadLetterFilter {
  pool?: string;
  errorClass?: ErrorClass;
  /** Dead at or after this time. */
  deadAfter?: string;
  /** Dead at or before this time; never later than the replay's creation (new dead letters never extend a replay). */
  deadBefore?: string;
}

/** POST /v1/dead-letters:replay: exactly one of executionIds and filter. */
export interface DeadLetterReplayRequest {
  executionIds?: string[];
  filter?: DeadLetterFilter;
  /** Dead letters made ready per second (default 10): each replayed one is READY at its own slot, 1 / rate apart. */
  ratePerSecond?: number;
  /** The tenant whose dead letters: default the caller's; another needs an admin for every tenant (a key for *). */
  tenantId?: string;
}

/** A bulk dead-letter replay and its progress. */
export interface DeadLetterReplay {
  replayId: string;
  tenantId: string;
  state: "RUNNING" | "DONE" | "CANCELLED";
  /** The filter as it applies: deadBefore always set (at the latest, createdAt). */
  selection: { executionIds: string[] } | { filter: DeadLetterFilter & { deadBefore: string } };
  ratePerSecond: number;
  /** How many the ids select; null for a filter. */
  total: number | null;
  /** Made READY so far (each at its slot, possibly up to a second ahead). */
  replayed: number;
  /** Selected ids that were no longer dead (or not the tenant's) when their turn came. */
  skipped: number;
  actor: string;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

export interface AuditItem {
  at: string;
  actor: string;
  action: string;
  subject: string;
  details: unknown;
}

/** POST /v1/keys: a key for a tenant (default: the caller's) with one role. */
export interface CreateKeyRequest {
  tenantId?: string;
  role: Role;
  /** A label for people ("ci deploy", "worker eu-1"); not secret. */
  name?: string;
}

/** An API key as GET /v1/keys lists it: never its secret. */
export interface ApiKeyInfo {
  keyId: string;
  tenantId: string;
  role: Role;
  name: string | null;
  createdAt: string;
  /** null while the key is active. */
  revokedAt: string | null;
}

/** GET /v1/whoami: the caller's key as the server sees it. */
export interface WhoAmI {
  role: Role;
  /** The key's tenant; "*" for a platform key. */
  tenantId: string;
  /** A stored key's id ("ak_…"), a configured key's "key_" + 12 hex digits of its SHA-256, or null without keys (development mode). */
  keyId: string | null;
}

/** The answer to POST /v1/keys: the only time the secret `key` is shown. */
export interface CreatedKey {
  keyId: string;
  /** The secret, sent as `Authorization: Bearer <key>`. Only its SHA-256 digest is stored. */
  key: string;
  tenantId: string;
  role: Role;
  name: string | null;
  createdAt: string;
}

export interface ListKeysQuery extends PageQuery {
  /** Only this tenant's keys. An admin of a store key sees only its own tenant's. */
  tenantId?: string;
}

/** GET /v1/secrets/signing: the caller's tenant's callback signing secrets. */
export interface SigningSecrets {
  tenantId: string;
  /** Newest first; during a rotation every one signs each call. */
  secrets: string[];
  /** "config": given to the server (--signing-secret, signingSecrets); "store": generated once and kept in the store. */
  source: "config" | "store";
}

/** One origin (scheme://host:port) that HTTP targets call, as GET /v1/targets shows it. */
export interface TargetStatus {
  origin: string;
  /** Circuit breaker: closed (calls flow), open (calls wait), half_open (one probe in flight). */
  breaker: "closed" | "open" | "half_open";
  inFlight: number;
  /** Extra facts: recent failures, when an open breaker probes next, limits in force. */
  [key: string]: unknown;
}

export interface ClusterView {
  /** The store's clock, which every lease and heartbeat is judged by. */
  storeTime: string;
  nodes: { nodeId: string; address: string | null; shards: number[]; lastHeartbeatAt: string; heartbeatAgeSeconds: number }[];
  /** leaseRemainingSeconds is negative once the lease has expired (the shard is free to take). */
  shards: { shard: number; owner: string | null; epoch: number; leaseUntil: string; leaseRemainingSeconds: number }[];
}

/** PUT /v1/tenants/{tenantId}/limits: what a tenant may use; a field left out takes its default (null: no limit). */
export interface TenantLimitsRequest {
  /** Its share of a pool leased across tenants, against the others' weights (0.01 to 1000; default 1). */
  weight?: number;
  /** Jobs not yet ended (SCHEDULED or PAUSED) it may hold. */
  maxPendingJobs?: number | null;
  /** Jobs it may create per second (a token bucket holding one second's worth). */
  createRatePerSecond?: number | null;
  /** Its attempts started per second, every pool together: the excess waits its turn, in order (throttledMs on the attempt). */
  dispatchRatePerSecond?: number | null;
  /** Attempts it may have leased (RUNNING) at once. */
  maxLeasedAttempts?: number | null;
  /** The largest payload of its jobs, in bytes of JSON. */
  maxPayloadBytes?: number | null;
}

/** A tenant's limits, defaults filled in (null: no limit); TenantLimitsRequest says what each means. */
export interface TenantLimitSettings {
  weight: number;
  maxPendingJobs: number | null;
  createRatePerSecond: number | null;
  dispatchRatePerSecond: number | null;
  maxLeasedAttempts: number | null;
  maxPayloadBytes: number | null;
}

/** GET /v1/tenants/{tenantId}/limits: a tenant's limits, defaults filled in. */
export interface TenantLimits extends TenantLimitSettings {
  tenantId: string;
}
