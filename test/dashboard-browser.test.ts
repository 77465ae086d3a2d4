// The dashboard in a real browser (issue 12): Debian's Chromium, headless,
// driven by playwright-core, against a real server with API keys and real
// workers (the SDK's Worker, in this process, on loopback). The flow: a wrong
// key is refused with a clear message; an admin logs in (the header says its
// role and tenant), creates a cron job and two queue jobs through the New job
// form (a bad cron expression is refused next to its field first), watches
// the queue job run through a worker and succeed on its page, triggers,
// pauses and resumes the cron job, edits its schedule (a version conflict is
// said plainly, then the edit goes through), reads its run ledger; a DST gap
// is marked in a London cron's preview; a job that fails its only attempt
// dies, is replayed by selection (with the replay's progress) and succeeds;
// the single replay still works; a possible duplicate is listed and
// explained; Cluster and Overview show the node and counts; a worker key sees
// only what it may use; a client key of another tenant sees only its
// tenant's jobs and no admin action. Any console error or uncaught page error
// fails the test, but the failed loads each refused request is expected to
// cause (401, 400, 409). A screenshot of each page is saved under
// test-artifacts/dashboard/.
//
// Two shorter tests show where the dashboard opens. On a server without
// keys it goes straight to the jobs, at / and at a job's deep link, with no
// login form and no refused request. On a server with keys it shows the
// login form at /. A deep link survives the login, and a kept key that is
// revoked sends the user back to the login form with a message.
//
// Chromium: /usr/bin/chromium (.ci/run installs Debian's package). Missing,
// the test fails with CI=true and is skipped loudly elsewhere.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DuetimeApiError, DuetimeClient, Worker } from "@duetime/sdk";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { parseApiKeys } from "../src/server/index.js";
import { DEFAULT_DASHBOARD_DIR } from "../src/server/dashboard.js";
import { openEngine } from "../src/engine/engine.js";
import { startTestServer, waitFor } from "./helpers.js";

const CHROMIUM = process.env.DUETIME_CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = join(process.cwd(), "test-artifacts", "dashboard");
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const missing = !existsSync(CHROMIUM);
if (missing && process.env.CI !== "true") {
  const bar = "!".repeat(78);
  process.stderr.write(
    `\n${bar}\n!! SKIPPED: the dashboard browser test: no Chromium at ${CHROMIUM} (apt-get install chromium).\n!! With CI=true it fails instead.\n${bar}\n\n`,
  );
}

const KEYS = "adm-acme-0123456789:acme:admin,wrk-acme-0123456789:acme:worker,cli-globex-0123456789:globex:client";

/** Console errors and uncaught page errors, as text, in order. */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()} (${m.location().url})`);
  });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  return errors;
}

/** Chromium on a profile of its own (removed by close()), its first page watched for errors. */
async function openBrowser(): Promise<{ context: BrowserContext; page: Page; errors: string[]; close: () => Promise<void> }> {
  const userDataDir = mkdtempSync(join(tmpdir(), "duetime-chromium-"));
  try {
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      timezoneId: "America/New_York",
      viewport: { width: 1280, height: 900 },
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(20_000);
    const close = async () => {
      await context.close().catch(() => undefined);
      rmSync(userDataDir, { recursive: true, force: true });
    };
    return { context, page, errors: watchErrors(page), close };
  } catch (err) {
    rmSync(userDataDir, { recursive: true, force: true });
    throw err;
  }
}

// This run's screenshots only, from every test of the file.
if (!missing) rmSync(ARTIFACTS, { recursive: true, force: true });

/** Checks Chromium is there and the dashboard built. */
function preflight(): void {
  assert.ok(!missing, `no Chromium at ${CHROMIUM}: .ci/run installs Debian's chromium package`);
  assert.ok(existsSync(join(DEFAULT_DASHBOARD_DIR, "index.html")), "the dashboard is not built: npm run build:dashboard");
  mkdirSync(ARTIFACTS, { recursive: true });
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** The failed loads a refused request makes Chromium log (one per request), and nothing else; then forgets them. */
async function expectRefused(errors: string[], status: number): Promise<void> {
  await waitFor(() => errors.length > 0, `Chromium reports the ${status}`);
  assert.ok(
    errors.every((e) => e.includes(`status of ${status}`)),
    errors.join("\n"),
  );
  errors.length = 0;
}

