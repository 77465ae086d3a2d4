// The engine as `duetime serve` composes it, without its timers, and a herd of
// one-offs created through it: what the store-level measurements
// (row-count.ts, lease-plan.ts, sqlite-floor.ts) drive, so they create their
// rows exactly as POST /v1/jobs:batch does.

import type { BatchCreateItem } from "@duetime/sdk/contract";
import { systemClock } from "../src/core/clock.js";
import { EngineEvents } from "../src/engine/events.js";
import { Executor } from "../src/engine/executor.js";
import type { Scheduler } from "../src/engine/scheduler.js";
import { DEFAULT_CONTEXT, type Service } from "../src/engine/service.js";
import { createService } from "../src/engine/services.js";
import type { Store } from "../src/store/store.js";

/** Jobs per createJobs call: the bulk API's batch. */
export const CREATE_BATCH = 1_000;

/** createService over the store, a real Executor, a stub scheduler (a one-off's execution is written with it; the scheduler only forgets it). */
export function benchService(store: Store, nodeId: string): Service {
  const events = new EngineEvents();
  events.on("error", ({ where, error }) => console.error(`engine error in ${where}:`, error));
  const executor = new Executor({ store, clock: systemClock, events });
  const scheduler = { forget() {}, offer() {}, windowMs: 0 } as unknown as Scheduler;
  return createService({ store, clock: systemClock, events, executor, scheduler, nodeId, storeHealth: { ready: async () => true } });
}

/** `count` one-off queue jobs of `pool` due at `runAt`, their payloads {seq} numbered from `first`: one call's batch. */
export function oneOffBatch(pool: string, first: number, count: number, runAt: string): BatchCreateItem[] {
  return Array.from({ length: count }, (_, k) => ({
    name: "bench",
    target: { type: "queue", pool },
    payload: { seq: first + k },
    schedule: { runAt },
  }));
}

/** `jobs` one-off queue jobs of `pool` due now ({seq} payloads), CREATE_BATCH a call, as tenant "default" (a server without keys). */
export async function createOneOffs(service: Service, pool: string, jobs: number): Promise<void> {
  for (let i = 0; i < jobs; i += CREATE_BATCH) {
    const results = await service.createJobs(DEFAULT_CONTEXT, oneOffBatch(pool, i, Math.min(CREATE_BATCH, jobs - i), new Date().toISOString()));
    const failed = results.find((r) => "error" in r);
    if (failed) throw new Error(`createJobs: ${JSON.stringify(failed)}`);
  }
}
