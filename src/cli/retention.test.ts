// Retention from the command line: the serve flags (checked, and reaching the
// engine), and `duetime archive read` over a real archive that a real engine
// wrote to a temporary directory, through main() and once as a child process.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { EventEmitter } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, test } from "node:test";
import type { ArchiveLine } from "../engine/archive.js";
import { FakeClock } from "../core/clock.js";
import { DuetimeError } from "../core/errors.js";
import { openEngine, type Engine } from "../engine/engine.js";
import { DEFAULT_CONTEXT as ctx } from "../engine/service.js";
import type { RunningServer, ServerOptions } from "../server/index.js";
import { main, parseCommand } from "./main.js";
import { captureIo } from "./test-support.js";

const BIN = fileURLToPath(new URL("../../bin/duetime.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "duetime-cli-retention-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

async function run(args: string[], env: Record<string, string> = {}) {
  const io = captureIo(env);
  const code = await main(args, io);
  return { code, out: io.out, err: io.err };
}

describe("serve retention flags", () => {
  test("durations and the archive directory, from flags or the environment", () => {
    const archive = join(dir, "flags-archive");
    const cmd = parseCommand(["serve", "--history-retention", "7d", "--audit-retention", "365d", "--archive-dir", archive], {
      DUETIME_IDEMPOTENCY_RETENTION: "48h",
    });
    assert.ok(cmd.command === "serve");
    assert.deepEqual(cmd.options.retention, { historyMs: 7 * DAY, idempotencyMs: 48 * HOUR, auditMs: 365 * DAY, archiveDir: resolve(archive) });
    const plain = parseCommand(["serve"], {});
    assert.ok(plain.command === "serve" && !("retention" in plain), "no flag, no retention settings: the engine's defaults");
  });

  test("a bad value is a usage error naming the flag or variable (exit 2)", async () => {
    const file = join(dir, "a-file");
    writeFileSync(file, "");
    const cases: [string[], Record<string, string>, RegExp][] = [
      [["serve", "--idempotency-retention", "23h"], {}, /^error: --idempotency-retention: must be at least 1d, got 23h$/m],
      [["serve"], { DUETIME_IDEMPOTENCY_RETENTION: "1h" }, /^error: DUETIME_IDEMPOTENCY_RETENTION: must be at least 1d/m],
      [["serve", "--history-retention", "soon"], {}, /^error: --history-retention: expected a duration such as 30d/m],
      [["serve", "--audit-retention", "30m"], {}, /^error: --audit-retention: must be at least 1h, got 30m$/m],
      [["serve", "--archive-dir", join(file, "sub")], {}, /^error: --archive-dir: cannot write to/m],
    ];
    for (const [args, env, message] of cases) {
      const got = await run(args, env);
      assert.equal(got.code, 2, args.join(" "));
      assert.match(got.err, message);
    }
  });

  test("the settings reach the engine the server opens", async () => {
    const signals = new EventEmitter();
    let opened: Engine | undefined;
    const clock = new FakeClock("2026-03-02T10:00:00Z");
    const listening = new Promise<ServerOptions>((resolveStart, reject) => {
      const startServer = async (options: ServerOptions): Promise<RunningServer> => {
        try {
          assert.ok(options.retention, "the retention settings reach the server's options");
          opened = await openEngine({ store: `sqlite:${join(dir, "serve.db")}`, clock, httpTargets: false, retention: options.retention });
          resolveStart(options);
        } catch (err) {
          reject(err);
        }
        return { url: "http://127.0.0.1:1", close: async () => opened?.stop() } as unknown as RunningServer;
      };
      void main(["serve", "--idempotency-retention", "48h"], captureIo(), { serve: { startServer, signals: signals as never } }).then((code) =>
        assert.equal(code, 0),
      );
    });
    await listening;
    const engine = opened!;
    const spec = (name: string) => ({ name, target: { type: "queue" as const, pool: "p" }, schedule: { delaySeconds: 7 * 24 * 3600 } });
    await engine.service.createJob(ctx, spec("a"), { idempotencyKey: "k" });
    clock.jump(25 * HOUR); // past the default 24 h, within the 48 h asked for
    assert.equal((await engine.retention.runOnce()).idempotency, 0);
    await assert.rejects(
      engine.service.createJob(ctx, spec("b"), { idempotencyKey: "k" }),
      (err: unknown) => err instanceof DuetimeError && err.code === "IDEMPOTENCY_MISMATCH",
    );
    signals.emit("SIGTERM");
  });
});

describe("duetime archive read", () => {
  const archive = join(dir, "archive");
  const ids: { needle: string; other: string; needleExecution: string } = { needle: "", other: "", needleExecution: "" };

  /** A real engine archives two succeeded one-offs (ended 2026-03-02) and removes them. */
  async function archiveSomeHistory(): Promise<void> {
    const clock = new FakeClock("2026-03-02T10:00:00Z");
    const engine = await openEngine({
      store: `sqlite:${join(dir, "archive.db")}`,
      clock,
      nodeId: "n",
      httpTargets: false,
      retention: { archiveDir: archive },
    });
    const create = (order: string) =>
      engine.service.createJob(ctx, { name: "mail", target: { type: "queue", pool: "p" }, payload: { order }, schedule: { delaySeconds: 0 } });
    ids.needle = (await create("needle-42")).jobId;
    ids.other = (await create("hay")).jobId;
    await engine.scheduler.runOnce();
    const { leased } = await engine.executor.lease({ pool: "p", workerId: "w", max: 2, leaseMs: 30_000, waitMs: 0 });
    await engine.executor.complete(leased.map((l) => ({ executionId: l.executionId, tenantId: l.tenantId, attempt: l.attempt })));
    ids.needleExecution = leased.find((l) => l.jobId === ids.needle)!.executionId;
    clock.jump(31 * DAY);
    assert.deepEqual(await engine.retention.runOnce(), { executions: 2, jobs: 2, idempotency: 0, audit: 0 });
    assert.equal((await engine.service.listExecutions(ctx, ids.needle, {}).catch(() => ({ items: [] }))).items.length, 0, "gone from the store");
    await engine.stop();
  }

  test("what retention removed can be read back, filtered (main)", async () => {
    await archiveSomeHistory();
    const all = await run(["archive", "read", "--dir", archive, "--json"]);
    assert.equal(all.code, 0, all.err);
    const lines = all.out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as ArchiveLine);
    assert.deepEqual(lines.map((l) => [l.kind, l.tenantId]).sort(), [
      ["executions", "default"],
      ["executions", "default"],
      ["jobs", "default"],
      ["jobs", "default"],
    ]);
    const execution = lines.find((l) => l.kind === "executions" && l.jobId === ids.needle)!;
    assert.equal(execution.id, ids.needleExecution);
    assert.equal(execution.at.slice(0, 10), "2026-03-02");
    assert.equal(execution.row.state, "SUCCEEDED");
    assert.deepEqual(execution.row.payload, { order: "needle-42" });

    const grep = await run(["archive", "read", "--dir", archive, "--grep", "NEEDLE-42", "--kind", "executions"]);
    assert.equal(grep.code, 0, grep.err);
    assert.match(grep.out, /^AT \(UTC\)\s+KIND\s+TENANT\s+ID\s+JOB\s+STATE$/m);
    assert.match(grep.out, new RegExp(`executions\\s+default\\s+${ids.needleExecution}\\s+${ids.needle}\\s+SUCCEEDED`));
    assert.equal(grep.out.trim().split("\n").length, 2, "the header and the one matching row");

    const job = await run(["archive", "read", "--dir", archive, "--job", ids.other, "--json"]);
    assert.deepEqual(
      job.out
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as ArchiveLine).kind)
        .sort(),
      ["executions", "jobs"],
    );
    const days = await run(["archive", "read", "--dir", archive, "--from", "2026-03-03"]);
    assert.equal(days.out, "no archived rows match\n");
    assert.equal(
      (await run(["archive", "read", "--dir", archive, "--to", "2026-03-02", "--tenant", "default", "--json"])).out.trim().split("\n").length,
      4,
    );
    assert.equal((await run(["archive", "read", "--dir", archive, "--tenant", "acme", "--json"])).out, "");
  });

  test("the real command reads it too (child process)", async () => {
    const got = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      execFile(
        process.execPath,
        [BIN, "archive", "read", "--kind", "jobs", "--json"],
        { env: { ...process.env, DUETIME_ARCHIVE_DIR: archive }, timeout: 30_000 },
        (err, stdout, stderr) => done({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
      );
    });
    assert.equal(got.code, 0, got.stderr);
    assert.deepEqual(
      got.stdout
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as ArchiveLine).id)
        .sort(),
      [ids.needle, ids.other].sort(),
    );
  });

  test("usage errors exit 2; an unreadable archive exits 1", async () => {
    for (const [args, message] of [
      [["archive", "read"], /missing --dir/],
      [["archive", "read", "--dir", dir, "--kind", "attempts"], /--kind: expected one of executions, jobs, idempotency, audit/],
      [["archive", "read", "--dir", dir, "--from", "2026-02-30"], /--from: expected a UTC day/],
      [["archive", "read", "--dir", dir, "--from", "2026-03-02", "--to", "2026-03-01"], /--to: must not be before --from/],
      [["archive", "list"], /unknown command "archive list"/],
    ] as const) {
      const got = await run([...args]);
      assert.equal(got.code, 2, args.join(" "));
      assert.match(got.err, message);
    }
    const missing = await run(["archive", "read", "--dir", join(dir, "no-such-dir")]);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /^error: .*no-such-dir/m);
    const help = await run(["archive", "read", "--help"]);
    assert.equal(help.code, 0);
    assert.match(help.out, /--grep TEXT/);
  });
});
