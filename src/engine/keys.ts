// API keys kept in the store (POST/GET/DELETE /v1/keys, `duetime keys`):
// created with a random secret that is shown once, stored as its SHA-256
// digest only, listed without secrets, revoked (never deleted). Every create
// and revoke is written to the audit log of the key's tenant, in the same
// store transaction.
//
// Who manages what: an admin key of tenant T (a stored key) manages T's keys
// only: creating or listing another tenant's is PERMISSION_DENIED, revoking
// one is NOT_FOUND (other tenants' ids are never visible). A bootstrap admin
// (a key from the server's --api-keys, or anyone while the server has no key
// at all) manages every tenant's keys.

import { createHash, randomBytes } from "node:crypto";
import { ALL_TENANTS, type ApiKeyInfo, type CreatedKey, type CreateKeyRequest, type ListKeysQuery, type Page } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { DuetimeError, invalidArgument, notFound } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { toIso, toIsoOrNull } from "../core/time.js";
import type { ApiKeyRecord, Store } from "../store/store.js";
import { pageOf } from "./cursor.js";
import { actorOf, actsForEveryTenant, type RequestContext, type StoredKey } from "./service.js";

/** Secrets look like `dtk_` + 32 base64url characters (192 random bits). */
export const KEY_PREFIX = "dtk_";
const KEY_ID_PATTERN = /^ak_[0-9a-z]{22}$/;

/** Hex SHA-256 of a secret: what the store keeps and looks keys up by. */
export function keyDigest(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

export function newKeySecret(): string {
  return KEY_PREFIX + randomBytes(24).toString("base64url");
}

export class KeyManager {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  async create(ctx: RequestContext, request: CreateKeyRequest): Promise<CreatedKey> {
    requireAdmin(ctx, "POST /v1/keys");
    const tenantId = request.tenantId ?? ctx.tenantId;
    if (tenantId !== ctx.tenantId && !actsForEveryTenant(ctx)) {
      throw new DuetimeError(
        "PERMISSION_DENIED",
        `tenantId: an admin key of tenant ${JSON.stringify(ctx.tenantId)} creates keys for its own tenant only; another tenant's needs a bootstrap admin key (--api-keys) or a platform admin key (tenant *)`,
        { field: "tenantId" },
      );
    }
    if (tenantId === ALL_TENANTS && request.role === "client") {
      throw invalidArgument("role", "a key for every tenant (*) is a worker or admin key: clients create jobs, and a job belongs to one tenant");
    }
    // A collision of 192 random bits (or of the time-sortable id) does not happen; retry once anyway rather than answer 500.
    for (let tries = 0; tries < 3; tries++) {
      const now = this.clock.now();
      const keyId = `ak_${newId(now)}`;
      const key = newKeySecret();
      const stored = await this.store.apiKeyCreate({
        id: keyId,
        tenantId,
        role: request.role,
        digest: keyDigest(key),
        ...(request.name !== undefined ? { name: request.name } : {}),
        now,
        audit: {
          tenantId,
          at: now,
          actor: actorOf(ctx),
          action: "api-key.create",
          subject: keyId,
          details: { role: request.role, name: request.name ?? null },
        },
      });
      if (stored) return { keyId, key, tenantId, role: stored.role, name: stored.name, createdAt: toIso(stored.createdAt) };
    }
    throw new DuetimeError("INTERNAL", "could not pick an unused key id");
  }

  async list(ctx: RequestContext, query: ListKeysQuery): Promise<Page<ApiKeyInfo>> {
    requireAdmin(ctx, "GET /v1/keys");
    if (query.tenantId !== undefined && query.tenantId !== ctx.tenantId && !actsForEveryTenant(ctx)) {
      throw new DuetimeError(
        "PERMISSION_DENIED",
        `tenantId: an admin key of tenant ${JSON.stringify(ctx.tenantId)} lists its own tenant's keys only`,
        { field: "tenantId" },
      );
    }
    // A bootstrap admin sees every tenant unless it names one.
    const tenantId = query.tenantId ?? (actsForEveryTenant(ctx) ? undefined : ctx.tenantId);
    return pageOf(
      query,
      { c: ["createdAt", "number"], i: ["id", "string"] },
      (p) => this.store.apiKeyList({ ...(tenantId !== undefined ? { tenantId } : {}), ...p }),
      toInfo,
    );
  }

  async revoke(ctx: RequestContext, keyId: string): Promise<void> {
    requireAdmin(ctx, "DELETE /v1/keys/{keyId}");
    if (!KEY_ID_PATTERN.test(keyId)) throw notFound("API key", keyId);
    const now = this.clock.now();
    const key = await this.store.apiKeyRevoke({
      id: keyId,
      ...(actsForEveryTenant(ctx) ? {} : { tenantId: ctx.tenantId }),
      now,
      audit: { at: now, actor: actorOf(ctx), action: "api-key.revoke", subject: keyId },
    });
    if (!key) throw notFound("API key", keyId);
  }

  async find(digest: string): Promise<StoredKey | null> {
    const key = await this.store.apiKeyFind({ digest });
    return key ? { keyId: key.id, tenantId: key.tenantId, role: key.role } : null;
  }

  async any(): Promise<boolean> {
    return (await this.store.apiKeyList({ limit: 1 })).length > 0;
  }
}

function requireAdmin(ctx: RequestContext, what: string): void {
  if (!ctx.roles.has("admin")) throw new DuetimeError("PERMISSION_DENIED", `${what} needs the role admin`, { requiredRoles: ["admin"] });
}

function toInfo(k: ApiKeyRecord): ApiKeyInfo {
  return { keyId: k.id, tenantId: k.tenantId, role: k.role, name: k.name, createdAt: toIso(k.createdAt), revokedAt: toIsoOrNull(k.revokedAt) };
}
