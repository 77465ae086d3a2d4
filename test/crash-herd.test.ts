// The durability boundary end to end (docs/operations.md, "Durability"): a
// herd drained by SDK workers while the server is SIGKILLed again and again,
// in both durability modes, loses no accepted job, and every job succeeds
// once, by an attempt that ran. test/power-loss.test.ts is the power loss.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DuetimeClient, Worker } from "@duetime/sdk";
import { spawnServer, TEST_STORE_KIND, testStore, waitFor, type ServerProcess } from "./helpers.js";

const JOBS = 3000;
const KILLS = 4;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Every job of the pool, paged through the jobs list. */
async function allJobs(client: DuetimeClient): Promise<{ jobId: string; state: string }[]> {
  const jobs: { jobId: string; state: string }[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listJobs({ pool: "crash", limit: 500, ...(cursor ? { cursor } : {}) });
    jobs.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return jobs;
}

for (const durability of ["accepted", "strict"] as const) {
  test(`${durability}: a herd drained through ${KILLS} SIGKILLs of the server loses no accepted job, and each succeeds once by an attempt that ran`, {
    timeout: 300_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "duetime-crash-herd-"));
    const store = testStore(dir);
    const port = await freePort();
    const serve = () => spawnServer(store, ["--port", String(port), "--durability", durability]);
    let server: ServerProcess = await serve();
    const client = new DuetimeClient({ url: server.url, retries: 5 });
    try {
      const accepted = new Set<string>();
      for (let i = 0; i < JOBS; i += 500) {
        const created = await client.createJobs(
          Array.from({ length: 500 }, (_, k) => ({
            name: `crash-${i + k}`,
            target: { type: "queue" as const, pool: "crash" },
            payload: { i: i + k },
            schedule: { delaySeconds: 1 },
            timeoutSeconds: 5,
          })),
        );
        for (const item of created) if ("jobId" in item) accepted.add(item.jobId);
      }
      assert.equal(accepted.size, JOBS);

      // Runs by job and attempt: a run whose acknowledgement was taken is the job's succeeding attempt.
      const runs = new Map<string, number[]>();
      const worker = new Worker({
        url: server.url,
        pool: "crash",
        concurrency: 50,
        waitSeconds: 1,
        leaseSeconds: 3,
        handleSignals: false,
        logger: null,
        handler: async (job) => {
          runs.set(job.jobId, [...(runs.get(job.jobId) ?? []), job.attempt]);
          await new Promise((resolve) => setTimeout(resolve, 1));
        },
      });
      void worker.run();
      // Each kill lands at another point of the drain: after another sixth of the jobs has run.
      for (let kill = 1; kill <= KILLS; kill++) {
        await waitFor(() => runs.size >= (JOBS * kill) / (KILLS + 2), `${kill}/${KILLS + 2} of the herd ran`, 120_000);
        await server.stop("SIGKILL");
        server = await serve();
      }
      await waitFor(
        async () => (await allJobs(client)).filter((j) => j.state === "COMPLETED").length === JOBS,
        "every accepted job completed",
        180_000,
      );
      await worker.shutdown();

      const jobs = await allJobs(client);
      assert.deepEqual(new Set(jobs.map((j) => j.jobId)), accepted, "no accepted job lost, none made up");
      // Every execution succeeded once, by the attempt the store holds; any attempt run beside it lost its lease (it was recorded).
      let twice = 0;
      for (const jobId of accepted) {
        const history = await client.listExecutions(jobId);
        const succeeded = history.items.filter((h) => h.state === "SUCCEEDED");
        assert.equal(succeeded.length, 1, `${jobId}: one success`);
        assert.ok((runs.get(jobId) ?? []).includes(succeeded[0]!.attempt), `${jobId}: the success is an attempt that ran`);
        if ((runs.get(jobId) ?? []).length > 1) twice++;
      }
      console.log(
        `# crash herd (${durability}, ${TEST_STORE_KIND}): ${JOBS} accepted, all completed through ${KILLS} kills; ${twice} ran more than once`,
      );
    } finally {
      await client.close();
      await server.stop("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
