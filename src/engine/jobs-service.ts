// The Service implementation: semantics of every API call on top of the
// store, the scheduler and the executor. Shapes were validated before this
// point (core/schemas.ts); here live the rules: defaults, state machines,
// idempotency, fencing answers, cursors.

import { createHash } from "node:crypto";
import type {
  AckItem,
  AuditItem,
  BackfillRequest,
  BackfillResponse,
  BatchCreateItem,
  BatchCreateResult,
  ClusterView,
  CompleteItem,
  CreatedJob,
  DeadLetter,
  ErrorRecord,
  ExecutionItem,
  FailItem,
  FailResponse,
  HeartbeatRequest,
  Job,
  JobPatch,
  JobSpec,
  LeaseRequest,
  LeaseResponse,
  ListJobsQuery,
  OccurrenceItem,
  OccurrencesQuery,
  Page,
  PageQuery,
  PoolStats,
  PreviewQuery,
  PreviewResponse,
  Stats,
  TargetStatus,
} from "../core/api.js";
import type { Clock } from "../core/clock.js";
import { CronSyntaxError, fireTimes, isValidTimeZone, parseCron } from "../core/cron/index.js";
import { DuetimeError, invalidArgument, notFound } from "../core/errors.js";
import { executionIdFor, isExecutionId, isJobId, newId, shardOf } from "../core/ids.js";
import { canonicalJson, effectiveJob } from "../core/job-spec.js";
import { fireTimesBetween, firstOccurrence, isCron, localTime, nextOccurrence, type Occurrence } from "../core/schedule.js";
import { jobVerdict, type JobAction } from "../core/states.js";
import { parseRfc3339, toIso, toIsoOrNull } from "../core/time.js";
import type { AckOutcome, AttemptRow, JobRecord, NewJob, Store } from "../store/store.js";
import { HTTP_POOL } from "../store/store.js";
import { decodeCursor, encodeCursor } from "./cursor.js";
import type { Executor } from "./executor.js";
import type { Scheduler } from "./scheduler.js";
import type { RequestContext, Service } from "./service.js";

export interface JobsServiceOptions {
  store: Store;
  clock: Clock;
  scheduler: Scheduler;
  executor: Executor;
  nodeId: string;
  /** The HTTP-target runner's view of its origins (empty without the runner). */
  targets?: () => TargetStatus[];
}

const DEFAULT_LIMIT = 50;

export class JobsService implements Service {
  private readonly store: Store;
  private readonly clock: Clock;

