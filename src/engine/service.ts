// The engine's service layer: what the HTTP server and the embedded client
// call. Every method takes the caller's context (tenant and roles), checks
// permissions and semantics (cron, zones, cross-field rules), and speaks the
// wire types of the contract. Shape validation (types, ranges, unknown
// fields) happens first, against core/schemas.ts (engine/operations.ts).

import { ALL_TENANTS, type OperationArgs, type OperationName, type OperationResult, type Role } from "@duetime/sdk/contract";

export interface RequestContext {
  tenantId: string;
  roles: ReadonlySet<Role>;
  /** Who acts, for the audit log (an API key's id, or "anonymous"). */
  actor?: string;
  /** Aborted when the HTTP client goes away (ends a long poll early). */
  signal?: AbortSignal;
  /**
   * A bootstrap caller: a key given in the server's configuration
   * (--api-keys), or anyone when the server has no keys at all (development
   * mode). Only a bootstrap admin manages other tenants' API keys.
   */
  bootstrap?: boolean;
}

/** An active API key kept in the store, as authentication sees it. */
export interface StoredKey {
  keyId: string;
  tenantId: string;
  role: Role;
}

/** Who acts, as the audit log records it. */
export function actorOf(ctx: RequestContext): string {
  return ctx.actor ?? "anonymous";
}

/** Whether the caller acts for every tenant: a bootstrap caller, or a platform key (tenant "*"). */
export function actsForEveryTenant(ctx: RequestContext): boolean {
  return ctx.bootstrap === true || ctx.tenantId === ALL_TENANTS;
}

/** The tenant a call is scoped to: the caller's, or none (every tenant) for a platform key. */
export function tenantScope(ctx: RequestContext): string | undefined {
  return ctx.tenantId === ALL_TENANTS ? undefined : ctx.tenantId;
}

export const ALL_ROLES: ReadonlySet<Role> = new Set<Role>(["admin", "client", "worker"]);
export const DEFAULT_CONTEXT: RequestContext = { tenantId: "default", roles: ALL_ROLES };

/**
 * One method per operation of the operation table (@duetime/sdk/contract's
 * OPERATIONS, where each is documented), taking the caller's context and then
 * the same arguments as the client's method of that name.
 */
export type ServedOperations = {
  [K in OperationName]: (ctx: RequestContext, ...args: OperationArgs<K>) => Promise<OperationResult<K>>;
};

export interface Service extends ServedOperations {
  /** For authentication (no API route): the active stored key whose secret has this SHA-256 digest (hex), or null. */
  findKey(digest: string): Promise<StoredKey | null>;
  /** For authentication (no API route): whether the store has ever held a key (active or revoked); if so, authentication is on. */
  hasStoredKeys(): Promise<boolean>;
  /** True when the store answers and its writes are not failing (a full disk, a lock, an I/O error). */
  ready(): Promise<boolean>;
}
