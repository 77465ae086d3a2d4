// The per-minute workload history that GET /v1/stats/history reads
// (workload_minutes: SQLite migration 10, PostgreSQL migration 5). Each node
// adds what it saw in a minute to the minute's row of a tenant's pool, so
// the rows sum the cluster; the queue depth is set, not added: every node
// samples the same counts. One upsert for both drivers; each supplies the
// rows as a JSON record set in its own dialect.

/** Start-lag histogram bounds (ms): lag_i counts lags ≤ LAG_BOUNDS_MS[i] and above the previous bound; the last column, the rest. Fixed by the migrations. */
export const LAG_BOUNDS_MS = [10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 60000] as const;

export const LAG_COLUMNS = Array.from({ length: LAG_BOUNDS_MS.length + 1 }, (_, i) => `lag_${i}`);

const ADDED = ["started", "succeeded", "failed", "dead", ...LAG_COLUMNS];
const SET = ["pending", "queued", "running"];
/** Every column a record set must give, with its type (the PostgreSQL record definition uses the types). */
export const WORKLOAD_COLUMNS: readonly (readonly [name: string, type: "bigint" | "text" | "integer"])[] = [
  ["minute", "bigint"],
  ["tenant_id", "text"],
  ["pool", "text"],
  ...ADDED.map((c) => [c, "integer"] as const),
  ...SET.map((c) => [c, "integer"] as const),
];

export interface WorkloadMinute {
  /** The minute's start (ms since the epoch). */
  minute: number;
  tenantId: string;
  pool: string;
  started: number;
  succeeded: number;
  failed: number;
  dead: number;
  /** Counts per LAG_BOUNDS_MS bucket, LAG_BOUNDS_MS.length + 1 of them. */
  lag: number[];
  /** The counts of poolCounts when sampled in this minute; absent when not sampled (a read answers null). */
  pending?: number | null;
  queued?: number | null;
  running?: number | null;
}

/** The bucket a lag falls in. */
export function lagBucket(ms: number): number {
  const i = LAG_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return i === -1 ? LAG_BOUNDS_MS.length : i;
}

/** The records as the upsert's JSON record set carries them, one per row: an upsert may not touch a row twice. */
export function workloadJson(records: readonly WorkloadMinute[]): string {
  const byRow = new Map<string, WorkloadMinute>();
  for (const m of records) {
    const prev = byRow.get(workloadKey(m));
    byRow.set(workloadKey(m), prev ? addWorkload(prev, m) : m);
  }
  return JSON.stringify([...byRow.values()].map(toWorkloadJson));
}

/** The row a record adds to. */
export function workloadKey(m: Pick<WorkloadMinute, "minute" | "tenantId" | "pool">): string {
  return `${m.minute}\u0000${m.tenantId}\u0000${m.pool}`;
}

/** Two records of one row as one: counts summed, b's depth where it has one. */
export function addWorkload(a: WorkloadMinute, b: WorkloadMinute): WorkloadMinute {
  return {
    ...a,
    started: a.started + b.started,
    succeeded: a.succeeded + b.succeeded,
    failed: a.failed + b.failed,
    dead: a.dead + b.dead,
    lag: a.lag.map((n, i) => n + (b.lag[i] ?? 0)),
    pending: b.pending ?? a.pending ?? null,
    queued: b.queued ?? a.queued ?? null,
    running: b.running ?? a.running ?? null,
  };
}

function toWorkloadJson(m: WorkloadMinute): Record<string, number | string | null> {
  const row: Record<string, number | string | null> = {
    minute: m.minute,
    tenant_id: m.tenantId,
    pool: m.pool,
    started: m.started,
    succeeded: m.succeeded,
    failed: m.failed,
    dead: m.dead,
    pending: m.pending ?? null,
    queued: m.queued ?? null,
    running: m.running ?? null,
  };
  LAG_COLUMNS.forEach((c, i) => {
    row[c] = m.lag[i] ?? 0;
  });
  return row;
}

export function fromWorkloadRow(r: Record<string, unknown>): WorkloadMinute {
  const int = (v: unknown): number => Number(v);
  const maybe = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    minute: int(r.minute),
    tenantId: r.tenant_id as string,
    pool: r.pool as string,
    started: int(r.started),
    succeeded: int(r.succeeded),
    failed: int(r.failed),
    dead: int(r.dead),
    lag: LAG_COLUMNS.map((c) => int(r[c])),
    pending: maybe(r.pending),
    queued: maybe(r.queued),
    running: maybe(r.running),
  };
}

/** The upsert, reading the records from `source` (a FROM item with every WORKLOAD_COLUMNS column). */
export function workloadUpsertSql(source: string): string {
  const names = WORKLOAD_COLUMNS.map(([c]) => c).join(", ");
  const updates = [
    ...ADDED.map((c) => `${c} = workload_minutes.${c} + excluded.${c}`),
    ...SET.map((c) => `${c} = coalesce(excluded.${c}, workload_minutes.${c})`),
  ].join(", ");
  // WHERE true: SQLite's parser needs it between an INSERT's SELECT and its ON CONFLICT.
  // In key order: two nodes upserting the same rows lock them in one order, never each
  // holding one the other waits for (a PostgreSQL deadlock the contract's race found).
  return `INSERT INTO workload_minutes (${names}) SELECT ${names} FROM ${source} WHERE true ORDER BY minute, tenant_id, pool
    ON CONFLICT (minute, tenant_id, pool) DO UPDATE SET ${updates}`;
}
