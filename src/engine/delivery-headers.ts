// The headers every delivery of an execution carries, whether the server
// calls an HTTP target or publishes to a broker: the job's own headers, less
// those duetime sets, then duetime's (the occurrence's idempotency key, the
// execution id, the attempt as fencing token, the due time).

import { toIso } from "../core/time.js";
import type { LeasedRow } from "../store/store.js";

/** Headers set here; a job's own headers cannot override them (callers add the ones they set besides). */
export const DELIVERY_HEADERS: readonly string[] = [
  "content-type",
  "idempotency-key",
  "duetime-execution-id",
  "duetime-attempt",
  "duetime-scheduled-for",
];

/** `reserved`: lower-case names a job's headers may not set (DELIVERY_HEADERS and the caller's own). */
export function deliveryHeaders(row: LeasedRow, own: Record<string, string> | undefined, reserved: ReadonlySet<string>): Record<string, string> {
  const scheduledFor = toIso(row.scheduledFor);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(own ?? {})) {
    if (!reserved.has(name.toLowerCase())) headers[name] = value;
  }
  headers["content-type"] = "application/json";
  headers["idempotency-key"] = `${row.jobId}:${scheduledFor}`;
  headers["duetime-execution-id"] = row.executionId;
  headers["duetime-attempt"] = String(row.attempt);
  headers["duetime-scheduled-for"] = scheduledFor;
  return headers;
}
