// End to end: a real `duetime serve` process is stopped across several
// occurrences of a recurring job and restarted on the same file; what runs of
// the missed occurrences follows the job's misfire policy. The misfire
// threshold is lowered to one second so the test takes seconds, not minutes.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { Misfire } from "@duetime/sdk/contract";
import { DuetimeClient } from "@duetime/sdk";
import { spawnServer, testStore, waitFor } from "./helpers.js";

const EVERY_2S = "*/2 * * * * *";
const EVERY_2S_MS = 2_000; // its occurrences fall on multiples of this, in epoch milliseconds

async function missedAcrossRestart(misfire: Misfire) {
  const dir = mkdtempSync(join(tmpdir(), `duetime-misfire-${misfire}-`));
  const store = testStore(dir);
  try {
    const first = await spawnServer(store, ["--misfire-threshold", "1"]);
    let client = new DuetimeClient({ url: first.url, retries: 0 });
    const job = await client.createJob({ name: misfire, target: { type: "queue", pool: "nobody" }, schedule: { cron: EVERY_2S, misfire } });
    await waitFor(async () => (await client.listExecutions(job.jobId)).items.length > 0, "a first occurrence before the stop");
    await first.stop("SIGTERM");
    const stoppedAt = Date.now();
    await client.close();
    const thirdMissed = (Math.floor(stoppedAt / EVERY_2S_MS) + 3) * EVERY_2S_MS;
    await waitFor(() => Date.now() > thirdMissed, "three occurrences pass while nothing runs", 10_000);
    const second = await spawnServer(store, ["--misfire-threshold", "1"]);
    client = new DuetimeClient({ url: second.url, retries: 0 });
    // The restarted scheduler plans every missed occurrence in its first
    // dispatch (at planAt); once an occurrence after planAt exists, the plan
    // has played out (catch_up included) and the schedule has resumed.
    const history = await waitFor(async () => {
      const items = (await client.listExecutions(job.jobId, { limit: 500 })).items.filter((e) => Date.parse(e.scheduledFor) > stoppedAt);
      const planAt = Math.min(...items.map((e) => Date.parse(e.dispatchedAt!)));
      return items.some((e) => Date.parse(e.scheduledFor) > planAt) ? { items, planAt } : null;
    }, "the schedule resumed after the restart");
    await client.close();
    await second.stop();
    const missed = history.items.filter((e) => Date.parse(e.scheduledFor) <= history.planAt);
    return { missed, skipped: missed.filter((e) => e.state === "SKIPPED"), ran: missed.filter((e) => e.state !== "SKIPPED") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("run_once across a restart: only the most recent missed occurrence runs; the rest are SKIPPED", { timeout: 60_000 }, async () => {
  const { missed, skipped, ran } = await missedAcrossRestart("run_once");
  assert.ok(missed.length >= 3, `only ${missed.length} occurrences were missed`);
  assert.equal(ran.length, 1);
  const latest = missed
    .map((e) => e.scheduledFor)
    .sort()
    .at(-1);
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
