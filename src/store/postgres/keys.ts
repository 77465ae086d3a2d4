// API keys on PostgreSQL: only the SHA-256 digest of a secret is kept; a
// create or a revoke writes its audit entry in the same transaction.

import type { ApiKeyRecord, StoreParams } from "../store.js";
import { toApiKey } from "../rows.js";
import { type Db, one, rows } from "./db.js";
import { appendAudit } from "./history.js";

export async function create(c: Db, p: StoreParams<"apiKeyCreate">): Promise<ApiKeyRecord | null> {
  const row = await one(
    c,
    `INSERT INTO api_keys (id, tenant_id, role, digest, name, created_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT DO NOTHING RETURNING *`,
    [p.id, p.tenantId, p.role, p.digest, p.name ?? null, p.now],
  );
  if (!row) return null;
  if (p.audit) await appendAudit(c, p.audit);
  return toApiKey(row);
}

export async function list(db: Db, p: StoreParams<"apiKeyList">): Promise<ApiKeyRecord[]> {
  const values: unknown[] = [p.limit];
  const where: string[] = [];
  if (p.tenantId !== undefined) where.push(`tenant_id = $${values.push(p.tenantId)}`);
  if (p.after) where.push(`(created_at, id) < ($${values.push(p.after.createdAt)}::bigint, $${values.push(p.after.id)}::text)`);
  const found = await rows(
    db,
    `SELECT * FROM api_keys ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, id DESC LIMIT $1`,
    values,
  );
  return found.map(toApiKey);
}

export async function revoke(c: Db, p: StoreParams<"apiKeyRevoke">): Promise<ApiKeyRecord | null> {
  const revoked = await one(
    c,
    `UPDATE api_keys SET revoked_at = $3 WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2) AND revoked_at IS NULL RETURNING *`,
    [p.id, p.tenantId ?? null, p.now],
  );
  if (revoked) {
    const key = toApiKey(revoked);
    if (p.audit) await appendAudit(c, { ...p.audit, tenantId: key.tenantId });
    return key;
  }
  const row = await one(c, "SELECT * FROM api_keys WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2)", [p.id, p.tenantId ?? null]);
  return row ? toApiKey(row) : null;
}

export async function find(db: Db, digest: string): Promise<ApiKeyRecord | null> {
  const row = await one(db, "SELECT * FROM api_keys WHERE digest = $1 AND revoked_at IS NULL", [digest], "api_key_find");
  return row ? toApiKey(row) : null;
}
