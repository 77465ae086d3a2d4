// The bounds of the /metrics cardinality guard (workload-metrics.ts). No
// imports: the CLI checks its flags with it and loads no engine.

/** The label value of every tenant (or pool) past the guard's cap. */
export const OTHER_LABEL = "_other";
export const METRICS_MAX_TENANTS_DEFAULT = 100;
export const METRICS_MAX_TENANTS_BOUNDS = { min: 1, max: 10_000 } as const;
export const METRICS_MAX_POOLS_DEFAULT = 50;

/** What is wrong with a maxTenants or maxPools value; null when nothing. */
export function maxLabelsProblem(value: number): string | null {
  const { min, max } = METRICS_MAX_TENANTS_BOUNDS;
  return Number.isInteger(value) && value >= min && value <= max ? null : `expected an integer from ${min} to ${max}`;
}
