// What the scenarios measure with: the start tracker the handlers report to,
// percentiles, a progress line, and a noise gauge (CPU used on this machine
// by processes that are not part of the benchmark: other engineers' tests).

import { cpus } from "node:os";
import { readFileSync } from "node:fs";
import { cpuMs, pidsNamed } from "./procstat.js";

/** Records the first start of each job (epoch ms); counts duplicates (at-least-once) and unknown seqs. */
export class StartTracker {
  readonly starts: Float64Array;
  seen = 0;
  duplicates = 0;
  private waiter: (() => void) | null = null;

  constructor(readonly total: number) {
    this.starts = new Float64Array(total).fill(NaN);
  }

  readonly started = (seq: number): void => {
    const now = Date.now();
    if (!(seq >= 0 && seq < this.total)) throw new Error(`handler reported unknown seq ${seq}`);
    if (!Number.isNaN(this.starts[seq]!)) {
      this.duplicates++;
      return;
    }
    this.starts[seq] = now;
    if (++this.seen === this.total) this.waiter?.();
  };

  /** Resolves true when every job has started, false at the deadline (epoch ms). */
  all(deadline: number): Promise<boolean> {
    if (this.seen === this.total) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          this.waiter = null;
          resolve(false);
        },
        Math.max(0, deadline - Date.now()),
      );
      this.waiter = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  /** Sorted lags (start − due); a job that never started counts as Infinity when `unstarted` says so, else is left out. */
  lags(dueAt: (seq: number) => number, filter: (seq: number) => boolean = () => true, unstarted = false): Float64Array {
    const out: number[] = [];
    for (let seq = 0; seq < this.total; seq++) {
      const s = this.starts[seq]!;
      if (!filter(seq)) continue;
      if (!Number.isNaN(s)) out.push(s - dueAt(seq));
      else if (unstarted) out.push(Infinity);
    }
    return Float64Array.from(out).sort();
  }
}

/** Nearest-rank percentile of sorted values (NaN when empty). */
export function pct(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))]!;
}

/** The distribution in `points` quantiles (for the chart), from p=0 to p=1. */
export function quantiles(sorted: Float64Array, points = 200): number[] {
  // Jobs that never started (Infinity) are left off the curve: it ends below 100%.
  const finite = sorted.filter((x) => Number.isFinite(x));
  if (finite.length === 0) return [];
  if (finite.length < sorted.length) {
    const shown = Math.round((points * finite.length) / sorted.length);
    return Array.from({ length: shown + 1 }, (_, i) => finite[Math.min(finite.length - 1, Math.round((i / points) * (sorted.length - 1)))]!);
  }
  return Array.from({ length: points + 1 }, (_, i) => sorted[Math.min(sorted.length - 1, Math.round((i / points) * (sorted.length - 1)))]!);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One status line on stderr: rewritten in place on a terminal, a line every 10 s otherwise. */
export class Progress {
  private text = "";
  private lastPrint = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly tty = process.stderr.isTTY === true;

  constructor(private readonly prefix: string) {
    this.timer = setInterval(() => this.print(), this.tty ? 250 : 10_000);
    this.timer.unref();
  }

  set(text: string): void {
    this.text = text;
  }

  private print(): void {
    if (!this.text) return;
    const line = `${this.prefix}: ${this.text}`;
    if (this.tty) process.stderr.write(`\r\x1b[2K${line}`);
    else if (Date.now() - this.lastPrint >= 9_000) process.stderr.write(`${line}\n`);
    this.lastPrint = Date.now();
  }

  /** Ends the line with a summary. */
  done(summary: string): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    process.stderr.write(`${this.tty ? "\r\x1b[2K" : ""}${this.prefix}: ${summary}\n`);
  }
}

const SERVICE_NAMES = ["postgres", "redis-server"];

function machineBusyMs(): number {
  // cpu  user nice system idle iowait irq softirq steal …, in clock ticks (USER_HZ, 100 on Linux).
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
  return (user + nice + system + irq + softirq + steal) * 10;
}

/**
 * CPU this run used (this process, the contender's child processes, the
 * PostgreSQL and Redis servers) and CPU the rest of the machine used
 * meanwhile (noise), as a share of all cores.
 */
export class NoiseGauge {
  private readonly t0 = Date.now();
  private readonly busy0 = machineBusyMs();
  private readonly start = new Map<number, number>();

  constructor(private readonly ownPids: () => number[]) {
    for (const pid of this.pids()) this.start.set(pid, cpuMs(pid));
  }

  private pids(): number[] {
    return [process.pid, ...this.ownPids(), ...pidsNamed(SERVICE_NAMES)];
  }

  /** Percent of the machine's cores used by other processes since construction. */
  foreignPercent(): number {
    const elapsed = Date.now() - this.t0;
    if (elapsed <= 0) return 0;
    let ours = 0;
    for (const pid of new Set(this.pids())) {
      const now = cpuMs(pid);
      // A process born during the run spent all its CPU inside it.
      ours += now - (this.start.get(pid) ?? 0);
    }
    const foreign = Math.max(0, machineBusyMs() - this.busy0 - ours);
    return (foreign / (elapsed * cpus().length)) * 100;
  }
}

/**
 * Waits (up to maxMs) until the machine has been quiet for a whole second:
 * CPU busy under thresholdPct of all cores. Between runs nothing of ours is
 * busy, so what is busy is someone else (tests, builds). Returns how long it
 * waited and the last second's busy share.
 */
export async function waitForQuiet(maxMs: number, thresholdPct = 25): Promise<{ waitedMs: number; busyPct: number }> {
  const t0 = Date.now();
  let busyPct = 0;
  for (;;) {
    const b0 = machineBusyMs();
    const s0 = Date.now();
    await sleep(1_000);
    busyPct = ((machineBusyMs() - b0) / ((Date.now() - s0) * cpus().length)) * 100;
    if (busyPct < thresholdPct || Date.now() - t0 >= maxMs) return { waitedMs: Date.now() - t0, busyPct };
  }
}
