// The CLI run for real: its commands against a server on loopback that
// before() starts once for the file, bin/duetime.js as a process, and serve.
// One file, since the cases share that server.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventEmitter } from "node:events";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import type { RunningServer, ServerOptions } from "../server/index.js";
import { startTestServer, type RecordedRequest, type TestReply, type TestServer } from "../../packages/sdk/src/testing/http-server.js";
import { DuetimeClient } from "@duetime/sdk";
import { main } from "./main.js";
import { captureIo } from "./test-support.js";

const BIN = fileURLToPath(new URL("../../bin/duetime.js", import.meta.url));

const JOB = {
  jobId: "job_1",
  name: "send-reminder",
  state: "SCHEDULED",
  target: { type: "queue", pool: "emails" },
  payload: { to: "a@b.c" },
  schedule: { cron: "0 9 * * MON-FRI", tz: "Europe/London", jitterSeconds: 0, misfire: "run_once", overlap: "allow" },
  retry: { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 3600 },
  timeoutSeconds: 300,
  priority: 0,
  nextRunAt: "2026-10-16T08:00:00.000Z",
  version: 1,
  createdAt: "2026-10-15T10:00:00.000Z",
  updatedAt: "2026-10-15T10:00:00.000Z",
};
const EXECUTION = {
  executionId: "ex_1",
  jobId: "job_1",
  scheduledFor: "2026-10-16T08:00:00.000Z",
  attempt: 2,
  state: "FAILED",
  dispatchedAt: "2026-10-16T08:00:00.010Z",
  dispatchedBy: "node-a",
  startedAt: "2026-10-16T08:00:00.020Z",
  finishedAt: "2026-10-16T08:00:01.000Z",
  error: { message: "smtp timeout", class: "transient" },
  workerId: "w1",
};

const CLUSTER = {
  storeTime: "2026-12-01T10:00:00.000Z",
  nodes: [
    { nodeId: "node-a", address: "10.0.0.1:8080", shards: [0, 1], lastHeartbeatAt: "2026-12-01T09:59:58.500Z", heartbeatAgeSeconds: 1.5 },
    { nodeId: "node-b", address: null, shards: [2], lastHeartbeatAt: "2026-12-01T09:59:59.800Z", heartbeatAgeSeconds: 0.2 },
  ],
  shards: [
    { shard: 0, owner: "node-a", epoch: 1, leaseUntil: "2026-12-01T10:00:05.000Z", leaseRemainingSeconds: 5 },
    { shard: 1, owner: "node-a", epoch: 1, leaseUntil: "2026-12-01T10:00:05.000Z", leaseRemainingSeconds: 5 },
    { shard: 2, owner: "node-b", epoch: 1, leaseUntil: "2026-12-01T10:00:05.000Z", leaseRemainingSeconds: 5 },
    { shard: 3, owner: "node-gone", epoch: 1, leaseUntil: "2026-12-01T10:00:05.000Z", leaseRemainingSeconds: -3 },
    { shard: 4, owner: null, epoch: 1, leaseUntil: "2026-12-01T10:00:05.000Z", leaseRemainingSeconds: -60 },
  ],
};

const BACKFILL = {
  items: [
    { scheduledFor: "2026-10-12T08:00:00.000Z", executionId: "ex_b1", created: true, readyAt: "2026-10-16T09:00:00.000Z" },
    { scheduledFor: "2026-10-13T08:00:00.000Z", executionId: "ex_b2", created: false, readyAt: null },
  ],
};
const OCCURRENCES = {
  items: [
    {
      scheduledFor: "2026-03-27T09:00:00.000Z",
      local: "2026-03-27T09:00:00",
      status: "dispatched",
      executionId: "ex_o1",
      executionState: "SUCCEEDED",
    },
    {
      scheduledFor: "2026-03-28T09:00:00.000Z",
      local: "2026-03-28T09:00:00",
      status: "skipped",
      reason: "overlap",
      executionId: "ex_o2",
      executionState: "SKIPPED",
    },
    { scheduledFor: "2026-03-29T01:00:00.000Z", local: "2026-03-29T01:30:00", status: "not_run", reason: "paused", dst: "gap" },
    { scheduledFor: "2026-03-30T08:00:00.000Z", local: "2026-03-30T09:00:00", status: "due" },
  ],
};

