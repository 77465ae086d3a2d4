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
import type { Logger, LoggerOptions } from "pino";
import { openEngine, type Engine, type EngineOptions } from "../engine/engine.js";
import { LOG_REDACT_PATHS, logEngineEvents } from "../engine/event-log.js";
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

export interface DuetimeOptions extends EngineOptions {
  /**
   * The engine's log lines (docs/operations.md "Logs"): a pino logger, or
   * pino options to make one (e.g. { level: "info" }: JSON lines on standard
   * output). Absent or false: nothing is logged (the metrics and events still
   * count everything).
   */
  logger?: Logger | LoggerOptions | false;
}

export async function createDuetime(options: DuetimeOptions): Promise<Duetime> {
  const { logger, ...engineOptions } = options;
  const engine = await openEngine(engineOptions);
  const log = logger ? (await rootLogger(logger)).child({ nodeId: engine.nodeId }) : null;
  const unsubscribe = log ? logEngineEvents(engine.events, log) : () => {};
  await engine.start();
  log?.info("duetime embedded engine started");
  const client = embeddedClient(engine.service);
  const workers = new Set<Worker>();
  let stopped = false;
  const stop = async () => {
    await Promise.all([...workers].map((w) => w.shutdown()));
    await engine.stop();
    if (stopped) return;
    stopped = true;
    log?.info("duetime embedded engine stopped");
    unsubscribe();
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

/** A logger given, or one made from pino options (pino is loaded only then), with credentials redacted. */
async function rootLogger(given: Logger | LoggerOptions): Promise<Logger> {
  if (typeof (given as Logger).child === "function" && typeof (given as Logger).info === "function") return given as Logger;
  const { pino } = await import("pino");
  return pino({ redact: [...LOG_REDACT_PATHS], ...(given as LoggerOptions) });
}

/** The application that embeds the engine owns it: every role, as a bootstrap caller (it sets tenants' limits, manages any tenant's keys). */
const EMBEDDED_CONTEXT: RequestContext = { ...DEFAULT_CONTEXT, bootstrap: true };

/**
 * DuetimeApi over the service: each method encodes its arguments into the
 * request the HTTP client would send, and the engine checks and serves it as
 * the server does (engine/operations.ts), so embedded callers get the same
 * answers and the same errors. A call's signal ends a long poll early.
 *
 * Each call first yields a turn of the event loop, as a call over the network
 * would. The SQLite store answers without I/O, so without the turn a worker
 * that keeps finding due work (lease, run, ack, lease…) looped on promises
 * alone and starved every timer: a steady 2,000 jobs/s blocked the loop for
 * seconds, and the engine's own creates were refused as overloaded.
 */
export function embeddedClient(service: Service, ctx: RequestContext = EMBEDDED_CONTEXT): DuetimeApi {
  return apiOver(async (name, op, request) => {
    await new Promise(setImmediate);
    const signal = request.options?.signal;
    return callService(service, name, signal ? { ...ctx, signal } : ctx, checkRequest(op, request));
  });
}
