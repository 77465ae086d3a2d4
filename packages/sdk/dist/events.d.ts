import type { ErrorRecord, LeasedExecution } from "./api.js";
import type { AbortReason } from "./errors.js";
export type WorkerState = "idle" | "running" | "stopping" | "stopped";
export type WorkerEvent = 
/** A leased attempt was handed to the handler. */
{
    type: "job:start";
    job: LeasedExecution;
}
/** The handler returned; the completion is queued for acknowledgement. */
 | {
    type: "job:complete";
    job: LeasedExecution;
    result: unknown;
    durationMs: number;
}
/** The handler threw; the failure (coerced to an ErrorRecord) is queued for acknowledgement. */
 | {
    type: "job:fail";
    job: LeasedExecution;
    error: ErrorRecord;
    durationMs: number;
}
/** The handler settled after its attempt was lost or cancelled: its outcome is dropped, not acknowledged. */
 | {
    type: "job:drop";
    job: LeasedExecution;
    reason: AbortReason;
    durationMs: number;
}
/** A heartbeat answered cancelRequested: the handler's signal is aborted. */
 | {
    type: "job:cancel";
    job: LeasedExecution;
}
/** The server no longer accepts this attempt (409 LEASE_LOST on a heartbeat or an ack). */
 | {
    type: "lease:lost";
    executionId: string;
    attempt: number;
    during: "heartbeat" | "ack" | "prefetch";
}
/** Acknowledgements answered by the server; `via` tells whether they rode on a lease call or a batch call. */
 | {
    type: "acks:sent";
    via: "lease" | "batch";
    count: number;
    rejected: number;
}
/** Something failed and the worker carries on (retrying after retryInMs when given). */
 | {
    type: "error";
    during: "lease" | "ack" | "heartbeat" | "shutdown";
    error: unknown;
    retryInMs?: number;
} | {
    type: "state";
    state: WorkerState;
};
export type WorkerEventType = WorkerEvent["type"];
