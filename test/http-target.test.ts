// HTTP targets: the server calls the URL itself under the same lease and
// attempt rules as any worker. Real receivers on loopback.

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { startTestServer, waitFor } from "./helpers.js";

interface Received {
  headers: IncomingMessage["headers"];
  body: string;
}

async function receiver(answer: (n: number) => { status: number; headers?: Record<string, string> }) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      const a = answer(received.length);
      res.writeHead(a.status, a.headers ?? {});
      res.end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, received, close: () => new Promise((r) => server.close(r)) };
}

test("a call carries the payload, the contract's headers and a verifiable signature", async () => {
  const rx = await receiver(() => ({ status: 200 }));
  const t = await startTestServer({ allowTargetHosts: ["127.0.0.1"], signingSecret: "s3cret" });
  try {
    const job = await t.client.createJob({
      name: "hook",
      target: { type: "http", url: rx.url, headers: { "x-custom": "yes" } },
      payload: { event: "ping" },
      schedule: { delaySeconds: 0 },
    });
    await waitFor(async () => (await t.client.getJob(job.jobId)).state === "COMPLETED", "completed");
    assert.equal(rx.received.length, 1);
    const { headers, body } = rx.received[0]!;
    const [execution] = (await t.client.listExecutions(job.jobId)).items;
    assert.deepEqual(JSON.parse(body), { event: "ping" });
    assert.equal(headers["idempotency-key"], `${job.jobId}:${execution!.scheduledFor}`);
    assert.equal(headers["duetime-execution-id"], execution!.executionId);
    assert.equal(headers["duetime-attempt"], "1");
    assert.equal(headers["duetime-scheduled-for"], execution!.scheduledFor);
    assert.equal(headers["x-custom"], "yes");
    const expected = createHmac("sha256", "s3cret").update(`${headers["duetime-timestamp"]}.${body}`).digest("hex");
    assert.equal(headers["duetime-signature"], `v1=${expected}`);
  } finally {
    await t.close();
    await rx.close();
  }
});

test("5xx is retried with the same Idempotency-Key and the next attempt; success completes", async () => {
  const rx = await receiver((n) => ({ status: n < 3 ? 500 : 204 }));
  const t = await startTestServer({ allowTargetHosts: ["127.0.0.1"] });
  try {
    const job = await t.client.createJob({
      name: "retry",
      target: { type: "http", url: rx.url },
      schedule: { delaySeconds: 0 },
      retry: { maxAttempts: 5, backoffSeconds: 0.1, maxBackoffSeconds: 1 },
    });
    await waitFor(async () => (await t.client.getJob(job.jobId)).state === "COMPLETED", "completed");
    assert.equal(rx.received.length, 3);
    assert.deepEqual(rx.received.map((r) => r.headers["duetime-attempt"]), ["1", "2", "3"]);
    assert.equal(new Set(rx.received.map((r) => r.headers["idempotency-key"])).size, 1);
    const history = await t.client.listExecutions(job.jobId);
    assert.deepEqual(history.items.map((i) => i.state), ["SUCCEEDED", "FAILED", "FAILED"]);
    assert.equal(history.items[1]!.error?.status, 500);
  } finally {
    await t.close();
    await rx.close();
  }
});

test("410 is dead at once", async () => {
  const rx = await receiver(() => ({ status: 410 }));
  const t = await startTestServer({ allowTargetHosts: ["127.0.0.1"] });
  try {
    const job = await t.client.createJob({ name: "gone", target: { type: "http", url: rx.url }, schedule: { delaySeconds: 0 } });
    await waitFor(async () => (await t.client.getJob(job.jobId)).state === "DEAD", "dead");
    assert.equal(rx.received.length, 1);
    assert.equal((await t.client.listDeadLetters()).items[0]!.lastError?.status, 410);
  } finally {
    await t.close();
    await rx.close();
  }
});

test("a loopback target is refused without the allowlist, permanently", async () => {
  const rx = await receiver(() => ({ status: 200 }));
  const t = await startTestServer();
  try {
    const job = await t.client.createJob({ name: "ssrf", target: { type: "http", url: rx.url }, schedule: { delaySeconds: 0 } });
    await waitFor(async () => (await t.client.getJob(job.jobId)).state === "DEAD", "dead");
    assert.equal(rx.received.length, 0);
    assert.match((await t.client.listDeadLetters()).items[0]!.lastError?.message ?? "", /allow-target-hosts/);
  } finally {
    await t.close();
    await rx.close();
  }
});
