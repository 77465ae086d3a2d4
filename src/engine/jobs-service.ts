// The jobs part of the Service (services.ts composes the rest): semantics of
// every call about jobs on top of the store, the scheduler and the executor.
// Shapes were validated before this point (core/schemas.ts); here live the
// rules: defaults, state machines, idempotency, fencing answers, cursors.

import { createHash } from "node:crypto";
import type {
  BackfillRequest,
  BackfillResponse,
  BatchCreateItem,
  BatchCreateResult,
  CreatedJob,
  DueWarning,
  CreateJobsOptions,
  ExecutionItem,
  Job,
  JobPatch,
  JobSpec,
  ListJobsQuery,
  OccurrenceItem,
  OccurrencesQuery,
  Page,
  PageQuery,
  Target,
} from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { DuetimeError, invalidArgument, notFound } from "../core/errors.js";
import { executionIdFor, isJobId, newId, shardOf } from "../core/ids.js";
import { canonicalJson, effectiveJob } from "../core/job-spec.js";
import { RETENTION_DEFAULTS } from "../core/retention.js";
import { firstOccurrence, isCron, nextOccurrence, type Occurrence } from "../core/schedule.js";
import { jobVerdict, occurrenceHome, PENDING_ON_ACTION, type JobAction } from "../core/states.js";
import { parseRfc3339, toIsoOrNull } from "../core/time.js";
import { validateBatch } from "../core/validate.js";
import type { JobCreateOutcome, JobRecord, LoadedDueEntry, NewJob, PendingChange, PendingReplace, Store } from "../store/store.js";
import { pageOf } from "./cursor.js";
import { ScheduleLedger } from "./ledger.js";
import { type BrokerKind, brokerRefusal, poolOf } from "../core/targets.js";
import { dryRunRefusal, invalidState, toExecution, toJob } from "./wire.js";
import type { Executor } from "./executor.js";
import type { PayloadBlobs, PlannedBlob } from "./payload-blobs.js";
import { storedRefOf } from "../core/payload-refs.js";
import type { Backpressure } from "./backpressure.js";
import type { TenantQuotas } from "./quotas.js";
import type { SpikeWatch } from "./spikes.js";
import type { ReadStore } from "./read-routing.js";
import type { ClusterSignals } from "./signals.js";
import type { Scheduler } from "./scheduler.js";
import type { RequestContext } from "./service.js";

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
  /** Tenants' quotas on creates (quotas.ts). */
  quotas: TenantQuotas;
  /** Refuses creates while the node is overloaded (backpressure.ts). */
  backpressure?: Pick<Backpressure, "checkCreate">;
  /** Warns of spiky schedules (spikes.ts); without it, creates warn of nothing. */
  spikes?: SpikeWatch;
  /** The broker connections this server publishes through, by name (--broker NAME=URL); broker targets naming another are refused. */
  brokers?: ReadonlyMap<string, BrokerKind>;
  /** Where payloads over the inline limit are kept (payload-blobs.ts), and the payload limits. */
  payloads: PayloadBlobs;
}

const NO_BROKERS: ReadonlyMap<string, BrokerKind> = new Map();

/** The jobs: create, read, change, and their history (executions, the run ledger, backfill). */
export class JobsService {
  private readonly store: Store;
  /** Only for reads that show data, never for one that decides (read-routing.ts). */
  private readonly reads: ReadStore;
  private readonly clock: Clock;
  private readonly ledger: ScheduleLedger;

  constructor(private readonly o: JobsServiceOptions) {
    this.store = o.store;
    this.reads = o.reads ?? o.store;
    this.clock = o.clock;
    this.ledger = new ScheduleLedger(o.store, this.reads, o.clock, o.executor, o.nodeId, o.historyRetentionMs ?? RETENTION_DEFAULTS.historyMs);
  }

  // ---- jobs ---------------------------------------------------------------------

  async createJob(ctx: RequestContext, spec: JobSpec, idempotencyKey?: string): Promise<CreatedJob> {
    const [result] = (await this.createMany(ctx, [{ spec, idempotencyKey, prefix: "" }], { throwFirst: true })) as Written[];
    const { record, created, warnings } = result!;
    return { ...toJob(record), created, ...(warnings ? { warnings } : {}) };
  }

