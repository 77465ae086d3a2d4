// The storage port, one concept and long on purpose: every method's types
// and contract sit together, as each driver implements them. Every driver
// (sqlite/, postgres/) implements it and passes the one contract suite,
// test/store-contract/. Methods are asynchronous and batch-shaped (one round
// trip per batch, never per job), noun-first with one params object. Methods
// a stale owner could call take the fencing value they rely on (shard
// epochs, attempt numbers) and change nothing when it no longer holds. Times
// are epoch milliseconds chosen by the engine's clock, except as below.
//
// Lease time (DESIGN.md: lease deadlines use the store's clock): the methods
// that set or judge lease deadlines (executionLease, executionAckAndLease,
// executionHeartbeat, executionCompleteMany, executionFailMany,
// executionRelease, executionReap, shardAcquire) take `now` as optional.
// Given, the driver uses it for every time the call records or judges:
// tests pin time so (a FakeClock's storeNow()). Absent, the driver uses its
// own clock, read once per call: a networked store's (PostgreSQL: now(), as
// River's coalesce(narg('now'), now())), so that nodes with skewed clocks
// agree on who holds a lease; SQLite, one process on one host, reads the
// host's. The engine passes Clock.storeNow(): nothing in production.
//
// One-off jobs (kind "once") get their execution at submit time
// (docs/design-notes.md): jobCreateMany inserts it with the job, READY from
// its due time, and only recurring jobs have due entries. Until it starts
// (core/states.ts NOT_STARTED) it is the one-off's pending execution: it
// gives the job its nextRunAt; pause holds it (PAUSED, never leased), resume
// releases it, PATCH replaces it, cancel ends it, each in the job's own
// compare-and-set; and leases take it the moment it is due. Nothing
// dispatches it, so no shard fence guards it: attempt fencing does.
//
// A driver stores and fences; it does not decide (DESIGN.md, "Rules of the
// port"). Every rule lives in core, reaching the driver one of two ways:
// - as data in the call, when the engine knows the facts beforehand
//   (DispatchItem's run, skipped, overlap and completeJob; FailInput's jitter);
// - as a pure core function or table the driver applies to facts of the row
//   itself, when only the row knows them (the job's kind, cancel_requested,
//   attempts since the last replay): core/retry.ts for how an attempt ends,
//   core/states.ts for what happens to the job and its executions. Asking the
//   engine instead would cost a round trip per item; the driver reads those
//   facts in the statement or transaction that writes, and the write is a
//   compare-and-set on them.

import type { ErrorClass, ErrorRecord, Job, JobMode, JobState, Overlap, RetryPolicy, Role, Target, TenantLimitSettings } from "@duetime/sdk/contract";
import type { WorkloadMinute } from "./workload-minutes.js";

export { HTTP_POOL } from "../core/targets.js";

/**
 * What a commit must survive before it answers (docs/operations.md,
 * "Durability"). "accepted" (the default): accepted writes (create, update,
 * cancel, pause, keys, limits) are flushed to disk before they answer;
 * transitions after acceptance (lease grants, heartbeats, completions,
 * failures, retry plans, reaps, hand-backs) commit without their own flush,
 * durable across a process crash at once and across a power loss within
 * FLUSH_BOUND_MS. "strict": every commit is flushed before it answers.
 */
export type Durability = "accepted" | "strict";
export const DURABILITIES: readonly Durability[] = ["accepted", "strict"];

/** The longest a transition stays unflushed under "accepted" durability: the next flush comes no later. */
export const FLUSH_BOUND_MS = 200;

export type JobKind = "once" | "cron";

export interface JobRecord {
  tenantId: string;
  jobId: string;
  shard: number;
  kind: JobKind;
  name: string;
  state: JobState;
  target: Target;
  payload: unknown;
  /** The effective schedule as GET shows it (Job["schedule"]). */
  schedule: Job["schedule"];
  retry: RetryPolicy;
  timeoutSeconds: number;
  priority: number;
  /** dry_run: dispatch records each occurrence SKIPPED (reason dry_run) instead of running it; read in the dispatch's own statement. */
  mode: JobMode;
  version: number;
  createdAt: number;
  updatedAt: number;
  /**
   * Nominal time of the next occurrence, null when none: a recurring job's
   * due entry; a one-off's pending execution (READY at attempt 0; the
   * earliest-ready one if a trigger added another; a held one is not next).
   */
  nextRunAt: number | null;
  /** When that occurrence is dispatched (nextRunAt plus jitter, or now for a missed one); a one-off's: its execution's readyAt. */
  nextDueAt: number | null;
}

/** A row of the due index: the next occurrence of one recurring job (a one-off has its execution instead). */
export interface DueEntry {
  jobId: string;
  tenantId: string;
  shard: number;
  /** Nominal occurrence time; with the job id it names the execution. */
  scheduledFor: number;
  /** When to dispatch: scheduledFor plus the job's jitter offset. */
  dueAt: number;
  kind: JobKind;
}

/** Where a job's next occurrence is due: what an external due index holds of it (engine/redis-due-index.ts, store/redis/). */
export interface DueRef {
  jobId: string;
  shard: number;
  dueAt: number;
}

/** A due entry as loaded for dispatch: with what the engine needs to plan the next occurrence. */
export interface LoadedDueEntry extends DueEntry {
  schedule: Job["schedule"];
  /** The job's create span (W3C traceparent), when it was created with tracing on (engine/tracing.ts). */
  traceParent?: string;
}

export interface NextOccurrence {
  scheduledFor: number;
  dueAt: number;
}

export interface DispatchItem {
  entry: DueEntry;
  next: NextOccurrence | null;
  /** The occurrence to execute (default entry.scheduledFor); null executes none. */
  run?: number | null;
  /** Occurrences to record as SKIPPED, with why. */
  skipped?: { scheduledFor: number; reason: string }[];
  /** The job's overlap policy (default allow), applied by core/misfire.ts overlapAction. */
  overlap?: Overlap;
  /** The job completes in the same transaction (core/misfire.ts completesAtDispatch; the change is core/states.ts LAST_DISPATCH_JOB_CHANGE). */
  completeJob?: boolean;
}

