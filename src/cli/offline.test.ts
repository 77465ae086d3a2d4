// `duetime cron` needs no server: it computes the preview in the CLI with the
// engine's own code, and answers what GET /v1/schedules/preview answers. The
// cases here are the hard daylight-saving ones of core/cron/dst.test.ts (New
// York and London, gaps and overlaps, fixed-time and wildcard schedules),
// each asked offline and of a real server (--url), output compared byte for
// byte, errors and exit codes too. Then the command as a process with no
// server listening, --help of every command offline, and the other commands'
// local halves (an import's dry run, compare's log) that need no server.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../../test/helpers.js";
import { commandPaths, main } from "./main.js";
import { captureIo } from "./test-support.js";

const BIN = fileURLToPath(new URL("../../bin/duetime.js", import.meta.url));

/** [expr, zone, from, count] from dst.test.ts; the preview has no per-job dst options, so the default rules. */
const DST_CASES: [string, string, string, number][] = [
  ["30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 3],
  ["0,15,30,45 2 * * *", "America/New_York", "2026-03-08T06:00:00Z", 2],
  ["30 2,3 * * *", "America/New_York", "2026-03-08T06:00:00Z", 2],
  ["0,30 2,3 * * *", "America/New_York", "2026-03-08T06:00:00Z", 2],
  ["30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2],
  ["30 1 * * *", "America/New_York", "2026-11-01T06:15:00Z", 1],
  ["*/30 * * * *", "America/New_York", "2026-11-01T04:00:00Z", 7],
  ["*/30 1 * * *", "America/New_York", "2026-11-01T05:00:00Z", 3],
  ["*/30 * * * *", "America/New_York", "2026-03-08T06:00:00Z", 3],
  ["15 * * * *", "America/New_York", "2026-03-08T06:00:00Z", 3],
  ["10 30 2 * * *", "America/New_York", "2026-03-08T06:00:00Z", 1],
  ["*/20 * 1 * * *", "America/New_York", "2026-11-01T05:59:20Z", 4],
  ["30 1 * * *", "Europe/London", "2026-03-28T12:00:00Z", 2],
  ["0 1 * * *", "Europe/London", "2026-03-28T12:00:00Z", 1],
  ["30 1 * * *", "Europe/London", "2026-10-24T12:00:00Z", 2],
  ["0 * * * *", "Europe/London", "2026-03-28T23:30:00Z", 3],
  ["@hourly", "Europe/London", "2026-10-24T22:30:00Z", 4],
  // Feb 29 on a Monday: none within the 30-year horizon after 2072
  ["0 0 * 2 1#5", "UTC", "2072-03-01T00:00:00Z", 5],
];

/** Arguments the server or the CLI refuses: each must be refused alike, offline and online. */
const REFUSED: string[][] = [
  ["cron", "61 * * * *"],
  ["cron", "0 0 30 2 *"],
  ["cron", "* * * * *", "--tz", "Mars/Base"],
  ["cron", "* * * * *", "--tz", "x".repeat(100)],
  ["cron", "x".repeat(300)],
  ["cron", "* * * * *", "--from", "2026-02-30T00:00:00Z"],
  ["cron", "* * * * *", "--from", "yesterday"],
  ["cron", "* * * * *", "--count", "0"],
  ["cron", "* * * * *", "--count", "1001"],
  ["cron", ""],
];

async function run(argv: string[], env: Record<string, string> = {}) {
  const io = captureIo(env);
  const code = await main(argv, io);
  return { code, out: io.out, err: io.err };
}

/** A loopback port nobody listens on (listened on, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

let server: TestServer;
let nobody: string;
before(async () => {
  server = await startTestServer();
  nobody = `http://127.0.0.1:${await closedPort()}`;
});
after(async () => {
  await server.close();
});

describe("duetime cron offline equals the server's preview", () => {
  test("daylight-saving gaps and overlaps: the same text and the same JSON, byte for byte", async () => {
    for (const [expr, tz, from, count] of DST_CASES) {
      const argv = ["cron", expr, "--tz", tz, "--from", from, "--count", String(count)];
      for (const extra of [[], ["--json"]]) {
        const what = [...argv, ...extra].join(" ");
        // DUETIME_URL names nobody: only --url sends cron to a server
        const offline = await run([...argv, ...extra], { DUETIME_URL: nobody });
        const online = await run([...argv, ...extra, "--url", server.url]);
        assert.equal(online.code, 0, `${what}: ${online.err}`);
        assert.deepEqual(offline, online, what);
      }
    }
  });

  test("what the marks look like (one gap, one overlap of each kind)", async () => {
    const gap = await run(["cron", "30 2 * * *", "--tz", "America/New_York", "--from", "2026-03-07T00:00:00Z", "--count", "3"]);
    assert.equal(gap.code, 0, gap.err);
    assert.equal(
      gap.out,
      [
        "LOCAL (America/New_York)   UTC                       NOTE",
        "2026-03-07T02:30:00-05:00  2026-03-07T07:30:00.000Z",
        "2026-03-08T03:00:00-04:00  2026-03-08T07:00:00.000Z  moved: DST gap (02:30 does not exist)",
        "2026-03-09T02:30:00-04:00  2026-03-09T06:30:00.000Z",
        "",
      ].join("\n"),
    );
    const twice = await run(["cron", "*/30 1 * * *", "--tz", "America/New_York", "--from", "2026-11-01T05:00:00Z", "--count", "3"]);
    // 01:00 and 01:30 come twice: the first pass in EDT, the second in EST
    assert.equal(
      twice.out,
      [
        "LOCAL (America/New_York)   UTC                       NOTE",
        "2026-11-01T01:30:00-04:00  2026-11-01T05:30:00.000Z  DST overlap: fires twice",
        "2026-11-01T01:00:00-05:00  2026-11-01T06:00:00.000Z  DST overlap: fires twice",
        "2026-11-01T01:30:00-05:00  2026-11-01T06:30:00.000Z  DST overlap: fires twice",
        "",
      ].join("\n"),
    );
    const once = await run(["cron", "30 1 * * *", "--tz", "America/New_York", "--from", "2026-10-31T12:00:00Z", "--count", "2"]);
    assert.match(once.out, /^2026-11-01T01:30:00-04:00 +2026-11-01T05:30:00\.000Z +DST overlap: first of two only$/m);
    const json = await run(["cron", "30 1 * * *", "--tz", "America/New_York", "--from", "2026-10-31T12:00:00Z", "--count", "2", "--json"]);
    assert.deepEqual(JSON.parse(json.out), {
      times: ["2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z"],
      local: ["2026-11-01T01:30:00", "2026-11-02T01:30:00"],
      dst: ["overlap", null],
    });
    const none = await run(["cron", "0 0 * 2 1#5", "--from", "2072-03-01T00:00:00Z"]);
    assert.deepEqual(none, { code: 0, out: "no fire times\n", err: "" });
  });

  test("refused input: the same code, message, field and exit code offline and online, nothing on stdout", async () => {
    for (const argv of REFUSED) {
      const what = argv.join(" ").slice(0, 80);
      const offline = await run(argv, { DUETIME_URL: nobody });
      const online = await run([...argv, "--url", server.url]);
      assert.notEqual(offline.code, 0, what);
      assert.equal(offline.out, "", what);
      assert.doesNotMatch(offline.err, /ECONNREFUSED|UNAVAILABLE/, what);
      // a usage error prints the usage, which names --url's value nowhere: the two are alike
      assert.deepEqual(offline, online, what);
    }
    const bad = await run(["cron", "61 * * * *"]);
    assert.deepEqual(bad, { code: 1, out: "", err: 'error: INVALID_ARGUMENT: cron: minute: "61" is out of range 0-59\n  field: cron\n' });
    const zone = await run(["cron", "* * * * *", "--tz", "Mars/Base"]);
    assert.equal(zone.err, 'error: INVALID_ARGUMENT: tz: "Mars/Base" is not a known IANA time zone\n  field: tz\n');
  });

  test("with --url the server is asked: a server that is down is an error", async () => {
    const down = await run(["cron", "* * * * *", "--url", nobody]);
    assert.equal(down.code, 1);
    assert.match(down.err, /^error: UNAVAILABLE: .*ECONNREFUSED/);
    // a malformed DUETIME_URL does not stop the offline preview either
    const env = await run(["cron", "0 9 * * *", "--from", "2026-03-28T00:00:00Z", "--count", "1"], { DUETIME_URL: "not a url" });
    assert.deepEqual(env, {
      code: 0,
      out: "LOCAL (UTC)                UTC                       NOTE\n2026-03-28T09:00:00+00:00  2026-03-28T09:00:00.000Z\n",
      err: "",
    });
  });
});

