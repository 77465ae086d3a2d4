// The CLI's argument parsing: every command's flags, their errors and their
// help, one table of cases against parseCommand and main.

import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { UsageError, parseDuration } from "./args.js";
import { main, parseCommand, type Command } from "./main.js";
import { captureIo } from "./test-support.js";
import { SERVE_HELP } from "./serve.js";

function parse(argv: string[], env: Record<string, string> = {}): Command {
  return parseCommand(argv, env);
}

function usageError(argv: string[], pattern: RegExp, env: Record<string, string> = {}): void {
  assert.throws(
    () => parse(argv, env),
    (err: unknown) => err instanceof UsageError && pattern.test(err.message),
    `${argv.join(" ")} should fail with ${pattern}`,
  );
}

describe("CLI parsing: help and usage errors", () => {
  test("--help prints usage at every level and exits 0", async () => {
    const cases: [string[], RegExp][] = [
      [["--help"], /Usage: duetime <command>/],
      [["-h"], /Usage: duetime <command>/],
      [["jobs", "--help"], /Usage: duetime jobs <command>/],
      [["jobs", "create", "--help"], /Usage: duetime jobs create --name NAME/],
      [["jobs", "get", "X", "-h"], /Usage: duetime jobs get <jobId>/],
      [["serve", "--help"], /DUETIME_SIGNING_SECRET/],
      [["dlq", "-h"], /Usage: duetime dlq <command>/],
      [["dlq", "replay", "--help"], /Usage: duetime dlq replay/],
      [["cron", "--help"], /--count N/],
      [["executions", "--help"], /Usage: duetime executions <jobId>/],
      [["jobs", "create", "--bogus", "--help"], /Usage: duetime jobs create/],
      [["jobs", "update", "--help"], /Usage: duetime jobs update <jobId> \[--version N\]/],
      [["jobs", "backfill", "-h"], /Usage: duetime jobs backfill <jobId> --from TIME --to TIME/],
      [["jobs", "occurrences", "--help"], /The run ledger/],
      [["jobs", "--help"], /occurrences <jobId>/],
      [["--help"], /jobs backfill\|occurrences/],
      [["cron", "--help"], /DST overlap: fires\s+twice/],
      [["--help"], /keys create\|list\|revoke/],
      [["keys", "--help"], /Usage: duetime keys <command>/],
      [["keys", "create", "-h"], /shown only this once/],
      [["keys", "list", "--help"], /Usage: duetime keys list \[--tenant TENANT\]/],
      [["keys", "revoke", "--help"], /Usage: duetime keys revoke <keyId>/],
      [["--help"], /secrets show/],
      [["secrets", "--help"], /Usage: duetime secrets <command>/],
      [["secrets", "show", "--help"], /Usage: duetime secrets show[\s\S]*one per line/],
    ];
    for (const [argv, pattern] of cases) {
      const io = captureIo();
      assert.equal(await main(argv, io), 0, argv.join(" "));
      assert.match(io.out, pattern, argv.join(" "));
      assert.equal(io.err, "");
    }
  });

  test("usage errors exit 2 with the message and the command's usage on stderr", async () => {
    const cases: [string[], RegExp, RegExp][] = [
      [[], /error: missing command/, /Usage: duetime <command>/],
      [["jbos"], /unknown command "jbos" \(did you mean "jobs"\?\)/, /Usage: duetime <command>/],
      [["jobs"], /missing jobs command/, /Usage: duetime jobs <command>/],
      [["jobs", "frob"], /unknown command "jobs frob"/, /Usage: duetime jobs <command>/],
      [["jobs", "list", "--bogus"], /Unknown option '--bogus'/, /Usage: duetime jobs list/],
      [["jobs", "get"], /missing argument <jobId>/, /Usage: duetime jobs get/],
      [["jobs", "get", "a", "b"], /unexpected argument "b"/, /Usage: duetime jobs get/],
      [["jobs", "list", "--limit", "0"], /--limit: must be between 1 and 500/, /Usage: duetime jobs list/],
      [["jobs", "list", "--url"], /--url/, /Usage: duetime jobs list/],
      [["serve", "--port", "http"], /--port: expected an integer/, /Usage: duetime serve/],
      [["cron"], /missing argument <expr>/, /Usage: duetime cron/],
      [["keys"], /missing keys command/, /Usage: duetime keys <command>/],
      [["keys", "delete"], /unknown command "keys delete"/, /Usage: duetime keys <command>/],
      [["keys", "create"], /missing --role/, /Usage: duetime keys create/],
      [["keys", "create", "--role", "root"], /--role: expected one of admin, client, worker/, /Usage: duetime keys create/],
      [["keys", "create", "--role", "client", "--tenant", ""], /--tenant: must not be empty/, /Usage: duetime keys create/],
      [["keys", "revoke"], /missing argument <keyId>/, /Usage: duetime keys revoke/],
      [["keys", "list", "--limit", "501"], /--limit: must be between 1 and 500/, /Usage: duetime keys list/],
      [["tenants"], /missing tenants command/, /Usage: duetime tenants <command>/],
      [["tenants", "show"], /missing argument <tenant>/, /Usage: duetime tenants show/],
      [
        ["tenants", "set-quota", "acme", "--weight", "0"],
        /--weight: expected a number from 0.01 to 1000, got "0"/,
        /Usage: duetime tenants set-quota/,
      ],
      [["tenants", "set-quota", "acme", "--weight", "1e3"], /--weight: expected a number from 0.01 to 1000/, /Usage: duetime tenants set-quota/],
      [["tenants", "set-quota", "acme", "--burst", "3"], /Unknown option '--burst'/, /Usage: duetime tenants set-quota/],
      [["secrets"], /missing secrets command/, /Usage: duetime secrets <command>/],
      [["secrets", "rotate"], /unknown command "secrets rotate"/, /Usage: duetime secrets <command>/],
      [["secrets", "show", "extra"], /unexpected argument "extra"/, /Usage: duetime secrets show/],
    ];
    for (const [argv, message, usage] of cases) {
      const io = captureIo();
      assert.equal(await main(argv, io), 2, argv.join(" "));
      assert.match(io.err, message, argv.join(" "));
      assert.match(io.err, usage, argv.join(" "));
      assert.equal(io.out, "");
    }
  });
});

