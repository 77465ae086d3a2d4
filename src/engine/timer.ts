// The in-memory hot set: due entries of the loaded window in a binary
// min-heap ordered by dueAt. It holds only the next minute or two of work, so
// its size is bounded by what is due soon, never by the job table. An entry
// re-pushed for the same job replaces the old one (the old becomes garbage
// and is dropped when popped), so a job edited inside the window fires once.

import type { LoadedDueEntry } from "../store/store.js";

export class DueTimer {
  private heap: LoadedDueEntry[] = [];
  /** The live entry per job; heap entries not in this map are stale. */
  private live = new Map<string, LoadedDueEntry>();

  get size(): number {
    return this.live.size;
  }

  has(jobId: string, scheduledFor: number): boolean {
    return this.live.get(jobId)?.scheduledFor === scheduledFor;
  }

  push(entry: LoadedDueEntry): void {
    const current = this.live.get(entry.jobId);
    if (current && current.scheduledFor === entry.scheduledFor && current.dueAt === entry.dueAt) return;
    this.live.set(entry.jobId, entry);
    this.heap.push(entry);
    this.siftUp(this.heap.length - 1);
  }

  /** Forgets a job (cancelled, paused, rescheduled outside the window). */
  remove(jobId: string): void {
    this.live.delete(jobId);
  }

  /** dueAt of the earliest live entry, or null when empty. */
  peekTime(): number | null {
    this.dropStale();
    return this.heap[0]?.dueAt ?? null;
  }

  /** Removes and returns up to max live entries with dueAt <= now, earliest first. */
  popDue(now: number, max: number): LoadedDueEntry[] {
    const out: LoadedDueEntry[] = [];
    while (out.length < max) {
      this.dropStale();
      const top = this.heap[0];
      if (!top || top.dueAt > now) break;
      this.popTop();
      this.live.delete(top.jobId);
      out.push(top);
    }
    return out;
  }

  clear(): void {
    this.heap = [];
    this.live.clear();
  }

  private dropStale(): void {
    for (let top = this.heap[0]; top && this.live.get(top.jobId) !== top; top = this.heap[0]) this.popTop();
  }

  private popTop(): void {
    const last = this.heap.pop()!;
    if (this.heap.length > 0) {
      this.heap[0] = last;
      this.siftDown(0);
    }
  }

  private siftUp(i: number): void {
    const heap = this.heap;
    const item = heap[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.dueAt <= item.dueAt) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = item;
  }

  private siftDown(i: number): void {
    const heap = this.heap;
    const n = heap.length;
    const item = heap[i]!;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && heap[right]!.dueAt < heap[left]!.dueAt ? right : left;
      if (heap[child]!.dueAt >= item.dueAt) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = item;
  }
}
