// API keys kept in the store, end to end: a real server started with a
// bootstrap admin key (--api-keys), keys created, used, listed, revoked and
// audited over HTTP with the SDK, and a restart that keeps them.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { startServer } from "../src/server/index.js";
import { DuetimeClient } from "@duetime/sdk";
import { apiError, queueJob, serverStore, startTestServer, testStore, waitFor } from "./helpers.js";

const ROOT = { key: "root-secret", tenantId: "ops", role: "admin" as const };

test("a bootstrap admin creates a worker key; the worker leases with it; once revoked it is refused at once", async () => {
  const t = await startTestServer({ apiKeys: [ROOT] });
  const clients: DuetimeClient[] = [];
  const as = (token: string) => {
    const c = new DuetimeClient({ url: t.url, token, retries: 0 });
    clients.push(c);
    return c;
  };
  try {
    assert.equal((await apiError(t.client.stats())).status, 401);
    const root = as(ROOT.key);

    const workerKey = await root.createKey({ tenantId: "acme", role: "worker", name: "worker eu-1" });
    assert.match(workerKey.key, /^dtk_[A-Za-z0-9_-]{32}$/);
    assert.match(workerKey.keyId, /^ak_[0-9a-z]{22}$/);
    assert.deepEqual(
      { ...workerKey, key: "", keyId: "", createdAt: "" },
      { key: "", keyId: "", createdAt: "", tenantId: "acme", role: "worker", name: "worker eu-1" },
    );
    const clientKey = await root.createKey({ tenantId: "acme", role: "client" });
    assert.equal(clientKey.name, null);

    // the client key schedules a job in tenant acme; the worker key leases it
    const job = await as(clientKey.key).createJob(queueJob("emails"));
    const worker = as(workerKey.key);
    const leased = await waitFor(async () => (await worker.lease("emails", { workerId: "w1", waitSeconds: 1 })).items[0], "a leased execution");
    assert.equal(leased.jobId, job.jobId);
    assert.deepEqual(await worker.complete(leased.executionId, leased.attempt), { state: "SUCCEEDED" });
    // the worker key is a worker: no jobs, no keys
    assert.equal((await apiError(worker.listJobs())).code, "PERMISSION_DENIED");
    assert.equal((await apiError(worker.listKeys())).code, "PERMISSION_DENIED");

    // listed without secrets; the root (bootstrap) admin sees every tenant
    const listed = await root.listKeys();
    assert.deepEqual(listed.items.map((k) => k.keyId).sort(), [clientKey.keyId, workerKey.keyId].sort());
    assert.ok(listed.items.every((k) => !("key" in k) && !("digest" in k) && k.revokedAt === null));
    assert.doesNotMatch(JSON.stringify(listed), /dtk_/);

    await root.revokeKey(workerKey.keyId);
    const refused = await apiError(worker.lease("emails", { workerId: "w1" }));
    assert.equal(refused.status, 401);
    assert.equal(refused.code, "UNAUTHENTICATED");
    await root.revokeKey(workerKey.keyId); // again: 204
    assert.equal((await apiError(root.revokeKey("ak_0000000000000000000000"))).code, "NOT_FOUND");
    const after = await root.listKeys({ tenantId: "acme" });
    assert.ok(after.items.find((k) => k.keyId === workerKey.keyId)?.revokedAt);
    // the client key still works
    assert.equal((await as(clientKey.key).getJob(job.jobId)).jobId, job.jobId);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await t.close();
  }
});

test("a tenant's admin key manages its own tenant's keys only; creates and revokes are audited", async () => {
  const t = await startTestServer({ apiKeys: [ROOT] });
  const clients: DuetimeClient[] = [];
  const as = (token: string) => {
    const c = new DuetimeClient({ url: t.url, token, retries: 0 });
    clients.push(c);
    return c;
  };
  try {
    const root = as(ROOT.key);
    const acmeAdminKey = await root.createKey({ tenantId: "acme", role: "admin", name: "acme ops" });
    const opsClient = await root.createKey({ role: "client" });
    assert.equal(opsClient.tenantId, "ops", "the caller's tenant by default");
    const acme = as(acmeAdminKey.key);

    const own = await acme.createKey({ role: "worker" });
    assert.equal(own.tenantId, "acme");
    const denied = await apiError(acme.createKey({ tenantId: "ops", role: "admin" }));
    assert.equal(denied.code, "PERMISSION_DENIED");
    assert.equal(denied.details?.field, "tenantId");
    assert.equal((await apiError(acme.listKeys({ tenantId: "ops" }))).code, "PERMISSION_DENIED");
    assert.equal((await apiError(acme.revokeKey(opsClient.keyId))).code, "NOT_FOUND", "another tenant's key is not visible");
    // newest first (ties within a millisecond in id order), in pages
    const all = (await acme.listKeys()).items.map((k) => k.keyId);
    assert.deepEqual([...all].sort(), [own.keyId, acmeAdminKey.keyId].sort());
    const first = await acme.listKeys({ limit: 1 });
    assert.ok(first.nextCursor);
    const second = await acme.listKeys({ limit: 1, cursor: first.nextCursor });
    assert.deepEqual(
      [...first.items, ...second.items].map((k) => k.keyId),
      all,
    );

    await acme.revokeKey(own.keyId);
    const audit = (await acme.listAudit()).items;
    const revoked = audit.find((e) => e.action === "api-key.revoke");
    assert.deepEqual(
      { actor: revoked?.actor, subject: revoked?.subject },
      { actor: acmeAdminKey.keyId, subject: own.keyId },
      "the actor of a stored key is its id",
    );
    const created = audit.filter((e) => e.action === "api-key.create").map((e) => e.subject);
    assert.deepEqual(created.sort(), [acmeAdminKey.keyId, own.keyId].sort());
    const byRoot = audit.find((e) => e.subject === acmeAdminKey.keyId);
    assert.match(String(byRoot?.actor), /^key_[0-9a-f]{12}$/, "a configured key's actor");
    assert.doesNotMatch(JSON.stringify(audit), /dtk_|root-secret/);
    // ops' audit log holds its own key's creation, not acme's
    assert.deepEqual(
      (await root.listAudit()).items.map((e) => e.subject),
      [opsClient.keyId],
    );
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await t.close();
  }
});

test("without configured keys: open until the first key is created, then closed, across a restart too", async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-keys-"));
  const options = { host: "127.0.0.1", port: 0, ...serverStore(testStore(dir)), logLevel: "silent" };
  const clients: DuetimeClient[] = [];
  const client = (url: string, token?: string) => {
    const c = new DuetimeClient({ url, retries: 0, ...(token ? { token } : {}) });
    clients.push(c);
    return c;
  };
  let server = await startServer(options);
  try {
    const anonymous = client(server.url);
    await anonymous.stats(); // development mode: no key needed
    const admin = await anonymous.createKey({ role: "admin", name: "first" });
    assert.equal(admin.tenantId, "default");
    assert.equal((await apiError(anonymous.stats())).status, 401, "the first stored key turns authentication on");
    await client(server.url, admin.key).stats();
    await server.close();

    server = await startServer(options);
    assert.equal((await apiError(client(server.url).stats())).status, 401, "still on after a restart");
    const again = client(server.url, admin.key);
    await again.stats();
    await again.revokeKey(admin.keyId);
    assert.equal((await apiError(again.stats())).status, 401);
    assert.equal((await apiError(client(server.url).stats())).status, 401, "revoking every key does not reopen the server");
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