const API_KEY = { keyId: "ak_1", tenantId: "acme", role: "worker", name: "worker eu-1", createdAt: "2026-10-16T09:00:00.000Z" };

/** A server speaking the API.md routes the CLI uses, over canned data. */
const REPLAY = {
  replayId: "rp_1",
  tenantId: "default",
  state: "RUNNING",
  selection: { filter: { deadBefore: "2026-10-16T09:05:00.000Z" } },
  ratePerSecond: 10,
  total: null,
  replayed: 0,
  skipped: 0,
  actor: "anonymous",
  createdAt: "2026-10-16T09:05:00.000Z",
  updatedAt: "2026-10-16T09:05:00.000Z",
  finishedAt: null,
};
/** GET /v1/dead-letters/replays/rp_1 answers RUNNING with 4 replayed, then DONE with 7. */
let replayPolls = 0;

function route(req: RecordedRequest): TestReply {
  const url = new URL(req.url, "http://x");
  const notFound = (what: string): TestReply => ({ status: 404, body: { error: { code: "NOT_FOUND", message: `${what} not found` } } });
  const key = `${req.method} ${url.pathname}`;
  if (key === "GET /v1/jobs/job_1") return { status: 200, body: JOB };
  if (key === "GET /v1/jobs/job_local")
    return { status: 200, body: { ...JOB, jobId: "job_local", nextRunAtLocal: "2026-10-16T09:00:00+01:00[Europe/London]" } };
  if (key === "GET /v1/jobs/job_1/occurrences") return { status: 200, body: OCCURRENCES };
  if (key === "PATCH /v1/jobs/job_1") {
    if (req.headers["if-match"] === '"9"')
      return { status: 409, body: { error: { code: "VERSION_CONFLICT", message: "job job_1 is at version 1, not 9" } } };
    return {
      status: 200,
      headers: { etag: '"2"' },
      body: { ...JOB, ...(req.body as object), version: 2, nextRunAtLocal: "2026-10-16T10:00:00+02:00[Europe/Paris]" },
    };
  }
  if (key === "POST /v1/jobs/job_1:backfill") return { status: 201, body: BACKFILL };
  if (key === "GET /v1/cluster") return { status: 200, body: CLUSTER };
  if (key.startsWith("GET /v1/jobs/") && !key.endsWith("/executions") && !key.endsWith("/occurrences"))
    return notFound(`job ${JSON.stringify(decodeURIComponent(url.pathname.slice(9)))}`);
  if (key === "POST /v1/jobs") {
    const body = req.body as { schedule?: { cron?: string } };
    if (body.schedule?.cron === "bad") {
      return {
        status: 400,
        body: { error: { code: "INVALID_ARGUMENT", message: "schedule.cron: unknown field value", details: { field: "schedule.cron" } } },
      };
    }
    return { status: req.headers["idempotency-key"] === "seen" ? 200 : 201, body: { ...JOB, ...body } };
  }
  if (key === "GET /v1/jobs") return { status: 200, body: { items: [JOB], nextCursor: "c2" } };
  if (key === "DELETE /v1/jobs/job_1") return { status: 204 };
  if (key === "POST /v1/jobs/job_1:pause") return { status: 200, body: { ...JOB, state: "PAUSED" } };
  if (key === "POST /v1/jobs/job_1:trigger") return { status: 201, body: { ...EXECUTION, attempt: 0, state: "QUEUED", error: null } };
  if (key === "GET /v1/jobs/job_1/executions") return { status: 200, body: { items: [EXECUTION], nextCursor: null } };
  if (key === "GET /v1/dead-letters") return { status: 200, body: { items: [], nextCursor: null } };
  if (key === "POST /v1/dead-letters/ex_1:replay")
    return { status: 403, body: { error: { code: "PERMISSION_DENIED", message: "role admin required" } } };
  if (key === "POST /v1/keys") {
    const body = req.body as { tenantId?: string; role: string; name?: string };
    if (body.tenantId === "other")
      return {
        status: 403,
        body: {
          error: { code: "PERMISSION_DENIED", message: "tenantId: another tenant needs a bootstrap admin key", details: { field: "tenantId" } },
        },
      };
    return { status: 201, body: { ...API_KEY, tenantId: body.tenantId ?? "default", role: body.role, name: body.name ?? null, key: "dtk_s3cr3t" } };
  }
  if (key === "GET /v1/keys")
    return {
      status: 200,
      body: {
        items: [
          { ...API_KEY, revokedAt: "2026-10-16T10:00:00.000Z" },
          { ...API_KEY, keyId: "ak_2", name: null, revokedAt: null },
        ],
        nextCursor: "k2",
      },
    };
  if (key === "POST /v1/dead-letters:replay")
    return { status: 202, body: { ...REPLAY, ratePerSecond: (req.body as { ratePerSecond?: number }).ratePerSecond ?? 10 } };
  if (key === "GET /v1/dead-letters/replays/rp_1") {
    replayPolls++;
    return replayPolls === 1
      ? { status: 200, body: { ...REPLAY, replayed: 4 } }
      : { status: 200, body: { ...REPLAY, state: "DONE", replayed: 7, finishedAt: "2026-10-16T09:05:01.000Z" } };
  }
  if (key === "GET /v1/dead-letters/replays") return { status: 200, body: { items: [{ ...REPLAY, replayed: 3 }], nextCursor: null } };
  if (key === "DELETE /v1/keys/ak_1") return { status: 204 };
  if (key === "GET /v1/tenants/acme/limits")
    return {
      status: 200,
      body: {
        tenantId: "acme",
        weight: 3,
        maxPendingJobs: 1000,
        createRatePerSecond: null,
        dispatchRatePerSecond: null,
        maxLeasedAttempts: null,
        maxPayloadBytes: null,
      },
    };
  if (key === "PUT /v1/tenants/acme/limits")
    return {
      status: 200,
      body: {
        tenantId: "acme",
        weight: 1,
        maxPendingJobs: null,
        createRatePerSecond: null,
        dispatchRatePerSecond: null,
        maxLeasedAttempts: null,
        maxPayloadBytes: null,
        ...(req.body as object),
      },
    };
  if (key === "GET /v1/secrets/signing") {
    if (req.headers.authorization === "Bearer acme") return notFound("signing secret");
    return { status: 200, body: { tenantId: "default", secrets: ["whsec_new", "whsec_old"], source: "store" } };
  }
  if (key.startsWith("DELETE /v1/keys/")) return notFound("API key");
  if (key === "GET /v1/schedules/preview") {
    return { status: 200, body: { times: ["2026-03-30T08:00:00.000Z", "2026-03-31T08:00:00.000Z"], query: Object.fromEntries(url.searchParams) } };
  }
  return notFound("route");
}

