// The Service implementation: semantics of every API call on top of the
// store, the scheduler and the executor. Shapes were validated before this
// point (core/schemas.ts); here live the rules: defaults, state machines,
// idempotency, fencing answers, cursors.

import { createHash } from "node:crypto";
import type {
  AckItem,
  ApiKeyInfo,
  AuditItem,
  BackfillRequest,
  BackfillResponse,
  BatchCreateItem,
  BatchCreateResult,
  ClusterView,
  CompleteItem,
  CompleteResponse,
  CreatedJob,
  CreatedKey,
  CreateKeyRequest,
  DeadLetter,
  ErrorRecord,
  ExecutionItem,
  FailItem,
  FailResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  Job,
  JobPatch,
  JobSpec,
  LeaseRequest,
  LeaseResponse,
  ListJobsQuery,
  ListKeysQuery,
  OccurrenceItem,
  OccurrencesQuery,
  Page,
  PageQuery,
  PoolStats,
  PreviewQuery,
  PreviewResponse,
  Stats,
  SigningSecrets,
  TargetStatus,
} from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { CronSyntaxError, fireTimes, isValidTimeZone, parseCron } from "../core/cron/index.js";
import { DuetimeError, invalidArgument, notFound } from "../core/errors.js";
import { isExecutionId, isJobId, newId, shardOf } from "../core/ids.js";
import { canonicalJson, effectiveJob } from "../core/job-spec.js";
import { RETENTION_DEFAULTS } from "../core/retention.js";
import { firstOccurrence, isCron, nextOccurrence, type Occurrence } from "../core/schedule.js";
import { jobVerdict, occurrenceHome, PENDING_ON_ACTION, type JobAction } from "../core/states.js";
import { parseRfc3339, toIso } from "../core/time.js";
import type { JobRecord, NewJob, PendingChange, PendingReplace, Store } from "../store/store.js";
import { decodeCursor, encodeCursor } from "./cursor.js";
import { KeyManager } from "./keys.js";
import { SigningSecretReader } from "./signing-secrets.js";
import type { StoreHealth } from "./store-health.js";
import { ScheduleLedger } from "./ledger.js";
import { invalidState, poolOf, toExecution, toJob } from "./wire.js";
import { WorkerProtocol } from "./worker-protocol.js";
import type { Executor } from "./executor.js";
import type { ReadStore } from "./read-routing.js";
import type { ClusterSignals } from "./signals.js";
import type { Scheduler } from "./scheduler.js";
import type { RequestContext, Service, StoredKey } from "./service.js";

export interface JobsServiceOptions {
  store: Store;
  /** Tells the other nodes of due entries this node wrote (engine/signals.ts). */
  signals?: Pick<ClusterSignals, "send">;
  /** Where list and history reads go (engine/read-routing.ts; default the store). */
  reads?: ReadStore;
  clock: Clock;
  scheduler: Scheduler;
  executor: Executor;
  /** How long history is kept (the run ledger tells an occurrence older than that apart); default 30 days. */
  historyRetentionMs?: number;
  nodeId: string;
  /** The HTTP-target runner's view of its origins, all tenants' or one's (empty without the runner). */
  targets?: (view: { tenantId?: string }) => TargetStatus[];
  /** Reads each tenant's signing secrets (GET /v1/secrets/signing); without it, only the stored ones are shown. */
  signingSecrets?: SigningSecretReader;
  /** Readiness: the store answers and takes writes. */
  storeHealth: Pick<StoreHealth, "ready">;
}

const DEFAULT_LIMIT = 50;

export class JobsService implements Service {
  private readonly store: Store;
  /** Only for reads that show data, never for one that decides (read-routing.ts). */
  private readonly reads: ReadStore;
  private readonly clock: Clock;

  private readonly protocol: WorkerProtocol;
  private readonly ledger: ScheduleLedger;
  private readonly keys: KeyManager;
  private readonly secrets: SigningSecretReader;

  constructor(private readonly o: JobsServiceOptions) {
    this.store = o.store;
    this.reads = o.reads ?? o.store;
    this.clock = o.clock;
    this.protocol = new WorkerProtocol(o.store, o.clock, o.executor);
    this.ledger = new ScheduleLedger(o.store, this.reads, o.clock, o.executor, o.nodeId, o.historyRetentionMs ?? RETENTION_DEFAULTS.historyMs);
    this.keys = new KeyManager(o.store, o.clock);
    this.secrets = o.signingSecrets ?? new SigningSecretReader(o.store, new Map());
  }

