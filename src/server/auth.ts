// API keys and roles. A key belongs to one tenant and has one role. `admin`
// may do everything; the routes list which other roles they accept
// (routes.ts). Keys come from two places:
// - the server's configuration (--api-keys): development and bootstrap. They
//   are "bootstrap" keys: a bootstrap admin manages every tenant's stored keys.
// - the store (POST /v1/keys, `duetime keys create`): production. Only the
//   SHA-256 digest of each secret is stored; a bearer token is looked up by
//   its digest. A positive lookup is trusted for CACHE_MS (30 s): a key
//   revoked through this node stops working at once, one revoked through
//   another node within 30 s. Failed lookups are not cached, so a new key
//   works at once.
// Authentication is on when the configuration has keys or the store has ever
// held one (active or revoked: revoking the last key must not reopen the
// server). With neither (embedded and development default) every call runs
// as tenant "default" with every role, as a bootstrap caller.

import { createHash, timingSafeEqual } from "node:crypto";
import type { Role } from "@duetime/sdk/contract";
import type { ApiKey } from "../core/api-keys.js";
import { DuetimeError } from "../core/errors.js";
import { ALL_ROLES, DEFAULT_CONTEXT, type RequestContext, type StoredKey } from "../engine/service.js";

export { parseApiKeys, type ApiKey } from "../core/api-keys.js";

export interface Principal {
  tenantId: string;
  roles: ReadonlySet<Role>;
  /**
   * For the audit log: a configured key's "key_" + the first 12 hex digits of
   * its SHA-256, a stored key's id ("ak_…"), or "anonymous".
   */
  actor: string;
  /** A configured key, or anyone while there are no keys: manages every tenant's stored keys. */
  bootstrap: boolean;
}

const ANONYMOUS: Principal = { tenantId: DEFAULT_CONTEXT.tenantId, roles: DEFAULT_CONTEXT.roles, actor: "anonymous", bootstrap: true };

/** What the key ring asks about keys kept in the store (the Service answers). */
export interface StoredKeys {
  findKey(digest: string): Promise<StoredKey | null>;
  hasStoredKeys(): Promise<boolean>;
}

export interface KeyRingOptions {
  /** How long a stored key found by its digest is trusted without asking the store again (default 30 000 ms). */
  cacheMs?: number;
  /** While the store holds no key, how long that answer is trusted (default 1 000 ms). */
  emptyRecheckMs?: number;
  /** Most stored keys cached at once (default 10 000); the oldest entries go first. */
  maxCached?: number;
  now?: () => number;
}

export const CACHE_MS = 30_000;

const ROLE_SETS: Record<Role, ReadonlySet<Role>> = {
  // An admin may act as a client or a worker, so the service sees every role.
  admin: ALL_ROLES,
  client: new Set<Role>(["client"]),
  worker: new Set<Role>(["worker"]),
};

function digest(key: string): Buffer {
  return createHash("sha256").update(key, "utf8").digest();
}

/** Looks keys up by their SHA-256 digest: no early-exit string compare on the secret itself. */
export class KeyRing {
  private readonly byDigest = new Map<string, { digest: Buffer; principal: Principal }>();
  private readonly cache = new Map<string, { principal: Principal; keyId: string; until: number }>();
  private readonly cacheMs: number;
  private readonly emptyRecheckMs: number;
  private readonly maxCached: number;
  private readonly now: () => number;
  /** Once the store has held a key, it always has (keys are revoked, never deleted). */
  private storeHasKeys = false;
  private storeEmptyUntil = 0;
  private storeCheck: Promise<boolean> | undefined;
  private storeGeneration = 0;

