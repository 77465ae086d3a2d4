// The HTTP-target runner's settings and the interfaces it is built with:
// its tuning (HttpTargetSettings, what `duetime serve` and the server's
// options pass), the options the engine gives it (store calls, clock,
// observers) and the outcome of a lease renewal. Apart from the runner
// (http-target.ts, which re-exports them) so its importers need not load it.

import type { Clock } from "../core/clock.js";
import type { PossibleDuplicateMark } from "../store/store.js";
import type { BreakerSettings, BreakerState } from "./circuit-breaker.js";
import type { EngineEvents } from "./events.js";
import type { Executor } from "./executor.js";
import type { CallOutcome } from "./http-call.js";
import type { OriginLimit } from "./origin-limits.js";
import type { StoredRef } from "../core/payload-refs.js";

/** Tuning of the HTTP-target executor; every field has a default. */
export interface HttpTargetSettings {
  /** Calls in flight from this node, every origin together (default 256). */
  concurrency?: number;
  /** Limits of every origin: calls in flight (default 64) and calls per second (default none). */
  origin?: OriginLimit;
  /** Limits of particular origins, by origin ("https://api.example" or "http://10.0.0.5:8080"). */
  origins?: Record<string, OriginLimit>;
  /** When an origin's breaker opens, how long it stays open, how it backs off. */
  breaker?: BreakerSettings;
  /** Response bytes read before the connection is cut (default 64 KiB). */
  maxResponseBytes?: number;
  /** Response body bytes kept in the attempt's record (default 4 KiB). */
  keptBodyBytes?: number;
  /** At stop(), calls in flight get this long to finish before they are aborted (default 5 s). */
  drainSeconds?: number;
}

export type HeartbeatResult =
  | { status: "ok"; leaseUntil: number; cancelRequested: boolean }
  | { status: "lost"; possibleDuplicate?: PossibleDuplicateMark }
  | { status: "not_found" };

export interface HttpTargetOptions extends HttpTargetSettings {
  executor: Executor;
  events: EngineEvents;
  clock: Clock;
  nodeId: string;
  /** Renews a lease (the store's executionHeartbeat, judged by the store's clock). */
  heartbeat(p: { tenantId: string; executionId: string; attempt: number; leaseMs: number }): Promise<HeartbeatResult>;
  /** Hosts, addresses or CIDR ranges that may be reached even when they are loopback or private. */
  allowTargetHosts?: string[];
  /** Signing secrets by tenant, newest first; several during a rotation. */
  signingSecrets?: Record<string, string | readonly string[]>;
  /** Observers (metrics). */
  observer?: HttpTargetObserver;
  /** The JSON text of a payload kept by reference (payload-blobs.ts), sent as the body; absent: such a call fails. */
  payloadText?: (ref: StoredRef) => Promise<string>;
}

export interface HttpTargetObserver {
  call?(outcome: CallOutcome): void;
  breaker?(origin: string, state: BreakerState): void;
  /** A leased call handed back unused: its origin's breaker was open, it waited too long, or the runner stopped. */
  released?(origin: string, reason: ReleaseReason): void;
}

export type ReleaseReason = "breaker" | "wait" | "stop";
