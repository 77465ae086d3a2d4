// How long the store keeps what it no longer needs: the periods, their
// defaults and their floors. Pure, so the CLI checks its flags with the same
// rules the engine applies (without loading the engine).

import { invalidArgument } from "./errors.js";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export interface RetentionPeriods {
  /** Executions (with their attempts, dead letters included) are kept this long after they end. */
  historyMs: number;
  /** Idempotency keys are kept this long after the request that stored them. */
  idempotencyMs: number;
  /** Audit entries are kept this long. */
  auditMs: number;
}

export const RETENTION_DEFAULTS: RetentionPeriods = { historyMs: 30 * DAY_MS, idempotencyMs: DAY_MS, auditMs: 90 * DAY_MS };

/** docs/api.md promises idempotency keys for at least 24 hours; the other floors keep a replay or an audit possible. */
export const RETENTION_MINIMUMS: RetentionPeriods = { historyMs: HOUR_MS, idempotencyMs: DAY_MS, auditMs: HOUR_MS };

/** The first period below its floor (or not a whole number of ms), with why; null when all hold. */
export function retentionProblem(periods: Partial<RetentionPeriods>): { field: keyof RetentionPeriods; message: string } | null {
  for (const field of Object.keys(RETENTION_MINIMUMS) as (keyof RetentionPeriods)[]) {
    const value = periods[field];
    if (value === undefined) continue;
    const floor = RETENTION_MINIMUMS[field];
    if (!Number.isSafeInteger(value) || value < floor) {
      return { field, message: `must be at least ${describeMs(floor)}, got ${describeMs(value)}` };
    }
  }
  return null;
}

/** The periods with defaults filled in; throws INVALID_ARGUMENT naming the field (retention.historyMs, …). */
export function retentionPeriods(input: Partial<RetentionPeriods> = {}): RetentionPeriods {
  const problem = retentionProblem(input);
  if (problem) throw invalidArgument(`retention.${problem.field}`, problem.message);
  return {
    historyMs: input.historyMs ?? RETENTION_DEFAULTS.historyMs,
    idempotencyMs: input.idempotencyMs ?? RETENTION_DEFAULTS.idempotencyMs,
    auditMs: input.auditMs ?? RETENTION_DEFAULTS.auditMs,
  };
}

/** "24h", "30d", "90m", "1500 ms": for messages. */
function describeMs(ms: number): string {
  if (!Number.isFinite(ms) || ms <= 0 || ms % 60_000 !== 0) return `${ms} ms`;
  if (ms % DAY_MS === 0) return `${ms / DAY_MS}d`;
  if (ms % HOUR_MS === 0) return `${ms / HOUR_MS}h`;
  return `${ms / 60_000}m`;
}
