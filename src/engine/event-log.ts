// The engine's log: one structured pino line per lifecycle event worth telling
// (events.ts), with stable field names, so that lines can be searched by
// jobId, executionId, attempt, tenantId and pool. nodeId is bound by the
// caller (a child logger), so it is on every line, request logs included.
//
// Levels (docs/operations.md "Logs"): error, the store failing and
// unexpected errors; warn, work that went wrong (a lease lost or expired, a
// possible duplicate, a dead letter, the store not writable, a due spike);
// info, the node's own life (shards, takeovers, replays, retention runs);
// debug, each dispatch, lease, success and retry. Payloads, results, error
// texts from workers, keys and secrets are never logged: only ids, states
// and counts.

import type { BaseLogger } from "pino";
import { StoreUnavailableError } from "../core/errors.js";
import type { EngineEvents } from "./events.js";

/**
 * pino redact paths: credentials never reach a log line, whatever logs a
 * request or its headers (Fastify's own request serializer leaves headers
 * out; this is the safety net).
 */
export const LOG_REDACT_PATHS: readonly string[] = [
  "req.headers.authorization",
  'req.headers["proxy-authorization"]',
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  "headers.authorization",
  'headers["proxy-authorization"]',
  "headers.cookie",
  'headers["x-api-key"]',
  "authorization",
];

/** Lines that can come in floods (a store outage, a herd of creates) are told once per key per this many ms. */
const THROTTLE_MS = 10_000;

export interface EventLogOptions {
  /** The throttle's clock (ms); tests move it. */
  now?: () => number;
}

