// Opens the broker connections named in the server's config (--broker
// NAME=URL). The kind follows the URL's scheme; each driver is imported only
// when a connection of its kind is configured, so a server without brokers
// never loads the NATS or AMQP client.

import { BROKER_NAME_PATTERN, LIMITS } from "../../core/schemas.js";
import type { BrokerKind } from "../../core/targets.js";
import type { BrokerConnection, BrokerConnectOptions } from "./broker.js";
import type { BrokerRelaySettings } from "./relay.js";

export interface BrokerSettings extends BrokerRelaySettings {
  /** nats://, tls:// (NATS, JetStream) or amqp://, amqps:// (RabbitMQ). */
  url: string;
  /** How long a publish waits for the broker's confirm (default 10 s). */
  confirmTimeoutMs?: number;
}

const SCHEMES: Record<string, BrokerKind> = { "nats:": "nats", "tls:": "nats", "amqp:": "amqp", "amqps:": "amqp" };

/** Why a name cannot name a broker connection, or null. */
export function brokerNameProblem(name: string): string | null {
  const ok = new RegExp(BROKER_NAME_PATTERN).test(name) && name.length <= LIMITS.brokerNameMaxLength;
  return ok ? null : `a broker name is 1 to ${LIMITS.brokerNameMaxLength} letters, digits, _ and -, got ${JSON.stringify(name)}`;
}

/** The kind of broker a URL names (NATS takes a comma-separated list of seed servers), or why it names none. */
export function brokerKind(url: string): { kind: BrokerKind } | { problem: string } {
  const kinds = new Set<BrokerKind>();
  for (const part of url.split(",")) {
    let parsed: URL;
    try {
      parsed = new URL(part.trim());
    } catch {
      return { problem: `${JSON.stringify(part)} is not a URL` };
    }
    const kind = SCHEMES[parsed.protocol];
    if (!kind) return { problem: `a nats://, tls://, amqp:// or amqps:// URL, got ${parsed.protocol}//…` };
    kinds.add(kind);
  }
  const [kind] = kinds;
  if (kinds.size > 1 || (kind === "amqp" && url.includes(","))) return { problem: "a list of URLs is for NATS seed servers only" };
  return { kind: kind! };
}

export async function openBroker(options: BrokerConnectOptions): Promise<BrokerConnection> {
  const found = brokerKind(options.url);
  if ("problem" in found) throw new RangeError(`brokers.${options.name}.url: ${found.problem}`);
  if (found.kind === "nats") return (await import("./nats.js")).openNats(options);
  return (await import("./amqp.js")).openAmqp(options);
}
