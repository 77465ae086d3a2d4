// Signals between nodes on PostgreSQL (store.ts, "signals between nodes"):
// NOTIFY on one channel per schema, LISTEN on one dedicated connection per
// store, shared by its subscribers. pg's pool cannot LISTEN (a pooled
// connection goes back to the pool), so the listener is a pg.Client of its
// own, which this file reconnects itself: after a reconnect the subscribers
// hear "resync", since whatever was sent meanwhile is lost.

import type pg from "pg";
import type { ClusterSignal, SignalEvent } from "../store.js";

/** NOTIFY payloads must stay under 8000 bytes; a batch is split into chunks below this. */
const MAX_PAYLOAD_BYTES = 7900;
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 5000;

type Handler = (event: SignalEvent) => void;

/** The wire form of one chunk: sender, schema (channel names are shared by every database of a server) and signals. */
interface Chunk {
  f: string;
  d: string;
  s: ClusterSignal[];
}

export interface PgSignalsOptions {
  /** Connection settings for the listener (the pool's, without the pool). */
  client: () => pg.Client;
  schema: string;
}

/** The channel of a schema: an identifier of at most 63 bytes (chunks carry the whole schema name, so a cut-off name cannot mix two schemas). */
export const channelOf = (schema: string): string => `duetime_${schema}`.slice(0, 63);

/** Splits a batch into NOTIFY payloads under the size limit, in order. */
export function chunkSignals(from: string, schema: string, signals: readonly ClusterSignal[]): string[] {
  const payloads: string[] = [];
  const frame = (s: ClusterSignal[]): string => JSON.stringify({ f: from, d: schema, s } satisfies Chunk);
  let current: ClusterSignal[] = [];
  for (const signal of signals) {
    const next = [...current, signal];
    if (current.length > 0 && Buffer.byteLength(frame(next)) > MAX_PAYLOAD_BYTES) {
      payloads.push(frame(current));
      current = [signal];
    } else {
      current = next;
    }
  }
  if (current.length > 0) payloads.push(frame(current));
  for (const payload of payloads) {
    if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) throw new Error(`a signal is larger than ${MAX_PAYLOAD_BYTES} bytes`);
  }
  return payloads;
}

/** One batch of NOTIFYs in one statement: delivered at commit, in order, to every listener on the channel. */
export const NOTIFY_SQL = "SELECT pg_notify($1, p) FROM unnest($2::text[]) WITH ORDINALITY AS t(p, n) ORDER BY n";

export class PgSignals {
  private readonly handlers = new Set<Handler>();
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;
  private delayMs = RECONNECT_MIN_MS;
  private closed = false;

  constructor(private readonly o: PgSignalsOptions) {}

  get channel(): string {
    return channelOf(this.o.schema);
  }

  /** Adds a subscriber; the first one opens the listener (and fails when it cannot). */
  async subscribe(handler: Handler): Promise<() => Promise<void>> {
    const mine: Handler = (event) => handler(event);
    this.handlers.add(mine);
    try {
      await (this.client ? Promise.resolve() : (this.connecting ??= this.connect()));
    } catch (error) {
      this.handlers.delete(mine);
      throw error;
    }
    return async () => {
      this.handlers.delete(mine);
      if (this.handlers.size === 0) await this.disconnect();
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.handlers.clear();
    await this.disconnect();
  }

  private async connect(): Promise<void> {
    const client = this.o.client();
    client.on("error", () => this.lost(client)); // without a listener a dropped connection would crash the process
    client.on("end", () => this.lost(client));
    client.on("notification", (message) => this.deliver(message.payload));
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel}"`);
      this.client = client;
      this.delayMs = RECONNECT_MIN_MS;
    } catch (error) {
      client.end().catch(() => undefined);
      throw error;
    } finally {
      this.connecting = null;
    }
  }

  private deliver(payload: string | undefined): void {
    if (payload === undefined) return;
    let chunk: Chunk;
    try {
      chunk = JSON.parse(payload) as Chunk;
    } catch {
      return; // not ours: someone else NOTIFYing on the channel
    }
    if (chunk.d !== this.o.schema || !Array.isArray(chunk.s)) return;
    for (const handler of this.handlers) handler({ from: chunk.f, signals: chunk.s });
  }

  /** The listener's connection ended: reconnect with backoff while anyone listens, then tell them to resync. */
  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.handlers.size === 0 || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      if (this.closed || this.handlers.size === 0 || this.client) return;
      (this.connecting ??= this.connect()).then(
        () => {
          for (const handler of this.handlers) handler({ resync: true });
        },
        () => {
          this.delayMs = Math.min(this.delayMs * 2, RECONNECT_MAX_MS);
          this.scheduleReconnect();
        },
      );
    }, this.delayMs);
    this.retry.unref();
  }

  private async disconnect(): Promise<void> {
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}