  /** `items` as they came: each is checked on its own, so a bad job fails alone (answering its error in its place). */
  async createJobs(ctx: RequestContext, items: BatchCreateItem[], options: CreateJobsOptions = {}): Promise<BatchCreateResult[]> {
    const batch = validateBatch({ jobs: items });
    if (options.atomic && batch.errors.size > 0) throw atomicRefusal(items.length, [...batch.errors]);
    if (batch.valid.length === 0) return batch.merge([]);
    const results = await this.createMany(
      ctx,
      batch.valid.map(({ idempotencyKey, ...spec }, i) => ({ spec, idempotencyKey, prefix: `jobs.${batch.indexes[i]}.` })),
      options.atomic
        ? {
            atomic: (errors) =>
              atomicRefusal(
                items.length,
                errors.map(([i, e]) => [batch.indexes[i]!, e]),
              ),
          }
        : {},
    );
    return batch.merge(
      results.map((r) =>
        r instanceof DuetimeError
          ? (r.toJSON() as BatchCreateResult)
          : {
              jobId: r.record.jobId,
              nextRunAt: toIsoOrNull(r.record.nextRunAt),
              created: r.created,
              ...(r.warnings ? { warnings: r.warnings } : {}),
            },
      ),
    );
  }

  /** writeMany, inside the request's create span when tracing is on (tracing.ts); the span's traceparent is kept with each job. */
  private async createMany(
    ctx: RequestContext,
    specs: { spec: JobSpec; idempotencyKey: string | undefined; prefix: string }[],
    how: WriteHow,
  ): Promise<(Written | DuetimeError)[]> {
    const tracing = this.o.executor.tracing;
    if (!tracing) return this.writeMany(ctx, specs, how);
    const { span, traceparent } = tracing.createStarted(ctx.tenantId, specs.length);
    const trace: CreateTrace = { traceparent, created: [] };
    try {
      const results = await this.writeMany(ctx, specs, how, trace);
      tracing.createEnded(span, trace.created);
      return results;
    } catch (err) {
      tracing.createEnded(span, trace.created, err);
      throw err;
    }
  }

