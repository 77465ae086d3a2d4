// Dry-run jobs (mode dry_run) on the whole engine with a fake clock: their
// occurrences are recorded would_run at the exact instant, never leased or
// called, and a PATCH to live runs them from the next occurrence on.

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { createTestEnvironment, type TestEnvironment } from "../testing/index.js";

const queue = (pool: string) => ({ type: "queue" as const, pool });

describe("a dry-run job across the autumn DST change in London", () => {
  let env: TestEnvironment;
  let receiver: Server;
  let calls = 0;

  before(async () => {
    receiver = createServer((_req, res) => {
      calls++;
      res.end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    env = await createTestEnvironment({ start: "2026-10-24T22:30:00Z", engine: { allowTargetHosts: ["127.0.0.1"] } });
  });
  after(async () => {
    await env.close();
    await new Promise((resolve) => receiver.close(resolve));
  });

  test("its would_run instants equal the preview, the repeated hour included; nothing is leased or called", async () => {
    const schedule = { cron: "0 * * * *", tz: "Europe/London" };
    const queued = await env.client.createJob({ name: "nightly", target: queue("nightly"), schedule, mode: "dry_run" });
    const { port } = receiver.address() as AddressInfo;
    const called = await env.client.createJob({
      name: "nightly-hook",
      target: { type: "http", url: `http://127.0.0.1:${port}/hook` },
      schedule,
      mode: "dry_run",
    });
    assert.equal(queued.mode, "dry_run");
    await env.advance(5 * 3_600_000);

    const from = "2026-10-24T22:30:00Z";
    const to = env.now().toISOString();
    const preview = await env.client.previewSchedule({ ...schedule, from, count: 10 });
    const expected = preview.times.filter((t) => t <= to);
    // The clocks go back from 02:00 BST to 01:00 GMT at 01:00 UTC on the 25th: the preview says what fires in that hour.
    assert.ok(expected.length >= 4, expected.join(", "));
    for (const job of [queued, called]) {
      const ledger = await env.client.listOccurrences(job.jobId, { from, to });
      assert.deepEqual(
        ledger.items.map((o) => [o.scheduledFor, o.status]),
        expected.map((t) => [t, "would_run"]),
      );
      const history = await env.client.listExecutions(job.jobId);
      assert.deepEqual(
        history.items.map((e) => [e.scheduledFor, e.attempt, e.state, e.error?.reason]),
        expected.reverse().map((t) => [t, 0, "SKIPPED", "dry_run"]),
        "recorded, never attempted",
      );
      expected.reverse();
    }
    assert.equal(calls, 0, "nothing was called");
    assert.deepEqual(await env.client.poolStats("nightly"), { pending: 0, queued: 0, running: 0 }, "nothing to lease");
    assert.match(
      await env.engine.metricsText(),
      new RegExp(`duetime_dry_run_occurrences_total\\{tenant="default",pool="nightly"\\} ${expected.length}\\n`),
    );
  });

  test("trigger and backfill are refused: they would run it for real", async () => {
    const job = await env.client.createJob({ name: "t", target: queue("nightly"), schedule: { cron: "0 * * * *" }, mode: "dry_run" });
    await assert.rejects(env.client.triggerJob(job.jobId), { code: "INVALID_STATE", message: /dry run.*"mode": "live"/ });
    await assert.rejects(env.client.backfillJob(job.jobId, { from: "2026-10-20T00:00:00Z", to: "2026-10-21T00:00:00Z" }), {
      code: "INVALID_STATE",
    });
  });

  test("only a recurring job can be in dry run", async () => {
    await assert.rejects(env.client.createJob({ name: "once", target: queue("nightly"), schedule: { delaySeconds: 60 }, mode: "dry_run" }), {
      code: "INVALID_ARGUMENT",
      details: { field: "mode" },
    });
  });
});

test("the flip to live takes effect from the next occurrence: it runs once, none before it ran, none is missed", async () => {
  const env = await createTestEnvironment({ start: "2027-01-10T08:59:00Z" });
  const ran: string[] = [];
  env.worker({ pool: "reports", handler: async (job) => void ran.push(job.scheduledFor) });
  try {
    const job = await env.client.createJob({ name: "hourly", target: queue("reports"), schedule: { cron: "0 * * * *" }, mode: "dry_run" });
    await env.advanceTo("2027-01-10T10:30:00Z"); // 09:00 and 10:00 recorded would_run
    const flipped = await env.client.updateJob(job.jobId, { mode: "live" }, { ifMatch: job.version });
    assert.equal(flipped.mode, "live");
    await assert.rejects(env.client.updateJob(job.jobId, { mode: "dry_run" }, { ifMatch: job.version }), { code: "VERSION_CONFLICT" });
    await env.advanceTo("2027-01-10T12:30:00Z"); // 11:00 and 12:00 run
    assert.deepEqual(ran, ["2027-01-10T11:00:00.000Z", "2027-01-10T12:00:00.000Z"]);
    const ledger = await env.client.listOccurrences(job.jobId, { from: "2027-01-10T08:30:00Z", to: "2027-01-10T12:30:00Z" });
    assert.deepEqual(
      ledger.items.map((o) => [o.scheduledFor.slice(11, 16), o.status]),
      [
        ["09:00", "would_run"],
        ["10:00", "would_run"],
        ["11:00", "dispatched"],
        ["12:00", "dispatched"],
      ],
    );
  } finally {
    await env.close();
  }
});