/** PAUSED: a paused one-off's pending execution, held (never leased) until the job resumes. */
export type ExecutionState = "READY" | "PAUSED" | "RUNNING" | "SUCCEEDED" | "DEAD" | "CANCELLED" | "SKIPPED";

/** One row of history: an attempt, or attempt 0 for an execution not yet attempted. */
export interface AttemptRow {
  executionId: string;
  jobId: string;
  scheduledFor: number;
  attempt: number;
  /** Attempt state; for attempt 0 the execution's READY/PAUSED/CANCELLED/SKIPPED state. */
  state: string;
  readyAt: number | null;
  dispatchedAt: number;
  dispatchedBy: string | null;
  startedAt: number | null;
  finishedAt: number | null;
  error: ErrorRecord | null;
  workerId: string | null;
  /** What a succeeded attempt returned (a worker's result; an HTTP target's status and timing). */
  result?: unknown;
  /** How long the tenant's dispatchRatePerSecond held the attempt back (absent: not at all). */
  throttledMs?: number;
}

export interface LeasedRow {
  executionId: string;
  tenantId: string;
  jobId: string;
  name: string;
  attempt: number;
  /**
   * Names the grant when the store may lose one (SQLite: a relaxed commit
   * lost in a power loss; PostgreSQL: a relaxed commit lost in a crash, or
   * one the standby had not received when it was promoted): with the attempt, the fence a later call must
   * match, so a grant lost and made again never matches a token from before.
   * Absent: the store's grants are never lost once answered, and the attempt
   * alone fences.
   */
  leaseToken?: string;
  /**
   * An attempt after a failed or timed-out one since the last replay (the
   * retry budgets hold these back). Not a first attempt granted again after
   * a hand-back (executionRelease): attempt counts every grant, this does not.
   */
  retry: boolean;
  payload: unknown;
  scheduledFor: number;
  leaseUntil: number;
  timeoutSeconds: number;
  /** The job's target (http targets need the URL). */
  target: Target;
  /** The job's create span (W3C traceparent), copied to the execution when it was written; absent without tracing. */
  traceParent?: string;
}

export interface DeadLetterRow {
  executionId: string;
  tenantId: string;
  jobId: string;
  name: string;
  scheduledFor: number;
  attempts: number;
  lastError: ErrorRecord | null;
  deadAt: number;
  payload: unknown;
}

/** What a bulk dead-letter replay selects: listed executions, or the dead letters matching a filter that died at or before deadBefore. */
export type ReplaySelection =
  | { executionIds: string[] }
  | { filter: { pool?: string; errorClass?: ErrorClass; deadAfter?: number; deadBefore: number } };

/** Where a bulk replay has got to: the next index of executionIds, or the last (deadAt, executionId) examined (oldest first). */
export type ReplayCursor = { index: number } | { deadAt: number; executionId: string };

/** A bulk dead-letter replay, a durable operation driven by the engine (engine/dead-letter-replays.ts). */
export interface ReplayRecord {
  replayId: string;
  tenantId: string;
  selection: ReplaySelection;
  ratePerSecond: number;
  actor: string;
  state: "RUNNING" | "DONE" | "CANCELLED";
  /** How many were selected: the ids' count; null for a filter (known when done: replayed + skipped). */
  total: number | null;
  replayed: number;
  /** Selected but no longer dead when their turn came (replayed by someone else, or never a dead letter of the tenant). */
  skipped: number;
  cursor: ReplayCursor | null;
  /** The ready time the next replayed execution may have, at the earliest (the rate's slot). */
  nextAt: number;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
  /** The node driving it, and until when (the store's clock judges). */
  owner: string | null;
  leaseUntil: number | null;
}

/** What happened to one complete or fail item. */
export type AckOutcome =
  | {
      status: "ok";
      state: "SUCCEEDED" | "READY" | "DEAD" | "CANCELLED";
      readyAt?: number;
      pool: string;
      tenantId: string;
      /** A success after the reaper ended an earlier attempt for its expired lease (expired_then_succeeded), once. */
      possibleDuplicate?: PossibleDuplicateMark;
    }
  | { status: "lost"; possibleDuplicate?: PossibleDuplicateMark }
  | { status: "not_found" };

/**
 * A lost answer that recorded a possible duplicate: the attempt called
 * after losing its lease, so its worker ran on while the execution moved on.
 * Given once per (execution, attempt), for the latest such attempt only.
 */
export interface PossibleDuplicateMark {
  tenantId: string;
  attempt: number;
  reason: PossibleDuplicateReason;
}

/**
 * lease_lost: the attempt called after losing its lease; expired_then_succeeded:
 * the reaper ended it for an expired lease (its worker silent, or past its
 * deadline: timeoutSeconds) and a later attempt succeeded.
 */
export type PossibleDuplicateReason = "lease_lost" | "expired_then_succeeded";

/** An execution with a possible duplicate (executionPossibleDuplicates). */
export interface PossibleDuplicateRow {
  executionId: string;
  tenantId: string;
  jobId: string;
  name: string;
  pool: string;
  scheduledFor: number;
  state: string;
  /** The execution's latest attempt. */
  attempt: number;
  /** The attempt that ran on after losing its lease. */
  duplicateAttempt: number;
  reason: PossibleDuplicateReason;
  at: number;
}

export interface LeaseParams {
  /** Absent: every tenant's work in the pool. */
  tenantId?: string;
  pool: string;
  workerId: string;
  max: number;
  leaseMs: number;
  /** Extra time past timeoutSeconds before the lease must end (the HTTP runner's margin). */
  graceMs?: number;
  /** Optional: absent, the store's own clock (see the top of this file). */
  now?: number;
}

