// Large payloads by reference, end to end on a real server (SQLite, or
// PostgreSQL with DUETIME_TEST_STORE=postgres): a payload over the inline
// limit is stored once in the blob store; the create answers its payloadRef;
// the SDK's Worker receives it inline; GET /v1/blobs/{blobId} serves it to
// its tenant only; an HTTP target receives it as the body; the limits answer
// 413 (body over the create's limit) and 400 (payload over the payload limit).

import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { DuetimeClient, type LeasedExecution, verifySignature, Worker } from "@duetime/sdk";
import { apiError, clientsOf, listenOnLoopback, startTestServer, type TestServer, waitFor } from "./helpers.js";

const MiB = 1024 * 1024;
const BODY_LIMIT = MiB;
const INLINE = 64 * 1024;
const MAX_PAYLOAD = 3 * MiB;

/** A payload of about `bytes` bytes of JSON, unlike any other. */
const payloadOf = (bytes: number) => ({
  id: randomBytes(8).toString("hex"),
  text: randomBytes(Math.ceil(bytes / 2))
    .toString("hex")
    .slice(0, bytes),
});
/** The error envelope, as these tests read it. */
type ErrorAnswer = { error: { code: string; message: string; details: { field?: string; limitBytes?: number } } };

const sha256 = (value: unknown) => createHash("sha256").update(JSON.stringify(value)).digest("hex");

