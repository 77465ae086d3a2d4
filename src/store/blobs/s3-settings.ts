// What the S3 blob backend (s3.ts) is configured with, and the `--blob-store`
// URL that names it, apart from the client so that checking flags loads no
// AWS SDK.

export interface S3BlobSettings {
  bucket: string;
  /** Prepended to every key (blob ids): "duetime/" keeps them under one folder. */
  prefix?: string;
  /** An S3-compatible server (MinIO, Ceph, R2, …): its URL; absent, AWS S3 of `region`. */
  endpoint?: string;
  /** Default "us-east-1". */
  region?: string;
  /** Path-style URLs (endpoint/bucket/key), which most S3-compatible servers need; default: true when an endpoint is given. */
  forcePathStyle?: boolean;
  /** Absent: the AWS SDK's default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, an instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/** `s3://BUCKET[/PREFIX]` → bucket and prefix (a prefix ends with "/"); null when the URL is not one. */
export function parseS3Url(url: string): Pick<S3BlobSettings, "bucket" | "prefix"> | null {
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
  if (!m) return null;
  const prefix = m[2] ?? "";
  return prefix === "" ? { bucket: m[1]! } : { bucket: m[1]!, prefix: prefix.endsWith("/") ? prefix : `${prefix}/` };
}
