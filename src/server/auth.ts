// API keys and roles. With no keys configured (embedded and development
// default) every call runs as tenant "default" with every role. With keys,
// every /v1 call needs `Authorization: Bearer <key>`; a key belongs to one
// tenant and has one role. `admin` may do everything; the routes list which
// other roles they accept (routes.ts).

import { createHash, timingSafeEqual } from "node:crypto";
import type { Role } from "../core/api.js";
import type { ApiKey } from "../core/api-keys.js";
import { DuetimeError } from "../core/errors.js";
import { ALL_ROLES, DEFAULT_CONTEXT } from "../engine/service.js";

export { parseApiKeys, type ApiKey } from "../core/api-keys.js";

export interface Principal {
  tenantId: string;
  roles: ReadonlySet<Role>;
  /** For the audit log: "key_" + the first 12 hex digits of the key's SHA-256, or "anonymous". */
  actor: string;
}

const ANONYMOUS: Principal = { tenantId: DEFAULT_CONTEXT.tenantId, roles: DEFAULT_CONTEXT.roles, actor: "anonymous" };

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

  constructor(keys: readonly ApiKey[]) {
    for (const k of keys) {
      if (k.key === "") throw new Error("an API key must not be empty");
      const d = digest(k.key);
      this.byDigest.set(d.toString("hex"), {
        digest: d,
        principal: { tenantId: k.tenantId, roles: ROLE_SETS[k.role], actor: `key_${d.toString("hex").slice(0, 12)}` },
      });
    }
  }

  get enabled(): boolean {
    return this.byDigest.size > 0;
  }

  /** The principal of an Authorization header; throws UNAUTHENTICATED. */
  authenticate(authorization: string | undefined): Principal {
    if (!this.enabled) return ANONYMOUS;
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
    const found = this.byDigest.get(d.toString("hex"));
    if (!found || !timingSafeEqual(found.digest, d)) {
      throw new DuetimeError("UNAUTHENTICATED", "authorization: unknown API key", { field: "authorization" });
    }
    return found.principal;
  }
}

/** Throws PERMISSION_DENIED unless the principal holds admin or one of the allowed roles. */
export function authorize(principal: Principal, allowed: readonly Role[], what: string): void {
  if (principal.roles.has("admin")) return;
  if (allowed.some((r) => principal.roles.has(r))) return;
  const need = ["admin", ...allowed.filter((r) => r !== "admin")].join(" or ");
  throw new DuetimeError("PERMISSION_DENIED", `${what} needs the role ${need}`, { requiredRoles: [...new Set(["admin", ...allowed])] });
}
