// Prometheus metrics of the broker relays, on the engine's registry; label
// "broker" is the connection's configured name (a handful, set by the
// operator, so no guard). The outbox itself is the broker pool's READY
// executions: duetime_ready_depth{pool="$broker:NAME"} and
// duetime_oldest_ready_age_seconds. docs/brokers.md explains each.

import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { BrokerConnection } from "./broker.js";
import type { BrokerRelayObserver } from "./relay.js";

const LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600];

/** Registers the metrics; returns the observer to hand to every relay. */
export function brokerMetrics(registry: Registry, connections: readonly BrokerConnection[]): BrokerRelayObserver {
  const messages = new Counter({
    name: "duetime_broker_messages_total",
    help: "Outbox messages by what the broker answered: published (confirmed), rejected (refused: the attempt failed), unavailable (no answer: handed back unspent)",
    labelNames: ["broker", "outcome"],
    registers: [registry],
  });
  const lag = new Histogram({
    name: "duetime_broker_publish_lag_seconds",
    help: "From an occurrence's due time to the broker's confirm of its message",
    labelNames: ["broker"],
    buckets: LAG_BUCKETS,
    registers: [registry],
  });
  new Gauge({
    name: "duetime_broker_connected",
    help: "1 while this node holds a live connection to the broker, else 0 (the relay then leases nothing and the outbox grows)",
    labelNames: ["broker"],
    registers: [registry],
    collect() {
      for (const c of connections) this.set({ broker: c.name }, c.connected() ? 1 : 0);
    },
  });
  return {
    published(broker, outcomes, lagsMs) {
      const counts = { published: 0, rejected: 0, unavailable: 0 };
      for (const o of outcomes) counts[o.status]++;
      for (const [outcome, n] of Object.entries(counts)) if (n > 0) messages.inc({ broker, outcome }, n);
      for (const ms of lagsMs) lag.observe({ broker }, Math.max(0, ms) / 1000);
    },
  };
}