describe("CLI parsing: global options", () => {
  test("defaults, environment fallbacks, and flags winning over the environment", () => {
    assert.deepEqual(parse(["jobs", "get", "X"]), { command: "jobs get", jobId: "X", global: { url: "http://127.0.0.1:8080", json: false } });
    const env = { DUETIME_URL: "http://env:1", DUETIME_TOKEN: "t-env" };
    assert.deepEqual(parse(["jobs", "get", "X"], env), {
      command: "jobs get",
      jobId: "X",
      global: { url: "http://env:1", token: "t-env", json: false },
    });
    assert.deepEqual(parse(["jobs", "get", "X", "--url", "http://flag:2", "--token=t-flag", "--json"], env), {
      command: "jobs get",
      jobId: "X",
      global: { url: "http://flag:2", token: "t-flag", json: true },
    });
    // global flags may come before the command
    assert.deepEqual(parse(["--url", "http://h:3", "--json", "dlq", "list"]), {
      command: "dlq list",
      query: {},
      global: { url: "http://h:3", json: true },
    });
    usageError(["jobs", "get", "X", "--url", "ftp://x"], /must be http or https/);
    usageError(["jobs", "get", "X"], /not a URL/, { DUETIME_URL: "nope" });
  });
});

describe("CLI parsing: durations and values", () => {
  test("durations", () => {
    const cases: [string, number | undefined][] = [
      ["30s", 30],
      ["5m", 300],
      ["2h", 7200],
      ["1d", 86400],
      ["90", 90],
      ["0", 0],
      ["1h30m", 5400],
      ["1.5m", 90],
      ["0.5s", undefined],
      ["5x", undefined],
      ["-5", undefined],
      ["", undefined],
      ["s", undefined],
      ["5 m", undefined],
    ];
    for (const [text, seconds] of cases) assert.equal(parseDuration(text), seconds, JSON.stringify(text));
  });
});