  /**
   * Validates each spec, admits the valid ones under the tenant's quotas
   * (all or none: 429 for the call), then writes them in one transaction.
   */
  private async writeMany(
    ctx: RequestContext,
    specs: { spec: JobSpec; idempotencyKey: string | undefined; prefix: string }[],
    { throwFirst = false, atomic }: WriteHow,
    trace?: CreateTrace,
  ): Promise<(Written | DuetimeError)[]> {
    this.o.backpressure?.checkCreate();
    const now = this.clock.now();
    const limits = await this.o.quotas.limitsOf(ctx.tenantId);
    const results: (Written | DuetimeError | null)[] = [];
    const writes: Write[] = [];
    specs.forEach(({ spec, idempotencyKey, prefix }, index) => {
      try {
        this.o.quotas.checkPayload(limits, spec, `${prefix}payload`);
        const job = this.newJob(ctx, spec, idempotencyKey, now, prefix);
        if (trace) job.traceParent = trace.traceparent;
        writes.push({ index, job, blob: this.o.payloads.plan(job.job.payload, job.job.target.type, `${prefix}payload`) });
        results.push(null);
      } catch (err) {
        if (throwFirst || !(err instanceof DuetimeError)) throw err;
        results.push(err);
      }
    });
    if (atomic) {
      const refused = results.flatMap((r, i): [number, DuetimeError][] => (r instanceof DuetimeError ? [[i, r]] : []));
      if (refused.length > 0) throw atomic(refused);
    }
    // A repeat answered from its Idempotency-Key counts too: the quota cannot know before the write.
    if (writes.length > 0) await this.o.quotas.admit(ctx.tenantId, limits, writes.length);
    const blobs = await this.offload(ctx.tenantId, writes);
    let outcomes: JobCreateOutcome[] = [];
    try {
      if (writes.length > 0) outcomes = await this.store.jobCreateMany({ jobs: writes.map((w) => w.job), nodeId: this.o.nodeId, now });
    } catch (err) {
      await this.o.payloads.discard([...blobs.values()]);
      throw err;
    }
    // The blobs of jobs created are theirs; those of repeats and refusals are nobody's.
    const taken = [...blobs].filter(([i]) => outcomes[i]?.status === "created").map(([, blobId]) => blobId);
    await this.o.payloads.attach(taken);
    await this.o.payloads.discard([...blobs].filter(([i]) => outcomes[i]?.status !== "created").map(([, blobId]) => blobId));
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
      if (outcome.status === "created") {
        this.offer(outcome.job, trace?.traceparent);
        if (trace) {
          const run = writes[i]!.job.execution;
          trace.created.push({ jobId: outcome.job.jobId, ...(run ? { executionId: executionIdFor(outcome.job.jobId, run.scheduledFor) } : {}) });
        }
      }
      results[index] = { record: outcome.job, created: outcome.status === "created" };
    });
    await this.warnOfSpikes(ctx, writes, outcomes, results);
    return results as (Written | DuetimeError)[];
  }

  /**
   * Writes the payloads bound for blobs (payload-blobs.ts), each job then
   * holding its marker; answers each blob's id by the write's position. A
   * failure discards what was written and fails the call: nothing was created.
   */
  private async offload(tenantId: string, writes: Write[]): Promise<Map<number, string>> {
    const written = new Map<number, string>();
    try {
      for (const [i, w] of writes.entries()) {
        if (!w.blob) continue;
        const { blobId, marker } = await this.o.payloads.write({ tenantId, jobId: w.job.job.jobId, planned: w.blob });
        w.job.job.payload = marker;
        written.set(i, blobId);
      }
    } catch (err) {
      await this.o.payloads.discard([...written.values()]);
      throw err;
    }
    return written;
  }

  /** Adds the spike warnings (spikes.ts) to the jobs this call created. */
  private async warnOfSpikes(
    ctx: RequestContext,
    writes: Write[],
    outcomes: JobCreateOutcome[],
    results: (Written | DuetimeError | null)[],
  ): Promise<void> {
    if (!this.o.spikes) return;
    const created = writes.filter((_, i) => outcomes[i]?.status === "created");
    const due = created.map(({ job }) => ({
      kind: job.job.kind,
      pool: poolOf(job.job.target),
      priority: job.job.priority,
      dueAt: job.execution?.dueAt ?? job.due?.dueAt ?? null,
    }));
    const warnings = await this.o.spikes.warnings(ctx.tenantId, due);
    for (const [i, list] of warnings) {
      const result = results[created[i]!.index];
      if (result && !(result instanceof DuetimeError)) result.warnings = list;
    }
  }

  /** The spec's own target: whether it named its broker decides the field the 400 names. */
  private checkBroker(target: Target, prefix: string): void {
    const refusal = brokerRefusal(target, this.o.brokers ?? NO_BROKERS);
    if (refusal) throw invalidArgument(`${prefix}${refusal.field}`, refusal.message);
  }

  private newJob(ctx: RequestContext, spec: JobSpec, idempotencyKey: string | undefined, now: number, prefix: string): NewJob {
    const jobId = newId(now);
    const { first, ...fields } = effectiveJob(spec, jobId, now, prefix);
    this.checkBroker(spec.target, prefix);
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
  private offer(job: JobRecord, traceParent?: string): void {
    if (job.state !== "SCHEDULED" || job.nextRunAt === null || occurrenceHome(job.kind) === "execution") {
      this.o.scheduler.forget(job);
      if (job.state === "SCHEDULED" && job.nextDueAt !== null) this.o.executor.ready(job.tenantId, poolOf(job.target), job.nextDueAt);
      return;
    }
    const entry: LoadedDueEntry = {
      jobId: job.jobId,
      tenantId: job.tenantId,
      shard: job.shard,
      kind: job.kind,
      schedule: job.schedule,
      scheduledFor: job.nextRunAt,
      dueAt: job.nextDueAt ?? job.nextRunAt,
    };
    // A new job's create span, for its dispatch span's parent (a reload reads it from the store).
    if (traceParent !== undefined) entry.traceParent = traceParent;
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
    return pageOf(
      query,
      { c: ["createdAt", "number"], i: ["jobId", "string"] },
      (p) =>
        this.reads.jobList({
          tenantId: ctx.tenantId,
          ...(query.state ? { state: query.state } : {}),
          ...(query.name ? { name: query.name } : {}),
          ...(query.pool ? { pool: query.pool } : {}),
          ...(query.kind ? { kind: query.kind } : {}),
          ...p,
        }),
      toJob,
    );
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
    if (job.mode === "dry_run") throw dryRunRefusal("trigger");
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
        this.o.executor.ready(ctx.tenantId, poolOf(job.target));
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
      mode: job.mode,
      ...changes,
      // retry changes only the fields it names
      ...(changes.retry ? { retry: { ...job.retry, ...changes.retry } } : {}),
    };
    const { first, ...fields } = effectiveJob(spec, jobId, now);
    if (patch.target !== undefined) this.checkBroker(patch.target, "");
    const kept = storedRefOf(fields.payload);
    if (kept && (fields.target.type === "nats" || fields.target.type === "amqp")) {
      throw invalidArgument(
        "target.type",
        `a ${fields.target.type} target publishes its payload whole, and this job's payload (${kept.bytes} bytes) is kept by reference: send a smaller payload with it`,
      );
    }
    // A new payload over the inline limit is written first; the old one's blob stays with the job (executions made before may hold it).
    const planned = patch.payload !== undefined ? this.o.payloads.plan(fields.payload, fields.target.type, "payload") : null;
    const blob = planned ? await this.o.payloads.write({ tenantId: ctx.tenantId, jobId, planned }) : null;
    if (blob) fields.payload = blob.marker;
    let updated: JobRecord | null;
    try {
      updated = await this.store.jobUpdate({
        tenantId: ctx.tenantId,
        jobId,
        fromVersion: job.version,
        fields,
        ...nextAfterPatch(job, fields.kind, { changed: patch.schedule !== undefined, first }),
        nodeId: this.o.nodeId,
        now,
      });
    } catch (err) {
      if (blob) await this.o.payloads.discard([blob.blobId]);
      throw err;
    }
    if (blob) await (updated ? this.o.payloads.attach([blob.blobId]) : this.o.payloads.discard([blob.blobId]));
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
    return pageOf(
      query,
      { s: ["scheduledFor", "number"], a: ["attempt", "number"] },
      (p) => this.reads.executionHistory({ tenantId: ctx.tenantId, jobId, ...p }),
      (r) => toExecution(r, this.clock.now()),
    );
  }
}

