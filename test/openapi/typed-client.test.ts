// A user can generate a typed client from the served OpenAPI document: the
// document (scripts/openapi.ts, the one `npm run lint:openapi` lints) goes
// through openapi-typescript's CLI into a .d.ts, and a small program using it
// with openapi-fetch type-checks with tsc. The program also holds wrong calls
// marked @ts-expect-error: were the generated types loose (`any`, a missing
// field not required, an unknown path accepted), tsc would report the unused
// directive and fail. Then the program runs against a real server, so the
// typed paths are the routes that answer. Runs once (a subdirectory).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { servedOpenApiDocument } from "../../scripts/openapi.js";
import { startTestServer, type TestServer } from "../helpers.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const bin = (name: string) => join(root, "node_modules", ".bin", name);
const KEY = { key: "typed-client-key", tenantId: "default", role: "admin" as const };

const CLIENT = `import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const client = createClient<paths>({ baseUrl: process.env.DUETIME_URL, headers: { authorization: "Bearer ${KEY.key}" } });

const created = await client.POST("/v1/jobs", {
  body: { name: "typed", target: { type: "queue", pool: "typed" }, schedule: { delaySeconds: 60 }, payload: { n: 1 } },
  params: { header: { "idempotency-key": "typed-1" } },
});
if (created.error !== undefined) throw new Error(\`createJob failed: \${created.error.error.code}\`);
const jobId: string = created.data.jobId;

const paused = await client.POST("/v1/jobs/{jobId}:pause", { params: { path: { jobId } } });
if (paused.error !== undefined) throw new Error(\`pauseJob failed: \${paused.error.error.code}\`);
const state: string = paused.data.state;

const ready = await client.GET("/readyz");
console.log(JSON.stringify({ jobId, state, ready: ready.data?.status }));

export async function wrongCalls(): Promise<void> {
  // @ts-expect-error: a job needs a target
  await client.POST("/v1/jobs", { body: { name: "no target", schedule: { delaySeconds: 1 } } });
  // @ts-expect-error: a name is a string
  await client.POST("/v1/jobs", { body: { name: 7, target: { type: "queue", pool: "p" }, schedule: { delaySeconds: 1 } } });
  // @ts-expect-error: no such target type
  await client.POST("/v1/jobs", { body: { name: "x", target: { type: "carrier-pigeon", pool: "p" }, schedule: { delaySeconds: 1 } } });
  // @ts-expect-error: the route takes a jobId
  await client.POST("/v1/jobs/{jobId}:pause", {});
  // @ts-expect-error: no such route
  await client.GET("/v1/nothing-here");
  // @ts-expect-error: a job's jobId is a string, not a number
  const n: number = created.data?.jobId;
  void n;
}
`;

const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ["node"],
    lib: ["ES2023", "DOM"],
  },
  include: ["client.ts", "schema.d.ts"],
};

let dir: string;
let server: TestServer;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "duetime-typed-client-"));
  // The program resolves openapi-fetch, @types/node and tsx from the project.
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "dir");
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ type: "module" })}\n`);
  writeFileSync(join(dir, "openapi.json"), JSON.stringify(await servedOpenApiDocument([KEY])));
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG));
  writeFileSync(join(dir, "client.ts"), CLIENT);
  server = await startTestServer({ apiKeys: [KEY] });
});

after(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Runs a command in the directory; asynchronous, since the server answering it runs in this process. */
function run(command: string, args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: dir, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, stdout, stderr }));
  });
}

test("openapi-typescript types the document, tsc accepts the right calls and refuses the wrong ones, and the calls work", async () => {
  const generated = await run(bin("openapi-typescript"), ["openapi.json", "--output", "schema.d.ts"]);
  assert.equal(generated.status, 0, `openapi-typescript failed:\n${generated.stdout}${generated.stderr}`);

  const checked = await run(bin("tsc"), ["-p", "tsconfig.json"]);
  assert.equal(checked.status, 0, `tsc failed on the typed client:\n${checked.stdout}${checked.stderr}`);

  const ran = await run(process.execPath, ["--import", "tsx", "client.ts"], { DUETIME_URL: server.url });
  assert.equal(ran.status, 0, `the typed client failed against the server:\n${ran.stdout}${ran.stderr}`);
  const answer = JSON.parse(ran.stdout.trim().split("\n").at(-1) ?? "{}") as { jobId?: string; state?: string; ready?: string };
  assert.equal(answer.state, "PAUSED");
  assert.equal(answer.ready, "ready");
  const job = await fetch(`${server.url}/v1/jobs/${answer.jobId}`, { headers: { authorization: `Bearer ${KEY.key}` } });
  assert.equal(job.status, 200);
  const stored = (await job.json()) as { name: string; state: string };
  assert.deepEqual([stored.name, stored.state], ["typed", "PAUSED"]);
});