  // ---- jobs ---------------------------------------------------------------------

  async createJob(ctx: RequestContext, spec: JobSpec, idempotencyKey?: string): Promise<CreatedJob> {
    const [result] = await this.createMany(ctx, [{ spec, idempotencyKey, prefix: "" }], true);
    return result as CreatedJob;
  }

  async createJobs(ctx: RequestContext, items: BatchCreateItem[]): Promise<BatchCreateResult[]> {
    const results = await this.createMany(
      ctx,
      items.map(({ idempotencyKey, ...spec }, i) => ({ spec, idempotencyKey, prefix: `jobs.${i}.` })),
      false,
    );
    return results.map((r) =>
      r instanceof DuetimeError ? (r.toJSON() as BatchCreateResult) : { jobId: r.jobId, nextRunAt: r.nextRunAt, created: r.created ?? true },
    );
  }

  /**
   * Validates each spec, then writes every valid one in one transaction.
   * `throwFirst` makes a single create throw instead of answering an error item.
   */
  private async createMany(
    ctx: RequestContext,
    specs: { spec: JobSpec; idempotencyKey: string | undefined; prefix: string }[],
    throwFirst: boolean,
  ): Promise<(CreatedJob | DuetimeError)[]> {
    const now = this.clock.now();
    const results: (CreatedJob | DuetimeError | null)[] = [];
    const writes: { index: number; job: NewJob }[] = [];
    specs.forEach(({ spec, idempotencyKey, prefix }, index) => {
      try {
        writes.push({ index, job: this.newJob(ctx, spec, idempotencyKey, now, prefix) });
        results.push(null);
      } catch (err) {
        if (throwFirst || !(err instanceof DuetimeError)) throw err;
        results.push(err);
      }
    });
    const outcomes = writes.length ? await this.store.jobCreateMany({ jobs: writes.map((w) => w.job), nodeId: this.o.nodeId, now }) : [];
    outcomes.forEach((outcome, i) => {
      const { index } = writes[i]!;
      if (outcome.status === "idempotency_mismatch") {
        const err = new DuetimeError("IDEMPOTENCY_MISMATCH", "this Idempotency-Key was used with a different request body", {
          field: specs.length > 1 || !throwFirst ? `jobs.${index}.idempotencyKey` : "Idempotency-Key",
        });
        if (throwFirst) throw err;
        results[index] = err;
        return;
      }
      if (outcome.status === "created") this.offer(outcome.job);
      results[index] = { ...toJob(outcome.job), created: outcome.status === "created" };
    });
    return results as (CreatedJob | DuetimeError)[];
  }

  private newJob(ctx: RequestContext, spec: JobSpec, idempotencyKey: string | undefined, now: number, prefix: string): NewJob {
    const jobId = newId(now);
    const { first, ...fields } = effectiveJob(spec, jobId, now, prefix);
    return {
      job: {
        tenantId: ctx.tenantId,
        jobId,
        shard: shardOf(jobId),
        ...fields,
        state: first || fields.kind === "once" ? "SCHEDULED" : "COMPLETED",
        createdAt: now,
      },
      ...occurrenceOf(fields.kind, first),
      ...(idempotencyKey !== undefined
        ? { idempotency: { key: idempotencyKey, requestHash: createHash("sha256").update(canonicalJson(spec)).digest("hex") } }
        : {}),
    };
  }

  /**
   * Hands a job's next occurrence on: a recurring job's due entry to the
   * scheduler's in-memory window; a one-off's execution, already in the
   * store, to the executor, which wakes its pool's long polls when it is due.
   */
  private offer(job: JobRecord): void {
    if (job.state !== "SCHEDULED" || job.nextRunAt === null || occurrenceHome(job.kind) === "execution") {
      this.o.scheduler.forget(job.jobId);
      if (job.state === "SCHEDULED" && job.nextDueAt !== null) this.o.executor.ready(job.tenantId, poolOf(job), job.nextDueAt);
      return;
    }
    const entry = {
      jobId: job.jobId,
      tenantId: job.tenantId,
      shard: job.shard,
      kind: job.kind,
      schedule: job.schedule,
      scheduledFor: job.nextRunAt,
      dueAt: job.nextDueAt ?? job.nextRunAt,
    };
    this.o.scheduler.offer(entry);
    // The shard's owner may be another node: it hears of an entry inside its loaded window at once.
    if (entry.dueAt <= this.clock.now() + this.o.scheduler.windowMs) this.o.signals?.send({ kind: "due", entry });
  }