describe("payloads by reference", () => {
  let t: TestServer;
  let keys: ReturnType<typeof clientsOf>;
  const SECRET = "whsec_blob-test";

  before(async () => {
    t = await startTestServer({
      bodyLimitBytes: BODY_LIMIT,
      inlinePayloadBytes: INLINE,
      maxPayloadBytes: MAX_PAYLOAD,
      apiKeys: [
        { key: "a", tenantId: "acme", role: "client" },
        { key: "aw", tenantId: "acme", role: "worker" },
        { key: "bw", tenantId: "globex", role: "worker" },
        { key: "fleet", tenantId: "*", role: "worker" },
      ],
      signingSecrets: { acme: SECRET },
      allowTargetHosts: ["127.0.0.1"],
    });
    keys = clientsOf(t);
  });
  after(async () => {
    await keys.close();
    await t.close();
  });

  test("a payload over the inline limit (and over the body limit) is kept by reference, and the SDK's Worker gets it whole", async () => {
    const payload = payloadOf(Math.round(1.5 * MiB));
    const created = await keys.as("a").createJob({ name: "big", target: { type: "queue", pool: "big" }, payload, schedule: { delaySeconds: 0 } });
    assert.equal(created.payload, null, "the answer does not echo the payload");
    const ref = created.payloadRef!;
    assert.equal(ref.bytes, Buffer.byteLength(JSON.stringify(payload)));
    assert.equal(ref.sha256, sha256(payload));
    assert.equal(ref.href, `/v1/blobs/${ref.blobId}`);
    assert.deepEqual((await keys.as("a").getJob(created.jobId)).payloadRef, ref, "GET shows the same reference");

    const seen = new Promise<LeasedExecution>((resolve) => {
      const worker = new Worker({
        url: t.url,
        token: "aw",
        pool: "big",
        handleSignals: false,
        logger: null,
        handler: async (job) => {
          resolve(job);
          void worker.shutdown();
          return { bytes: JSON.stringify(job.payload).length };
        },
      });
      void worker.run();
    });
    const job = await seen;
    assert.equal(sha256(job.payload), ref.sha256, "the handler sees the payload as it was created");
    assert.deepEqual(job.payload, payload);
    assert.equal(job.payloadRef, undefined, "as if it had come inline");
    await waitFor(async () => (await keys.as("a").getJob(created.jobId)).state === "COMPLETED", "the job completes");
  });

  test("over HTTP a leased item carries payload null and its payloadRef; GET href answers the payload to its tenant only", async () => {
    const payload = payloadOf(200 * 1024);
    const created = await keys.as("a").createJob({ name: "raw", target: { type: "queue", pool: "raw" }, payload, schedule: { delaySeconds: 0 } });
    const { items } = await keys.as("aw").lease("raw", { workerId: "w1", max: 1 });
    assert.equal(items.length, 1);
    const [item] = items;
    assert.equal(item!.payload, null);
    assert.deepEqual(item!.payloadRef, created.payloadRef);
    const answer = await fetch(new URL(item!.payloadRef!.href, t.url), { headers: { authorization: "Bearer aw" } });
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get("content-type") ?? "", /^application\/json/);
    assert.deepEqual(await answer.json(), payload);
    assert.deepEqual(await keys.as("a").getBlob(item!.payloadRef!.blobId), payload, "a client key of the tenant reads it too");
    assert.deepEqual(await keys.as("fleet").getBlob(item!.payloadRef!.blobId), payload, "a platform worker reads any tenant's");
    const other = await apiError(keys.as("bw").getBlob(item!.payloadRef!.blobId));
    assert.deepEqual([other.status, other.code], [404, "NOT_FOUND"], "another tenant's blob does not exist for it");
    assert.equal((await apiError(keys.as("aw").getBlob("00000000000000000000zz"))).code, "NOT_FOUND");
    assert.equal((await apiError(keys.as("aw").getBlob("not-an-id"))).code, "NOT_FOUND");
    const anonymous = await fetch(new URL(item!.payloadRef!.href, t.url));
    assert.equal(anonymous.status, 401);
  });

  test("a payload within the inline limit stays inline, as before", async () => {
    const payload = payloadOf(1000);
    const created = await keys.as("a").createJob({ name: "small", target: { type: "queue", pool: "small" }, payload, schedule: { delaySeconds: 0 } });
    assert.deepEqual(created.payload, payload);
    assert.equal(created.payloadRef, undefined);
    const { items } = await keys.as("aw").lease("small", { workerId: "w1", max: 1 });
    assert.deepEqual(items[0]!.payload, payload);
    assert.equal(items[0]!.payloadRef, undefined);
  });

  test("an HTTP target receives the payload inline as its body, signed over those bytes", async () => {
    const payload = payloadOf(Math.round(1.2 * MiB));
    let received: { body: Buffer; headers: Record<string, string | string[] | undefined> } | undefined;
    const receiver = await listenOnLoopback((req, res) => {
      const parts: Buffer[] = [];
      req.on("data", (c: Buffer) => parts.push(c));
      req.on("end", () => {
        received = { body: Buffer.concat(parts), headers: req.headers };
        res.writeHead(204).end();
      });
    });
    try {
      const created = await keys
        .as("a")
        .createJob({ name: "hook", target: { type: "http", url: `${receiver.base}/hook` }, payload, schedule: { delaySeconds: 0 } });
      assert.ok(created.payloadRef, "kept by reference");
      await waitFor(async () => (await keys.as("a").getJob(created.jobId)).state === "COMPLETED", "the call succeeds");
      assert.ok(received);
      assert.equal(received.body.toString(), JSON.stringify(payload), "the body is the payload's JSON, byte for byte");
      assert.equal(received.headers["content-type"], "application/json");
      assert.ok(verifySignature({ secret: SECRET, headers: received.headers, body: received.body.toString() }), "signed over the body sent");
    } finally {
      await receiver.close();
    }
  });

  test("a PATCH may set a payload over the inline limit; the next attempt gets the new one", async () => {
    const created = await keys
      .as("a")
      .createJob({ name: "patched", target: { type: "queue", pool: "patched" }, payload: { small: true }, schedule: { delaySeconds: 3600 } });
    const payload = payloadOf(Math.round(1.1 * MiB));
    const patched = await keys.as("a").updateJob(created.jobId, { payload, schedule: { delaySeconds: 0 } });
    assert.equal(patched.payload, null);
    assert.equal(patched.payloadRef?.sha256, sha256(payload));
    const { items } = await keys.as("aw").lease("patched", { workerId: "w1", max: 1 });
    assert.deepEqual(await keys.as("aw").getBlob(items[0]!.payloadRef!.blobId), payload);
  });

  test("413 PAYLOAD_TOO_LARGE names the create's limit (the body limit plus the payload limit); other routes keep the body limit", async () => {
    const createLimit = BODY_LIMIT + MAX_PAYLOAD;
    const tooBig = await post("/v1/jobs", {
      name: "x",
      target: { type: "queue", pool: "p" },
      payload: "x".repeat(createLimit),
      schedule: { delaySeconds: 0 },
    });
    assert.equal(tooBig.status, 413);
    assert.equal(tooBig.body.error.code, "PAYLOAD_TOO_LARGE");
    assert.equal(tooBig.body.error.details.limitBytes, createLimit);
    const batch = await post("/v1/jobs:batch", {
      jobs: [{ name: "x", target: { type: "queue", pool: "p" }, payload: "x".repeat(BODY_LIMIT), schedule: { delaySeconds: 0 } }],
    });
    assert.equal(batch.status, 413);
    assert.equal(batch.body.error.details.limitBytes, BODY_LIMIT, "a batch carries jobs, not one large payload: the body limit");
    const lease = await post("/v1/pools/p/lease", { workerId: "x".repeat(BODY_LIMIT + 10) }, "aw");
    assert.deepEqual([lease.status, lease.body.error.details.limitBytes], [413, BODY_LIMIT]);
  });

  test("400 INVALID_ARGUMENT names the payload and the payload limit when a payload is over it, and nothing is written", async () => {
    const payload = "y".repeat(MAX_PAYLOAD + 1);
    const refused = await post("/v1/jobs", { name: "x", target: { type: "queue", pool: "refused" }, payload, schedule: { delaySeconds: 0 } });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, "INVALID_ARGUMENT");
    assert.equal(refused.body.error.details.field, "payload");
    assert.equal(refused.body.error.details.limitBytes, MAX_PAYLOAD);
    assert.match(refused.body.error.message, /^payload: .*over the server's limit of 3145728 \(--max-payload-bytes\)/);
    assert.equal((await keys.as("a").listJobs({ pool: "refused" })).items.length, 0);

    const created = await keys.as("a").createJob({ name: "p", target: { type: "queue", pool: "p" }, payload: 1, schedule: { delaySeconds: 60 } });
    const patched = await post(`/v1/jobs/${created.jobId}`, { payload }, "a", "PATCH");
    assert.deepEqual([patched.status, patched.body.error.details.field, patched.body.error.details.limitBytes], [400, "payload", MAX_PAYLOAD]);

    const inBatch = await keys
      .as("a")
      .createJobs([{ name: "b", target: { type: "queue", pool: "p" }, payload: "z".repeat(200 * 1024), schedule: { delaySeconds: 60 } }]);
    assert.ok("jobId" in inBatch[0]!, "a batch's payload over the inline limit is kept by reference too");

    const reserved = await post("/v1/jobs", {
      name: "x",
      target: { type: "queue", pool: "p" },
      payload: { "$duetime:blob": { blobId: "a" } },
      schedule: { delaySeconds: 0 },
    });
    assert.deepEqual([reserved.status, reserved.body.error.details.field], [400, "payload"], "the marker's key is reserved");
  });

  test("Expect: 100-continue: a create's body over the body limit is invited, one over the create's limit is refused at once", async () => {
    assert.match(await expectContinue("/v1/jobs", BODY_LIMIT + 10), /^HTTP\/1\.1 100 Continue/);
    assert.match(await expectContinue("/v1/jobs", BODY_LIMIT + MAX_PAYLOAD + 10), /^HTTP\/1\.1 413 /);
    assert.match(await expectContinue("/v1/jobs:batch", BODY_LIMIT + 10), /^HTTP\/1\.1 413 /);
  });

  /** A JSON request with a key, read back whatever its status. */
  async function post(path: string, body: unknown, key = "a", method = "POST"): Promise<{ status: number; body: ErrorAnswer }> {
    const answer = await fetch(new URL(path, t.url), {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: answer.status, body: (await answer.json()) as ErrorAnswer };
  }

  /** The first line the server answers to a head announcing `length` bytes with Expect: 100-continue (no body sent). */
  function expectContinue(path: string, length: number): Promise<string> {
    const { hostname, port } = new URL(t.url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer a\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`,
        );
      });
      socket.once("data", (chunk: Buffer) => {
        resolve(chunk.toString("latin1").split("\r\n")[0]!);
        socket.destroy();
      });
      socket.once("error", reject);
    });
  }
});

test("without API keys (development mode) the default tenant reads its own blobs with DuetimeClient.getBlob", async () => {
  const t = await startTestServer({ inlinePayloadBytes: 1024 });
  const client = new DuetimeClient({ url: t.url });
  try {
    const payload = payloadOf(5000);
    const created = await client.createJob({ name: "c", target: { type: "queue", pool: "c" }, payload, schedule: { delaySeconds: 60 } });
    assert.deepEqual(await client.getBlob(created.payloadRef!.blobId), payload);
  } finally {
    await client.close();
    await t.close();
  }
});

test("over gRPC the SDK's Worker gets a payload kept by reference inline, larger than grpc-js's 4 MiB default message", {
  timeout: 30_000,
}, async () => {
  const t = await startTestServer({ grpcPort: 0, inlinePayloadBytes: 64 * 1024, maxPayloadBytes: 8 * MiB });
  const client = new DuetimeClient({ url: t.url });
  try {
    const payload = payloadOf(6 * MiB);
    const created = await client.createJob({ name: "g", target: { type: "queue", pool: "grpc-big" }, payload, schedule: { delaySeconds: 0 } });
    assert.ok(created.payloadRef);
    const seen = new Promise<LeasedExecution>((resolve) => {
      const worker = new Worker({
        url: `grpc://${t.server.grpcAddress}`,
        transport: "grpc",
        pool: "grpc-big",
        handleSignals: false,
        logger: null,
        handler: async (job) => {
          resolve(job);
          void worker.shutdown();
        },
      });
      void worker.run();
    });
    const job = await seen;
    assert.equal(sha256(job.payload), created.payloadRef.sha256);
    assert.equal(job.payloadRef, undefined);
    await waitFor(async () => (await client.getJob(created.jobId)).state === "COMPLETED", "the job completes");
  } finally {
    await client.close();
    await t.close();
  }
});