export interface FailInput {
  executionId: string;
  /** The caller's tenant; null: any tenant's (a platform worker's key, tenant "*"). The fence is the attempt and its lease either way. */
  tenantId: string | null;
  attempt: number;
  /** LeasedRow.leaseToken as the grant gave it; absent, the attempt alone fences. */
  leaseToken?: string;
  error: ErrorRecord;
  /** The attempt ran out of time (http target timeout): recorded as TIMED_OUT. */
  timedOut?: boolean;
  /** A draw in [0, 1) for the retry delay's jitter (core/retry.ts endFailedAttempt): data, so the store stays deterministic. */
  jitter: number;
}

export interface CompleteInput {
  executionId: string;
  /** As FailInput's. */
  tenantId: string | null;
  attempt: number;
  /** As FailInput's. */
  leaseToken?: string;
  result?: unknown;
}

export type JobCreateOutcome = { status: "created"; job: JobRecord } | { status: "existing"; job: JobRecord } | { status: "idempotency_mismatch" };

export interface NewJob {
  job: Omit<JobRecord, "version" | "updatedAt" | "nextRunAt" | "nextDueAt">;
  /** A recurring job's first occurrence, for the due index; null when the schedule has none, and for a one-off. */
  due: NextOccurrence | null;
  /**
   * A one-off's occurrence (core/states.ts occurrenceHome): its execution,
   * inserted in the same transaction, named executionIdFor(jobId,
   * scheduledFor), READY from dueAt (PENDING until then) at attempt 0,
   * dispatchedAt = now and dispatchedBy = nodeId of the create call.
   */
  execution?: NextOccurrence;
  idempotency?: { key: string; requestHash: string };
  /** The create span's W3C traceparent (engine/tracing.ts), kept with the job and copied to each execution written for it. */
  traceParent?: string;
}

export interface ShardLease {
  shard: number;
  owner: string | null;
  epoch: number;
  leaseUntil: number;
}

export interface MigrateResult {
  applied: number[];
  version: number;
}

/**
 * What a pause or resume does to a one-off's pending execution, the one at
 * scheduledFor (core/states.ts PENDING_ON_ACTION): hold makes it PAUSED while
 * it has not started (READY at attempt 0); release makes a PAUSED one READY
 * again from readyAt (its due time, or now when that passed).
 */
export type PendingChange = { hold: number } | { release: { scheduledFor: number; readyAt: number } };

/**
 * What a PATCH does to a one-off's pending execution: the one at `from`
 * (null: there is none, a recurring job becoming a one-off) is replaced by
 * one at `to` (null: none, a one-off becoming recurring), built from the new
 * definition at attempt 0, PAUSED when the job is, else READY from to.dueAt;
 * dispatchedAt = now, dispatchedBy = nodeId. Only while the one at `from` has
 * not started (READY at attempt 0, or PAUSED): removing it is the
 * compare-and-set, and when that misses (it started, or ended) nothing is
 * inserted. from = to.scheduledFor replaces it in place (same id), so a new
 * payload, target, priority or retry policy reaches it.
 */
export interface PendingReplace {
  from: number | null;
  to: NextOccurrence | null;
}

/** A cluster member, live until its heartbeat expires. */
export interface NodeRecord {
  nodeId: string;
  address: string | null;
  lastHeartbeatAt: number;
  expiresAt: number;
}

export interface PoolCounts {
  tenantId: string;
  pool: string;
  pending: number;
  queued: number;
  running: number;
}

export interface AuditEntry {
  tenantId: string;
  at: number;
  actor: string;
  action: string;
  subject: string;
  details?: unknown;
}

/**
 * A tenant's limits when none were set: weight 1, no quota. The store keeps
 * a tenant's limits (the contract's TenantLimitSettings); the engine enforces
 * them (engine/quotas.ts), except two that the lease itself enforces, across
 * nodes: dispatchRatePerSecond (a GCRA on the tenants row, core/dispatch-rate.ts)
 * and maxLeasedAttempts (no more than it minus the tenant's RUNNING attempts).
 */
export const DEFAULT_TENANT_LIMITS: TenantLimitSettings = {
  weight: 1,
  maxPendingJobs: null,
  createRatePerSecond: null,
  dispatchRatePerSecond: null,
  maxLeasedAttempts: null,
  maxPayloadBytes: null,
};

/** An API key kept in the store: only the SHA-256 digest of its secret, never the secret. */
export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  role: Role;
  /** Hex SHA-256 of the secret; unique among all keys, active or revoked. */
  digest: string;
  name: string | null;
  createdAt: number;
  /** When it was revoked; null while active. */
  revokedAt: number | null;
}

/**
 * What one node tells the others after a write has committed (engine/signals.ts):
 * - due: a recurring job's due entry was created or moved (the shard's owner
 *   puts it in its loaded window if it falls there);
 * - ready: a pool has work ready at `at` (long polls and the HTTP runner on
 *   every node wake then).
 */
export type ClusterSignal = { kind: "due"; entry: LoadedDueEntry } | { kind: "ready"; tenantId: string; pool: string; at: number };

/** What a subscriber hears: a batch from one node, or "resync" after the channel was down (signals may have been lost meanwhile). */
export type SignalEvent = { from: string; signals: ClusterSignal[] } | { resync: true };

/**
 * The index row of a payload kept by reference (core/payload-refs.ts;
 * docs/design-notes.md "Large payloads by reference"). It lives in the job
 * store whatever holds the bytes (the backend): "store", the blob_chunks
 * table beside it, or "s3", an S3-compatible bucket (store/blobs/). Its
 * state says what may be read and what the sweep removes:
 * - writing: begun, its bytes not all written (never read; removed once older than the sweep's grace);
 * - ready: every byte written and counted, its job perhaps not yet committed;
 * - attached: its job was created with it;
 * - gone: its job was removed, however (a trigger on jobs, in the deleting transaction); the next sweep removes it.
 */
export interface BlobRecord {
  blobId: string;
  tenantId: string;
  /** The job it was written for (the job may not exist: a create that failed or was cut off). */
  jobId: string;
  backend: "store" | "s3";
  state: "writing" | "ready" | "attached" | "gone";
  /** Bytes of the payload's JSON text, its SHA-256 (hex) and how many chunks hold it; null while writing. */
  bytes: number | null;
  sha256: string | null;
  chunks: number | null;
  createdAt: number;
}

