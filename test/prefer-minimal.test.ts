// `Prefer: return=minimal` (RFC 7240) on the creates, end to end on a real
// server: POST /v1/jobs:batch answers each created job's jobId and nextRunAt
// only (failed items as in the full form), POST /v1/jobs the job's jobId and
// nextRunAt, both with `Preference-Applied: return=minimal`; without it, or
// with any other Prefer, the full answer as ever. The SDK's returnMinimal asks
// for it, and /openapi.json documents it.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { BatchCreateMinimalResult, BatchCreateResult, CreatedJobMinimal } from "@duetime/sdk/contract";
import { queueJob, startTestServer, type TestServer } from "./helpers.js";

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(() => t.close());

const runAt = (offsetMs: number) => new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000 + offsetMs).toISOString();
/** A valid job and an invalid one (no target). */
const batchOf = (at: string) => ({ jobs: [queueJob("minimal", { schedule: { runAt: at } }), { name: "bad", schedule: { runAt: at } }] });

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text) as Record<string, unknown> };
}
type Items = { items: Record<string, unknown>[] };
/** The answer with its job ids masked, so two answers for different jobs compare. */
const masked = (text: string) => text.replace(/"jobId":"[^"]+"/g, '"jobId":"*"');

describe("POST /v1/jobs:batch with Prefer: return=minimal", () => {
  test("answers each created job's jobId and nextRunAt only, failed items as in the full form, with Preference-Applied", async () => {
    const at = runAt(0);
    const full = await post("/v1/jobs:batch", batchOf(at));
    const minimal = await post("/v1/jobs:batch", batchOf(at), { prefer: "return=minimal" });
    assert.equal(minimal.status, full.status);
    assert.equal(minimal.status, 200);
    assert.equal(minimal.headers.get("preference-applied"), "return=minimal");
    const [created, failed] = (minimal.json as Items).items;
    assert.deepEqual(Object.keys(created ?? {}), ["jobId", "nextRunAt"]);
    assert.equal(created?.nextRunAt, new Date(at).toISOString());
    assert.deepEqual(failed, (full.json as Items).items[1], "the failed item is the full form's");
    assert.deepEqual(Object.keys(failed ?? {}), ["error"]);
    // The job was created as the full form creates it.
    const job = await t.client.getJob(created!.jobId as string);
    assert.equal(job.state, "SCHEDULED");
    assert.equal(job.nextRunAt, created?.nextRunAt);
  });

  test("without Prefer, or with return=representation, the full answer as ever and no Preference-Applied", async () => {
    const at = runAt(1000);
    const plain = await post("/v1/jobs:batch", batchOf(at));
    const representation = await post("/v1/jobs:batch", batchOf(at), { prefer: "return=representation" });
    for (const res of [plain, representation]) {
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("preference-applied"), null);
      const [created] = (res.json as Items).items;
      assert.deepEqual(Object.keys(created ?? {}), ["jobId", "nextRunAt", "created"]);
      assert.equal(created?.created, true);
    }
    assert.equal(masked(representation.text), masked(plain.text));
    assert.deepEqual(
      [...representation.headers.keys()].filter((h) => h !== "date"),
      [...plain.headers.keys()].filter((h) => h !== "date"),
    );
  });

  test("a Prefer it cannot parse or does not know is ignored: the full answer, never an error", async () => {
    const at = runAt(2000);
    const plain = masked((await post("/v1/jobs:batch", batchOf(at))).text);
    for (const prefer of [
      "garbage",
      ";;;,,,===",
      "return",
      "return=",
      "return=MINIMAL",
      'return="minimal',
      'x=",return=minimal"',
      "return=representation, return=minimal",
      "respond-async, wait=10",
      "x".repeat(8000),
    ]) {
      const res = await post("/v1/jobs:batch", batchOf(at), { prefer });
      assert.equal(res.status, 200, `${prefer.slice(0, 40)}: ${res.text.slice(0, 200)}`);
      assert.equal(res.headers.get("preference-applied"), null, prefer.slice(0, 40));
      assert.equal(masked(res.text), plain, prefer.slice(0, 40));
    }
    // Honoured beside other preferences, in any case of its name, quoted.
    for (const prefer of ["respond-async, return=minimal", 'Return = "minimal"; x=1']) {
      const res = await post("/v1/jobs:batch", batchOf(at), { prefer });
      assert.equal(res.headers.get("preference-applied"), "return=minimal", prefer);
      assert.deepEqual(Object.keys((res.json as Items).items[0] ?? {}), ["jobId", "nextRunAt"], prefer);
    }
  });

  test("a due spike's warnings leave the minimal items but stay in Duetime-Warning", async () => {
    const at = runAt(3000);
    const jobs = Array.from({ length: 1000 }, (_, i) => queueJob("minimal-spike", { payload: { i }, schedule: { runAt: at } }));
    const res = await post("/v1/jobs:batch", { jobs }, { prefer: "return=minimal" });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("duetime-warning") ?? "", /^DUE_SPIKE 1000 or more of this tenant's jobs in pool "minimal-spike"/);
    const items = (res.json as Items).items;
    assert.equal(items.length, 1000);
    assert.deepEqual(new Set(items.map((i) => Object.keys(i).join(","))), new Set(["jobId,nextRunAt"]));
    // The full form of the same spike carries them per item.
    const full = await post("/v1/jobs:batch", { jobs: jobs.slice(0, 1) });
    assert.equal(((full.json as Items).items[0]?.warnings as unknown[] | undefined)?.length, 1);
  });

  test("atomic with an invalid job: the same 400 envelope with or without it", async () => {
    const body = { ...batchOf(runAt(4000)), atomic: true };
    const plain = await post("/v1/jobs:batch", body);
    const minimal = await post("/v1/jobs:batch", body, { prefer: "return=minimal" });
    assert.equal(plain.status, 400);
    assert.equal(minimal.status, 400);
    assert.equal(minimal.headers.get("preference-applied"), null);
    assert.equal(minimal.text, plain.text);
  });
});

