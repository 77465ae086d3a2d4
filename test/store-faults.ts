// What the SQLite fault tests (a full disk, an I/O error) share: plain HTTP
// calls that keep the status and Retry-After, and the check after a crash
// that nothing answered 201 was lost and the file is sound.

import assert from "node:assert/strict";
import Database from "better-sqlite3";
import type { ServerProcess } from "./helpers.js";

export interface Reply {
  status: number;
  retryAfter: string | null;
  json: { jobId?: string; error?: { code: string; message: string; details?: { kind?: string } } };
}

export async function call(url: string, method = "GET", body?: unknown): Promise<Reply> {
  const res = await fetch(url, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await res.text();
  return { status: res.status, retryAfter: res.headers.get("retry-after"), json: text ? JSON.parse(text) : {} };
}

/** A server started afresh on `db` answers every job in `accepted`, then the file passes SQLite's integrity check. */
export async function assertAcceptedSurvive(start: () => Promise<ServerProcess>, db: string, accepted: readonly string[]): Promise<void> {
  const server = await start();
  try {
    for (const id of accepted) assert.equal((await call(`${server.url}/v1/jobs/${id}`)).status, 200, `job ${id} answered 201 and is gone`);
  } finally {
    await server.stop("SIGKILL");
  }
  const check = new Database(db, { readonly: true });
  try {
    assert.equal(check.pragma("integrity_check", { simple: true }), "ok");
    assert.ok((check.prepare("SELECT count(*) AS n FROM jobs").get() as { n: number }).n >= accepted.length);
  } finally {
    check.close();
  }
}
