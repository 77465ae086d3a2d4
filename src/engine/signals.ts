// Signals between nodes (store.ts, "signals between nodes"): after a write has
// committed, this node tells the others what they would otherwise learn only
// at their next reload or re-check: a due entry that falls in its owner's
// loaded window, work ready in a pool whose long polls wait on another node.
// Signals sent in one turn of the event loop go out as one batch; a node
// ignores its own (it acted on them when it wrote). A lost signal costs time,
// never a job: the scheduler reloads its window every reloadMs (15 s by
// default) and long polls re-check the store on their own.

import type { Clock, TimerHandle } from "../core/clock.js";
import type { ClusterSignal, SignalEvent, Store } from "../store/store.js";
import type { EngineEvents } from "./events.js";

export interface ClusterSignalsOptions {
  store: Store;
  clock: Clock;
  nodeId: string;
  events: EngineEvents;
  /** Another node's signal, in the order sent. */
  onSignal: (signal: ClusterSignal) => void;
  /** The channel was down: signals may have been lost, so reload and re-check now. */
  onResync: () => void;
}

/** How long to wait before subscribing again after a failed subscribe. */
const RESUBSCRIBE_MS = 1000;

export class ClusterSignals {
  private queue: ClusterSignal[] = [];
  /** The queued ready signal of each pool, by tenant and pool. */
  private readonly readyAt = new Map<string, { at: number }>();
  private flushing: Promise<void> | null = null;
  private unsubscribe: (() => Promise<void>) | null = null;
  private retry: TimerHandle | null = null;
  private stopped = true;

  constructor(private readonly o: ClusterSignalsOptions) {}

  async start(): Promise<void> {
    this.stopped = false;
    await this.subscribe();
  }

  /**
   * Queues a signal for the other nodes; the queue goes out as one batch on
   * the next turn. Of the ready signals of one pool in a batch only the
   * earliest is sent: a receiver wakes its long polls then, and they look in
   * the store for whatever comes next (executor.ts lookAhead).
   */
  send(signal: ClusterSignal): void {
    if (this.stopped) return;
    if (signal.kind === "ready") {
      const key = `${signal.tenantId}\u0000${signal.pool}`;
      const queued = this.readyAt.get(key);
      if (queued) {
        queued.at = Math.min(queued.at, signal.at);
        return;
      }
      signal = { ...signal };
      this.readyAt.set(key, signal);
    }
    this.queue.push(signal);
    this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush());
  }

  /** Sends what is queued, then stops listening. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.retry?.cancel();
    await this.flushing;
    await this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private async flush(): Promise<void> {
    const signals = this.queue;
    this.queue = [];
    this.readyAt.clear();
    this.flushing = null;
    try {
      await this.o.store.signalPublish({ from: this.o.nodeId, signals });
      this.o.events.emit("signals", { direction: "sent", count: signals.length });
    } catch (error) {
      this.o.events.emit("error", { where: "signals", error }); // lost: healed by the reloads
    }
  }

  private async subscribe(failedBefore = false): Promise<void> {
    try {
      const unsubscribe = await this.o.store.signalSubscribe((event) => this.receive(event));
      if (this.stopped) await unsubscribe();
      else this.unsubscribe = unsubscribe;
      if (failedBefore) this.receive({ resync: true }); // signals sent while we were not listening are lost
    } catch (error) {
      this.o.events.emit("error", { where: "signals", error });
      if (!this.stopped) this.retry = this.o.clock.setTimer(() => void this.subscribe(true), RESUBSCRIBE_MS);
    }
  }

  private receive(event: SignalEvent): void {
    if (this.stopped) return;
    if ("resync" in event) {
      this.o.events.emit("signals", { direction: "resync", count: 1 });
      this.o.onResync();
      return;
    }
    if (event.from === this.o.nodeId) return;
    this.o.events.emit("signals", { direction: "received", count: event.signals.length });
    for (const signal of event.signals) this.o.onSignal(signal);
  }
}
