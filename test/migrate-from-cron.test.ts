// Moving in from cron, end to end through the CLI against a real server:
// `duetime import` (all or nothing), a job in dry run beside the old system,
// `duetime compare` of the old system's log with the run ledger, and the exit
// codes an operator's script relies on.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type DuetimeApiError, DuetimeClient } from "@duetime/sdk";
import { main } from "../src/cli/main.js";
import { captureIo } from "../src/cli/test-support.js";
import { startTestServer, type TestServer, waitFor } from "./helpers.js";

const CRONTAB = `# backups, as root's crontab had them
MAILTO=ops@example.com
CRON_TZ=Europe/London
30 2 * * * /usr/local/bin/backup.sh --full
*/15 9-17 * * MON-FRI curl -fsS https://example.com/ping%hello
@reboot /usr/local/bin/warm-cache
`;

const CRONJOBS = `apiVersion: batch/v1
kind: CronJob
metadata: { name: report, namespace: billing }
spec:
  schedule: "0 9 * * MON"
  timeZone: Europe/London
  concurrencyPolicy: Forbid
  startingDeadlineSeconds: 300
  jobTemplate:
    spec:
      backoffLimit: 2
      template:
        spec:
          containers: [{ name: report, image: "billing/report:1.4", args: ["--weekly"] }]
---
apiVersion: batch/v1
kind: CronJob
metadata: { name: cleanup }
spec:
  schedule: "@daily"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{ name: cleanup, image: "tools/cleanup:2" }]
`;

describe("duetime compare", () => {
  let t: TestServer;
  let client: DuetimeClient;
  let jobId: string;
  let ledger: string[];
  let from: string;

  before(async () => {
    t = await startTestServer();
    client = new DuetimeClient({ url: t.url, retries: 0 });
    from = new Date().toISOString();
    // Every two seconds, in dry run: a few occurrences are recorded would_run in seconds.
    const job = await client.createJob({
      name: "every-2s",
      target: { type: "queue", pool: "compare" },
      schedule: { cron: "*/2 * * * * *" },
      mode: "dry_run",
    });
    jobId = job.jobId;
    ledger = await waitFor(async () => {
      const items = (await client.listOccurrences(jobId, { from, to: new Date().toISOString() })).items.filter((o) => o.status === "would_run");
      return items.length >= 6 ? items.slice(0, 6).map((o) => o.scheduledFor) : null;
    }, "six would_run occurrences");
  });
  after(async () => {
    await client.close();
    await t.close();
  });

  const compare = async (log: string, ...flags: string[]) => {
    const io = captureIo({}, { "old.log": log });
    const to = new Date(Date.parse(ledger[5]!) + 500).toISOString();
    const code = await main(["compare", "--url", t.url, "--job", jobId, "--log", "old.log", "--from", from, "--to", to, ...flags], io);
    return { code, io };
  };

  test("a log with the same runs agrees: exit 0", async () => {
    const { code, io } = await compare(ledger.map((t) => t.replace(".000Z", ".400Z")).join("\n"), "--tolerance", "1s");
    assert.equal(code, 0, io.out + io.err);
    assert.match(io.out, /AGREE/);
  });

  test("one missing, one extra and one late run are each reported, and the exit code is 3", async () => {
    const ms = ledger.map((t) => Date.parse(t));
    const log = [
      ms[0]!, // on time
      ms[1]! + 700, // late: beyond --tolerance 0
      // ms[2] missing
      ms[3]!,
      ms[3]! + 900, // extra, right behind the fourth
      ms[4]!,
      ms[5]!,
    ].map((t) => new Date(t).toISOString());
    const { code, io } = await compare(log.join("\n"), "--tolerance", "0", "--json");
    assert.equal(code, 3, io.err);
    const answer = JSON.parse(io.out) as {
      missing: string[];
      extra: string[];
      off: { expected: string; actual: string; offsetMs: number }[];
      matched: unknown[];
    };
    assert.deepEqual(answer.missing, [ledger[2]]);
    assert.deepEqual(answer.extra, [new Date(ms[3]! + 900).toISOString()]);
    assert.deepEqual(
      answer.off.map((o) => [o.expected, o.offsetMs]),
      [[ledger[1], 700]],
    );
    assert.equal(answer.matched.length, 4);
  });

  test("bad input: an unknown job is exit 1, a missing --log or a bad zone exit 2", async () => {
    const io = captureIo({}, { "old.log": "" });
    assert.equal(await main(["compare", "--url", t.url, "--job", "job_nope", "--log", "old.log"], io), 1);
    assert.match(io.err, /NOT_FOUND|INVALID_ARGUMENT/);
    assert.equal(await main(["compare", "--url", t.url, "--job", jobId], captureIo()), 2);
    const zone = captureIo();
    assert.equal(await main(["compare", "--url", t.url, "--job", jobId, "--log", "x", "--log-tz", "Mars/Olympus"], zone), 2);
    assert.match(zone.err, /--log-tz: "Mars\/Olympus" is not a known IANA time zone/);
  });
});

