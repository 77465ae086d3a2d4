// A TCP proxy to PostgreSQL in the test process, between one node and the
// database: cutting or stalling it is that node's link failing, and nobody
// else's (the tests running beside it keep their database).

import { createServer, connect, type Server, type Socket } from "node:net";
import { TEST_PG_URL } from "../../src/store/postgres/test-support.js";

/**
 * A TCP proxy to PostgreSQL that can be cut (closed, every connection dropped)
 * and opened again on its port, or stalled: connections stay open and new ones
 * are accepted, but nothing passes either way (a half-open link, packets
 * dropped, not refused).
 */
export class CuttableProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private stalled = false;
  /** Stall once a chunk from the node contains this (after passing it on). */
  private stallMarker: string | null = null;
  port = 0;

  /** The database URL with the proxy's address in place of the database's (its path and parameters kept). */
  urlOf(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = "127.0.0.1";
    url.port = String(this.port);
    return url.toString();
  }

  stall(): void {
    this.stalled = true;
  }

  /**
   * Stalls right after the node sends a message containing `marker` (a
   * prepared statement's name, say), which reaches the database: the link
   * goes half-open in the middle of that transaction. Resolves then.
   */
  stallAfter(marker: string): Promise<void> {
    this.stallMarker = marker;
    return new Promise((resolve) => {
      const check = setInterval(() => {
        if (this.stalled) {
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
  }

  /** Ends the stall: the connections it broke are dropped (their streams lost bytes), new ones pass. */
  unstall(): void {
    for (const s of this.sockets) s.destroy();
    this.stalled = false;
  }

  async open(): Promise<void> {
    const target = new URL(TEST_PG_URL);
    const server = createServer((client) => {
      const upstream = connect({ host: target.hostname, port: Number(target.port || 5432) });
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("error", () => s.destroy());
        s.on("close", () => this.sockets.delete(s));
      }
      // Forwarded by hand, not piped: while stalled, bytes are dropped as a dead link drops packets.
      client.on("data", (chunk: Buffer) => {
        if (this.stalled) return;
        upstream.write(chunk);
        if (this.stallMarker !== null && chunk.includes(this.stallMarker)) {
          this.stallMarker = null;
          this.stalled = true;
        }
      });
      upstream.on("data", (chunk) => this.stalled || client.write(chunk));
      // While stalled, a close does not pass either (the FIN is dropped too): the database keeps the session.
      client.on("close", () => this.stalled || upstream.destroy());
      upstream.on("close", () => this.stalled || client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}
