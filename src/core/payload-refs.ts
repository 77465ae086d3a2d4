// Payloads kept by reference (docs/design-notes.md "Large payloads by
// reference"): a payload larger than the inline limit is written once to a
// blob store, and the job (and every execution copied from it) holds a small
// marker in its payload column instead: {"$duetime:blob": {blobId, bytes,
// sha256}}. The marker never reaches the API: the wire shows `payload: null`
// and `payloadRef` (payloadRefOf), and a user's payload may not use the key
// (reservedKeyProblem), so a stored payload is a marker exactly when it has
// this shape. Pure: the limits' rules live here, the writing in engine/payload-blobs.ts.

/** The one key of a stored payload that names a blob instead of being the payload. */
export const PAYLOAD_REF_KEY = "$duetime:blob";

/** 256 KiB: a blob is stored in chunks of this size, so no row or statement holds a whole large payload. */
export const BLOB_CHUNK_BYTES = 256 * 1024;

/** What the marker names: the blob, its size in bytes of JSON (UTF-8) and its SHA-256 (hex). */
export interface StoredRef {
  blobId: string;
  bytes: number;
  sha256: string;
}

/** The marker a job stores in place of a payload kept by reference. */
export function markerOf(ref: StoredRef): Record<string, StoredRef> {
  return { [PAYLOAD_REF_KEY]: { blobId: ref.blobId, bytes: ref.bytes, sha256: ref.sha256 } };
}

/** The reference a stored payload holds, or null when it is the payload itself. */
export function storedRefOf(payload: unknown): StoredRef | null {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return null;
  const keys = Object.keys(payload);
  if (keys.length !== 1 || keys[0] !== PAYLOAD_REF_KEY) return null;
  const ref = (payload as Record<string, unknown>)[PAYLOAD_REF_KEY] as Partial<StoredRef> | null;
  if (typeof ref !== "object" || ref === null) return null;
  const { blobId, bytes, sha256 } = ref;
  return typeof blobId === "string" && typeof bytes === "number" && typeof sha256 === "string" ? { blobId, bytes, sha256 } : null;
}

/** A user's payload may not hold the marker's key at its top level (it would read back as a reference). */
export function reservedKeyProblem(payload: unknown): string | null {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return null;
  return Object.hasOwn(payload, PAYLOAD_REF_KEY) ? `must not have the key ${JSON.stringify(PAYLOAD_REF_KEY)}: duetime reserves it` : null;
}

/** The chunks of a payload's JSON text, BLOB_CHUNK_BYTES each (the last one shorter). */
export function chunksOf(bytes: Uint8Array, size = BLOB_CHUNK_BYTES): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, Math.min(bytes.length, at + size)));
  return chunks;
}

/** The three payload limits of a server, in bytes of JSON (UTF-8). */
export interface PayloadLimits {
  /** Payloads up to this are stored in the job's row; larger ones by reference. */
  inlineBytes: number;
  /** The largest payload accepted at all (400 over it). */
  maxBytes: number;
  /** A broker target's payload is published whole, never by reference: at most this (the request body limit). */
  brokerBytes: number;
}

/** The defaults: inline up to the default body limit (1 MiB), as before blobs existed; by reference up to 16 MiB. */
export const DEFAULT_PAYLOAD_LIMITS: PayloadLimits = { inlineBytes: 1024 * 1024, maxBytes: 16 * 1024 * 1024, brokerBytes: 1024 * 1024 };

/** Where a payload of this size goes for this kind of target: inline, by reference, or refused with why. */
export function payloadPlacement(
  bytes: number,
  targetType: string,
  limits: PayloadLimits,
): { place: "inline" } | { place: "blob" } | { place: "refused"; limitBytes: number; message: string } {
  if (bytes > limits.maxBytes) {
    return {
      place: "refused",
      limitBytes: limits.maxBytes,
      message: `is ${bytes} bytes of JSON, over the server's limit of ${limits.maxBytes} (--max-payload-bytes)`,
    };
  }
  if (bytes <= limits.inlineBytes) return { place: "inline" };
  if (targetType === "nats" || targetType === "amqp") {
    if (bytes <= limits.brokerBytes) return { place: "inline" };
    return {
      place: "refused",
      limitBytes: limits.brokerBytes,
      message: `is ${bytes} bytes of JSON; a ${targetType} target publishes its payload whole, in one message, so at most ${limits.brokerBytes} (--body-limit)`,
    };
  }
  return { place: "blob" };
}