/** The params object of a Store method, for drivers that implement it without restating it. */
export type StoreParams<M extends keyof Store> = Store[M] extends (params: infer P) => unknown ? P : never;

/** What retention removes (engine/retention.ts decides when), in the order a run removes them: a job only once its executions have gone. */
export const RETENTION_KINDS = ["executions", "jobs", "idempotency", "audit"] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

/** A row due for removal (retentionExpired), as handed to the archive. */
export interface PurgedRow {
  kind: RetentionKind;
  /** The execution id, job id, idempotency key or audit entry id. */
  id: string;
  tenantId: string;
  /** The job it belongs to (null for audit entries). */
  jobId: string | null;
  /** When its retention started: an execution's end, a job's last change, a key's creation, an audit entry's time. */
  at: number;
  /** The stored row by column name, JSON columns parsed; an execution carries its attempt rows as `attempts`. */
  row: Record<string, unknown>;
}

/**
 * Faults: a driver throws StoreUnavailableError (core/errors.ts) from any
 * method, naming its kind, when the store cannot serve for now: disk full,
 * I/O error, locked past its busy timeout, read-only, cannot open, connection
 * lost. It classifies its own error codes in one place (onStoreError in
 * faults.ts): the engine and the HTTP layer never see them. Anything else a
 * driver throws is a bug.
 */
export interface Store {
  readonly kind: string;
  /**
   * Creates or migrates the schema: applies the numbered migrations it lacks,
   * in order, each once however many nodes race (PostgreSQL: under an
   * advisory lock). Answers the versions this call applied (none when it was
   * current) and the version the schema is now at.
   */
  migrate(): Promise<MigrateResult>;
  /** Throws when the store cannot answer. */
  ping(): Promise<void>;
  /**
   * The store's clock, epoch ms: the one lease deadlines are judged by when
   * `now` is omitted (PostgreSQL's now(); SQLite's host clock). Node
   * heartbeats and shard plans read it, so nodes with skewed clocks agree.
   */
  storeTime(): Promise<number>;
  /**
   * How far this store's data trails its primary, in ms, as a replica:
   * Infinity for a replica that is not streaming from its primary (its lag
   * is unknown and growing) and for a primary, which is no one's replica (a
   * promoted replica no longer follows the store it was a copy of).
   * engine/read-routing.ts sends list and history reads to a replica only
   * while this stays small.
   */
  replicaLagMs(): Promise<number>;
  /**
   * Throws StoreUnavailableError when the store cannot write: a small real
   * write that changes nothing and needs fresh space, not space a failed
   * write left behind (readiness probes with it while writes fail).
   */
  pingWrite(): Promise<void>;
  close(): Promise<void>;

  // ---- jobs -------------------------------------------------------------
  /**
   * Inserts jobs with their first due entries (recurring jobs) or their
   * executions (one-offs: NewJob.execution) in one transaction. A job whose
   * idempotency key exists with the same request hash answers "existing"
   * (nothing written); with another hash "idempotency_mismatch". A created
   * one-off answers nextRunAt and nextDueAt of its execution.
   */
  jobCreateMany(params: { jobs: NewJob[]; nodeId: string; now: number }): Promise<JobCreateOutcome[]>;
  jobGet(params: { tenantId: string; jobId: string }): Promise<JobRecord | null>;
  /** Newest first (createdAt desc, jobId desc), strictly after the cursor. */
  jobList(params: {
    tenantId: string;
    state?: JobState;
    name?: string;
    /** Jobs whose target is this worker pool (an index's range). */
    pool?: string;
    /** One kind (cron jobs: a partial index's range). */
    kind?: "once" | "cron";
    limit: number;
    after?: { createdAt: number; jobId: string };
  }): Promise<JobRecord[]>;
  /**
   * Compare-and-set of a job's state at fromVersion: sets the state, bumps the
   * version, replaces the due entry ("keep" leaves it), with
   * cancelExecutions treats the job's in-flight executions as core/states.ts
   * inFlightOnCancel says (READY and PAUSED ones end CANCELLED, RUNNING ones
   * are asked to stop), and applies `pending` to a one-off's pending
   * execution (PendingChange). Nothing of it is written when the version
   * moved, or when the job is a one-off whose execution ended meanwhile (its
   * end moves no version: core/states.ts ONE_OFF_END); the execution's change
   * is itself a compare-and-set on its state. Returns null then (the caller
   * re-reads and retries).
   */
  jobTransition(params: {
    tenantId: string;
    jobId: string;
    fromVersion: number;
    state: JobState;
    due: NextOccurrence | null | "keep";
    cancelExecutions?: boolean;
    pending?: PendingChange;
    now: number;
  }): Promise<JobRecord | null>;

