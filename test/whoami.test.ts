// GET /v1/whoami (docs/api.md "API keys") on a real server: every valid key
// learns its role, tenant and key id (the dashboard hides what the role may
// not use); no key or an unknown one is 401; without keys it is the
// development caller.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { DuetimeClient } from "@duetime/sdk";
import { parseApiKeys } from "../src/server/index.js";
import { startTestServer } from "./helpers.js";

const KEYS = "adm-acme-0123456789:acme:admin,wrk-acme-0123456789:acme:worker,cli-globex-0123456789:globex:client,plat-0123456789:*:worker";

/** A configured key's id: "key_" and the first 12 hex digits of its SHA-256 (docs/api.md "Secrets"). */
const configuredId = (key: string) => `key_${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;

async function whoami(url: string, key?: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}/v1/whoami`, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } });
  return { status: res.status, body: await res.json() };
}

test("GET /v1/whoami answers each key's role, tenant and key id; 401 without a valid key", async () => {
  const t = await startTestServer({ apiKeys: parseApiKeys(KEYS) });
  try {
    for (const [key, role, tenantId] of [
      ["adm-acme-0123456789", "admin", "acme"],
      ["wrk-acme-0123456789", "worker", "acme"],
      ["cli-globex-0123456789", "client", "globex"],
      ["plat-0123456789", "worker", "*"],
    ] as const) {
      assert.deepEqual(await whoami(t.url, key), { status: 200, body: { role, tenantId, keyId: configuredId(key) } }, key);
    }

    const missing = await whoami(t.url);
    assert.equal(missing.status, 401);
    assert.equal((missing.body as { error: { code: string } }).error.code, "UNAUTHENTICATED");
    assert.equal((await whoami(t.url, "not-a-key")).status, 401);

    // A stored key answers its own id, and the SDK has the method.
    const admin = new DuetimeClient({ url: t.url, token: "adm-acme-0123456789", retries: 0 });
    const created = await admin.createKey({ role: "client", name: "dashboard" });
    const stored = new DuetimeClient({ url: t.url, token: created.key, retries: 0 });
    try {
      assert.deepEqual(await stored.whoami(), { role: "client", tenantId: "acme", keyId: created.keyId });
    } finally {
      await stored.close();
      await admin.close();
    }
  } finally {
    await t.close();
  }
});

test("GET /v1/whoami without keys (development mode): an admin of tenant default, no key id", async () => {
  const t = await startTestServer();
  try {
    assert.deepEqual(await whoami(t.url), { status: 200, body: { role: "admin", tenantId: "default", keyId: null } });
  } finally {
    await t.close();
  }
});
