// A user's own unit test, written with duetime/testing: the handler under test
// is the real one, the engine is the real one, and time is fake, so "retried
// three times over two minutes, then dead-lettered" takes milliseconds.
//
//   node --import tsx --test examples/unit-test-with-the-kit.test.ts

import assert from "node:assert/strict";
import { test } from "node:test";
import { NonRetryableError, type Handler } from "@duetime/sdk";
import { createTestEnvironment } from "duetime/testing";

// The code under test: sends an invoice, fails on a flaky downstream, gives up at once on a bad address.
function invoiceHandler(send: (to: string) => Promise<void>): Handler {
  return async (job) => {
    const { to } = job.payload as { to: string };
    if (!to.includes("@")) throw new NonRetryableError(`not an address: ${to}`);
    await send(to);
    return { sentTo: to };
  };
}

test("an invoice whose mail server is down is retried with backoff, then dead-lettered", async () => {
  const env = await createTestEnvironment({ start: "2027-06-01T08:00:00Z" });
  const tries: string[] = [];
  env.worker({
    pool: "invoices",
    handler: invoiceHandler(async () => {
      tries.push(env.now().toISOString());
      throw new Error("mail server down");
    }),
  });
  try {
    const job = await env.client.createJob({
      name: "invoice",
      target: { type: "queue", pool: "invoices" },
      payload: { to: "ada@example.test" },
      schedule: { delaySeconds: 0 },
      retry: { maxAttempts: 3, backoffSeconds: 30 },
    });
    await env.advance(5 * 60_000); // five fake minutes, a few real milliseconds
    assert.equal(tries.length, 3);
    const [dead] = (await env.client.listDeadLetters()).items;
    assert.equal(dead?.jobId, job.jobId);
    assert.equal(dead?.lastError?.message, "mail server down");
  } finally {
    await env.close();
  }
});

test("an invoice to a bad address is dead-lettered at once, without retries", async () => {
  const env = await createTestEnvironment();
  let sent = 0;
  env.worker({ pool: "invoices", handler: invoiceHandler(async () => void sent++) });
  try {
    await env.client.createJob({
      name: "invoice",
      target: { type: "queue", pool: "invoices" },
      payload: { to: "nobody" },
      schedule: { delaySeconds: 0 },
    });
    await env.advance(60_000);
    const [dead] = (await env.client.listDeadLetters()).items;
    assert.equal(dead?.attempts, 1);
    assert.equal(sent, 0);
  } finally {
    await env.close();
  }
});
