// Payloads kept by reference (docs/design-notes.md "Large payloads by
// reference"): the engine's side of core/payload-refs.ts. A create (or a
// PATCH) whose payload is over the inline limit writes it here first, and
// the job stores the marker; whoever delivers the payload reads it back
// (the HTTP-target runner, GET /v1/blobs/{blobId} for workers). The index is
// the job store's; the bytes are the backend's (store/blobs/). The sweep
// (run by retention) removes what a crash, a failed create or retention left.
//
// A blob is written in four steps, each a commit: begun (the index row,
// writing), its chunks, sealed (ready: whole, with its size and digest),
// attached once its job exists. Nothing reads a blob before it is sealed,
// so a create cut off half way leaves nothing anyone can see.

import { createHash } from "node:crypto";
import type { PayloadRef } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { invalidArgument, notFound } from "../core/errors.js";
import { isJobId, newId } from "../core/ids.js";
import {
  chunksOf,
  DEFAULT_PAYLOAD_LIMITS,
  markerOf,
  type PayloadLimits,
  payloadPlacement,
  type StoredRef,
  storedRefOf,
} from "../core/payload-refs.js";
import type { BlobBackend } from "../store/blobs/backend.js";
import type { S3BlobSettings } from "../store/blobs/s3-settings.js";
import { jobStoreBlobs } from "../store/blobs/job-store.js";
import type { BlobRecord, Store } from "../store/store.js";
import type { EngineEvents } from "./events.js";

/** A blob not attached after this long was cut off (a create runs within its 10 s deadline): the sweep removes it. */
export const DEFAULT_ORPHAN_GRACE_MS = 60 * 60_000;
/** Blobs removed per sweep round; a sweep runs rounds until one comes back short. */
const SWEEP_BATCH = 200;
const SWEEP_ROUNDS = 20;

/** Where new blobs' bytes go: the job store (default), or an S3-compatible bucket (store/blobs/s3.ts). */
export type BlobStoreSettings = { kind: "store" } | ({ kind: "s3" } & S3BlobSettings);

/** Payload settings as EngineOptions takes them; limits default to core/payload-refs.ts DEFAULT_PAYLOAD_LIMITS. */
export interface PayloadOptions extends Partial<PayloadLimits> {
  blobStore?: BlobStoreSettings;
  /** How long a blob may stay unattached before the sweep removes it (default an hour). */
  orphanGraceMs?: number;
}

/** The payload limits with defaults filled in, checked; throws RangeError naming the field. */
export function payloadLimits(o: Partial<PayloadLimits>): PayloadLimits {
  const limits = { ...DEFAULT_PAYLOAD_LIMITS, ...definedOnly(o) };
  for (const [field, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`payloads.${field}: a positive number of bytes, got ${value}`);
  }
  return limits;
}

const definedOnly = (o: Partial<PayloadLimits>): Partial<PayloadLimits> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** The backend new blobs go to; the S3 client is loaded only when asked for. */
export async function openBlobBackend(settings: BlobStoreSettings | undefined): Promise<BlobBackend | undefined> {
  if (settings === undefined || settings.kind === "store") return undefined;
  const { s3Blobs } = await import("../store/blobs/s3.js");
  const { kind: _kind, ...s3 } = settings;
  return s3Blobs(s3);
}

export interface PayloadBlobsOptions {
  store: Store;
  clock: Clock;
  events: EngineEvents;
  limits: PayloadLimits;
  /** Where new blobs' bytes go (default: the job store); blobs written before keep the backend they were written to. */
  backend?: BlobBackend;
  orphanGraceMs?: number;
}

/** A payload bound for a blob: its JSON text's bytes, checked against the limits. */
export interface PlannedBlob {
  bytes: Uint8Array;
}

export class PayloadBlobs {
  readonly limits: PayloadLimits;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly backend: BlobBackend;
  private readonly backends: Map<string, BlobBackend>;
  private readonly graceMs: number;

  constructor(private readonly o: PayloadBlobsOptions) {
    this.store = o.store;
    this.clock = o.clock;
    this.limits = o.limits;
    const own = jobStoreBlobs(o.store);
    this.backend = o.backend ?? own;
    this.backends = new Map<string, BlobBackend>([
      ["store", own],
      [this.backend.kind, this.backend],
    ]);
    this.graceMs = o.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS;
  }

  /**
   * Where this payload goes (core/payload-refs.ts payloadPlacement): null
   * when it stays inline, the bytes to write when it goes to a blob; a
   * payload over a limit is 400 INVALID_ARGUMENT naming the field and the limit.
   */
  plan(payload: unknown, targetType: string, field: string): PlannedBlob | null {
    if (payload === undefined || payload === null || storedRefOf(payload) !== null) return null;
    const text = JSON.stringify(payload);
    // Characters count at most 3 bytes each: most payloads are decided without encoding them.
    if (text.length * 3 <= this.limits.inlineBytes) return null;
    const bytes = Buffer.from(text);
    const placed = payloadPlacement(bytes.length, targetType, this.limits);
    if (placed.place === "inline") return null;
    if (placed.place === "refused") throw invalidArgument(field, placed.message, { limitBytes: placed.limitBytes, bytes: bytes.length });
    return { bytes };
  }

