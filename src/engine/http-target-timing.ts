// The HTTP target runner's timings (http-target.ts): how long a call's lease
// outlasts its timeout, how long a leased call may wait for its origin, and
// the lease loop's poll, batch and acknowledgement delays. They depend on one
// another (MAX_WAIT_MS on GRACE_MS), so they stand together.

/** Past timeoutSeconds, the lease of a call in flight lasts this much longer (the time to record its outcome). */
export const GRACE_MS = 5_000;
/** A call goes out only with at least timeoutSeconds + this left on its lease; a longer lease is cut back to timeoutSeconds + GRACE_MS. */
export const MIN_MARGIN_MS = 1_000;
export const MAX_EXCESS_MS = 5_000;
/** A failed write of releases is tried again this much later, while their leases last. */
export const RELEASE_RETRY_MS = 500;

/**
 * The longest a leased call waits in memory for its origin's cap, rate limit
 * or probe. Its lease lasts at least GRACE_MS from the lease (and its hard
 * deadline is timeoutSeconds + GRACE_MS), so a call sent within this still has
 * its whole timeoutSeconds and MIN_MARGIN_MS to spare.
 */
export const MAX_WAIT_MS = GRACE_MS - 2 * MIN_MARGIN_MS;
/** A call released after waiting for a cap or a probe is ready again this much later. */
export const WAIT_RELEASE_MS = 1_000;
export const KEEPER_INTERVAL_MS = 1_000;
/** An idle, healthy origin is forgotten after this long. */
export const IDLE_ORIGIN_MS = 10 * 60_000;
export const DEFAULT_TIMEOUT_MS = 300_000;
/** The lease loop's long poll: it ends early when work is announced or the runner stops. */
export const LEASE_WAIT_MS = 5_000;
/** Finished calls wait this long for company before their outcomes are written (unless a lease call takes them first). */
export const ACK_DELAY_MS = 10;
/**
 * While the store has a backlog and calls are queued for their origins anyway,
 * lease at least this many at a time: one commit per call is what makes a herd
 * slow. Without a backlog, a call that becomes ready is leased at once.
 */
export const LEASE_BATCH = 64;
