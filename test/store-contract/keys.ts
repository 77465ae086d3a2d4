// The store contract, in part (index.ts runs the parts in order).
// Keys (store.ts, "API keys" and "Signing secrets").

import assert from "node:assert/strict";
import { describe } from "node:test";

import type { ApiKeyRecord, Store } from "../../src/store/store.js";
import { T0, MINUTE, HOUR, type ContractTests } from "./support.js";

export function keysContract({ storeTest }: ContractTests): void {
  describe("API keys", () => {
    const hex = (n: number): string => n.toString(16).padStart(64, "0");
    let seq = 0;
    /** Creates a key (a fresh id and digest unless given); asserts it was stored. */
    async function createKey(
      store: Store,
      fields: Partial<{ id: string; tenantId: string; role: "admin" | "client" | "worker"; digest: string; name: string; now: number }> = {},
    ): Promise<ApiKeyRecord> {
      seq++;
      const created = await store.apiKeyCreate({
        id: fields.id ?? `ak_${String(seq).padStart(4, "0")}`,
        tenantId: fields.tenantId ?? "t1",
        role: fields.role ?? "worker",
        digest: fields.digest ?? hex(seq),
        ...(fields.name !== undefined ? { name: fields.name } : {}),
        now: fields.now ?? T0,
      });
      assert.ok(created, "the key was created");
      return created;
    }

    storeTest("create answers the active key; find looks it up by digest", async (store) => {
      const key = await createKey(store, { id: "ak_a", tenantId: "t1", role: "admin", digest: hex(1), name: "ops laptop", now: T0 });
      const expected: ApiKeyRecord = {
        id: "ak_a",
        tenantId: "t1",
        role: "admin",
        digest: hex(1),
        name: "ops laptop",
        createdAt: T0,
        revokedAt: null,
      };
      assert.deepEqual(key, expected);
      assert.deepEqual(await store.apiKeyFind({ digest: hex(1) }), expected);
      assert.equal(await store.apiKeyFind({ digest: hex(2) }), null);
      const unnamed = await createKey(store, { id: "ak_b", digest: hex(2) });
      assert.equal(unnamed.name, null);
    });

    storeTest("a taken id or digest answers null and writes nothing, audit included", async (store) => {
      await createKey(store, { id: "ak_a", digest: hex(1), tenantId: "t1" });
      const audit = { tenantId: "t1", at: T0, actor: "admin-key", action: "api-key.create", subject: "ak_x" };
      assert.equal(await store.apiKeyCreate({ id: "ak_a", tenantId: "t1", role: "client", digest: hex(2), now: T0, audit }), null);
      assert.equal(await store.apiKeyCreate({ id: "ak_b", tenantId: "t2", role: "client", digest: hex(1), now: T0, audit }), null);
      assert.equal(await store.apiKeyFind({ digest: hex(2) }), null);
      assert.equal((await store.apiKeyList({ limit: 10 })).length, 1);
      assert.deepEqual(await store.auditList({ tenantId: "t1", limit: 10 }), []);
      // a revoked key's digest stays taken
      await store.apiKeyRevoke({ id: "ak_a", now: T0 + 1 });
      assert.equal(await store.apiKeyCreate({ id: "ak_c", tenantId: "t1", role: "client", digest: hex(1), now: T0 + 2 }), null);
    });

    storeTest("create is audited in the same call", async (store) => {
      const audit = { tenantId: "t1", at: T0, actor: "admin-key", action: "api-key.create", subject: "ak_a", details: { role: "worker" } };
      await store.apiKeyCreate({ id: "ak_a", tenantId: "t1", role: "worker", digest: hex(1), now: T0, audit });
      const entries = await store.auditList({ tenantId: "t1", limit: 10 });
      assert.equal(entries.length, 1);
      const { id: _id, ...entry } = entries[0]!;
      assert.deepEqual(entry, audit);
    });

    storeTest("revoke: find no longer answers, the key keeps its first revokedAt, repeating it is a no-op", async (store) => {
      const key = await createKey(store, { id: "ak_a", digest: hex(1) });
      const revoked = await store.apiKeyRevoke({ id: "ak_a", now: T0 + MINUTE });
      assert.deepEqual(revoked, { ...key, revokedAt: T0 + MINUTE });
      assert.equal(await store.apiKeyFind({ digest: hex(1) }), null);
      assert.deepEqual(await store.apiKeyRevoke({ id: "ak_a", now: T0 + HOUR }), { ...key, revokedAt: T0 + MINUTE });
      assert.equal(await store.apiKeyRevoke({ id: "ak_nope", now: T0 }), null);
    });

    storeTest("revoke with a tenant touches only that tenant's key", async (store) => {
      const key = await createKey(store, { id: "ak_a", tenantId: "t1", digest: hex(1) });
      assert.equal(await store.apiKeyRevoke({ id: "ak_a", tenantId: "t2", now: T0 + 1 }), null);
      assert.deepEqual(await store.apiKeyFind({ digest: hex(1) }), key);
      assert.equal((await store.apiKeyRevoke({ id: "ak_a", tenantId: "t1", now: T0 + 2 }))?.revokedAt, T0 + 2);
    });

    storeTest("revoke is audited under the key's tenant, only when it revoked the key", async (store) => {
      await createKey(store, { id: "ak_a", tenantId: "t2", digest: hex(1) });
      const audit = { at: T0 + 1, actor: "root", action: "api-key.revoke", subject: "ak_a" };
      await store.apiKeyRevoke({ id: "ak_a", now: T0 + 1, audit });
      await store.apiKeyRevoke({ id: "ak_a", now: T0 + 2, audit: { ...audit, at: T0 + 2 } });
      await store.apiKeyRevoke({ id: "ak_nope", now: T0 + 3, audit: { ...audit, at: T0 + 3, subject: "ak_nope" } });
      const entries = await store.auditList({ tenantId: "t2", limit: 10 });
      assert.equal(entries.length, 1);
      const { tenantId, at, actor, action, subject } = entries[0]!;
      assert.deepEqual({ tenantId, at, actor, action, subject }, { ...audit, tenantId: "t2" });
      assert.deepEqual(await store.auditList({ tenantId: "t1", limit: 10 }), []);
    });

    storeTest("list: newest first, revoked keys included, one tenant or all, paged with the after cursor", async (store) => {
      await createKey(store, { id: "ak_a", tenantId: "t1", now: T0 });
      await createKey(store, { id: "ak_b", tenantId: "t2", now: T0 + 1 });
      const c = await createKey(store, { id: "ak_c", tenantId: "t1", now: T0 + 1 });
      await createKey(store, { id: "ak_d", tenantId: "t1", now: T0 + 2 });
      await store.apiKeyRevoke({ id: "ak_c", now: T0 + 3 });
      const all = await store.apiKeyList({ limit: 10 });
      assert.deepEqual(
        all.map((k) => k.id),
        ["ak_d", "ak_c", "ak_b", "ak_a"],
      );
      assert.equal(all[1]?.revokedAt, T0 + 3);
      assert.deepEqual(
        (await store.apiKeyList({ tenantId: "t1", limit: 10 })).map((k) => k.id),
        ["ak_d", "ak_c", "ak_a"],
      );
      assert.deepEqual(await store.apiKeyList({ tenantId: "t3", limit: 10 }), []);
      // pages of two, by (createdAt, id): ties on createdAt are ordered by id
      const seen: string[] = [];
      let after: { createdAt: number; id: string } | undefined;
      for (;;) {
        const page = await store.apiKeyList({ limit: 2, ...(after ? { after } : {}) });
        seen.push(...page.map((k) => k.id));
        const last = page.at(-1);
        if (page.length < 2 || !last) break;
        after = { createdAt: last.createdAt, id: last.id };
      }
      assert.deepEqual(seen, ["ak_d", "ak_c", "ak_b", "ak_a"]);
      assert.deepEqual(
        (await store.apiKeyList({ tenantId: "t1", limit: 10, after: { createdAt: c.createdAt, id: c.id } })).map((k) => k.id),
        ["ak_a"],
      );
    });

    storeTest("keys survive a repeated migrate", async (store) => {
      await createKey(store, { id: "ak_a", digest: hex(1) });
      await store.migrate();
      assert.equal((await store.apiKeyFind({ digest: hex(1) }))?.id, "ak_a");
    });
  });

  describe("signing secrets", () => {
    storeTest("get is null until ensure creates the secret; ensure then answers it without generating again", async (store) => {
      assert.equal(await store.signingSecretGet({ tenantId: "t1" }), null);
      let calls = 0;
      const generate = (): string => `whsec_${++calls}`;
      assert.equal(await store.signingSecretEnsure({ tenantId: "t1", generate, now: T0 }), "whsec_1");
      assert.equal(await store.signingSecretGet({ tenantId: "t1" }), "whsec_1");
      assert.equal(await store.signingSecretEnsure({ tenantId: "t1", generate, now: T0 + 1000 }), "whsec_1");
      assert.equal(await store.signingSecretGet({ tenantId: "t1" }), "whsec_1");
    });

    storeTest("each tenant has its own secret", async (store) => {
      assert.equal(await store.signingSecretEnsure({ tenantId: "t1", generate: () => "a", now: T0 }), "a");
      assert.equal(await store.signingSecretEnsure({ tenantId: "t2", generate: () => "b", now: T0 }), "b");
      assert.equal(await store.signingSecretGet({ tenantId: "t1" }), "a");
      assert.equal(await store.signingSecretGet({ tenantId: "t2" }), "b");
      assert.equal(await store.signingSecretGet({ tenantId: "t3" }), null);
    });

    storeTest("concurrent first ensures all answer the same secret", async (store) => {
      let n = 0;
      const results = await Promise.all(
        Array.from({ length: 8 }, () => store.signingSecretEnsure({ tenantId: "t1", generate: () => `s${++n}`, now: T0 })),
      );
      assert.equal(new Set(results).size, 1, `one secret for all: ${results.join(", ")}`);
      assert.equal(await store.signingSecretGet({ tenantId: "t1" }), results[0]);
    });

    storeTest("the secret survives a repeated migrate", async (store) => {
      await store.signingSecretEnsure({ tenantId: "t1", generate: () => "kept", now: T0 });
      await store.migrate();
      assert.equal(await store.signingSecretGet({ tenantId: "t1" }), "kept");
    });
  });
}