/** A datetime-local value (the browser's wall time, America/New_York here) for `date`, to the minute. */
function newYorkWallTime(date: Date): string {
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone: "America/New_York",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
  const p = Object.fromEntries(format.formatToParts(date).map((part) => [part.type, part.value]));
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}`;
}

/** Fills and sends the New job form; resolves on the new job's page, to its id. */
async function createThroughForm(
  page: Page,
  job: {
    name: string;
    when: { cron: string; tz: string } | { delaySeconds: number } | { at: string };
    pool: string;
    payload?: string;
    maxAttempts?: number;
  },
): Promise<string> {
  await tab(page, "New job").click();
  await page.getByLabel("Job name").fill(job.name);
  if ("cron" in job.when) {
    await page.getByLabel("Recurring (cron)").check();
    await page.getByLabel("Cron expression").fill(job.when.cron);
    await page.getByLabel("Time zone").fill(job.when.tz);
  } else if ("delaySeconds" in job.when) {
    await page.getByLabel("Once, after a delay").check();
    await page.getByLabel("Delay (seconds)").fill(String(job.when.delaySeconds));
  } else {
    await page.getByLabel("Once, at a time").check();
    await page.getByLabel(/^Run at/).fill(job.when.at);
  }
  await page.getByLabel("A worker pool").check();
  await page.getByLabel("Pool", { exact: true }).fill(job.pool);
  await page.getByLabel(/^Payload/).fill(job.payload ?? "");
  await page.getByLabel(/^Max attempts/).fill(job.maxAttempts === undefined ? "" : String(job.maxAttempts));
  await page.getByRole("button", { name: "Create job" }).click();
  await page.waitForURL(/#\/jobs\/[A-Za-z0-9_-]+$/);
  await page.getByRole("heading", { name: job.name }).waitFor();
  return decodeURIComponent(new URL(page.url()).hash.split("/").pop() ?? "");
}

/** A link of the navigation (pages hold links of the same name: "← Jobs"). */
function tab(page: Page, name: string) {
  return page.locator("nav.tabs").getByRole("link", { name, exact: true });
}

async function login(page: Page, key: string): Promise<void> {
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("button", { name: "Log out" }).waitFor();
}

test("the dashboard in Chromium: login and whoami, the New job form, a job's run ledger, attempts, actions and schedule edit (version conflict), DST marks, selection replay with progress, possible duplicates, cluster, overview, roles and tenant isolation, no console error", {
  skip: missing && process.env.CI !== "true",
}, async () => {
  preflight();

  // The Overview's history written every 200 ms rather than 10 s.
  const t = await startTestServer({
    apiKeys: parseApiKeys(KEYS),
    openEngine: (options) => openEngine({ ...options, workloadHistory: { flushMs: 200 } }),
  });
  const acme = new DuetimeClient({ url: t.url, token: "adm-acme-0123456789", retries: 0 });
  const acmeWorker = new DuetimeClient({ url: t.url, token: "wrk-acme-0123456789", retries: 0 });
  const globex = new DuetimeClient({ url: t.url, token: "cli-globex-0123456789", retries: 0 });
  const ran: string[] = [];
  const worker = new Worker({
    url: t.url,
    token: "wrk-acme-0123456789",
    pool: "dash-reports",
    waitSeconds: 1,
    handleSignals: false,
    logger: null,
    handler: async (job) => {
      ran.push(job.executionId);
      return { rows: 42 };
    },
  });
  // Each execution's first attempt fails (with maxAttempts 1 it dies); a replay of it succeeds.
  const failedOnce = new Set<string>();
  const fragile = new Worker({
    url: t.url,
    token: "wrk-acme-0123456789",
    pool: "dash-fragile",
    waitSeconds: 1,
    handleSignals: false,
    logger: null,
    handler: async (job) => {
      if (!failedOnce.has(job.executionId)) {
        failedOnce.add(job.executionId);
        throw new Error("the address bounced");
      }
      return { delivered: true };
    },
  });
  const workers = [worker.run(), fragile.run()];
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  try {
    // 01:30 on 2027-03-28 does not exist in London (clocks go from 01:00 to 02:00): the preview marks it.
    const spring = await acme.createJob({
      name: "spring-forward",
      target: { type: "queue", pool: "dash-reports" },
      schedule: { cron: "30 1 28 3 *", tz: "Europe/London" },
    });
    // Work waiting (pending) for the Overview's counts.
    await acme.createJob({ name: "later-email", target: { type: "queue", pool: "dash-later" }, schedule: { delaySeconds: 3600 } });
    await globex.createJob({ name: "globex-invoice", target: { type: "queue", pool: "globex-billing" }, schedule: { delaySeconds: 3600 } });
    // A dead letter for the single replay.
    const sms = await acme.createJob({
      name: "fragile-sms",
      target: { type: "queue", pool: "dash-fragile" },
      payload: { to: "+44 20 7946 0000" },
      schedule: { delaySeconds: 0 },
      retry: { maxAttempts: 1, backoffSeconds: 0, maxBackoffSeconds: 0 },
    });
    // A possible duplicate: attempt 1's lease expires, attempt 2 begins, then attempt 1 heartbeats (409 LEASE_LOST).
    const dup = await acme.createJob({ name: "dup-charge", target: { type: "queue", pool: "dash-dup" }, schedule: { delaySeconds: 0 } });
    const first = await waitFor(
      async () => (await acmeWorker.lease("dash-dup", { workerId: "w-slow", max: 1, leaseSeconds: 1 })).items[0],
      "attempt 1 of dup-charge",
    );
    await waitFor(
      async () => (await acme.listExecutions(dup.jobId)).items.some((e) => e.attempt === 1 && e.state === "TIMED_OUT"),
      "attempt 1's lease expires",
    );
    const second = await waitFor(
      async () => (await acmeWorker.lease("dash-dup", { workerId: "w-fast", max: 1, leaseSeconds: 30 })).items[0],
      "attempt 2 of dup-charge",
    );
    await assert.rejects(
      acmeWorker.heartbeat(first.executionId, { attempt: first.attempt }),
      (err: unknown) => err instanceof DuetimeApiError && err.code === "LEASE_LOST",
    );
    await acmeWorker.complete(second.executionId, second.attempt, { charged: true });
    await waitFor(async () => (await acme.listPossibleDuplicates()).items.length === 1, "the possible duplicate is recorded");
    await waitFor(async () => (await acme.getJob(sms.jobId)).state === "DEAD", "fragile-sms is dead");

    browser = await openBrowser();
    const { context, page, errors } = browser;

    // The server asks for a key (its whoami answers 401): the login form. A wrong key: refused with a clear message, and nothing is stored.
    await page.goto(`${t.url}/`);
    await page.getByLabel("API key").waitFor();
    await shot(page, "01-login");
    await page.getByLabel("API key").fill("not-a-key");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("alert").filter({ hasText: "The server refused the key (401 UNAUTHENTICATED)" }).waitFor();
    await shot(page, "02-login-refused");
    assert.equal(await page.evaluate("sessionStorage.length"), 0);
    await expectRefused(errors, 401);

    // The admin of acme: the key lives in sessionStorage only; the header says who it is.
    await login(page, "adm-acme-0123456789");
    assert.equal(await page.evaluate("sessionStorage.getItem('duetime.apiKey')"), "adm-acme-0123456789");
    assert.equal(await page.evaluate("localStorage.length"), 0);
    assert.deepEqual(await context.cookies(), []);
    assert.match((await page.getByTestId("whoami").textContent()) ?? "", /^admin\s*tenant acme$/);
    const nav = page.locator("nav.tabs a");
    assert.deepEqual(await nav.allTextContents(), ["Overview", "Jobs", "New job", "Possible duplicates", "Dead letters", "Cluster"]);
    const jobsTable = page.getByTestId("jobs-table");
    await jobsTable.getByRole("link", { name: "spring-forward" }).waitFor();
    await jobsTable.getByRole("link", { name: "fragile-sms" }).waitFor();
    assert.equal(await jobsTable.getByText("globex-invoice").count(), 0);
    // Times in the browser's zone, UTC on hover.
    const created = jobsTable.locator("time").first();
    assert.match((await created.getAttribute("title")) ?? "", /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    assert.match((await created.textContent()) ?? "", /E[SD]T/);
    await shot(page, "03-jobs");
    // Filters: cron jobs only, then one pool's; the Jobs tab clears them.
    await page.locator("select[name=kind]").selectOption("cron");
    await jobsTable.getByText("fragile-sms").waitFor({ state: "detached" });
    await jobsTable.getByRole("link", { name: "spring-forward" }).waitFor();
    await page.locator("select[name=kind]").selectOption("");
    await page.locator("input[name=pool]").fill("dash-fragile");
    await page.getByRole("button", { name: "Search" }).click();
    await jobsTable.getByText("spring-forward").waitFor({ state: "detached" });
    await jobsTable.getByRole("link", { name: "fragile-sms" }).waitFor();
    await tab(page, "Jobs").click();
    await jobsTable.getByRole("link", { name: "spring-forward" }).waitFor();
    assert.equal(await page.locator("input[name=pool]").inputValue(), "");

    // New job: the payload is checked as it is typed; the server's 400 shows beside the field it names.
    await tab(page, "New job").click();
    await page.getByLabel("Job name").fill("weekly-report");
    await page.getByLabel("Recurring (cron)").check();
    await page.getByLabel("Cron expression").fill("every monday");
    await page.getByLabel("Time zone").fill("Europe/London");
    await page.getByLabel("Pool", { exact: true }).fill("dash-reports");
    await page.getByLabel(/^Payload/).fill('{"week": 49');
    await page.locator(".field", { hasText: "Payload" }).getByText("Not valid JSON").waitFor();
    assert.ok(await page.getByRole("button", { name: "Create job" }).isDisabled());
    await page.getByLabel(/^Payload/).fill('{"week": 49}');
    await page.getByRole("button", { name: "Create job" }).click();
    const cronError = page.locator(".field", { hasText: "Cron expression" }).locator(".field-error");
    await cronError.waitFor();
    assert.match((await cronError.textContent()) ?? "", /schedule\.cron/);
    await shot(page, "04-new-job-refused");
    await expectRefused(errors, 400);

    // A cron job through the form: its page opens, with the next fire times in its zone and UTC.
    await page.getByLabel("Cron expression").fill("0 9 * * MON");
    await page.getByRole("button", { name: "Create job" }).click();
    await page.waitForURL(/#\/jobs\/[A-Za-z0-9_-]+$/);
    await page.getByRole("heading", { name: "weekly-report" }).waitFor();
    const reportId = decodeURIComponent(new URL(page.url()).hash.split("/").pop() ?? "");
    const report = await acme.getJob(reportId);
    assert.deepEqual(
      [report.schedule, report.target, report.payload],
      [{ ...report.schedule, cron: "0 9 * * MON", tz: "Europe/London" }, { type: "queue", pool: "dash-reports" }, { week: 49 }],
    );
    const preview = page.getByTestId("preview-table");
    await preview.waitFor();
    assert.equal(await preview.locator("tbody tr").count(), 10);
    assert.match((await preview.locator("tbody tr").first().textContent()) ?? "", /09:00:00\s*\d{4}-\d\d-\d\d (09|08):00:00 UTC/);
    await page.getByText("No execution yet.").waitFor();
    await shot(page, "05-job-created");

    // A queue job through the form, run by the worker: its page shows the attempt succeed, the worker and the ledger.
    const welcomeId = await createThroughForm(page, {
      name: "welcome-email",
      when: { delaySeconds: 0 },
      pool: "dash-reports",
      payload: '{"to": "ada@example.test"}',
    });
    const history = page.getByTestId("executions-table");
    await history.getByText("SUCCEEDED").waitFor();
    const welcomeAttempt = (await acme.listExecutions(welcomeId)).items.find((e) => e.state === "SUCCEEDED");
    assert.ok(welcomeAttempt?.workerId, "the API names the worker of the attempt");
    await history.getByText(welcomeAttempt.workerId).waitFor();
    await page.locator(".card-head").getByText("COMPLETED").waitFor();
    await page.getByTestId("ledger-table").getByText("dispatched").waitFor();
    assert.deepEqual((await acme.getJob(welcomeId)).payload, { to: "ada@example.test" });
    await shot(page, "06-queue-job-succeeded");

    // A job whose only attempt fails: dead.
    const fragileId = await createThroughForm(page, {
      name: "fragile-email",
      when: { at: newYorkWallTime(new Date(Date.now() - 60_000)) },
      pool: "dash-fragile",
      payload: '{"to": "nobody@example.test"}',
      maxAttempts: 1,
    });
    await page.locator(".card-head").getByText("DEAD").waitFor();
    await history.getByText("the address bounced").waitFor();
    assert.equal((await acme.getJob(fragileId)).retry.maxAttempts, 1);

    // The cron job: trigger through the worker, pause and resume.
    await tab(page, "Jobs").click();
    await jobsTable.getByRole("link", { name: "weekly-report" }).click();
    await page.getByRole("heading", { name: "weekly-report" }).waitFor();
    const ranBefore = ran.length;
    await page.getByRole("button", { name: "Trigger now" }).click();
    await history.getByText("SUCCEEDED").waitFor();
    assert.equal(ran.length, ranBefore + 1);
    const attempt = (await acme.listExecutions(reportId)).items.find((e) => e.state === "SUCCEEDED");
    assert.ok(attempt?.workerId);
    await history.getByText(attempt.workerId).waitFor();
    // The trigger is in the run ledger: dispatched, its execution succeeded.
    const ledgerRow = page.getByTestId("ledger-table").locator("tbody tr", { hasText: attempt.executionId });
    await ledgerRow.getByText("dispatched").waitFor();
    await ledgerRow.getByText("SUCCEEDED").waitFor();
    await shot(page, "07-job-triggered");

    await page.getByRole("button", { name: "Pause" }).click();
    await page.getByRole("button", { name: "Resume" }).waitFor();
    assert.equal((await acme.getJob(reportId)).state, "PAUSED");
    await shot(page, "08-job-paused");
    await page.getByRole("button", { name: "Resume" }).click();
    await page.getByRole("button", { name: "Pause" }).waitFor();
    assert.equal((await acme.getJob(reportId)).state, "SCHEDULED");

    // Edit the schedule: someone else changes the job meanwhile, so the edit is refused (409) and says why.
    await page.getByRole("button", { name: "Edit schedule…" }).click();
    const editForm = page.getByRole("form", { name: "Edit schedule" });
    await editForm.getByLabel("Cron expression").fill("0 10 * * MON");
    const openedAt = (await acme.getJob(reportId)).version;
    await acme.updateJob(reportId, { priority: 5 });
    await editForm.getByRole("button", { name: `Save (version ${openedAt})` }).click();
    const conflict = page.getByTestId("version-conflict");
    await conflict.waitFor();
    assert.match(
      (await conflict.textContent()) ?? "",
      new RegExp(`changed since you opened this form at version ${openedAt} \\(it is now at version ${openedAt + 1}\\)`),
    );
    await shot(page, "09-job-edit-conflict");
    await expectRefused(errors, 409);
    assert.equal(((await acme.getJob(reportId)).schedule as { cron?: string }).cron, "0 9 * * MON");
    // Reopened on the current version (the conflict made the page fetch it), the edit goes through and the preview follows.
    await page
      .locator(".card-head")
      .getByText(`version ${openedAt + 1}`)
      .waitFor();
    await page.getByRole("button", { name: "Close the schedule form" }).click();
    await page.getByRole("button", { name: "Edit schedule…" }).click();
    await editForm.getByLabel("Cron expression").fill("0 10 * * MON");
    await editForm.getByRole("button", { name: `Save (version ${openedAt + 1})` }).click();
    await page.getByRole("status").filter({ hasText: "Schedule saved" }).waitFor();
    const edited = await acme.getJob(reportId);
    const editedSchedule = edited.schedule as { cron?: string; tz?: string };
    assert.deepEqual([editedSchedule.cron, editedSchedule.tz, edited.priority], ["0 10 * * MON", "Europe/London", 5]);
    await waitFor(
      async () => /^\d{4}-\d\d-\d\d 10:00:00/.test((await preview.locator("tbody tr").first().textContent()) ?? ""),
      "the preview shows the new schedule",
    );
    await shot(page, "10-job-edited");

    // A daylight-saving gap, marked in the preview: 02:00 local (moved from 01:30, which does not exist), 01:00 UTC.
    await page.goto(`${t.url}/#/jobs/${spring.jobId}`);
    const springPreview = page.getByTestId("preview-table");
    await springPreview.locator("tbody tr").first().getByText("moved: DST gap").waitFor();
    const rows = springPreview.locator("tbody tr");
    assert.match(
      (await rows.nth(0).textContent()) ?? "",
      /^2027-03-28 02:00:00\s*2027-03-28 01:00:00 UTC\s*moved: DST gap \(01:30 does not exist\)$/,
    );
    // 2028-03-28 is not the day clocks change (the 26th is): an ordinary 01:30, BST.
    assert.match((await rows.nth(1).textContent()) ?? "", /^2028-03-28 01:30:00\s*2028-03-28 00:30:00 UTC$/);
    await shot(page, "11-job-dst-preview");

    // Dead letters: inspect, then replay the selected one at a rate and watch the replay finish.
    await tab(page, "Dead letters").click();
    const dead = page.getByTestId("dead-letters-table");
    const fragileRow = dead.locator("tr", { has: page.getByRole("link", { name: "fragile-email" }) });
    await fragileRow.getByText("the address bounced").waitFor();
    await fragileRow.getByRole("button", { name: "Inspect" }).click();
    await dead.getByText("nobody@example.test").waitFor();
    await fragileRow.getByRole("checkbox").check();
    await page.getByLabel("Rate (replays per second)").fill("5");
    await shot(page, "12-dead-letters-selected");
    await page.getByRole("button", { name: "Replay selected (1)" }).click();
    const progress = page.getByTestId("replay-progress");
    await progress.getByText("DONE").waitFor();
    assert.match((await progress.textContent()) ?? "", /1 of 1 replayed, at 5\/s/);
    await dead.getByRole("link", { name: "fragile-email" }).waitFor({ state: "detached" });
    await shot(page, "13-dead-letters-replayed");
    const fragileExecution = (await acme.listExecutions(fragileId)).items[0]?.executionId;
    const replays = await acme.listDeadLetterReplays();
    assert.deepEqual(
      replays.items.map((r) => [r.state, r.selection, r.ratePerSecond]),
      [["DONE", { executionIds: [fragileExecution] }, 5]],
    );
    // The single replay, kept beside it.
    const smsRow = dead.locator("tr", { has: page.getByRole("link", { name: "fragile-sms" }) });
    await smsRow.getByRole("button", { name: "Replay" }).click();
    await page.getByRole("status").filter({ hasText: "Replayed" }).waitFor();
    await waitFor(async () => (await acme.getJob(sms.jobId)).state === "COMPLETED", "the replayed fragile-sms succeeds");

    // The replayed job succeeds, as its page shows.
    await page.goto(`${t.url}/#/jobs/${fragileId}`);
    await page.getByRole("heading", { name: "fragile-email" }).waitFor();
    await history.getByText("SUCCEEDED").waitFor();
    await page.locator(".card-head").getByText("COMPLETED").waitFor();
    await shot(page, "14-job-replayed-succeeded");

    // Possible duplicates: the row links to its job and says why in a sentence.
    await tab(page, "Possible duplicates").click();
    const dups = page.getByTestId("duplicates-table");
    await dups.getByText(/^Attempt 1 lost its lease but its worker kept calling/).waitFor();
    await shot(page, "15-possible-duplicates");
    await dups.getByRole("link", { name: "dup-charge" }).click();
    await page.getByRole("heading", { name: "dup-charge" }).waitFor();
    assert.match(page.url(), new RegExp(`#/jobs/${dup.jobId}$`));

    // Cluster: this node and its shards.
    await tab(page, "Cluster").click();
    await page.getByTestId("nodes-table").locator("tbody tr").first().waitFor();
    await page.getByTestId("shards-table").waitFor();
    await shot(page, "16-cluster");

    // Overview: counts per tenant and pool, and the queue-depth chart.
    await tab(page, "Overview").click();
    await page.getByTestId("overview-tiles").waitFor();
    // The last hour by the minute: the attempts the flow ran, per pool, then per tenant.
    const charts = page.getByTestId("overview-charts");
    await charts.waitFor();
    assert.equal(await charts.locator(".chart canvas").count(), 4);
    await charts.getByText("Start lag p90 (ms)").waitFor();
    await charts.locator(".u-legend").first().getByText("dash-fragile").waitFor();
    await page.getByTestId("overview-by").selectOption("tenant");
    await charts.locator(".u-legend").first().getByText("acme").waitFor();
    await page.getByTestId("tenants-table").getByText("acme").waitFor();
    await page.getByTestId("pools-table").getByText("dash-later").waitFor();
    await shot(page, "17-overview");

    // Pages of 50: fifty newer jobs push the older ones to page 2; Previous comes back.
    const older = (await acme.listJobs({ limit: 500 })).items.length;
    await acme.createJobs(
      Array.from({ length: 50 }, (_, i) => ({
        name: `bulk-${String(i).padStart(2, "0")}`,
        target: { type: "queue" as const, pool: "dash-bulk" },
        schedule: { delaySeconds: 3600 },
        idempotencyKey: `bulk-${i}`,
      })),
    );
    await tab(page, "Jobs").click();
    const jobRows = jobsTable.locator("tbody tr");
    await waitFor(async () => (await jobRows.count()) === 50, "a first page of 50 jobs");
    assert.equal(await jobsTable.getByRole("link", { name: "weekly-report" }).count(), 0);
    assert.ok(await page.getByRole("button", { name: "← Previous" }).isDisabled());
    await page.getByRole("button", { name: "Next →" }).click();
    await jobsTable.getByRole("link", { name: "weekly-report" }).waitFor();
    assert.equal(await jobRows.count(), older);
    assert.ok(await page.getByRole("button", { name: "Next →" }).isDisabled());
    await shot(page, "18-jobs-page-2");
    await page.getByRole("button", { name: "← Previous" }).click();
    await waitFor(async () => (await jobRows.count()) === 50, "back to the first page");
    assert.ok(await page.getByRole("button", { name: "← Previous" }).isDisabled());

    // A worker key: the Overview only (its role reads no job), and no request it may not make.
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByLabel("API key").waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('duetime.apiKey')"), null);
    await login(page, "wrk-acme-0123456789");
    assert.match((await page.getByTestId("whoami").textContent()) ?? "", /^worker\s*tenant acme$/);
    assert.deepEqual(await nav.allTextContents(), ["Overview"]);
    await page.getByTestId("overview-tiles").waitFor();
    await shot(page, "19-worker-overview");
    // A page it may not see, named in the URL, says so instead of asking the server.
    await page.goto(`${t.url}/#/dead-letters`);
    await page.getByRole("alert").filter({ hasText: 'A worker key may not see "Dead letters"' }).waitFor();

    // A client key of globex: globex's jobs only, no Overview or Cluster, no replay.
    await page.getByRole("button", { name: "Log out" }).click();
    await login(page, "cli-globex-0123456789");
    assert.match((await page.getByTestId("whoami").textContent()) ?? "", /^client\s*tenant globex$/);
    assert.deepEqual(await nav.allTextContents(), ["Jobs", "New job", "Possible duplicates", "Dead letters"]);
    await jobsTable.getByRole("link", { name: "globex-invoice" }).waitFor();
    assert.equal(await jobsTable.getByRole("link").count(), 1);
    for (const other of ["weekly-report", "welcome-email", "fragile-email", "later-email", "spring-forward"]) {
      assert.equal(await page.getByText(other).count(), 0, other);
    }
    await shot(page, "20-jobs-other-tenant");
    await tab(page, "Dead letters").click();
    await page.getByText("No dead letters.").waitFor();
    assert.equal(await page.getByRole("button", { name: /Replay/ }).count(), 0);
    await tab(page, "Possible duplicates").click();
    await page.getByText("No possible duplicate.").waitFor();
    await shot(page, "21-client-duplicates");

    assert.deepEqual(errors, [], `console errors:\n${errors.join("\n")}`);
  } finally {
    await browser?.close();
    await Promise.all([worker.shutdown(), fragile.shutdown()]);
    await Promise.allSettled(workers);
    await acme.close();
    await acmeWorker.close();
    await globex.close();
    await t.close();
  }
});

