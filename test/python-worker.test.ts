// The Python worker of examples/python-worker/ (stubs generated from the
// .proto by Debian's protoc and gRPC plugin, Debian's python3-grpcio) against
// a real server's gRPC port: it leases, heartbeats, completes and fails.
// .ci/run installs those packages; without them this test fails with
// CI=true, and skips loudly elsewhere.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { DuetimeClient } from "@duetime/sdk";
import { queueJob, startTestServer } from "./helpers.js";

const WORKER = fileURLToPath(new URL("../examples/python-worker/worker.py", import.meta.url));
const PYTHON = "/usr/bin/python3";
const missing = (() => {
  const probe = spawnSync(PYTHON, ["-c", "import grpc, google.protobuf"], { encoding: "utf8" });
  if (probe.status !== 0) return `${PYTHON} cannot import grpc (Debian: python3-grpcio)`;
  for (const tool of ["protoc", "grpc_python_plugin"])
    if (spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0) return `${tool} not found (Debian: protobuf-compiler, protobuf-compiler-grpc)`;
  return null;
})();

const name = "a Python worker built from the .proto leases, heartbeats, completes and fails jobs over gRPC";
if (missing === null) {
  test(name, { timeout: 60_000 }, async () => {
    const t = await startTestServer({
      grpcPort: 0,
      apiKeys: [
        { key: "py-worker", tenantId: "t", role: "worker" },
        { key: "py-admin", tenantId: "t", role: "admin" },
      ],
    });
    const client = new DuetimeClient({ url: t.url, token: "py-admin", retries: 0 });
    try {
      const doubled = await client.createJob(queueJob("py", { payload: { n: 21 } }));
      const failing = await client.createJob(queueJob("py", { payload: { fail: true } }));
      const child = spawn(PYTHON, [WORKER, "--address", t.server.grpcAddress!, "--key", "py-worker", "--pool", "py", "--jobs", "2"], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      assert.equal(code, 0, out);
      const [done] = (await client.listExecutions(doubled.jobId)).items;
      assert.deepEqual([done?.state, done?.result], ["SUCCEEDED", { doubled: 42 }], out);
      const [dead] = (await client.listExecutions(failing.jobId)).items;
      assert.equal(dead?.state, "DEAD");
      assert.match(JSON.stringify(dead?.error), /the payload asked to fail/);
    } finally {
      await client.close();
      await t.close();
    }
  });
} else if (process.env.CI === "true") {
  test(name, () => {
    throw new Error(`${missing}; CI=true requires it`);
  });
} else {
  process.stderr.write(`\n${"!".repeat(78)}\n!! SKIPPED: the Python worker example: ${missing}.\n!! CI=true fails instead.\n${"!".repeat(78)}\n\n`);
  test(name, { skip: missing }, () => {});
}
