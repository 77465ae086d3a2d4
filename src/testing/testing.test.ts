// duetime/testing, used as a user would: the package entries by name (the
// built kit), a real handler in a real Worker, and time moved by the test.
// Each test checks a promise of the kit: retries at their backoff times,
// dead letters, a cron job across a DST change, and that nothing runs
// before its time.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { NonRetryableError, type LeasedExecution } from "@duetime/sdk";
import { createTestEnvironment } from "duetime/testing";

const queue = (pool: string) => ({ type: "queue" as const, pool });

describe("duetime/testing", () => {
  test("a job due in an hour runs when the clock reaches it, not before", async () => {
    const env = await createTestEnvironment({ start: "2027-01-10T09:00:00Z" });
    const ran: string[] = [];
    env.worker({ pool: "mail", handler: async () => void ran.push(env.now().toISOString()) });
    try {
      const job = await env.client.createJob({ name: "reminder", target: queue("mail"), schedule: { delaySeconds: 3600 } });
      await env.advance(3599_000);
      assert.deepEqual(ran, []);
      await env.advance(1_000);
      assert.deepEqual(ran, ["2027-01-10T10:00:00.000Z"]);
      assert.equal((await env.client.getJob(job.jobId)).state, "COMPLETED");
    } finally {
      await env.close();
    }
  });

  test("a failing handler is retried at its backoff times and succeeds on the third attempt", async () => {
    const env = await createTestEnvironment({ start: "2027-01-10T09:00:00Z" });
    const attempts: { attempt: number; at: number }[] = [];
    env.worker({
      pool: "charges",
      handler: async (_job: LeasedExecution, { attempt }) => {
        attempts.push({ attempt, at: env.clock.now() });
        if (attempt < 3) throw new Error("card network timeout");
        return { charged: true };
      },
    });
    try {
      const job = await env.client.createJob({
        name: "charge",
        target: queue("charges"),
        schedule: { delaySeconds: 0 },
        retry: { maxAttempts: 5, backoffSeconds: 60, maxBackoffSeconds: 3600 },
      });
      await env.advance(10 * 60_000);
      assert.deepEqual(
        attempts.map((a) => a.attempt),
        [1, 2, 3],
      );
      // Exponential backoff from 60 s, ±20% jitter: the second attempt comes 48–72 s after the first, the third 96–144 s after that.
      const gaps = attempts.slice(1).map((a, i) => (a.at - attempts[i]!.at) / 1000);
      assert.ok(gaps[0]! >= 48 && gaps[0]! <= 73, `first backoff ${gaps[0]} s`);
      assert.ok(gaps[1]! >= 96 && gaps[1]! <= 145, `second backoff ${gaps[1]} s`);
      const history = await env.client.listExecutions(job.jobId);
      assert.deepEqual(history.items.map((e) => [e.attempt, e.state]).sort(), [
        [1, "FAILED"],
        [2, "FAILED"],
        [3, "SUCCEEDED"],
      ]);
    } finally {
      await env.close();
    }
  });

  test("a handler that keeps failing ends in the dead letters; a NonRetryableError goes there at once", async () => {
    const env = await createTestEnvironment();
    let calls = 0;
    env.worker({
      pool: "hooks",
      handler: async (job: LeasedExecution) => {
        calls++;
        if ((job.payload as { fatal?: boolean }).fatal) throw new NonRetryableError("bad address");
        throw new Error("downstream 503");
      },
    });
    try {
      const flaky = await env.client.createJob({
        name: "flaky",
        target: queue("hooks"),
        payload: {},
        schedule: { delaySeconds: 0 },
        retry: { maxAttempts: 3, backoffSeconds: 1 },
      });
      const fatal = await env.client.createJob({
        name: "fatal",
        target: queue("hooks"),
        payload: { fatal: true },
        schedule: { delaySeconds: 0 },
        retry: { maxAttempts: 3 },
      });
      await env.advance(60_000);
      const dead = await env.client.listDeadLetters();
      const byJob = new Map(dead.items.map((d) => [d.jobId, d]));
      assert.equal(byJob.get(flaky.jobId)?.attempts, 3);
      assert.equal(byJob.get(fatal.jobId)?.attempts, 1);
      assert.equal(calls, 4);
      assert.equal((await env.client.getJob(fatal.jobId)).state, "DEAD");
    } finally {
      await env.close();
    }
  });

  test("advanceTo() refuses what is not a time, instead of running timers forever", async () => {
    const env = await createTestEnvironment();
    try {
      await assert.rejects(env.advanceTo("next tuesday"), TypeError);
      await assert.rejects(env.advance(Number.NaN), TypeError);
    } finally {
      await env.close();
    }
  });

  test("a daily 01:30 London job runs at the end of the spring-forward gap, once a day, in a few fake days", async () => {
    const env = await createTestEnvironment({ start: "2027-03-27T00:00:00Z" });
    const fired: string[] = [];
    env.worker({ pool: "reports", handler: async (job: LeasedExecution) => void fired.push(new Date(job.scheduledFor).toISOString()) });
    try {
      await env.client.createJob({ name: "nightly", target: queue("reports"), schedule: { cron: "30 1 * * *", tz: "Europe/London" } });
      await env.advanceTo("2027-03-29T01:00:00Z");
      // 01:30 GMT on the 27th; on the 28th 01:30 does not exist (01:00 GMT → 02:00 BST): it runs at 02:00 BST = 01:00Z; then 01:30 BST = 00:30Z.
      assert.deepEqual(fired, ["2027-03-27T01:30:00.000Z", "2027-03-28T01:00:00.000Z", "2027-03-29T00:30:00.000Z"]);
    } finally {
      await env.close();
    }
  });
});
