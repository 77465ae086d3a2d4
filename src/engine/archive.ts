// The retention archive: rows that retention removes, kept as gzip-compressed
// NDJSON, one line per row, under
//
//   DIR/<tenant>/<kind>-<YYYY-MM-DD>.<part>.ndjson.gz
//
// The day is the UTC day the row's retention started (an execution's end, a
// job's last change, a key's creation, an audit entry's time); <part> names
// the writer (one per engine start), so a file is only ever appended to by
// one process. Each batch appends one gzip member (a valid gzip file may hold
// many) and is fsynced before the store deletes the rows: a crash between
// the two leaves the rows in both places, and the next run archives them
// again. So the archive may repeat a row, never lose one; the reader drops
// repeats (same kind, tenant and id within a day). A crash in the middle of a
// write can only cut the end of that writer's file, which the reader ignores.
// A line is a snapshot of the row when it was archived: a row that came back
// to life before the delete (a dead letter replayed meanwhile) is not deleted,
// and its line stays, to be followed by a newer one when the row ends again.

import { randomBytes } from "node:crypto";
import { accessSync, constants as fsConstants, mkdirSync } from "node:fs";
import { mkdir, open, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { constants as zlibConstants, gunzip, gzip } from "node:zlib";
import { invalidArgument } from "../core/errors.js";
import { toIso } from "../core/time.js";
import { RETENTION_KINDS, type PurgedRow, type RetentionKind } from "../store/store.js";

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** One line of an archive file. */
export interface ArchiveLine {
  kind: RetentionKind;
  tenantId: string;
  id: string;
  jobId: string | null;
  /** When the row's retention started, RFC 3339 UTC. */
  at: string;
  /** The stored row by column name (an execution with its attempts). */
  row: Record<string, unknown>;
}

/** A tenant id as one safe path segment: percent-encoded, and never "." or "..". */
export function tenantSegment(tenantId: string): string {
  const encoded = encodeURIComponent(tenantId);
  return /^\.+$/.test(encoded) ? encoded.replaceAll(".", "%2E") : encoded;
}

const FILE = /^(executions|jobs|idempotency|audit)-(\d{4}-\d{2}-\d{2})\.([a-z0-9-]+)\.ndjson\.gz$/;

/** A writer's part name: unique per engine start (its start time, then random). */
export function newArchivePart(now: number): string {
  return `${now.toString(36)}-${randomBytes(3).toString("hex")}`;
}

export class ArchiveWriter {
  /**
   * Creates dir if needed and checks it is writable; throws INVALID_ARGUMENT
   * (field retention.archiveDir) otherwise. `part` must be unique per writer.
   */
  constructor(
    private readonly dir: string,
    private readonly part: string,
  ) {
    if (!/^[a-z0-9-]+$/.test(part)) throw new Error(`archive part ${JSON.stringify(part)} must match [a-z0-9-]+`);
    try {
      mkdirSync(dir, { recursive: true });
      accessSync(dir, fsConstants.W_OK);
    } catch (err) {
      throw invalidArgument("retention.archiveDir", `cannot write to ${JSON.stringify(dir)}: ${(err as Error).message}`);
    }
  }

  /**
   * Appends the rows to their files and fsyncs them (and any new file's
   * directory) before resolving. Compression and file I/O run off the event
   * loop, so dispatch and leases go on meanwhile.
   */
  async write(rows: readonly PurgedRow[]): Promise<void> {
    const files = new Map<string, { tenant: string; name: string; lines: string[] }>();
    for (const r of rows) {
      const line: ArchiveLine = { kind: r.kind, tenantId: r.tenantId, id: r.id, jobId: r.jobId, at: toIso(r.at), row: r.row };
      const tenant = tenantSegment(r.tenantId);
      const name = `${r.kind}-${line.at.slice(0, 10)}.${this.part}.ndjson.gz`;
      const file = files.get(`${tenant}/${name}`) ?? { tenant, name, lines: [] };
      file.lines.push(JSON.stringify(line));
      files.set(`${tenant}/${name}`, file);
    }
    for (const f of files.values()) await this.append(f.tenant, f.name, await gzipAsync(`${f.lines.join("\n")}\n`));
  }

  private async append(tenant: string, name: string, data: Buffer): Promise<void> {
    const tenantDir = join(this.dir, tenant);
    if ((await mkdir(tenantDir, { recursive: true })) !== undefined) await fsyncPath(this.dir);
    const file = await open(join(tenantDir, name), "a");
    let created: boolean;
    try {
      created = (await file.stat()).size === 0; // new: its directory entry needs an fsync too
      await file.writeFile(data);
      await file.sync();
    } finally {
      await file.close();
    }
    if (created) await fsyncPath(tenantDir);
  }
}

/** A new directory entry is durable only once its directory is fsynced. */
async function fsyncPath(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export interface ArchiveFilter {
  tenantId?: string;
  kind?: RetentionKind;
  /** First and last UTC day, YYYY-MM-DD, inclusive. */
  from?: string;
  to?: string;
  jobId?: string;
  /** Case-insensitive text anywhere in the line. */
  grep?: string;
}

/**
 * The archived rows that match, by tenant, kind, day, then as written, with
 * repeats (same kind, tenant and id within a day) dropped: the last copy wins.
 * Throws when dir cannot be read or a file holds something else.
 */
export async function* readArchive(dir: string, filter: ArchiveFilter = {}): AsyncGenerator<ArchiveLine> {
  const tenants = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  const wanted = filter.tenantId === undefined ? tenants.sort() : tenants.filter((t) => t === tenantSegment(filter.tenantId!));
  const grep = filter.grep?.toLowerCase();
  for (const tenant of wanted) {
    for (const files of await dayGroups(join(dir, tenant), filter)) {
      const day = new Map<string, ArchiveLine>();
      for (const file of files) {
        for (const text of await linesOf(file)) {
          if (grep !== undefined && !text.toLowerCase().includes(grep)) continue;
          const line = parseLine(text, file);
          if (filter.tenantId !== undefined && line.tenantId !== filter.tenantId) continue;
          if (filter.jobId !== undefined && line.jobId !== filter.jobId) continue;
          const key = `${line.tenantId}\u0000${line.id}`;
          day.delete(key); // the last copy wins, in its own place
          day.set(key, line);
        }
      }
      yield* day.values();
    }
  }
}

/** The tenant directory's files that pass the kind and day filters, grouped by (kind, day), in order. */
async function dayGroups(tenantDir: string, filter: ArchiveFilter): Promise<string[][]> {
  const groups = new Map<string, string[]>();
  for (const name of (await readdir(tenantDir)).sort()) {
    const m = FILE.exec(name);
    if (!m) continue;
    const [, kind, day] = m as unknown as [string, RetentionKind, string];
    if (filter.kind !== undefined && kind !== filter.kind) continue;
    if ((filter.from !== undefined && day < filter.from) || (filter.to !== undefined && day > filter.to)) continue;
    const key = `${RETENTION_KINDS.indexOf(kind)}:${day}`;
    groups.set(key, [...(groups.get(key) ?? []), join(tenantDir, name)]);
  }
  return [...groups.keys()].sort().map((k) => groups.get(k)!);
}

/** Every complete line of a file; a cut final member or line (a crash mid-write) is ignored. */
async function linesOf(file: string): Promise<string[]> {
  const text = (await gunzipAsync(await readFile(file), { finishFlush: zlibConstants.Z_SYNC_FLUSH })).toString("utf8");
  const lines = text.split("\n");
  lines.pop(); // "" after the last newline, or a line cut short
  return lines.filter((l) => l !== "");
}

function parseLine(text: string, file: string): ArchiveLine {
  try {
    const line = JSON.parse(text) as ArchiveLine;
    if (typeof line.id === "string" && typeof line.tenantId === "string" && typeof line.kind === "string") return line;
  } catch {
    // reported below
  }
  throw new Error(`${file}: not an archive line: ${text.slice(0, 80)}`);
}
