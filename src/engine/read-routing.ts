// List and history reads on a read replica (--read-store), as the design's
// read path says: they are the bulk of reads and need not be fresher than a
// few seconds, so they leave the primary's CPU to writes and leases. Reads
// that decide something (a job before a compare-and-set, whether any API key
// exists, whether a one-off already ran) always go to the primary: only the
// call sites in jobs-service.ts and ledger.ts that only show data use this.
//
// Staleness is bounded: the replica's lag is checked at most once a second
// (Store.replicaLagMs), a read waits for a check under a second old, and
// reads go to the primary while the lag is over maxLagMs or unknown, while
// the check does not answer within a second, or while the replica fails (a
// StoreUnavailableError from it sends that read, and every read for the next
// second, to the primary). So a list is at most maxLagMs + 1 s behind the
// primary, and a replica that is down costs no request an error.

import { StoreUnavailableError } from "../core/errors.js";
import type { Clock, TimerHandle } from "../core/clock.js";
import type { Store } from "../store/store.js";
import type { EngineEvents } from "./events.js";

/** The reads a replica may serve. */
export type ReadStore = Pick<
  Store,
  "jobList" | "executionHistory" | "executionsInWindow" | "deadLetterList" | "auditList" | "poolCounts" | "workloadMinutes"
>;

export const READ_METHODS = [
  "jobList",
  "executionHistory",
  "executionsInWindow",
  "deadLetterList",
  "auditList",
  "poolCounts",
  "workloadMinutes",
] as const;

/** How often the replica's lag is checked, and how long a failed replica is left alone. */
const CHECK_MS = 1000;

export interface ReadRoutingOptions {
  primary: Store;
  replica: Store;
  clock: Clock;
  events: EngineEvents;
  /** The most a replica may trail the primary and still serve reads (default 10 s). */
  maxLagMs?: number;
}

/** A ReadStore that reads from the replica while it is fresh enough, else from the primary. */
export function readRouting(o: ReadRoutingOptions): ReadStore & { readonly usingReplica: boolean } {
  const maxLagMs = o.maxLagMs ?? 10_000;
  let fresh = false;
  let checkedAt = -Infinity;
  let inFlight: Promise<void> | null = null;
  let answered: Promise<void> = Promise.resolve();

  /** Records the replica's state, telling the events when it starts or stops serving. */
  const judge = (serving: boolean, why: { lagMs?: number; error?: unknown }): void => {
    if (serving !== fresh) o.events.emit("reads:replica", { serving, ...why });
    fresh = serving;
  };

  // A read waits for a judgment under a second old: after a quiet spell the
  // last one may be long stale (the replica fresh then, far behind now). The
  // wait is bounded too: a replica that does not answer its lag check within
  // a second is judged out, and reads go to the primary until it answers.
  const judged = (): Promise<void> => {
    if (inFlight || o.clock.now() - checkedAt < CHECK_MS) return answered;
    checkedAt = o.clock.now();
    const query: Promise<void> = o.replica
      .replicaLagMs()
      .then(
        (lagMs) => judge(lagMs <= maxLagMs, { lagMs }),
        (error: unknown) => judge(false, { error }),
      )
      .finally(() => void (inFlight = null));
    inFlight = query;
    let timer: TimerHandle | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = o.clock.setTimer(() => {
        if (inFlight === query)
          judge(false, { error: new StoreUnavailableError("timeout", new Error(`the replica's lag check did not answer within ${CHECK_MS} ms`)) });
        resolve();
      }, CHECK_MS);
    });
    answered = Promise.race([query, bound]).finally(() => timer?.cancel());
    return answered;
  };

  const route = async <T>(read: (store: ReadStore) => Promise<T>): Promise<T> => {
    await judged();
    if (!fresh) return read(o.primary);
    try {
      return await read(o.replica);
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      judge(false, { error });
      checkedAt = o.clock.now();
      return read(o.primary);
    }
  };

  const routed = Object.fromEntries(
    READ_METHODS.map((name) => [name, (params: never) => route((store) => (store[name] as (p: never) => Promise<unknown>)(params))]),
  ) as unknown as ReadStore;
  return Object.defineProperty(routed, "usingReplica", { get: () => fresh, enumerable: true }) as ReadStore & { readonly usingReplica: boolean };
}
