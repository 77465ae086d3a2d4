// Callback signing secrets (docs/http-targets.md, "Signing"): each tenant's
// secrets come from the configuration (--signing-secret / signingSecrets),
// and the default tenant, when none is configured, gets one generated once
// and kept in the store (every node of the cluster signs with the same one).
// GET /v1/secrets/signing (`duetime secrets show`) reads the caller's
// tenant's secrets.

import { randomBytes } from "node:crypto";
import type { SigningSecrets } from "@duetime/sdk/contract";
import { DuetimeError } from "../core/errors.js";
import type { Store } from "../store/store.js";
import type { RequestContext } from "./service.js";

/** Generated secrets look like `whsec_` + 43 base64url characters (32 random bytes). */
export const SIGNING_SECRET_PREFIX = "whsec_";

export function newSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBytes(32).toString("base64url");
}

/** The tenant whose secret is generated and stored when none is configured. */
export const STORED_SECRET_TENANT = "default";

export class SigningSecretReader {
  /**
   * @param configured each tenant's configured secrets, newest first (empty lists dropped)
   */
  constructor(
    private readonly store: Store,
    private readonly configured: ReadonlyMap<string, readonly string[]>,
  ) {}

  async show(ctx: RequestContext): Promise<SigningSecrets> {
    if (!ctx.roles.has("admin")) {
      throw new DuetimeError("PERMISSION_DENIED", "GET /v1/secrets/signing needs the role admin", { requiredRoles: ["admin"] });
    }
    const tenantId = ctx.tenantId;
    const configured = this.configured.get(tenantId);
    if (configured && configured.length > 0) return { tenantId, secrets: [...configured], source: "config" };
    // Only the default tenant's is ever generated; another tenant without a configured secret sends unsigned calls.
    const stored = tenantId === STORED_SECRET_TENANT ? await this.store.signingSecretGet({ tenantId }) : null;
    if (stored !== null) return { tenantId, secrets: [stored], source: "store" };
    throw new DuetimeError(
      "NOT_FOUND",
      `tenant ${JSON.stringify(tenantId)} has no signing secret: its HTTP-target calls are sent unsigned (configure one with signingSecrets)`,
    );
  }
}
