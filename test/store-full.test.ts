// A full disk under a real `duetime serve`: the database lives on a 4 MiB
// tmpfs, a filler file takes most of it, and jobs are created until SQLite
// answers SQLITE_FULL. Refused creates answer 503 STORE_UNAVAILABLE (never
// 500), /readyz turns not ready while /healthz stays up, the process lives
// on; once the filler is gone the node is ready again on its own and takes
// writes; after a SIGKILL every job answered 201 is still there, and the
// file passes SQLite's integrity check.
//
// Mounting needs root (as here and in CI). Without it, the test runs the
// server under a file-size limit (ulimit -f) instead: the database and its
// WAL cannot grow past it, and writes fail with EFBIG (SQLITE_IOERR), until
// the limit is lifted with prlimit.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statfsSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { spawnServer, waitFor, type ServerProcess } from "./helpers.js";
import { assertAcceptedSurvive, call, type Reply } from "./store-faults.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-full-"));
const asRoot = process.getuid?.() === 0;
if (asRoot) mountTmpfs(dir, "4m");
after(() => {
  if (asRoot) spawnSync("umount", [dir]);
  rmSync(dir, { recursive: true, force: true });
});

function mountTmpfs(at: string, size: string): void {
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", at], { encoding: "utf8" });
  assert.equal(r.status, 0, `mount a tmpfs: ${r.stderr}`);
}

const db = join(dir, "duetime.db");
const filler = join(dir, "filler");

const spec = (i: number) => ({
  name: `full-${i}`,
  target: { type: "queue", pool: "full" },
  payload: { i, pad: "x".repeat(2000) },
  schedule: { delaySeconds: 3600 },
});

/** Creates jobs until one is refused, keeping the ids answered 201; every answer is 201 or 503, never anything else. */
async function createUntilRefused(url: string, accepted: string[]): Promise<Reply> {
  for (let i = accepted.length; i < 5_000; i++) {
    const r = await call(`${url}/v1/jobs`, "POST", spec(i));
    if (r.status !== 201) return r;
    accepted.push(r.json.jobId!);
  }
  throw new Error("the store never filled up");
}

/**
 * Fills the store until writes fail for good. On the tmpfs the first refusal
 * is it. Under a file-size limit a refusal can be undone by the readiness
 * probe's checkpoint (the WAL moves into a database file that still has room),
 * so refusals go on until /readyz agrees.
 */
async function fill(url: string, accepted: string[]): Promise<Reply> {
  for (;;) {
    const refused = await createUntilRefused(url, accepted);
    if (asRoot || refused.status !== 503 || (await call(`${url}/readyz`)).status === 503) return refused;
  }
}

/** The database's files and their sizes, for the log: the WAL holds what the checkpoint has not moved yet. */
function files(): string {
  return readdirSync(dir)
    .map((f) => `${f} ${statSync(join(dir, f)).size}`)
    .join(", ");
}

/** `duetime serve`; without root, in a shell that caps the size of every file it writes (EFBIG, not SIGXFSZ). */
function startServer(): Promise<ServerProcess> {
  // 1024 blocks: 512 KiB in dash's 512-byte blocks, 1 MiB in bash's.
  const capped = ["sh", "-c", `trap "" XFSZ; ulimit -S -f 1024; exec "$0" "$@"`];
  return spawnServer({ url: `sqlite:${db}`, options: {}, args: ["--store", `sqlite:${db}`] }, [], asRoot ? [] : capped);
}

test("a full disk: 503 STORE_UNAVAILABLE, not ready, alive; ready again once space returns; every 201 survives a SIGKILL", {
  timeout: 120_000,
}, async () => {
  const accepted: string[] = [];
  const first = await startServer();
  try {
    if (asRoot) {
      const fs = statfsSync(dir);
      writeFileSync(filler, Buffer.alloc(Math.max(0, fs.bavail * fs.bsize - 1024 * 1024)));
    }

    const refused = await fill(first.url, accepted);
    console.log(`# store-full: ${accepted.length} jobs created before the first refusal; files: ${files()}`);
    assert.ok(accepted.length > 0, "some jobs fit before the disk filled");
    assert.equal(refused.status, 503, JSON.stringify(refused.json));
    assert.equal(refused.json.error?.code, "STORE_UNAVAILABLE");
    assert.equal(refused.json.error.details?.kind, asRoot ? "full" : "io");
    assert.match(refused.json.error.message, asRoot ? /disk .* is full/ : /I\/O error/);
    assert.match(String(refused.retryAfter), /^\d+$/);
    // Still full: refused again, the same way; reads still answer.
    const again = await call(`${first.url}/v1/jobs`, "POST", spec(-1));
    assert.equal(again.status, 503);
    assert.equal(again.json.error?.code, "STORE_UNAVAILABLE");
    assert.equal((await call(`${first.url}/v1/jobs/${accepted[0]}`)).status, 200);

    const readyz = await call(`${first.url}/readyz`);
    assert.equal(readyz.status, 503, "not ready while writes fail");
    assert.equal(readyz.json.error?.code, "UNAVAILABLE");
    assert.equal((await call(`${first.url}/healthz`)).status, 200);
    const metrics = await (await fetch(`${first.url}/metrics`)).text();
    assert.match(metrics, /^duetime_store_writable 0$/m);
    assert.match(metrics, new RegExp(`^duetime_store_failures_total\\{op="jobCreateMany",kind="${asRoot ? "full" : "io"}"\\} [1-9]`, "m"));
    assert.equal(first.child.exitCode, null, "the server is still running");

    // Space returns: the node finds out by itself (its write probe), no create needed.
    if (asRoot) rmSync(filler);
    else assert.equal(spawnSync("prlimit", [`--pid=${first.child.pid}`, "--fsize=unlimited:"]).status, 0, "lift the file-size limit");
    await waitFor(async () => (await call(`${first.url}/readyz`)).status === 200, "ready again once space returned", 30_000);
    console.log(`# store-full: ready again; files: ${files()}`);
    assert.match(await (await fetch(`${first.url}/metrics`)).text(), /^duetime_store_writable 1$/m);
    for (let i = 0; i < 3; i++) {
      const r = await call(`${first.url}/v1/jobs`, "POST", spec(10_000 + i));
      assert.equal(r.status, 201, JSON.stringify(r.json));
      accepted.push(r.json.jobId!);
    }
  } finally {
    await first.stop("SIGKILL");
  }

  await assertAcceptedSurvive(startServer, db, accepted);
});
