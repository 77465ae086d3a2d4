// The port between the outbox relay (relay.ts) and a message broker. A
// broker target's execution is the outbox row: dispatch writes it in the
// same transaction as every other execution, in the pool of its broker
// (brokerPool), and the relay leases it, publishes it, and completes it only
// after the broker confirmed. One BrokerConnection per configured broker
// name; its driver (nats.ts, amqp.ts) owns reconnecting.

import type { Clock } from "../../core/clock.js";

/** Where a message goes: a JetStream subject, or an AMQP exchange and routing key. */
export type BrokerDestination = { kind: "nats"; subject: string } | { kind: "amqp"; exchange: string; routingKey: string };

export interface BrokerMessage {
  /** The execution id: JetStream's Nats-Msg-Id, AMQP's message_id. The same on every attempt, so a republish is a duplicate by id. */
  id: string;
  destination: BrokerDestination;
  /** The job's headers and duetime's own (duetime-attempt and the rest); header names are lower case. */
  headers: Record<string, string>;
  /** The job's payload as JSON. */
  body: Uint8Array;
  /** Epoch ms the occurrence was due (AMQP's timestamp property, in seconds). */
  scheduledFor: number;
}

/**
 * What became of one message of a publish call:
 * - published: the broker confirmed it (JetStream's ack, an AMQP publisher
 *   confirm); receipt is kept as the attempt's result;
 * - rejected: the broker answered and refused it (no stream takes the
 *   subject, the message was unroutable, a nack). It counts as a failed
 *   attempt under the job's retry policy;
 * - unavailable: no answer (the connection is down or dropped mid-call, or
 *   the confirm did not come in time). It may or may not have been stored;
 *   the relay hands it back unspent, and its republish carries the same id.
 */
export type PublishOutcome =
  | { status: "published"; receipt: Record<string, unknown> }
  | { status: "rejected"; message: string }
  | { status: "unavailable"; message: string };

export interface BrokerConnection {
  readonly name: string;
  readonly kind: BrokerDestination["kind"];
  /** True while the driver holds a live connection; the relay leases only then. */
  connected(): boolean;
  /**
   * Publishes in the order given (the order a consumer of one subject or
   * queue sees, while nothing fails) and resolves once every message has an
   * outcome, in the same order. Never rejects: a failure is an outcome.
   */
  publish(messages: readonly BrokerMessage[]): Promise<PublishOutcome[]>;
  /** Resolves when connected() turns true, or after ms, whichever comes first. */
  waitConnected(ms: number): Promise<void>;
  close(): Promise<void>;
}

export interface BrokerConnectOptions {
  name: string;
  url: string;
  /** How long a publish waits for the broker's confirm before its outcome is unavailable (default 10 s). */
  confirmTimeoutMs?: number;
  /** Told when the connection goes up or down, and of errors the driver recovered from. */
  onStatus?: (event: { connected: boolean; error?: unknown }) => void;
  /** The redial backoff and the confirm timeouts run on it (default the system clock). */
  clock?: Clock;
}
