// The HTTP API's OpenAPI document, exactly as `duetime serve` answers it on
// GET /openapi.json: a real server on a temporary SQLite file is started,
// asked, and stopped. The document is made at run time from the operation
// table, so no copy is committed that could drift from it.
//
// Run directly (`npm run lint:openapi`, part of `npm run lint`), it lints
// both forms of the document with Redocly's recommended rules: a server with
// --api-keys (the bearer is required) and one without (the bearer is optional
// until the store holds a key). test/openapi/ types a client from it.

import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { startServer, type ApiKey } from "../src/server/index.js";

/** GET /openapi.json of a fresh server; with apiKeys, one whose keys are configured. */
export async function servedOpenApiDocument(apiKeys: ApiKey[] = []): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-openapi-"));
  try {
    const server = await startServer({
      host: "127.0.0.1",
      port: 0,
      store: `sqlite:${join(dir, "duetime.db")}`,
      logLevel: "silent",
      dashboard: false,
      apiKeys,
    });
    try {
      const res = await fetch(`${server.url}/openapi.json`);
      if (!res.ok) throw new Error(`GET /openapi.json answered ${res.status}`);
      return (await res.json()) as Record<string, unknown>;
    } finally {
      await server.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes both forms into a temporary directory and runs `redocly lint` on them; resolves to its exit code. */
async function lint(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-openapi-lint-"));
  try {
    const files = {
      "openapi-with-keys.json": await servedOpenApiDocument([{ key: "lint-key", tenantId: "default", role: "admin" }]),
      "openapi-without-keys.json": await servedOpenApiDocument(),
    };
    for (const [name, doc] of Object.entries(files)) writeFileSync(join(dir, name), `${JSON.stringify(doc, null, 2)}\n`);
    const redocly = join(import.meta.dirname, "..", "node_modules", ".bin", "redocly");
    const run = spawnSync(redocly, ["lint", "--extends", "recommended", "--format", "stylish", ...Object.keys(files)], {
      cwd: dir,
      stdio: "inherit",
      // No telemetry and no update check: CI reaches the npm registry only.
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
    });
    if (run.error) throw run.error;
    return run.status ?? 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) process.exitCode = await lint();
