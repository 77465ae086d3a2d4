// The database goes away and comes back (issue 8, "a PostgreSQL restart makes
// nodes wait and reconnect, not crash; /readyz answers not ready while the
// database is unreachable"). A real `duetime serve` reaches the real
// PostgreSQL through a TCP proxy in this process; closing the proxy (and every
// connection through it) is the outage, as a restart is to the node, without
// disturbing the tests running beside it. Reopening it on the same port is the
// database coming back.

import assert from "node:assert/strict";
import { createServer, connect, type Server, type Socket } from "node:net";
import { DuetimeClient, DuetimeApiError } from "@duetime/sdk";
import { freshPostgresSchema, postgresAvailable, TEST_PG_URL } from "../../src/store/postgres/test-support.js";
import { spawnServer, waitFor } from "../helpers.js";
import { test } from "node:test";

/** A TCP proxy to PostgreSQL that can be cut (closed, every connection dropped) and opened again on its port. */
class CuttableProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async open(): Promise<void> {
    const target = new URL(TEST_PG_URL);
    const server = createServer((client) => {
      const upstream = connect({ host: target.hostname, port: Number(target.port || 5432) });
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("error", () => s.destroy());
        s.on("close", () => this.sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
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

if (await postgresAvailable("the database outage test")) {
  test("PostgreSQL unreachable: /readyz 503 and writes 503 STORE_UNAVAILABLE, the node stays up; back: ready again, and every accepted job runs", {
    timeout: 120_000,
  }, async () => {
    const proxy = new CuttableProxy();
    await proxy.open();
    const { schema } = freshPostgresSchema();
    const url = new URL(TEST_PG_URL);
    url.port = String(proxy.port);
    const node = await spawnServer({ url: url.toString(), options: { schema }, args: ["--store", url.toString(), "--schema", schema] });
    const client = new DuetimeClient({ url: node.url, retries: 0 });
    const ready = async () => (await fetch(`${node.url}/readyz`)).status;
    try {
      assert.equal(await ready(), 200);
      const before = await client.createJob({ name: "before", target: { type: "queue", pool: "outage" }, schedule: { delaySeconds: 2 } });

      await proxy.cut();
      await waitFor(async () => (await ready()) === 503, "/readyz answers 503 while the database is unreachable", 30_000);
      assert.equal((await fetch(`${node.url}/healthz`)).status, 200, "the process is alive");
      await assert.rejects(
        client.createJob({ name: "during", target: { type: "queue", pool: "outage" }, schedule: { delaySeconds: 0 } }),
        (err: unknown) => err instanceof DuetimeApiError && err.status === 503 && err.code === "STORE_UNAVAILABLE",
      );

      await proxy.open(); // the database is back, on the same address
      await waitFor(async () => (await ready()) === 200, "/readyz answers 200 again", 30_000);
      const after = await client.createJob({ name: "after", target: { type: "queue", pool: "outage" }, schedule: { delaySeconds: 0 } });
      const leased = new Set<string>();
      await waitFor(
        async () => {
          for (const item of (await client.lease("outage", { workerId: "w", max: 10 })).items) leased.add(item.jobId);
          return leased.has(before.jobId) && leased.has(after.jobId);
        },
        "the jobs accepted before and after the outage both run",
        30_000,
      );
    } finally {
      await client.close();
      await node.stop("SIGKILL");
      await proxy.cut();
    }
  });
}
