// GET /v1/targets is scoped to the caller's tenant: a tenant's admin sees the
// origins its own jobs called, with its own counts; only a bootstrap admin
// sees every tenant's. Real receivers on loopback, a real server.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { TargetStatus } from "@duetime/sdk/contract";
import { DuetimeClient } from "@duetime/sdk";
import { listenOnLoopback, startTestServer, waitFor } from "./helpers.js";

async function receiver() {
  let hits = 0;
  const { base, close } = await listenOnLoopback((_req, res) => {
    hits++;
    res.end("ok");
  });
  return {
    base,
    hits: () => hits,
    close,
  };
}

const byOrigin = (a: unknown[], b: unknown[]) => String(a[0]).localeCompare(String(b[0]));
const origins = (items: TargetStatus[]) => items.map((i) => [i.origin, i.calls]).sort(byOrigin);
const expected = (...rows: [string, number][]) => rows.sort(byOrigin);

test("targets: a tenant's admin sees only its own origins and counts; a bootstrap admin sees all", async () => {
  const [rxAcme, rxBoth] = [await receiver(), await receiver()];
  const t = await startTestServer({
    allowTargetHosts: ["127.0.0.1"],
    apiKeys: [
      { key: "k-root", tenantId: "default", role: "admin" },
      { key: "k-acme", tenantId: "acme", role: "client" },
      { key: "k-globex", tenantId: "globex", role: "client" },
    ],
  });
  const root = new DuetimeClient({ url: t.url, token: "k-root", retries: 0 });
  const acme = new DuetimeClient({ url: t.url, token: "k-acme", retries: 0 });
  const globex = new DuetimeClient({ url: t.url, token: "k-globex", retries: 0 });
  const admins: DuetimeClient[] = [];
  try {
    const hook = (base: string) => ({ type: "http" as const, url: `${base}/hook` });
    const jobs = [
      [acme, await acme.createJob({ name: "a1", target: hook(rxAcme.base), schedule: { delaySeconds: 0 } })],
      [acme, await acme.createJob({ name: "a2", target: hook(rxBoth.base), schedule: { delaySeconds: 0 } })],
      [globex, await globex.createJob({ name: "g1", target: hook(rxBoth.base), schedule: { delaySeconds: 0 } })],
      [globex, await globex.createJob({ name: "g2", target: hook(rxBoth.base), schedule: { delaySeconds: 0 } })],
    ] as const;
    for (const [client, job] of jobs) await waitFor(async () => (await client.getJob(job.jobId)).state === "COMPLETED", `${job.name} completed`);
    assert.equal(rxAcme.hits() + rxBoth.hits(), 4);

    // Stored admin keys belong to one tenant and are not bootstrap keys.
    for (const tenantId of ["acme", "globex"]) {
      const created = await root.createKey({ tenantId, role: "admin" });
      admins.push(new DuetimeClient({ url: t.url, token: created.key, retries: 0 }));
    }
    const [acmeAdmin, globexAdmin] = admins as [DuetimeClient, DuetimeClient];

    assert.deepEqual(origins((await acmeAdmin.listTargets()).items), expected([rxAcme.base, 1], [rxBoth.base, 1]));
    assert.deepEqual(origins((await globexAdmin.listTargets()).items), expected([rxBoth.base, 2]));
    assert.deepEqual(origins((await root.listTargets()).items), expected([rxAcme.base, 1], [rxBoth.base, 3]));
  } finally {
    await Promise.all([root, acme, globex, ...admins].map((c) => c.close()));
    await t.close();
    await rxAcme.close();
    await rxBoth.close();
  }
});
