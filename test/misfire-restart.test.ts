// End to end: a real `duetime serve` process is stopped across several
// occurrences of a recurring job and restarted on the same file; what runs of
// the missed occurrences follows the job's misfire policy. The misfire
// threshold is lowered to one second so the test takes seconds, not minutes.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { ExecutionItem, Misfire } from "../src/core/api.js";
import { DuetimeClient } from "../src/sdk/client.js";
import { sleep, spawnServer, waitFor } from "./helpers.js";

const EVERY_2S = "*/2 * * * * *";

async function missedAcrossRestart(misfire: Misfire) {
  const dir = mkdtempSync(join(tmpdir(), `duetime-misfire-${misfire}-`));
  const store = `sqlite:${join(dir, "duetime.db")}`;
  try {
    const first = await spawnServer(store, ["--misfire-threshold", "1"]);
    let client = new DuetimeClient({ url: first.url, retries: 0 });
    const job = await client.createJob({ name: misfire, target: { type: "queue", pool: "nobody" }, schedule: { cron: EVERY_2S, misfire } });
    await waitFor(async () => (await client.listExecutions(job.jobId)).items.length > 0, "a first occurrence before the stop");
    await first.stop("SIGTERM");
    const stoppedAt = Date.now();
    await client.close();
    await sleep(6_500); // three or four occurrences pass while nothing runs
    const second = await spawnServer(store, ["--misfire-threshold", "1"]);
    const restartedAt = Date.now();
    client = new DuetimeClient({ url: second.url, retries: 0 });
    // the restarted scheduler has made its plan once an execution exists after the stop
    const after = (items: ExecutionItem[]) => items.filter((e) => Date.parse(e.scheduledFor) > stoppedAt);
    await waitFor(async () => after((await client.listExecutions(job.jobId, { limit: 500 })).items).length > 0, "an execution after the restart");
    if (misfire === "catch_up") await sleep(4_000); // catch_up runs the missed ones one per second
    const history = after((await client.listExecutions(job.jobId, { limit: 500 })).items);
    await client.close();
    await second.stop();
    const missed = history.filter((e) => Date.parse(e.scheduledFor) < restartedAt);
    return { missed, skipped: missed.filter((e) => e.state === "SKIPPED"), ran: missed.filter((e) => e.state !== "SKIPPED") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("run_once across a restart: only the most recent missed occurrence runs; the rest are SKIPPED", { timeout: 60_000 }, async () => {
  const { missed, skipped, ran } = await missedAcrossRestart("run_once");
  assert.ok(missed.length >= 3, `only ${missed.length} occurrences were missed`);
  assert.equal(ran.length, 1);
  const latest = missed.map((e) => e.scheduledFor).sort().at(-1);
  assert.equal(ran[0]!.scheduledFor, latest);
  assert.ok(skipped.every((e) => e.error?.reason === "misfire"));
});

test("skip across a restart: no missed occurrence runs; all are SKIPPED", { timeout: 60_000 }, async () => {
  const { missed, skipped, ran } = await missedAcrossRestart("skip");
  assert.ok(missed.length >= 3, `only ${missed.length} occurrences were missed`);
  assert.equal(ran.length, 0);
  assert.equal(skipped.length, missed.length);
});

test("catch_up across a restart: every missed occurrence runs, none is skipped", { timeout: 60_000 }, async () => {
  const { missed, skipped, ran } = await missedAcrossRestart("catch_up");
  assert.ok(missed.length >= 3, `only ${missed.length} occurrences were missed`);
  assert.equal(skipped.length, 0);
  assert.equal(ran.length, missed.length);
});