  // ---- due index and dispatch ---------------------------------------------
  /** Due entries of these shards with dueAt <= before, earliest first. */
  dueLoad(params: { shards: readonly number[]; before: number; limit: number }): Promise<LoadedDueEntry[]>;
  /** The due entries of these jobs, those that have one (an external due index turns its claimed ids into entries with it). */
  dueGet(params: { jobIds: readonly string[] }): Promise<LoadedDueEntry[]>;
  /** Where the jobs asked for are due, for those that have a due entry (reconciling an external due index: no join, no schedule). */
  dueRefs(params: { jobIds: readonly string[] }): Promise<DueRef[]>;
  /** Up to `limit` due entries of one shard with jobId > after, by jobId: a cursor over the shard (reconciling an external due index). */
  dueScan(params: { shard: number; after: string; limit: number }): Promise<DueRef[]>;
  /**
   * One transaction per batch: for each item whose due entry still holds
   * (same job, same scheduledFor) and whose shard epoch still matches, inserts
   * the execution of `run` (default: the entry's occurrence; null: none) and
   * a SKIPPED execution for each of `skipped` (an execution that exists for
   * (jobId, scheduledFor) is left alone), then advances the due entry to
   * `next` or deletes it; with completeJob the job changes as core/states.ts
   * LAST_DISPATCH_JOB_CHANGE says (COMPLETED while still SCHEDULED). Only
   * jobs in core/states.ts DISPATCHING_STATES get executions. The run obeys
   * core/misfire.ts overlapAction of the item's overlap policy for a job
   * with an execution in flight (core/states.ts IN_FLIGHT_STATES): "replace"
   * cancels the in-flight ones first (inFlightOnCancel); "skip" inserts the
   * run only where that same INSERT finds none in flight (INSERT … SELECT …
   * WHERE NOT EXISTS, never a read before it), and records it SKIPPED
   * otherwise. A job whose mode is dry_run (read by that same INSERT, so a
   * flip applies from the next dispatch) gets the run recorded SKIPPED with
   * reason dry_run instead: answered in wouldRun, never made ready. Fence: consuming the due entry is a compare-and-set on
   * (jobId, scheduledFor) and on the shard's (owner = nodeId, epoch) in one
   * statement; nothing else of the item is written when it misses. Items
   * whose entry moved are "stale"; items of shards whose epoch moved, or
   * that this node does not own, are "fenced". The scheduler never
   * dispatches before dueAt; readyAt is min(dueAt, now).
   */
  dispatchMany(params: { nodeId: string; epochs: ReadonlyMap<number, number>; now: number; items: DispatchItem[] }): Promise<{
    dispatched: { jobId: string; executionId: string; tenantId: string; pool: string }[];
    /** Runs of dry-run jobs, recorded SKIPPED (reason dry_run). */
    wouldRun: { jobId: string; executionId: string; tenantId: string; pool: string }[];
    stale: string[];
    fenced: string[];
  }>;

  // ---- executions -------------------------------------------------------
  /**
   * Extra executions of a job outside its due index (trigger, backfill), in
   * any job state, READY from each item's readyAt. An occurrence that has an
   * execution already answers null; so does an unknown or another tenant's job.
   */
  executionCreateMany(params: {
    tenantId: string;
    jobId: string;
    nodeId: string;
    now: number;
    items: { scheduledFor: number; readyAt: number }[];
  }): Promise<(AttemptRow | null)[]>;
  /** Every execution of a job with scheduledFor in [from, to], by scheduledFor (the run ledger). */
  executionsInWindow(params: { tenantId: string; jobId: string; from: number; to: number }): Promise<AttemptRow[]>;
  /**
   * Compare-and-set of a job's definition at fromVersion (PATCH): replaces the
   * given fields, bumps the version, replaces the due entry ("keep" leaves
   * it) and a one-off's pending execution (PendingReplace), in one
   * transaction. Null, writing nothing, when the version moved or the job is
   * a one-off whose execution ended meanwhile.
   */
  jobUpdate(params: {
    tenantId: string;
    jobId: string;
    fromVersion: number;
    fields: Pick<JobRecord, "kind" | "name" | "target" | "payload" | "schedule" | "retry" | "timeoutSeconds" | "priority" | "mode">;
    due: NextOccurrence | null | "keep";
    pending?: PendingReplace;
    nodeId: string;
    now: number;
  }): Promise<JobRecord | null>;
  /**
   * Leases up to max READY executions of a pool with readyAt <= now; each
   * grant is a new attempt. One tenant's (tenantId given): higher priority
   * first, then earlier readyAt. All tenants' (tenantId absent): shared by
   * weighted fair queueing over the tenants that have work due
   * (core/fair-share.ts), priority ordering each tenant's own work only; a
   * tenant that had none due gains no credit meanwhile. Its cost grows with
   * the tenants served, never with the tenants that exist. The lease ends at min(now + leaseMs, deadline)
   * where deadline = now + timeoutSeconds × 1000 + graceMs (default 0);
   * heartbeats never extend a lease past the deadline. A pool's READY rows
   * include every one-off not yet due (a million due next week): the lease
   * must read only rows with readyAt <= now, never walk the future ones
   * (SQLite walks priority levels, each an index range up to now).
   */
  executionLease(params: LeaseParams): Promise<LeasedRow[]>;
  /**
   * executionCompleteMany, executionFailMany and executionLease in one
   * transaction: the lease call that acknowledges the last batch and fetches
   * the next costs one commit.
   */
  executionAckAndLease(
    params: LeaseParams & { complete: CompleteInput[]; fail: FailInput[] },
  ): Promise<{ completed: AckOutcome[]; failed: AckOutcome[]; leased: LeasedRow[] }>;
  /**
   * Extends a live lease by leaseMs, or by the length granted at lease time.
   * Fence: one UPDATE whose WHERE holds (attempt, RUNNING, leaseUntil >= now).
   */
  executionHeartbeat(params: {
    /** As FailInput's. */
    tenantId: string | null;
    executionId: string;
    attempt: number;
    /** As FailInput's. */
    leaseToken?: string;
    leaseMs?: number;
    now?: number;
  }): Promise<
    | { status: "ok"; leaseUntil: number; cancelRequested: boolean }
    | { status: "lost"; possibleDuplicate?: PossibleDuplicateMark }
    | { status: "not_found" }
  >;
  /**
   * Succeeds an item while its attempt still holds the lease; repeating a
   * success answers ok again. The job row is not written: a one-off is read
   * as COMPLETED from its execution (core/states.ts ONE_OFF_END), and its
   * executions that had not started are dropped. Fence: one UPDATE
   * whose WHERE holds (attempt, RUNNING, leaseUntil >= now); only a miss is
   * read, to answer it.
   */
  executionCompleteMany(params: { items: CompleteInput[]; now?: number }): Promise<AckOutcome[]>;
  /**
   * Fails items while their attempt holds the lease. What each becomes is
   * core/retry.ts endFailedAttempt of the row (attempts since the last
   * replay, the retry policy, whether the job was cancelled) and the item
   * (error class, retryAfterSeconds, jitter) at now: READY at readyAt, DEAD,
   * or CANCELLED; a one-off is read as DEAD from a DEAD one (core/states.ts
   * ONE_OFF_END), which drops its executions not started. Fence: the write is
   * a compare-and-set on (attempt, RUNNING, leaseUntil >= now) and on the
   * facts the decision read; when those facts moved meanwhile (a cancel), the
   * driver reads and decides again.
   */
  executionFailMany(params: { items: FailInput[]; now?: number }): Promise<AckOutcome[]>;
  /**
   * Hands leases back unused (an HTTP target whose origin's breaker is open):
   * READY again from readyAt, and the attempt does not count toward
   * maxAttempts. The next grant still carries the next attempt number, so
   * fencing holds. What the execution becomes is core/retry.ts
   * endReleasedAttempt of its cancel_requested (CANCELLED when its job was
   * cancelled meanwhile): the driver binds both answers into the one UPDATE,
   * which picks by the row's fact. Answers per item: ok, or lost when the
   * attempt no longer holds its lease. Fence: one UPDATE whose WHERE holds
   * (attempt, RUNNING, leaseUntil >= now).
   */
  executionRelease(params: {
    items: { executionId: string; tenantId: string; attempt: number; readyAt: number }[];
    now?: number;
  }): Promise<("ok" | "lost")[]>;
  /**
   * Ends attempts whose lease expired (leaseUntil < now; a lease holds up to
   * and including leaseUntil) as TIMED_OUT, as core/retry.ts
   * endExpiredAttempt says: ready again at once, DEAD when attempts since the
   * last replay reach maxAttempts (its job changed as for a failed attempt),
   * CANCELLED when the job was cancelled while the attempt ran. Fence: each
   * write is a compare-and-set on (attempt, RUNNING, leaseUntil < now) and
   * the facts decided on; a row acknowledged or reaped by another handle
   * meanwhile is left alone and not answered.
   */
  executionReap(params: {
    now?: number;
    limit: number;
  }): Promise<{ executionId: string; tenantId: string; pool: string; state: "READY" | "DEAD" | "CANCELLED" }[]>;
  /**
   * The earliest readyAt among the READY executions of a pool (one tenant's,
   * or every tenant's when tenantId is absent), null when there is none:
   * when a long poll that found nothing ready should look again. Served by
   * indexes, as the lease is, never by a scan of the pool.
   */
  executionNextReady(params: { pool: string; tenantId?: string }): Promise<number | null>;
  /** History of one job: newest first by (scheduledFor, attempt), strictly after the cursor. */
  executionHistory(params: {
    tenantId: string;
    jobId: string;
    limit: number;
    after?: { scheduledFor: number; attempt: number };
  }): Promise<AttemptRow[]>;

