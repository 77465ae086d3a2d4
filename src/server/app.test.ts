// The HTTP layer against a recording Service (test-support.ts): every route
// reaches the right service method with the right arguments, bad input is a
// 400 naming the dotted field, errors keep the envelope and the catalog's
// status, auth and roles hold, and /openapi.json lists the contract. One
// file, long on purpose: one route table's cases against one app.

import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance, InjectOptions } from "fastify";
import { DuetimeError, ERROR_CODES } from "../core/errors.js";
import * as schemas from "../core/schemas.js";
import { validate } from "../core/validate.js";
import type { JsonSchema } from "../core/schemas.js";
import type { StoredKey } from "../engine/service.js";
import { buildApp, type AppOptions } from "./app.js";
import { displayPath } from "./routes.js";
import { createHash } from "node:crypto";
import {
  RecordingService,
  SAMPLE_BACKFILL,
  SAMPLE_DEAD_LETTER,
  SAMPLE_EXECUTION,
  SAMPLE_JOB,
  SAMPLE_KEY,
  SAMPLE_OCCURRENCES,
} from "./test-support.js";

const apps: FastifyInstance[] = [];
after(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

function makeApp(options: Partial<AppOptions> = {}): { app: FastifyInstance; svc: RecordingService } {
  const svc = new RecordingService();
  const app = buildApp({ service: svc, ...options });
  apps.push(app);
  return { app, svc };
}

const JOB = {
  name: "send-reminder",
  target: { type: "http", url: "https://example.test/hook", method: "POST", headers: { "x-a": "b" } },
  payload: { any: "json" },
  schedule: { cron: "0 9 * * MON-FRI", tz: "Europe/London", jitterSeconds: 300, misfire: "run_once", overlap: "allow" },
  retry: { maxAttempts: 5, backoffSeconds: 10, maxBackoffSeconds: 3600 },
  timeoutSeconds: 300,
  priority: 0,
};
const QUEUE_JOB = { name: "q", target: { type: "queue", pool: "emails" }, schedule: { delaySeconds: 30 } };

interface ErrorBody {
  error: { code: string; message: string; details?: { field?: string; [k: string]: unknown } };
}

function assertEnvelope(res: { statusCode: number; json(): unknown }, status: number, code: string, field?: string): ErrorBody {
  const body = res.json() as ErrorBody;
  assert.equal(res.statusCode, status, JSON.stringify(body));
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(ERROR_CODES[code as keyof typeof ERROR_CODES].status, status);
  assert.equal(typeof body.error.message, "string");
  if (field !== undefined) {
    assert.equal(body.error.details?.field, field, body.error.message);
    assert.ok(body.error.message.startsWith(`${field}: `), body.error.message);
  }
  return body;
}

// ---------------------------------------------------------------- every route reaches the service

interface RouteCase {
  name: string;
  request: InjectOptions;
  status: number;
  method: string;
  args: unknown[];
  body?: unknown;
}

const routeCases: RouteCase[] = [
  {
    name: "POST /v1/jobs with Idempotency-Key",
    request: { method: "POST", url: "/v1/jobs", payload: JOB, headers: { "idempotency-key": "k-1" } },
    status: 201,
    method: "createJob",
    args: [JOB, { idempotencyKey: "k-1" }],
    body: { ...SAMPLE_JOB, created: true },
  },
  {
    name: "POST /v1/jobs without a key",
    request: { method: "POST", url: "/v1/jobs", payload: QUEUE_JOB },
    status: 201,
    method: "createJob",
    args: [QUEUE_JOB, undefined],
  },
  {
    name: "POST /v1/jobs:batch",
    request: { method: "POST", url: "/v1/jobs:batch", payload: { jobs: [QUEUE_JOB, { ...JOB, idempotencyKey: "b-1" }] } },
    status: 200,
    method: "createJobs",
    args: [[QUEUE_JOB, { ...JOB, idempotencyKey: "b-1" }]],
    body: {
      items: [
        { jobId: "job_b0", nextRunAt: "2026-10-16T09:00:00.000Z", created: true },
        { jobId: "job_b1", nextRunAt: "2026-10-16T09:00:00.000Z", created: true },
      ],
    },
  },
  {
    name: "GET /v1/jobs with every filter",
    request: { method: "GET", url: "/v1/jobs?state=PAUSED&name=send-reminder&limit=10&cursor=abc" },
    status: 200,
    method: "listJobs",
    args: [{ state: "PAUSED", name: "send-reminder", limit: 10, cursor: "abc" }],
    body: { items: [SAMPLE_JOB], nextCursor: "c2" },
  },
  {
    name: "GET /v1/jobs without a query",
    request: { method: "GET", url: "/v1/jobs" },
    status: 200,
    method: "listJobs",
    args: [{}],
  },
  {
    name: "GET /v1/jobs/{jobId}",
    request: { method: "GET", url: "/v1/jobs/job_A-1" },
    status: 200,
    method: "getJob",
    args: ["job_A-1"],
    body: { ...SAMPLE_JOB, jobId: "job_A-1" },
  },
  {
    name: "DELETE /v1/jobs/{jobId} without a body",
    request: { method: "DELETE", url: "/v1/jobs/job_1" },
    status: 204,
    method: "cancelJob",
    args: ["job_1"],
  },
  {
    name: "DELETE /v1/jobs/{jobId} with {}",
    request: { method: "DELETE", url: "/v1/jobs/job_1", payload: {} },
    status: 204,
    method: "cancelJob",
    args: ["job_1"],
  },
  {
    name: "DELETE /v1/jobs/{jobId} with an empty JSON body",
    request: { method: "DELETE", url: "/v1/jobs/job_1", payload: "", headers: { "content-type": "application/json" } },
    status: 204,
    method: "cancelJob",
    args: ["job_1"],
  },
  {
    name: "POST /v1/jobs/{jobId}:pause without a body",
    request: { method: "POST", url: "/v1/jobs/job_1:pause" },
    status: 200,
    method: "pauseJob",
    args: ["job_1"],
    body: { ...SAMPLE_JOB, state: "PAUSED" },
  },
  {
    name: "POST /v1/jobs/{jobId}:pause with an empty JSON body",
    request: { method: "POST", url: "/v1/jobs/job_1:pause", payload: "", headers: { "content-type": "application/json" } },
    status: 200,
    method: "pauseJob",
    args: ["job_1"],
  },
  {
    name: "POST /v1/jobs/{jobId}%3Aresume (percent-encoded colon) with {}",
    request: { method: "POST", url: "/v1/jobs/job_1%3Aresume", payload: {} },
    status: 200,
    method: "resumeJob",
    args: ["job_1"],
  },
  {
    name: "POST /v1/jobs/{jobId}:trigger",
    request: { method: "POST", url: "/v1/jobs/job_1:trigger", payload: {} },
    status: 201,
    method: "triggerJob",
    args: ["job_1"],
    body: SAMPLE_EXECUTION,
  },
  {
    name: "PATCH /v1/jobs/{jobId} without a version",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "renamed", priority: 5 } },
    status: 200,
    method: "updateJob",
    args: ["job_1", { name: "renamed", priority: 5 }, undefined],
    body: { ...SAMPLE_JOB, name: "renamed", priority: 5, version: 2 },
  },
  {
    name: "PATCH /v1/jobs/{jobId} with a body version",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { schedule: { cron: "0 10 * * *", tz: "Europe/London" }, version: 7 } },
    status: 200,
    method: "updateJob",
    args: ["job_1", { schedule: { cron: "0 10 * * *", tz: "Europe/London" }, version: 7 }, undefined],
    body: { ...SAMPLE_JOB, schedule: { cron: "0 10 * * *", tz: "Europe/London" }, version: 8 },
  },
  {
    name: "PATCH /v1/jobs/{jobId} with a quoted If-Match",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { payload: null }, headers: { "if-match": '"7"' } },
    status: 200,
    method: "updateJob",
    args: ["job_1", { payload: null }, { ifMatch: '"7"' }],
    body: { ...SAMPLE_JOB, payload: null, version: 8 },
  },
  {
    name: "PATCH /v1/jobs/{jobId} with a weak If-Match equal to the body version",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { retry: { maxAttempts: 9 }, version: 12 }, headers: { "if-match": 'W/"12"' } },
    status: 200,
    method: "updateJob",
    args: ["job_1", { retry: { maxAttempts: 9 }, version: 12 }, { ifMatch: 'W/"12"' }],
  },
  {
    name: "PATCH /v1/jobs/{jobId} with a bare If-Match, as application/merge-patch+json",
    request: {
      method: "PATCH",
      url: "/v1/jobs/job_1",
      payload: JSON.stringify({ timeoutSeconds: 60, target: { type: "queue", pool: "other" } }),
      headers: { "if-match": "3", "content-type": "application/merge-patch+json" },
    },
    status: 200,
    method: "updateJob",
    args: ["job_1", { timeoutSeconds: 60, target: { type: "queue", pool: "other" } }, { ifMatch: "3" }],
  },
  {
    name: "PATCH /v1/jobs/{jobId} with If-Match: * (any version)",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { schedule: { delaySeconds: 60 } }, headers: { "if-match": "*" } },
    status: 200,
    method: "updateJob",
    args: ["job_1", { schedule: { delaySeconds: 60 } }, { ifMatch: "*" }],
    body: { ...SAMPLE_JOB, schedule: { delaySeconds: 60 }, version: 2 },
  },
  {
    name: "POST /v1/jobs/{jobId}:backfill",
    request: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-12T00:00:00+02:00", to: "2026-10-14T00:00:00Z" } },
    status: 201,
    method: "backfillJob",
    args: ["job_1", { from: "2026-10-12T00:00:00+02:00", to: "2026-10-14T00:00:00Z" }],
    body: SAMPLE_BACKFILL,
  },
  {
    name: "GET /v1/jobs/{jobId}/occurrences",
    request: { method: "GET", url: "/v1/jobs/job_1/occurrences?from=2026-03-27T00%3A00%3A00Z&to=2026-03-31T00%3A00%3A00%2B01%3A00" },
    status: 200,
    method: "listOccurrences",
    args: ["job_1", { from: "2026-03-27T00:00:00Z", to: "2026-03-31T00:00:00+01:00" }],
    body: { items: SAMPLE_OCCURRENCES },
  },
  {
    name: "GET /v1/jobs/{jobId}/executions",
    request: { method: "GET", url: "/v1/jobs/job_1/executions?limit=2&cursor=c1" },
    status: 200,
    method: "listExecutions",
    args: ["job_1", { limit: 2, cursor: "c1" }],
    body: { items: [SAMPLE_EXECUTION], nextCursor: null },
  },
  {
    name: "POST /v1/pools/{pool}/lease with acks",
    request: {
      method: "POST",
      url: "/v1/pools/emails/lease",
      payload: {
        workerId: "w1",
        max: 10,
        leaseSeconds: 30,
        waitSeconds: 0,
        complete: [{ executionId: "exe_0", attempt: 1, result: { ok: true } }],
        fail: [{ executionId: "exe_2", attempt: 2, error: { message: "x", class: "permanent" } }],
      },
    },
    status: 200,
    method: "lease",
    args: [
      "emails",
      {
        workerId: "w1",
        max: 10,
        leaseSeconds: 30,
        waitSeconds: 0,
        complete: [{ executionId: "exe_0", attempt: 1, result: { ok: true } }],
        fail: [{ executionId: "exe_2", attempt: 2, error: { message: "x", class: "permanent" } }],
      },
    ],
  },
  {
    name: "POST /v1/executions/{executionId}/heartbeat",
    request: { method: "POST", url: "/v1/executions/exe_1/heartbeat", payload: { attempt: 1, leaseSeconds: 60 } },
    status: 200,
    method: "heartbeat",
    args: ["exe_1", { attempt: 1, leaseSeconds: 60 }],
    body: { leaseUntil: "2026-10-16T09:01:00.000Z", cancelRequested: false },
  },
  {
    name: "POST /v1/executions/{executionId}/complete with a result",
    request: { method: "POST", url: "/v1/executions/exe_1/complete", payload: { attempt: 2, result: { sent: 3 } } },
    status: 200,
    method: "complete",
    args: ["exe_1", 2, { sent: 3 }],
    body: { state: "SUCCEEDED" },
  },
  {
    name: "POST /v1/executions/{executionId}/complete without a result",
    request: { method: "POST", url: "/v1/executions/exe_1/complete", payload: { attempt: 1 } },
    status: 200,
    method: "complete",
    args: ["exe_1", 1, undefined],
  },
  {
    name: "POST /v1/executions/{executionId}/fail",
    request: {
      method: "POST",
      url: "/v1/executions/exe_1/fail",
      payload: { attempt: 1, error: { message: "slow down", class: "throttled", retryAfterSeconds: 5, status: 429 } },
    },
    status: 200,
    method: "fail",
    args: ["exe_1", 1, { message: "slow down", class: "throttled", retryAfterSeconds: 5, status: 429 }],
    body: { state: "FAILED", retryAt: "2026-10-16T09:00:10.000Z" },
  },
  {
    name: "POST /v1/executions:complete",
    request: { method: "POST", url: "/v1/executions:complete", payload: { items: [{ executionId: "e1", attempt: 1 }] } },
    status: 200,
    method: "completeMany",
    args: [[{ executionId: "e1", attempt: 1 }]],
    body: { items: [{ executionId: "e1", attempt: 1, status: 200, state: "SUCCEEDED" }] },
  },
  {
    name: "POST /v1/executions:fail",
    request: {
      method: "POST",
      url: "/v1/executions:fail",
      payload: { items: [{ executionId: "e1", attempt: 1, error: { message: "x" } }] },
    },
    status: 200,
    method: "failMany",
    args: [[{ executionId: "e1", attempt: 1, error: { message: "x" } }]],
    body: { items: [{ executionId: "e1", attempt: 1, status: 409, error: { code: "LEASE_LOST", message: "lease lost" } }] },
  },
  {
    name: "GET /v1/pools/{pool}/stats",
    request: { method: "GET", url: "/v1/pools/emails.v2/stats" },
    status: 200,
    method: "poolStats",
    args: ["emails.v2"],
    body: { pending: 1, queued: 2, running: 3 },
  },
  { name: "GET /v1/stats", request: { method: "GET", url: "/v1/stats" }, status: 200, method: "stats", args: [] },
  {
    name: "GET /v1/dead-letters",
    request: { method: "GET", url: "/v1/dead-letters?limit=500" },
    status: 200,
    method: "listDeadLetters",
    args: [{ limit: 500 }],
    body: { items: [SAMPLE_DEAD_LETTER], nextCursor: null },
  },
  {
    name: "POST /v1/dead-letters/{executionId}:replay",
    request: { method: "POST", url: "/v1/dead-letters/exe_9:replay" },
    status: 201,
    method: "replayDeadLetter",
    args: ["exe_9"],
  },
  { name: "GET /v1/audit", request: { method: "GET", url: "/v1/audit?limit=3" }, status: 200, method: "listAudit", args: [{ limit: 3 }] },
  { name: "GET /v1/cluster", request: { method: "GET", url: "/v1/cluster" }, status: 200, method: "cluster", args: [] },
  {
    name: "GET /v1/secrets/signing",
    request: { method: "GET", url: "/v1/secrets/signing" },
    status: 200,
    method: "signingSecrets",
    args: [],
    body: { tenantId: "default", secrets: ["whsec_new", "whsec_old"], source: "config" },
  },
  {
    name: "POST /v1/keys",
    request: { method: "POST", url: "/v1/keys", payload: { tenantId: "acme", role: "worker", name: "worker eu-1" } },
    status: 201,
    method: "createKey",
    args: [{ tenantId: "acme", role: "worker", name: "worker eu-1" }],
    body: {
      keyId: SAMPLE_KEY.keyId,
      key: "dtk_secretsecretsecretsecretsecret",
      tenantId: "acme",
      role: "worker",
      name: "worker eu-1",
      createdAt: SAMPLE_KEY.createdAt,
    },
  },
  {
    name: "POST /v1/keys with the role only",
    request: { method: "POST", url: "/v1/keys", payload: { role: "admin" } },
    status: 201,
    method: "createKey",
    args: [{ role: "admin" }],
  },
  {
    name: "GET /v1/keys",
    request: { method: "GET", url: "/v1/keys?limit=2&cursor=abc&tenantId=acme" },
    status: 200,
    method: "listKeys",
    args: [{ limit: 2, cursor: "abc", tenantId: "acme" }],
    body: { items: [SAMPLE_KEY], nextCursor: null },
  },
  {
    name: "DELETE /v1/keys/{keyId}",
    request: { method: "DELETE", url: `/v1/keys/${SAMPLE_KEY.keyId}` },
    status: 204,
    method: "revokeKey",
    args: [SAMPLE_KEY.keyId],
  },
  {
    name: "GET /v1/schedules/preview",
    request: {
      method: "GET",
      url: `/v1/schedules/preview?cron=${encodeURIComponent("0 9 * * MON-FRI")}&tz=Europe%2FLondon&from=2026-10-16T00%3A00%3A00%2B01%3A00&count=5`,
    },
    status: 200,
    method: "previewSchedule",
    args: [{ cron: "0 9 * * MON-FRI", tz: "Europe/London", from: "2026-10-16T00:00:00+01:00", count: 5 }],
    body: { times: ["2026-10-16T09:00:00.000Z", "2026-10-19T08:00:00.000Z"] },
  },
];

