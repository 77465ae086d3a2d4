// The in-memory hot set: due entries of the loaded window, in one binary
// min-heap per tenant ordered by dueAt. It holds only the next minute or two
// of work, so its size is bounded by what is due soon, never by the job
// table. Due entries are taken round-robin across tenants, so one tenant's
// million midnight jobs do not push another tenant's midnight job to the back
// of the line (promise 4). An entry re-pushed for the same job replaces the
// old one (the old becomes garbage, dropped when it surfaces), so a job edited
// inside the window fires once.

import type { LoadedDueEntry } from "../store/store.js";

export class DueTimer {
  private readonly heaps = new Map<string, EntryHeap>();
  /** The live entry per job; heap entries not in this map are stale. */
  private readonly live = new Map<string, LoadedDueEntry>();
  /** Where the next round-robin pass starts, so no tenant is always first. */
  private turn = 0;

  get size(): number {
    return this.live.size;
  }

  push(entry: LoadedDueEntry): void {
    const current = this.live.get(entry.jobId);
    if (current && current.scheduledFor === entry.scheduledFor && current.dueAt === entry.dueAt) return;
    this.live.set(entry.jobId, entry);
    let heap = this.heaps.get(entry.tenantId);
    if (!heap) this.heaps.set(entry.tenantId, (heap = new EntryHeap()));
    heap.push(entry);
  }

  /** Forgets a job (cancelled, paused, rescheduled outside the window). */
  remove(jobId: string): void {
    this.live.delete(jobId);
  }

  /** dueAt of the earliest live entry, or null when empty. */
  peekTime(): number | null {
    let min: number | null = null;
    for (const [tenant, heap] of this.heaps) {
      const top = this.top(tenant, heap);
      if (top && (min === null || top.dueAt < min)) min = top.dueAt;
    }
    return min;
  }

  /** Removes and returns up to max live entries with dueAt <= now: earliest first within a tenant, tenants in turn. */
  popDue(now: number, max: number): LoadedDueEntry[] {
    const out: LoadedDueEntry[] = [];
    const tenants = [...this.heaps.keys()];
    if (tenants.length === 0) return out;
    const start = this.turn++ % tenants.length;
    for (let progress = true; progress && out.length < max; ) {
      progress = false;
      for (let i = 0; i < tenants.length && out.length < max; i++) {
        const tenant = tenants[(start + i) % tenants.length]!;
        const heap = this.heaps.get(tenant);
        const top = heap && this.top(tenant, heap);
        if (!heap || !top || top.dueAt > now) continue;
        heap.pop();
        this.live.delete(top.jobId);
        out.push(top);
        progress = true;
      }
    }
    return out;
  }

  clear(): void {
    this.heaps.clear();
    this.live.clear();
  }

  /** The tenant's earliest live entry, dropping stale ones (and the heap, once empty). */
  private top(tenant: string, heap: EntryHeap): LoadedDueEntry | undefined {
    for (let top = heap.peek(); top; top = heap.peek()) {
      if (this.live.get(top.jobId) === top) return top;
      heap.pop();
    }
    this.heaps.delete(tenant);
    return undefined;
  }
}

/** A binary min-heap of due entries by dueAt. */
class EntryHeap {
  private readonly items: LoadedDueEntry[] = [];

  peek(): LoadedDueEntry | undefined {
    return this.items[0];
  }

  push(entry: LoadedDueEntry): void {
    const items = this.items;
    let i = items.length;
    items.push(entry);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.dueAt <= entry.dueAt) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = entry;
  }

  pop(): void {
    const items = this.items;
    const last = items.pop()!;
    if (items.length === 0) return;
    const n = items.length;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && items[right]!.dueAt < items[left]!.dueAt ? right : left;
      if (items[child]!.dueAt >= last.dueAt) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
  }
}