  /**
   * Executions with a possible duplicate, newest first by (at, executionId),
   * strictly after the cursor; an index serves it. A lost answer of
   * heartbeat, complete or fail records one (dupAttempt, reason
   * "lease_lost", at now), in the same transaction, when the attempt lost
   * its lease while its worker ran on: a later attempt has been granted, or
   * it is still RUNNING with its lease expired (not yet reaped); and it is
   * later than the attempt recorded. A call after the attempt's own
   * acknowledgement (a heartbeat racing its complete) is not one. And the
   * success of an execution whose earlier attempt the reaper ended for an
   * expired lease records that attempt (reason "expired_then_succeeded")
   * in the complete's own UPDATE, unless a later one is recorded.
   */
  executionPossibleDuplicates(params: {
    tenantId: string;
    limit: number;
    after?: { at: number; executionId: string };
  }): Promise<PossibleDuplicateRow[]>;

  // ---- dead letters -------------------------------------------------------
  deadLetterList(params: { tenantId: string; limit: number; after?: { deadAt: number; executionId: string } }): Promise<DeadLetterRow[]>;
  /**
   * DEAD → READY now with a fresh retry budget (attempt numbers keep growing);
   * a one-off that died with it is read as SCHEDULED again (core/states.ts
   * ONE_OFF_END), with no write of its job; the audit entry is
   * written in the same transaction. The row's attempt is the number of
   * attempts made so far. Null when not dead.
   */
  deadLetterReplay(params: {
    tenantId: string;
    executionId: string;
    now: number;
    audit: AuditEntry;
  }): Promise<{ pool: string; row: AttemptRow } | null>;

  /** Stores a new RUNNING bulk replay and its audit entry, in one transaction. */
  replayCreate(params: {
    replay: Pick<ReplayRecord, "replayId" | "tenantId" | "selection" | "ratePerSecond" | "actor" | "createdAt">;
    audit: AuditEntry;
  }): Promise<ReplayRecord>;
  /** One bulk replay; of this tenant only when tenantId is given. */
  replayGet(params: { replayId: string; tenantId?: string }): Promise<ReplayRecord | null>;
  /** A tenant's bulk replays, newest first by (createdAt, replayId), strictly after the cursor. */
  replayList(params: { tenantId: string; limit: number; after?: { createdAt: number; replayId: string } }): Promise<ReplayRecord[]>;
  /**
   * Leases up to limit RUNNING replays to owner until now + leaseMs: those
   * with no owner, owner's own, and those whose lease expired (leaseUntil <
   * now, now the store's clock when omitted). Each take is a compare-and-set
   * on the lease it saw; answers the ones owner now holds.
   */
  replayClaim(params: { owner: string; leaseMs: number; now?: number; limit: number }): Promise<ReplayRecord[]>;
  /** Gives up owner's leases on its RUNNING replays (a clean stop), so another node claims them at once rather than at their expiry. */
  replayRelease(params: { owner: string }): Promise<void>;
  /**
   * One batch of a replay, in one transaction, fenced by owner's lease (a
   * compare-and-set on owner, RUNNING and leaseUntil >= now, which it
   * extends by leaseMs): takes the next up to limit selected executions
   * after the cursor that are still DEAD (of the replay's tenant; for a
   * filter, dead at or before deadBefore, oldest first) and replays each as
   * deadLetterReplay does, with a compare-and-set on DEAD, without an audit
   * entry; the i-th gets readyAt max(at, nextAt) + i × 1000 / rate, and
   * nextAt moves past the last. A selected id no longer dead counts as
   * skipped. Done (finishedAt = at) when the selection is exhausted. Null
   * when owner does not hold the lease (lost, cancelled, done).
   */
  replayStep(params: {
    replayId: string;
    owner: string;
    leaseMs: number;
    now?: number;
    at: number;
    limit: number;
  }): Promise<{ replay: ReplayRecord; replayed: { executionId: string; pool: string; readyAt: number }[] } | null>;
  /**
   * RUNNING → CANCELLED (finishedAt = now, the lease dropped) with the audit
   * entry; a replay already ended is answered as it is, no audit. Null when
   * unknown (or another tenant's, when tenantId is given).
   */
  replayCancel(params: {
    replayId: string;
    tenantId?: string;
    now: number;
    audit: AuditEntry;
  }): Promise<{ replay: ReplayRecord; changed: boolean } | null>;