  async getJob(ctx: RequestContext, jobId: string): Promise<Job> {
    return toJob(await this.requireJob(ctx, jobId));
  }

  private async requireJob(ctx: RequestContext, jobId: string): Promise<JobRecord> {
    const job = isJobId(jobId) ? await this.store.jobGet({ tenantId: ctx.tenantId, jobId }) : null;
    if (!job) throw notFound("job", jobId);
    return job;
  }

  async listJobs(ctx: RequestContext, query: ListJobsQuery): Promise<Page<Job>> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor, { c: "number", i: "string" }) : undefined;
    const rows = await this.reads.jobList({
      tenantId: ctx.tenantId,
      ...(query.state ? { state: query.state } : {}),
      ...(query.name ? { name: query.name } : {}),
      limit,
      ...(after ? { after: { createdAt: after.c, jobId: after.i } } : {}),
    });
    const last = rows[rows.length - 1];
    return {
      items: rows.map(toJob),
      nextCursor: rows.length === limit && last ? encodeCursor({ c: last.createdAt, i: last.jobId }) : null,
    };
  }

  async cancelJob(ctx: RequestContext, jobId: string): Promise<void> {
    await this.transition(ctx, jobId, "cancel", () => ({ due: null, cancelExecutions: true }));
  }

  async pauseJob(ctx: RequestContext, jobId: string): Promise<Job> {
    return toJob(await this.transition(ctx, jobId, "pause", (job) => ({ due: null, ...pendingChange(job, "pause", this.clock.now()) })));
  }

  async resumeJob(ctx: RequestContext, jobId: string): Promise<Job> {
    return toJob(
      await this.transition(ctx, jobId, "resume", (job) => {
        const now = this.clock.now();
        return { due: resumeOccurrence(job, now), ...pendingChange(job, "resume", now) };
      }),
    );
  }

  /** Applies a state-machine action by compare-and-set on the job's version, re-reading on a concurrent change. */
  private async transition(
    ctx: RequestContext,
    jobId: string,
    action: JobAction,
    change: (job: JobRecord) => { due: Occurrence | null; cancelExecutions?: boolean; pending?: PendingChange },
  ): Promise<JobRecord> {
    for (let tries = 0; tries < 5; tries++) {
      const job = await this.requireJob(ctx, jobId);
      const verdict = jobVerdict(job.state, action);
      if (verdict.kind === "invalid") throw invalidState(job, action);
      if (verdict.kind === "noop") return job;
      const plan = change(job);
      const updated = await this.store.jobTransition({
        tenantId: ctx.tenantId,
        jobId,
        fromVersion: job.version,
        state: verdict.to,
        due: plan.due,
        ...(plan.cancelExecutions ? { cancelExecutions: true } : {}),
        ...(plan.pending ? { pending: plan.pending } : {}),
        now: this.clock.now(),
      });
      if (updated) {
        this.offer(updated);
        return updated;
      }
    }
    throw new DuetimeError("VERSION_CONFLICT", "the job changed concurrently; retry");
  }

  async triggerJob(ctx: RequestContext, jobId: string): Promise<ExecutionItem> {
    const job = await this.requireJob(ctx, jobId);
    if (jobVerdict(job.state, "trigger").kind === "invalid") throw invalidState(job, "trigger");
    const now = this.clock.now();
    for (let at = now; at < now + 100; at++) {
      const [row] = await this.store.executionCreateMany({
        tenantId: ctx.tenantId,
        jobId,
        nodeId: this.o.nodeId,
        now,
        items: [{ scheduledFor: at, readyAt: now }],
      });
      if (row) {
        this.o.executor.ready(ctx.tenantId, poolOf(job));
        return toExecution(row, this.clock.now());
      }
    }
    throw new DuetimeError("RESOURCE_EXHAUSTED", "too many triggers of this job in the same instant", undefined, 1);
  }

  async updateJob(ctx: RequestContext, jobId: string, patch: JobPatch, expectedVersion?: number): Promise<Job> {
    const job = await this.requireJob(ctx, jobId);
    const version = expectedVersion ?? patch.version;
    if (version !== undefined && version !== job.version) {
      throw new DuetimeError("VERSION_CONFLICT", `the job is at version ${job.version}, not ${version}; GET it and retry`, { version: job.version });
    }
    if (job.state !== "SCHEDULED" && job.state !== "PAUSED") throw invalidState(job, "change");
    const now = this.clock.now();
    const { version: _v, ...changes } = patch;
    const spec: JobSpec = {
      name: job.name,
      target: job.target,
      payload: job.payload,
      schedule: job.schedule,
      retry: job.retry,
      timeoutSeconds: job.timeoutSeconds,
      priority: job.priority,
      ...changes,
      // retry changes only the fields it names
      ...(changes.retry ? { retry: { ...job.retry, ...changes.retry } } : {}),
    };
    const { first, ...fields } = effectiveJob(spec, jobId, now);
    const updated = await this.store.jobUpdate({
      tenantId: ctx.tenantId,
      jobId,
      fromVersion: job.version,
      fields,
      ...nextAfterPatch(job, fields.kind, { changed: patch.schedule !== undefined, first }),
      nodeId: this.o.nodeId,
      now,
    });
    if (!updated) throw new DuetimeError("VERSION_CONFLICT", "the job changed concurrently; GET it and retry");
    this.offer(updated);
    return toJob(updated);
  }

  async backfillJob(ctx: RequestContext, jobId: string, request: BackfillRequest): Promise<BackfillResponse> {
    return this.ledger.backfill(await this.requireJob(ctx, jobId), request);
  }

  async listOccurrences(ctx: RequestContext, jobId: string, query: OccurrencesQuery): Promise<{ items: OccurrenceItem[] }> {
    return this.ledger.occurrences(await this.requireJob(ctx, jobId), query);
  }

  async listExecutions(ctx: RequestContext, jobId: string, query: PageQuery): Promise<Page<ExecutionItem>> {
    await this.requireJob(ctx, jobId);
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor, { s: "number", a: "number" }) : undefined;
    const rows = await this.reads.executionHistory({
      tenantId: ctx.tenantId,
      jobId,
      limit,
      ...(after ? { after: { scheduledFor: after.s, attempt: after.a } } : {}),
    });
    const last = rows[rows.length - 1];
    return {
      items: rows.map((r) => toExecution(r, this.clock.now())),
      nextCursor: rows.length === limit && last ? encodeCursor({ s: last.scheduledFor, a: last.attempt }) : null,
    };
  }

  // ---- dead letters -------------------------------------------------------------------

  async listDeadLetters(ctx: RequestContext, query: PageQuery): Promise<Page<DeadLetter>> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor, { d: "number", e: "string" }) : undefined;
    const rows = await this.reads.deadLetterList({
      tenantId: ctx.tenantId,
      limit,
      ...(after ? { after: { deadAt: after.d, executionId: after.e } } : {}),
    });
    const last = rows[rows.length - 1];
    return {
      items: rows.map((r) => ({
        executionId: r.executionId,
        jobId: r.jobId,
        name: r.name,
        scheduledFor: toIso(r.scheduledFor),
        attempts: r.attempts,
        lastError: r.lastError,
        deadAt: toIso(r.deadAt),
        payload: r.payload,
      })),
      nextCursor: rows.length === limit && last ? encodeCursor({ d: last.deadAt, e: last.executionId }) : null,
    };
  }

  async replayDeadLetter(ctx: RequestContext, executionId: string): Promise<ExecutionItem> {
    if (!isExecutionId(executionId)) throw notFound("dead letter", executionId);
    const now = this.clock.now();
    const replayed = await this.store.deadLetterReplay({
      tenantId: ctx.tenantId,
      executionId,
      now,
      audit: { tenantId: ctx.tenantId, at: now, actor: ctx.actor ?? "admin", action: "dead-letter.replay", subject: executionId },
    });
    if (!replayed) throw notFound("dead letter", executionId);
    this.o.executor.ready(ctx.tenantId, replayed.pool);
    return { ...toExecution(replayed.row, this.clock.now()), attempt: replayed.row.attempt + 1 };
  }

  async listAudit(ctx: RequestContext, query: PageQuery): Promise<Page<AuditItem>> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor, { t: "number", i: "number" }) : undefined;
    const rows = await this.reads.auditList({ tenantId: ctx.tenantId, limit, ...(after ? { after: { at: after.t, id: after.i } } : {}) });
    const last = rows[rows.length - 1];
    return {
      items: rows.map((r) => ({ at: toIso(r.at), actor: r.actor, action: r.action, subject: r.subject, details: r.details ?? null })),
      nextCursor: rows.length === limit && last ? encodeCursor({ t: last.at, i: last.id }) : null,
    };
  }

  // ---- API keys (keys.ts) ----------------------------------------------------------------

  createKey(ctx: RequestContext, request: CreateKeyRequest): Promise<CreatedKey> {
    return this.keys.create(ctx, request);
  }

  listKeys(ctx: RequestContext, query: ListKeysQuery): Promise<Page<ApiKeyInfo>> {
    return this.keys.list(ctx, query);
  }

  revokeKey(ctx: RequestContext, keyId: string): Promise<void> {
    return this.keys.revoke(ctx, keyId);
  }

  findKey(digest: string): Promise<StoredKey | null> {
    return this.keys.find(digest);
  }

  hasStoredKeys(): Promise<boolean> {
    return this.keys.any();
  }

  // ---- signing secrets (signing-secrets.ts) ------------------------------------------

  signingSecrets(ctx: RequestContext): Promise<SigningSecrets> {
    return this.secrets.show(ctx);
  }

  // ---- worker protocol (worker-protocol.ts) --------------------------------------

  lease(ctx: RequestContext, pool: string, request: LeaseRequest): Promise<LeaseResponse> {
    return this.protocol.lease(ctx, pool, request);
  }

  heartbeat(ctx: RequestContext, executionId: string, request: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.protocol.heartbeat(ctx, executionId, request);
  }

  complete(ctx: RequestContext, executionId: string, attempt: number, result?: unknown): Promise<CompleteResponse> {
    return this.protocol.complete(ctx, executionId, attempt, result);
  }

  fail(ctx: RequestContext, executionId: string, attempt: number, error: ErrorRecord): Promise<FailResponse> {
    return this.protocol.fail(ctx, executionId, attempt, error);
  }

  completeMany(ctx: RequestContext, items: CompleteItem[]): Promise<AckItem[]> {
    return this.protocol.completeMany(ctx, items);
  }

  failMany(ctx: RequestContext, items: FailItem[]): Promise<AckItem[]> {
    return this.protocol.failMany(ctx, items);
  }

  // ---- stats, preview, health -------------------------------------------------------------

  async poolStats(ctx: RequestContext, pool: string): Promise<PoolStats> {
    const [row] = await this.reads.poolCounts({ tenantId: ctx.tenantId, pool, now: this.clock.now() });
    return { pending: row?.pending ?? 0, queued: row?.queued ?? 0, running: row?.running ?? 0 };
  }

  async stats(ctx: RequestContext): Promise<Stats> {
    const rows = await this.reads.poolCounts({ tenantId: ctx.tenantId, now: this.clock.now() });
    const stats: Stats = { pools: {}, tenants: {} };
    for (const r of rows) {
      const counts = { pending: r.pending, queued: r.queued, running: r.running };
      stats.pools[r.pool] = addCounts(stats.pools[r.pool], counts);
      stats.tenants[r.tenantId] = addCounts(stats.tenants[r.tenantId], counts);
    }
    return stats;
  }

  async previewSchedule(query: PreviewQuery): Promise<PreviewResponse> {
    const tz = query.tz ?? "UTC";
    if (!isValidTimeZone(tz)) throw invalidArgument("tz", `${JSON.stringify(tz)} is not a known IANA time zone`);
    let from = this.clock.now();
    if (query.from !== undefined) {
      const parsed = parseRfc3339(query.from);
      if (parsed === null) throw invalidArgument("from", `${JSON.stringify(query.from)} is not an RFC 3339 time`);
      from = parsed;
    }
    let expr: ReturnType<typeof parseCron>;
    try {
      expr = parseCron(query.cron);
    } catch (err) {
      if (err instanceof CronSyntaxError) throw invalidArgument("cron", err.message, { cronField: err.field, token: err.token });
      throw err;
    }
    const times = fireTimes(expr, tz, from, query.count ?? 10);
    return { times: times.map((t) => toIso(t.at)), local: times.map((t) => t.local), dst: times.map((t) => t.dst ?? null) };
  }

  /** The live nodes (heartbeat rows) with the shards each holds, and every shard lease. */
  async cluster(): Promise<ClusterView> {
    // Leases and heartbeats are the store's clock's (shard-keeper.ts), not this node's.
    const now = this.clock.storeNow() ?? (await this.store.storeTime());
    const seconds = (ms: number): number => Math.round(ms) / 1000;
    const nodes = await this.store.nodeList({ now });
    const shards = await this.store.shardList();
    const byOwner = new Map<string, number[]>();
    for (const s of shards) if (s.owner && s.leaseUntil >= now) byOwner.set(s.owner, [...(byOwner.get(s.owner) ?? []), s.shard]);
    return {
      storeTime: toIso(now),
      nodes: nodes.map((n) => ({
        nodeId: n.nodeId,
        address: n.address,
        shards: byOwner.get(n.nodeId) ?? [],
        lastHeartbeatAt: toIso(n.lastHeartbeatAt),
        heartbeatAgeSeconds: seconds(now - n.lastHeartbeatAt),
      })),
      shards: shards.map((s) => ({
        shard: s.shard,
        owner: s.owner,
        epoch: s.epoch,
        leaseUntil: toIso(s.leaseUntil),
        leaseRemainingSeconds: seconds(s.leaseUntil - now),
      })),
    };
  }

  /** A tenant's admin sees the origins its own jobs call; a bootstrap admin sees every tenant's, counted together. */
  async listTargets(ctx: RequestContext): Promise<{ items: TargetStatus[] }> {
    return { items: this.o.targets?.(ctx.bootstrap ? {} : { tenantId: ctx.tenantId }) ?? [] };
  }

  ready(): Promise<boolean> {
    return this.o.storeHealth.ready();
  }
}