describe("duetime import", () => {
  let t: TestServer;
  let client: DuetimeClient;
  before(async () => {
    t = await startTestServer();
    client = new DuetimeClient({ url: t.url, retries: 0 });
  });
  after(async () => {
    await client.close();
    await t.close();
  });

  const run = async (files: Record<string, string>, ...args: string[]) => {
    const io = captureIo({}, files);
    const code = await main(["import", ...args, "--url", t.url], io);
    return { code, io };
  };
  const jobsIn = async (pool: string) => (await client.listJobs({ pool, limit: 100 })).items;

  test("a crontab with an @reboot line: nothing is imported (atomic), the line is named with why, exit 3", async () => {
    const { code, io } = await run({ crontab: CRONTAB }, "crontab", "crontab", "--pool", "cron-atomic");
    assert.equal(code, 3, io.err);
    assert.match(io.out, /crontab:6\s+@reboot runs at boot/);
    assert.match(io.err, /nothing imported/);
    assert.deepEqual(await jobsIn("cron-atomic"), []);
  });

  test("--no-atomic imports the rest in dry run, with the zone, command, stdin and MAILTO; importing again adds nothing", async () => {
    const first = await run({ crontab: CRONTAB }, "crontab", "crontab", "--pool", "cron", "--no-atomic", "--json");
    assert.equal(first.code, 3, "the @reboot line is still reported");
    const answer = JSON.parse(first.io.out) as { created: { jobId: string; created: boolean }[] };
    assert.deepEqual(
      answer.created.map((c) => c.created),
      [true, true],
    );
    const jobs = await jobsIn("cron");
    const backup = jobs.find((j) => (j.payload as { command: string }).command.startsWith("/usr/local/bin/backup.sh"))!;
    assert.equal(backup.mode, "dry_run");
    assert.deepEqual(
      [backup.schedule, backup.payload],
      [
        { cron: "30 2 * * *", tz: "Europe/London", jitterSeconds: 0, misfire: "skip", overlap: "allow" },
        { source: "crontab", file: "crontab", line: 4, command: "/usr/local/bin/backup.sh --full", mailto: "ops@example.com" },
      ],
    );
    const ping = jobs.find((j) => j !== backup)!;
    assert.deepEqual((ping.payload as { command: string; stdin: string }).stdin, "hello");
    const again = await run({ crontab: CRONTAB }, "crontab", "crontab", "--pool", "cron", "--no-atomic", "--json");
    const repeat = JSON.parse(again.io.out) as { created: { jobId: string; created: boolean }[] };
    assert.deepEqual(
      repeat.created.map((c) => [c.jobId, c.created]),
      answer.created.map((c) => [c.jobId, false]),
    );
    assert.equal((await jobsIn("cron")).length, 2);
  });

  test("CronJobs from a multi-document YAML: every mapped field, the suspended one paused", async () => {
    const { code, io } = await run({ "cronjobs.yaml": CRONJOBS }, "k8s-cronjob", "cronjobs.yaml", "--pool", "k8s");
    assert.equal(code, 0, io.out + io.err);
    const jobs = await jobsIn("k8s");
    const report = jobs.find((j) => j.name === "billing/report")!;
    assert.deepEqual(report.schedule, {
      cron: "0 9 * * MON",
      tz: "Europe/London",
      jitterSeconds: 0,
      misfire: "skip",
      misfireThresholdSeconds: 300,
      overlap: "forbid",
    });
    assert.equal(report.retry.maxAttempts, 3);
    assert.equal(report.mode, "dry_run");
    assert.equal((report.payload as { containers: { image: string }[] }).containers[0]!.image, "billing/report:1.4");
    const cleanup = jobs.find((j) => j.name === "default/cleanup")!;
    assert.equal(cleanup.state, "PAUSED");
  });

  test("bad input: a CronJob without a schedule and an unknown zone are refused with their reasons, --dry-run creates nothing", async () => {
    const bad = `${CRONJOBS}---
apiVersion: batch/v1
kind: CronJob
metadata: { name: noschedule }
spec: { jobTemplate: { spec: { template: { spec: { containers: [{ name: a, image: b }] } } } } }
---
apiVersion: batch/v1
kind: CronJob
metadata: { name: nozone }
spec:
  schedule: "0 * * * *"
  timeZone: Europe/Londn
  jobTemplate: { spec: { template: { spec: { containers: [{ name: a, image: b }] } } } }
`;
    const { code, io } = await run({ "bad.yaml": bad }, "k8s-cronjob", "bad.yaml", "--pool", "k8s-bad", "--dry-run");
    assert.equal(code, 3);
    assert.match(io.out, /bad\.yaml#3 noschedule\s+spec\.schedule is missing/);
    assert.match(io.out, /bad\.yaml#4 nozone\s+.*unknown time zone "Europe\/Londn"/);
    assert.deepEqual(await jobsIn("k8s-bad"), []);
    const usage = await run({}, "crontab", "crontab", "--pool", "p", "--target-url", "https://x.example");
    assert.equal(usage.code, 2);
    assert.match(usage.io.err, /exactly one of --pool NAME and --target-url URL/);
  });

  test("the batch API's atomic flag: one invalid job, none created, 400 naming it and listing every one", async () => {
    const job = (tz: string) => ({ name: "j", target: { type: "queue" as const, pool: "atomic" }, schedule: { cron: "0 * * * *", tz } });
    await assert.rejects(
      client.createJobs([job("UTC"), job("Mars/Olympus"), job("UTC"), job("Nowhere/Else")], { atomic: true }),
      (e: DuetimeApiError) => {
        assert.equal(e.status, 400);
        assert.equal(e.details?.field, "jobs.1.schedule.tz");
        assert.deepEqual(
          (e.details!.errors as { index: number }[]).map((x) => x.index),
          [1, 3],
        );
        return true;
      },
    );
    assert.deepEqual(await jobsIn("atomic"), []);
  });
});