let server: TestServer;
before(async () => {
  server = await startTestServer(route);
});
after(async () => {
  await server.close();
});

async function run(argv: string[], files: Record<string, string> = {}) {
  const io = captureIo({ DUETIME_URL: server.url }, files);
  const code = await main(argv, io);
  return { code, out: io.out, err: io.err };
}

describe("CLI against an HTTP server", () => {
  test("jobs get: human fields in UTC, or the API's JSON", async () => {
    const human = await run(["jobs", "get", "job_1"]);
    assert.equal(human.code, 0);
    assert.match(human.out, /^jobId: +job_1$/m);
    assert.match(human.out, /^schedule: +cron "0 9 \* \* MON-FRI" Europe\/London$/m);
    assert.match(human.out, /^nextRunAt: +2026-10-16T08:00:00\.000Z$/m);
    // a server without nextRunAtLocal: computed from nextRunAt and the job's zone
    assert.match(human.out, /^nextRunAtLocal: +2026-10-16T09:00:00\+01:00\[Europe\/London\]$/m);
    const json = await run(["jobs", "get", "job_1", "--json"]);
    assert.deepEqual(JSON.parse(json.out), JOB);
    const local = await run(["jobs", "get", "job_local"]);
    assert.match(local.out, /^nextRunAtLocal: +2026-10-16T09:00:00\+01:00\[Europe\/London\]$/m);
  });

  test("jobs update sends a PATCH with If-Match from --version, from flags or a file", async () => {
    const updated = await run(["jobs", "update", "job_1", "--version", "1", "--cron", "0 10 * * *", "--tz", "Europe/Paris"]);
    assert.equal(updated.code, 0, updated.err);
    assert.equal(updated.out, "updated job job_1 (version 2); next run 2026-10-16T08:00:00.000Z (2026-10-16T10:00:00+02:00[Europe/Paris])\n");
    const sent = server.requests.at(-1)!;
    assert.equal(sent.method, "PATCH");
    assert.equal(sent.url, "/v1/jobs/job_1");
    assert.equal(sent.headers["if-match"], '"1"');
    assert.deepEqual(sent.body, { schedule: { cron: "0 10 * * *", tz: "Europe/Paris" } });

    const fromFile = await run(["jobs", "update", "job_1", "--file", "patch.json", "--json"], { "patch.json": '{"priority": 7, "version": 1}' });
    assert.equal(fromFile.code, 0, fromFile.err);
    assert.equal(JSON.parse(fromFile.out).priority, 7);
    assert.deepEqual(server.requests.at(-1)!.body, { priority: 7, version: 1 });
    assert.equal(server.requests.at(-1)!.headers["if-match"], undefined);

    const stale = await run(["jobs", "update", "job_1", "--version", "9", "--name", "x"]);
    assert.equal(stale.code, 1);
    assert.equal(stale.err, "error: VERSION_CONFLICT: job job_1 is at version 1, not 9\n");
    const badFile = await run(["jobs", "update", "job_1", "--file", "nope.json"]);
    assert.equal(badFile.code, 2);
    assert.match(badFile.err, /Usage: duetime jobs update/);
  });

  test("jobs backfill posts the window and prints what was created", async () => {
    const human = await run(["jobs", "backfill", "job_1", "--from", "2026-10-12T00:00:00Z", "--to", "2026-10-14T00:00:00Z"]);
    assert.equal(human.code, 0, human.err);
    assert.deepEqual(server.requests.at(-1)!.body, { from: "2026-10-12T00:00:00Z", to: "2026-10-14T00:00:00Z" });
    assert.equal(server.requests.at(-1)!.url, "/v1/jobs/job_1:backfill");
    assert.match(human.out, /^SCHEDULED FOR \(UTC\) +EXECUTION +NEW +READY AT \(UTC\)$/m);
    assert.match(human.out, /^2026-10-12T08:00:00\.000Z +ex_b1 +yes +2026-10-16T09:00:00\.000Z$/m);
    assert.match(human.out, /^2026-10-13T08:00:00\.000Z +ex_b2 +no \(existed\) +-$/m);
    assert.match(human.out, /^backfilled 2 occurrences of job job_1: 1 new, 1 already there$/m);
    const json = await run(["jobs", "backfill", "job_1", "--from", "2026-10-12T00:00:00Z", "--to", "2026-10-14T00:00:00Z", "--json"]);
    assert.deepEqual(JSON.parse(json.out), BACKFILL);
  });

  test("jobs occurrences prints the run ledger: status, reason, DST mark, execution state", async () => {
    const human = await run(["jobs", "occurrences", "job_1", "--from", "2026-03-27T00:00:00Z", "--to", "2026-03-31T00:00:00Z"]);
    assert.equal(human.code, 0, human.err);
    assert.equal(server.requests.at(-1)!.url, "/v1/jobs/job_1/occurrences?from=2026-03-27T00%3A00%3A00Z&to=2026-03-31T00%3A00%3A00Z");
    assert.match(human.out, /^SCHEDULED FOR \(UTC\) +LOCAL +STATUS +REASON +DST +EXECUTION +STATE$/m);
    assert.match(human.out, /^2026-03-27T09:00:00\.000Z +2026-03-27T09:00:00 +dispatched +- +- +ex_o1 +SUCCEEDED$/m);
    assert.match(human.out, /^2026-03-28T09:00:00\.000Z +2026-03-28T09:00:00 +skipped +overlap +- +ex_o2 +SKIPPED$/m);
    assert.match(human.out, /^2026-03-29T01:00:00\.000Z +2026-03-29T01:30:00 +not_run +paused +moved: gap +- +-$/m);
    assert.match(human.out, /^2026-03-30T08:00:00\.000Z +2026-03-30T09:00:00 +due +- +- +- +-$/m);
    const json = await run(["jobs", "occurrences", "job_1", "--from", "2026-03-27T00:00:00Z", "--to", "2026-03-31T00:00:00Z", "--json"]);
    assert.deepEqual(JSON.parse(json.out), OCCURRENCES);
  });

  test("tenants show and set-quota print the limits, or JSON", async () => {
    const shown = await run(["tenants", "show", "acme", "--token", "root"]);
    assert.equal(shown.code, 0, shown.err);
    assert.match(shown.out, /^tenant: +acme$/m);
    assert.match(shown.out, /^weight: +3$/m);
    assert.match(shown.out, /^maxPendingJobs: +1000$/m);
    assert.match(shown.out, /^createRatePerSecond: +no limit$/m);
    const set = await run(["tenants", "set-quota", "acme", "--weight", "0.5", "--json"]);
    assert.equal(set.code, 0, set.err);
    assert.equal(server.requests.at(-1)!.method, "PUT");
    assert.deepEqual(server.requests.at(-1)!.body, { weight: 0.5 });
    assert.equal(JSON.parse(set.out).weight, 0.5);
  });

  test("keys create prints the secret once with a warning on stderr; list shows no secret; revoke", async () => {
    const created = await run(["keys", "create", "--tenant", "acme", "--role", "worker", "--name", "worker eu-1", "--token", "root"]);
    assert.equal(created.code, 0, created.err);
    assert.deepEqual(server.requests.at(-1)!.body, { tenantId: "acme", role: "worker", name: "worker eu-1" });
    assert.equal(server.requests.at(-1)!.headers.authorization, "Bearer root");
    assert.match(created.out, /^keyId: +ak_1$/m);
    assert.match(created.out, /^tenant: +acme$/m);
    assert.match(created.out, /^role: +worker$/m);
    assert.match(created.out, /^key: +dtk_s3cr3t$/m);
    assert.match(created.err, /^warning: store this key now.*shown only once/m);
    const json = await run(["keys", "create", "--role", "admin", "--json"]);
    assert.equal(json.code, 0, json.err);
    assert.equal(JSON.parse(json.out).key, "dtk_s3cr3t");
    assert.match(json.err, /^warning: /, "the warning never mixes with the JSON");

    const denied = await run(["keys", "create", "--tenant", "other", "--role", "admin"]);
    assert.equal(denied.code, 1);
    assert.equal(denied.err, "error: PERMISSION_DENIED: tenantId: another tenant needs a bootstrap admin key\n  field: tenantId\n");

    const list = await run(["keys", "list", "--tenant", "acme"]);
    assert.equal(list.code, 0, list.err);
    assert.equal(server.requests.at(-1)!.url, "/v1/keys?tenantId=acme");
    assert.match(list.out, /^KEY ID +TENANT +ROLE +NAME +CREATED \(UTC\) +REVOKED \(UTC\)$/m);
    assert.match(list.out, /^ak_1 +acme +worker +worker eu-1 +2026-10-16T09:00:00\.000Z +2026-10-16T10:00:00\.000Z$/m);
    assert.match(list.out, /^ak_2 +acme +worker +- +2026-10-16T09:00:00\.000Z +-$/m);
    assert.match(list.out, /^next page: --cursor k2$/m);
    assert.equal(JSON.parse((await run(["keys", "list", "--json"])).out).nextCursor, "k2");

    const revoked = await run(["keys", "revoke", "ak_1"]);
    assert.equal(revoked.code, 0, revoked.err);
    assert.equal(server.requests.at(-1)!.method, "DELETE");
    assert.match(revoked.out, /^revoked API key ak_1/);
    assert.equal((await run(["keys", "revoke", "ak_1", "--json"])).out, "");
    const unknown = await run(["keys", "revoke", "ak_9"]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /^error: NOT_FOUND: /);
  });

  test("secrets show prints the secrets one per line; --json the whole answer; a tenant without one exits 1", async () => {
    const shown = await run(["secrets", "show", "--token", "root"]);
    assert.equal(shown.code, 0, shown.err);
    assert.equal(server.requests.at(-1)!.url, "/v1/secrets/signing");
    assert.equal(server.requests.at(-1)!.headers.authorization, "Bearer root");
    assert.equal(shown.out, "whsec_new\nwhsec_old\n");
    const json = await run(["secrets", "show", "--json"]);
    assert.equal(json.code, 0, json.err);
    assert.deepEqual(JSON.parse(json.out), { tenantId: "default", secrets: ["whsec_new", "whsec_old"], source: "store" });
    const none = await run(["secrets", "show", "--token", "acme"]);
    assert.equal(none.code, 1);
    assert.equal(none.out, "");
    assert.match(none.err, /^error: NOT_FOUND: /);
  });

  test("cluster prints each live node's shards and heartbeat age, and counts the shards without a live owner", async () => {
    const shown = await run(["cluster"]);
    assert.equal(shown.code, 0, shown.err);
    assert.equal(server.requests.at(-1)!.url, "/v1/cluster");
    assert.match(shown.out, /^NODE +SHARDS +HEARTBEAT AGE +ADDRESS$/m);
    assert.match(shown.out, /^node-a +2 +1\.5 s +10\.0\.0\.1:8080$/m);
    assert.match(shown.out, /^node-b +1 +0\.2 s +-$/m);
    // shard 3's owner is gone, shard 4 has none: two of five without a live owner
    assert.match(shown.out, /^2 live nodes; 2 of 5 shards without a live owner \(store time 2026-12-01T10:00:00\.000Z\)$/m);
    const json = await run(["cluster", "--json"]);
    assert.deepEqual(JSON.parse(json.out), CLUSTER);
    const extra = await run(["cluster", "node-a"]);
    assert.equal(extra.code, 2);
  });

  test("API errors exit 1 with code, message and field on stderr", async () => {
    const missing = await run(["jobs", "get", "nope"]);
    assert.equal(missing.code, 1);
    assert.equal(missing.out, "");
    assert.equal(missing.err, 'error: NOT_FOUND: job "nope" not found\n');
    const invalid = await run(["jobs", "create", "--name", "n", "--queue", "q", "--cron", "bad"]);
    assert.equal(invalid.code, 1);
    assert.equal(invalid.err, "error: INVALID_ARGUMENT: schedule.cron: unknown field value\n  field: schedule.cron\n");
    const denied = await run(["dlq", "replay", "ex_1"]);
    assert.equal(denied.code, 1);
    assert.match(denied.err, /^error: PERMISSION_DENIED: role admin required$/m);
  });

  test("dlq replay --all --rate 10/s starts a bulk replay; --wait follows its progress to the end; dlq replays shows them", async () => {
    const started = await run(["dlq", "replay", "--all", "--rate", "10/s", "--pool", "emails"]);
    assert.equal(started.code, 0, started.err);
    assert.deepEqual(server.requests.at(-1)!.body, { filter: { pool: "emails" }, ratePerSecond: 10 });
    assert.equal(started.out, "started replay rp_1 RUNNING: 0 replayed at 10/s\nfollow it: duetime dlq replays rp_1\n");
    replayPolls = 0;
    const waited = await run(["dlq", "replay", "e1", "e2", "--rate", "600/m", "--wait"]);
    assert.equal(waited.code, 0, waited.err);
    assert.equal(
      waited.out,
      "started replay rp_1 RUNNING: 0 replayed at 10/s\nreplay rp_1 RUNNING: 4 replayed at 10/s\nreplay rp_1 DONE: 7 replayed at 10/s\n",
    );
    assert.equal(replayPolls, 2, "polled until DONE");
    replayPolls = 1;
    const json = await run(["dlq", "replay", "--all", "--wait", "--json"]);
    assert.equal(JSON.parse(json.out).state, "DONE", "--json prints the final replay");
    const list = await run(["dlq", "replays"]);
    assert.match(list.out, /^rp_1 +RUNNING +3 +0 +10\/s +2026-10-16T09:05:00\.000Z +\{"deadBefore":"2026-10-16T09:05:00\.000Z"\}$/m);
    replayPolls = 1;
    assert.equal((await run(["dlq", "replays", "rp_1"])).out, "replay rp_1 DONE: 7 replayed at 10/s\n");
    const bad = await run(["dlq", "replay", "--all", "--rate", "fast"]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--rate: expected a rate such as 10\/s/);
  });

  test("jobs create sends the spec and the idempotency key, from flags or a file", async () => {
    const created = await run(["jobs", "create", "--name", "n", "--queue", "q", "--delay", "2h", "--idempotency-key", "fresh"]);
    assert.equal(created.code, 0);
    assert.match(created.out, /^created job job_1; next run 2026-10-16T08:00:00\.000Z$/m);
    const sent = server.requests.at(-1)!;
    assert.equal(sent.headers["idempotency-key"], "fresh");
    assert.deepEqual(sent.body, { name: "n", target: { type: "queue", pool: "q" }, schedule: { delaySeconds: 7200 } });

    const again = await run(["jobs", "create", "--name", "n", "--queue", "q", "--idempotency-key", "seen"]);
    assert.match(again.out, /already exists/);

    const spec = { name: "from-file", target: { type: "queue", pool: "q" }, schedule: { runAt: "2026-10-16T09:00:00Z" } };
    const fromFile = await run(["jobs", "create", "--file", "job.json", "--json"], { "job.json": JSON.stringify(spec) });
    assert.equal(fromFile.code, 0);
    assert.deepEqual(server.requests.at(-1)!.body, spec);
    assert.equal(JSON.parse(fromFile.out).name, "from-file");

    const unreadable = await run(["jobs", "create", "--file", "missing.json"]);
    assert.equal(unreadable.code, 2);
    assert.match(unreadable.err, /--file: cannot read "missing.json"/);
    const badJson = await run(["jobs", "create", "--file", "bad.json"], { "bad.json": "{" });
    assert.equal(badJson.code, 2);
    assert.match(badJson.err, /not valid JSON/);
  });

  test("list, cancel, pause, trigger, executions, dlq and cron print compact lines", async () => {
    const list = await run(["jobs", "list", "--state", "SCHEDULED", "--limit", "1"]);
    assert.equal(list.code, 0);
    assert.match(list.out, /^JOB ID +NAME +STATE +NEXT RUN \(UTC\) +SCHEDULE +TARGET$/m);
    assert.match(list.out, /^job_1 +send-reminder +SCHEDULED +2026-10-16T08:00:00\.000Z +cron "0 9 \* \* MON-FRI" Europe\/London +queue emails$/m);
    assert.match(list.out, /next page: --cursor c2/);
    assert.equal(server.requests.at(-1)!.url, "/v1/jobs?state=SCHEDULED&limit=1");

    assert.deepEqual(await run(["jobs", "cancel", "job_1"]), { code: 0, out: "cancelled job job_1\n", err: "" });
    assert.deepEqual(await run(["jobs", "cancel", "job_1", "--json"]), { code: 0, out: "", err: "" });
    assert.match((await run(["jobs", "pause", "job_1"])).out, /job job_1 is PAUSED/);
    assert.match((await run(["jobs", "trigger", "job_1"])).out, /triggered execution ex_1 of job job_1: attempt 0, QUEUED/);

    const executions = await run(["executions", "job_1"]);
    assert.match(executions.out, /^ex_1 +2 +FAILED +2026-10-16T08:00:00\.000Z .* w1 +transient: smtp timeout$/m);
    assert.equal((await run(["dlq", "list"])).out, "no dead letters\n");

    // cron asks a server only with --url (DUETIME_URL alone: computed offline, offline.test.ts)
    const requests = server.requests.length;
    await run(["cron", "0 9 * * MON-FRI", "--tz", "Europe/London", "--count", "2"]);
    assert.equal(server.requests.length, requests);
    const cron = await run(["cron", "0 9 * * MON-FRI", "--tz", "Europe/London", "--count", "2", "--url", server.url]);
    assert.equal(
      cron.out,
      "LOCAL (Europe/London)      UTC                       NOTE\n2026-03-30T09:00:00+01:00  2026-03-30T08:00:00.000Z\n2026-03-31T09:00:00+01:00  2026-03-31T08:00:00.000Z\n",
    );
    assert.equal(server.requests.at(-1)!.url, "/v1/schedules/preview?cron=0+9+*+*+MON-FRI&tz=Europe%2FLondon&count=2");
  });
});

