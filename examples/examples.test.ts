// Every example runs as a user would run it (its own process, importing the
// built packages by name), against a real server where it needs one, and
// shows what it promises: a signed callback accepted and a forged one
// refused; a worker that finishes its jobs and exits 0 on SIGTERM; an
// embedded app that schedules and sends a reminder, then stops cleanly; the
// DST preview's gap and overlap.

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startTestServer, waitFor } from "../test/helpers.js";

const EXAMPLES = fileURLToPath(new URL(".", import.meta.url));

interface Running {
  child: ChildProcess;
  /** Everything the example printed on stdout so far. */
  out(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

function runExample(file: string, env: Record<string, string> = {}): Running {
  const child = spawn(process.execPath, ["--import", "tsx", `${EXAMPLES}${file}`], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const exited = once(child, "exit").then(([code]) => code as number | null);
  return { child, out: () => out, exited };
}

async function stop(run: Running): Promise<number | null> {
  if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill("SIGTERM");
  return run.exited;
}

describe("examples", () => {
  test("webhook-receiver accepts a signed callback from the server and refuses a forged one", async () => {
    const secret = "whsec_example_test_secret";
    const server = await startTestServer({ signingSecret: secret, allowTargetHosts: ["127.0.0.1"] });
    const receiver = runExample("webhook-receiver.ts", { DUETIME_SIGNING_SECRET: secret, PORT: "0" });
    try {
      const base = (await waitFor(() => /listening on (\S+)/.exec(receiver.out())?.[1], "the receiver listens"))!;
      const forged = await fetch(`${base}/hooks/reminder`, {
        method: "POST",
        body: "{}",
        headers: { "duetime-timestamp": String(Math.floor(Date.now() / 1000)), "duetime-signature": "v1=00" },
      });
      assert.equal(forged.status, 401);
      const job = await server.client.createJob({
        name: "reminder",
        target: { type: "http", url: `${base}/hooks/reminder` },
        payload: { user: 42 },
        schedule: { delaySeconds: 0 },
      });
      await waitFor(() => receiver.out().includes(`attempt 1: {"user":42}`), "the receiver accepted the signed call");
      const done = await waitFor(async () => {
        const j = await server.client.getJob(job.jobId);
        return j.state === "COMPLETED" ? j : null;
      }, "the job completed on the receiver's 204");
      assert.equal(done.state, "COMPLETED");
    } finally {
      await stop(receiver);
      await server.close();
    }
  });

  test("worker runs the pool's jobs and exits 0 after SIGTERM, its running handler finished", async () => {
    const server = await startTestServer();
    const worker = runExample("worker.ts", { DUETIME_URL: server.url, SEND_MS: "300" });
    try {
      const jobs = await Promise.all(
        ["ada@example.test", "grace@example.test"].map((to) =>
          server.client.createJob({ name: "email", target: { type: "queue", pool: "emails" }, payload: { to }, schedule: { delaySeconds: 0 } }),
        ),
      );
      await waitFor(() => jobs.every((j) => worker.out().includes(`sent ${j.jobId}`)) || null, "both jobs were sent");
      // A third job is mid-send (300 ms) when SIGTERM arrives: the worker finishes it before it exits.
      const last = await server.client.createJob({
        name: "email",
        target: { type: "queue", pool: "emails" },
        payload: { to: "alan@example.test" },
        schedule: { delaySeconds: 0 },
      });
      await waitFor(
        async () => (await server.client.listExecutions(last.jobId)).items.some((e) => e.state === "RUNNING") || null,
        "the third job is running",
      );
      assert.equal(await stop(worker), 0);
      assert.match(worker.out(), new RegExp(`sent ${last.jobId}`));
      assert.match(worker.out(), /worker stopped cleanly/);
      assert.equal((await server.client.getJob(last.jobId)).state, "COMPLETED");
    } finally {
      await stop(worker);
      await server.close();
    }
  });

  test("embedded-app schedules a reminder on POST /signup, sends it, and stops cleanly on SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "duetime-example-app-"));
    const app = runExample("embedded-app.ts", { PORT: "0", DUETIME_STORE: `sqlite:${dir}/app.db`, REMINDER_DELAY_SECONDS: "0" });
    try {
      const base = (await waitFor(() => /listening on (\S+)/.exec(app.out())?.[1], "the app listens"))!;
      const signup = await fetch(`${base}/signup`, { method: "POST", body: JSON.stringify({ email: "ada@example.test" }) });
      assert.equal(signup.status, 201);
      const again = await fetch(`${base}/signup`, { method: "POST", body: JSON.stringify({ email: "ada@example.test" }) });
      assert.deepEqual(
        ((await again.json()) as { reminderJobId: string }).reminderJobId,
        ((await signup.json()) as { reminderJobId: string }).reminderJobId,
      );
      await waitFor(() => app.out().includes("reminder sent to ada@example.test"), "the reminder was sent");
      assert.equal(await stop(app), 0);
      assert.match(app.out(), /stopped cleanly/);
      assert.equal(app.out().match(/reminder sent/g)?.length, 1, "one reminder for a repeated signup");
    } finally {
      await stop(app);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("cron-dst previews London's spring-forward gap and fall-back overlap, then creates the job", async () => {
    const run = runExample("cron-dst.ts");
    assert.equal(await run.exited, 0);
    assert.match(run.out(), /2027-03-28T01:30:00 London = 2027-03-28T01:00:00\.000Z {2}\(gap/);
    assert.match(run.out(), /2027-10-31T01:30:00 London = 2027-10-31T00:30:00\.000Z {2}\(overlap/);
    assert.match(run.out(), /created \S+; next run \S+ \(\S+\[Europe\/London\]\)/);
  });
});