/** Subscribes log to events; returns the unsubscribe. */
export function logEngineEvents(events: EngineEvents, log: BaseLogger, options: EventLogOptions = {}): () => void {
  const now = options.now ?? (() => performance.now());
  // Building a line's fields costs an object per event: skipped when its level is off.
  const enabled = (level: "debug" | "info"): boolean => {
    const l = log as BaseLogger & { isLevelEnabled?: (level: string) => boolean };
    return typeof l.isLevelEnabled === "function" ? l.isLevelEnabled(level) : true;
  };
  const told = new Map<string, { at: number; suppressed: number }>();
  /** Whether a line for key is due now; suppressed: how many were skipped since the last one. */
  const throttle = (key: string): { suppressed: number } | null => {
    const t = now();
    const last = told.get(key);
    if (last && t - last.at < THROTTLE_MS) {
      last.suppressed++;
      return null;
    }
    told.set(key, { at: t, suppressed: 0 });
    return { suppressed: last?.suppressed ?? 0 };
  };
  const offs = [
    events.on("execution:dispatched", (e) => {
      if (enabled("debug"))
        log.debug({ jobId: e.jobId, executionId: e.executionId, tenantId: e.tenantId, pool: e.pool, lagMs: e.lagMs }, "execution dispatched");
    }),
    events.on("execution:would_run", (e) => {
      if (enabled("debug"))
        log.debug({ jobId: e.jobId, executionId: e.executionId, tenantId: e.tenantId, pool: e.pool, lagMs: e.lagMs }, "dry run: would run");
    }),
    events.on("execution:leased", (e) => {
      if (enabled("debug"))
        log.debug(
          {
            jobId: e.jobId,
            executionId: e.executionId,
            attempt: e.attempt,
            tenantId: e.tenantId,
            pool: e.pool,
            retry: e.retry,
            startLagMs: e.startLagMs,
          },
          "attempt leased",
        );
    }),
    // Per retry, hundreds a second while a dependency is down: debug, and counted by duetime_retries_deferred_total.
    events.on("retry:deferred", (e) => {
      if (enabled("debug"))
        log.debug(
          {
            jobId: e.jobId,
            executionId: e.executionId,
            attempt: e.attempt,
            tenantId: e.tenantId,
            pool: e.pool,
            scope: e.scope,
            readyAt: new Date(e.readyAt).toISOString(),
          },
          "retry deferred: its retry budget is spent",
        );
    }),
    events.on("execution:succeeded", (e) => {
      if (enabled("debug"))
        log.debug({ jobId: e.jobId, executionId: e.executionId, attempt: e.attempt, tenantId: e.tenantId, pool: e.pool }, "attempt succeeded");
    }),
    events.on("execution:failed", (e) => {
      const fields = { jobId: e.jobId, executionId: e.executionId, attempt: e.attempt, tenantId: e.tenantId, pool: e.pool, state: e.state };
      if (e.state === "DEAD") log.warn(fields, "execution dead-lettered: its attempt failed for good");
      else if (enabled("debug"))
        log.debug(fields, e.state === "READY" ? "attempt failed; it will be retried" : "attempt failed; the job was cancelled");
    }),
    events.on("execution:timed_out", (e) => {
      const fields = { jobId: e.jobId, executionId: e.executionId, tenantId: e.tenantId, pool: e.pool, state: e.state };
      // A worker that died, stalled or was cut off: worth a warning even when the execution runs again.
      if (e.state === "DEAD") log.warn(fields, "execution dead-lettered: its last attempt's lease expired");
      else if (e.state === "READY") log.warn(fields, "lease expired: the attempt timed out; it will be retried");
      else if (enabled("debug")) log.debug(fields, "lease expired; the job was cancelled");
    }),
    events.on("lease:lost", (e) => {
      log.warn(
        { jobId: e.jobId, executionId: e.executionId, attempt: e.attempt, call: e.call },
        "lease lost: the attempt's call was refused (LEASE_LOST)",
      );
    }),
    events.on("execution:possible_duplicate", (e) => {
      log.warn(
        { jobId: e.jobId, executionId: e.executionId, attempt: e.attempt, tenantId: e.tenantId, reason: e.reason, call: e.call },
        "possible duplicate: the attempt may have run twice",
      );
    }),
    events.on("shards:changed", (e) => {
      log.info({ owned: e.owned, gained: e.gained, lost: e.lost }, "shards changed");
    }),
    events.on("shards:lapsed", (e) => {
      log.warn(
        { held: e.held, sinceMs: e.sinceMs },
        "shard leases lapsed: the store was not reached for a whole shard lease; this node dispatches nothing and is not ready until it renews",
      );
    }),
    events.on("shard:taken_over", (e) => {
      log.info({ shard: e.shard, from: e.from, afterExpiryMs: e.afterExpiryMs }, "shard taken over from an owner whose lease expired");
    }),
    events.on("retention:ran", (e) => {
      const total = Object.values(e.deleted).reduce((a, b) => a + b, 0);
      // Every minute: told at info only when it removed something.
      if (total > 0) log.info({ deleted: e.deleted, ms: e.ms }, "retention run");
      else if (enabled("debug")) log.debug({ deleted: e.deleted, ms: e.ms }, "retention run");
    }),
    events.on("store:fault", (e) => {
      const due = throttle(`store:${e.op}:${e.kind}`);
      if (due) log.error({ op: e.op, kind: e.kind, suppressed: due.suppressed }, "store call failed: the store cannot serve");
    }),
    events.on("store:writable", ({ writable, error }) => {
      if (writable) log.info("the store takes writes again");
      else log.warn({ err: error?.cause, kind: error?.kind }, "the store cannot write; /readyz answers 503 until a write probe succeeds");
    }),
    events.on("reads:replica", ({ serving, lagMs, error }) => {
      if (serving) log.info({ lagMs }, "the read replica serves list and history reads");
      else log.warn({ lagMs, err: error }, "the read replica lags or fails; the store serves list and history reads");
    }),
    events.on("signals", (e) => {
      if (e.direction === "resync") log.info("cluster signals resynced after the listener connection was down");
    }),
    events.on("due:spike", (e) => {
      const due = throttle(`spike:${e.tenantId}:${e.window}`);
      if (due)
        log.warn(
          { tenantId: e.tenantId, window: e.window, suppressed: due.suppressed },
          "due spike: a tenant's work piles up in one window (DUE_SPIKE)",
        );
    }),
    events.on("dead-letters:replayed", (e) => {
      const fields = { tenantId: e.tenantId, replayId: e.replayId, count: e.count, state: e.state };
      if (e.state !== "RUNNING") log.info(fields, "dead-letter replay ended");
      else if (enabled("debug")) log.debug(fields, "dead-letter replay step");
    }),
    events.on("error", ({ where, error }) => {
      // A store fault is told by store:fault and store:writable, however often the loops retry.
      if (error instanceof StoreUnavailableError) {
        if (enabled("debug")) log.debug({ where, kind: error.kind }, "background loop waits for the store");
      } else log.error({ where, err: error }, "background loop failed; it retries");
    }),
  ];
  return () => {
    for (const off of offs) off();
  };
}
