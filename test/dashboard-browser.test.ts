// The dashboard in a real browser (issue 12): Debian's Chromium, headless,
// driven by playwright-core, against a real server with API keys and real
// workers (the SDK's Worker). The flow: a wrong key is refused with a clear
// message; an admin logs in, sees a recurring job in the Jobs list, opens it,
// sees its next fire times, triggers it and watches the execution succeed
// through a worker, pauses and resumes it; a dead letter is inspected and
// replayed; the Cluster and Overview pages show the node and the counts; a
// client key of another tenant sees only its tenant's jobs. Any console error
// or uncaught page error fails the test (but the one 401 the wrong key is
// expected to cause). A screenshot of each page is saved under
// test-artifacts/dashboard/.
//
// Chromium: /usr/bin/chromium (.ci/run installs Debian's package). Missing,
// the test fails with CI=true and is skipped loudly elsewhere.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DuetimeClient, NonRetryableError, Worker } from "@duetime/sdk";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { parseApiKeys } from "../src/server/index.js";
import { DEFAULT_DASHBOARD_DIR } from "../src/server/dashboard.js";
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

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function login(page: Page, key: string): Promise<void> {
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("button", { name: "Log out" }).waitFor();
}

test("the dashboard in Chromium: login with a key, jobs with filters and pages, a job's preview (DST marks), history and actions, dead letters, cluster, overview, tenant isolation, no console error", {
  skip: missing && process.env.CI !== "true",
}, async () => {
  assert.ok(!missing, `no Chromium at ${CHROMIUM}: .ci/run installs Debian's chromium package`);
  assert.ok(existsSync(join(DEFAULT_DASHBOARD_DIR, "index.html")), "the dashboard is not built: npm run build:dashboard");
  rmSync(ARTIFACTS, { recursive: true, force: true }); // this run's screenshots only
  mkdirSync(ARTIFACTS, { recursive: true });

  const t = await startTestServer({ apiKeys: parseApiKeys(KEYS) });
  const acme = new DuetimeClient({ url: t.url, token: "adm-acme-0123456789", retries: 0 });
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
  const failing = new Worker({
    url: t.url,
    token: "wrk-acme-0123456789",
    pool: "dash-fragile",
    waitSeconds: 1,
    handleSignals: false,
    logger: null,
    handler: async () => {
      throw new NonRetryableError("the address bounced");
    },
  });
  const workers = [worker.run(), failing.run()];
  const userDataDir = mkdtempSync(join(tmpdir(), "duetime-chromium-"));
  let context: BrowserContext | undefined;
  try {
    const report = await acme.createJob({
      name: "weekly-report",
      target: { type: "queue", pool: "dash-reports" },
      payload: { week: 49 },
      schedule: { cron: "0 9 * * MON", tz: "Europe/London" },
    });
    const fragile = await acme.createJob({
      name: "fragile-email",
      target: { type: "queue", pool: "dash-fragile" },
      payload: { to: "nobody@example.test" },
      schedule: { delaySeconds: 0 },
      retry: { maxAttempts: 1, backoffSeconds: 0, maxBackoffSeconds: 0 },
    });
    // 01:30 on 2027-03-28 does not exist in London (clocks go from 01:00 to 02:00): the preview marks it.
    const spring = await acme.createJob({
      name: "spring-forward",
      target: { type: "queue", pool: "dash-reports" },
      schedule: { cron: "30 1 28 3 *", tz: "Europe/London" },
    });
    // Work waiting (pending) for the Overview's counts.
    await acme.createJob({ name: "later-email", target: { type: "queue", pool: "dash-later" }, schedule: { delaySeconds: 3600 } });
    await globex.createJob({ name: "globex-invoice", target: { type: "queue", pool: "globex-billing" }, schedule: { delaySeconds: 3600 } });
    await waitFor(async () => (await acme.getJob(fragile.jobId)).state === "DEAD", "the fragile job is dead");

    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      timezoneId: "America/New_York",
      viewport: { width: 1280, height: 900 },
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(20_000);
    const errors = watchErrors(page);

    // A wrong key: refused with a clear message, and nothing is stored.
    await page.goto(`${t.url}/`);
    await page.getByLabel("API key").waitFor();
    await shot(page, "01-login");
    await page.getByLabel("API key").fill("not-a-key");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("alert").filter({ hasText: "The server refused the key (401 UNAUTHENTICATED)" }).waitFor();
    await shot(page, "02-login-refused");
    assert.equal(await page.evaluate("sessionStorage.length"), 0);
    // The refused request is the one console error expected (Chromium logs a failed load).
    await waitFor(() => errors.length > 0, "Chromium reports the 401");
    assert.ok(
      errors.every((e) => /401/.test(e)),
      errors.join("\n"),
    );
    errors.length = 0;

    // The admin of acme: the key lives in sessionStorage only.
    await login(page, "adm-acme-0123456789");
    assert.equal(await page.evaluate("sessionStorage.getItem('duetime.apiKey')"), "adm-acme-0123456789");
    assert.equal(await page.evaluate("localStorage.length"), 0);
    assert.deepEqual(await context.cookies(), []);
    const jobsTable = page.getByTestId("jobs-table");
    await jobsTable.getByRole("link", { name: "weekly-report" }).waitFor();
    await jobsTable.getByRole("link", { name: "fragile-email" }).waitFor();
    assert.equal(await jobsTable.getByText("globex-invoice").count(), 0);
    // Times in the browser's zone, UTC on hover.
    const created = jobsTable.locator("time").first();
    assert.match((await created.getAttribute("title")) ?? "", /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    assert.match((await created.textContent()) ?? "", /E[SD]T/);
    await shot(page, "03-jobs");

    // Filters: by name, then by state.
    await page.getByLabel("Name").fill("fragile-email");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/name=fragile-email/);
    await waitFor(async () => (await jobsTable.getByRole("link").count()) === 1, "the name filter leaves one job");
    await page.getByLabel("Name").fill("");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByLabel("State").selectOption("DEAD");
    await page.waitForURL(/state=DEAD/);
    await waitFor(
      async () => (await jobsTable.getByRole("link", { name: "weekly-report" }).count()) === 0,
      "the state filter hides the scheduled job",
    );
    await jobsTable.getByRole("link", { name: "fragile-email" }).waitFor();
    await page.getByLabel("State").selectOption("");

    // A job: its next fire times in its zone and UTC, trigger through a real worker, pause and resume.
    await jobsTable.getByRole("link", { name: "weekly-report" }).click();
    await page.getByRole("heading", { name: "weekly-report" }).waitFor();
    const preview = page.getByTestId("preview-table");
    await preview.waitFor();
    assert.equal(await preview.locator("tbody tr").count(), 10);
    assert.match((await preview.locator("tbody tr").first().textContent()) ?? "", /09:00:00\s*\d{4}-\d\d-\d\d (09|08):00:00 UTC/);
    await page.getByText("No execution yet.").waitFor();
    await page.getByRole("button", { name: "Trigger now" }).click();
    const history = page.getByTestId("executions-table");
    await history.getByText("SUCCEEDED").waitFor();
    assert.equal(ran.length, 1);
    const attempt = (await acme.listExecutions(report.jobId)).items.find((e) => e.state === "SUCCEEDED");
    assert.ok(attempt?.workerId, "the API names the worker of the attempt");
    await history.getByText(attempt.workerId).waitFor();
    await shot(page, "04-job-triggered");

    await page.getByRole("button", { name: "Pause" }).click();
    await page.getByRole("button", { name: "Resume" }).waitFor();
    assert.equal((await acme.getJob(report.jobId)).state, "PAUSED");
    await shot(page, "05-job-paused");
    await page.getByRole("button", { name: "Resume" }).click();
    await page.getByRole("button", { name: "Pause" }).waitFor();
    assert.equal((await acme.getJob(report.jobId)).state, "SCHEDULED");

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
    await shot(page, "06-job-dst-preview");

    // Dead letters: inspect and replay (the worker fails it again).
    await page.getByRole("link", { name: "Dead letters" }).click();
    const dead = page.getByTestId("dead-letters-table");
    await dead.getByText("the address bounced").waitFor();
    await dead.getByRole("button", { name: "Inspect" }).click();
    await dead.getByText("nobody@example.test").waitFor();
    await shot(page, "07-dead-letters");
    const attemptsBefore = (await acme.listExecutions(fragile.jobId)).items.length;
    await dead.getByRole("button", { name: "Replay" }).click();
    await page.getByRole("status").filter({ hasText: "Replayed" }).waitFor();
    await waitFor(async () => (await acme.listExecutions(fragile.jobId)).items.length > attemptsBefore, "the replay made a new attempt");

    // Cluster: this node and its shards.
    await page.getByRole("link", { name: "Cluster" }).click();
    await page.getByTestId("nodes-table").locator("tbody tr").first().waitFor();
    await page.getByTestId("shards-table").waitFor();
    await shot(page, "08-cluster");

    // Overview: counts per tenant and pool, and the queue-depth chart.
    await page.getByRole("link", { name: "Overview" }).click();
    await page.getByTestId("overview-tiles").waitFor();
    await page.locator(".chart canvas").waitFor();
    await page.getByTestId("tenants-table").getByText("acme").waitFor();
    await page.getByTestId("pools-table").getByText("dash-later").waitFor();
    await shot(page, "09-overview");

    // Pages of 50: fifty newer jobs push the first four to page 2; Previous comes back.
    await acme.createJobs(
      Array.from({ length: 50 }, (_, i) => ({
        name: `bulk-${String(i).padStart(2, "0")}`,
        target: { type: "queue" as const, pool: "dash-bulk" },
        schedule: { delaySeconds: 3600 },
        idempotencyKey: `bulk-${i}`,
      })),
    );
    await page.getByRole("link", { name: "Jobs" }).click();
    const jobRows = jobsTable.locator("tbody tr");
    await waitFor(async () => (await jobRows.count()) === 50, "a first page of 50 jobs");
    assert.equal(await jobsTable.getByRole("link", { name: "weekly-report" }).count(), 0);
    assert.ok(await page.getByRole("button", { name: "← Previous" }).isDisabled());
    await page.getByRole("button", { name: "Next →" }).click();
    await jobsTable.getByRole("link", { name: "weekly-report" }).waitFor();
    assert.equal(await jobRows.count(), 4);
    assert.ok(await page.getByRole("button", { name: "Next →" }).isDisabled());
    await shot(page, "10-jobs-page-2");
    await page.getByRole("button", { name: "← Previous" }).click();
    await waitFor(async () => (await jobRows.count()) === 50, "back to the first page");
    assert.ok(await page.getByRole("button", { name: "← Previous" }).isDisabled());

    // Log out: the key is gone; a client key of globex sees globex's jobs only.
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByLabel("API key").waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('duetime.apiKey')"), null);
    await login(page, "cli-globex-0123456789");
    await page.getByRole("link", { name: "Jobs" }).click();
    await jobsTable.getByRole("link", { name: "globex-invoice" }).waitFor();
    assert.equal(await jobsTable.getByRole("link").count(), 1);
    assert.equal(await page.getByText("weekly-report").count(), 0);
    assert.equal(await page.getByText("fragile-email").count(), 0);
    assert.equal(await page.getByText("later-email").count(), 0);
    assert.equal(await page.getByText("spring-forward").count(), 0);
    await shot(page, "11-jobs-other-tenant");

    assert.deepEqual(errors, [], `console errors:\n${errors.join("\n")}`);
  } finally {
    await context?.close().catch(() => undefined);
    rmSync(userDataDir, { recursive: true, force: true });
    await Promise.all([worker.shutdown(), failing.shutdown()]);
    await Promise.allSettled(workers);
    await acme.close();
    await globex.close();
    await t.close();
  }
});
