// The worker protocol over gRPC, from a worker written against
// proto/duetime/v1/worker.proto alone: its client is built by
// @grpc/proto-loader from the .proto file, and it imports no duetime code
// (the test sets the server up and reads history over the HTTP API, as an
// operator would). Fencing, auth and validation are the HTTP ones; errors
// carry their duetime code as a google.rpc.ErrorInfo in the status details.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";
import { DuetimeClient } from "@duetime/sdk";
import { queueJob, startTestServer, type TestServer, waitFor } from "./helpers.js";

const PROTO = fileURLToPath(new URL("../proto/duetime/v1/worker.proto", import.meta.url));
const definition = protoLoader.loadSync(PROTO, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
const proto = grpc.loadPackageDefinition(definition) as unknown as {
  duetime: { v1: { WorkerService: grpc.ServiceClientConstructor } };
};

type Message = Record<string, unknown>;
type Call = (request: Message) => Promise<Message>;

/** A WorkerService client whose calls are promises, with the key as its authorization metadata. */
function worker(address: string, key?: string): Record<string, Call> & { close(): void } {
  const client = new proto.duetime.v1.WorkerService(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (key) metadata.set("authorization", `Bearer ${key}`);
  const call =
    (name: string): Call =>
    (request) =>
      new Promise((resolve, reject) =>
        (client[name] as grpc.UntypedHandleCall & ((...args: unknown[]) => void))(
          request,
          metadata,
          (error: grpc.ServiceError | null, answer: Message) => (error ? reject(error) : resolve(answer)),
        ),
      );
  const rpcs = Object.fromEntries(["Lease", "Heartbeat", "Complete", "Fail", "CompleteBatch", "FailBatch"].map((n) => [n, call(n)]));
  return Object.assign(rpcs, { close: () => client.close() }) as Record<string, Call> & { close(): void };
}

// google.rpc.Status / ErrorInfo, from their .proto definitions in googleapis (not duetime's).
const rich = protobuf.parse(
  `
syntax = "proto3";
package google.rpc;
message Any { string type_url = 1; bytes value = 2; }
message Status { int32 code = 1; string message = 2; repeated Any details = 3; }
message ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }
`,
  { keepCase: true },
).root;

/** The gRPC status, and the duetime error code and field from the status details. */
async function refusal(promise: Promise<unknown>): Promise<{ code: grpc.status; reason: string; field: string | undefined; message: string }> {
  const error = await promise.then(
    () => assert.fail("expected the call to fail"),
    (e: grpc.ServiceError) => e,
  );
  const bin = error.metadata.get("grpc-status-details-bin")[0] as Buffer;
  const status = rich.lookupType("google.rpc.Status").decode(bin) as unknown as { code: number; details: { type_url: string; value: Uint8Array }[] };
  assert.equal(status.code, error.code, "the details' code is the call's");
  const detail = status.details.find((d) => d.type_url === "type.googleapis.com/google.rpc.ErrorInfo");
  assert.ok(detail, "an ErrorInfo in the status details");
  const info = rich.lookupType("google.rpc.ErrorInfo").decode(detail.value) as unknown as {
    reason: string;
    domain: string;
    metadata: Record<string, string>;
  };
  assert.equal(info.domain, "duetime.dev");
  assert.equal(error.metadata.get("duetime-error-code")[0], info.reason);
  return { code: error.code, reason: info.reason, field: info.metadata.field, message: error.details };
}

const KEYS = [
  { key: "admin-a", tenantId: "a", role: "admin" as const },
  { key: "worker-a", tenantId: "a", role: "worker" as const },
  { key: "client-a", tenantId: "a", role: "client" as const },
  { key: "worker-b", tenantId: "b", role: "worker" as const },
];

describe("the worker protocol over gRPC", () => {
  let t: TestServer;
  let address: string;
  let admin: DuetimeClient;
  const clients: { close(): void }[] = [];
  const as = (key?: string) => {
    const w = worker(address, key);
    clients.push(w);
    return w;
  };

  before(async () => {
    t = await startTestServer({ grpcPort: 0, apiKeys: KEYS });
    address = t.server.grpcAddress!;
    admin = new DuetimeClient({ url: t.url, token: "admin-a", retries: 0 });
  });
  after(async () => {
    for (const c of clients) c.close();
    await admin.close();
    await t.close();
  });

  const history = async (jobId: string) => (await admin.listExecutions(jobId)).items.map((e) => [e.attempt, e.state]);

  test("a worker built from the .proto alone leases, heartbeats, completes and fails; history shows each attempt", async () => {
    const done = await admin.createJob(queueJob("grpc-a", { payload: { n: 1 } }));
    const failed = await admin.createJob(queueJob("grpc-a", { payload: { n: 2 } }));
    const w = as("worker-a");
    const leased = await w.Lease!({ pool: "grpc-a", worker_id: "w1", max: 10, wait_seconds: 5 });
    const executions = leased.executions as Message[];
    assert.equal(executions.length, 2);
    const byJob = new Map(executions.map((e) => [e.job_id, e]));
    const first = byJob.get(done.jobId)!;
    assert.deepEqual(JSON.parse(first.payload_json as string), { n: 1 });
    assert.equal(first.tenant_id, "a");
    assert.equal(first.attempt, 1);
    assert.match(first.lease_until as string, /^\d{4}-\d\d-\d\dT.*Z$/);

    const beat = await w.Heartbeat!({ execution_id: first.execution_id, attempt: 1, lease_seconds: 60 });
    assert.equal(beat.cancel_requested, false);
    assert.ok(Date.parse(beat.lease_until as string) > Date.now() + 50_000);
    assert.deepEqual(await w.Complete!({ execution_id: first.execution_id, attempt: 1, result_json: '{"ok":true}' }), { state: "SUCCEEDED" });
    assert.deepEqual(
      await w.Complete!({ execution_id: first.execution_id, attempt: 1, result_json: '{"ok":true}' }),
      { state: "SUCCEEDED" },
      "a repeat answers the same",
    );

    const second = byJob.get(failed.jobId)!;
    const fail = await w.Fail!({ execution_id: second.execution_id, attempt: 1, error: { message: "bad input", class: "ERROR_CLASS_PERMANENT" } });
    assert.equal(fail.state, "DEAD");
    assert.equal(fail.dead, true);
    assert.deepEqual(await history(done.jobId), [[1, "SUCCEEDED"]]);
    assert.deepEqual(await history(failed.jobId), [[1, "DEAD"]]);
    assert.deepEqual((await admin.listExecutions(done.jobId)).items[0]?.result, { ok: true });
  });

  test("fencing: a stale attempt is refused with LEASE_LOST and changes nothing; an expired lease is leased again as the next attempt", async () => {
    const job = await admin.createJob(queueJob("grpc-fence", { retry: { maxAttempts: 5, backoffSeconds: 0, maxBackoffSeconds: 0 } }));
    const w = as("worker-a");
    const [first] = (await w.Lease!({ pool: "grpc-fence", worker_id: "w1", lease_seconds: 1, wait_seconds: 5 })).executions as Message[];
    assert.equal(first?.attempt, 1);
    // The lease ends; the reaper hands the execution on, and the next lease is attempt 2.
    const second = await waitFor(async () => {
      const [e] = (await w.Lease!({ pool: "grpc-fence", worker_id: "w2", wait_seconds: 1 })).executions as Message[];
      return e;
    }, "re-leased after expiry");
    assert.equal(second.execution_id, first!.execution_id);
    assert.equal(second.attempt, 2);
    for (const stale of [
      () => w.Complete!({ execution_id: first!.execution_id, attempt: 1 }),
      () => w.Heartbeat!({ execution_id: first!.execution_id, attempt: 1 }),
      () => w.Fail!({ execution_id: first!.execution_id, attempt: 1, error: { message: "late" } }),
    ]) {
      const r = await refusal(stale());
      assert.equal(r.code, grpc.status.FAILED_PRECONDITION);
      assert.equal(r.reason, "LEASE_LOST");
    }
    assert.deepEqual(
      (await admin.listExecutions(job.jobId)).items.map((e) => e.state),
      ["RUNNING", "TIMED_OUT"],
      "the stale calls changed nothing",
    );
    const [ack] = (
      await w.CompleteBatch!({
        items: [
          { execution_id: second.execution_id, attempt: 2 },
          { execution_id: first!.execution_id, attempt: 1 },
        ],
      })
    ).items as Message[];
    assert.equal(ack?.status, 200);
  });

  test("batches and acks in a lease call: one answer per item, in order, a stale one 409 with its code", async () => {
    for (let i = 0; i < 3; i++) await admin.createJob(queueJob("grpc-batch"));
    const w = as("worker-a");
    const leased = (await w.Lease!({ pool: "grpc-batch", worker_id: "w1", max: 3, wait_seconds: 5 })).executions as Message[];
    assert.equal(leased.length, 3);
    const [a, b, c] = leased as [Message, Message, Message];
    const next = await w.Lease!({
      pool: "grpc-batch",
      worker_id: "w1",
      complete: [{ execution_id: a.execution_id, attempt: 1 }],
      fail: [{ execution_id: b.execution_id, attempt: 7, error: { message: "x" } }],
    });
    assert.deepEqual(
      (next.acks as Message[]).map((k) => [k.execution_id, k.status, k.state || k.error_code]),
      [
        [a.execution_id, 200, "SUCCEEDED"],
        [b.execution_id, 409, "LEASE_LOST"],
      ],
    );
    const failed = (
      await w.FailBatch!({ items: [{ execution_id: c.execution_id, attempt: 1, error: { message: "again", class: "ERROR_CLASS_TRANSIENT" } }] })
    ).items as Message[];
    assert.equal(failed[0]?.status, 200);
    assert.equal(failed[0]?.state, "FAILED");
    assert.ok(Date.parse(failed[0]?.retry_at as string) > 0);
  });

  test("auth on every method: no key, a client's key, another tenant's execution", async () => {
    await admin.createJob(queueJob("grpc-auth"));
    const [leased] = (await as("worker-a").Lease!({ pool: "grpc-auth", worker_id: "w", wait_seconds: 5 })).executions as Message[];
    const calls: [string, Message][] = [
      ["Lease", { pool: "grpc-auth", worker_id: "w" }],
      ["Heartbeat", { execution_id: leased!.execution_id, attempt: 1 }],
      ["Complete", { execution_id: leased!.execution_id, attempt: 1 }],
      ["Fail", { execution_id: leased!.execution_id, attempt: 1, error: { message: "m" } }],
      ["CompleteBatch", { items: [{ execution_id: leased!.execution_id, attempt: 1 }] }],
      ["FailBatch", { items: [{ execution_id: leased!.execution_id, attempt: 1, error: { message: "m" } }] }],
    ];
    for (const [name, request] of calls) {
      const none = await refusal(as()[name]!(request));
      assert.deepEqual([none.code, none.reason, none.field], [grpc.status.UNAUTHENTICATED, "UNAUTHENTICATED", "authorization"], name);
      const bad = await refusal(as("nope")[name]!(request));
      assert.equal(bad.code, grpc.status.UNAUTHENTICATED, name);
      const client = await refusal(as("client-a")[name]!(request));
      assert.deepEqual([client.code, client.reason], [grpc.status.PERMISSION_DENIED, "PERMISSION_DENIED"], name);
    }
    // Tenant b cannot see tenant a's execution: not found, as over HTTP.
    const other = await refusal(as("worker-b").Heartbeat!({ execution_id: leased!.execution_id, attempt: 1 }));
    assert.deepEqual([other.code, other.reason], [grpc.status.NOT_FOUND, "NOT_FOUND"]);
    const [otherAck] = (await as("worker-b").CompleteBatch!({ items: [{ execution_id: leased!.execution_id, attempt: 1 }] })).items as Message[];
    assert.equal(otherAck?.status, 404);
    assert.deepEqual((await as("worker-a").Complete!({ execution_id: leased!.execution_id, attempt: 1 })).state, "SUCCEEDED", "still held by a");
  });

  test("a message over the body limit (1 MiB by default) is refused with RESOURCE_EXHAUSTED", async () => {
    const error = await as("worker-a").Complete!({ execution_id: "e-1", attempt: 1, result_json: JSON.stringify("x".repeat(1_100_000)) }).then(
      () => assert.fail("expected a refusal"),
      (e: grpc.ServiceError) => e,
    );
    assert.equal(error.code, grpc.status.RESOURCE_EXHAUSTED);
  });

  test("bad input is INVALID_ARGUMENT naming the field as the .proto does", async () => {
    const w = as("worker-a");
    const cases: [string, Message, string][] = [
      ["Lease", { pool: "p" }, "worker_id"],
      ["Lease", { pool: "a/b", worker_id: "w" }, "pool"],
      ["Lease", { pool: "p", worker_id: "w", max: 5000 }, "max"],
      ["Lease", { pool: "p", worker_id: "w", wait_seconds: 61 }, "wait_seconds"],
      ["Lease", { pool: "p", worker_id: "w", lease_seconds: 0 }, "lease_seconds"],
      ["Lease", { pool: "p", worker_id: "w", complete: [{ execution_id: "e-1", attempt: 1, result_json: "{nope" }] }, "complete.0.result_json"],
      ["Complete", { execution_id: "e-1", attempt: 0 }, "attempt"],
      ["Complete", { execution_id: "e-1", attempt: 1, result_json: "not json" }, "result_json"],
      ["Fail", { execution_id: "e-1", attempt: 1 }, "error"],
      ["Fail", { execution_id: "e-1", attempt: 1, error: { message: "m".repeat(16_385) } }, "error.message"],
      ["Fail", { execution_id: "e-1", attempt: 1, error: { message: "m", retry_after_seconds: -1 } }, "error.retry_after_seconds"],
      ["Heartbeat", { execution_id: "e-1", attempt: 1, lease_seconds: 3601 }, "lease_seconds"],
      ["CompleteBatch", { items: [] }, "items"],
    ];
    for (const [name, request, field] of cases) {
      const r = await refusal(w[name]!(request));
      assert.deepEqual([r.code, r.reason, r.field], [grpc.status.INVALID_ARGUMENT, "INVALID_ARGUMENT", field], `${name} ${JSON.stringify(request)}`);
      assert.ok(r.message.startsWith(`${field}:`), r.message);
    }
  });
});

test("lease tokens (a SQLite store): each leased Execution has its lease_token; every call with another token is LEASE_LOST and changes nothing, with the lease's it succeeds", async () => {
  // SQLite whichever store the other tests run on: its leases name their grant.
  const dir = mkdtempSync(join(tmpdir(), "duetime-grpc-token-"));
  const t = await startTestServer({ grpcPort: 0, apiKeys: KEYS, store: `sqlite:${join(dir, "duetime.db")}`, storeOptions: {} });
  const admin = new DuetimeClient({ url: t.url, token: "admin-a", retries: 0 });
  const w = worker(t.server.grpcAddress!, "worker-a");
  const s = workStream(t.server.grpcAddress!, "worker-a");
  try {
    const retry = { maxAttempts: 1, backoffSeconds: 0, maxBackoffSeconds: 0 };
    const jobs = await Promise.all([1, 2, 3, 4].map((n) => admin.createJob(queueJob("grpc-token", { payload: { n }, retry }))));
    const leased = (await w.Lease!({ pool: "grpc-token", worker_id: "w1", max: 4, wait_seconds: 5 })).executions as Message[];
    assert.equal(leased.length, 4);
    for (const e of leased) assert.match(e.lease_token as string, /^[0-9A-Za-z._~-]{1,64}$/, "a SQLite lease names its grant");
    const [a, b, c, d] = jobs.map((j) => leased.find((e) => e.job_id === j.jobId)!) as [Message, Message, Message, Message];
    const fence = (e: Message) => ({ execution_id: e.execution_id, attempt: e.attempt, lease_token: e.lease_token });
    const stale = (e: Message) => ({ ...fence(e), lease_token: `${e.lease_token as string}-stale` });
    const error = { message: "bad", class: "ERROR_CLASS_PERMANENT" };

    for (const [name, call] of [
      ["Heartbeat", () => w.Heartbeat!(stale(a))],
      ["Complete", () => w.Complete!({ ...stale(a), result_json: '{"late":true}' })],
      ["Fail", () => w.Fail!({ ...stale(b), error })],
    ] as const) {
      const r = await refusal(call());
      assert.deepEqual([r.code, r.reason], [grpc.status.FAILED_PRECONDITION, "LEASE_LOST"], name);
    }
    const acks = [
      ...((await w.CompleteBatch!({ items: [stale(c)] })).items as Message[]),
      ...((await w.FailBatch!({ items: [{ ...stale(d), error }] })).items as Message[]),
      ...((await w.Lease!({ pool: "grpc-token", worker_id: "w1", complete: [stale(c)], fail: [{ ...stale(d), error }] })).acks as Message[]),
    ];
    assert.deepEqual(
      acks.map((k) => [k.execution_id, k.status, k.error_code]),
      [c, d, c, d].map((e) => [e.execution_id, 409, "LEASE_LOST"]),
    );
    const history = async (jobId: string) => (await admin.listExecutions(jobId)).items.map((e) => [e.attempt, e.state]);
    const states = async () => Promise.all(jobs.map(async (j) => (await admin.listExecutions(j.jobId)).items.map((e) => e.state)));
    assert.deepEqual(
      await states(),
      [["RUNNING"], ["RUNNING"], ["RUNNING"], ["RUNNING"]],
      "the stale calls changed nothing: each job is still leased",
    );

    // An empty lease_token is none: the attempt alone fences the call.
    assert.equal((await w.Heartbeat!({ ...fence(a), lease_token: "" })).cancel_requested, false);
    assert.equal((await w.Heartbeat!(fence(a))).cancel_requested, false);
    assert.deepEqual(await w.Complete!({ ...fence(a), result_json: '{"ok":true}' }), { state: "SUCCEEDED" });
    assert.equal((await w.Fail!({ ...fence(b), error })).state, "DEAD");
    const [okC] = (await w.CompleteBatch!({ items: [fence(c)] })).items as Message[];
    const [okD] = (await w.FailBatch!({ items: [{ ...fence(d), error }] })).items as Message[];
    assert.deepEqual([okC?.status, okC?.state, okD?.status, okD?.state], [200, "SUCCEEDED", 200, "DEAD"]);
    assert.deepEqual(await states(), [["SUCCEEDED"], ["DEAD"], ["SUCCEEDED"], ["DEAD"]]);

    // On the Work stream: each pushed Execution has its token; heartbeats and acks are fenced by it.
    const streamed = await admin.createJob(queueJob("grpc-token-work"));
    s.send({ start: { pool: "grpc-token-work", worker_id: "w2" } });
    s.send({ credit: { executions: 1 } });
    const [e] = await s.until("executions", 1);
    assert.match(e!.lease_token as string, /^[0-9A-Za-z._~-]{1,64}$/);
    s.send({ heartbeat: stale(e!) });
    s.send({ acks: { complete: [stale(e!)], fail: [{ ...stale(e!), error }] } });
    const staleAcks = await s.until("acks", 2);
    assert.deepEqual(
      (await s.until("heartbeat", 1)).map((h) => h.lease_lost),
      [true],
    );
    assert.deepEqual(
      staleAcks.map((k) => [k.status, k.error_code]),
      [
        [409, "LEASE_LOST"],
        [409, "LEASE_LOST"],
      ],
    );
    assert.deepEqual(await history(streamed.jobId), [[1, "RUNNING"]]);
    s.send({ heartbeat: fence(e!) });
    assert.deepEqual(
      (await s.until("heartbeat", 2)).map((h) => h.lease_lost),
      [true, false],
    );
    s.send({ acks: { complete: [fence(e!)] } });
    const [, , ok] = await s.until("acks", 3);
    assert.deepEqual([ok?.status, ok?.state], [200, "SUCCEEDED"]);
    assert.deepEqual(await history(streamed.jobId), [[1, "SUCCEEDED"]]);
  } finally {
    s.close();
    w.close();
    await admin.close();
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("with --grpc-tls-cert and --grpc-tls-key the gRPC port serves TLS: a client trusting the certificate works, a plaintext one does not", async () => {
  const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
  const t = await startTestServer({ grpcPort: 0, grpcTls: { certFile: fixture("grpc-tls.crt"), keyFile: fixture("grpc-tls.key") } });
  const secure = new proto.duetime.v1.WorkerService(t.server.grpcAddress!, grpc.credentials.createSsl(readFileSync(fixture("grpc-tls.crt"))));
  const plain = new proto.duetime.v1.WorkerService(t.server.grpcAddress!, grpc.credentials.createInsecure());
  const lease = (client: grpc.Client) =>
    new Promise<Message>((resolve, reject) =>
      (client as unknown as Record<string, (r: Message, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, m: Message) => void) => void>).Lease!(
        { pool: "tls", worker_id: "w" },
        { deadline: Date.now() + 5_000 },
        (error, answer) => (error ? reject(error) : resolve(answer)),
      ),
    );
  try {
    assert.deepEqual((await lease(secure)).executions, []);
    await assert.rejects(lease(plain), (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE || e.code === grpc.status.DEADLINE_EXCEEDED);
  } finally {
    secure.close();
    plain.close();
    await t.close();
  }
});

// ---- the Work stream

/** A Work stream of a proto-loader client: what the server sent, in order, and how the stream ended. */
function workStream(address: string, key?: string) {
  const client = new proto.duetime.v1.WorkerService(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (key) metadata.set("authorization", `Bearer ${key}`);
  const call = (client.Work as unknown as (m: grpc.Metadata) => grpc.ClientDuplexStream<Message, Message>)(metadata);
  const received: Message[] = [];
  let ended: { code: grpc.status; error?: grpc.ServiceError } | undefined;
  call.on("data", (m: Message) => received.push(m));
  call.on("error", (error: grpc.ServiceError) => (ended = { code: error.code, error }));
  call.on("status", (s: grpc.StatusObject) => (ended ??= { code: s.code }));
  /** What came of a kind; the items of batches (executions, acks) one by one. */
  const of = (kind: string) =>
    received
      .filter((m) => m.kind === kind)
      .flatMap((m) => (kind === "executions" || kind === "acks" ? ((m[kind] as Message).items as Message[]) : [m[kind] as Message]));
  return {
    send: (m: Message) => call.write(m),
    of,
    /** Waits until `count` messages of this kind arrived; returns them. */
    until: (kind: string, count: number, timeoutMs = 20_000) =>
      waitFor(() => (of(kind).length >= count ? of(kind) : null), `${count} ${kind}`, timeoutMs),
    received: () => received,
    ended: () => ended,
    cancel: () => call.cancel(),
    close: () => {
      call.end();
      client.close();
    },
  };
}

describe("the Work stream", () => {
  let t: TestServer;
  let address: string;
  let admin: DuetimeClient;
  const streams: { close(): void }[] = [];
  const clients: { close(): void }[] = [];
  const open = (key?: string) => {
    const s = workStream(address, key);
    streams.push(s);
    return s;
  };

  before(async () => {
    t = await startTestServer({ grpcPort: 0, apiKeys: KEYS });
    address = t.server.grpcAddress!;
    admin = new DuetimeClient({ url: t.url, token: "admin-a", retries: 0 });
  });
  after(async () => {
    for (const s of streams) s.close();
    for (const c of clients) c.close();
    await admin.close();
    await t.close();
  });

  test("credit is flow control: never more executions than granted, the rest pushed as credit comes", async () => {
    for (let i = 0; i < 5; i++) await admin.createJob(queueJob("work-credit", { payload: { i } }));
    const s = open("worker-a");
    s.send({ start: { pool: "work-credit", worker_id: "w1" } });
    s.send({ credit: { executions: 2 } });
    await s.until("executions", 2);
    assert.deepEqual(await admin.poolStats("work-credit"), { pending: 0, queued: 3, running: 2 }, "no more leased than the credit");
    s.send({ credit: { executions: 10 } });
    const all = await s.until("executions", 5);
    assert.equal(new Set(all.map((e) => e.execution_id)).size, 5);
    assert.deepEqual(JSON.parse(all[0]!.payload_json as string), { i: 0 });
    // Credit left (7) and nothing ready: a job created now is pushed as soon as it is due.
    const late = await admin.createJob(queueJob("work-credit"));
    const [, , , , , pushed] = await s.until("executions", 6);
    assert.equal(pushed?.job_id, late.jobId);
  });

  test("executions come in batches of about 1 MiB, so a lease larger than a client takes (4 MiB by default) still arrives", async () => {
    const big = "x".repeat(700_000);
    for (let i = 0; i < 8; i++) await admin.createJob(queueJob("work-big", { payload: { i, big } }));
    const s = open("worker-a");
    s.send({ start: { pool: "work-big", worker_id: "w1" } });
    s.send({ credit: { executions: 8 } });
    const all = await s.until("executions", 8);
    assert.deepEqual(all.map((e) => (JSON.parse(e.payload_json as string) as { i: number }).i).sort(), [0, 1, 2, 3, 4, 5, 6, 7]);
    const messages = s.received().filter((m) => m.kind === "executions").length;
    assert.ok(messages >= 5, `8 executions of 700 KB in ${messages} messages`);
    assert.equal(s.ended(), undefined, "the stream is still open");
  });

  test("acknowledgements and heartbeats on the stream: answered one by one, fenced by the attempt; a cancel reaches the running attempt", async () => {
    const done = await admin.createJob(queueJob("work-ack"));
    const cancelled = await admin.createJob(queueJob("work-ack"));
    const s = open("worker-a");
    s.send({ start: { pool: "work-ack", worker_id: "w1", lease_seconds: 30 } });
    s.send({ credit: { executions: 2 } });
    const executions = await s.until("executions", 2);
    const a = executions.find((e) => e.job_id === done.jobId)!;
    const c = executions.find((e) => e.job_id === cancelled.jobId)!;

    s.send({
      acks: {
        complete: [
          { execution_id: a.execution_id, attempt: 1, result_json: '{"ok":1}' },
          { execution_id: c.execution_id, attempt: 9 },
        ],
        fail: [{ execution_id: a.execution_id, attempt: 0, error: { message: "x" } }],
      },
    });
    const acks = await s.until("acks", 3);
    const byAttempt = new Map(acks.map((k) => [k.attempt, k]));
    assert.deepEqual([byAttempt.get(1)?.status, byAttempt.get(1)?.state], [200, "SUCCEEDED"]);
    assert.deepEqual([byAttempt.get(9)?.status, byAttempt.get(9)?.error_code], [409, "LEASE_LOST"]);
    assert.deepEqual([byAttempt.get(0)?.status, byAttempt.get(0)?.error_code], [400, "INVALID_ARGUMENT"]);

    s.send({ heartbeat: { execution_id: c.execution_id, attempt: 1, lease_seconds: 60 } });
    const [beat] = await s.until("heartbeat", 1);
    assert.equal(beat?.lease_lost, false);
    assert.ok(Date.parse(beat?.lease_until as string) > Date.now() + 50_000);
    assert.equal(s.of("cancel").length, 0);
    await admin.cancelJob(cancelled.jobId);
    s.send({ heartbeat: { execution_id: c.execution_id, attempt: 1 } });
    const [cancel] = await s.until("cancel", 1);
    assert.deepEqual(cancel, { execution_id: c.execution_id, attempt: 1 });
    s.send({ heartbeat: { execution_id: a.execution_id, attempt: 9 } });
    const beats = await s.until("heartbeat", 3);
    assert.deepEqual([beats[2]?.lease_lost, beats[2]?.lease_until], [true, ""]);
    assert.equal(s.ended(), undefined, "the stream is still open");
  });

  test("a worker that disconnects mid-stream keeps its lease until it expires; then the execution is leased again once, as the next attempt", async () => {
    const job = await admin.createJob(queueJob("work-gone", { retry: { maxAttempts: 3, backoffSeconds: 0, maxBackoffSeconds: 0 } }));
    const s = open("worker-a");
    s.send({ start: { pool: "work-gone", worker_id: "w1", lease_seconds: 2 } });
    s.send({ credit: { executions: 5 } });
    const [first] = await s.until("executions", 1);
    s.cancel();
    const w = worker(address, "worker-a");
    clients.push(w);
    assert.deepEqual((await w.Lease!({ pool: "work-gone", worker_id: "w2" })).executions, [], "still leased to the gone worker");
    const again = await waitFor(
      async () => ((await w.Lease!({ pool: "work-gone", worker_id: "w2", wait_seconds: 1 })).executions as Message[])[0],
      "leased again after expiry",
    );
    assert.deepEqual([again.execution_id, again.attempt], [first!.execution_id, 2]);
    assert.deepEqual(
      (await admin.listExecutions(job.jobId)).items.map((e) => [e.attempt, e.state]),
      [
        [2, "RUNNING"],
        [1, "TIMED_OUT"],
      ],
    );
  });

  test("bad input and auth end the stream with the status and the field named", async () => {
    const cases: [string | undefined, Message[], grpc.status, string, string | undefined][] = [
      [undefined, [{ start: { pool: "p", worker_id: "w" } }], grpc.status.UNAUTHENTICATED, "UNAUTHENTICATED", "authorization"],
      ["client-a", [{ start: { pool: "p", worker_id: "w" } }], grpc.status.PERMISSION_DENIED, "PERMISSION_DENIED", undefined],
      ["worker-a", [{ credit: { executions: 1 } }], grpc.status.INVALID_ARGUMENT, "INVALID_ARGUMENT", "start"],
      ["worker-a", [{ start: { pool: "a/b", worker_id: "w" } }], grpc.status.INVALID_ARGUMENT, "INVALID_ARGUMENT", "pool"],
      ["worker-a", [{ start: { pool: "p" } }], grpc.status.INVALID_ARGUMENT, "INVALID_ARGUMENT", "worker_id"],
      [
        "worker-a",
        [{ start: { pool: "p", worker_id: "w" } }, { credit: { executions: 1001 } }],
        grpc.status.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
        "credit.executions",
      ],
      [
        "worker-a",
        [{ start: { pool: "p", worker_id: "w" } }, { credit: { executions: 0 } }],
        grpc.status.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
        "credit.executions",
      ],
      ["worker-a", [{ start: { pool: "p", worker_id: "w" } }, { acks: {} }], grpc.status.INVALID_ARGUMENT, "INVALID_ARGUMENT", "acks"],
      [
        "worker-a",
        [
          { start: { pool: "p", worker_id: "w" } },
          { acks: { complete: Array.from({ length: 1001 }, (_, i) => ({ execution_id: `e-${i}`, attempt: 1 })) } },
        ],
        grpc.status.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
        "acks",
      ],
      [
        "worker-b",
        [{ start: { pool: "p", worker_id: "w" } }, { heartbeat: { execution_id: "x-1", attempt: 1 } }],
        grpc.status.NOT_FOUND,
        "NOT_FOUND",
        undefined,
      ],
    ];
    for (const [key, messages, code, reason, field] of cases) {
      const s = open(key);
      for (const m of messages) s.send(m);
      const ended = await waitFor(() => s.ended(), `the stream ends (${JSON.stringify(messages)})`);
      assert.equal(ended.code, code, JSON.stringify(messages));
      const r = await refusal(Promise.reject(ended.error));
      assert.deepEqual([r.reason, r.field], [reason, field], JSON.stringify(messages));
    }
  });

  test("the server's graceful stop ends open streams with OK, long polls and all", async () => {
    const own = await startTestServer({ grpcPort: 0 });
    const s = workStream(own.server.grpcAddress!);
    s.send({ start: { pool: "work-stop", worker_id: "w1" } });
    s.send({ credit: { executions: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 200)); // its lease call is now waiting for work
    const started = Date.now();
    await own.close();
    const ended = await waitFor(() => s.ended(), "the stream ended");
    assert.equal(ended.code, grpc.status.OK);
    assert.ok(Date.now() - started < 10_000, "within the stop's grace, not after the 20 s long poll");
    s.close();
  });
});
