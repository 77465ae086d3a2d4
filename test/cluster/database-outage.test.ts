// The database goes away and comes back (issue 8, "a PostgreSQL restart makes
// nodes wait and reconnect, not crash; /readyz answers not ready while the
// database is unreachable"). A real `duetime serve` reaches the real
// PostgreSQL through a TCP proxy in this process; closing the proxy (and every
// connection through it) is the outage, as a restart is to the node, without
// disturbing the tests running beside it. Reopening it on the same port is the
// database coming back. Stalling it (connections open, nothing forwarded) is a
// half-open link: the node must notice by its client's read timeout, not hang.

import assert from "node:assert/strict";
import { DuetimeClient, DuetimeApiError } from "@duetime/sdk";
import { freshPostgresSchema, postgresAvailable, TEST_PG_URL } from "../../src/store/postgres/test-support.js";
import { spawnServer, waitFor } from "../helpers.js";
import { test } from "node:test";
import { CuttableProxy } from "./tcp-proxy.js";

/** A `duetime serve` on a fresh schema that reaches PostgreSQL only through a proxy of its own; the client's calls wait up to timeoutMs. */
async function nodeBehindProxy(timeoutMs: number) {
  const proxy = new CuttableProxy();
  await proxy.open();
  const { schema } = freshPostgresSchema();
  const url = proxy.urlOf(TEST_PG_URL);
  const node = await spawnServer({ url, options: { schema }, args: ["--store", url, "--schema", schema] });
  const client = new DuetimeClient({ url: node.url, retries: 0, timeoutMs });
  const ready = async () => (await fetch(`${node.url}/readyz`)).status;
  return { proxy, node, client, ready };
}

if (await postgresAvailable("the database outage tests")) {
  test("PostgreSQL unreachable: /readyz 503 and writes 503 STORE_UNAVAILABLE, the node stays up; back: ready again, and every accepted job runs", {
    timeout: 120_000,
  }, async () => {
    const { proxy, node, client, ready } = await nodeBehindProxy(30_000);
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

  test("PostgreSQL behind a half-open link (packets dropped): the node notices, /readyz 503 and writes 503, not a hang; the link back: ready again", {
    timeout: 180_000,
  }, async () => {
    const { proxy, node, client, ready } = await nodeBehindProxy(120_000);
    try {
      assert.equal(await ready(), 200);
      proxy.stall();
      const stalledAt = Date.now();
      const create = client.createJob({ name: "during", target: { type: "queue", pool: "half-open" }, schedule: { delaySeconds: 0 } }).then(
        () => "created",
        (err: unknown) => (err instanceof DuetimeApiError ? `${err.status} ${err.code}` : String(err)),
      );
      await waitFor(async () => (await ready()) === 503, "/readyz answers 503 while the link drops every packet", 90_000);
      const notReadyAfterMs = Date.now() - stalledAt;
      const answer = await create;
      const answeredAfterMs = Date.now() - stalledAt;
      console.log(`# half-open: not ready after ${notReadyAfterMs} ms; the create in flight answered "${answer}" after ${answeredAfterMs} ms`);
      // UNAVAILABLE when the request's deadline (10 s) passes first, STORE_UNAVAILABLE when the client's read timeout does.
      assert.match(answer, /^503 (STORE_)?UNAVAILABLE$/, "a create whose statement the link swallowed is refused, not left hanging or answered OK");
      assert.equal((await fetch(`${node.url}/healthz`)).status, 200, "the process is alive");

      proxy.unstall();
      await waitFor(async () => (await ready()) === 200, "/readyz answers 200 once the link passes again", 60_000);
      const after = await client.createJob({ name: "after", target: { type: "queue", pool: "half-open" }, schedule: { delaySeconds: 0 } });
      assert.equal((await client.getJob(after.jobId)).state, "SCHEDULED");
    } finally {
      await client.close();
      await node.stop("SIGKILL");
      await proxy.cut();
    }
  });
}
