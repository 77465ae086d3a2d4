// Typed lifecycle events. Metrics, logs and tests all listen here rather than
// being called from the hot paths directly.

import { EventEmitter } from "node:events";
import type { RetentionKind } from "../store/store.js";
import type { StoreFaultKind, StoreUnavailableError } from "../core/errors.js";

export interface EngineEventMap {
  "execution:dispatched": { jobId: string; executionId: string; tenantId: string; pool: string; lagMs: number };
  /** A dry-run job's occurrence, recorded would_run at its dispatch instead of running (mode dry_run). */
  "execution:would_run": { jobId: string; executionId: string; tenantId: string; pool: string; lagMs: number };
  /** retry: an attempt after a failed or timed-out one (not a first attempt granted again after a hand-back). */
  "execution:leased": { jobId: string; executionId: string; tenantId: string; pool: string; attempt: number; retry: boolean; startLagMs: number };
  /** A retry over its budget (retry-budget.ts) was handed back unused, ready again at readyAt; scope: the budget that refused ("tenant", "origin"). */
  "retry:deferred": { jobId: string; executionId: string; tenantId: string; pool: string; attempt: number; scope: string; readyAt: number };
  "execution:succeeded": { jobId: string; executionId: string; tenantId: string; attempt: number; pool: string };
  "execution:failed": { jobId: string; executionId: string; tenantId: string; attempt: number; pool: string; state: "READY" | "DEAD" | "CANCELLED" };
  /** The reaper ended an attempt whose lease expired (its attempt number is not in the store's answer). */
  "execution:timed_out": { jobId: string; executionId: string; tenantId: string; pool: string; state: "READY" | "DEAD" | "CANCELLED" };
  "lease:lost": { jobId: string; executionId: string; attempt: number; call: "heartbeat" | "complete" | "fail" };
  /** An attempt may have run twice: it called after losing its lease, or its lease expired and a later attempt succeeded (once per attempt; GET /v1/executions?possibleDuplicate=true). */
  "execution:possible_duplicate": {
    jobId: string;
    executionId: string;
    tenantId: string;
    attempt: number;
    reason: "lease_lost" | "expired_then_succeeded";
    call: "heartbeat" | "complete" | "fail";
  };
  /** This node's shards changed: how many it holds now, and how many it gained and lost since the last change. */
  "shards:changed": { owned: number; gained: number; lost: number };
  /** No round renewed this node's shard leases for a whole lease (the store unreachable): it dropped the `held` shards it had. */
  "shards:lapsed": { held: number; sinceMs: number };
  /** This node took a shard whose owner let its lease expire, this long after the expiry. */
  "shard:taken_over": { shard: number; from: string; afterExpiryMs: number };
  "retention:purged": { kind: RetentionKind | "blobs"; deleted: number };
  /** A retention run ended: the rows it removed by kind, and how long it took. */
  "retention:ran": { deleted: Record<RetentionKind, number>; ms: number };
  /** A store call failed with StoreUnavailableError (store-health.ts). */
  "store:fault": { op: string; kind: StoreFaultKind };
  /** The store stopped (with the fault that showed it) or started again to take writes. */
  "store:writable": { writable: boolean; error?: StoreUnavailableError };
  /** The read replica (--read-store) started or stopped serving list and history reads: its lag, or the error that stopped it. */
  "reads:replica": { serving: boolean; lagMs?: number; error?: unknown };
  /** Signals this node sent to the others, received from them, or a resync after its listener was down (engine/signals.ts). */
  signals: { direction: "sent" | "received" | "resync"; count: number };
  /** A create made a tenant's work pile up in one second or minute (spikes.ts): the answer warned. */
  "due:spike": { tenantId: string; window: "second" | "minute" };
  /** A step of a bulk dead-letter replay (dead-letter-replays.ts) made count dead letters READY; state: the replay's after it. */
  "dead-letters:replayed": { tenantId: string; replayId: string; count: number; state: "RUNNING" | "DONE" | "CANCELLED" };
  /** The due index reconciler (due-index-reconciler.ts) repaired a page of a shard: entries added to the index, members removed from it. */
  "due-index:repaired": { shard: number; added: number; removed: number };
  error: { where: string; error: unknown };
}

export class EngineEvents {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(100);
  }

  emit<K extends keyof EngineEventMap>(name: K, payload: EngineEventMap[K]): void {
    this.emitter.emit(name, payload);
  }

  on<K extends keyof EngineEventMap>(name: K, listener: (payload: EngineEventMap[K]) => void): () => void {
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }
}
