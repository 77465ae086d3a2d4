// The store contract, in part (index.ts runs the parts in order).
// Payload blobs (store.ts, "payload blobs"): the index of blobs kept by
// reference and the chunks of the job-store backend, their states, the
// sweep, and retention marking a removed job's blobs gone.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe } from "node:test";

import { newId } from "../../src/core/ids.js";
import { BLOB_CHUNK_BYTES } from "../../src/core/payload-refs.js";
import type { BlobRecord, Store } from "../../src/store/store.js";
import { T0, SECOND, MINUTE, HOUR, newJob, cronJob, createOne, acquireAll, runningExecution, type ContractTests } from "./support.js";

/** A blob begun (writing) at `at` for a job of tenant t1 (the job need not exist). */
async function begin(store: Store, at: number, o: { jobId?: string; tenantId?: string } = {}): Promise<string> {
  const blobId = newId(at);
  await store.blobBegin({ blob: { blobId, tenantId: o.tenantId ?? "t1", jobId: o.jobId ?? newId(at), backend: "store", createdAt: at } });
  return blobId;
}

/** A blob written whole and sealed: chunks put, then sealed with their count. */
async function sealed(store: Store, at: number, chunks: Uint8Array[], o: { jobId?: string; tenantId?: string } = {}): Promise<string> {
  const blobId = await begin(store, at, o);
  await store.blobChunksPut({ blobId, first: 0, chunks });
  const bytes = chunks.reduce((n, c) => n + c.length, 0);
  assert.equal(await store.blobSeal({ blobId, bytes, sha256: "f".repeat(64), chunks: chunks.length }), true);
  return blobId;
}

async function allChunks(store: Store, blobId: string): Promise<Buffer> {
  const out: Uint8Array[] = [];
  for (let first = 0; ; ) {
    const page = await store.blobChunksGet({ blobId, first, limit: 3 });
    out.push(...page);
    first += page.length;
    if (page.length < 3) return Buffer.concat(out);
  }
}

const idsOf = (blobs: BlobRecord[]): string[] => blobs.map((b) => b.blobId).sort();