  constructor(private readonly o: JobsServiceOptions) {
    this.store = o.store;
    this.clock = o.clock;
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
    const outcomes = writes.length ? await this.store.jobCreateMany({ jobs: writes.map((w) => w.job), now }) : [];
    outcomes.forEach((outcome, i) => {
      const { index } = writes[i]!;
      if (outcome.status === "idempotency_mismatch") {
        const err = new DuetimeError(
          "IDEMPOTENCY_MISMATCH",
          "this Idempotency-Key was used with a different request body",
          { field: specs.length > 1 || !throwFirst ? `jobs.${index}.idempotencyKey` : "Idempotency-Key" },
        );
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
    const eff = effectiveJob(spec, jobId, now, prefix);
    return {
      job: {
        tenantId: ctx.tenantId,
        jobId,
        shard: shardOf(jobId),
        kind: eff.kind,
        name: eff.name,
        state: eff.first || eff.kind === "once" ? "SCHEDULED" : "COMPLETED",
        target: eff.target,
        payload: eff.payload,
        schedule: eff.schedule,
        retry: eff.retry,
        timeoutSeconds: eff.timeoutSeconds,
        priority: eff.priority,
        createdAt: now,
      },
      due: eff.first,
      ...(idempotencyKey !== undefined
        ? { idempotency: { key: idempotencyKey, requestHash: createHash("sha256").update(canonicalJson(spec)).digest("hex") } }
        : {}),
    };
  }

  /** Hands a job's due entry to the scheduler's in-memory window. */
  private offer(job: JobRecord): void {
    if (job.state !== "SCHEDULED" || job.nextRunAt === null) {
      this.o.scheduler.forget(job.jobId);
      return;
    }
    this.o.scheduler.offer({
      jobId: job.jobId,
      tenantId: job.tenantId,
      shard: job.shard,
      kind: job.kind,
      schedule: job.schedule,
      scheduledFor: job.nextRunAt,
      dueAt: job.nextDueAt ?? job.nextRunAt,
    });
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
    const rows = await this.store.jobList({
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
    return toJob(await this.transition(ctx, jobId, "pause", () => ({ due: null })));
  }

  async resumeJob(ctx: RequestContext, jobId: string): Promise<Job> {
    const job = await this.requireJob(ctx, jobId);
    const due = job.state === "PAUSED" ? await this.resumeOccurrence(job, this.clock.now()) : null;
    return toJob(
      await this.transition(ctx, jobId, "resume", (current) => {
        if (current.version !== job.version) throw new RetryTransition();
        return { due };
      }),
    );
  }

  /**
   * Where a resumed job picks up. A one-off that never ran runs at its time,
   * or at once if that passed. A recurring job resumes at its first
   * occurrence after the pause (the pause time is the job's updatedAt): when
   * that passed, it is due now and the scheduler's misfire rule
   * (core/misfire.ts) decides what of the missed ones runs.
   */
  private async resumeOccurrence(job: JobRecord, now: number): Promise<Occurrence | null> {
    if (!isCron(job.schedule)) {
      const ran = await this.store.executionHistory({ tenantId: job.tenantId, jobId: job.jobId, limit: 1 });
      if (ran.length > 0) return null;
      const runAt = parseRfc3339(job.schedule.runAt)!;
      return { scheduledFor: runAt, dueAt: Math.max(runAt, now) };
    }
    const missed = nextOccurrence(job.schedule, job.jobId, job.updatedAt);
    if (missed && missed.scheduledFor <= now) return { scheduledFor: missed.scheduledFor, dueAt: now };
    return firstOccurrence(job.schedule, job.jobId, now);
  }

  /** Applies a state-machine action by compare-and-set on the job's version, re-reading on a concurrent change. */
  private async transition(
    ctx: RequestContext,
    jobId: string,
    action: JobAction,
    change: (job: JobRecord) => { due: Occurrence | null; cancelExecutions?: boolean },
  ): Promise<JobRecord> {
    for (let tries = 0; tries < 5; tries++) {
      const job = await this.requireJob(ctx, jobId);
      const verdict = jobVerdict(job.state, action);
      if (verdict.kind === "invalid") throw invalidState(job, action);
      if (verdict.kind === "noop") return job;
      let plan: ReturnType<typeof change>;
      try {
        plan = change(job);
      } catch (err) {
        if (err instanceof RetryTransition) continue;
        throw err;
      }
      const updated = await this.store.jobTransition({
        tenantId: ctx.tenantId,
        jobId,
        fromVersion: job.version,
        state: verdict.to,
        due: plan.due,
        ...(plan.cancelExecutions ? { cancelExecutions: true } : {}),
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
      const [row] = await this.store.executionCreateMany({ tenantId: ctx.tenantId, jobId, nodeId: this.o.nodeId, now, items: [{ scheduledFor: at, readyAt: now }] });
      if (row) {
        this.o.executor.notify(ctx.tenantId, poolOf(job));
        return this.toExecution(row);
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
    const eff = effectiveJob(spec, jobId, now);
    // A new schedule moves the next occurrence; a dispatch of the old one still in flight finds its due entry gone.
    const due = patch.schedule === undefined ? "keep" : job.state === "SCHEDULED" ? eff.first : null;
    const updated = await this.store.jobUpdate({
      tenantId: ctx.tenantId,
      jobId,
      fromVersion: job.version,
      fields: {
        kind: eff.kind,
        name: eff.name,
        target: eff.target,
        payload: eff.payload,
        schedule: eff.schedule,
        retry: eff.retry,
        timeoutSeconds: eff.timeoutSeconds,
        priority: eff.priority,
      },
      due,
      now,
    });
    if (!updated) throw new DuetimeError("VERSION_CONFLICT", "the job changed concurrently; GET it and retry");
    this.offer(updated);
    return toJob(updated);
  }

  async backfillJob(ctx: RequestContext, jobId: string, request: BackfillRequest): Promise<BackfillResponse> {
    const job = await this.requireJob(ctx, jobId);
    if (!isCron(job.schedule)) throw new DuetimeError("INVALID_STATE", "backfill applies to recurring (cron) jobs");
    if (job.state === "CANCELLED") throw invalidState(job, "backfill");
    const now = this.clock.now();
    const { from, to } = window(request, now);
    const times = fireTimesBetween(job.schedule, jobId, from, to, BACKFILL_MAX + 1).map((f) => f.at);
    if (times.length > BACKFILL_MAX) {
      throw invalidArgument("to", `the window holds more than ${BACKFILL_MAX} occurrences; backfill it in parts`);
    }
    const rows = await this.store.executionCreateMany({
      tenantId: ctx.tenantId,
      jobId,
      nodeId: this.o.nodeId,
      now,
      // a bounded rate: one occurrence per BACKFILL_SPACING_MS
      items: times.map((scheduledFor, i) => ({ scheduledFor, readyAt: now + i * BACKFILL_SPACING_MS })),
    });
    const pool = poolOf(job);
    const items = times.map((scheduledFor, i) => {
      const row = rows[i];
      if (row) this.o.executor.notifyAt(ctx.tenantId, pool, row.readyAt ?? now);
      return {
        scheduledFor: toIso(scheduledFor),
        executionId: executionIdFor(jobId, scheduledFor),
        created: row !== null,
        readyAt: row ? toIsoOrNull(row.readyAt) : null,
      };
    });
    return { items };
  }

  async listOccurrences(ctx: RequestContext, jobId: string, query: OccurrencesQuery): Promise<{ items: OccurrenceItem[] }> {
    const job = await this.requireJob(ctx, jobId);
    const now = this.clock.now();
    const { from, to } = window(query, Infinity);
    const fires: { at: number; local: string; dst?: "gap" | "overlap" }[] = isCron(job.schedule)
      ? fireTimesBetween(job.schedule, jobId, from, to, LEDGER_MAX + 1)
      : [parseRfc3339(job.schedule.runAt)!].filter((t) => t > from && t <= to).map((at) => ({ at, local: toIso(at).slice(0, 19) }));
    if (fires.length > LEDGER_MAX) throw invalidArgument("to", `the window holds more than ${LEDGER_MAX} occurrences; ask for a shorter one`);
    const executions = new Map((await this.store.executionsInWindow({ tenantId: ctx.tenantId, jobId, from: from + 1, to })).map((e) => [e.scheduledFor, e]));
    const items = fires.map((f): OccurrenceItem => {
      const item: OccurrenceItem = { scheduledFor: toIso(f.at), local: f.local, status: "due", ...(f.dst ? { dst: f.dst } : {}) };
      const execution = executions.get(f.at);
      executions.delete(f.at);
      if (execution) return { ...item, ...this.ledgerExecution(execution) };
      return { ...item, ...notRun(job, f.at, now) };
    });
    // Executions at other times: triggers, or occurrences of an earlier schedule.
    for (const e of executions.values()) {
      const tz = isCron(job.schedule) ? job.schedule.tz : "UTC";
      items.push({ scheduledFor: toIso(e.scheduledFor), local: localTime(e.scheduledFor, tz).slice(0, 19), status: "dispatched", ...this.ledgerExecution(e) });
    }
    items.sort((a, b) => a.scheduledFor.localeCompare(b.scheduledFor));
    return { items };
  }

  private ledgerExecution(e: AttemptRow): Partial<OccurrenceItem> {
    const executionState = this.toExecution({ ...e, attempt: 0 }).state;
    if (e.state === "SKIPPED") {
      const reason = (e.error?.reason as OccurrenceItem["reason"]) ?? "misfire";
      return { status: "skipped", reason, executionId: e.executionId, executionState };
    }
    return { status: "dispatched", executionId: e.executionId, executionState };
  }

  async listExecutions(ctx: RequestContext, jobId: string, query: PageQuery): Promise<Page<ExecutionItem>> {
    await this.requireJob(ctx, jobId);
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor, { s: "number", a: "number" }) : undefined;
    const rows = await this.store.executionHistory({
      tenantId: ctx.tenantId,
      jobId,
      limit,
      ...(after ? { after: { scheduledFor: after.s, attempt: after.a } } : {}),
    });
    const last = rows[rows.length - 1];
    return {
      items: rows.map((r) => this.toExecution(r)),
      nextCursor: rows.length === limit && last ? encodeCursor({ s: last.scheduledFor, a: last.attempt }) : null,
    };
  }

  private toExecution(r: AttemptRow): ExecutionItem {
    const state = r.state === "READY" ? ((r.readyAt ?? 0) > this.clock.now() ? "PENDING" : "QUEUED") : r.state;
    return {
      executionId: r.executionId,
      jobId: r.jobId,
      scheduledFor: toIso(r.scheduledFor),
      attempt: r.attempt,
      state: state as ExecutionItem["state"],
      dispatchedAt: toIso(r.dispatchedAt),
      dispatchedBy: r.dispatchedBy,
      startedAt: toIsoOrNull(r.startedAt),
      finishedAt: toIsoOrNull(r.finishedAt),
      error: r.error,
      workerId: r.workerId,
    };
  }

  // ---- dead letters -------------------------------------------------------------------

  async listDeadLetters(ctx: RequestContext, query: PageQuery): Promise<Page<DeadLetter>> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor, { d: "number", e: "string" }) : undefined;
    const rows = await this.store.deadLetterList({
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
    this.o.executor.notify(ctx.tenantId, replayed.pool);
    return { ...this.toExecution(replayed.row), attempt: replayed.row.attempt + 1 };
  }

  async listAudit(ctx: RequestContext, query: PageQuery): Promise<Page<AuditItem>> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor, { t: "number", i: "number" }) : undefined;
    const rows = await this.store.auditList({ tenantId: ctx.tenantId, limit, ...(after ? { after: { at: after.t, id: after.i } } : {}) });
    const last = rows[rows.length - 1];
    return {
      items: rows.map((r) => ({ at: toIso(r.at), actor: r.actor, action: r.action, subject: r.subject, details: r.details ?? null })),
      nextCursor: rows.length === limit && last ? encodeCursor({ t: last.at, i: last.id }) : null,
    };
  }

  // ---- worker protocol --------------------------------------------------------------------

  async lease(ctx: RequestContext, pool: string, request: LeaseRequest): Promise<LeaseResponse> {
    const complete = (request.complete ?? []).filter((i) => isExecutionId(i.executionId));
    const fail = (request.fail ?? []).filter((i) => isExecutionId(i.executionId));
    const result = await this.o.executor.lease({
      tenantId: ctx.tenantId,
      pool,
      workerId: request.workerId,
      max: request.max ?? 1,
      leaseMs: (request.leaseSeconds ?? 30) * 1000,
      waitMs: (request.waitSeconds ?? 0) * 1000,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      complete: complete.map((i) => ({ executionId: i.executionId, tenantId: ctx.tenantId, attempt: i.attempt, result: i.result })),
      fail: fail.map((i) => ({ executionId: i.executionId, tenantId: ctx.tenantId, attempt: i.attempt, error: i.error })),
    });
    const items = result.leased.map((r) => ({
      executionId: r.executionId,
      jobId: r.jobId,
      name: r.name,
      attempt: r.attempt,
      payload: r.payload,
      scheduledFor: toIso(r.scheduledFor),
      leaseUntil: toIso(r.leaseUntil),
      timeoutSeconds: r.timeoutSeconds,
    }));
    if (!request.complete?.length && !request.fail?.length) return { items };
    return {
      items,
      acks: [...mergeAcks(request.complete ?? [], complete, result.completed), ...mergeAcks(request.fail ?? [], fail, result.failed)],
    };
  }

  async heartbeat(ctx: RequestContext, executionId: string, request: HeartbeatRequest) {
    const res = isExecutionId(executionId)
      ? await this.store.executionHeartbeat({
          tenantId: ctx.tenantId,
          executionId,
          attempt: request.attempt,
          ...(request.leaseSeconds !== undefined ? { leaseMs: request.leaseSeconds * 1000 } : {}),
          now: this.clock.now(),
        })
      : ({ status: "not_found" } as const);
    if (res.status === "not_found") throw notFound("execution", executionId);
    if (res.status === "lost") throw leaseLost(executionId, request.attempt);
    return { leaseUntil: toIso(res.leaseUntil), cancelRequested: res.cancelRequested };
  }

  async complete(ctx: RequestContext, executionId: string, attempt: number, result?: unknown) {
    const [ack] = await this.completeMany(ctx, [{ executionId, attempt, result }]);
    throwIfRejected(ack!);
    return { state: "SUCCEEDED" as const };
  }

  async fail(ctx: RequestContext, executionId: string, attempt: number, error: ErrorRecord): Promise<FailResponse> {
    const [ack] = await this.failMany(ctx, [{ executionId, attempt, error }]);
    throwIfRejected(ack!);
    const ok = ack as Extract<AckItem, { status: 200 }>;
    if (ok.state === "DEAD") return { state: "DEAD", dead: true };
    if (ok.state === "CANCELLED") return { state: "CANCELLED" };
    return { state: "FAILED", retryAt: ok.retryAt! };
  }

  async completeMany(ctx: RequestContext, items: CompleteItem[]): Promise<AckItem[]> {
    const known = items.filter((i) => isExecutionId(i.executionId));
    const outcomes = await this.o.executor.complete(
      known.map((i) => ({ executionId: i.executionId, tenantId: ctx.tenantId, attempt: i.attempt, result: i.result })),
    );
    return mergeAcks(items, known, outcomes);
  }

  async failMany(ctx: RequestContext, items: FailItem[]): Promise<AckItem[]> {
    const known = items.filter((i) => isExecutionId(i.executionId));
    const outcomes = await this.o.executor.fail(
      known.map((i) => ({ executionId: i.executionId, tenantId: ctx.tenantId, attempt: i.attempt, error: i.error })),
    );
    return mergeAcks(items, known, outcomes);
  }

  // ---- stats, preview, health -------------------------------------------------------------

  async poolStats(ctx: RequestContext, pool: string): Promise<PoolStats> {
    const [row] = await this.store.poolCounts({ tenantId: ctx.tenantId, pool, now: this.clock.now() });
    return { pending: row?.pending ?? 0, queued: row?.queued ?? 0, running: row?.running ?? 0 };
  }

  async stats(ctx: RequestContext): Promise<Stats> {
    const rows = await this.store.poolCounts({ tenantId: ctx.tenantId, now: this.clock.now() });
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
    let expr;
    try {
      expr = parseCron(query.cron);
    } catch (err) {
      if (err instanceof CronSyntaxError) throw invalidArgument("cron", err.message, { cronField: err.field, token: err.token });
      throw err;
    }
    const times = fireTimes(expr, tz, from, query.count ?? 10);
    return { times: times.map((t) => toIso(t.at)), local: times.map((t) => t.local), dst: times.map((t) => t.dst ?? null) };
  }

  async cluster(): Promise<ClusterView> {
    const shards = await this.store.shardList();
    const byOwner = new Map<string, number[]>();
    for (const s of shards) if (s.owner) byOwner.set(s.owner, [...(byOwner.get(s.owner) ?? []), s.shard]);
    const now = this.clock.now();
    return {
      nodes: [...byOwner].map(([nodeId, owned]) => ({
        nodeId,
        address: null,
        shards: owned,
        lastHeartbeatAt: toIso(Math.max(...shards.filter((s) => s.owner === nodeId).map((s) => s.leaseUntil)) - 30_000 || now),
      })),
      shards: shards.map((s) => ({ shard: s.shard, owner: s.owner, epoch: s.epoch, leaseUntil: toIso(s.leaseUntil) })),
    };
  }

  async listTargets(): Promise<{ items: TargetStatus[] }> {
    return { items: this.o.targets?.() ?? [] };
  }

  async ready(): Promise<boolean> {
    try {
      await this.store.ping();
      return true;
    } catch {
      return false;
    }
  }
}

class RetryTransition extends Error {}

const BACKFILL_MAX = 1000;
const BACKFILL_SPACING_MS = 100;
const LEDGER_MAX = 1000;

/** (from, to] of a backfill or ledger request, `to` capped at `cap`. */
function window(request: { from: string; to: string }, cap: number): { from: number; to: number } {
  const from = parseRfc3339(request.from);
  if (from === null) throw invalidArgument("from", `${JSON.stringify(request.from)} is not an RFC 3339 time`);
  const to = parseRfc3339(request.to);
  if (to === null) throw invalidArgument("to", `${JSON.stringify(request.to)} is not an RFC 3339 time`);
  if (to <= from) throw invalidArgument("to", "must be later than from");
  return { from, to: Math.min(to, cap) };
}

/** Why a nominal fire time has no execution. */
function notRun(job: JobRecord, at: number, now: number): Pick<OccurrenceItem, "status" | "reason"> {
  const schedule = job.schedule as Partial<{ startAt: string; endAt: string }>;
  if ((schedule.startAt && at < parseRfc3339(schedule.startAt)!) || (schedule.endAt && at > parseRfc3339(schedule.endAt)!)) {
    return { status: "not_run", reason: "outside_window" };
  }
  if (at < job.createdAt) return { status: "not_run", reason: "before_creation" };
  if (at > now || at === job.nextRunAt) {
    if (job.state === "SCHEDULED") return { status: "due" };
    return { status: "not_run", reason: job.state === "PAUSED" ? "paused" : "cancelled" };
  }
  if (job.state === "PAUSED" && at >= job.updatedAt) return { status: "not_run", reason: "paused" };
  if (job.state === "CANCELLED" && at >= job.updatedAt) return { status: "not_run", reason: "cancelled" };
  return { status: "not_run", reason: "misfire" };
}

function invalidState(job: JobRecord, action: string): DuetimeError {
  return new DuetimeError("INVALID_STATE", `cannot ${action} a ${job.state} job`, { state: job.state });
}

function leaseLost(executionId: string, attempt: number): DuetimeError {
  return new DuetimeError("LEASE_LOST", `attempt ${attempt} of execution ${executionId} no longer holds the lease`);
}

function throwIfRejected(ack: AckItem): void {
  if (ack.status === 200) return;
  if (ack.status === 404) throw notFound("execution", ack.executionId);
  throw leaseLost(ack.executionId, ack.attempt);
}

/** One answer per input item, in order; malformed ids answer 404 without reaching the store. */
function mergeAcks(items: { executionId: string; attempt: number }[], known: unknown[], outcomes: AckOutcome[]): AckItem[] {
  const byItem = new Map(known.map((k, i) => [k, outcomes[i]!]));
  return items.map((item) => {
    const o = byItem.get(item) ?? ({ status: "not_found" } as const);
    const { executionId, attempt } = item;
    if (o.status === "not_found") {
      return { executionId, attempt, status: 404, error: { code: "NOT_FOUND", message: `execution ${executionId} not found` } };
    }
    if (o.status === "lost") {
      return { executionId, attempt, status: 409, error: { code: "LEASE_LOST", message: `attempt ${attempt} no longer holds the lease` } };
    }
    if (o.state === "DEAD") return { executionId, attempt, status: 200, state: "DEAD", dead: true };
    if (o.state === "CANCELLED") return { executionId, attempt, status: 200, state: "CANCELLED" };
    if (o.state === "READY") return { executionId, attempt, status: 200, state: "FAILED", retryAt: toIso(o.readyAt!) };
    return { executionId, attempt, status: 200, state: "SUCCEEDED" };
  });
}

function addCounts(a: PoolStats | undefined, b: PoolStats): PoolStats {
  return { pending: (a?.pending ?? 0) + b.pending, queued: (a?.queued ?? 0) + b.queued, running: (a?.running ?? 0) + b.running };
}

function poolOf(job: JobRecord): string {
  return job.target.type === "queue" ? job.target.pool : HTTP_POOL;
}


export function toJob(r: JobRecord): Job {
  return {
    jobId: r.jobId,
    name: r.name,
    state: r.state,
    target: r.target,
    payload: r.payload,
    schedule: r.schedule,
    retry: r.retry,
    timeoutSeconds: r.timeoutSeconds,
    priority: r.priority,
    nextRunAt: toIsoOrNull(r.nextRunAt),
    ...(isCron(r.schedule) ? { nextRunAtLocal: r.nextRunAt === null ? null : localTime(r.nextRunAt, r.schedule.tz) } : {}),
    version: r.version,
    createdAt: toIso(r.createdAt),
    updatedAt: toIso(r.updatedAt),
  };
}