describe("bin/duetime.js with no server listening", () => {
  const exec = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [BIN, ...args], { env: { ...process.env, DUETIME_URL: nobody }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
      );
    });

  test("cron previews, and refuses a bad expression with exit 1", async () => {
    const argv = ["cron", "0 1 * * *", "--tz", "Europe/London", "--from", "2026-03-28T12:00:00Z", "--count", "2"];
    const child = await exec(argv);
    assert.equal(child.code, 0, child.stderr);
    assert.equal(child.stdout, (await run(argv, { DUETIME_URL: nobody })).out);
    assert.match(child.stdout, /^2026-03-29T02:00:00\+01:00 +2026-03-29T01:00:00\.000Z +moved: DST gap \(01:00 does not exist\)$/m);
    const bad = await exec(["cron", "0 25 * * *"]);
    assert.equal(bad.code, 1);
    assert.equal(bad.stdout, "");
    assert.equal(bad.stderr, 'error: INVALID_ARGUMENT: cron: hour: "25" is out of range 0-23\n  field: cron\n');
  });

  test("an import's dry run plans, and compare names a missing log, without a server", async () => {
    const dir = await mkdtemp(join(tmpdir(), "duetime-offline-"));
    try {
      const crontab = join(dir, "crontab");
      await writeFile(crontab, "CRON_TZ=Europe/London\n30 1 * * * /usr/bin/backup.sh\n61 * * * * /usr/bin/never\n");
      const plan = await exec(["import", "crontab", crontab, "--pool", "ops", "--dry-run"]);
      assert.equal(plan.code, 3, plan.stderr); // one line cannot be mapped
      assert.match(plan.stdout, /30 1 \* \* \* +Europe\/London +dry_run/);
      assert.match(plan.stdout, /cron: minute: "61" is out of range 0-59/);
      assert.doesNotMatch(plan.stderr, /ECONNREFUSED/);
      const missing = await exec(["compare", "--job", "job_1", "--log", join(dir, "no-such.log")]);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /^error: ENOENT: no such file or directory/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("--help of every command and subcommand exits 0 with its usage", async () => {
    const paths = [[], ...commandPaths()];
    assert.ok(paths.length > 20, "the command table");
    // a few at a time: forty node processes at once can outlast exec's timeout on a busy machine
    const results: Awaited<ReturnType<typeof exec>>[] = [];
    for (let i = 0; i < paths.length; i += 4) results.push(...(await Promise.all(paths.slice(i, i + 4).map((words) => exec([...words, "--help"])))));
    for (const [i, r] of results.entries()) {
      const what = [...paths[i]!, "--help"].join(" ");
      assert.equal(r.code, 0, `${what}: ${r.stderr}`);
      assert.match(r.stdout, /^Usage: duetime /, what);
      assert.equal(r.stderr, "", what);
    }
  });
});
