// The SDK's Worker over gRPC (transport "grpc"): the same handler, signal,
// heartbeats and drain as over HTTP, with executions pushed on one Work
// stream. Real servers on loopback, on either store.

import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { AttemptAbortedError, DuetimeClient, Worker, type WorkerEvent, type WorkerOptions } from "@duetime/sdk";
import { startServer } from "../src/server/index.js";
import { queueJob, serverStore, startTestServer, testStore, type TestServer, waitFor } from "./helpers.js";

const KEYS = [
  { key: "admin-a", tenantId: "a", role: "admin" as const },
  { key: "worker-a", tenantId: "a", role: "worker" as const },
];

describe("the SDK's Worker over gRPC", () => {
  let t: TestServer;
  let admin: DuetimeClient;
  const workers: Worker[] = [];
  const start = (options: Omit<WorkerOptions, "url" | "transport">, url = `grpc://${t.server.grpcAddress}`) => {
    const worker = new Worker({ url, transport: "grpc", token: "worker-a", handleSignals: false, logger: null, ...options });
    workers.push(worker);
    const events: WorkerEvent[] = [];
    const done = worker.run();
    return { worker, events, done };
  };

  before(async () => {
    t = await startTestServer({ grpcPort: 0, apiKeys: KEYS });
    admin = new DuetimeClient({ url: t.url, token: "admin-a", retries: 0 });
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown()));
    await admin.close();
    await t.close();
  });

  test("runs 300 jobs within its concurrency and records each result; failures keep their class", async () => {
    let running = 0;
    let peak = 0;
    start({
      pool: "sdk-grpc",
      concurrency: 8,
      handler: async (job) => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((resolve) => setTimeout(resolve, 2));
        running--;
        const { i } = job.payload as { i: number };
        if (i === 0) throw new Error("flaky");
        return { doubled: i * 2 };
      },
    });
    const jobs = await admin.createJobs(
      Array.from({ length: 300 }, (_, i) =>
        queueJob("sdk-grpc", { payload: { i }, retry: { maxAttempts: 1, backoffSeconds: 0, maxBackoffSeconds: 0 } }),
      ),
    );
    const ids = jobs.map((item) => (item as { jobId: string }).jobId);
    await waitFor(async () => {
      const stats = await admin.poolStats("sdk-grpc");
      return stats.queued + stats.running === 0;
    }, "every attempt ran and was acknowledged");
    assert.ok(peak <= 8 && peak > 1, `peak concurrency ${peak}`);
    assert.deepEqual((await admin.listExecutions(ids[299]!)).items[0]!.result, { doubled: 598 });
    const first = await waitFor(async () => {
      const [e] = (await admin.listExecutions(ids[0]!)).items;
      return e?.state === "DEAD" ? e : undefined;
    }, "the thrown error acknowledged");
    assert.deepEqual(first.error, { message: "flaky", class: "transient" });
  });

  test("a cancel reaches the running handler through the stream: its signal aborts with reason cancelled", async () => {
    const reasons: unknown[] = [];
    const events: WorkerEvent[] = [];
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    start({
      pool: "sdk-grpc-cancel",
      leaseSeconds: 1, // heartbeats every 333 ms: the cancel comes back on one
      onEvent: (e) => events.push(e),
      handler: async (_job, ctx) => {
        started();
        if (!ctx.signal.aborted) await once(ctx.signal, "abort");
        reasons.push(ctx.signal.reason);
        return "after the cancel";
      },
    });
    const job = await admin.createJob(queueJob("sdk-grpc-cancel"));
    await running;
    await admin.cancelJob(job.jobId);
    await waitFor(() => reasons.length === 1, "the handler saw the abort");
    assert.ok(reasons[0] instanceof AttemptAbortedError);
    assert.equal((reasons[0] as AttemptAbortedError).reason, "cancelled");
    await waitFor(() => events.some((e) => e.type === "job:drop" && e.reason === "cancelled"), "its outcome dropped");
    assert.ok(events.some((e) => e.type === "job:cancel"));
  });

  test("shutdown drains: no new work, running handlers finish, their acks go before the stream closes", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let begun = 0;
    const { worker, done } = start({
      pool: "sdk-grpc-drain",
      concurrency: 2,
      prefetch: 0,
      handler: async () => {
        begun++;
        await gate;
        return "drained";
      },
    });
    const created = await admin.createJobs([1, 2, 3].map(() => queueJob("sdk-grpc-drain")));
    await waitFor(() => begun === 2, "two handlers running");
    const stopping = worker.shutdown();
    release();
    await stopping;
    await done;
    assert.equal(worker.state, "stopped");
    const states = await Promise.all(created.map(async (item) => (await admin.listExecutions((item as { jobId: string }).jobId)).items[0]?.state));
    assert.deepEqual(states.sort(), ["QUEUED", "SUCCEEDED", "SUCCEEDED"], "two ran and were acknowledged, the third was never granted");
    assert.equal(begun, 2);
  });

  test("a wrong key: the stream's UNAUTHENTICATED is reported as a lease error, and the worker backs off and keeps trying", async () => {
    const errors: { error: unknown; retryInMs?: number }[] = [];
    const worker = new Worker({
      url: `grpc://${t.server.grpcAddress}`,
      transport: "grpc",
      token: "nobody",
      pool: "sdk-grpc-auth",
      handleSignals: false,
      logger: null,
      onEvent: (e) => void (e.type === "error" && e.during === "lease" && errors.push(e)),
      handler: async () => undefined,
    });
    workers.push(worker);
    void worker.run();
    await waitFor(() => errors.length >= 2, "two lease errors");
    assert.equal((errors[0]!.error as { code?: string }).code, "UNAUTHENTICATED");
    assert.ok(errors[1]!.retryInMs! >= errors[0]!.retryInMs!, "backing off");
    await worker.shutdown();
  });
});