describe("CLI parsing: jobs create", () => {
  test("builds the job from flags", () => {
    const cmd = parse([
      "jobs",
      "create",
      "--name",
      "send-reminder",
      "--queue",
      "emails",
      "--delay",
      "5m",
      "--payload",
      '{"to":"a@b.c"}',
      "--max-attempts",
      "5",
      "--backoff",
      "30s",
      "--timeout",
      "2m",
      "--priority=-3",
      "--idempotency-key",
      "k1",
    ]);
    assert.deepEqual(cmd, {
      command: "jobs create",
      global: { url: "http://127.0.0.1:8080", json: false },
      idempotencyKey: "k1",
      spec: {
        name: "send-reminder",
        target: { type: "queue", pool: "emails" },
        schedule: { delaySeconds: 300 },
        payload: { to: "a@b.c" },
        retry: { maxAttempts: 5, backoffSeconds: 30 },
        timeoutSeconds: 120,
        priority: -3,
      },
    });
  });

  test("schedules: cron with zone, at, default now; HTTP targets with headers", () => {
    const cron = parse([
      "jobs",
      "create",
      "--name",
      "n",
      "--queue",
      "q",
      "--cron",
      "0 9 * * MON-FRI",
      "--tz",
      "Europe/London",
      "--jitter",
      "5m",
      "--misfire",
      "skip",
    ]);
    assert.deepEqual((cron as { spec: { schedule: unknown } }).spec.schedule, {
      cron: "0 9 * * MON-FRI",
      tz: "Europe/London",
      jitterSeconds: 300,
      misfire: "skip",
    });
    const at = parse(["jobs", "create", "--name", "n", "--queue", "q", "--at", "2026-10-16T09:00:00+01:00"]);
    assert.deepEqual((at as { spec: { schedule: unknown } }).spec.schedule, { runAt: "2026-10-16T09:00:00+01:00" });
    const now = parse([
      "jobs",
      "create",
      "--name",
      "n",
      "--target-url",
      "https://example.test/hook",
      "--method",
      "put",
      "--header",
      "x-a: b",
      "--header",
      "X-C:d",
    ]);
    assert.deepEqual((now as { spec: unknown }).spec, {
      name: "n",
      target: { type: "http", url: "https://example.test/hook", method: "PUT", headers: { "x-a": "b", "X-C": "d" } },
      schedule: { delaySeconds: 0 },
    });
  });

  test("--data and --file", () => {
    const data = parse([
      "jobs",
      "create",
      "--data",
      '{"name":"n","target":{"type":"queue","pool":"q"},"schedule":{"delaySeconds":1}}',
      "--idempotency-key",
      "k",
    ]);
    assert.deepEqual(data, {
      command: "jobs create",
      global: { url: "http://127.0.0.1:8080", json: false },
      idempotencyKey: "k",
      spec: { name: "n", target: { type: "queue", pool: "q" }, schedule: { delaySeconds: 1 } },
    });
    assert.deepEqual(parse(["jobs", "create", "--file", "job.json"]), {
      command: "jobs create",
      global: { url: "http://127.0.0.1:8080", json: false },
      file: "job.json",
    });
  });

  test("rejects contradictory or bad flags", () => {
    usageError(["jobs", "create", "--queue", "q"], /missing --name/);
    usageError(["jobs", "create", "--name", "n"], /exactly one of --queue POOL and --target-url URL/);
    usageError(["jobs", "create", "--name", "n", "--queue", "q", "--target-url", "http://x"], /exactly one of/);
    usageError(["jobs", "create", "--name", "n", "--target-url", "ftp://x"], /--target-url: expected an http or https URL/);
    usageError(["jobs", "create", "--name", "n", "--queue", "q", "--delay", "5m", "--cron", "* * * * *"], /only one of --delay, --at and --cron/);
    usageError(["jobs", "create", "--name", "n", "--queue", "q", "--tz", "Europe/Paris"], /--tz applies to --cron only/);
    usageError(["jobs", "create", "--name", "n", "--queue", "q", "--at", "tomorrow"], /--at: expected an RFC 3339 time/);
    usageError(["jobs", "create", "--name", "n", "--queue", "q", "--delay", "soon"], /--delay: expected a duration/);
    usageError(["jobs", "create", "--name", "n", "--queue", "q", "--payload", "{nope"], /--payload: not valid JSON/);
    usageError(["jobs", "create", "--name", "n", "--queue", "q", "--max-attempts", "0"], /--max-attempts: must be between 1 and 1000/);
    usageError(["jobs", "create", "--name", "n", "--queue", "q", "--priority", "1.5"], /--priority: expected an integer/);
    usageError(
      ["jobs", "create", "--name", "n", "--queue", "q", "--cron", "@daily", "--misfire", "never"],
      /--misfire: expected one of run_once, skip, catch_up/,
    );
    usageError(["jobs", "create", "--name", "n", "--queue", "q", "--header", "x: y"], /--method and --header apply to --target-url only/);
    usageError(["jobs", "create", "--data", "{}", "--name", "n"], /--name cannot be combined with --data/);
    usageError(["jobs", "create", "--data", "{}", "--file", "f"], /either --file or --data/);
    usageError(["jobs", "create", "--data", "[1]"], /expected a JSON object/);
  });
});

