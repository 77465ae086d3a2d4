// Bulk dead-letter replays, what both drivers share: the row as a record, and
// the arithmetic of a step (the rate's slots, the cursor, when it is done).

import type { Row } from "./rows.js";
import type { ReplayCursor, ReplayRecord, ReplaySelection } from "./store.js";

/** How many ids a replay may list: the batch bound of the API (LIMITS.batchMax). */
export const REPLAY_IDS_MAX = 1000;

export function toReplay(r: Row, parse: <T>(value: unknown) => T): ReplayRecord {
  const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    replayId: r.id as string,
    tenantId: r.tenant_id as string,
    selection: parse<ReplaySelection>(r.selection),
    ratePerSecond: Number(r.rate),
    actor: r.actor as string,
    state: r.state as ReplayRecord["state"],
    total: n(r.total),
    replayed: Number(r.replayed),
    skipped: Number(r.skipped),
    cursor: parse<ReplayCursor | null>(r.cursor) ?? null,
    nextAt: Number(r.next_at),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    finishedAt: n(r.finished_at),
    owner: (r.owner as string | null) ?? null,
    leaseUntil: n(r.lease_until),
  };
}

/** The ids a step of an id selection looks at, and the cursor after them. */
export function nextIds(replay: ReplayRecord, limit: number): { ids: string[]; cursor: ReplayCursor; done: boolean } | null {
  if (!("executionIds" in replay.selection)) return null;
  const all = replay.selection.executionIds;
  const from = replay.cursor && "index" in replay.cursor ? replay.cursor.index : 0;
  const ids = all.slice(from, from + limit);
  const index = from + ids.length;
  return { ids, cursor: { index }, done: index >= all.length };
}

/**
 * The ready times of n executions replayed at `at`: the rate's next slots,
 * never before `at`, 1000 / rate ms apart; and the slot after the last.
 */
export function replaySlots(replay: ReplayRecord, at: number, n: number): { readyAt: number[]; nextAt: number } {
  const gap = 1000 / replay.ratePerSecond;
  const start = Math.max(at, replay.nextAt);
  return { readyAt: Array.from({ length: n }, (_, i) => Math.ceil(start + i * gap)), nextAt: n === 0 ? replay.nextAt : start + n * gap };
}
