// Prometheus metrics, fed by engine events. docs/operations.md explains each.

import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { EngineEvents } from "./events.js";
import { labelGuards, type LabelGuards } from "./workload-metrics.js";

const LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** guards: the cardinality guard of the tenant and pool labels (workload-metrics.ts). */
export function createMetrics(events: EngineEvents, loadedDue: () => number, guards: LabelGuards = labelGuards()): Registry {
  const registry = new Registry();
  const dispatchLag = new Histogram({
    name: "duetime_dispatch_lag_seconds",
    help: "dispatchedAt - scheduledFor of dispatched occurrences, by tenant and pool (guarded: _other past the caps)",
    labelNames: ["tenant", "pool"],
    buckets: LAG_BUCKETS,
    registers: [registry],
  });
  const startLag = new Histogram({
    name: "duetime_start_lag_seconds",
    help: "Lease time - scheduledFor of first attempts, by tenant and pool (guarded: _other past the caps)",
    labelNames: ["tenant", "pool"],
    buckets: LAG_BUCKETS,
    registers: [registry],
  });
  const outcomes = new Counter({
    name: "duetime_attempts_total",
    help: "Finished attempts by outcome",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const leaseLost = new Counter({ name: "duetime_lease_lost_total", help: "Calls refused with LEASE_LOST", registers: [registry] });
  const possibleDuplicates = new Counter({
    name: "duetime_possible_duplicates_total",
    help: "Attempts that may have run twice, once each: seen running on after losing their lease, or reaped for an expired lease before a later attempt succeeded (GET /v1/executions?possibleDuplicate=true)",
    registers: [registry],
  });
  const retained = new Counter({
    name: "duetime_retention_deleted_total",
    help: "Rows removed by retention (archived first when an archive directory is set)",
    labelNames: ["kind"],
    registers: [registry],
  });
  const errors = new Counter({
    name: "duetime_internal_errors_total",
    help: "Errors in background loops",
    labelNames: ["where"],
    registers: [registry],
  });
  const storeFailures = new Counter({
    name: "duetime_store_failures_total",
    help: "Store calls that failed because the store could not serve (StoreUnavailableError), by call and kind",
    labelNames: ["op", "kind"],
    registers: [registry],
  });
  const shardsOwned = new Gauge({ name: "duetime_shards_owned", help: "Shards this node holds", registers: [registry] });
  const shardChanges = new Counter({
    name: "duetime_shard_changes_total",
    help: "Shards this node gained or lost (handover, takeover, a lost lease)",
    labelNames: ["change"],
    registers: [registry],
  });
  const takeover = new Histogram({
    name: "duetime_shard_takeover_seconds",
    help: "How long after its owner's lease expired this node took a shard over",
    buckets: [0.5, 1, 2, 3.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const storeWritable = new Gauge({
    name: "duetime_store_writable",
    help: "1 while the store takes writes, 0 while they fail",
    registers: [registry],
  });
  storeWritable.set(1);
  new Gauge({
    name: "duetime_timer_loaded",
    help: "Due entries held in the in-memory window",
    registers: [registry],
    collect() {
      this.set(loadedDue());
    },
  });

  const spikes = new Counter({
    name: "duetime_due_spike_warnings_total",
    help: "Creates answered with a warning that a tenant's work piles up in one second or minute",
    labelNames: ["window"],
    registers: [registry],
  });
  events.on("due:spike", (e) => spikes.inc({ window: e.window }));
  const labels = (tenantId: string, pool: string) => ({ tenant: guards.tenant.label(tenantId), pool: guards.pool.label(pool) });
  events.on("execution:dispatched", (e) => dispatchLag.observe(labels(e.tenantId, e.pool), Math.max(0, e.lagMs) / 1000));
  const wouldRun = new Counter({
    name: "duetime_dry_run_occurrences_total",
    help: "Occurrences of dry-run jobs recorded would_run in the run ledger instead of running",
    labelNames: ["tenant", "pool"],
    registers: [registry],
  });
  events.on("execution:would_run", (e) => wouldRun.inc(labels(e.tenantId, e.pool)));
  events.on("execution:leased", (e) => {
    if (e.attempt === 1) startLag.observe(labels(e.tenantId, e.pool), Math.max(0, e.startLagMs) / 1000);
  });
  events.on("execution:succeeded", () => outcomes.inc({ outcome: "succeeded" }));
  events.on("execution:failed", (e) => outcomes.inc({ outcome: e.state === "READY" ? "failed" : e.state.toLowerCase() }));
  events.on("execution:timed_out", (e) => outcomes.inc({ outcome: e.state === "READY" ? "timed_out" : e.state.toLowerCase() }));
  events.on("lease:lost", () => leaseLost.inc());
  events.on("execution:possible_duplicate", () => possibleDuplicates.inc());
  events.on("shards:changed", (e) => {
    shardsOwned.set(e.owned);
    shardChanges.inc({ change: "gained" }, e.gained);
    shardChanges.inc({ change: "lost" }, e.lost);
  });
  events.on("shard:taken_over", (e) => takeover.observe(e.afterExpiryMs / 1000));
  events.on("retention:purged", (e) => retained.inc({ kind: e.kind }, e.deleted));
  events.on("error", (e) => errors.inc({ where: e.where }));
  events.on("store:fault", (e) => storeFailures.inc({ op: e.op, kind: e.kind }));
  events.on("store:writable", (e) => storeWritable.set(e.writable ? 1 : 0));
  const replicaServing = new Gauge({
    name: "duetime_read_replica_serving",
    help: "1 while the read replica (--read-store) serves list and history reads, 0 while the store does",
    registers: [registry],
  });
  events.on("reads:replica", (e) => replicaServing.set(e.serving ? 1 : 0));
  const signals = new Counter({
    name: "duetime_cluster_signals_total",
    help: "Signals between nodes: sent, received from other nodes, and resyncs after the listener was down",
    labelNames: ["direction"],
    registers: [registry],
  });
  events.on("signals", (e) => signals.inc({ direction: e.direction }, e.count));
  const dueIndexRepaired = new Counter({
    name: "duetime_due_index_repaired_total",
    help: "Entries the due index reconciler repaired: added (the index had lost or delayed a due entry) and removed (the store no longer had it)",
    labelNames: ["repair"],
    registers: [registry],
  });
  events.on("due-index:repaired", (e) => {
    dueIndexRepaired.inc({ repair: "added" }, e.added);
    dueIndexRepaired.inc({ repair: "removed" }, e.removed);
  });
  const retriesLeased = new Counter({
    name: "duetime_retries_leased_total",
    help: "Retries (attempts after a failed or timed-out one) this node leased, within their retry budgets",
    registers: [registry],
  });
  const retriesDeferred = new Counter({
    name: "duetime_retries_deferred_total",
    help: "Retries handed back unused because a retry budget was spent, by the budget that refused: tenant or origin",
    labelNames: ["scope"],
    registers: [registry],
  });
  for (const scope of ["tenant", "origin"]) retriesDeferred.inc({ scope }, 0);
  events.on("execution:leased", (e) => {
    if (e.retry) retriesLeased.inc();
  });
  events.on("retry:deferred", (e) => retriesDeferred.inc({ scope: e.scope }));
  return registry;
}

/** The Redis due index's reconciler (due-index-reconciler.ts), read at each scrape. */
export function registerReconcilerGauges(registry: Registry, reconciler: { lagMs(): number; rebuildingShards(): number }): void {
  new Gauge({
    name: "duetime_due_index_reconcile_lag_seconds",
    help: "Age of the oldest owned shard's last full reconciliation pass: how far the Redis due index may be behind the store",
    registers: [registry],
    collect() {
      this.set(reconciler.lagMs() / 1000);
    },
  });
  new Gauge({
    name: "duetime_due_index_rebuilding_shards",
    help: "Owned shards not yet covered by a full reconciliation pass in the index's current generation (a new index, or Redis lost its data): their recurring jobs may be late until this is 0",
    registers: [registry],
    collect() {
      this.set(reconciler.rebuildingShards());
    },
  });
}
