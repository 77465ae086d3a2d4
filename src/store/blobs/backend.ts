// The port of the bytes of a payload kept by reference (docs/design-notes.md
// "Large payloads by reference"): put, get and delete by key, chunk by chunk,
// and nothing else. The index of the blobs (what exists, whose it is, whether
// it is whole) is always the job store's (store.ts "payload blobs"); a
// backend only holds bytes. Two implementations: the job store itself
// (job-store.ts, the default) and an S3-compatible bucket (s3.ts).

export type BlobBackendKind = "store" | "s3";

export interface BlobBackend {
  readonly kind: BlobBackendKind;
  /** Writes a blob's bytes under key, chunk after chunk (a crash may leave part of them: the index says it is not whole). */
  put(key: string, chunks: readonly Uint8Array[]): Promise<void>;
  /** A blob's bytes in order: `chunks` chunks of it, as put wrote them (a backend that keeps one object may yield other slices). */
  get(key: string, chunks: number): AsyncIterable<Uint8Array>;
  /** Deletes these blobs' bytes; a key with nothing under it is fine. */
  delete(keys: readonly string[]): Promise<void>;
  close(): Promise<void>;
}
