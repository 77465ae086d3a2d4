// A lease grant lost in a power loss (SQLite's default durability: grants
// commit without their own flush). The files a power loss leaves are the
// files as of the last flush; the test copies them while the server is
// stopped (SIGSTOP), lets a grant happen, kills the server and puts the copy
// back. The grant is made again, with the same attempt number: the worker
// from before the loss, still holding the old token, gets LEASE_LOST.
// SQLite only (scripts/test.js): PostgreSQL's grants are synchronous.

import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DuetimeClient } from "@duetime/sdk";
import { spawnServer, testStore, waitFor, type ServerProcess, type TestStore } from "./helpers.js";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The files a power loss would leave after the last flush: a copy made while the server is stopped (SIGSTOP), so nothing is half written. */
function powerLossCopy(server: ServerProcess, store: TestStore): () => void {
  const path = store.url.slice("sqlite:".length);
  const saved = `${path}.at-flush`;
  server.child.kill("SIGSTOP");
  try {
    copyFileSync(path, saved);
    if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${saved}-wal`);
  } finally {
    server.child.kill("SIGCONT");
  }
  return () => {
    copyFileSync(saved, path);
    rmSync(`${path}-wal`, { force: true });
    rmSync(`${path}-shm`, { force: true });
    if (existsSync(`${saved}-wal`)) copyFileSync(`${saved}-wal`, `${path}-wal`);
  };
}

test("the attempt granted again refuses the token from before the loss, over HTTP", { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-power-loss-"));
  const store = testStore(dir);
  const port = await freePort();
  const serve = () => spawnServer(store, ["--port", String(port)]);
  let server = await serve();
  const client = new DuetimeClient({ url: server.url, retries: 0 });
  try {
    const job = (name: string) => ({ name, target: { type: "queue" as const, pool: "loss" }, payload: null, schedule: { delaySeconds: 0 } });
    // A first grant takes the server's incarnation (flushed before it answers).
    await client.createJob(job("warm-up"));
    await waitFor(async () => (await client.lease("loss", { workerId: "warm", max: 1 })).items.length === 1, "the warm-up lease");
    // An accepted create is on disk when it answers; the power loss comes after it.
    const x = await client.createJob(job("x"));
    const restore = powerLossCopy(server, store);
    const before = await waitFor(async () => (await client.lease("loss", { workerId: "before", max: 1 })).items[0], "the lease the loss takes");
    assert.equal(before.jobId, x.jobId);
    assert.ok(before.leaseToken, "a SQLite lease names its grant");
    await server.stop("SIGKILL");
    restore();
    server = await serve();

    const after = await waitFor(async () => (await client.lease("loss", { workerId: "after", max: 1 })).items[0], "the lease after the loss");
    assert.equal(after.executionId, before.executionId);
    assert.equal(after.attempt, before.attempt, "the lost grant's attempt number, granted again");
    assert.notEqual(after.leaseToken, before.leaseToken);
    const stale = { executionId: before.executionId, attempt: before.attempt, leaseToken: before.leaseToken! };
    const [staleAck] = await client.completeMany([stale]);
    assert.equal(staleAck?.status, 409, "the worker from before the loss gets LEASE_LOST");
    const [ack] = await client.completeMany([{ ...stale, leaseToken: after.leaseToken! }]);
    assert.equal(ack?.status, 200);
    const possible = await client.listPossibleDuplicates();
    assert.deepEqual(
      possible.items.map((p) => [p.executionId, p.possibleDuplicate.attempt, p.possibleDuplicate.reason]),
      [[before.executionId, before.attempt, "lease_lost"]],
    );
  } finally {
    await client.close();
    await server.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});