describe("every route reaches the service with the right arguments", () => {
  const { app, svc } = makeApp();
  for (const c of routeCases) {
    test(c.name, async () => {
      const before = svc.calls.length;
      const res = await app.inject(c.request);
      assert.equal(res.statusCode, c.status, res.body);
      assert.equal(svc.calls.length, before + 1, "exactly one service call");
      const call = svc.last();
      assert.equal(call.method, c.method);
      assert.deepEqual(call.args, c.args);
      if (c.method !== "previewSchedule") {
        assert.equal(call.ctx?.tenantId, "default");
        assert.equal(call.ctx?.actor, "anonymous");
        assert.deepEqual([...(call.ctx?.roles ?? [])].sort(), ["admin", "client", "worker"]);
        assert.ok(call.ctx?.signal instanceof AbortSignal);
        assert.equal(call.ctx?.signal?.aborted, false, "a completed request does not abort its signal");
      }
      if (c.status === 204) assert.equal(res.body, "");
      else assert.match(String(res.headers["content-type"]), /^application\/json/);
      if (c.body !== undefined) assert.deepEqual(res.json(), c.body);
    });
  }

  test("GET and PATCH of a job answer its version as ETag", async () => {
    svc.override.getJob = async () => ({ ...SAMPLE_JOB, version: 41 });
    try {
      const got = await app.inject({ method: "GET", url: "/v1/jobs/job_1" });
      assert.equal(got.headers.etag, '"41"');
    } finally {
      delete svc.override.getJob;
    }
    const patched = await app.inject({ method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "x" }, headers: { "if-match": '"41"' } });
    assert.equal(patched.statusCode, 200);
    assert.equal(patched.headers.etag, '"42"');
    assert.equal((patched.json() as { version: number }).version, 42);
  });

  test("a replayed create (created: false) answers 200 with Location", async () => {
    svc.override.createJob = async () => ({ ...SAMPLE_JOB, created: false });
    try {
      const res = await app.inject({ method: "POST", url: "/v1/jobs", payload: QUEUE_JOB, headers: { "idempotency-key": "k" } });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers.location, "/v1/jobs/job_1");
    } finally {
      delete svc.override.createJob;
    }
  });

  test("a batch reaches the service as sent, and its answers come back in order", async () => {
    // The service checks each job on its own (a bad one answers its error in its place): test/integration.test.ts.
    const jobs = [QUEUE_JOB, { ...QUEUE_JOB, target: { type: "http", url: "ftp://x" } }, QUEUE_JOB];
    const res = await app.inject({ method: "POST", url: "/v1/jobs:batch", payload: { jobs } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(svc.last().args, [jobs]);
    const items = (res.json() as { items: Record<string, unknown>[] }).items;
    assert.deepEqual(
      items.map((item) => item.jobId),
      ["job_b0", "job_b1", "job_b2"],
    );
  });

  test("answers are sent as the service gave them: extra fields and free-form values survive", async () => {
    const odd = { ...SAMPLE_JOB, payload: { "": [null, { a: 1e21 }], nested: { x: "y" } }, extraField: { kept: true }, version: 7 };
    svc.override.getJob = async () => odd;
    try {
      const res = await app.inject({ method: "GET", url: "/v1/jobs/job_1" });
      assert.deepEqual(res.json(), odd);
    } finally {
      delete svc.override.getJob;
    }
  });
});