  constructor(
    keys: readonly ApiKey[],
    private readonly stored?: StoredKeys,
    options: KeyRingOptions = {},
  ) {
    for (const k of keys) {
      if (k.key === "") throw new Error("an API key must not be empty");
      const d = digest(k.key);
      this.byDigest.set(d.toString("hex"), {
        digest: d,
        principal: { tenantId: k.tenantId, roles: ROLE_SETS[k.role], actor: `key_${d.toString("hex").slice(0, 12)}`, bootstrap: true },
      });
    }
    this.cacheMs = options.cacheMs ?? CACHE_MS;
    this.emptyRecheckMs = options.emptyRecheckMs ?? 1000;
    this.maxCached = options.maxCached ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** Keys were given in the configuration: authentication is on whatever the store holds. */
  get configured(): boolean {
    return this.byDigest.size > 0;
  }

  /** A key was just stored through this node: ask the store again at the next request (auth is on from then). */
  storedKeyCreated(): void {
    this.storeEmptyUntil = 0;
    // an answer asked for before the key was stored must not count
    this.storeGeneration++;
    this.storeCheck = undefined;
  }

  /** A stored key was just revoked through this node: stop trusting its cached lookup at once. */
  forget(keyId: string): void {
    for (const [hex, entry] of this.cache) if (entry.keyId === keyId) this.cache.delete(hex);
  }

  /** The principal of an Authorization header; throws UNAUTHENTICATED (or UNAVAILABLE when the store cannot answer). */
  async authenticate(authorization: string | undefined): Promise<Principal> {
    if (!this.configured && !(await this.enabledByStore())) return ANONYMOUS;
    if (authorization === undefined || authorization === "") {
      throw new DuetimeError("UNAUTHENTICATED", "authorization: missing; send Authorization: Bearer <key>", {
        field: "authorization",
      });
    }
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    const token = match?.[1];
    if (token === undefined) {
      throw new DuetimeError("UNAUTHENTICATED", "authorization: expected the Bearer scheme", { field: "authorization" });
    }
    const d = digest(token);
    const hex = d.toString("hex");
    const found = this.byDigest.get(hex);
    if (found && timingSafeEqual(found.digest, d)) return found.principal;
    if (this.stored) {
      const now = this.now();
      const cached = this.cache.get(hex);
      if (cached && cached.until > now) return cached.principal;
      const key = await unavailableOnError(() => this.stored!.findKey(hex));
      if (key) {
        const principal: Principal = { tenantId: key.tenantId, roles: ROLE_SETS[key.role], actor: key.keyId, bootstrap: false };
        this.cache.delete(hex);
        this.cache.set(hex, { principal, keyId: key.keyId, until: now + this.cacheMs });
        if (this.cache.size > this.maxCached) this.cache.delete(this.cache.keys().next().value!);
        return principal;
      }
      this.cache.delete(hex);
    }
    throw new DuetimeError("UNAUTHENTICATED", "authorization: unknown or revoked API key", { field: "authorization" });
  }

  /** Whether the store has ever held a key; "no" is asked again after emptyRecheckMs, one question at a time. */
  private async enabledByStore(): Promise<boolean> {
    if (this.storeHasKeys) return true;
    if (!this.stored || this.now() < this.storeEmptyUntil) return false;
    const generation = this.storeGeneration;
    let check = this.storeCheck;
    if (!check) {
      check = this.storeCheck = unavailableOnError(() => this.stored!.hasStoredKeys()).finally(() => {
        if (this.storeCheck === check) this.storeCheck = undefined;
      });
    }
    const any = await check;
    if (any) this.storeHasKeys = true;
    else if (generation === this.storeGeneration) this.storeEmptyUntil = this.now() + this.emptyRecheckMs;
    return any;
  }
}

async function unavailableOnError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof DuetimeError) throw err;
    throw new DuetimeError("UNAVAILABLE", "API keys cannot be checked: the store is unreachable", undefined, 1);
  }
}

/** The service's view of an authenticated caller: its tenant, roles and actor, and the signal that ends its call. */
export function requestContext(principal: Principal, signal: AbortSignal): RequestContext {
  return {
    tenantId: principal.tenantId,
    roles: principal.roles,
    actor: principal.actor,
    signal,
    ...(principal.bootstrap ? { bootstrap: true } : {}),
  };
}

/** Throws PERMISSION_DENIED unless the principal holds admin or one of the allowed roles. */
export function authorize(principal: Principal, allowed: readonly Role[], what: string): void {
  if (principal.roles.has("admin")) return;
  if (allowed.some((r) => principal.roles.has(r))) return;
  const need = ["admin", ...allowed.filter((r) => r !== "admin")].join(" or ");
  throw new DuetimeError("PERMISSION_DENIED", `${what} needs the role ${need}`, { requiredRoles: [...new Set(["admin", ...allowed])] });
}
