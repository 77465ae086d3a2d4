// Payload blobs for PostgreSQL (store.ts "payload blobs"; migration 12): the
// index in `blobs`, the bytes of the "store" backend in `blob_chunks`, one
// bytea row per chunk of core/payload-refs.ts BLOB_CHUNK_BYTES, so no row or
// statement holds a whole payload. Every statement has an index to go by
// (the pool runs with enable_seqscan off): the primary keys, blobs_by_job,
// and the partial blobs_unattached for the sweep.

import type { BlobRecord } from "../store.js";
import { BLOB_COLUMNS as COLUMNS, toBlob } from "../rows.js";
import { type Db, rows } from "./db.js";

export async function beginBlob(db: Db, b: Pick<BlobRecord, "blobId" | "tenantId" | "jobId" | "backend" | "createdAt">): Promise<void> {
  await db.query("INSERT INTO blobs (blob_id, tenant_id, job_id, backend, state, created_at) VALUES ($1, $2, $3, $4, 'writing', $5)", [
    b.blobId,
    b.tenantId,
    b.jobId,
    b.backend,
    b.createdAt,
  ]);
}

/** One statement per chunk: a statement carries at most one chunk's bytes. */
export async function putChunks(db: Db, p: { blobId: string; first: number; chunks: readonly Uint8Array[] }): Promise<void> {
  for (const [i, chunk] of p.chunks.entries()) {
    await db.query({
      name: "blob-chunk-put",
      text: `INSERT INTO blob_chunks (blob_id, seq, data) VALUES ($1, $2, $3)
             ON CONFLICT (blob_id, seq) DO UPDATE SET data = excluded.data`,
      values: [p.blobId, p.first + i, Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)],
    });
  }
}

export async function getChunks(db: Db, p: { blobId: string; first: number; limit: number }): Promise<Uint8Array[]> {
  const found = await rows<{ data: Buffer }>(
    db,
    "SELECT data FROM blob_chunks WHERE blob_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
    [p.blobId, p.first, p.limit],
    "blob-chunks-get",
  );
  return found.map((r) => r.data);
}

export async function deleteChunks(db: Db, blobIds: readonly string[]): Promise<void> {
  if (blobIds.length > 0) await db.query("DELETE FROM blob_chunks WHERE blob_id = ANY($1::text[])", [blobIds]);
}

export async function sealBlob(db: Db, p: { blobId: string; bytes: number; sha256: string; chunks: number }): Promise<boolean> {
  const result = await db.query("UPDATE blobs SET state = 'ready', bytes = $2, sha256 = $3, chunks = $4 WHERE blob_id = $1 AND state = 'writing'", [
    p.blobId,
    p.bytes,
    p.sha256,
    p.chunks,
  ]);
  return result.rowCount === 1;
}

export async function attachBlobs(db: Db, blobIds: readonly string[]): Promise<void> {
  if (blobIds.length > 0) await db.query("UPDATE blobs SET state = 'attached' WHERE state = 'ready' AND blob_id = ANY($1::text[])", [blobIds]);
}

export async function getBlob(db: Db, p: { blobId: string; tenantId?: string }): Promise<BlobRecord | null> {
  const [row] = await rows(db, `SELECT ${COLUMNS} FROM blobs WHERE blob_id = $1 AND state IN ('ready', 'attached')`, [p.blobId], "blob-get");
  if (!row || (p.tenantId !== undefined && row.tenant_id !== p.tenantId)) return null;
  return toBlob(row);
}

/** The blobs not attached are few (in-flight creates, what crashes and retention left): the partial index holds only them. */
export async function sweepBlobs(db: Db, p: { before: number; limit: number }): Promise<BlobRecord[]> {
  await db.query(
    `UPDATE blobs b SET state = 'attached'
     WHERE b.blob_id IN (SELECT blob_id FROM blobs WHERE state <> 'attached' AND created_at < $1 ORDER BY created_at LIMIT $2)
       AND b.state = 'ready' AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = b.job_id)`,
    [p.before, p.limit],
  );
  const found = await rows(
    db,
    `SELECT ${COLUMNS} FROM blobs WHERE state <> 'attached' AND (state = 'gone' OR created_at < $1) ORDER BY created_at LIMIT $2`,
    [p.before, p.limit],
  );
  return found.map(toBlob);
}

export async function removeBlobs(db: Db, blobIds: readonly string[]): Promise<void> {
  if (blobIds.length > 0) await db.query("DELETE FROM blobs WHERE blob_id = ANY($1::text[])", [blobIds]);
}