  // ---- shards, stats, audit --------------------------------------------------
  /** Takes these shards for owner when free or expired (or already owned), bumping the epoch on a change of owner. */
  shardAcquire(params: { owner: string; shards: readonly number[]; leaseMs: number; now?: number }): Promise<ShardLease[]>;
  /**
   * Gives up this owner's shards, all of them (a clean stop) or the listed
   * ones (a handover to a joining node), so the next owner need not wait for
   * the leases to expire. Shards another owner holds are left alone.
   */
  shardRelease(params: { owner: string; shards?: readonly number[] }): Promise<void>;
  shardList(): Promise<ShardLease[]>;
  /** Tracing only (engine/tracing.ts): the traceparent kept with each of these executions that has one, by execution id. */
  executionTraceParents(params: { executionIds: readonly string[] }): Promise<Map<string, string>>;
  /**
   * READY executions with readyAt > now are pending (one-offs not yet due among them), the others queued; held (PAUSED) ones are not counted.
   * Read from counters kept as the rows change (ready-counts.ts), so the cost is bounded by the lanes and the queue, not by the stored jobs.
   */
  poolCounts(params: { tenantId?: string; pool?: string; now: number }): Promise<PoolCounts[]>;
  /**
   * READY executions (one-offs, retries) that become due in each of the next `minutes` minutes (minute i: (now + i min, now + (i + 1) min]),
   * every tenant and pool, counted up to `limit` in all: the coming herd of work that is not recurring (dueLoad counts that).
   */
  readyUpcoming(params: { now: number; minutes: number; limit: number }): Promise<number[]>;
  /** Housekeeping of poolCounts' counters: folds what the triggers appended and drops counters at zero. Safe to call from every node at once. */
  executionCountsFold(): Promise<void>;
  /** Adds each record's counts to its minute's row (creating it), and sets the row's depth where the record gives it (workload-minutes.ts). */
  workloadAdd(params: { records: WorkloadMinute[] }): Promise<void>;
  /** The rows from `from` on (a minute's start), of one tenant or all, by minute. */
  workloadMinutes(params: { tenantId?: string; from: number }): Promise<WorkloadMinute[]>;
  /** Deletes the rows of minutes before `before`; answers how many. */
  workloadPurge(params: { before: number }): Promise<number>;
  auditList(params: { tenantId: string; limit: number; after?: { at: number; id: number } }): Promise<(AuditEntry & { id: number })[]>;

  // ---- cluster membership -----------------------------------------------------
  /** Registers or refreshes this node; it counts as live until now + ttlMs. */
  nodeHeartbeat(params: { nodeId: string; address: string | null; now: number; ttlMs: number }): Promise<void>;
  /** The nodes live at now (heartbeat not expired), by id. */
  nodeList(params: { now: number }): Promise<NodeRecord[]>;
  /** Removes this node (a clean stop), so the others count it out at once. */
  nodeLeave(params: { nodeId: string }): Promise<void>;

  // ---- signals between nodes -------------------------------------------------
  // Best effort, at most once: a signal may be lost (a dropped connection, a
  // node that was not listening), and every receiver heals by its periodic
  // reloads and re-checks; signals only make things happen sooner. PostgreSQL
  // carries them with NOTIFY on one channel per schema; SQLite within this
  // process only (the handles on one file), since its nodes share no server.

  /** Sends signals to every subscriber on the store, this node's included; `from` names the sender. */
  signalPublish(params: { from: string; signals: ClusterSignal[] }): Promise<void>;
  /** Calls handler for every batch published on the store until the returned function is called. */
  signalSubscribe(handler: (event: SignalEvent) => void): Promise<() => Promise<void>>;

  // ---- API keys ---------------------------------------------------------------
  /**
   * Stores a new active key, and the audit entry (if given) in the same
   * transaction. Null, writing nothing, when the id or the digest is taken
   * (by any key, active or revoked).
   */
  apiKeyCreate(params: {
    id: string;
    tenantId: string;
    role: Role;
    digest: string;
    name?: string;
    now: number;
    audit?: AuditEntry;
  }): Promise<ApiKeyRecord | null>;
  /** Keys of one tenant (absent: every tenant), revoked ones included; newest first (createdAt desc, id desc), strictly after the cursor. */
  apiKeyList(params: { tenantId?: string; limit: number; after?: { createdAt: number; id: string } }): Promise<ApiKeyRecord[]>;
  /**
   * Revokes a key (only one of tenantId when given). Idempotent: a revoked
   * key keeps its first revokedAt. Answers the key as it now is, or null
   * when there is no such key (of that tenant). The audit entry, if given, is
   * recorded under the key's tenant in the same transaction, and only when
   * this call revoked it.
   */
  apiKeyRevoke(params: { id: string; tenantId?: string; now: number; audit?: Omit<AuditEntry, "tenantId"> }): Promise<ApiKeyRecord | null>;
  /** The active key with this digest; null when unknown or revoked. */
  apiKeyFind(params: { digest: string }): Promise<ApiKeyRecord | null>;