export function blobsContract({ storeTest }: ContractTests): void {
  describe("payload blobs", () => {
    storeTest("a blob's chunks come back as written, in order, whole chunks of any bytes", async (store) => {
      const chunks = [randomBytes(BLOB_CHUNK_BYTES), Buffer.alloc(BLOB_CHUNK_BYTES), randomBytes(1000), Buffer.from([0, 255, 0])];
      const blobId = await sealed(store, T0, chunks);
      assert.deepEqual(await allChunks(store, blobId), Buffer.concat(chunks));
      assert.deepEqual(
        (await store.blobChunksGet({ blobId, first: 2, limit: 10 })).map((c) => Buffer.from(c)),
        chunks.slice(2),
        "from `first` on",
      );
      // Chunks put in several calls (the backend writes a few per transaction) line up.
      const split = await begin(store, T0);
      await store.blobChunksPut({ blobId: split, first: 0, chunks: chunks.slice(0, 2) });
      await store.blobChunksPut({ blobId: split, first: 2, chunks: chunks.slice(2) });
      assert.deepEqual(await allChunks(store, split), Buffer.concat(chunks));
    });

    storeTest("blobGet answers only sealed blobs (ready or attached), of the tenant asked for; a writing one is never read", async (store) => {
      const blobId = await begin(store, T0, { tenantId: "t1" });
      await store.blobChunksPut({ blobId, first: 0, chunks: [Buffer.from("half")] });
      assert.equal(await store.blobGet({ blobId }), null, "writing: not readable");
      assert.equal(await store.blobSeal({ blobId, bytes: 4, sha256: "a".repeat(64), chunks: 1 }), true);
      const blob = await store.blobGet({ blobId, tenantId: "t1" });
      assert.deepEqual(blob && [blob.state, blob.bytes, blob.sha256, blob.chunks, blob.tenantId, blob.backend, blob.createdAt], [
        "ready",
        4,
        "a".repeat(64),
        1,
        "t1",
        "store",
        T0,
      ]);
      assert.equal(await store.blobGet({ blobId, tenantId: "t2" }), null, "another tenant's: not found");
      assert.ok(await store.blobGet({ blobId }), "no tenant given: any tenant's (a platform key)");
      assert.equal(await store.blobSeal({ blobId, bytes: 4, sha256: "b".repeat(64), chunks: 1 }), false, "sealed once");
      await store.blobAttach({ blobIds: [blobId] });
      assert.equal((await store.blobGet({ blobId }))?.state, "attached");
      assert.equal(await store.blobGet({ blobId: newId(T0) }), null, "unknown");
    });

    storeTest("blobSweep answers what a cut-off create left once older than `before`, and attaches a ready blob whose job exists", async (store) => {
      const nj = newJob();
      await createOne(store, nj);
      const writingOld = await begin(store, T0);
      const orphanOld = await sealed(store, T0 + SECOND, [Buffer.from("x")]);
      const ownedOld = await sealed(store, T0 + 2 * SECOND, [Buffer.from("y")], { jobId: nj.job.jobId });
      const writingNew = await begin(store, T0 + HOUR);
      const orphanNew = await sealed(store, T0 + HOUR, [Buffer.from("z")]);
      const attached = await sealed(store, T0, [Buffer.from("w")]);
      await store.blobAttach({ blobIds: [attached] });

      const due = await store.blobSweep({ before: T0 + MINUTE, limit: 10 });
      assert.deepEqual(idsOf(due), [writingOld, orphanOld].sort());
      assert.deepEqual(
        due.map((b) => [b.blobId, b.state]),
        [
          [writingOld, "writing"],
          [orphanOld, "ready"],
        ],
        "oldest first",
      );
      assert.equal((await store.blobGet({ blobId: ownedOld }))?.state, "attached", "its job was created: attached, not swept");
      assert.equal((await store.blobGet({ blobId: orphanNew }))?.state, "ready", "within the grace: left alone");
      assert.deepEqual(idsOf(await store.blobSweep({ before: T0 + 2 * HOUR, limit: 10 })), [writingOld, orphanOld, writingNew, orphanNew].sort());
      assert.deepEqual(idsOf(await store.blobSweep({ before: T0 + MINUTE, limit: 1 })), [writingOld], "at most `limit`");
      assert.equal((await store.blobGet({ blobId: attached }))?.state, "attached", "an attached blob is never swept");
    });

    storeTest("blobRemove and blobChunksDelete remove a blob whole; the sweep no longer sees it", async (store) => {
      const keep = await sealed(store, T0, [Buffer.from("keep")]);
      const chunks = [randomBytes(100), randomBytes(100)];
      const blobId = await sealed(store, T0, chunks);
      await store.blobChunksDelete({ blobIds: [blobId] });
      await store.blobRemove({ blobIds: [blobId] });
      assert.equal(await store.blobGet({ blobId }), null);
      assert.deepEqual(await store.blobChunksGet({ blobId, first: 0, limit: 10 }), []);
      assert.deepEqual(idsOf(await store.blobSweep({ before: T0 + MINUTE, limit: 10 })), [keep]);
      assert.deepEqual(Buffer.concat(await store.blobChunksGet({ blobId: keep, first: 0, limit: 10 })).toString(), "keep", "others untouched");
      await store.blobRemove({ blobIds: [] });
      await store.blobChunksDelete({ blobIds: [] });
    });

    storeTest("retention: a job removed takes its blobs with it (gone at once, whatever their age; swept next)", async (store) => {
      const epochs = await acquireAll(store, "n1");
      const cancelled = cronJob({ at: T0 + 1000 * HOUR });
      await createOne(store, cancelled);
      const mine = await sealed(store, T0, [Buffer.from("a")], { jobId: cancelled.job.jobId });
      const again = await sealed(store, T0, [Buffer.from("b")], { jobId: cancelled.job.jobId });
      await store.blobAttach({ blobIds: [mine, again] });
      assert.ok(await store.jobTransition({ tenantId: "t1", jobId: cancelled.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 }));
      const live = await runningExecution(store, epochs, { target: { type: "queue", pool: "p-live" } });
      const theirs = await sealed(store, T0, [Buffer.from("c")], { jobId: live.job.jobId });
      await store.blobAttach({ blobIds: [theirs] });

      const rows = await store.retentionExpired({ kind: "jobs", before: T0 + MINUTE, limit: 10 });
      assert.deepEqual(await store.blobSweep({ before: T0 - HOUR, limit: 10 }), [], "reading what is due changes nothing");
      assert.equal((await store.retentionPurge({ kind: "jobs", before: T0 + MINUTE, limit: 10, only: rows })).deleted, 1);
      const due = await store.blobSweep({ before: T0 - HOUR, limit: 10 });
      assert.deepEqual(idsOf(due), [mine, again].sort());
      assert.ok(due.every((b) => b.state === "gone"));
      assert.equal(await store.blobGet({ blobId: mine }), null, "gone: not readable");
      assert.equal((await store.blobGet({ blobId: theirs }))?.state, "attached", "a live job's blob stays");

      // Without `only` too.
      const other = cronJob({ at: T0 + 1000 * HOUR });
      await createOne(store, other);
      const its = await sealed(store, T0, [Buffer.from("d")], { jobId: other.job.jobId });
      await store.blobAttach({ blobIds: [its] });
      assert.ok(await store.jobTransition({ tenantId: "t1", jobId: other.job.jobId, fromVersion: 1, state: "CANCELLED", due: null, now: T0 }));
      assert.equal((await store.retentionPurge({ kind: "jobs", before: T0 + MINUTE, limit: 10 })).deleted, 1);
      assert.ok(idsOf(await store.blobSweep({ before: T0 - HOUR, limit: 10 })).includes(its));
    });
  });
}
