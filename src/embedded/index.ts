// Embedded mode: the whole engine inside this Node process, with the same
// client API as the HTTP SDK (DuetimeApi) and in-process workers, no HTTP.
//
//   const duetime = await createDuetime({ store: "sqlite:./jobs.db" });
//   await duetime.client.createJob({ name: "hi", target: { type: "queue", pool: "mail" }, schedule: { delaySeconds: 5 } });
//   const worker = duetime.worker({ pool: "mail", handler: async (job) => send(job.payload) });
//   void worker.run();
//   ...
//   await duetime.stop();   // drains the workers, then the engine

import type { BackfillRequest, DuetimeApi, ErrorRecord, JobPatch, JobSpec, OccurrencesQuery } from "@duetime/sdk/contract";
import { expectedVersion, validate, validateBatch } from "../core/validate.js";
import { openEngine, type Engine, type EngineOptions } from "../engine/engine.js";
import { DEFAULT_CONTEXT, type Service } from "../engine/service.js";
import { Worker, type WorkerOptions } from "@duetime/sdk";

export interface Duetime {
  readonly engine: Engine;
  /** The same API as DuetimeClient, served in-process. */
  readonly client: DuetimeApi;
  /** A worker bound to this engine (not yet running: call run()). */
  worker(options: Omit<WorkerOptions, "url" | "api" | "token">): Worker;
  /** Stops every worker made here (letting handlers finish), then the engine. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export type DuetimeOptions = EngineOptions;

export async function createDuetime(options: DuetimeOptions): Promise<Duetime> {
  const engine = await openEngine(options);
  await engine.start();
  const client = embeddedClient(engine.service);
  const workers = new Set<Worker>();
  const stop = async () => {
    await Promise.all([...workers].map((w) => w.shutdown()));
    await engine.stop();
  };
  return {
    engine,
    client,
    worker(workerOptions) {
      const w = new Worker({ handleSignals: false, ...workerOptions, api: client });
      workers.add(w);
      return w;
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * DuetimeApi over the service, with the same shape validation the HTTP server
 * applies (core/validate.ts), so embedded callers get the same errors.
 */
export function embeddedClient(service: Service, ctx = DEFAULT_CONTEXT): DuetimeApi {
  const id = (schema: "jobIdParams" | "executionIdParams" | "poolParams", value: Record<string, string>) => validate(schema, value, "params");
  return {
    async createJob(spec, options) {
      if (options?.idempotencyKey !== undefined) validate("createJobHeaders", { "idempotency-key": options.idempotencyKey }, "headers");
      return service.createJob(ctx, validate<JobSpec>("createJobBody", spec), options?.idempotencyKey);
    },
    async createJobs(jobs) {
      const checked = validateBatch({ jobs });
      return checked.merge(checked.valid.length ? await service.createJobs(ctx, checked.valid) : []);
    },
    async getJob(jobId) {
      id("jobIdParams", { jobId });
      return service.getJob(ctx, jobId);
    },
    async listJobs(query = {}) {
      return service.listJobs(ctx, validate("listJobsQuery", query, "query"));
    },
    async cancelJob(jobId) {
      id("jobIdParams", { jobId });
      await service.cancelJob(ctx, jobId);
    },
    async pauseJob(jobId) {
      id("jobIdParams", { jobId });
      return service.pauseJob(ctx, jobId);
    },
    async resumeJob(jobId) {
      id("jobIdParams", { jobId });
      return service.resumeJob(ctx, jobId);
    },
    async triggerJob(jobId) {
      id("jobIdParams", { jobId });
      return service.triggerJob(ctx, jobId);
    },
    async updateJob(jobId, patch, options) {
      id("jobIdParams", { jobId });
      const checked = validate<JobPatch>("updateJobBody", patch);
      return service.updateJob(ctx, jobId, checked, expectedVersion(options?.ifMatch, checked.version));
    },
    async backfillJob(jobId, request) {
      id("jobIdParams", { jobId });
      return service.backfillJob(ctx, jobId, validate<BackfillRequest>("backfillBody", request));
    },
    async listOccurrences(jobId, query) {
      id("jobIdParams", { jobId });
      return service.listOccurrences(ctx, jobId, validate<OccurrencesQuery>("occurrencesQuery", query, "query"));
    },
    async listExecutions(jobId, query = {}) {
      id("jobIdParams", { jobId });
      return service.listExecutions(ctx, jobId, validate("pageQuery", query, "query"));
    },
    async listDeadLetters(query = {}) {
      return service.listDeadLetters(ctx, validate("pageQuery", query, "query"));
    },
    async replayDeadLetter(executionId) {
      id("executionIdParams", { executionId });
      return service.replayDeadLetter(ctx, executionId);
    },
    async lease(pool, request, options) {
      id("poolParams", { pool });
      const leaseCtx = options?.signal ? { ...ctx, signal: options.signal } : ctx;
      return service.lease(leaseCtx, pool, validate("leaseBody", request));
    },
    async heartbeat(executionId, request) {
      id("executionIdParams", { executionId });
      return service.heartbeat(ctx, executionId, validate("heartbeatBody", request));
    },
    async complete(executionId, attempt, result) {
      id("executionIdParams", { executionId });
      validate("completeBody", result === undefined ? { attempt } : { attempt, result });
      return service.complete(ctx, executionId, attempt, result);
    },
    async fail(executionId, attempt, error: ErrorRecord) {
      id("executionIdParams", { executionId });
      validate("failBody", { attempt, error });
      return service.fail(ctx, executionId, attempt, error);
    },
    async completeMany(items) {
      return service.completeMany(ctx, validate<{ items: typeof items }>("completeManyBody", { items }).items);
    },
    async failMany(items) {
      return service.failMany(ctx, validate<{ items: typeof items }>("failManyBody", { items }).items);
    },
    async poolStats(pool) {
      id("poolParams", { pool });
      return service.poolStats(ctx, pool);
    },
    async stats() {
      return service.stats(ctx);
    },
    async previewSchedule(query) {
      return service.previewSchedule(validate("previewQuery", query, "query"));
    },
  };
}
