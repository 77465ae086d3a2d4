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
      client.on("data", (chunk) => this.stalled || upstream.write(chunk));
      upstream.on("data", (chunk) => this.stalled || client.write(chunk));
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
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
