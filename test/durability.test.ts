// Promise 1: a 201 means durable. A real server process accepts 500 jobs and
// is SIGKILLed at once; a new process on the same file runs every one.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DuetimeClient, Worker } from "@duetime/sdk";
import { spawnServer, testStore, waitFor } from "./helpers.js";

test("500 accepted jobs survive SIGKILL of the server and all run after a restart", { timeout: 180_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-durable-"));
  const store = testStore(dir);
  try {
    const first = await spawnServer(store);
    const client = new DuetimeClient({ url: first.url, retries: 0 });
    const accepted = new Set<string>();
    // Concurrent creates, due now or within two seconds: some are dispatched,
    // some leased, most still waiting when the process dies.
    await Promise.all(
      Array.from({ length: 10 }, async (_, lane) => {
        for (let i = lane; i < 500; i += 10) {
          const job = await client.createJob({
            name: "durable",
            target: { type: "queue", pool: "durable" },
            payload: { i },
            schedule: { delaySeconds: (i % 3) * 1 },
          });
          accepted.add(job.jobId);
        }
      }),
    );
    assert.equal(accepted.size, 500);
    // a worker that takes some jobs and never finishes them: the kill strands their leases
    await client.lease("durable", { workerId: "doomed", max: 20, leaseSeconds: 2 });
    await first.stop("SIGKILL");
    await client.close();

    const second = await spawnServer(store);
    const runs = new Map<string, number>();
    const worker = new Worker({
      url: second.url,
      pool: "durable",
      concurrency: 50,
      waitSeconds: 1,
      handleSignals: false,
      logger: null,
      handler: async (job) => {
        runs.set(job.jobId, (runs.get(job.jobId) ?? 0) + 1);
      },
    });
    void worker.run();
    await waitFor(() => [...accepted].every((id) => runs.has(id)), "every accepted job ran", 60_000);
    await worker.shutdown();
    const duplicates = [...runs.values()].filter((n) => n > 1).length;
    console.log(`# durability: ${accepted.size} accepted, ${runs.size} ran after restart, ${duplicates} ran more than once`);
    assert.equal([...runs.keys()].filter((id) => !accepted.has(id)).length, 0);
    await second.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
