// Payload blobs for SQLite (store.ts "payload blobs"; migration 18): the
// index in `blobs`, the bytes of the "store" backend in `blob_chunks`, one
// row per chunk of core/payload-refs.ts BLOB_CHUNK_BYTES, so no row or
// statement holds a whole payload. Each function runs inside the caller's
// transaction (index.ts picks which kind).

import type { BlobRecord } from "../store.js";
import { BLOB_COLUMNS as COLUMNS, toBlob } from "../rows.js";
import type { Query, Row } from "./db.js";

export function beginBlob(q: Query, b: Pick<BlobRecord, "blobId" | "tenantId" | "jobId" | "backend" | "createdAt">): void {
  q(
    `INSERT INTO blobs (blob_id, tenant_id, job_id, backend, state, created_at)
     VALUES (@blobId, @tenantId, @jobId, @backend, 'writing', @createdAt)`,
  ).run(b);
}

export function putChunks(q: Query, p: { blobId: string; first: number; chunks: readonly Uint8Array[] }): void {
  const insert = q("INSERT OR REPLACE INTO blob_chunks (blob_id, seq, data) VALUES (?, ?, ?)");
  for (const [i, chunk] of p.chunks.entries()) insert.run(p.blobId, p.first + i, chunk);
}

export function getChunks(q: Query, p: { blobId: string; first: number; limit: number }): Uint8Array[] {
  const rows = q("SELECT data FROM blob_chunks WHERE blob_id = ? AND seq >= ? ORDER BY seq LIMIT ?").all(p.blobId, p.first, p.limit) as {
    data: Buffer;
  }[];
  return rows.map((r) => r.data);
}

export function deleteChunks(q: Query, blobIds: readonly string[]): void {
  if (blobIds.length > 0) q("DELETE FROM blob_chunks WHERE blob_id IN (SELECT value FROM json_each(?))").run(JSON.stringify(blobIds));
}

export function sealBlob(q: Query, p: { blobId: string; bytes: number; sha256: string; chunks: number }): boolean {
  return (
    q("UPDATE blobs SET state = 'ready', bytes = @bytes, sha256 = @sha256, chunks = @chunks WHERE blob_id = @blobId AND state = 'writing'").run(p)
      .changes === 1
  );
}

export function attachBlobs(q: Query, blobIds: readonly string[]): void {
  if (blobIds.length > 0)
    q("UPDATE blobs SET state = 'attached' WHERE state = 'ready' AND blob_id IN (SELECT value FROM json_each(?))").run(JSON.stringify(blobIds));
}

export function getBlob(q: Query, p: { blobId: string; tenantId?: string }): BlobRecord | null {
  const row = q(`SELECT ${COLUMNS} FROM blobs WHERE blob_id = ? AND state IN ('ready', 'attached')`).get(p.blobId) as Row | undefined;
  if (!row || (p.tenantId !== undefined && row.tenant_id !== p.tenantId)) return null;
  return toBlob(row);
}

/** The blobs not attached are few (in-flight creates, what crashes and retention left): a partial index holds only them. */
export function sweepBlobs(q: Query, p: { before: number; limit: number }): BlobRecord[] {
  q(
    `UPDATE blobs SET state = 'attached'
     WHERE blob_id IN (SELECT blob_id FROM blobs WHERE state <> 'attached' AND created_at < @before ORDER BY created_at LIMIT @limit)
       AND state = 'ready' AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = blobs.job_id)`,
  ).run(p);
  const rows = q(
    `SELECT ${COLUMNS} FROM blobs
     WHERE state <> 'attached' AND (state = 'gone' OR created_at < @before)
     ORDER BY created_at LIMIT @limit`,
  ).all(p) as Row[];
  return rows.map(toBlob);
}

export function removeBlobs(q: Query, blobIds: readonly string[]): void {
  if (blobIds.length > 0) q("DELETE FROM blobs WHERE blob_id IN (SELECT value FROM json_each(?))").run(JSON.stringify(blobIds));
}
