/**
 * The default name of a process's worker or engine node:
 * `${hostname}-${pid}-${6 hex}`, unique across restarts and readable in
 * `GET /v1/cluster`, executions' `workerId` and logs.
 */
export declare function instanceId(): string;
