// The archive's crash promises, on real files: a row written twice is read
// once, a write cut short loses nothing that was committed, and tenant ids
// never leave the archive directory; and a write leaves the event loop free.

import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { gzipSync } from "node:zlib";
import type { PurgedRow } from "../store/store.js";
import { ArchiveWriter, readArchive, tenantSegment, type ArchiveFilter } from "./archive.js";

const root = mkdtempSync(join(tmpdir(), "duetime-archive-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

const AT = Date.parse("2026-03-02T10:00:00Z");
const row = (id: string, tenantId = "t1", at = AT): PurgedRow => ({
  kind: "executions",
  id,
  tenantId,
  jobId: `job-${id}`,
  at,
  row: { id, state: "SUCCEEDED" },
});

async function read(dir: string, filter: ArchiveFilter = {}): Promise<string[]> {
  const ids: string[] = [];
  for await (const line of readArchive(dir, filter)) ids.push(`${line.tenantId}/${line.id}`);
  return ids;
}

test("a row archived twice (crash after the archive, before the delete) is read once", async () => {
  const dir = join(root, `a${n++}`);
  const writer = new ArchiveWriter(dir, "p1");
  await writer.write([row("e1"), row("e2")]);
  await writer.write([row("e2"), row("e3")]); // the retried batch, after a restart, by another writer too
  await new ArchiveWriter(dir, "p2").write([row("e1")]);
  assert.deepEqual(await read(dir), ["t1/e2", "t1/e3", "t1/e1"]);
});

test("a write cut short (crash mid-write) hides nothing written before it, nor what later writers add", async () => {
  const dir = join(root, `a${n++}`);
  await new ArchiveWriter(dir, "p1").write([row("e1"), row("e2")]);
  const file = join(dir, "t1", readdirSync(join(dir, "t1"))[0]!);
  const member = gzipSync(`${JSON.stringify({ kind: "executions", tenantId: "t1", id: "cut", jobId: null, at: "x", row: {} })}\n`);
  appendFileSync(file, member.subarray(0, member.length - 12));
  await new ArchiveWriter(dir, "p2").write([row("e3")]);
  assert.deepEqual(await read(dir), ["t1/e1", "t1/e2", "t1/e3"]);
});

test("tenant ids are one path segment inside the archive, whatever they hold", async () => {
  const dir = join(root, `a${n++}`);
  const tenants = ["..", ".", "../../escape", "a/b", "Acme Corp"];
  await new ArchiveWriter(dir, "p1").write(tenants.map((t, i) => row(`e${i}`, t)));
  assert.deepEqual(readdirSync(dir).sort(), tenants.map(tenantSegment).sort());
  assert.ok(tenants.map(tenantSegment).every((s) => !s.includes("/") && s !== "." && s !== ".."));
  assert.deepEqual(
    readdirSync(root).filter((f) => f === "escape"),
    [],
  );
  for (const [i, t] of tenants.entries()) assert.deepEqual(await read(dir, { tenantId: t }), [`${t}/e${i}`]);
});

test("one file per tenant, kind and UTC day of the row's time; --from/--to pick days", async () => {
  const dir = join(root, `a${n++}`);
  await new ArchiveWriter(dir, "p1").write([
    row("late", "t1", Date.parse("2026-03-02T23:59:59.999Z")),
    row("next", "t1", Date.parse("2026-03-03T00:00:00Z")),
  ]);
  assert.deepEqual(readdirSync(join(dir, "t1")).sort(), ["executions-2026-03-02.p1.ndjson.gz", "executions-2026-03-03.p1.ndjson.gz"]);
  assert.deepEqual(await read(dir, { from: "2026-03-03" }), ["t1/next"]);
  assert.deepEqual(await read(dir, { to: "2026-03-02" }), ["t1/late"]);
});

test("a write lets the event loop run while it compresses, writes and fsyncs", async () => {
  const dir = join(root, `a${n++}`);
  const order: string[] = [];
  const written = new ArchiveWriter(dir, "p1").write([row("e1"), row("e2", "t2")]).then(() => order.push("written"));
  setImmediate(() => order.push("other work"));
  await written;
  assert.deepEqual(order, ["other work", "written"]);
  assert.deepEqual(await read(dir), ["t1/e1", "t2/e2"]);
});
