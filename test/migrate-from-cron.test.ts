// Moving in from cron, end to end through the CLI against a real server:
// `duetime import` (all or nothing), a job in dry run beside the old system,
// `duetime compare` of the old system's log with the run ledger, and the exit
// codes an operator's script relies on.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DuetimeClient } from "@duetime/sdk";
import { main } from "../src/cli/main.js";
import { captureIo } from "../src/cli/test-support.js";
import { startTestServer, type TestServer, waitFor } from "./helpers.js";

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