describe("CLI parsing: jobs update", () => {
  const global = { url: "http://127.0.0.1:8080", json: false };

  test("builds the patch from the flags given, and only those", () => {
    assert.deepEqual(parse(["jobs", "update", "j1", "--name", "renamed", "--priority=-5", "--version", "7"]), {
      command: "jobs update",
      global,
      jobId: "j1",
      version: 7,
      patch: { name: "renamed", priority: -5 },
    });
    assert.deepEqual(parse(["jobs", "update", "j1", "--cron", "0 10 * * *", "--tz", "Europe/Paris", "--misfire", "skip"]), {
      command: "jobs update",
      global,
      jobId: "j1",
      patch: { schedule: { cron: "0 10 * * *", tz: "Europe/Paris", misfire: "skip" } },
    });
    const many = parse([
      "jobs",
      "update",
      "j1",
      "--at",
      "2026-10-16T09:00:00Z",
      "--payload",
      '{"a":1}',
      "--max-attempts",
      "4",
      "--max-backoff",
      "1h",
      "--timeout",
      "90s",
      "--target-url",
      "https://example.test/x",
      "--method",
      "put",
    ]);
    assert.deepEqual((many as { patch: unknown }).patch, {
      schedule: { runAt: "2026-10-16T09:00:00Z" },
      payload: { a: 1 },
      retry: { maxAttempts: 4, maxBackoffSeconds: 3600 },
      timeoutSeconds: 90,
      target: { type: "http", url: "https://example.test/x", method: "PUT" },
    });
    assert.deepEqual((parse(["jobs", "update", "j1", "--delay", "0"]) as { patch: unknown }).patch, { schedule: { delaySeconds: 0 } });
    assert.deepEqual((parse(["jobs", "update", "j1", "--queue", "other"]) as { patch: unknown }).patch, { target: { type: "queue", pool: "other" } });
    assert.deepEqual((parse(["jobs", "update", "j1", "--payload", "null"]) as { patch: unknown }).patch, { payload: null });
  });

  test("--data and --file, with or without --version", () => {
    assert.deepEqual(parse(["jobs", "update", "j1", "--data", '{"name":"n","version":3}']), {
      command: "jobs update",
      global,
      jobId: "j1",
      patch: { name: "n", version: 3 },
    });
    assert.deepEqual(parse(["jobs", "update", "j1", "--file", "patch.json", "--version", "3", "--json"]), {
      command: "jobs update",
      global: { ...global, json: true },
      jobId: "j1",
      version: 3,
      file: "patch.json",
    });
  });

  test("rejects an empty or contradictory update", () => {
    usageError(["jobs", "update", "j1"], /nothing to change/);
    usageError(["jobs", "update", "j1", "--version", "3"], /nothing to change/);
    usageError(["jobs", "update"], /missing argument <jobId>/);
    usageError(["jobs", "update", "j1", "--version", "0", "--name", "n"], /--version: must be between 1 and/);
    usageError(["jobs", "update", "j1", "--version", "v7", "--name", "n"], /--version: expected an integer/);
    usageError(["jobs", "update", "j1", "--name", ""], /--name: must not be empty/);
    usageError(["jobs", "update", "j1", "--tz", "Europe/Paris"], /--tz applies to --cron only/);
    usageError(["jobs", "update", "j1", "--jitter", "5m"], /--jitter applies to --cron only/);
    usageError(["jobs", "update", "j1", "--at", "2026-10-16T09:00:00Z", "--delay", "5m"], /only one of --delay, --at and --cron/);
    usageError(["jobs", "update", "j1", "--method", "PUT"], /exactly one of --queue POOL and --target-url URL/);
    usageError(["jobs", "update", "j1", "--data", '{"name":"n"}', "--priority", "3"], /--priority cannot be combined with --data/);
    usageError(["jobs", "update", "j1", "--data", '{"name":"n"}', "--file", "f"], /either --file or --data/);
    usageError(["jobs", "update", "j1", "--data", "[]"], /expected a JSON object \(the changes\)/);
    usageError(["jobs", "update", "j1", "--idempotency-key", "k", "--name", "n"], /Unknown option '--idempotency-key'/);
  });
});

