// Hostile numbers and the bounds of input-driven work, against a real server
// (real SQLite file, real socket): every numeric query parameter of every
// route refuses what is not a plain decimal number with 400 naming the field
// (never a 500, never a spinning server), bodies refuse 1e400, and the cron
// search's 30-year horizon shows as fewer preview times or a job with no
// next run.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { startServer } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-numbers-"));
const server = await startServer({ host: "127.0.0.1", port: 0, store: `sqlite:${join(dir, "duetime.db")}`, logLevel: "silent" });
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: { error?: { code: string; message: string; details?: { field?: string } } } & Record<string, unknown>;
}

async function call(method: string, path: string, body?: string): Promise<Answer> {
  const response = await fetch(server.url + path, {
    method,
    ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } }),
  });
  return { status: response.status, body: (await response.json()) as Answer["body"] };
}

function assertRefused(answer: Answer, field: string, what: string): void {
  assert.equal(answer.status, 400, `${what}: ${JSON.stringify(answer.body)}`);
  assert.equal(answer.body.error?.code, "INVALID_ARGUMENT", what);
  assert.equal(answer.body.error?.details?.field, field, what);
}

/** Raw querystring values, as a client would put them in the URL. */
const HOSTILE = [
  "Infinity",
  "-Infinity",
  "NaN",
  "1e309",
  "-1e309",
  "1e3",
  "0x10",
  "0o17",
  "0b11",
  "010",
  "%2B5",
  "+5",
  "%205",
  "5%20",
  "",
  "1.5",
  "5.0",
  "%EF%BC%95",
  "9007199254740993",
  "5&{name}=5",
];

test("every numeric query parameter refuses every hostile spelling with 400 naming it", async () => {
  const job = (await call("POST", "/v1/jobs", JSON.stringify({ name: "n", target: { type: "queue", pool: "p" }, schedule: { delaySeconds: 60 } })))
    .body as { jobId: string };
  const routes: [string, string][] = [
    ["/v1/jobs?", "limit"],
    [`/v1/jobs/${job.jobId}/executions?`, "limit"],
    ["/v1/dead-letters?", "limit"],
    ["/v1/audit?", "limit"],
    ["/v1/keys?", "limit"],
    ["/v1/schedules/preview?cron=0%209%20*%20*%20*&", "count"],
  ];
  for (const [prefix, name] of routes) {
    for (const value of HOSTILE) {
      const url = `${prefix}${name}=${value.replace("{name}", name)}`;
      assertRefused(await call("GET", url), name, url);
    }
    const ok = await call("GET", `${prefix}${name}=2`);
    assert.equal(ok.status, 200, `${prefix}${name}=2: ${JSON.stringify(ok.body)}`);
  }
  assert.deepEqual((await call("GET", "/healthz")).body, { status: "ok" });
});

test("the defects of issue 9: no spinning preview, no 500 from the store", async () => {
  const preview = await call("GET", "/v1/schedules/preview?cron=0%209%20*%20*%20*&count=Infinity");
  assertRefused(preview, "count", "count=Infinity");
  assert.match(preview.body.error!.message, /^count: must be an integer in plain decimal digits/);
  for (const limit of ["1e309", "-Infinity"]) assertRefused(await call("GET", `/v1/jobs?limit=${limit}`), "limit", limit);
  assertRefused(await call("GET", "/v1/jobs?limit=0x10"), "limit", "0x10");
  assert.equal(Array.isArray((await call("GET", `/v1/schedules/preview?cron=*%20*%20*%20*%20*%20*&count=1000`)).body.times), true);
});

test("bodies refuse 1e400, which JSON.parse reads as Infinity", async () => {
  const spec = (extra: string) => `{"name": "n", "target": {"type": "queue", "pool": "p"}, "schedule": {"delaySeconds": 60}${extra}}`;
  assertRefused(await call("POST", "/v1/jobs", spec(', "timeoutSeconds": 1e400')), "timeoutSeconds", "timeoutSeconds");
  assertRefused(await call("POST", "/v1/jobs", spec(', "payload": {"n": [1, -1e400]}')), "payload.n.1", "payload");
  assertRefused(await call("POST", "/v1/pools/p/lease", '{"workerId": "w", "waitSeconds": 1e400}'), "waitSeconds", "waitSeconds");
  const batch = await call("POST", "/v1/jobs:batch", `{"jobs": [${spec(', "payload": 1e400')}, ${spec("")}]}`);
  assert.equal(batch.status, 200);
  const items = batch.body.items as { error?: { details: { field: string } }; jobId?: string }[];
  assert.equal(items[0]?.error?.details.field, "jobs.0.payload");
  assert.ok(items[1]?.jobId);
});

// Feb 29 on a Monday: 2044, 2072, then 2112 (2100 is no leap year), 40 years on.
const LEAP_MONDAY = "0%200%20*%202%201%235";

test("the preview answers fewer times when the next one is past the 30-year horizon", async () => {
  const preview = await call("GET", `/v1/schedules/preview?cron=${LEAP_MONDAY}&from=2017-01-01T00:00:00Z&count=5`);
  assert.deepEqual(preview.body.times, ["2044-02-29T00:00:00.000Z", "2072-02-29T00:00:00.000Z"]);
  const none = await call("GET", `/v1/schedules/preview?cron=${LEAP_MONDAY}&from=2072-03-01T00:00:00Z&count=5`);
  assert.equal(none.status, 200);
  assert.deepEqual(none.body.times, []);
});

test("a cron job whose next firing is past the horizon has no next run: it is COMPLETED", async () => {
  const created = await call(
    "POST",
    "/v1/jobs",
    JSON.stringify({ name: "rare", target: { type: "queue", pool: "p" }, schedule: { cron: "0 0 * 2 1#5", startAt: "2072-03-01T00:00:00Z" } }),
  );
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.state, "COMPLETED");
  assert.equal(created.body.nextRunAt, null);
});
