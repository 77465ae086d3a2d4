// The default blob backend: the job store itself (SQLite or PostgreSQL), in
// its blob_chunks table, one row per chunk. Chunks go a few per transaction,
// with a turn of the event loop between: SQLite answers synchronously and
// has one writer, so a 16 MiB payload in one transaction would hold every
// lease and dispatch behind it for the whole write.

import type { Store } from "../store.js";
import type { BlobBackend } from "./backend.js";

/** Chunks per transaction: 2 MiB of 256 KiB chunks. */
export const CHUNKS_PER_WRITE = 8;
/** Chunks per read. */
const CHUNKS_PER_READ = 8;

export function jobStoreBlobs(store: Store): BlobBackend {
  return {
    kind: "store",
    async put(key, chunks) {
      for (let first = 0; first < chunks.length; first += CHUNKS_PER_WRITE) {
        if (first > 0) await new Promise<void>((resolve) => setImmediate(resolve));
        await store.blobChunksPut({ blobId: key, first, chunks: chunks.slice(first, first + CHUNKS_PER_WRITE) });
      }
    },
    async *get(key, chunks) {
      for (let first = 0; first < chunks; first += CHUNKS_PER_READ) {
        const page = await store.blobChunksGet({ blobId: key, first, limit: Math.min(CHUNKS_PER_READ, chunks - first) });
        yield* page;
        if (page.length < Math.min(CHUNKS_PER_READ, chunks - first)) return;
      }
    },
    async delete(keys) {
      await store.blobChunksDelete({ blobIds: keys });
    },
    async close() {},
  };
}