test("the dashboard on a server without keys opens on the jobs, no login: at / and at a job's deep link, and no request is refused", {
  skip: missing && process.env.CI !== "true",
}, async () => {
  preflight();
  const t = await startTestServer();
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  try {
    const job = await t.client.createJob({ name: "open-report", target: { type: "queue", pool: "open-pool" }, schedule: { delaySeconds: 3600 } });
    browser = await openBrowser();
    const { context, page, errors } = browser;

    await page.goto(`${t.url}/`);
    await page.getByTestId("jobs-table").getByRole("link", { name: "open-report" }).waitFor();
    assert.equal(await page.getByLabel("API key").count(), 0);
    assert.equal(await page.getByRole("button", { name: "Log in" }).count(), 0);
    // Development mode says so, and there is nobody to log out.
    assert.match((await page.getByTestId("whoami").textContent()) ?? "", /^admin\s*tenant default$/);
    assert.equal(await page.getByRole("button", { name: "Log out" }).count(), 0);
    await shot(page, "31-keyless-jobs");

    // A deep link, opened in a tab of its own (no session kept): the job's page at once.
    const deep = await context.newPage();
    deep.setDefaultTimeout(20_000);
    const deepErrors = watchErrors(deep);
    await deep.goto(`${t.url}/#/jobs/${encodeURIComponent(job.jobId)}`);
    await deep.getByRole("heading", { name: "open-report" }).waitFor();
    assert.equal(await deep.getByLabel("API key").count(), 0);
    await shot(deep, "32-keyless-deep-link");

    assert.deepEqual([...errors, ...deepErrors], [], "no request is refused on a server without keys");
  } finally {
    await browser?.close();
    await t.close();
  }
});

