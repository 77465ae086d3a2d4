// The S3 blob backend (backend.ts): one object per blob, `<prefix><blobId>`,
// through @aws-sdk/client-s3 against AWS S3 or any S3-compatible server
// (an endpoint and path-style URLs). Loaded only when `--blob-store s3://…`
// asks for it. The object is written whole (one PUT of the chunks in order:
// a payload is at most --max-payload-bytes, far under a PUT's 5 GB) and read
// as a stream. Checksums are sent and checked only where S3 requires them,
// so servers that predate the SDK's default CRC32 checksums work too.

import { DeleteObjectsCommand, GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import type { BlobBackend } from "./backend.js";
import type { S3BlobSettings } from "./s3-settings.js";

/** DeleteObjects takes at most this many keys. */
const DELETE_BATCH = 1000;

export function s3Blobs(settings: S3BlobSettings): BlobBackend {
  const client = new S3Client({
    region: settings.region ?? "us-east-1",
    ...(settings.endpoint !== undefined ? { endpoint: settings.endpoint } : {}),
    forcePathStyle: settings.forcePathStyle ?? settings.endpoint !== undefined,
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const Bucket = settings.bucket;
  const keyOf = (key: string): string => `${settings.prefix ?? ""}${key}`;
  return {
    kind: "s3",
    async put(key, chunks) {
      const body = Buffer.concat(chunks);
      await client.send(new PutObjectCommand({ Bucket, Key: keyOf(key), Body: body, ContentLength: body.length, ContentType: "application/json" }));
    },
    async *get(key) {
      const answer = await client.send(new GetObjectCommand({ Bucket, Key: keyOf(key) }));
      const body = answer.Body as AsyncIterable<Uint8Array> | undefined;
      if (!body) return;
      yield* body;
    },
    async delete(keys) {
      for (let at = 0; at < keys.length; at += DELETE_BATCH) {
        const Objects = keys.slice(at, at + DELETE_BATCH).map((k) => ({ Key: keyOf(k) }));
        const answer = await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects, Quiet: true } }));
        const failed = (answer.Errors ?? []).filter((e) => e.Code !== "NoSuchKey");
        if (failed.length > 0) throw new Error(`S3 refused to delete ${failed.length} blobs: ${failed[0]?.Code} ${failed[0]?.Message ?? ""}`.trim());
      }
    },
    async close() {
      client.destroy();
    },
  };
}