describe("POST /v1/jobs with Prefer: return=minimal", () => {
  test("answers the job's jobId and nextRunAt with its status and Location, and Preference-Applied; a repeat by Idempotency-Key 200", async () => {
    const at = runAt(5000);
    const headers = { prefer: "return=minimal", "idempotency-key": `minimal-${Date.now()}` };
    const first = await post("/v1/jobs", queueJob("minimal", { schedule: { runAt: at } }), headers);
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers.get("preference-applied"), "return=minimal");
    assert.deepEqual(Object.keys(first.json), ["jobId", "nextRunAt"]);
    assert.equal(first.headers.get("location"), `/v1/jobs/${first.json.jobId as string}`);
    assert.equal(first.json.nextRunAt, new Date(at).toISOString());
    const again = await post("/v1/jobs", queueJob("minimal", { schedule: { runAt: at } }), headers);
    assert.equal(again.status, 200);
    assert.deepEqual(again.json, first.json);

    const full = await post("/v1/jobs", queueJob("minimal", { schedule: { runAt: at } }));
    assert.equal(full.status, 201);
    assert.equal(full.headers.get("preference-applied"), null);
    assert.equal(full.json.state, "SCHEDULED", "the whole job");
    assert.deepEqual(full.json.payload, { hello: "world" });
  });
});

describe("the SDK's returnMinimal", () => {
  test("createJobs and createJob ask for the minimal answer and are typed by it", async () => {
    const at = runAt(6000);
    const items: BatchCreateMinimalResult[] = await t.client.createJobs(batchOf(at).jobs as never, { returnMinimal: true });
    assert.equal(items.length, 2);
    const [created, failed] = items;
    assert.ok(created && "jobId" in created);
    assert.deepEqual(Object.keys(created), ["jobId", "nextRunAt"]);
    // @ts-expect-error a minimal item has no created field
    assert.equal(created.created, undefined);
    assert.ok(failed && "error" in failed);
    assert.equal(failed.error.code, "INVALID_ARGUMENT");
    // Without the option: the full items, typed so.
    const fullItems: BatchCreateResult[] = await t.client.createJobs(batchOf(at).jobs as never);
    assert.equal((fullItems[0] as { created?: boolean }).created, true);

    const job: CreatedJobMinimal = await t.client.createJob(queueJob("minimal", { schedule: { runAt: at } }), { returnMinimal: true });
    assert.deepEqual(Object.keys(job).sort(), ["created", "jobId", "nextRunAt"]);
    assert.equal(job.created, true);
    assert.equal(job.nextRunAt, new Date(at).toISOString());
    assert.equal((await t.client.getJob(job.jobId)).nextRunAt, job.nextRunAt);
  });
});

test("/openapi.json documents the Prefer header, the minimal answers and Preference-Applied", async () => {
  type Op = {
    parameters?: { in: string; name: string }[];
    responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema: { anyOf?: { required?: string[] }[] } }> }>;
  };
  const doc = (await (await fetch(`${t.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, Op>> };
  for (const [path, status] of [
    ["/v1/jobs:batch", "200"],
    ["/v1/jobs", "201"],
    ["/v1/jobs", "200"],
  ] as const) {
    const op = doc.paths[path]?.post;
    assert.ok(
      op?.parameters?.some((p) => p.in === "header" && p.name === "prefer"),
      `${path} documents Prefer`,
    );
    const response = op?.responses[status];
    assert.ok(response?.headers?.["preference-applied"], `${path} ${status} documents Preference-Applied`);
    const forms = response?.content?.["application/json"]?.schema.anyOf ?? [];
    assert.equal(forms.length, 2, `${path} ${status}: the full and the minimal form`);
  }
  const minimalJob = doc.paths["/v1/jobs"]?.post?.responses["201"]?.content?.["application/json"]?.schema.anyOf?.[1];
  assert.deepEqual(minimalJob?.required, ["jobId", "nextRunAt"]);
});
