// The embedded client (src/embedded) encodes its arguments as the SDK would
// send them and goes through the server's own checks (engine/operations.ts):
// the same bad input gets the same code, field and message in both, and good
// input reaches the service with the same arguments. This guards the codecs
// of the operation table (encode against Fastify's parsing of the request).

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { InjectOptions } from "fastify";
import type { BackfillRequest, DuetimeApi, JobPatch, OccurrencesQuery } from "@duetime/sdk/contract";
import { DuetimeError } from "../core/errors.js";
import { embeddedClient } from "../embedded/index.js";
import { buildApp } from "./app.js";
import { RecordingService } from "./test-support.js";

const svc = new RecordingService();
const app = buildApp({ service: svc });
const api: DuetimeApi = embeddedClient(svc);
after(() => app.close());

interface ParityCase {
  name: string;
  embedded: (api: DuetimeApi) => Promise<unknown>;
  http: InjectOptions;
}

const WINDOW = { from: "2026-10-13T00:00:00Z", to: "2026-10-14T00:00:00Z" };

function patchCase(name: string, patch: unknown, ifMatch?: number, header?: string): ParityCase {
  return {
    name,
    embedded: (a) => a.updateJob("job_1", patch as JobPatch, ifMatch === undefined ? {} : { ifMatch }),
    http: { method: "PATCH", url: "/v1/jobs/job_1", payload: patch as object, ...(header !== undefined ? { headers: { "if-match": header } } : {}) },
  };
}

const bad: ParityCase[] = [
  patchCase("empty patch", {}),
  patchCase("version only", { version: 2 }),
  patchCase("unknown field", { name: "a", when: 1 }),
  patchCase("empty name", { name: "" }),
  patchCase("two schedule variants", { schedule: { delaySeconds: 1, cron: "* * * * *" } }),
  patchCase("cron-only field beside runAt", { schedule: { runAt: "2026-10-16T09:00:00Z", overlap: "forbid" } }),
  patchCase("retry out of range", { retry: { maxAttempts: 0 } }),
  patchCase("version 0", { name: "a", version: 0 }),
  patchCase("ifMatch 0", { name: "a" }, 0, '"0"'),
  {
    name: "PATCH of a malformed id",
    embedded: (a) => a.updateJob("a.b", { name: "x" }),
    http: { method: "PATCH", url: "/v1/jobs/a.b", payload: { name: "x" } },
  },
  {
    name: "backfill without to",
    embedded: (a) => a.backfillJob("job_1", { from: WINDOW.from } as BackfillRequest),
    http: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: WINDOW.from } },
  },
  {
    name: "backfill from after to",
    embedded: (a) => a.backfillJob("job_1", { from: WINDOW.to, to: WINDOW.from }),
    http: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: { from: WINDOW.to, to: WINDOW.from } },
  },
  {
    name: "occurrences with a bad from",
    embedded: (a) => a.listOccurrences("job_1", { from: "yesterday", to: WINDOW.to }),
    http: { method: "GET", url: `/v1/jobs/job_1/occurrences?from=yesterday&to=${encodeURIComponent(WINDOW.to)}` },
  },
  {
    name: "occurrences with an unknown parameter",
    embedded: (a) => a.listOccurrences("job_1", { ...WINDOW, limit: 3 } as OccurrencesQuery),
    http: { method: "GET", url: `/v1/jobs/job_1/occurrences?from=${WINDOW.from}&to=${WINDOW.to}&limit=3` },
  },
];

describe("embedded and HTTP refuse the same input the same way", () => {
  for (const c of bad) {
    test(c.name, async () => {
      const before = svc.calls.length;
      const err = await c.embedded(api).then(
        () => assert.fail("the embedded call should fail"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof DuetimeError, String(err));
      const res = await app.inject(c.http);
      const body = res.json() as { error: { code: string; message: string; details?: { field?: string } } };
      assert.equal(res.statusCode, err.status, res.body);
      assert.equal(body.error.code, err.code);
      assert.equal(body.error.details?.field, err.details?.field);
      assert.equal(body.error.message, err.message);
      assert.equal(svc.calls.length, before, "the service was not called");
    });
  }
});

describe("embedded calls reach the service like HTTP ones", () => {
  const good: ParityCase[] = [
    patchCase("PATCH with ifMatch", { schedule: { cron: "0 9 * * *", tz: "Europe/London" } }, 5, '"5"'),
    patchCase("PATCH with a version", { payload: { a: 1 }, version: 2 }),
    patchCase("PATCH without a version", { priority: 3 }),
    {
      name: "backfill",
      embedded: (a) => a.backfillJob("job_1", WINDOW),
      http: { method: "POST", url: "/v1/jobs/job_1:backfill", payload: WINDOW },
    },
    {
      name: "occurrences",
      embedded: (a) => a.listOccurrences("job_1", WINDOW),
      http: { method: "GET", url: `/v1/jobs/job_1/occurrences?from=${WINDOW.from}&to=${WINDOW.to}` },
    },
  ];
  for (const c of good) {
    test(c.name, async () => {
      const answer = await c.embedded(api);
      const viaEmbedded = svc.last();
      const res = await app.inject(c.http);
      assert.ok(res.statusCode === 200 || res.statusCode === 201, res.body);
      const viaHttp = svc.last();
      assert.equal(viaEmbedded.method, viaHttp.method);
      assert.deepEqual(viaEmbedded.args, viaHttp.args);
      assert.deepEqual(answer, res.json());
    });
  }
});
