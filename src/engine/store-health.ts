// Whether the store can write, as this node last saw it. Any store fault
// (StoreUnavailableError from any call) marks it failing; only a successful
// write probe (store.pingWrite) marks it writable again, because on a full
// disk reads still work and so do writes with nothing to write. While it is
// failing, the probe runs in the background (backing off) and on every
// readiness check, so the node recovers without traffic.

import type { Clock, TimerHandle } from "../core/clock.js";
import { StoreUnavailableError } from "../core/errors.js";
import { onStoreError } from "../store/faults.js";
import type { Store } from "../store/store.js";
import type { EngineEvents } from "./events.js";

const FIRST_PROBE_MS = 1_000;
const MAX_PROBE_MS = 10_000;

export class StoreHealth {
  /** The store as the engine uses it: every fault it throws is recorded here. */
  readonly store: Store;
  private failing = false;
  /** Faults seen so far: a probe that succeeds while a fault arrives proves nothing. */
  private faults = 0;
  private probing: Promise<boolean> | null = null;
  private timer: TimerHandle | null = null;
  private delayMs = FIRST_PROBE_MS;
  private stopped = false;

  constructor(
    store: Store,
    private readonly clock: Clock,
    private readonly events: EngineEvents,
  ) {
    this.store = onStoreError(store, (error, op) => {
      if (error instanceof StoreUnavailableError) this.failed(op, error);
      throw error;
    });
  }

  get writable(): boolean {
    return !this.failing;
  }

  /** The store answers and its writes are not failing (probed now if they were). */
  async ready(): Promise<boolean> {
    try {
      await this.store.ping();
    } catch {
      return false;
    }
    return !this.failing || this.probe();
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
  }

  private failed(op: string, error: StoreUnavailableError): void {
    this.faults++;
    this.events.emit("store:fault", { op, kind: error.kind });
    if (this.failing) return;
    this.failing = true;
    this.events.emit("store:writable", { writable: false, error });
    this.scheduleProbe();
  }

  /** One probe at a time; concurrent callers share its answer. A fault seen meanwhile outweighs its success. */
  private probe(): Promise<boolean> {
    const faults = this.faults;
    this.probing ??= this.store
      .pingWrite()
      .then(
        () => {
          if (this.faults !== faults) return false;
          this.failing = false;
          this.timer?.cancel();
          this.timer = null;
          this.delayMs = FIRST_PROBE_MS;
          this.events.emit("store:writable", { writable: true });
          return true;
        },
        () => false,
      )
      .finally(() => (this.probing = null));
    return this.probing;
  }

  private scheduleProbe(): void {
    if (this.timer || this.stopped) return;
    this.timer = this.clock.setTimer(() => {
      this.timer = null;
      void this.probe().then((ok) => {
        if (ok) return;
        this.delayMs = Math.min(this.delayMs * 2, MAX_PROBE_MS);
        this.scheduleProbe();
      });
    }, this.delayMs);
  }
}
