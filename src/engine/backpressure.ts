// Backpressure: when this node is overloaded, creates answer 429
// RESOURCE_EXHAUSTED with Retry-After before the store suffers, while
// reads, worker calls, cancels and pauses keep working (they drain the
// load; creates add to it). Three signals, sampled every SAMPLE_MS:
// - the event loop's delay (its p99 over the sample): the node's CPU;
// - store calls' duration (their p90 over the sample): the store's;
// - how late due work starts or is dispatched (the p90 of the start and
//   dispatch lags seen in the sample): the backlog.
// A signal over its threshold in one sample sheds creates until a sample
// finds every signal under its threshold again. docs/operations.md explains
// the thresholds and the metrics.

import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import { Gauge, type Registry } from "prom-client";
import type { Clock } from "../core/clock.js";
import { DuetimeError, StoreUnavailableError } from "../core/errors.js";
import type { EngineEvents } from "./events.js";
import { Periodic } from "./periodic.js";

export interface BackpressureOptions {
  /** Shed creates while the event loop's p99 delay is over this, in ms (default 1000; 0 turns the signal off). */
  eventLoopDelayMs?: number;
  /** Shed creates while store calls' p90 duration is over this, in ms (default 2000; 0 off). */
  storeLatencyMs?: number;
  /**
   * Shed creates while due work starts or is dispatched later than this,
   * p90, in ms (default 0: off, because work starts late as often for want
   * of workers as for an overloaded scheduler; set it where workers keep up).
   */
  dueLagMs?: number;
}

export const BACKPRESSURE_DEFAULTS: Required<BackpressureOptions> = { eventLoopDelayMs: 1_000, storeLatencyMs: 2_000, dueLagMs: 0 };

export type BackpressureSignal = "event_loop_delay" | "store_latency" | "due_lag";

/** How often the signals are sampled (on the host's clock, not the store's: overload is local). */
const SAMPLE_MS = 500;
/** A shed create is told to come back after this long: about a few samples. */
const RETRY_AFTER_S = 2;
/** Store calls a sample needs before their p90 means anything (an idle node's one slow retention batch does not shed). */
const MIN_STORE_CALLS = 3;

const percentile = (values: number[], p: number): number => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
};

export class Backpressure {
  private readonly thresholds: Required<BackpressureOptions>;
  private readonly loop: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private storeMs: number[] = [];
  private lagMs: number[] = [];
  private readonly sampling: Periodic<void>;
  /** The last sample's values, in ms. */
  private readonly current: Record<BackpressureSignal, number> = { event_loop_delay: 0, store_latency: 0, due_lag: 0 };
  /** The signal over its threshold, while creates are shed. */
  private shedding: BackpressureSignal | null = null;

  constructor(options: BackpressureOptions, events: EngineEvents, clock: Clock) {
    this.thresholds = { ...BACKPRESSURE_DEFAULTS, ...options };
    this.sampling = new Periodic(clock, SAMPLE_MS, async () => this.sample());
    events.on("execution:leased", (e) => {
      if (e.attempt === 1) this.lagMs.push(e.startLagMs);
    });
    events.on("execution:dispatched", (e) => this.lagMs.push(e.lagMs));
  }

  /**
   * A store call's duration (store-timing.ts observes every call). One that
   * failed for a lost link says nothing about the store's load: on a
   * half-open link such calls end together, after up to the client's read
   * timeout, when the link comes back, and would shed the first creates
   * after it.
   */
  observeStoreCall(ms: number, error?: unknown): void {
    if (error instanceof StoreUnavailableError && error.kind === "connection") return;
    this.storeMs.push(ms);
  }

  start(): void {
    this.loop.enable();
    this.sampling.start();
  }

  async stop(): Promise<void> {
    await this.sampling.stop();
    this.loop.disable();
  }

  /** One sample now (what the loop does every SAMPLE_MS). */
  runOnce(): Promise<void> {
    return this.sampling.runOnce();
  }

  /** Throws 429 RESOURCE_EXHAUSTED while creates are shed. */
  checkCreate(): void {
    const signal = this.shedding;
    if (signal === null) return;
    const thresholdMs = this.thresholds[THRESHOLD_OF[signal]];
    const valueMs = Math.round(this.current[signal]);
    throw new DuetimeError(
      "RESOURCE_EXHAUSTED",
      `the server is overloaded (${signal.replaceAll("_", " ")} ${valueMs} ms, over ${thresholdMs} ms): creates are refused for now, retry after a pause`,
      { reason: "backpressure", signal, valueMs, thresholdMs },
      RETRY_AFTER_S,
    );
  }

  /** Gauges of the signals and of the shedding state. */
  register(registry: Registry): void {
    const self = this;
    new Gauge({
      name: "duetime_backpressure_signal_ms",
      help: "The backpressure signals of the last sample, in ms (event_loop_delay p99, store_latency p90, due_lag p90)",
      labelNames: ["signal"],
      registers: [registry],
      collect() {
        for (const [signal, value] of Object.entries(self.current)) this.set({ signal }, value);
      },
    });
    new Gauge({
      name: "duetime_backpressure_threshold_ms",
      help: "The backpressure thresholds, in ms (0: the signal is off)",
      labelNames: ["signal"],
      registers: [registry],
      collect() {
        for (const signal of Object.keys(THRESHOLD_OF) as BackpressureSignal[]) this.set({ signal }, self.thresholds[THRESHOLD_OF[signal]]);
      },
    });
    new Gauge({
      name: "duetime_backpressure_shedding",
      help: "1 while creates are refused with 429 because a signal is over its threshold",
      registers: [registry],
      collect() {
        this.set(self.shedding === null ? 0 : 1);
      },
    });
  }

  /** One sample: the signals since the last one, and whether to shed. */
  private sample(): void {
    this.current.event_loop_delay = this.loop.count > 0 ? this.loop.percentile(99) / 1e6 : 0;
    this.loop.reset();
    this.current.store_latency = this.storeMs.length >= MIN_STORE_CALLS ? percentile(this.storeMs, 90) : 0;
    this.current.due_lag = percentile(this.lagMs, 90);
    this.storeMs = [];
    this.lagMs = [];
    this.shedding = null;
    for (const signal of Object.keys(THRESHOLD_OF) as BackpressureSignal[]) {
      const threshold = this.thresholds[THRESHOLD_OF[signal]];
      if (threshold > 0 && this.current[signal] > threshold) {
        this.shedding = signal;
        break;
      }
    }
  }
}

const THRESHOLD_OF: Record<BackpressureSignal, keyof BackpressureOptions> = {
  event_loop_delay: "eventLoopDelayMs",
  store_latency: "storeLatencyMs",
  due_lag: "dueLagMs",
};