describe("bin/duetime.js", () => {
  const exec = (args: string[], env: Record<string, string> = {}) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
      );
    });

  test("jobs get --json prints the job and exits 0; an unknown job exits 1", async () => {
    const ok = await exec(["jobs", "get", "job_1", "--url", server.url, "--json"]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(JSON.parse(ok.stdout), JOB);
    const missing = await exec(["jobs", "get", "X", "--url", server.url, "--json"]);
    assert.equal(missing.code, 1);
    assert.equal(missing.stdout, "");
    assert.match(missing.stderr, /^error: NOT_FOUND: job "X" not found$/m);
  });

  test("usage errors exit 2; DUETIME_URL is honoured", async () => {
    const bad = await exec(["jobs", "get", "job_1", "--frobnicate"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /Unknown option '--frobnicate'/);
    assert.match(bad.stderr, /Usage: duetime jobs get <jobId>/);
    const viaEnv = await exec(["jobs", "get", "job_1", "--json"], { DUETIME_URL: server.url });
    assert.equal(viaEnv.code, 0, viaEnv.stderr);
  });
});

describe("serve", () => {
  function fakeServer() {
    const calls: ServerOptions[] = [];
    let closed = 0;
    const startServer = async (options: ServerOptions): Promise<RunningServer> => {
      calls.push(options);
      return {
        url: `http://${options.host}:${options.port}`,
        close: async () => void closed++,
      } as unknown as RunningServer;
    };
    return { calls, startServer, closed: () => closed };
  }

  test("starts the server with the parsed options, prints the URL, and closes on SIGTERM with exit 0", async () => {
    const fake = fakeServer();
    const signals = new EventEmitter();
    const io = captureIo({ DUETIME_PORT: "9123" });
    const printed = new Promise<void>((resolve) => {
      const stdout = io.stdout;
      io.stdout = (t) => {
        stdout(t);
        resolve();
      };
    });
    const exit = main(["serve", "--store", "sqlite::memory:"], io, { serve: { startServer: fake.startServer, signals: signals as never } });
    await printed;
    assert.equal(io.out, "duetime listening on http://127.0.0.1:9123\n");
    assert.deepEqual(fake.calls, [{ host: "127.0.0.1", port: 9123, store: "sqlite::memory:" }]);
    signals.emit("SIGTERM");
    assert.equal(await exit, 0);
    assert.equal(fake.closed(), 1);
    assert.equal(signals.listenerCount("SIGTERM") + signals.listenerCount("SIGINT"), 0);
  });

  test("a close() that overruns the deadline ends the process with exit 1", async () => {
    const signals = new EventEmitter();
    const io = captureIo();
    let exited: (code: number) => void;
    const exitCode = new Promise<number>((resolve) => (exited = resolve));
    const startServer = async (): Promise<RunningServer> => ({ url: "http://x", close: () => new Promise(() => {}) }) as unknown as RunningServer;
    const printed = new Promise<void>((resolve) => {
      const stdout = io.stdout;
      io.stdout = (t) => {
        stdout(t);
        resolve();
      };
    });
    void main(["serve"], io, { serve: { startServer, signals: signals as never, exit: (c) => exited(c), closeDeadlineMs: 20 } });
    await printed;
    signals.emit("SIGINT");
    assert.equal(await exitCode, 1);
    assert.match(io.err, /SIGINT: shutting down/);
    assert.match(io.err, /shutdown took too long/);
  });

  test("a server that fails to start exits 1 with the reason", async () => {
    const io = captureIo();
    const startServer = async (): Promise<RunningServer> => {
      throw Object.assign(new Error("listen EADDRINUSE"), { code: "EADDRINUSE" });
    };
    assert.equal(await main(["serve"], io, { serve: { startServer } }), 1);
    assert.equal(io.err, "error: the server did not start: EADDRINUSE: listen EADDRINUSE\n");
  });
});

describe("bin/duetime.js serve (the real server)", () => {
  test("prints the listening URL, serves, and exits 0 on SIGTERM within 10 s", async () => {
    const dir = await mkdtemp(join(tmpdir(), "duetime-cli-"));
    const child = spawn(process.execPath, [BIN, "serve", "--port", "0", "--store", `sqlite:${join(dir, "t.db")}`, "--log-level", "silent"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      let stdout = "";
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no URL printed: ${stdout}`)), 20_000);
        child.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk.toString();
          const match = /listening on (http:\/\/\S+)/.exec(stdout);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
        child.once("exit", () => reject(new Error(`exited before listening: ${stdout}`)));
      });
      const client = new DuetimeClient({ url });
      await client.health();
      await client.close();
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      const started = performance.now();
      child.kill("SIGTERM");
      assert.equal(await exited, 0);
      assert.ok(performance.now() - started < 10_000);
    } finally {
      child.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    }
  });
});