// ---------------------------------------------------------------- bad input: 400 naming the field

interface BadCase {
  name: string;
  request: InjectOptions;
  field: string;
}

const longKey = "k".repeat(256);
const badCases: BadCase[] = [
  // POST /v1/jobs
  { name: "name of the wrong type", request: { method: "POST", url: "/v1/jobs", payload: { ...JOB, name: 5 } }, field: "name" },
  { name: "missing schedule", request: { method: "POST", url: "/v1/jobs", payload: { name: "a", target: QUEUE_JOB.target } }, field: "schedule" },
  { name: "unknown top-level field", request: { method: "POST", url: "/v1/jobs", payload: { ...JOB, when: "now" } }, field: "when" },
  {
    name: "unknown schedule field",
    request: { method: "POST", url: "/v1/jobs", payload: { ...JOB, schedule: { cronn: "* * * * *" } } },
    field: "schedule.cronn",
  },
  {
    name: "maxAttempts out of range",
    request: { method: "POST", url: "/v1/jobs", payload: { ...JOB, retry: { maxAttempts: 1001 } } },
    field: "retry.maxAttempts",
  },
  { name: "priority out of range", request: { method: "POST", url: "/v1/jobs", payload: { ...JOB, priority: 101 } }, field: "priority" },
  { name: "timeoutSeconds 0", request: { method: "POST", url: "/v1/jobs", payload: { ...JOB, timeoutSeconds: 0 } }, field: "timeoutSeconds" },
  {
    name: "negative delaySeconds",
    request: { method: "POST", url: "/v1/jobs", payload: { ...QUEUE_JOB, schedule: { delaySeconds: -1 } } },
    field: "schedule.delaySeconds",
  },
  {
    name: "non-RFC3339 runAt",
    request: { method: "POST", url: "/v1/jobs", payload: { ...QUEUE_JOB, schedule: { runAt: "16/10/2026 09:00" } } },
    field: "schedule.runAt",
  },
  {
    name: "runAt without an offset",
    request: { method: "POST", url: "/v1/jobs", payload: { ...QUEUE_JOB, schedule: { runAt: "2026-10-16T09:00:00" } } },
    field: "schedule.runAt",
  },
  {
    name: "two schedule variants",
    request: { method: "POST", url: "/v1/jobs", payload: { ...QUEUE_JOB, schedule: { delaySeconds: 1, cron: "* * * * *" } } },
    field: "schedule.cron",
  },
  {
    name: "unknown target type",
    request: { method: "POST", url: "/v1/jobs", payload: { ...QUEUE_JOB, target: { type: "lambda", arn: "x" } } },
    field: "target.type",
  },
  {
    name: "non-http url",
    request: { method: "POST", url: "/v1/jobs", payload: { ...JOB, target: { type: "http", url: "file:///etc/passwd" } } },
    field: "target.url",
  },
  {
    name: "empty header value",
    request: { method: "POST", url: "/v1/jobs", payload: { ...JOB, target: { ...JOB.target, headers: { "x-a": "" } } } },
    field: "target.headers.x-a",
  },
  {
    name: "empty pool",
    request: { method: "POST", url: "/v1/jobs", payload: { ...QUEUE_JOB, target: { type: "queue", pool: "" } } },
    field: "target.pool",
  },
  {
    name: "too-long Idempotency-Key",
    request: { method: "POST", url: "/v1/jobs", payload: QUEUE_JOB, headers: { "idempotency-key": longKey } },
    field: "Idempotency-Key",
  },
  { name: "no body", request: { method: "POST", url: "/v1/jobs" }, field: "body" },
  {
    name: "a JSON array body",
    request: { method: "POST", url: "/v1/jobs", payload: "[]", headers: { "content-type": "application/json" } },
    field: "body",
  },
  { name: "an unknown query parameter on a body route", request: { method: "POST", url: "/v1/jobs?dry=1", payload: QUEUE_JOB }, field: "dry" },
  // batch envelope
  { name: "batch without jobs", request: { method: "POST", url: "/v1/jobs:batch", payload: {} }, field: "jobs" },
  { name: "empty batch", request: { method: "POST", url: "/v1/jobs:batch", payload: { jobs: [] } }, field: "jobs" },
  {
    name: "batch of 1001",
    request: { method: "POST", url: "/v1/jobs:batch", payload: { jobs: Array.from({ length: 1001 }, () => QUEUE_JOB) } },
    field: "jobs",
  },
  { name: "batch jobs not an array", request: { method: "POST", url: "/v1/jobs:batch", payload: { jobs: QUEUE_JOB } }, field: "jobs" },
  {
    name: "batch unknown field",
    request: { method: "POST", url: "/v1/jobs:batch", payload: { jobs: [QUEUE_JOB], transactional: true } },
    field: "transactional",
  },
  // list jobs
  { name: "limit=0", request: { method: "GET", url: "/v1/jobs?limit=0" }, field: "limit" },
  { name: "limit=501", request: { method: "GET", url: "/v1/jobs?limit=501" }, field: "limit" },
  { name: "limit=abc", request: { method: "GET", url: "/v1/jobs?limit=abc" }, field: "limit" },
  { name: "empty cursor", request: { method: "GET", url: "/v1/jobs?cursor=" }, field: "cursor" },
  { name: "cursor given twice", request: { method: "GET", url: "/v1/jobs?cursor=a&cursor=b" }, field: "cursor" },
  { name: "unknown state", request: { method: "GET", url: "/v1/jobs?state=RUNNING" }, field: "state" },
  { name: "unknown list parameter", request: { method: "GET", url: "/v1/jobs?order=asc" }, field: "order" },
  // job actions and reads
  { name: "GET job with a query", request: { method: "GET", url: "/v1/jobs/job_1?expand=1" }, field: "expand" },
  { name: "DELETE with fields", request: { method: "DELETE", url: "/v1/jobs/job_1", payload: { force: true } }, field: "force" },
  {
    name: "pause with an array body",
    request: { method: "POST", url: "/v1/jobs/job_1:pause", payload: "[]", headers: { "content-type": "application/json" } },
    field: "body",
  },
  { name: "resume with fields", request: { method: "POST", url: "/v1/jobs/job_1:resume", payload: { at: 1 } }, field: "at" },
  { name: "trigger with fields", request: { method: "POST", url: "/v1/jobs/job_1:trigger", payload: { payload: 1 } }, field: "payload" },
  // PATCH /v1/jobs/{jobId}
  { name: "PATCH with an empty body object", request: { method: "PATCH", url: "/v1/jobs/job_1", payload: {} }, field: "body" },
  { name: "PATCH with only a version", request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { version: 3 } }, field: "body" },
  { name: "PATCH without a body", request: { method: "PATCH", url: "/v1/jobs/job_1" }, field: "body" },
  {
    name: "PATCH with an array body",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: "[]", headers: { "content-type": "application/json" } },
    field: "body",
  },
  {
    name: "PATCH with an unknown field",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a", state: "PAUSED" } },
    field: "state",
  },
  {
    name: "PATCH with a read-only field",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { nextRunAt: "2026-10-16T09:00:00Z" } },
    field: "nextRunAt",
  },
  { name: "PATCH with an empty name", request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "" } }, field: "name" },
  { name: "PATCH with a 201-char name", request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "n".repeat(201) } }, field: "name" },
  {
    name: "PATCH with two schedule variants",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { schedule: { runAt: "2026-10-16T09:00:00Z", cron: "* * * * *" } } },
    field: "schedule.cron",
  },
  { name: "PATCH with an empty schedule", request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { schedule: {} } }, field: "schedule" },
  {
    name: "PATCH with a tz but no cron",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { schedule: { tz: "Europe/London" } } },
    field: "schedule",
  },
  {
    name: "PATCH with a cron-only field beside runAt",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { schedule: { runAt: "2026-10-16T09:00:00Z", misfire: "skip" } } },
    field: "schedule.misfire",
  },
  {
    name: "PATCH with a bad misfire",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { schedule: { cron: "* * * * *", misfire: "never" } } },
    field: "schedule.misfire",
  },
  {
    name: "PATCH with maxAttempts 0",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { retry: { maxAttempts: 0 } } },
    field: "retry.maxAttempts",
  },
  {
    name: "PATCH with maxBackoff under backoff",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { retry: { backoffSeconds: 60, maxBackoffSeconds: 30 } } },
    field: "retry.maxBackoffSeconds",
  },
  {
    name: "PATCH with timeoutSeconds 86401",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { timeoutSeconds: 86_401 } },
    field: "timeoutSeconds",
  },
  { name: "PATCH with priority 101", request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { priority: 101 } }, field: "priority" },
  {
    name: "PATCH with a bad target",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { target: { type: "http", url: "ftp://x" } } },
    field: "target.url",
  },
  { name: "PATCH with version 0", request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a", version: 0 } }, field: "version" },
  {
    name: "PATCH with a string version",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a", version: "3" } },
    field: "version",
  },
  {
    name: "PATCH with a fractional version",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a", version: 1.5 } },
    field: "version",
  },
  { name: "PATCH with a query", request: { method: "PATCH", url: "/v1/jobs/job_1?force=1", payload: { name: "a" } }, field: "force" },
  {
    name: "If-Match not a number",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a" }, headers: { "if-match": "abc" } },
    field: "If-Match",
  },
  {
    name: "If-Match with one quote",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a" }, headers: { "if-match": '"7' } },
    field: "If-Match",
  },
  {
    name: "If-Match weak but unquoted",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a" }, headers: { "if-match": "W/7" } },
    field: "If-Match",
  },
  {
    name: "If-Match with a list",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a" }, headers: { "if-match": '"1", "2"' } },
    field: "If-Match",
  },
  {
    name: "If-Match 0",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a" }, headers: { "if-match": '"0"' } },
    field: "If-Match",
  },
  {
    name: "If-Match negative",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a" }, headers: { "if-match": "-1" } },
    field: "If-Match",
  },
  {
    name: "If-Match beyond a safe integer",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a" }, headers: { "if-match": "9999999999999999" } },
    field: "If-Match",
  },
  {
    name: "If-Match empty",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a" }, headers: { "if-match": "" } },
    field: "If-Match",
  },
  {
    name: "If-Match too long",
    request: { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "a" }, headers: { "if-match": `"${"1".repeat(70)}"` } },
    field: "If-Match",
  },
  // POST /v1/jobs/{jobId}:backfill
  { name: "backfill without a body", request: { method: "POST", url: "/v1/jobs/job_1:backfill" }, field: "body" },
  {
    name: "backfill without from",
    request: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { to: "2026-10-14T00:00:00Z" } },
    field: "from",
  },
  {
    name: "backfill without to",
    request: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-14T00:00:00Z" } },
    field: "to",
  },
  {
    name: "backfill with a non-RFC3339 from",
    request: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "yesterday", to: "2026-10-14T00:00:00Z" } },
    field: "from",
  },
  {
    name: "backfill with a to without offset",
    request: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00" } },
    field: "to",
  },
  {
    name: "backfill with a numeric to",
    request: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-13T00:00:00Z", to: 1760000000000 } },
    field: "to",
  },
  {
    name: "backfill with from after to",
    request: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-15T00:00:00Z", to: "2026-10-14T00:00:00Z" } },
    field: "to",
  },
  {
    name: "backfill with from equal to to (other offsets)",
    request: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-14T02:00:00+02:00", to: "2026-10-14T00:00:00Z" } },
    field: "to",
  },
  {
    name: "backfill with an unknown field",
    request: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00Z", dryRun: true } },
    field: "dryRun",
  },
  // GET /v1/jobs/{jobId}/occurrences
  { name: "occurrences without a query", request: { method: "GET", url: "/v1/jobs/job_1/occurrences" }, field: "from" },
  { name: "occurrences without to", request: { method: "GET", url: "/v1/jobs/job_1/occurrences?from=2026-03-27T00:00:00Z" }, field: "to" },
  {
    name: "occurrences with a bad to",
    request: { method: "GET", url: "/v1/jobs/job_1/occurrences?from=2026-03-27T00:00:00Z&to=tomorrow" },
    field: "to",
  },
  {
    name: "occurrences with from twice",
    request: { method: "GET", url: "/v1/jobs/job_1/occurrences?from=2026-03-27T00:00:00Z&from=2026-03-28T00:00:00Z&to=2026-03-29T00:00:00Z" },
    field: "from",
  },
  {
    name: "occurrences with from after to",
    request: { method: "GET", url: "/v1/jobs/job_1/occurrences?from=2026-03-29T00:00:00Z&to=2026-03-27T00:00:00Z" },
    field: "to",
  },
  {
    name: "occurrences with an unknown parameter",
    request: { method: "GET", url: "/v1/jobs/job_1/occurrences?from=2026-03-27T00:00:00Z&to=2026-03-29T00:00:00Z&limit=5" },
    field: "limit",
  },
  { name: "executions limit=501", request: { method: "GET", url: "/v1/jobs/job_1/executions?limit=501" }, field: "limit" },
  { name: "executions limit=abc", request: { method: "GET", url: "/v1/jobs/job_1/executions?limit=abc" }, field: "limit" },
  // worker protocol
  { name: "lease without workerId", request: { method: "POST", url: "/v1/pools/emails/lease", payload: {} }, field: "workerId" },
  { name: "lease max=0", request: { method: "POST", url: "/v1/pools/emails/lease", payload: { workerId: "w", max: 0 } }, field: "max" },
  { name: "lease max=1001", request: { method: "POST", url: "/v1/pools/emails/lease", payload: { workerId: "w", max: 1001 } }, field: "max" },
  {
    name: "lease leaseSeconds=3601",
    request: { method: "POST", url: "/v1/pools/emails/lease", payload: { workerId: "w", leaseSeconds: 3601 } },
    field: "leaseSeconds",
  },
  {
    name: "lease waitSeconds=61",
    request: { method: "POST", url: "/v1/pools/emails/lease", payload: { workerId: "w", waitSeconds: 61 } },
    field: "waitSeconds",
  },
  {
    name: "lease waitSeconds as a string",
    request: { method: "POST", url: "/v1/pools/emails/lease", payload: { workerId: "w", waitSeconds: "5" } },
    field: "waitSeconds",
  },
  {
    name: "lease ack with a string attempt",
    request: { method: "POST", url: "/v1/pools/emails/lease", payload: { workerId: "w", complete: [{ executionId: "e", attempt: "1" }] } },
    field: "complete.0.attempt",
  },
  {
    name: "lease fail without an error",
    request: { method: "POST", url: "/v1/pools/emails/lease", payload: { workerId: "w", fail: [{ executionId: "e", attempt: 1 }] } },
    field: "fail.0.error",
  },
  { name: "lease on a bad pool name", request: { method: "POST", url: "/v1/pools/a%20b/lease", payload: { workerId: "w" } }, field: "pool" },
  { name: "heartbeat without attempt", request: { method: "POST", url: "/v1/executions/exe_1/heartbeat", payload: {} }, field: "attempt" },
  { name: "heartbeat attempt 0", request: { method: "POST", url: "/v1/executions/exe_1/heartbeat", payload: { attempt: 0 } }, field: "attempt" },
  {
    name: "heartbeat leaseSeconds=0",
    request: { method: "POST", url: "/v1/executions/exe_1/heartbeat", payload: { attempt: 1, leaseSeconds: 0 } },
    field: "leaseSeconds",
  },
  {
    name: "complete with a string attempt",
    request: { method: "POST", url: "/v1/executions/exe_1/complete", payload: { attempt: "1" } },
    field: "attempt",
  },
  {
    name: "complete with an unknown field",
    request: { method: "POST", url: "/v1/executions/exe_1/complete", payload: { attempt: 1, output: 1 } },
    field: "output",
  },
  {
    name: "fail without a message",
    request: { method: "POST", url: "/v1/executions/exe_1/fail", payload: { attempt: 1, error: { class: "transient" } } },
    field: "error.message",
  },
  {
    name: "fail with an unknown class",
    request: { method: "POST", url: "/v1/executions/exe_1/fail", payload: { attempt: 1, error: { message: "x", class: "fatal" } } },
    field: "error.class",
  },
  {
    name: "fail with a negative retryAfterSeconds",
    request: { method: "POST", url: "/v1/executions/exe_1/fail", payload: { attempt: 1, error: { message: "x", retryAfterSeconds: -1 } } },
    field: "error.retryAfterSeconds",
  },
  { name: "complete many: no items", request: { method: "POST", url: "/v1/executions:complete", payload: { items: [] } }, field: "items" },
  {
    name: "complete many: bad id at 1",
    request: {
      method: "POST",
      url: "/v1/executions:complete",
      payload: {
        items: [
          { executionId: "e", attempt: 1 },
          { executionId: "e/1", attempt: 1 },
        ],
      },
    },
    field: "items.1.executionId",
  },
  { name: "fail many: missing items", request: { method: "POST", url: "/v1/executions:fail", payload: { item: [] } }, field: "items" },
  {
    name: "fail many: bad error at 0",
    request: { method: "POST", url: "/v1/executions:fail", payload: { items: [{ executionId: "e", attempt: 1, error: "boom" }] } },
    field: "items.0.error",
  },
  { name: "pool stats on a bad pool name", request: { method: "GET", url: "/v1/pools/a%2Fb/stats" }, field: "pool" },
  { name: "stats with a query", request: { method: "GET", url: "/v1/stats?tenant=x" }, field: "tenant" },
  // dead letters, operations, preview
  { name: "dead letters limit=0", request: { method: "GET", url: "/v1/dead-letters?limit=0" }, field: "limit" },
  { name: "replay with fields", request: { method: "POST", url: "/v1/dead-letters/exe_9:replay", payload: { attempt: 1 } }, field: "attempt" },
  { name: "audit limit=abc", request: { method: "GET", url: "/v1/audit?limit=abc" }, field: "limit" },
  { name: "cluster with a query", request: { method: "GET", url: "/v1/cluster?node=a" }, field: "node" },
  // API keys
  { name: "create key without a role", request: { method: "POST", url: "/v1/keys", payload: { name: "x" } }, field: "role" },
  { name: "create key with an unknown role", request: { method: "POST", url: "/v1/keys", payload: { role: "root" } }, field: "role" },
  {
    name: "create key with a bad tenant",
    request: { method: "POST", url: "/v1/keys", payload: { role: "client", tenantId: "a b" } },
    field: "tenantId",
  },
  { name: "create key with an empty name", request: { method: "POST", url: "/v1/keys", payload: { role: "client", name: "" } }, field: "name" },
  {
    name: "create key with a secret of your own",
    request: { method: "POST", url: "/v1/keys", payload: { role: "client", key: "mine" } },
    field: "key",
  },
  { name: "list keys limit=501", request: { method: "GET", url: "/v1/keys?limit=501" }, field: "limit" },
  { name: "list keys with an unknown filter", request: { method: "GET", url: "/v1/keys?role=admin" }, field: "role" },
  { name: "revoke with a body", request: { method: "DELETE", url: `/v1/keys/${SAMPLE_KEY.keyId}`, payload: { now: true } }, field: "now" },
  { name: "preview without cron", request: { method: "GET", url: "/v1/schedules/preview" }, field: "cron" },
  { name: "preview count=0", request: { method: "GET", url: "/v1/schedules/preview?cron=x&count=0" }, field: "count" },
  { name: "preview count=1001", request: { method: "GET", url: "/v1/schedules/preview?cron=x&count=1001" }, field: "count" },
  { name: "preview non-RFC3339 from", request: { method: "GET", url: "/v1/schedules/preview?cron=x&from=yesterday" }, field: "from" },
];

