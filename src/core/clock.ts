// Time is injected: every component takes a Clock, tests take a FakeClock.
// This file and the runtime wiring are the only places that touch the
// platform's Date.now and setTimeout.

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Runs fn after ms milliseconds (clamped to Node's 24.8-day maximum by callers). */
  setTimer(fn: () => void, ms: number): TimerHandle;
  /**
   * The `now` to hand the store for lease deadlines: undefined lets the store
   * use its own clock (the system clock, in production); a fake clock pins it.
   */
  storeNow(): number | undefined;
}

/** Node's setTimeout overflows past 2^31-1 ms and fires at once; never ask for more. */
export const MAX_TIMER_MS = 2_147_483_647;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    // Not unref'd: an awaited long poll must keep the process alive; stop() cancels every timer.
    const t = setTimeout(fn, Math.min(Math.max(0, ms), MAX_TIMER_MS));
    return { cancel: () => clearTimeout(t) };
  },
  storeNow: () => undefined,
};

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** A clock that moves only when told to; timers fire in due order during advance(). */
export class FakeClock implements Clock {
  private current: number;
  private timers: FakeTimer[] = [];
  private seq = 0;

  constructor(start: number | string = "2026-01-01T00:00:00.000Z") {
    this.current = typeof start === "number" ? start : Date.parse(start);
  }

  now(): number {
    return this.current;
  }

  storeNow(): number {
    return this.current;
  }

  setTimer(fn: () => void, ms: number): TimerHandle {
    const timer: FakeTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Moves time forward by ms, firing every timer that falls due on the way. */
  advance(ms: number): void {
    const end = this.current + ms;
    for (;;) {
      const next = this.nextTimer(end);
      if (!next) break;
      this.current = next.at;
      next.cancelled = true;
      next.fn();
    }
    this.current = end;
  }

  /** Moves time forward without firing timers: a process that was paused (GC, SIGSTOP) and wakes late. */
  jump(ms: number): void {
    this.current += ms;
  }

  set(time: number | string): void {
    const target = typeof time === "number" ? time : Date.parse(time);
    if (target >= this.current) this.advance(target - this.current);
    else this.current = target; // moving backwards fires nothing
  }

  /** When the earliest pending timer is due, or undefined when none is pending. */
  nextTimerAt(): number | undefined {
    return this.nextTimer(Infinity)?.at;
  }

  pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  private nextTimer(end: number): FakeTimer | undefined {
    this.timers = this.timers.filter((t) => !t.cancelled);
    let best: FakeTimer | undefined;
    for (const t of this.timers) {
      if (t.at > end) continue;
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }
}
