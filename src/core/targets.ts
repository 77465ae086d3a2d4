// Where a target's executions wait: the pool a queue target names, or an
// internal pool ("$…": user pool names cannot contain "$") that the server's
// own runner leases from: $http for the HTTP-target executor, and one pool
// per broker connection for the outbox relay (its rows are the outbox).

import type { BrokerTarget, Target } from "@duetime/sdk/contract";

export const HTTP_POOL = "$http";
const BROKER_POOL_PREFIX = "$broker:";

export const isBrokerTarget = (target: Target): target is BrokerTarget => target.type === "nats" || target.type === "amqp";

/** The broker connection a broker target publishes through: its broker field, or the connection named like its type. */
export const brokerOf = (target: BrokerTarget): string => target.broker ?? target.type;

export const brokerPool = (broker: string): string => `${BROKER_POOL_PREFIX}${broker}`;

export function poolOf(target: Target): string {
  if (target.type === "queue") return target.pool;
  return isBrokerTarget(target) ? brokerPool(brokerOf(target)) : HTTP_POOL;
}

/** The server's own pools, whose leased rows carry their whole target. */
export const isInternalPool = (pool: string): boolean => pool.startsWith("$");

export type BrokerKind = BrokerTarget["type"];

/**
 * Why a target cannot be published, with the field to name in the 400: it
 * names a broker connection this server was not given (--broker NAME=URL),
 * or one of the other kind. Null when it can be, or is no broker target.
 */
export function brokerRefusal(target: Target, brokers: ReadonlyMap<string, BrokerKind>): { field: string; message: string } | null {
  if (!isBrokerTarget(target)) return null;
  const name = brokerOf(target);
  const field = target.broker === undefined ? "target.type" : "target.broker";
  const kind = brokers.get(name);
  if (kind === undefined) {
    const known = brokers.size === 0 ? "none is" : `configured: ${[...brokers.keys()].map((n) => JSON.stringify(n)).join(", ")}`;
    return {
      field,
      message: `no broker named ${JSON.stringify(name)} is configured on this server (${known}; start the server with --broker ${name}=URL)`,
    };
  }
  if (kind !== target.type) return { field, message: `broker ${JSON.stringify(name)} takes ${kind} targets, not ${target.type}` };
  return null;
}
