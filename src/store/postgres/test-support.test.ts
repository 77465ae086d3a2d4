// The PostgreSQL gate of test-support.ts, on a server that is not there (a
// closed port): with CI=true the file's PostgreSQL tests fail; without, they
// are skipped with a banner on stderr. Runs a test file in a child process.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const FILE = "src/store/postgres/migrate.test.ts";

async function runWithoutPostgres(ci: boolean): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, DUETIME_TEST_PG_URL: "postgres://postgres@127.0.0.1:1/test" };
  delete env.CI;
  delete env.NODE_TEST_CONTEXT; // a test runner of its own, not a subtest of this one
  if (ci) env.CI = "true";
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "--test", "--test-reporter=tap", FILE],
      { cwd: ROOT, env, timeout: 60_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

test("without PostgreSQL and with CI=true, the PostgreSQL tests fail", async () => {
  const run = await runWithoutPostgres(true);
  assert.notEqual(run.code, 0, run.stdout);
  assert.match(run.stdout, /not ok \d+ - PostgreSQL migrations: PostgreSQL is required with CI=true/);
  assert.match(run.stdout, /# fail 1/);
});

test("without PostgreSQL and without CI, the PostgreSQL tests are skipped loudly", async () => {
  const run = await runWithoutPostgres(false);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /ok \d+ - PostgreSQL migrations \(skipped: PostgreSQL not reachable\) # SKIP/);
  assert.match(run.stdout, /# skipped 1/);
  // The runner passes the file's stderr on, as TAP comments.
  assert.match(run.stdout + run.stderr, /!! SKIPPED: PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1:1\/test is not reachable/);
});
