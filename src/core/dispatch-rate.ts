// A tenant's dispatch rate (dispatchRatePerSecond), as both stores enforce
// it in a lease: GCRA (the generic cell rate algorithm) over one number on
// the tenant's row, its theoretical arrival time (tat). Each grant moves tat
// on by 1/rate; a lease may grant what keeps tat within a burst (one
// second's worth, at least one) of now. A charge adds to tat, so two leases
// at once on two nodes each count: they may overshoot by a batch together,
// and the tenant then waits that much longer (never a drift in the long run).
//
// The stores say the same in their lease statements (sqlite/leases.ts,
// postgres/leases.ts), SQLite's picking with these; the contract suite's
// rules.ts holds both to them over generated cases.

/** How many attempts a tenant may start now under its rate (Infinity without one). */
export function dispatchAllowance(rate: number | null, tat: number | null, now: number): number {
  if (rate === null) return Number.POSITIVE_INFINITY;
  const ahead = Math.max(0, (tat ?? now) - now);
  return Math.max(0, Math.floor(burstOf(rate) - (ahead * rate) / 1000 + 1e-9));
}

/** The tenant's tat once n more attempts are charged at now. */
export function chargeDispatch(rate: number, tat: number | null, now: number, n: number): number {
  return Math.max(tat ?? now, now) + (n * 1000) / rate;
}

/** When the tenant may start its next attempt (its allowance reaches one). */
export function nextDispatchAt(rate: number, tat: number | null, now: number): number {
  return Math.max(now, Math.ceil((tat ?? now) - ((burstOf(rate) - 1) * 1000) / rate));
}

const burstOf = (rate: number): number => Math.max(1, rate);