/** Where a new job's first occurrence goes (core/states.ts occurrenceHome): the due index, or its execution. */
function occurrenceOf(kind: "once" | "cron", first: Occurrence | null): Pick<NewJob, "due" | "execution"> {
  if (occurrenceHome(kind) === "due") return { due: first };
  return first ? { due: null, execution: first } : { due: null };
}

/** The scheduledFor of a one-off's own execution: its runAt. */
function runAtOf(job: JobRecord): number | null {
  return occurrenceHome(job.kind) === "execution" && !isCron(job.schedule) ? parseRfc3339(job.schedule.runAt)! : null;
}

/** What a pause or resume does to a one-off's pending execution (core/states.ts PENDING_ON_ACTION); nothing for a recurring job. */
function pendingChange(job: JobRecord, action: JobAction, now: number): { pending?: PendingChange } {
  const runAt = runAtOf(job);
  const effect = PENDING_ON_ACTION[action];
  if (runAt === null || !effect) return {};
  // Resuming a one-off whose time passed runs it at once.
  return effect === "hold" ? { pending: { hold: runAt } } : { pending: { release: { scheduledFor: runAt, readyAt: Math.max(runAt, now) } } };
}

/**
 * Where a resumed recurring job picks up (a one-off's execution is released
 * instead: pendingChange). It resumes at its first occurrence after the pause
 * (the pause time is the job's updatedAt): when that passed, it is due now and
 * the scheduler's misfire rule (core/misfire.ts) decides what of the missed
 * ones runs.
 */
