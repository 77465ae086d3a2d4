// Fair leasing across tenants: weighted fair queueing over a pool's lanes
// (docs/design-notes.md "Fair leasing"). A lane is one tenant's work in a
// pool; its vtime is the work leased from it, divided by its tenant's
// weight. Each grant goes to the lane whose vtime after the grant would be
// least (its "finish tag"), so over time each backlogged tenant gets work
// in proportion to its weight, and priority orders work only within a lane.
//
// The stores keep the lanes and their vtimes; this is the pick, shared so
// both stores and their tests agree on it.

export interface Lane {
  tenantId: string;
  vtime: number;
  weight: number;
}

export interface LaneGrant extends Lane {
  /** Grants made to the lane in this pick; vtime already counts them. */
  granted: number;
  /** The lane had fewer rows due than it was asked for: nothing of it is left due. */
  exhausted: boolean;
}

/** A lane's idle_until when it has no READY row at all (9999-12-31): a new READY row wakes it earlier. */
export const NO_WORK = 253_402_300_799_999;

/** Lanes considered at once; another comes in as one runs out. */
export const LANES_PER_PICK = 8;

interface Open extends LaneGrant {
  buffer: string[];
}

const finish = (lane: Lane): number => lane.vtime + 1 / lane.weight;

/**
 * The most rows a lease of max reads from one lane when it offers them all
 * at once (PostgreSQL's lease, in SQL): twice the lane's weighted share of
 * max among the lanes considered. Twice lets the others fill most of what a
 * short lane leaves, while a lease claims at most twice the rows it grants;
 * a backlogged lane's grant never reaches it (fairPick grants about the share).
 */
export function laneOfferLimit(max: number, weight: number, totalWeight: number): number {
  return 2 * Math.ceil((max * weight) / totalWeight);
}

/**
 * Picks up to max ids across lanes. `more(k)` gives the next k lanes of the
 * rotation (least vtime first; none when there are no more); `take(lane, n)`
 * gives up to n due ids of a lane, never one it gave before. Asks each lane
 * for about its weighted share of what is left, so a backlogged lane is read
 * a few rows past its grants at most.
 */
export function fairPick(max: number, more: (k: number) => Lane[], take: (lane: Lane, n: number) => string[]): { ids: string[]; lanes: LaneGrant[] } {
  const open: Open[] = [];
  const done: LaneGrant[] = [];
  const join = (k: number) => {
    for (const lane of more(k)) open.push({ ...lane, granted: 0, exhausted: false, buffer: [] });
  };
  const leave = (lane: Open) => {
    open.splice(open.indexOf(lane), 1);
    done.push(lane);
    join(1);
  };
  join(LANES_PER_PICK);
  const ids: string[] = [];
  while (ids.length < max && open.length > 0) {
    let best = open[0] as Open;
    for (const lane of open) {
      if (finish(lane) < finish(best) || (finish(lane) === finish(best) && lane.tenantId < best.tenantId)) best = lane;
    }
    if (best.buffer.length === 0) {
      const weights = open.reduce((sum, lane) => sum + lane.weight, 0);
      const want = Math.max(1, Math.ceil(((max - ids.length) * best.weight) / weights));
      best.buffer = take(best, want);
      best.exhausted = best.buffer.length < want;
      if (best.buffer.length === 0) {
        leave(best);
        continue;
      }
    }
    ids.push(best.buffer.shift() as string);
    best.granted++;
    best.vtime += 1 / best.weight;
    if (best.buffer.length === 0 && best.exhausted) leave(best);
  }
  return { ids, lanes: [...done, ...open.map(({ buffer: _, ...lane }) => lane)] };
}