  // ---- Signing secrets ----------------------------------------------------------
  /**
   * The tenant's stored callback signing secret, created with generate() on
   * the first call. Atomic: of concurrent first calls (on any node) one
   * secret wins and every caller answers it; a later call never replaces it.
   */
  signingSecretEnsure(params: { tenantId: string; generate: () => string; now: number }): Promise<string>;
  /** The tenant's stored signing secret, or null when none was ever created. */
  signingSecretGet(params: { tenantId: string }): Promise<string | null>;

  // ---- tenants --------------------------------------------------------------------
  /** A tenant's limits as set, or null when never set (the defaults apply). */
  tenantLimitsGet(params: { tenantId: string }): Promise<TenantLimitSettings | null>;
  /**
   * How much of a tenant's work falls due in [from, to): its READY
   * executions of one pool and priority there (one index range), plus its
   * recurring jobs' due entries there; each counted up to limit, so a spike
   * costs no more than the limit to measure.
   */
  dueInWindow(params: { tenantId: string; pool: string; priority: number; from: number; to: number; limit: number }): Promise<number>;
  /**
   * A tenant's jobs not yet ended: recurring ones SCHEDULED or PAUSED, and
   * one-offs by their executions not yet ended (a cancelled one counts until
   * its running attempt stops); each counted from an index of those only, so
   * it costs what it counts.
   */
  jobCountPending(params: { tenantId: string }): Promise<number>;
  /** Sets a tenant's limits whole, and the audit entry (if given) in the same transaction; a new weight applies to the next cross-tenant lease. */
  tenantLimitsPut(params: { tenantId: string; limits: TenantLimitSettings; now: number; audit?: AuditEntry }): Promise<TenantLimitSettings>;

  // ---- payload blobs (blobs.ts) ---------------------------------------------------
  // A payload larger than the inline limit is written before its job: begun
  // (writing), its chunks in bounded transactions, sealed (ready), and once
  // the job is created with its marker, attached. A crash at any point leaves
  // rows blobSweep finds: nothing of a blob is read before it is sealed.

  /** Records a blob about to be written (state writing), flushed before any of its bytes: the sweep can always find what a crash left. */
  blobBegin(params: { blob: Pick<BlobRecord, "blobId" | "tenantId" | "jobId" | "backend" | "createdAt"> }): Promise<void>;
  /** Stores chunks first, first + 1, … of a blob's bytes (the "store" backend), in one transaction; a chunk written again replaces itself. */
  blobChunksPut(params: { blobId: string; first: number; chunks: readonly Uint8Array[] }): Promise<void>;
  /** Up to `limit` chunks of a blob from `first` on, in order (fewer at its end). */
  blobChunksGet(params: { blobId: string; first: number; limit: number }): Promise<Uint8Array[]>;
  /** Deletes every chunk of these blobs. */
  blobChunksDelete(params: { blobIds: readonly string[] }): Promise<void>;
  /** writing → ready with its size, digest and chunk count, flushed; false (nothing changed) when the blob is not writing. */
  blobSeal(params: { blobId: string; bytes: number; sha256: string; chunks: number }): Promise<boolean>;
  /** ready → attached: their jobs were created with them. */
  blobAttach(params: { blobIds: readonly string[] }): Promise<void>;
  /** A blob that may be read (ready or attached): of this tenant only when tenantId is given; null otherwise. */
  blobGet(params: { blobId: string; tenantId?: string }): Promise<BlobRecord | null>;
  /**
   * One round of the sweep, oldest first, up to `limit`: attaches the ready
   * blobs created before `before` whose job exists (a crash between the job's
   * create and the attach), and answers the blobs to remove: gone ones, and
   * those created before `before` still writing or ready without their job.
   * Changes nothing else; the caller deletes their bytes, then blobRemove.
   */
  blobSweep(params: { before: number; limit: number }): Promise<BlobRecord[]>;
  /** Deletes these blobs' index rows (their bytes first: blobChunksDelete, or the backend's own delete). */
  blobRemove(params: { blobIds: readonly string[] }): Promise<void>;

  // ---- retention ----------------------------------------------------------------
  // What is due for removal: rows of one kind whose retention started before
  // `before`, oldest first:
  // - executions: SUCCEEDED, DEAD, CANCELLED or SKIPPED ones that finished
  //   before `before` (never a READY or RUNNING one), with their attempts,
  //   and a one-off's job with the last of them (its state is read from
  //   them: core/states.ts ONE_OFF_END);
  // - jobs: COMPLETED, DEAD or CANCELLED jobs last changed before `before`
  //   that have no execution left, with their due entry;
  // - idempotency: keys stored before `before`;
  // - audit: entries recorded before `before`.
  // The engine archives what retentionExpired reads, then removes exactly
  // that with retentionPurge's `only`; no engine code runs inside a
  // transaction, so the archive may take its time (and an await).

  /**
   * Reads, without changing any row, up to `limit` due rows of one kind,
   * oldest first, as the archive takes them; for executions, followed by the
   * rows (of kind jobs) of the one-offs that go with them. A driver with time partitions
   * (PostgreSQL, postgres/partitions.ts) may do its partition upkeep here:
   * create the ranges ahead, and drop an old range none of whose rows is left
   * (with an archive, retention runs through this call and purge's `only`).
   */
  retentionExpired(params: { kind: RetentionKind; before: number; limit: number }): Promise<PurgedRow[]>;
  /**
   * Removes due rows of one kind in one transaction, with the attempts of
   * removed executions and the due entry of removed jobs. With `only` (rows
   * retentionExpired answered; at most the first `limit`), removes those that
   * are still due, checked in the delete itself: one that came back to life
   * meanwhile (a replayed dead letter, a rescheduled job) stays. Without
   * `only`, removes up to `limit` due rows, oldest first; a PostgreSQL driver
   * may instead drop whole time partitions older than `before`, and so remove
   * more than `limit` at once. Answers how many rows were removed (attempts
   * and due entries not counted), and for executions how many one-off jobs
   * went with them (`jobs`, present when some did).
   */
  retentionPurge(params: {
    kind: RetentionKind;
    before: number;
    limit: number;
    only?: readonly { tenantId: string; id: string }[];
  }): Promise<{ deleted: number; jobs?: number }>;
}