  /** Writes a planned payload as a sealed blob of this job; answers the marker the job stores. */
  async write(p: { tenantId: string; jobId: string; planned: PlannedBlob }): Promise<{ blobId: string; marker: Record<string, StoredRef> }> {
    const blobId = newId(this.clock.now());
    const { bytes } = p.planned;
    await this.store.blobBegin({ blob: { blobId, tenantId: p.tenantId, jobId: p.jobId, backend: this.backend.kind, createdAt: this.clock.now() } });
    try {
      const chunks = chunksOf(bytes);
      await this.backend.put(blobId, chunks);
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      if (!(await this.store.blobSeal({ blobId, bytes: bytes.length, sha256, chunks: chunks.length }))) {
        throw new Error(`blob ${blobId} was no longer being written when it was sealed`);
      }
      return { blobId, marker: markerOf({ blobId, bytes: bytes.length, sha256 }) };
    } catch (error) {
      await this.discard([blobId]);
      throw error;
    }
  }

  /** Their jobs exist now: the sweep leaves them alone. */
  async attach(blobIds: readonly string[]): Promise<void> {
    if (blobIds.length > 0) await this.store.blobAttach({ blobIds });
  }

  /** Removes blobs no job took (an idempotent repeat, a refused or failed create); a failure is left to the sweep. */
  async discard(blobIds: readonly string[]): Promise<void> {
    if (blobIds.length === 0) return;
    try {
      await this.backend.delete(blobIds);
      await this.store.blobRemove({ blobIds });
    } catch (error) {
      this.o.events.emit("error", { where: "payload-blobs", error });
    }
  }

  /** The payload's JSON text as it was created, for a delivery (the HTTP-target runner's body). */
  async text(ref: StoredRef): Promise<string> {
    const blob = await this.store.blobGet({ blobId: ref.blobId });
    if (!blob) throw new Error(`the payload of blob ${ref.blobId} is missing`);
    return (await this.bytesOf(blob)).toString("utf8");
  }

  /** GET /v1/blobs/{blobId}: the payload, of the caller's tenant (any tenant's for undefined); 404 otherwise. */
  async payload(tenantId: string | undefined, blobId: string): Promise<unknown> {
    const blob = isJobId(blobId) ? await this.store.blobGet({ blobId, ...(tenantId !== undefined ? { tenantId } : {}) }) : null;
    if (!blob) throw notFound("blob", blobId);
    return JSON.parse((await this.bytesOf(blob)).toString("utf8"));
  }

  /**
   * One sweep: removes the blobs retention marked gone, and those older than
   * the grace still being written or never attached (their create was cut
   * off), bytes first, then their index rows. Answers how many went.
   */
  async sweep(): Promise<number> {
    let removed = 0;
    for (let round = 0; round < SWEEP_ROUNDS; round++) {
      const due = await this.store.blobSweep({ before: this.clock.now() - this.graceMs, limit: SWEEP_BATCH });
      const removable = due.filter((b) => this.backends.has(b.backend));
      for (const [kind, backend] of this.backends) {
        const keys = removable.filter((b) => b.backend === kind).map((b) => b.blobId);
        if (keys.length > 0) await backend.delete(keys);
      }
      if (removable.length > 0) await this.store.blobRemove({ blobIds: removable.map((b) => b.blobId) });
      removed += removable.length;
      if (due.length < SWEEP_BATCH || removable.length === 0) break;
    }
    return removed;
  }

  async close(): Promise<void> {
    await Promise.all([...new Set(this.backends.values())].map((b) => b.close()));
  }

  /** A sealed blob's bytes, checked whole against its index row. */
  private async bytesOf(blob: BlobRecord): Promise<Buffer> {
    const backend = this.backends.get(blob.backend);
    if (!backend) throw new Error(`blob ${blob.blobId} is kept in a ${blob.backend} backend this server was not given (--blob-store)`);
    const parts: Uint8Array[] = [];
    for await (const chunk of backend.get(blob.blobId, blob.chunks ?? 0)) parts.push(chunk);
    const bytes = Buffer.concat(parts);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    if (bytes.length !== blob.bytes || sha256 !== blob.sha256) {
      throw new Error(
        `blob ${blob.blobId} is damaged: ${bytes.length} bytes (sha256 ${sha256}) where ${blob.bytes} (sha256 ${blob.sha256}) were written`,
      );
    }
    return bytes;
  }
}

/** How a stored payload goes on the wire: itself, or null with the reference a worker fetches (GET /v1/blobs/{blobId}). */
export function wirePayload(stored: unknown): { payload: unknown; payloadRef?: PayloadRef } {
  const ref = storedRefOf(stored);
  if (!ref) return { payload: stored };
  return { payload: null, payloadRef: { ...ref, href: `/v1/blobs/${ref.blobId}` } };
}
