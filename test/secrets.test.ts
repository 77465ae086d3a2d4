// Signing secrets without configuration: a server started without
// --signing-secret generates the default tenant's once, keeps it in the
// store, signs HTTP-target calls with it and shows it (GET /v1/secrets/signing).

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DuetimeApiError, DuetimeClient, verifySignature } from "@duetime/sdk";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { listenOnLoopback, serverStore, startTestServer, testStore, waitFor } from "./helpers.js";

interface Hit {
  headers: IncomingMessage["headers"];
  body: string;
}

async function receiver() {
  const hits: Hit[] = [];
  const { base, close } = await listenOnLoopback((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      hits.push({ headers: req.headers, body });
      res.writeHead(204);
      res.end();
    });
  });
  return {
    url: `${base}/hook`,
    hits,
    close,
  };
}

const ALLOW = { allowTargetHosts: ["127.0.0.1"] };

test("without --signing-secret the default tenant signs with a stored secret that survives a restart", async () => {
  const rx = await receiver();
  const dir = mkdtempSync(join(tmpdir(), "duetime-secrets-"));
  const store = serverStore(testStore(dir));
  try {
    const first = await startTestServer({ ...ALLOW, ...store });
    let secret: string;
    try {
      const shown = await first.client.signingSecrets();
      assert.equal(shown.tenantId, "default");
      assert.equal(shown.source, "store");
      assert.equal(shown.secrets.length, 1);
      secret = shown.secrets[0]!;
      assert.match(secret, /^whsec_[A-Za-z0-9_-]{43}$/);

      await first.client.createJob({ name: "signed", target: { type: "http", url: rx.url }, payload: { n: 1 }, schedule: { delaySeconds: 0 } });
      await waitFor(() => rx.hits.length >= 1, "the call");
      const hit = rx.hits[0]!;
      assert.match(String(hit.headers["duetime-signature"]), /^v1=[0-9a-f]{64}$/);
      assert.equal(verifySignature({ secret, headers: hit.headers, body: hit.body }), true);
      assert.equal(verifySignature({ secret: "whsec_other", headers: hit.headers, body: hit.body }), false);
    } finally {
      await first.close();
    }

    const second = await startTestServer({ ...ALLOW, ...store });
    try {
      assert.deepEqual(await second.client.signingSecrets(), { tenantId: "default", secrets: [secret], source: "store" });
      await second.client.createJob({ name: "again", target: { type: "http", url: rx.url }, payload: { n: 2 }, schedule: { delaySeconds: 0 } });
      await waitFor(() => rx.hits.length >= 2, "the second call");
      const hit = rx.hits[1]!;
      assert.equal(verifySignature({ secret, headers: hit.headers, body: hit.body }), true, "the restarted server signs with the same secret");
    } finally {
      await second.close();
    }

    // A configured secret wins; the stored one is not used then.
    const third = await startTestServer({ ...ALLOW, ...store, signingSecret: ["configured-new", "configured-old"] });
    try {
      assert.deepEqual(await third.client.signingSecrets(), { tenantId: "default", secrets: ["configured-new", "configured-old"], source: "config" });
      await third.client.createJob({ name: "configured", target: { type: "http", url: rx.url }, payload: { n: 3 }, schedule: { delaySeconds: 0 } });
      await waitFor(() => rx.hits.length >= 3, "the third call");
      const hit = rx.hits[2]!;
      assert.equal(verifySignature({ secret: "configured-new", headers: hit.headers, body: hit.body }), true);
      assert.equal(verifySignature({ secret, headers: hit.headers, body: hit.body }), false, "the stored secret does not sign");
    } finally {
      await third.close();
    }
  } finally {
    await rx.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("another tenant without a configured secret has none: unsigned calls, NOT_FOUND; the route needs admin", async () => {
  const rx = await receiver();
  const t = await startTestServer({
    ...ALLOW,
    apiKeys: [
      { key: "k-default", tenantId: "default", role: "admin" },
      { key: "k-acme", tenantId: "acme", role: "admin" },
      { key: "k-client", tenantId: "default", role: "client" },
    ],
  });
  const [admin, acme, client] = ["k-default", "k-acme", "k-client"].map((token) => new DuetimeClient({ url: t.url, token, retries: 0 }));
  try {
    assert.equal((await admin!.signingSecrets()).source, "store");
    await assert.rejects(acme!.signingSecrets(), (err: unknown) => err instanceof DuetimeApiError && err.code === "NOT_FOUND");
    await assert.rejects(client!.signingSecrets(), (err: unknown) => err instanceof DuetimeApiError && err.code === "PERMISSION_DENIED");
    await acme!.createJob({ name: "unsigned", target: { type: "http", url: rx.url }, schedule: { delaySeconds: 0 } });
    await waitFor(() => rx.hits.length >= 1, "the call");
    assert.equal(rx.hits[0]!.headers["duetime-signature"], undefined);
  } finally {
    await Promise.all([admin, acme, client].map((c) => c!.close()));
    await t.close();
    await rx.close();
  }
});

test("two stores on one SQLite file racing to create the secret get the same one", async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-secrets-race-"));
  const path = join(dir, "duetime.db");
  const a = await openSqliteStore({ path });
  const b = await openSqliteStore({ path });
  try {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 ? a : b).signingSecretEnsure({ tenantId: "default", generate: () => `whsec_${i}`, now: Date.now() }),
      ),
    );
    assert.equal(new Set(results).size, 1, results.join(", "));
    assert.equal(await a.signingSecretGet({ tenantId: "default" }), results[0]);
    assert.equal(await b.signingSecretGet({ tenantId: "default" }), results[0]);
  } finally {
    await a.close();
    await b.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