test("a worker whose server stops reconnects to the server that takes its place, and runs what was created meanwhile", async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-grpc-restart-"));
  const store = testStore(dir);
  const first = await startServer({ host: "127.0.0.1", port: 0, grpcPort: 0, ...serverStore(store), logLevel: "silent" });
  const grpcPort = Number(first.grpcAddress!.split(":").pop());
  const ran: string[] = [];
  const errors: WorkerEvent[] = [];
  const worker = new Worker({
    url: `grpc://${first.grpcAddress}`,
    transport: "grpc",
    pool: "restart",
    handleSignals: false,
    logger: null,
    onEvent: (e) => void (e.type === "error" && errors.push(e)),
    handler: async (job) => void ran.push(job.jobId),
  });
  void worker.run();
  const client = new DuetimeClient({ url: first.url, retries: 0 });
  const before = await client.createJob(queueJob("restart"));
  await waitFor(() => ran.includes(before.jobId), "a job before the restart");
  await client.close();
  await first.close();
  await waitFor(() => errors.length > 0, "the worker noticed the stream end");
  const second = await startServer({ host: "127.0.0.1", port: 0, grpcPort, ...serverStore(store), logLevel: "silent" });
  try {
    const client2 = new DuetimeClient({ url: second.url, retries: 0 });
    const afterwards = await client2.createJob(queueJob("restart"));
    await waitFor(() => ran.includes(afterwards.jobId), "a job after the restart", 30_000);
    await worker.shutdown();
    await client2.close();
  } finally {
    await second.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("lease tokens (a SQLite store): the Worker sends back each lease's token with its heartbeats, completes and fails", async () => {
  // SQLite whichever store the other tests run on: its leases name their grant.
  const dir = mkdtempSync(join(tmpdir(), "duetime-grpc-sdk-token-"));
  const server = await startServer({ host: "127.0.0.1", port: 0, grpcPort: 0, store: `sqlite:${join(dir, "duetime.db")}`, logLevel: "silent" });
  // What the engine was given and sent back, read off its service (the calls the gRPC server makes of it).
  const service = server.engine.service;
  const granted = new Map<string, string | undefined>();
  const sent: { kind: "heartbeat" | "complete" | "fail"; key: string; leaseToken: string | undefined }[] = [];
  const key = (i: { executionId: string; attempt: number }) => `${i.executionId}#${i.attempt}`;
  const record = (kind: "complete" | "fail", items: { executionId: string; attempt: number; leaseToken?: string }[] = []) => {
    for (const i of items) sent.push({ kind, key: key(i), leaseToken: i.leaseToken });
  };
  const { lease, heartbeat, completeMany, failMany } = service;
  service.lease = async (ctx, pool, request) => {
    record("complete", request.complete);
    record("fail", request.fail);
    const answer = await lease.call(service, ctx, pool, request);
    for (const e of answer.items) granted.set(key(e), e.leaseToken);
    return answer;
  };
  service.heartbeat = (ctx, executionId, request) => {
    sent.push({ kind: "heartbeat", key: key({ executionId, ...request }), leaseToken: request.leaseToken });
    return heartbeat.call(service, ctx, executionId, request);
  };
  service.completeMany = (ctx, items) => {
    record("complete", items);
    return completeMany.call(service, ctx, items);
  };
  service.failMany = (ctx, items) => {
    record("fail", items);
    return failMany.call(service, ctx, items);
  };

  const seen = new Map<string, string | undefined>();
  const worker = new Worker({
    url: `grpc://${server.grpcAddress}`,
    transport: "grpc",
    pool: "token",
    concurrency: 4,
    leaseSeconds: 1, // heartbeats every 333 ms
    handleSignals: false,
    logger: null,
    handler: async (job) => {
      seen.set(key(job), job.leaseToken);
      await new Promise((resolve) => setTimeout(resolve, 800));
      if ((job.payload as { fail?: boolean }).fail) throw new Error("refused");
      return "done";
    },
  });
  const client = new DuetimeClient({ url: server.url, retries: 0 });
  try {
    void worker.run();
    const retry = { maxAttempts: 1, backoffSeconds: 0, maxBackoffSeconds: 0 };
    const jobs = await client.createJobs([{}, {}, { fail: true }].map((payload) => queueJob("token", { payload, retry })));
    const ids = jobs.map((item) => (item as { jobId: string }).jobId);
    const states = async () => Promise.all(ids.map(async (id) => (await client.listExecutions(id)).items[0]?.state));
    await waitFor(async () => (await states()).every((s) => s === "SUCCEEDED" || s === "DEAD"), "every attempt acknowledged");
    assert.deepEqual(await states(), ["SUCCEEDED", "SUCCEEDED", "DEAD"], "each ack carrying its token was accepted");
    assert.equal(granted.size, 3);
    for (const token of granted.values()) assert.match(token ?? "", /^[0-9A-Za-z._~-]{1,64}$/, "a SQLite lease names its grant");
    assert.deepEqual(seen, granted, "the handler's job has the token its lease gave");
    const kinds = sent.map((c) => c.kind);
    assert.deepEqual([kinds.filter((k) => k === "complete").length, kinds.filter((k) => k === "fail").length], [2, 1]);
    assert.ok(kinds.includes("heartbeat"), "the handlers ran long enough to heartbeat");
    for (const call of sent) assert.equal(call.leaseToken, granted.get(call.key), `the ${call.kind} of ${call.key} carried its lease's token`);
  } finally {
    await worker.shutdown();
    await client.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("grpcs:// with the CA that signed the server's certificate", async () => {
  const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
  const t = await startTestServer({ grpcPort: 0, grpcTls: { certFile: fixture("grpc-tls.crt"), keyFile: fixture("grpc-tls.key") } });
  try {
    const seen: unknown[] = [];
    const worker = new Worker({
      url: `grpcs://localhost:${t.server.grpcAddress!.split(":").pop()}`,
      transport: "grpc",
      ca: readFileSync(fixture("grpc-tls.crt")),
      pool: "tls",
      handleSignals: false,
      logger: null,
      handler: async (job) => void seen.push(job.payload),
    });
    void worker.run();
    await t.client.createJob(queueJob("tls", { payload: { secure: true } }));
    await waitFor(() => seen.length === 1, "the job ran over TLS");
    assert.deepEqual(seen, [{ secure: true }]);
    await worker.shutdown();
  } finally {
    await t.close();
  }
});
