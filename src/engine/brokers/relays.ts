// The engine's broker relays: the configured connections checked
// (brokerCatalog, before the store opens) and opened, each with its relay
// and the metrics they share.

import type { Registry } from "prom-client";
import type { Clock } from "../../core/clock.js";
import type { BrokerKind } from "../../core/targets.js";
import type { EngineEvents } from "../events.js";
import type { Executor } from "../executor.js";
import type { BrokerConnection, BrokerConnectOptions } from "./broker.js";
import { brokerKind, brokerNameProblem, type BrokerSettings } from "./index.js";
import { brokerMetrics } from "./metrics.js";
import { BrokerRelay } from "./relay.js";

/** The configured brokers' kinds by name, checked before anything opens. */
export function brokerCatalog(brokers: Record<string, BrokerSettings>): Map<string, BrokerKind> {
  const kinds = new Map<string, BrokerKind>();
  for (const [name, settings] of Object.entries(brokers)) {
    const problem = brokerNameProblem(name);
    if (problem !== null) throw new RangeError(`brokers: ${problem}`);
    const found = brokerKind(settings.url);
    if ("problem" in found) throw new RangeError(`brokers.${name}.url: ${found.problem}`);
    const rate = settings.ratePerSecond;
    if (rate !== undefined && !(rate > 0 && Number.isFinite(rate)))
      throw new RangeError(`brokers.${name}.ratePerSecond: a positive number, got ${rate}`);
    kinds.set(name, found.kind);
  }
  return kinds;
}

/** A connection and its relay per configured broker; the connections dial in the background (a broker that is down delays nothing). */
export async function openRelays(
  brokers: Record<string, BrokerSettings>,
  deps: {
    executor: Executor;
    events: EngineEvents;
    clock: Clock;
    nodeId: string;
    registry: Registry;
    open: (options: BrokerConnectOptions) => BrokerConnection | Promise<BrokerConnection>;
  },
): Promise<BrokerRelay[]> {
  const { registry, open, ...relayDeps } = deps;
  const connections: BrokerConnection[] = [];
  for (const [name, { url, confirmTimeoutMs }] of Object.entries(brokers)) {
    connections.push(
      await open({
        name,
        url,
        ...(confirmTimeoutMs !== undefined ? { confirmTimeoutMs } : {}),
        clock: deps.clock,
        onStatus: ({ error }) => {
          if (error !== undefined) deps.events.emit("error", { where: `broker ${name}`, error });
        },
      }),
    );
  }
  if (connections.length === 0) return [];
  const observer = brokerMetrics(registry, connections);
  return connections.map((connection) => {
    const { ratePerSecond, batchSize } = brokers[connection.name]!;
    return new BrokerRelay({
      connection,
      ...relayDeps,
      observer,
      ...(ratePerSecond !== undefined ? { ratePerSecond } : {}),
      ...(batchSize !== undefined ? { batchSize } : {}),
    });
  });
}
