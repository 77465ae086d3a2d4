// duetime/testing: the whole engine on a fake clock, for users' own tests.
// Their real handlers run in real SDK Workers against it; time moves only
// when the test says so, so retries, backoff, dead letters and a cron job
// across a DST change are checked in milliseconds, not hours.
//
//   const env = await createTestEnvironment({ start: "2027-03-27T12:00:00Z" });
//   env.worker({ pool: "mail", handler: myHandler });
//   const job = await env.client.createJob({ ..., schedule: { delaySeconds: 60 } });
//   await env.advance(60_000);                    // the job runs now
//   await env.close();
//
// The store is SQLite in memory unless `store` names another. The engine, the
// workers and their timers share one FakeClock: advance() fires every timer
// that falls due, in order, and lets the work each one starts finish before
// the next (the store is synchronous SQLite, so "finish" is a few turns of
// the event loop; see settle()).

import type { DuetimeApi } from "@duetime/sdk/contract";
import { Worker, type WorkerOptions } from "@duetime/sdk";
import { FakeClock } from "../core/clock.js";
import { embeddedClient } from "../embedded/index.js";
import { openEngine, type Engine, type EngineOptions } from "../engine/engine.js";

export { FakeClock };

export interface TestEnvironmentOptions {
  /** Where the fake clock starts: an RFC 3339 time or epoch ms (default 2026-01-01T00:00:00Z). */
  start?: string | number;
  /** The store (default `sqlite::memory:`, a fresh one per environment). */
  store?: string;
  /** Any other engine option (tenants' signing secrets, allowed target hosts, retention...). */
  engine?: Omit<EngineOptions, "store" | "clock">;
}

export interface TestEnvironment {
  /** The one clock of the engine and of every worker made here. */
  readonly clock: FakeClock;
  /** The same API as DuetimeClient, served in-process. */
  readonly client: DuetimeApi;
  readonly engine: Engine;
  /** Now on the fake clock. */
  now(): Date;
  /** A running Worker on the fake clock, with your handler (stopped by close()). */
  worker(options: Omit<WorkerOptions, "url" | "api" | "token" | "clock" | "handleSignals">): Worker;
  /** Moves time forward by ms, running everything that falls due on the way. */
  advance(ms: number): Promise<void>;
  /** Moves time forward to `time` (never back). */
  advanceTo(time: string | number): Promise<void>;
  /** Lets the work already started finish, without moving time. */
  settle(): Promise<void>;
  /** Stops the workers (their handlers finish), then the engine. */
  close(): Promise<void>;
}

/**
 * Turns of the event loop that let a fired timer's work finish: each await
 * on the synchronous store is a microtask, and setImmediate runs after all
 * of them, so a few turns cover a lease, a handler and its acknowledgement.
 */
const SETTLE_TURNS = 2;
/**
 * One process, one node: a long poll is woken by every write that readies
 * work, so its safety-net re-check can be rare; no other node contends for
 * the shards, so their leases can be long (renewed every 100 s, not 3 s);
 * and the reaper may look every 5 s (an expired lease is found up to 5 s
 * late). Fewer idle timers make a fake day cost less real time.
 */
const QUIET_ENGINE = {
  pollIntervalMs: 60_000,
  reapIntervalMs: 5_000,
  scheduler: { shardLeaseMs: 300_000 },
} satisfies Partial<EngineOptions>;
/** How much fake time close() lets the workers' handlers take to finish. */
const CLOSE_LIMIT_S = 600;

export async function createTestEnvironment(options: TestEnvironmentOptions = {}): Promise<TestEnvironment> {
  const clock = new FakeClock(options.start ?? "2026-01-01T00:00:00.000Z");
  const engine = await openEngine({ ...QUIET_ENGINE, ...options.engine, store: options.store ?? "sqlite::memory:", clock });
  await engine.start();
  const client = embeddedClient(engine.service);
  const workers: Worker[] = [];

  const settle = async (): Promise<void> => {
    for (let i = 0; i < SETTLE_TURNS; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };

  const advanceTo = async (target: number): Promise<void> => {
    if (!Number.isFinite(target)) throw new TypeError(`advance: not a time: ${String(target)}`);
    await settle();
    for (;;) {
      const next = clock.nextTimerAt();
      if (next === undefined || next > target) break;
      clock.advance(Math.max(0, next - clock.now()));
      await settle();
    }
    if (target > clock.now()) clock.advance(target - clock.now());
    await settle();
  };

  return {
    clock,
    client,
    engine,
    now: () => new Date(clock.now()),
    worker(workerOptions) {
      const worker = new Worker({ logger: null, ...workerOptions, api: client, clock, handleSignals: false });
      workers.push(worker);
      void worker.run();
      return worker;
    },
    advance: (ms) => advanceTo(clock.now() + ms),
    advanceTo: (time) => advanceTo(typeof time === "number" ? time : Date.parse(time)),
    settle,
    async close() {
      const stopping = Promise.all(workers.map((w) => w.shutdown()));
      // A worker's shutdown waits on its fake timers (the ack delay, a retry's pause): let time run until it is done.
      let stopped = false;
      void stopping.then(() => (stopped = true));
      for (let second = 0; !stopped; second++) {
        if (second === CLOSE_LIMIT_S)
          throw new Error(`close(): a handler still runs after ${CLOSE_LIMIT_S} s of fake time; does it wait on real time?`);
        await advanceTo(clock.now() + 1_000);
      }
      await stopping;
      await engine.stop();
    },
  };
}
