// retry.deadlineSeconds through the service, as a client sends it: kept with
// the job (GET answers it) and copied to each execution, a one-off's (written
// at create) and a recurring job's (written at dispatch), so no retry starts
// past scheduledFor + deadlineSeconds. Fake clock, real SQLite store.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { ScheduleSpec } from "@duetime/sdk/contract";
import { FakeClock } from "../core/clock.js";
import { openEngine } from "./engine.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const T0 = Date.parse("2026-03-02T10:00:00.000Z");
const dir = mkdtempSync(join(tmpdir(), "duetime-retry-deadline-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const RETRY = { maxAttempts: 9, backoffSeconds: 10, maxBackoffSeconds: 10, deadlineSeconds: 15 };

for (const [kind, schedule] of [
  ["a one-off", { delaySeconds: 0 }],
  ["a recurring job", { cron: "* * * * *", tz: "UTC" }],
] as [string, ScheduleSpec][]) {
  test(`retry.deadlineSeconds of ${kind}: kept with the job, and its execution dies at the deadline instead of retrying past it`, async () => {
    const clock = new FakeClock(T0);
    const engine = await openEngine({ store: `sqlite:${join(dir, `d${n++}.db`)}`, clock, nodeId: "n", httpTargets: false });
    await engine.start();
    try {
      const job = await engine.service.createJob(ctx, { name: "j", target: { type: "queue", pool: "p" }, schedule, retry: RETRY });
      assert.deepEqual(job.retry, RETRY, "the create answers the policy as sent");
      assert.deepEqual((await engine.service.getJob(ctx, job.jobId)).retry, RETRY, "and GET reads it back");
      clock.set(Date.parse(job.nextRunAt!));
      await engine.scheduler.runOnce();
      const lease = async () => (await engine.service.lease(ctx, "p", { workerId: "w", max: 1 })).items;

      const [first] = await lease();
      assert.ok(first, "the occurrence is leased");
      const retried = await engine.service.fail(ctx, first.executionId, first.attempt, { message: "boom" });
      assert.equal(retried.state, "FAILED", "a retry about 10 s after the occurrence is inside its 15 s deadline");
      assert.equal(retried.state === "FAILED" && Date.parse(retried.retryAt) < Date.parse(job.nextRunAt!) + 15_000, true);
      clock.set(Date.parse((retried as { retryAt: string }).retryAt));
      const [second] = await lease();
      assert.equal(second?.attempt, 2);
      const dead = await engine.service.fail(ctx, second!.executionId, second!.attempt, { message: "boom" });
      assert.deepEqual(dead, { state: "DEAD", dead: true }, "the next retry (about 20 s after) would pass the deadline: dead, 7 attempts unspent");
    } finally {
      await engine.stop();
    }
  });
}
