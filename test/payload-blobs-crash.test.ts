// A crash in the middle of a large create: a real `duetime serve` is
// SIGKILLed while a payload kept by reference is being written (its blob
// seen `writing`, some of its chunks in the store). Nothing accepted is
// lost: every create answered 201 reads back its whole payload after a
// restart; a create cut off leaves no half blob anyone can read, and the
// sweep removes what it left, so the store then holds exactly the blobs of
// its jobs, each whole. SQLite, or PostgreSQL with DUETIME_TEST_STORE=postgres;
// needs `npm run build` (it runs bin/duetime.js).

import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { systemClock } from "../src/core/clock.js";
import { DEFAULT_PAYLOAD_LIMITS } from "../src/core/payload-refs.js";
import { EngineEvents } from "../src/engine/events.js";
import { PayloadBlobs } from "../src/engine/payload-blobs.js";
import { openStore } from "../src/store/factory.js";
import { adminPool } from "../src/store/postgres/test-support.js";
import { spawnServer, TEST_STORE_KIND, type TestStore, testStore, waitFor } from "./helpers.js";

const MiB = 1024 * 1024;
const PAYLOAD_BYTES = 6 * MiB;
const IN_FLIGHT = 3;

const dir = mkdtempSync(join(tmpdir(), "duetime-blob-crash-"));
after(() => rmSync(dir, { recursive: true, force: true }));

type Row = Record<string, unknown>;

/** Reads the store's blob tables beside the server (SQLite: a second connection on the file; PostgreSQL: the test's own pool). */
function blobTables(store: TestStore): { all(sql: string): Promise<Row[]>; close(): void } {
  if (TEST_STORE_KIND === "postgres") {
    const schema = store.options.schema!;
    return {
      all: async (sql) =>
        (await adminPool().query(sql.replaceAll("{blobs}", `"${schema}".blobs`).replaceAll("{chunks}", `"${schema}".blob_chunks`))).rows,
      close: () => {},
    };
  }
  const db = new Database(store.url.slice("sqlite:".length), { readonly: true, fileMustExist: true });
  return {
    all: async (sql) => db.prepare(sql.replaceAll("{blobs}", "blobs").replaceAll("{chunks}", "blob_chunks")).all() as Row[],
    close: () => db.close(),
  };
}

const MID_UPLOAD = `SELECT b.blob_id FROM {blobs} b WHERE b.state = 'writing' AND EXISTS (SELECT 1 FROM {chunks} c WHERE c.blob_id = b.blob_id)`;

test("SIGKILL while a large create is being written: every 201 keeps its whole payload, a cut-off create leaves no readable half blob, and the sweep removes what it left", async () => {
  const store = testStore(dir);
  const flags = ["--max-payload-bytes", String(8 * MiB), "--inline-payload-bytes", String(64 * 1024)];
  const server = await spawnServer(store, flags);
  const tables = blobTables(store);
  try {
    const accepted = new Map<string, string>(); // jobId → sha256 of the payload sent
    let refused = 0;
    let stop = false;
    const send = async (): Promise<void> => {
      while (!stop) {
        const payload = { at: Date.now(), text: randomBytes(PAYLOAD_BYTES / 2).toString("hex") };
        const body = JSON.stringify({ name: "big", target: { type: "queue", pool: "crash" }, payload, schedule: { delaySeconds: 3600 } });
        try {
          const answer = await fetch(`${server.url}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body });
          const job = (await answer.json()) as { jobId: string; payloadRef?: { sha256: string } };
          assert.equal(answer.status, 201);
          accepted.set(job.jobId, createHash("sha256").update(JSON.stringify(payload)).digest("hex"));
          assert.equal(job.payloadRef?.sha256, accepted.get(job.jobId));
        } catch (error) {
          if (!stop) throw error;
          refused++; // cut off by the kill: no answer
        }
      }
    };
    const senders = Array.from({ length: IN_FLIGHT }, () => send());

    // The kill lands once creates have been answered and while another one's blob is half written.
    const halfWritten = await waitFor(
      async () => {
        if (accepted.size < 2) return null;
        const rows = await tables.all(MID_UPLOAD);
        return rows.length > 0 ? rows : null;
      },
      "a blob being written, after creates have been answered",
      60_000,
    );
    stop = true;
    await server.stop("SIGKILL");
    await Promise.all(senders);
    assert.ok(refused >= 1, "a create was cut off");
    const cutOff = halfWritten.map((r) => r.blob_id as string);

    const again = await spawnServer(store, flags);
    try {
      for (const [jobId, sha256] of accepted) {
        const job = (await (await fetch(`${again.url}/v1/jobs/${jobId}`)).json()) as { payloadRef: { href: string; sha256: string } };
        assert.equal(job.payloadRef.sha256, sha256, `job ${jobId} still names its payload`);
        const blob = await fetch(`${again.url}${job.payloadRef.href}`);
        assert.equal(blob.status, 200);
        assert.equal(
          createHash("sha256")
            .update(JSON.stringify(await blob.json()))
            .digest("hex"),
          sha256,
          `job ${jobId} reads back whole`,
        );
      }
      for (const blobId of cutOff) {
        const state = (await tables.all(`SELECT state FROM {blobs} WHERE blob_id = '${blobId}'`))[0]?.state;
        const status = (await fetch(`${again.url}/v1/blobs/${blobId}`)).status;
        // Seen half written; the kill may have landed a moment after it was sealed and its job created.
        if (state === "writing") assert.equal(status, 404, `the half-written blob ${blobId} is not readable`);
        else assert.equal(status, 200, `blob ${blobId} finished before the kill: whole and readable`);
      }
    } finally {
      await again.stop();
    }

    // The sweep, as retention runs it, with no grace left: what the cut-off creates left goes.
    assert.ok((await tables.all("SELECT blob_id FROM {blobs} WHERE state <> 'attached'")).length >= 1, "the crash left an unattached blob");
    const opened = await openStore(store.url, store.options);
    const payloads = new PayloadBlobs({
      store: opened,
      clock: systemClock,
      events: new EngineEvents(),
      limits: DEFAULT_PAYLOAD_LIMITS,
      orphanGraceMs: 0,
    });
    try {
      assert.ok((await payloads.sweep()) >= 1);
      const blobs = await tables.all("SELECT blob_id, job_id, state, bytes, chunks FROM {blobs}");
      const chunks = await tables.all("SELECT blob_id, count(*) AS n, sum(length(data)) AS bytes FROM {chunks} GROUP BY blob_id");
      assert.deepEqual(new Set(blobs.map((b) => b.state)), new Set(["attached"]), "only attached blobs are left");
      for (const b of blobs) assert.ok(await opened.jobGet({ tenantId: "default", jobId: b.job_id as string }), `blob ${b.blob_id}'s job exists`);
      for (const jobId of accepted.keys())
        assert.ok(
          blobs.some((b) => b.job_id === jobId),
          `job ${jobId} has its blob`,
        );
      assert.deepEqual(
        chunks.map((c) => [c.blob_id, Number(c.n), Number(c.bytes)]).sort(),
        blobs.map((b) => [b.blob_id, Number(b.chunks), Number(b.bytes)]).sort(),
        "every chunk left belongs to a whole, attached blob, and every such blob has all of its chunks",
      );
    } finally {
      await opened.close();
    }
  } finally {
    tables.close();
    await server.stop("SIGKILL");
  }
});
