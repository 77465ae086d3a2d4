// A background loop on the injected clock: run() again intervalMs after the
// previous run ends, so runs never overlap; stop() cancels the next run and
// waits for the current one. run() reports its own errors (an "error"
// event): a rejection here still schedules the next run.

import type { Clock, TimerHandle } from "../core/clock.js";

export class Periodic<T> {
  private timer: TimerHandle | null = null;
  private running: Promise<T> | null = null;
  private stopping = true;

  constructor(
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly run: () => Promise<T>,
  ) {}

  start(): void {
    this.stopping = false;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.timer?.cancel();
    this.timer = null;
    await this.running?.catch(() => {});
  }

  /** One run now; a call while one is in progress shares it. */
  runOnce(): Promise<T> {
    this.running ??= this.run().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private schedule(): void {
    if (this.stopping) return;
    this.timer = this.clock.setTimer(() => {
      const next = () => this.schedule();
      void this.runOnce().then(next, next);
    }, this.intervalMs);
  }
}