function resumeOccurrence(job: JobRecord, now: number): Occurrence | null {
  if (!isCron(job.schedule)) return null;
  const missed = nextOccurrence(job.schedule, job.jobId, job.updatedAt);
  if (missed && missed.scheduledFor <= now) return { scheduledFor: missed.scheduledFor, dueAt: now };
  return firstOccurrence(job.schedule, job.jobId, now);
}

/**
 * Where a PATCH leaves the job's next occurrence; `first` is the new
 * schedule's, when the PATCH changed the schedule. A recurring job's due
 * entry moves (a dispatch of the old one still in flight finds it gone); a
 * paused one has none until it resumes. A one-off's pending execution is
 * rebuilt from the new definition, at the new time when the schedule moved,
 * so a changed payload or target reaches it; a change of kind moves the
 * occurrence from one home to the other.
 */
function nextAfterPatch(
  job: JobRecord,
  kind: "once" | "cron",
  schedule: { changed: boolean; first: Occurrence | null },
): { due: Occurrence | null | "keep"; pending?: PendingReplace } {
  const from = runAtOf(job);
  if (occurrenceHome(kind) === "due") {
    const due = !schedule.changed ? "keep" : job.state === "SCHEDULED" ? schedule.first : null;
    return from === null ? { due } : { due, pending: { from, to: null } };
  }
  const to = schedule.changed ? schedule.first : from !== null ? { scheduledFor: from, dueAt: from } : null;
  return { due: occurrenceHome(job.kind) === "due" ? null : "keep", pending: { from, to } };
}

function addCounts(a: PoolStats | undefined, b: PoolStats): PoolStats {
  return { pending: (a?.pending ?? 0) + b.pending, queued: (a?.queued ?? 0) + b.queued, running: (a?.running ?? 0) + b.running };
}