/** One job of a create, where it answers, and its payload's bytes when they go to a blob. */
interface Write {
  index: number;
  job: NewJob;
  blob: PlannedBlob | null;
}

/** A job the call wrote or found by its Idempotency-Key, as stored; the callers answer its wire form. */
interface Written {
  record: JobRecord;
  created: boolean;
  warnings?: DueWarning[];
}

/**
 * How a create treats an invalid job: answered as an error item (default),
 * thrown (throwFirst: a single create), or thrown for the whole batch
 * before anything is written (atomic: the refusal naming every invalid job).
 */
interface WriteHow {
  throwFirst?: boolean;
  atomic?: (errors: [index: number, error: DuetimeError][]) => DuetimeError;
}

/** An atomic batch with invalid jobs: 400 naming the first one's field, every one in details.errors; nothing was created. */
function atomicRefusal(total: number, errors: [index: number, error: DuetimeError][]): DuetimeError {
  const [index, error] = errors[0]!;
  return new DuetimeError(
    "INVALID_ARGUMENT",
    `${errors.length} of ${total} jobs are invalid, so none was created (atomic); first, ${error.message}`,
    {
      field: String(error.details?.field ?? `jobs.${index}`),
      errors: errors.map(([i, e]) => ({ index: i, ...e.toJSON().error })),
    },
  );
}

/** The create span's traceparent, and the jobs the request created (with a one-off's execution), for its events. */
interface CreateTrace {
  traceparent: string;
  created: { jobId: string; executionId?: string }[];
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
