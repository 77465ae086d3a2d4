// The S3 blob backend against s3rver, a small S3-compatible server in this
// process (an npm package: a fake of S3's REST API on loopback, with a
// directory for its objects). What this shows: the adapter speaks the S3 API
// the way @aws-sdk/client-s3 does (path-style requests to an endpoint,
// signed, without the SDK's newer default checksums), and the engine keeps
// the index in the job store while the bytes go to the bucket. What it does
// not show: behaviour of AWS S3 itself or of MinIO, Ceph or R2 (no such
// server is available here), nor multipart uploads (the adapter uses none).

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { GetObjectCommand, NoSuchKey, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { FakeClock } from "../../core/clock.js";
import { openEngine } from "../../engine/engine.js";
import { DEFAULT_CONTEXT as ctx } from "../../engine/service.js";
import { openStore } from "../factory.js";
import { s3Blobs } from "./s3.js";
import type { S3BlobSettings } from "./s3-settings.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-s3-"));
const BUCKET = "duetime-blobs";
const CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
let server: S3rver;
let settings: S3BlobSettings;

before(async () => {
  server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: join(dir, "s3"), configureBuckets: [{ name: BUCKET }] });
  const { port } = await server.run();
  settings = { bucket: BUCKET, prefix: "blobs/", endpoint: `http://127.0.0.1:${port}`, region: "us-east-1", credentials: CREDENTIALS };
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The object under a key, read with a client of the test's own; null when there is none. */
async function objectAt(key: string): Promise<Buffer | null> {
  const client = new S3Client({ region: "us-east-1", endpoint: settings.endpoint, forcePathStyle: true, credentials: CREDENTIALS });
  try {
    const answer = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return Buffer.from(await answer.Body!.transformToByteArray());
  } catch (error) {
    if (error instanceof NoSuchKey) return null;
    throw error;
  } finally {
    client.destroy();
  }
}

test("put writes one object under prefix + key; get reads the bytes back in order; delete removes it (twice is fine)", async () => {
  const blobs = s3Blobs(settings);
  try {
    const chunks = [randomBytes(256 * 1024), Buffer.alloc(1000), randomBytes(7)];
    await blobs.put("b1", chunks);
    assert.deepEqual(await objectAt("blobs/b1"), Buffer.concat(chunks));
    const read: Uint8Array[] = [];
    for await (const part of blobs.get("b1", chunks.length)) read.push(part);
    assert.deepEqual(Buffer.concat(read), Buffer.concat(chunks));
    await blobs.delete(["b1", "never-written"]);
    await blobs.delete(["b1"]);
    assert.equal(await objectAt("blobs/b1"), null);
    await assert.rejects(async () => {
      for await (const _ of blobs.get("b1", 1));
    }, NoSuchKey);
  } finally {
    await blobs.close();
  }
});

test("the engine with --blob-store s3: the index stays in the job store (backend s3), the bytes go to the bucket, retention's sweep deletes them", async () => {
  const clock = new FakeClock("2026-03-02T10:00:00Z");
  const store = `sqlite:${join(dir, "engine.db")}`;
  const engine = await openEngine({
    store,
    clock,
    nodeId: "n",
    httpTargets: false,
    payloads: { inlineBytes: 1024, blobStore: { kind: "s3", ...settings } },
  });
  const look = await openStore(store);
  try {
    const payload = { text: randomBytes(300_000).toString("base64") };
    const created = await engine.service.createJob(ctx, { name: "s3", target: { type: "queue", pool: "p" }, payload, schedule: { delaySeconds: 0 } });
    const blobId = created.payloadRef!.blobId;
    assert.equal((await look.blobGet({ blobId }))?.backend, "s3");
    assert.deepEqual(await look.blobChunksGet({ blobId, first: 0, limit: 10 }), [], "no chunk in the job store");
    assert.equal((await objectAt(`blobs/${blobId}`))?.toString(), JSON.stringify(payload));
    const { leased } = await engine.executor.lease({ pool: "p", workerId: "w", max: 1, leaseMs: 30_000, waitMs: 0 });
    assert.deepEqual(await engine.service.getBlob(ctx, blobId), payload);
    await engine.executor.complete([{ executionId: leased[0]!.executionId, tenantId: "default", attempt: leased[0]!.attempt }]);

    clock.jump(31 * 24 * 3_600_000);
    await engine.retention.runOnce();
    assert.equal(await look.blobGet({ blobId }), null);
    assert.equal(await objectAt(`blobs/${blobId}`), null, "the object went with its job");
  } finally {
    await Promise.all([engine.stop(), look.close()]);
  }
});