test("the dashboard on a server with keys asks for one: the login form at /, a deep link kept through the login, a kept key the server now refuses sends back to the login form", {
  skip: missing && process.env.CI !== "true",
}, async () => {
  preflight();
  const t = await startTestServer({ apiKeys: parseApiKeys(KEYS) });
  const admin = new DuetimeClient({ url: t.url, token: "adm-acme-0123456789", retries: 0 });
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  try {
    const job = await admin.createJob({ name: "keyed-report", target: { type: "queue", pool: "keyed-pool" }, schedule: { delaySeconds: 3600 } });
    const deepLink = `${t.url}/#/jobs/${encodeURIComponent(job.jobId)}`;
    browser = await openBrowser();
    const { context, page, errors } = browser;

    // At /: the login form (whoami without a key answered 401), no alert, nothing of the jobs; a key, then the jobs.
    await page.goto(`${t.url}/`);
    await page.getByLabel("API key").waitFor();
    await expectRefused(errors, 401);
    assert.equal(await page.getByRole("alert").count(), 0);
    assert.equal(await page.getByTestId("jobs-table").count(), 0);
    await login(page, "adm-acme-0123456789");
    await page.getByTestId("jobs-table").getByRole("link", { name: "keyed-report" }).waitFor();

    // A deep link in a tab of its own: the login form, then the linked job, with a key the store keeps.
    const stored = await admin.createKey({ role: "client", name: "dashboard deep link" });
    const deep = await context.newPage();
    deep.setDefaultTimeout(20_000);
    const deepErrors = watchErrors(deep);
    await deep.goto(deepLink);
    await deep.getByLabel("API key").waitFor();
    await expectRefused(deepErrors, 401);
    await shot(deep, "33-keyed-deep-link-login");
    await login(deep, stored.key);
    await deep.getByRole("heading", { name: "keyed-report" }).waitFor();
    assert.equal(deep.url(), deepLink);

    // The key is revoked meanwhile: a reload is refused, said plainly, and the link is still there for the next key.
    await admin.revokeKey(stored.keyId);
    await deep.reload();
    await deep.getByRole("alert").filter({ hasText: "The server refused the key (401 UNAUTHENTICATED)" }).waitFor();
    await expectRefused(deepErrors, 401);
    assert.equal(await deep.evaluate("sessionStorage.getItem('duetime.apiKey')"), null);
    await shot(deep, "34-keyed-kept-key-refused");
    await login(deep, "adm-acme-0123456789");
    await deep.getByRole("heading", { name: "keyed-report" }).waitFor();
    assert.equal(deep.url(), deepLink);

    assert.deepEqual([...errors, ...deepErrors], [], `console errors:\n${[...errors, ...deepErrors].join("\n")}`);
  } finally {
    await browser?.close();
    await admin.close();
    await t.close();
  }
});