describe("bad input answers 400 INVALID_ARGUMENT naming the field, and never reaches the service", () => {
  const { app, svc } = makeApp();
  for (const c of badCases) {
    test(c.name, async () => {
      const before = svc.calls.length;
      const res = await app.inject(c.request);
      assertEnvelope(res, 400, "INVALID_ARGUMENT", c.field);
      assert.equal(svc.calls.length, before, "the service was not called");
    });
  }
});

describe("bodies the HTTP layer refuses", () => {
  const made = makeApp();
  /** Injects a request the HTTP layer must refuse before any service call. */
  async function refused(request: InjectOptions, { app, svc } = made) {
    const before = svc.calls.length;
    const res = await app.inject(request);
    assert.equal(svc.calls.length, before, `a refused body reached the service: ${res.body}`);
    return res;
  }

  test("invalid JSON", async () => {
    const res = await refused({ method: "POST", url: "/v1/jobs", payload: '{"name": ', headers: { "content-type": "application/json" } });
    const body = assertEnvelope(res, 400, "INVALID_ARGUMENT", "body");
    assert.match(body.error.message, /not valid JSON/);
  });

  test("a non-JSON content type", async () => {
    const res = await refused({
      method: "POST",
      url: "/v1/jobs",
      payload: "name=a",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assertEnvelope(res, 400, "INVALID_ARGUMENT", "content-type");
  });

  test("text/plain, as fetch() sends a string body by default", async () => {
    const res = await refused({
      method: "POST",
      url: "/v1/jobs",
      payload: JSON.stringify(QUEUE_JOB),
      headers: { "content-type": "text/plain;charset=UTF-8" },
    });
    assertEnvelope(res, 400, "INVALID_ARGUMENT", "content-type");
  });

  test("an invalid content-type header", async () => {
    const res = await refused({ method: "POST", url: "/v1/jobs", payload: "{}", headers: { "content-type": "nonsense" } });
    assertEnvelope(res, 400, "INVALID_ARGUMENT", "content-type");
  });

  test("application/*+json and a charset are accepted", async () => {
    const res = await made.app.inject({
      method: "POST",
      url: "/v1/jobs",
      payload: JSON.stringify(QUEUE_JOB),
      headers: { "content-type": "application/merge-patch+json; charset=utf-8" },
    });
    assert.equal(res.statusCode, 201, res.body);
  });

  test("JSON nested deeper than 64 levels", async () => {
    const deep = `{"payload":${"[".repeat(100)}${"]".repeat(100)}}`;
    const res = await refused({ method: "POST", url: "/v1/jobs", payload: deep, headers: { "content-type": "application/json" } });
    assertEnvelope(res, 400, "INVALID_ARGUMENT", "body");
  });

  test("brackets inside strings do not count as nesting", async () => {
    const payload = { ...QUEUE_JOB, payload: { text: `${"[".repeat(200)}\\"{` } };
    const res = await made.app.inject({ method: "POST", url: "/v1/jobs", payload });
    assert.equal(res.statusCode, 201, res.body);
  });

  test("__proto__ keys (prototype poisoning)", async () => {
    const res = await refused({
      method: "POST",
      url: "/v1/jobs",
      payload: '{"name":"a","payload":{"__proto__":{"admin":true}}}',
      headers: { "content-type": "application/json" },
    });
    assertEnvelope(res, 400, "INVALID_ARGUMENT", "body");
  });

  test("a body over the limit: 413 PAYLOAD_TOO_LARGE", async () => {
    const res = await refused({
      method: "POST",
      url: "/v1/jobs",
      payload: JSON.stringify({ ...QUEUE_JOB, payload: "x".repeat(2 * 1024 * 1024) }),
      headers: { "content-type": "application/json" },
    });
    const body = assertEnvelope(res, 413, "PAYLOAD_TOO_LARGE", "body");
    assert.equal(body.error.details?.limitBytes, 1024 * 1024);
  });

  test("the body limit is configurable", async () => {
    const small = makeApp({ bodyLimitBytes: 100 });
    const res = await refused({ method: "POST", url: "/v1/jobs", payload: { ...QUEUE_JOB, payload: "x".repeat(200) } }, small);
    assertEnvelope(res, 413, "PAYLOAD_TOO_LARGE");
    const ok = await small.app.inject({ method: "POST", url: "/v1/jobs/job_1:pause", payload: {} });
    assert.equal(ok.statusCode, 200);
  });
});

// ---------------------------------------------------------------- not found

describe("404 NOT_FOUND with the envelope", () => {
  const { app, svc } = makeApp();
  const cases: [string, InjectOptions][] = [
    ["unknown route", { method: "GET", url: "/v1/nothing" }],
    ["unknown root route", { method: "GET", url: "/" }],
    ["unknown job action", { method: "POST", url: "/v1/jobs/job_1:explode" }],
    ["an action on a malformed id", { method: "POST", url: "/v1/jobs/a.b:pause" }],
    ["PATCH of a malformed id", { method: "PATCH", url: "/v1/jobs/a.b", payload: { name: "x" } }],
    [
      "backfill of a malformed id",
      { method: "POST", url: "/v1/jobs/a~b:backfill", payload: { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00Z" } },
    ],
    ["occurrences of a malformed id", { method: "GET", url: "/v1/jobs/a.b/occurrences?from=2026-03-27T00:00:00Z&to=2026-03-29T00:00:00Z" }],
    ["PATCH on the collection", { method: "PATCH", url: "/v1/jobs", payload: { name: "x" } }],
    ["GET on :backfill", { method: "GET", url: "/v1/jobs/job_1:backfill" }],
    ["a malformed job id", { method: "GET", url: "/v1/jobs/a.b" }],
    ["an id with a colon on GET", { method: "GET", url: "/v1/jobs/job_1:pause" }],
    ["an empty job id", { method: "GET", url: "/v1/jobs/" }],
    ["a malformed execution id", { method: "POST", url: "/v1/executions/e~1/heartbeat", payload: { attempt: 1 } }],
    ["a malformed key id", { method: "DELETE", url: "/v1/keys/a.b" }],
    ["an id longer than the router allows", { method: "GET", url: `/v1/jobs/${"a".repeat(600)}` }],
    ["an id longer than ids are", { method: "GET", url: `/v1/jobs/${"a".repeat(201)}` }],
    ["wrong method", { method: "PUT", url: "/v1/jobs" }],
    ["wrong method on a colon route", { method: "GET", url: "/v1/jobs:batch" }],
  ];
  for (const [name, request] of cases) {
    test(name, async () => {
      const before = svc.calls.length;
      const res = await app.inject(request);
      assertEnvelope(res, 404, "NOT_FOUND");
      assert.equal(svc.calls.length, before);
    });
  }

  test("malformed percent-encoding is a 400 with the envelope", async () => {
    const res = await app.inject({ method: "GET", url: "/v1/jobs/%E0%A4%A" });
    assertEnvelope(res, 400, "INVALID_ARGUMENT", "url");
  });
});

// ---------------------------------------------------------------- service errors

describe("service errors keep the envelope and the catalog's status", () => {
  const { app, svc } = makeApp();
  const hb = { method: "POST", url: "/v1/executions/exe_1/heartbeat", payload: { attempt: 1 } } as const;

  for (const [code, status] of Object.entries(ERROR_CODES).map(([c, v]) => [c, v.status] as const)) {
    test(`DuetimeError ${code} → ${status}`, async () => {
      svc.override.heartbeat = async () => {
        throw new DuetimeError(code as keyof typeof ERROR_CODES, `it is ${code}`, { reason: "r" });
      };
      const res = await app.inject(hb);
      const body = assertEnvelope(res, status, code);
      assert.equal(body.error.message, `it is ${code}`);
      assert.deepEqual(body.error.details, { reason: "r" });
      if (status === 429 || status === 503) assert.match(String(res.headers["retry-after"]), /^\d+$/);
      else assert.equal(res.headers["retry-after"], undefined);
    });
  }

  test("LEASE_LOST → 409", async () => {
    svc.override.complete = async () => {
      throw new DuetimeError("LEASE_LOST", "attempt 1 of exe_1 lost its lease");
    };
    const res = await app.inject({ method: "POST", url: "/v1/executions/exe_1/complete", payload: { attempt: 1 } });
    assertEnvelope(res, 409, "LEASE_LOST");
    delete svc.override.complete;
  });

  test("the new job routes answer what the service answers: unknown job, stale version, not a recurring job", async () => {
    const cases: [string, InjectOptions, keyof typeof ERROR_CODES][] = [
      ["updateJob", { method: "PATCH", url: "/v1/jobs/job_404", payload: { name: "x" } }, "NOT_FOUND"],
      ["updateJob", { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "x" }, headers: { "if-match": '"3"' } }, "VERSION_CONFLICT"],
      [
        "backfillJob",
        { method: "POST", url: "/v1/jobs/job_404:backfill", payload: { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00Z" } },
        "NOT_FOUND",
      ],
      [
        "backfillJob",
        { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00Z" } },
        "INVALID_STATE",
      ],
      [
        "backfillJob",
        { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-13T00:00:00Z", to: "2036-10-14T00:00:00Z" } },
        "INVALID_ARGUMENT",
      ],
      ["listOccurrences", { method: "GET", url: "/v1/jobs/job_404/occurrences?from=2026-03-27T00:00:00Z&to=2026-03-29T00:00:00Z" }, "NOT_FOUND"],
    ];
    for (const [method, request, code] of cases) {
      svc.override[method] = async () => {
        throw new DuetimeError(code, `it is ${code}`, code === "INVALID_ARGUMENT" ? { field: "to" } : undefined);
      };
      try {
        const res = await app.inject(request);
        assertEnvelope(res, ERROR_CODES[code].status, code);
        assert.equal(svc.last().method, method);
        assert.equal(res.headers.etag, undefined);
      } finally {
        delete svc.override[method];
      }
    }
  });

  test("Retry-After follows the error's own value", async () => {
    svc.override.createJob = async () => {
      throw new DuetimeError("RESOURCE_EXHAUSTED", "slow down", undefined, 7);
    };
    const res = await app.inject({ method: "POST", url: "/v1/jobs", payload: QUEUE_JOB });
    assertEnvelope(res, 429, "RESOURCE_EXHAUSTED");
    assert.equal(res.headers["retry-after"], "7");
    delete svc.override.createJob;
  });

  test("a plain Error is a 500 INTERNAL that leaks nothing", async () => {
    svc.override.getJob = async () => {
      throw new Error("SQLITE_CORRUPT: /var/lib/duetime/secret.db password=hunter2");
    };
    const res = await app.inject({ method: "GET", url: "/v1/jobs/job_1" });
    const body = assertEnvelope(res, 500, "INTERNAL");
    assert.equal(body.error.message, "internal error");
    assert.doesNotMatch(res.body, /SQLITE|secret|hunter2/);
    assert.equal(typeof body.error.details?.requestId, "string");
    delete svc.override.getJob;
  });

  test("a thrown non-Error is a 500 INTERNAL too", async () => {
    svc.override.stats = async () => {
      throw "a string"; // eslint-disable-line no-throw-literal
    };
    const res = await app.inject({ method: "GET", url: "/v1/stats" });
    assertEnvelope(res, 500, "INTERNAL");
    assert.doesNotMatch(res.body, /a string/);
    delete svc.override.stats;
  });
});

// ---------------------------------------------------------------- auth

describe("API keys and roles", () => {
  const apiKeys = [
    { key: "adm-key", tenantId: "ops", role: "admin" as const },
    { key: "cli-key", tenantId: "tenant-a", role: "client" as const },
    { key: "wrk-key", tenantId: "tenant-b", role: "worker" as const },
  ];
  const { app, svc } = makeApp({ apiKeys });
  const as = (key: string | undefined, request: InjectOptions): InjectOptions => ({
    ...request,
    headers: { ...(request.headers as Record<string, string>), ...(key ? { authorization: `Bearer ${key}` } : {}) },
  });

  test("no Authorization header: 401 with WWW-Authenticate", async () => {
    const res = await app.inject({ method: "GET", url: "/v1/jobs" });
    assertEnvelope(res, 401, "UNAUTHENTICATED");
    assert.match(String(res.headers["www-authenticate"]), /^Bearer/);
  });

  test("an unknown key, another scheme, an empty bearer: 401", async () => {
    for (const authorization of ["Bearer nope", "Basic Y2xpLWtleTo=", "Bearer", "cli-key", "Bearer cli-key extra"]) {
      const res = await app.inject({ method: "GET", url: "/v1/jobs", headers: { authorization } });
      assertEnvelope(res, 401, "UNAUTHENTICATED");
    }
  });

  test("401 comes before the body is looked at", async () => {
    const res = await app.inject({ method: "POST", url: "/v1/jobs", payload: "{not json", headers: { "content-type": "application/json" } });
    assertEnvelope(res, 401, "UNAUTHENTICATED");
  });

  test("the scheme is case-insensitive", async () => {
    const res = await app.inject({ method: "GET", url: "/v1/jobs", headers: { authorization: "bearer cli-key" } });
    assert.equal(res.statusCode, 200);
  });

  test("the tenant, roles and actor of the key reach the service", async () => {
    const res = await app.inject(as("cli-key", { method: "POST", url: "/v1/jobs", payload: QUEUE_JOB }));
    assert.equal(res.statusCode, 201);
    const ctx = svc.last().ctx;
    assert.equal(ctx?.tenantId, "tenant-a");
    assert.deepEqual([...(ctx?.roles ?? [])], ["client"]);
    assert.match(String(ctx?.actor), /^key_[0-9a-f]{12}$/);
    assert.doesNotMatch(String(ctx?.actor), /cli-key/);

    await app.inject(as("wrk-key", { method: "POST", url: "/v1/pools/p/lease", payload: { workerId: "w" } }));
    assert.equal(svc.last().ctx?.tenantId, "tenant-b");
    assert.deepEqual([...(svc.last().ctx?.roles ?? [])], ["worker"]);
  });

  const forbidden: [string, string, InjectOptions][] = [
    ["client", "cli-key", { method: "POST", url: "/v1/pools/p/lease", payload: { workerId: "w" } }],
    ["client", "cli-key", { method: "POST", url: "/v1/executions/e1/heartbeat", payload: { attempt: 1 } }],
    ["client", "cli-key", { method: "POST", url: "/v1/executions:complete", payload: { items: [{ executionId: "e", attempt: 1 }] } }],
    ["client", "cli-key", { method: "GET", url: "/v1/pools/p/stats" }],
    ["client", "cli-key", { method: "POST", url: "/v1/dead-letters/exe_9:replay" }],
    ["client", "cli-key", { method: "GET", url: "/v1/audit" }],
    ["client", "cli-key", { method: "GET", url: "/v1/cluster" }],
    ["worker", "wrk-key", { method: "POST", url: "/v1/jobs", payload: QUEUE_JOB }],
    ["worker", "wrk-key", { method: "GET", url: "/v1/jobs/job_1" }],
    ["worker", "wrk-key", { method: "DELETE", url: "/v1/jobs/job_1" }],
    ["worker", "wrk-key", { method: "POST", url: "/v1/jobs/job_1:trigger" }],
    ["worker", "wrk-key", { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "x" } }],
    ["worker", "wrk-key", { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00Z" } }],
    ["worker", "wrk-key", { method: "GET", url: "/v1/jobs/job_1/occurrences?from=2026-03-27T00:00:00Z&to=2026-03-29T00:00:00Z" }],
    ["worker", "wrk-key", { method: "GET", url: "/v1/dead-letters" }],
    ["worker", "wrk-key", { method: "POST", url: "/v1/dead-letters/exe_9:replay" }],
    ["worker", "wrk-key", { method: "GET", url: "/v1/cluster" }],
    ["client", "cli-key", { method: "POST", url: "/v1/keys", payload: { role: "client" } }],
    ["client", "cli-key", { method: "GET", url: "/v1/keys" }],
    ["worker", "wrk-key", { method: "DELETE", url: `/v1/keys/${SAMPLE_KEY.keyId}` }],
    ["client", "cli-key", { method: "GET", url: "/v1/secrets/signing" }],
    ["worker", "wrk-key", { method: "GET", url: "/v1/secrets/signing" }],
  ];
  for (const [role, key, request] of forbidden) {
    test(`${role} may not ${request.method} ${request.url}: 403`, async () => {
      const before = svc.calls.length;
      const res = await app.inject(as(key, request));
      const body = assertEnvelope(res, 403, "PERMISSION_DENIED");
      assert.ok(Array.isArray(body.error.details?.requiredRoles));
      assert.equal(svc.calls.length, before);
    });
  }

  const allowed: [string, string, InjectOptions][] = [
    ["client", "cli-key", { method: "GET", url: "/v1/jobs/job_1/executions" }],
    ["client", "cli-key", { method: "POST", url: "/v1/jobs/job_1:pause" }],
    ["client", "cli-key", { method: "PATCH", url: "/v1/jobs/job_1", payload: { name: "x" }, headers: { "if-match": '"1"' } }],
    ["client", "cli-key", { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00Z" } }],
    ["client", "cli-key", { method: "GET", url: "/v1/jobs/job_1/occurrences?from=2026-03-27T00:00:00Z&to=2026-03-29T00:00:00Z" }],
    ["client", "cli-key", { method: "GET", url: "/v1/dead-letters" }],
    ["client", "cli-key", { method: "GET", url: "/v1/schedules/preview?cron=x" }],
    [
      "worker",
      "wrk-key",
      { method: "POST", url: "/v1/executions:fail", payload: { items: [{ executionId: "e", attempt: 1, error: { message: "m" } }] } },
    ],
    ["worker", "wrk-key", { method: "GET", url: "/v1/pools/p/stats" }],
    ["worker", "wrk-key", { method: "GET", url: "/v1/stats" }],
    ["worker", "wrk-key", { method: "GET", url: "/v1/schedules/preview?cron=x" }],
    ["admin", "adm-key", { method: "POST", url: "/v1/dead-letters/exe_9:replay" }],
    ["admin", "adm-key", { method: "GET", url: "/v1/audit" }],
    ["admin", "adm-key", { method: "GET", url: "/v1/cluster" }],
    ["admin", "adm-key", { method: "POST", url: "/v1/pools/p/lease", payload: { workerId: "w" } }],
    ["admin", "adm-key", { method: "POST", url: "/v1/jobs", payload: QUEUE_JOB }],
    ["admin", "adm-key", { method: "POST", url: "/v1/keys", payload: { role: "worker" } }],
    ["admin", "adm-key", { method: "GET", url: "/v1/keys" }],
    ["admin", "adm-key", { method: "DELETE", url: `/v1/keys/${SAMPLE_KEY.keyId}` }],
    ["admin", "adm-key", { method: "GET", url: "/v1/secrets/signing" }],
  ];
  for (const [role, key, request] of allowed) {
    test(`${role} may ${request.method} ${request.url}`, async () => {
      const res = await app.inject(as(key, request));
      assert.ok(res.statusCode >= 200 && res.statusCode < 300, `${res.statusCode} ${res.body}`);
    });
  }

  test("an admin acts with every role", async () => {
    await app.inject(as("adm-key", { method: "GET", url: "/v1/cluster" }));
    assert.equal(svc.last().ctx?.tenantId, "ops");
    assert.deepEqual([...(svc.last().ctx?.roles ?? [])].sort(), ["admin", "client", "worker"]);
  });

  test("health, readiness, metrics and the OpenAPI document need no key", async () => {
    for (const url of ["/healthz", "/readyz", "/metrics", "/openapi.json"]) {
      const res = await app.inject({ method: "GET", url });
      assert.equal(res.statusCode, 200, url);
    }
  });
});

// ---------------------------------------------------------------- API keys kept in the store

describe("API keys kept in the store", () => {
  const sha = (secret: string): string => createHash("sha256").update(secret).digest("hex");
  const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });
  const STORED = { keyId: "ak_0000000000000000000001", tenantId: "acme", role: "worker" as const };

  /** An app over a RecordingService whose store holds the given keys, with a clock the test moves. */
  function storedApp(keys: Record<string, StoredKey>, apiKeys: AppOptions["apiKeys"] = []) {
    const clock = { now: 1_000_000 };
    const svc = new RecordingService();
    for (const [secret, key] of Object.entries(keys)) svc.storedKeys.set(sha(secret), key);
    const app = buildApp({ service: svc, apiKeys, keyCache: { now: () => clock.now } });
    apps.push(app);
    return { app, svc, clock };
  }

  test("a stored key authenticates with its tenant, role and id as the actor; it is not a bootstrap caller", async () => {
    const { app, svc } = storedApp({ dtk_w: STORED });
    const res = await app.inject({ method: "POST", url: "/v1/pools/p/lease", payload: { workerId: "w" }, headers: bearer("dtk_w") });
    assert.equal(res.statusCode, 200, res.body);
    const ctx = svc.last().ctx;
    assert.equal(ctx?.tenantId, "acme");
    assert.deepEqual([...(ctx?.roles ?? [])], ["worker"]);
    assert.equal(ctx?.actor, STORED.keyId);
    assert.equal(ctx?.bootstrap, undefined);
    assert.deepEqual(svc.findKeyCalls, [sha("dtk_w")], "looked up by its SHA-256 digest, never the secret");
  });

  test("with keys in the store, auth is on even without configured keys", async () => {
    const { app, svc } = storedApp({ dtk_w: STORED });
    assertEnvelope(await app.inject({ method: "GET", url: "/v1/stats" }), 401, "UNAUTHENTICATED");
    assertEnvelope(await app.inject({ method: "GET", url: "/v1/stats", headers: bearer("dtk_nope") }), 401, "UNAUTHENTICATED");
    assertEnvelope(await app.inject({ method: "GET", url: "/v1/jobs", headers: bearer("dtk_w") }), 403, "PERMISSION_DENIED");
    assert.equal(svc.calls.length, 0);
  });

  test("configured keys are checked first and are bootstrap callers; stored keys work beside them", async () => {
    const { app, svc } = storedApp({ dtk_w: STORED }, [{ key: "root", tenantId: "ops", role: "admin" }]);
    const res = await app.inject({ method: "GET", url: "/v1/keys", headers: bearer("root") });
    assert.equal(res.statusCode, 200);
    assert.equal(svc.last().ctx?.bootstrap, true);
    assert.equal(svc.last().ctx?.tenantId, "ops");
    assert.deepEqual(svc.findKeyCalls, [], "a configured key needs no store lookup");
    assert.equal((await app.inject({ method: "GET", url: "/v1/stats", headers: bearer("dtk_w") })).statusCode, 200);
  });

  test("a found key is cached for 30 s; an unknown one is asked about every time", async () => {
    const { app, svc, clock } = storedApp({ dtk_w: STORED });
    const stats = (key: string) => app.inject({ method: "GET", url: "/v1/stats", headers: bearer(key) });
    await stats("dtk_w");
    clock.now += 29_000;
    await stats("dtk_w");
    assert.equal(svc.findKeyCalls.length, 1);
    clock.now += 2_000;
    await stats("dtk_w");
    assert.equal(svc.findKeyCalls.length, 2, "asked again after 30 s");
    await stats("dtk_x");
    await stats("dtk_x");
    assert.equal(svc.findKeyCalls.length, 4);
  });

  test("a key revoked through this node stops working at once; one revoked elsewhere within 30 s", async () => {
    const admin = { keyId: "ak_0000000000000000000002", tenantId: "acme", role: "admin" as const };
    const { app, svc, clock } = storedApp({ dtk_w: STORED, dtk_w2: { ...STORED, keyId: "ak_0000000000000000000003" }, dtk_a: admin });
    const stats = (key: string) => app.inject({ method: "GET", url: "/v1/stats", headers: bearer(key) });
    assert.equal((await stats("dtk_w")).statusCode, 200);
    assert.equal((await stats("dtk_w2")).statusCode, 200);

    const revoked = await app.inject({ method: "DELETE", url: `/v1/keys/${STORED.keyId}`, headers: bearer("dtk_a") });
    assert.equal(revoked.statusCode, 204);
    assertEnvelope(await stats("dtk_w"), 401, "UNAUTHENTICATED");

    // revoked by another node: the store forgets it, this node's cache does not yet
    svc.storedKeys.delete(sha("dtk_w2"));
    svc.revokedKeys++;
    assert.equal((await stats("dtk_w2")).statusCode, 200);
    clock.now += 30_001;
    assertEnvelope(await stats("dtk_w2"), 401, "UNAUTHENTICATED");
  });

  test("no keys anywhere: open development mode, as a bootstrap caller; the first stored key turns auth on at once", async () => {
    const { app, svc } = storedApp({});
    assert.equal((await app.inject({ method: "GET", url: "/v1/stats" })).statusCode, 200);
    svc.override.createKey = async () => {
      svc.storedKeys.set(sha("dtk_new"), { ...STORED, role: "admin" });
      return { keyId: STORED.keyId, key: "dtk_new", tenantId: "default", role: "admin", name: null, createdAt: SAMPLE_KEY.createdAt };
    };
    const open = await app.inject({ method: "POST", url: "/v1/keys", payload: { role: "admin" } });
    assert.equal(open.statusCode, 201);
    assert.equal(svc.last().ctx?.bootstrap, true);
    assert.equal(svc.last().ctx?.actor, "anonymous");
    // no waiting for the one-second recheck: the route tells the key ring to ask the store again
    assertEnvelope(await app.inject({ method: "GET", url: "/v1/stats" }), 401, "UNAUTHENTICATED");
    assert.equal((await app.inject({ method: "GET", url: "/v1/keys", headers: bearer("dtk_new") })).statusCode, 200);
  });

  test("a key created through another node turns auth on here within a second", async () => {
    const { app, svc, clock } = storedApp({});
    assert.equal((await app.inject({ method: "GET", url: "/v1/stats" })).statusCode, 200);
    svc.storedKeys.set(sha("dtk_w"), STORED);
    assert.equal((await app.inject({ method: "GET", url: "/v1/stats" })).statusCode, 200, "the empty answer is trusted for a second");
    clock.now += 1_001;
    assertEnvelope(await app.inject({ method: "GET", url: "/v1/stats" }), 401, "UNAUTHENTICATED");
    assert.equal((await app.inject({ method: "GET", url: "/v1/stats", headers: bearer("dtk_w") })).statusCode, 200);
  });

  test("revoking every key does not reopen the server", async () => {
    const { app, svc } = storedApp({});
    svc.revokedKeys = 1; // the store holds only revoked keys
    assertEnvelope(await app.inject({ method: "GET", url: "/v1/stats" }), 401, "UNAUTHENTICATED");
  });

  test("a store that cannot answer is 503 UNAVAILABLE, never open and never a 500", async () => {
    const { app, svc } = storedApp({ dtk_w: STORED });
    svc.keyStoreDown = true;
    const anonymous = await app.inject({ method: "GET", url: "/v1/stats" });
    assertEnvelope(anonymous, 503, "UNAVAILABLE");
    assert.doesNotMatch(anonymous.body, /store unreachable"/);
    const withKey = await app.inject({ method: "GET", url: "/v1/stats", headers: bearer("dtk_w") });
    assertEnvelope(withKey, 503, "UNAVAILABLE");
    assert.match(String(withKey.headers["retry-after"]), /^\d+$/);
  });

  test("OpenAPI marks the bearer optional when only the store may hold keys", async () => {
    const { app } = storedApp({});
    const doc = (await app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    assert.deepEqual(doc.paths["/v1/keys"]?.post?.security, [{ bearerAuth: [] }, {}]);
  });
});

// ---------------------------------------------------------------- health, metrics, OpenAPI

describe("health, readiness and metrics", () => {
  test("/healthz answers 200", async () => {
    const { app } = makeApp();
    const res = await app.inject({ method: "GET", url: "/healthz" });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: "ok" });
  });

  test("/readyz follows service.ready(): 503 UNAVAILABLE with Retry-After when not ready", async () => {
    const { app, svc } = makeApp();
    assert.equal((await app.inject({ method: "GET", url: "/readyz" })).statusCode, 200);
    svc.isReady = false;
    const res = await app.inject({ method: "GET", url: "/readyz" });
    assertEnvelope(res, 503, "UNAVAILABLE");
    assert.match(String(res.headers["retry-after"]), /^\d+$/);
  });

  test("/readyz uses the ready option, and a throwing check is 503", async () => {
    const { app } = makeApp({
      ready: async () => {
        throw new Error("store down");
      },
    });
    const res = await app.inject({ method: "GET", url: "/readyz" });
    assertEnvelope(res, 503, "UNAVAILABLE");
    assert.doesNotMatch(res.body, /store down/);
  });

  test("/metrics serves the engine's text and the HTTP histogram in the Prometheus format", async () => {
    const { app } = makeApp({
      metricsText: async () => "# HELP duetime_jobs_created_total x\n# TYPE duetime_jobs_created_total counter\nduetime_jobs_created_total 3",
    });
    await app.inject({ method: "GET", url: "/v1/stats" });
    const res = await app.inject({ method: "GET", url: "/metrics" });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    assert.match(res.body, /^duetime_jobs_created_total 3$/m);
    assert.match(res.body, /duetime_http_request_duration_seconds_count\{method="GET",route="\/v1\/stats",status="200"\} 1/);
  });
});

describe("/openapi.json", () => {
  const { app } = makeApp({ apiKeys: [{ key: "k", tenantId: "t", role: "admin" }] });

  const contract: [string, string][] = [
    ["post", "/v1/jobs"],
    ["post", "/v1/jobs:batch"],
    ["get", "/v1/jobs"],
    ["get", "/v1/jobs/{jobId}"],
    ["delete", "/v1/jobs/{jobId}"],
    ["post", "/v1/jobs/{jobId}:pause"],
    ["post", "/v1/jobs/{jobId}:resume"],
    ["post", "/v1/jobs/{jobId}:trigger"],
    ["patch", "/v1/jobs/{jobId}"],
    ["post", "/v1/jobs/{jobId}:backfill"],
    ["get", "/v1/jobs/{jobId}/occurrences"],
    ["get", "/v1/jobs/{jobId}/executions"],
    ["post", "/v1/pools/{pool}/lease"],
    ["post", "/v1/executions/{executionId}/heartbeat"],
    ["post", "/v1/executions/{executionId}/complete"],
    ["post", "/v1/executions/{executionId}/fail"],
    ["post", "/v1/executions:complete"],
    ["post", "/v1/executions:fail"],
    ["get", "/v1/pools/{pool}/stats"],
    ["get", "/v1/stats"],
    ["get", "/v1/dead-letters"],
    ["post", "/v1/dead-letters/{executionId}:replay"],
    ["get", "/v1/audit"],
    ["get", "/v1/cluster"],
    ["post", "/v1/keys"],
    ["get", "/v1/keys"],
    ["delete", "/v1/keys/{keyId}"],
    ["get", "/v1/secrets/signing"],
    ["get", "/v1/schedules/preview"],
    ["get", "/healthz"],
    ["get", "/readyz"],
    ["get", "/metrics"],
  ];

  test("is an OpenAPI 3 document listing every route of the contract", async () => {
    const res = await app.inject({ method: "GET", url: "/openapi.json" });
    assert.equal(res.statusCode, 200);
    const doc = res.json() as {
      openapi: string;
      info: { title: string; version: string };
      paths: Record<
        string,
        Record<
          string,
          {
            operationId?: string;
            parameters?: { name: string; in: string }[];
            requestBody?: unknown;
            responses: Record<string, unknown>;
            security?: unknown[];
          }
        >
      >;
      components: { securitySchemes: Record<string, unknown> };
      servers?: unknown[];
    };
    assert.match(doc.openapi, /^3\.\d+\.\d+$/);
    assert.equal(doc.info.title, "duetime");
    for (const [method, path] of contract) {
      const op = doc.paths[path]?.[method];
      assert.ok(op, `${method.toUpperCase()} ${path} is documented`);
      assert.ok(Object.keys(op.responses).length > 0);
    }
    const create = doc.paths["/v1/jobs"]?.post;
    assert.equal(create?.operationId, "createJob");
    assert.ok(create?.requestBody, "createJob has a request body");
    assert.ok(create?.parameters?.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key"));
    assert.ok(create?.responses["201"] && create.responses["200"]);
    // The target schema lists every target type, broker targets with their fields.
    const text = JSON.stringify(doc);
    for (const field of ['"enum":["nats"]', '"subject":', '"enum":["amqp"]', '"exchange":', '"routingKey":', '"broker":'])
      assert.ok(text.includes(field), `the document has ${field}`);
    const list = doc.paths["/v1/jobs"]?.get;
    assert.deepEqual(
      list?.parameters
        ?.filter((p) => p.in === "query")
        .map((p) => p.name)
        .sort(),
      ["cursor", "kind", "limit", "name", "pool", "state"],
    );
    assert.ok(doc.paths["/v1/jobs/{jobId}:pause"]?.post?.parameters?.some((p) => p.in === "path" && p.name === "jobId"));
    const update = doc.paths["/v1/jobs/{jobId}"]?.patch;
    assert.equal(update?.operationId, "updateJob");
    assert.ok(update?.requestBody, "updateJob has a request body");
    assert.ok(update?.parameters?.some((p) => p.in === "header" && p.name.toLowerCase() === "if-match"));
    assert.ok(doc.paths["/v1/jobs/{jobId}:backfill"]?.post?.responses["201"]);
    assert.deepEqual(
      doc.paths["/v1/jobs/{jobId}/occurrences"]?.get?.parameters
        ?.filter((p) => p.in === "query")
        .map((p) => p.name)
        .sort(),
      ["from", "to"],
    );
    assert.ok(doc.components.securitySchemes.bearerAuth);
    assert.deepEqual(create?.security, [{ bearerAuth: [] }]);
    assert.equal(doc.paths["/openapi.json"], undefined);
    const operationIds = Object.values(doc.paths).flatMap((p) =>
      Object.values(p)
        .map((o) => o.operationId)
        .filter(Boolean),
    );
    assert.equal(new Set(operationIds).size, operationIds.length, "operationIds are unique");
    const operations = Object.values(doc.paths).flatMap((p) => Object.values(p));
    assert.equal(operationIds.length, operations.length, "every operation has an operationId");
    // Probes and scrapers need no key; the document says so, and where the API is.
    for (const path of ["/healthz", "/readyz", "/metrics"]) assert.deepEqual(doc.paths[path]?.get?.security, [], `${path} needs no key`);
    assert.deepEqual(doc.servers, [{ url: "/", description: "this server" }]);
  });
});

// ---------------------------------------------------------------- response schemas match what the service answers

describe("the documented response schemas accept the service's answers", () => {
  const pairs: [string, JsonSchema, unknown][] = [
    ["job", schemas.jobResponse, { ...SAMPLE_JOB, created: true }],
    ["job page", schemas.jobPageResponse, { items: [SAMPLE_JOB], nextCursor: null }],
    ["execution", schemas.executionItemResponse, SAMPLE_EXECUTION],
    [
      "execution with an error",
      schemas.executionItemResponse,
      { ...SAMPLE_EXECUTION, state: "FAILED", error: { message: "x", class: "transient", httpStatus: 500 } },
    ],
    ["dead letters", schemas.deadLetterPageResponse, { items: [SAMPLE_DEAD_LETTER], nextCursor: "n" }],
    ["heartbeat", schemas.heartbeatResponse, { leaseUntil: "2026-10-16T09:01:00.000Z", cancelRequested: true }],
    ["complete", schemas.completeResponse, { state: "SUCCEEDED" }],
    ["fail", schemas.failResponse, { state: "DEAD", dead: true }],
    ["acks", schemas.ackListResponse, { items: [{ executionId: "e", attempt: 1, status: 409, error: { code: "LEASE_LOST", message: "m" } }] }],
    ["pool stats", schemas.poolStatsResponse, { pending: 0, queued: 1, running: 2 }],
    ["stats", schemas.statsResponse, { pools: { p: { pending: 0, queued: 1, running: 2 } }, tenants: {} }],
    ["preview", schemas.previewResponse, { times: ["2026-10-16T09:00:00.000Z"] }],
    [
      "preview with local times and DST marks",
      schemas.previewResponse,
      { times: ["2026-03-08T07:00:00.000Z", "2026-11-01T05:30:00.000Z"], local: ["2026-03-08T02:30:00", "2026-11-01T01:30:00"], dst: ["gap", null] },
    ],
    ["job with nextRunAtLocal", schemas.jobResponse, { ...SAMPLE_JOB, nextRunAtLocal: "2026-10-16T10:00:00+01:00[Europe/London]" }],
    ["backfill", schemas.backfillResponse, SAMPLE_BACKFILL],
    ["occurrences", schemas.occurrencesResponse, { items: SAMPLE_OCCURRENCES }],
    [
      "batch",
      schemas.batchCreateResponse,
      {
        items: [
          { jobId: "j", nextRunAt: null, created: true },
          { error: { code: "INVALID_ARGUMENT", message: "m", details: { field: "jobs.1.name" } } },
        ],
      },
    ],
    ["error envelope", schemas.errorEnvelopeSchema, { error: { code: "NOT_FOUND", message: "m" } }],
    [
      "key page",
      schemas.keyPageResponse,
      { items: [SAMPLE_KEY, { ...SAMPLE_KEY, name: null, revokedAt: "2026-10-17T00:00:00.000Z" }], nextCursor: "n" },
    ],
  ];
  for (const [name, schema, value] of pairs) {
    test(name, () => {
      validate(schema, value, "body");
    });
  }

  test("every canned service answer matches its route's documented schema", async () => {
    const { app } = makeApp();
    const res = await app.inject({ method: "GET", url: "/openapi.json" });
    const doc = res.json() as {
      paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: JsonSchema }> }> }>>;
    };
    for (const c of routeCases) {
      const answer = await app.inject(c.request);
      if (answer.statusCode === 204) continue;
      const path = decodeURIComponent(String(c.request.url).split("?")[0] ?? "");
      const documented = Object.entries(doc.paths).find(([p]) => {
        const pattern = p.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{\w+\}/g, "[^/:]+");
        return new RegExp(`^${pattern}$`).test(path);
      });
      assert.ok(documented, `${path} is documented`);
      const schema =
        documented[1][String(c.request.method).toLowerCase()]?.responses[String(answer.statusCode)]?.content?.["application/json"]?.schema;
      assert.ok(schema, `${c.name}: a schema for ${answer.statusCode}`);
      validate(schema, answer.json(), "body");
    }
  });
});

test("displayPath turns router patterns into the contract's paths", () => {
  assert.equal(displayPath("/v1/jobs/:jobId([A-Za-z0-9_-]+)::pause"), "/v1/jobs/{jobId}:pause");
  assert.equal(displayPath("/v1/jobs::batch"), "/v1/jobs:batch");
  assert.equal(displayPath("/v1/executions/:executionId/heartbeat"), "/v1/executions/{executionId}/heartbeat");
});