describe("CLI parsing: jobs backfill and occurrences", () => {
  test("a window of two RFC 3339 times", () => {
    assert.deepEqual(parse(["jobs", "backfill", "j1", "--from", "2026-10-12T00:00:00+02:00", "--to", "2026-10-14T00:00:00Z"]), {
      command: "jobs backfill",
      global: { url: "http://127.0.0.1:8080", json: false },
      jobId: "j1",
      request: { from: "2026-10-12T00:00:00+02:00", to: "2026-10-14T00:00:00Z" },
    });
    assert.deepEqual(parse(["jobs", "occurrences", "j1", "--to", "2026-10-14T00:00:00Z", "--from", "2026-10-13T00:00:00Z", "--json"]), {
      command: "jobs occurrences",
      global: { url: "http://127.0.0.1:8080", json: true },
      jobId: "j1",
      query: { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00Z" },
    });
  });

  test("rejects a missing, malformed or empty window", () => {
    for (const verb of ["backfill", "occurrences"]) {
      usageError(["jobs", verb, "j1", "--to", "2026-10-14T00:00:00Z"], /missing --from TIME/);
      usageError(["jobs", verb, "j1", "--from", "2026-10-14T00:00:00Z"], /missing --to TIME/);
      usageError(["jobs", verb, "j1", "--from", "last week", "--to", "2026-10-14T00:00:00Z"], /--from: expected an RFC 3339 time/);
      usageError(["jobs", verb, "j1", "--from", "2026-10-14T00:00:00Z", "--to", "2026-10-14T02:00:00+02:00"], /--to: must be after --from/);
      usageError(["jobs", verb, "--from", "2026-10-13T00:00:00Z", "--to", "2026-10-14T00:00:00Z"], /missing argument <jobId>/);
      usageError(["jobs", verb, "j1", "--from", "2026-10-13T00:00:00Z", "--to", "2026-10-14T00:00:00Z", "--count", "3"], /Unknown option '--count'/);
    }
  });
});

describe("CLI parsing: dlq replay in bulk", () => {
  const G = { url: "http://127.0.0.1:8080", json: false };
  test("--all --rate 10/s is a bulk replay of every dead letter at that rate; one bare id stays a single replay", () => {
    assert.deepEqual(parse(["dlq", "replay", "--all", "--rate", "10/s"]), {
      command: "dlq replay bulk",
      global: G,
      request: { filter: {}, ratePerSecond: 10 },
      wait: false,
    });
    assert.deepEqual(parse(["dlq", "replay", "e1"]), { command: "dlq replay", global: G, executionId: "e1" });
    assert.deepEqual(parse(["dlq", "replay", "e1", "e2", "--wait"]), {
      command: "dlq replay bulk",
      global: G,
      request: { executionIds: ["e1", "e2"] },
      wait: true,
    });
    assert.deepEqual(
      parse([
        "dlq",
        "replay",
        "--pool",
        "emails",
        "--error-class",
        "transient",
        "--dead-after",
        "2026-10-13T00:00:00Z",
        "--dead-before",
        "2026-10-14T00:00:00Z",
        "--rate",
        "600/m",
        "--tenant",
        "acme",
      ]),
      {
        command: "dlq replay bulk",
        global: G,
        request: {
          filter: { pool: "emails", errorClass: "transient", deadAfter: "2026-10-13T00:00:00Z", deadBefore: "2026-10-14T00:00:00Z" },
          ratePerSecond: 10,
          tenantId: "acme",
        },
        wait: false,
      },
    );
    assert.equal((parse(["dlq", "replay", "e1", "--rate", "2.5"]) as { request: { ratePerSecond: number } }).request.ratePerSecond, 2.5);
    assert.equal((parse(["dlq", "replay", "--all", "--rate", "36/h"]) as { request: { ratePerSecond: number } }).request.ratePerSecond, 0.01);
  });

  test("the rate syntax, the selection and the error class are checked with a usage error", () => {
    for (const bad of ["fast", "10/d", "1-", "1e3", "10 /s", "/s", ""])
      usageError(["dlq", "replay", "--all", "--rate", bad], /--rate: expected a rate such as 10\/s, 600\/m or 10/);
    usageError(["dlq", "replay", "--all", "--rate", "0"], /--rate: "0" is 0 per second; the rate is 0\.01\/s to 10000\/s/);
    usageError(["dlq", "replay", "--all", "--rate", "20000/s"], /the rate is 0\.01\/s to 10000\/s/);
    usageError(["dlq", "replay", "--rate", "10/s"], /which dead letters\?/);
    usageError(["dlq", "replay", "e1", "--all"], /not both/);
    usageError(["dlq", "replay", "--all", "--error-class", "fatal"], /--error-class: expected one of transient, permanent, throttled/);
    usageError(["dlq", "replay", "--all", "--dead-before", "yesterday"], /--dead-before/);
    usageError(["dlq", "replay"], /missing argument <executionId>/);
    usageError(["dlq", "replays", "a", "b"], /unexpected argument "b"/);
  });
});

describe("CLI parsing: other commands", () => {
  test("list, executions, dlq and cron queries", () => {
    assert.deepEqual(parse(["jobs", "list", "--state", "paused", "--limit", "10", "--cursor", "c1", "--name", "x"]), {
      command: "jobs list",
      global: { url: "http://127.0.0.1:8080", json: false },
      query: { state: "PAUSED", limit: 10, cursor: "c1", name: "x" },
    });
    usageError(["jobs", "list", "--state", "SLEEPING"], /--state: expected one of SCHEDULED/);
    assert.deepEqual((parse(["jobs", "list", "--pool", "mail", "--kind", "CRON"]) as { query: unknown }).query, { pool: "mail", kind: "cron" });
    usageError(["jobs", "list", "--kind", "weekly"], /--kind: expected one of once, cron/);
    assert.deepEqual((parse(["executions", "j1", "--limit", "5"]) as { jobId: string; query: unknown }).query, { limit: 5 });
    assert.equal((parse(["dlq", "replay", "e1"]) as { executionId: string }).executionId, "e1");
    assert.deepEqual(
      (parse(["cron", "0 9 * * *", "--tz", "Europe/London", "--from", "2026-03-28T00:00:00Z", "--count", "3"]) as { query: unknown }).query,
      {
        cron: "0 9 * * *",
        tz: "Europe/London",
        from: "2026-03-28T00:00:00Z",
        count: 3,
      },
    );
    usageError(["cron", "* * * * *", "--count", "1001"], /--count: must be between 1 and 1000/);
    usageError(["cron", "* * * * *", "--from", "yesterday"], /--from: expected an RFC 3339 time/);
  });
});

describe("CLI parsing: tenants", () => {
  test("show and set-quota", () => {
    const global = { url: "http://127.0.0.1:8080", token: "root", json: false };
    const env = { DUETIME_TOKEN: "root" };
    assert.deepEqual(parse(["tenants", "show", "acme"], env), { command: "tenants show", global, tenantId: "acme" });
    assert.deepEqual(parse(["tenants", "set-quota", "acme", "--weight", "2.5", "--json"], env), {
      command: "tenants set-quota",
      global: { ...global, json: true },
      tenantId: "acme",
      limits: { weight: 2.5 },
    });
    assert.deepEqual(parse(["tenants", "set-quota", "acme"], env), { command: "tenants set-quota", global, tenantId: "acme", limits: {} });
    assert.deepEqual(
      parse(
        [
          "tenants",
          "set-quota",
          "acme",
          "--max-pending",
          "1000",
          "--create-rate",
          "50.5",
          "--dispatch-rate",
          "20",
          "--max-leased",
          "20",
          "--max-payload-bytes",
          "65536",
        ],
        env,
      ),
      {
        command: "tenants set-quota",
        global,
        tenantId: "acme",
        limits: { maxPendingJobs: 1000, createRatePerSecond: 50.5, dispatchRatePerSecond: 20, maxLeasedAttempts: 20, maxPayloadBytes: 65536 },
      },
    );
    usageError(["tenants", "set-quota", "acme", "--max-pending", "0"], /--max-pending: must be between 1 and 1000000000/);
    usageError(["tenants", "set-quota", "acme", "--create-rate", "fast"], /--create-rate: expected a number from 0.01 to 1000000/);
    usageError(["tenants", "set-quota", "acme", "--dispatch-rate", "0"], /--dispatch-rate: expected a number from 0.01 to 1000000/);
  });
});

describe("CLI parsing: keys", () => {
  test("create, list and revoke", () => {
    const global = { url: "http://127.0.0.1:8080", token: "root", json: false };
    const env = { DUETIME_TOKEN: "root" };
    assert.deepEqual(parse(["keys", "create", "--tenant", "acme", "--role", "worker", "--name", "worker eu-1"], env), {
      command: "keys create",
      global,
      request: { tenantId: "acme", role: "worker", name: "worker eu-1" },
    });
    assert.deepEqual(parse(["keys", "create", "--role=admin"], env), { command: "keys create", global, request: { role: "admin" } });
    assert.deepEqual(parse(["keys", "list", "--tenant", "acme", "--limit", "5", "--cursor", "c1"], env), {
      command: "keys list",
      global,
      query: { tenantId: "acme", limit: 5, cursor: "c1" },
    });
    assert.deepEqual(parse(["keys", "list", "--json"], env), { command: "keys list", global: { ...global, json: true }, query: {} });
    assert.deepEqual(parse(["keys", "revoke", "ak_1"], env), { command: "keys revoke", global, keyId: "ak_1" });
    usageError(["keys", "revoke", "ak_1", "ak_2"], /unexpected argument "ak_2"/);
    usageError(["keys", "create", "--role", "worker", "extra"], /unexpected argument "extra"/);
  });
});

describe("CLI parsing: serve", () => {
  test("defaults", () => {
    assert.deepEqual(parse(["serve"]), { command: "serve", options: { host: "127.0.0.1", port: 8080, store: "sqlite:./duetime.db" } });
  });

  test("--grpc-port serves the worker protocol over gRPC too, from the flag or DUETIME_GRPC_PORT", () => {
    const cmd = parse(["serve", "--grpc-port", "9090"]);
    assert.ok(cmd.command === "serve");
    assert.equal(cmd.options.grpcPort, 9090);
    const env = parse(["serve"], { DUETIME_GRPC_PORT: "0" });
    assert.ok(env.command === "serve");
    assert.equal(env.options.grpcPort, 0);
    assert.equal((parse(["serve"]) as { options: { grpcPort?: number } }).options.grpcPort, undefined);
    usageError(["serve", "--grpc-port", "65536"], /--grpc-port/);
    usageError(["serve", "--grpc-port", "x"], /--grpc-port/);
    const cert = fileURLToPath(new URL("../../test/fixtures/grpc-tls.crt", import.meta.url));
    const key = fileURLToPath(new URL("../../test/fixtures/grpc-tls.key", import.meta.url));
    const tls = parse(["serve", "--grpc-port", "0", "--grpc-tls-cert", cert, "--grpc-tls-key", key]);
    assert.ok(tls.command === "serve");
    assert.deepEqual(tls.options.grpcTls, { certFile: cert, keyFile: key });
    usageError(["serve", "--grpc-tls-cert", cert, "--grpc-tls-key", key], /--grpc-tls-cert: only applies with --grpc-port/);
    usageError(["serve", "--grpc-port", "0", "--grpc-tls-cert", cert], /give both --grpc-tls-cert and --grpc-tls-key/);
    usageError(["serve", "--grpc-port", "0", "--grpc-tls-cert", cert, "--grpc-tls-key", "/nonexistent/key.pem"], /--grpc-tls-key: cannot read/);
  });

  test("--broker NAME=URL names broker connections, --broker-rate NAME=N their drain rates, from flags or the environment", () => {
    const cmd = parse([
      "serve",
      "--broker",
      "nats=nats://127.0.0.1:4222",
      "--broker",
      "rabbit=amqp://guest:guest@mq:5672/vh",
      "--broker-rate",
      "rabbit=250",
    ]);
    assert.ok(cmd.command === "serve");
    assert.deepEqual(cmd.options.brokers, {
      nats: { url: "nats://127.0.0.1:4222" },
      rabbit: { url: "amqp://guest:guest@mq:5672/vh", ratePerSecond: 250 },
    });
    const env = parse(["serve"], { DUETIME_BROKERS: " nats=tls://n:4222  amqp=amqps://mq ", DUETIME_BROKER_RATES: "nats=0.5" });
    assert.ok(env.command === "serve");
    assert.deepEqual(env.options.brokers, { nats: { url: "tls://n:4222", ratePerSecond: 0.5 }, amqp: { url: "amqps://mq" } });
    const flagWins = parse(["serve", "--broker", "a=nats://x"], { DUETIME_BROKERS: "b=nats://y" });
    assert.ok(flagWins.command === "serve");
    assert.deepEqual(Object.keys(flagWins.options.brokers ?? {}), ["a"]);
    usageError(["serve", "--broker", "nats://127.0.0.1:4222"], /--broker: expected NAME=URL/);
    usageError(["serve", "--broker", "a b=nats://x"], /--broker: expected NAME=URL/);
    usageError(["serve", "--broker", "q=redis://x:6379"], /--broker: q: a nats:\/\/, tls:\/\/, amqp:\/\/ or amqps:\/\/ URL, got redis:/);
    usageError(["serve", "--broker", "q=not a url"], /--broker: q: "not a url" is not a URL/);
    usageError(["serve", "--broker", "q=amqp://a,amqp://b"], /--broker: q: a list of URLs is for NATS seed servers only/);
    const seeds = parse(["serve", "--broker", "nats=nats://a:4222,nats://b:4222"]);
    assert.ok(seeds.command === "serve");
    assert.deepEqual(seeds.options.brokers, { nats: { url: "nats://a:4222,nats://b:4222" } });
    usageError(["serve", "--broker", "a=nats://x", "--broker", "a=nats://y"], /given twice/);
    usageError(["serve", "--broker", "a=nats://x", "--broker-rate", "b=10"], /--broker-rate: expected NAME=N for a broker given with --broker/);
    usageError(["serve", "--broker", "a=nats://x", "--broker-rate", "a=0"], /--broker-rate: a: expected messages a second/);
    usageError(["serve", "--broker", "a=nats://x", "--broker-rate", "a=fast"], /--broker-rate: a: expected messages a second/);
    usageError(["serve"], /DUETIME_BROKERS: expected NAME=URL/, { DUETIME_BROKERS: "nats://x" });
  });

  test("--due-index takes a redis:// URL, with its cluster and prefix settings, from flags or the environment", () => {
    const cmd = parse(["serve", "--due-index", "redis://127.0.0.1:6379", "--due-index-prefix", "prod:", "--due-index-cluster"]);
    assert.ok(cmd.command === "serve");
    assert.deepEqual(cmd.options.dueIndex, { url: "redis://127.0.0.1:6379", cluster: true, prefix: "prod:" });
    const env = parse(["serve"], { DUETIME_DUE_INDEX: "rediss://cache:6380", DUETIME_DUE_INDEX_CLUSTER: "off" });
    assert.ok(env.command === "serve");
    assert.deepEqual(env.options.dueIndex, { url: "rediss://cache:6380", cluster: false });
    usageError(["serve", "--due-index", "http://127.0.0.1:6379"], /--due-index: expected redis:\/\/host:port/);
    usageError(["serve", "--due-index", "redis://"], /--due-index: expected redis:\/\/host:port/);
    usageError(["serve", "--due-index", "redis://r:6379", "--due-index-prefix", "a{b}"], /--due-index-prefix: letters, digits/);
    usageError(["serve", "--due-index-prefix", "p:"], /--due-index-prefix: only applies with --due-index/);
    usageError(["serve", "--due-index-cluster"], /--due-index-cluster: only applies with --due-index/);
    usageError(["serve"], /DUETIME_DUE_INDEX_CLUSTER: expected on or off/, { DUETIME_DUE_INDEX: "redis://r:1", DUETIME_DUE_INDEX_CLUSTER: "yes" });
  });

  test("every option from the environment, and flags winning", () => {
    const env = {
      DUETIME_HOST: "0.0.0.0",
      DUETIME_PORT: "9000",
      DUETIME_STORE: "postgres://db/duetime",
      DUETIME_SIGNING_SECRET: "s3cret",
      DUETIME_ALLOW_TARGET_HOSTS: "127.0.0.1, localhost",
      DUETIME_API_KEYS: "k1:tenantA:admin,k2:tenantB:worker",
      DUETIME_BODY_LIMIT: "2048",
      DUETIME_LOG_LEVEL: "warn",
      DUETIME_NODE_ID: "node-a",
    };
    assert.deepEqual(parse(["serve"], env), {
      command: "serve",
      options: {
        host: "0.0.0.0",
        port: 9000,
        store: "postgres://db/duetime",
        nodeId: "node-a",
        signingSecret: "s3cret",
        allowTargetHosts: ["127.0.0.1", "localhost"],
        apiKeys: [
          { key: "k1", tenantId: "tenantA", role: "admin" },
          { key: "k2", tenantId: "tenantB", role: "worker" },
        ],
        bodyLimitBytes: 2048,
        logLevel: "warn",
      },
    });
    const flags = parse(["serve", "--port", "0", "--store", "sqlite::memory:", "--log-level", "silent", "--api-keys", "k:t:client"], env);
    assert.ok(flags.command === "serve");
    assert.equal(flags.options.port, 0);
    assert.equal(flags.options.store, "sqlite::memory:");
    assert.equal(flags.options.logLevel, "silent");
    assert.deepEqual(flags.options.apiKeys, [{ key: "k", tenantId: "t", role: "client" }]);
    assert.equal(flags.options.host, "0.0.0.0");
    const named = parse(["serve", "--node-id", "eu-1.b:2_x"], env);
    assert.ok(named.command === "serve");
    assert.equal(named.options.nodeId, "eu-1.b:2_x");
  });

  test("validates every value", () => {
    usageError(["serve", "--port", "65536"], /--port: must be between 0 and 65535/);
    usageError(["serve", "--port=-1"], /--port: must be between 0 and 65535/);
    usageError(["serve", "--port", "-1"], /argument is ambiguous/);
    usageError(["serve", "--port", "80.5"], /--port: expected an integer/);
    usageError(["serve"], /DUETIME_PORT: expected an integer/, { DUETIME_PORT: "eighty" });
    usageError(["serve", "--store", "mysql://x"], /--store: expected sqlite:PATH or postgres/);
    usageError(["serve", "--store", "sqlite:"], /--store/);
    usageError(["serve", "--api-keys", "k:t:owner"], /role must be admin, client or worker, got "owner"/);
    usageError(["serve", "--api-keys", "k:t"], /entry 1: expected key:tenant:role/);
    usageError(["serve"], /DUETIME_API_KEYS: entry 2/, { DUETIME_API_KEYS: "a:b:admin,nope" });
    usageError(["serve", "--body-limit", "0"], /--body-limit: must be between 1/);
    usageError(["serve", "--log-level", "loud"], /--log-level: expected one of fatal/);
    usageError(["serve", "--node-id", ""], /--node-id: expected 1 to 128 letters/);
    usageError(["serve", "--node-id", "a b"], /--node-id: expected 1 to 128 letters/);
    usageError(["serve", "--node-id=.a"], /--node-id: expected 1 to 128 letters/);
    usageError(["serve"], /DUETIME_NODE_ID: expected 1 to 128 letters/, { DUETIME_NODE_ID: "x".repeat(129) });
    usageError(["serve", "--allow-target-hosts", "a,,b"], /comma-separated list/);
    usageError(["serve", "--json"], /Unknown option '--json'/);
    usageError(["serve", "extra"], /unexpected argument "extra"/);
  });

  test("--tracing and DUETIME_TRACING turn tracing on; off by default", () => {
    const tracing = (argv: string[], env: Record<string, string> = {}) => {
      const cmd = parse(argv, env);
      assert.ok(cmd.command === "serve");
      return cmd.options.tracing;
    };
    assert.equal(tracing(["serve"]), undefined);
    assert.equal(tracing(["serve", "--tracing"]), true);
    assert.equal(tracing(["serve"], { DUETIME_TRACING: "on" }), true);
    assert.equal(tracing(["serve"], { DUETIME_TRACING: "off" }), undefined);
    usageError(["serve"], /DUETIME_TRACING: expected on or off/, { DUETIME_TRACING: "yes" });
    usageError(["serve", "--tracing=1"], /--tracing/);
    assert.match(SERVE_HELP, /--tracing\s+DUETIME_TRACING=on/);
  });

  test("--durability and DUETIME_DURABILITY choose what a commit must survive; the store's default otherwise", () => {
    const durability = (argv: string[], env: Record<string, string> = {}) => {
      const cmd = parse(argv, env);
      assert.ok(cmd.command === "serve");
      return cmd.options.storeOptions?.durability;
    };
    assert.equal(durability(["serve"]), undefined);
    assert.equal(durability(["serve", "--durability", "strict"]), "strict");
    assert.equal(durability(["serve", "--durability=accepted"]), "accepted");
    assert.equal(durability(["serve"], { DUETIME_DURABILITY: "strict" }), "strict");
    assert.equal(durability(["serve", "--durability", "accepted"], { DUETIME_DURABILITY: "strict" }), "accepted");
    usageError(["serve", "--durability", "fast"], /--durability: expected one of accepted, strict, got "fast"/);
    usageError(["serve"], /DUETIME_DURABILITY: expected one of accepted, strict/, { DUETIME_DURABILITY: "off" });
  });

  test("API key secrets never appear in messages", () => {
    assert.throws(
      () => parse(["serve", "--api-keys", "supersecret:t:owner"]),
      (err: Error) => !err.message.includes("supersecret"),
    );
  });
});
