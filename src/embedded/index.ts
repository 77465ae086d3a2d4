// Embedded mode: the whole engine inside this Node process, with the same
// client API as the HTTP SDK (DuetimeApi) and in-process workers, no HTTP.
//
//   const duetime = await createDuetime({ store: "sqlite:./jobs.db" });
//   await duetime.client.createJob({ name: "hi", target: { type: "queue", pool: "mail" }, schedule: { delaySeconds: 5 } });
//   const worker = duetime.worker({ pool: "mail", handler: async (job) => send(job.payload) });
//   void worker.run();
//   ...
//   await duetime.stop();   // drains the workers, then the engine

import { apiOver, type DuetimeApi } from "@duetime/sdk/contract";
import { openEngine, type Engine, type EngineOptions } from "../engine/engine.js";
import { callService, checkRequest } from "../engine/operations.js";
import { DEFAULT_CONTEXT, type RequestContext, type Service } from "../engine/service.js";
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

/** The application that embeds the engine owns it: every role, as a bootstrap caller (it sets tenants' limits, manages any tenant's keys). */
const EMBEDDED_CONTEXT: RequestContext = { ...DEFAULT_CONTEXT, bootstrap: true };

/**
 * DuetimeApi over the service: each method encodes its arguments into the
 * request the HTTP client would send, and the engine checks and serves it as
 * the server does (engine/operations.ts), so embedded callers get the same
 * answers and the same errors. A call's signal ends a long poll early.
 */
export function embeddedClient(service: Service, ctx: RequestContext = EMBEDDED_CONTEXT): DuetimeApi {
  return apiOver(async (name, op, request) => {
    const signal = request.options?.signal;
    return callService(service, name, signal ? { ...ctx, signal } : ctx, checkRequest(op, request));
  });
}
