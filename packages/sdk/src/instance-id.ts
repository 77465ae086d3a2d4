import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

/**
 * The default name of a process's worker or engine node:
 * `${hostname}-${pid}-${6 hex}`, unique across restarts and readable in
 * `GET /v1/cluster`, executions' `workerId` and logs.
 */
export function instanceId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
}
