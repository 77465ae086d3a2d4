// Tenants' limits (GET/PUT /v1/tenants/{tenantId}/limits): a tenant's
// weight in pools leased across tenants (store.ts executionLease) and its
// quotas (quotas.ts). A tenant's admin reads its own; only an admin for
// every tenant (platform key "*", or bootstrap) sets them, since they share
// what all tenants use.

import type { TenantLimits, TenantLimitsRequest } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { DuetimeError } from "../core/errors.js";
import { DEFAULT_TENANT_LIMITS, type Store } from "../store/store.js";
import type { TenantQuotas } from "./quotas.js";
import { actorOf, actsForEveryTenant, type RequestContext } from "./service.js";

export class TenantsService {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly quotas: TenantQuotas,
  ) {}

  async limits(ctx: RequestContext, tenantId: string): Promise<TenantLimits> {
    if (tenantId !== ctx.tenantId && !actsForEveryTenant(ctx)) {
      throw new DuetimeError("PERMISSION_DENIED", `an admin key of tenant ${JSON.stringify(ctx.tenantId)} reads its own tenant's limits only`);
    }
    const set = await this.store.tenantLimitsGet({ tenantId });
    return { tenantId, ...DEFAULT_TENANT_LIMITS, ...set };
  }

  async setLimits(ctx: RequestContext, tenantId: string, request: TenantLimitsRequest): Promise<TenantLimits> {
    if (!actsForEveryTenant(ctx)) {
      throw new DuetimeError(
        "PERMISSION_DENIED",
        "a tenant's limits are set by an admin for every tenant: a platform admin key (tenant *) or a bootstrap one (--api-keys)",
      );
    }
    const now = this.clock.now();
    const limits = { ...DEFAULT_TENANT_LIMITS, ...request };
    this.quotas.remember(tenantId, limits);
    await this.store.tenantLimitsPut({
      tenantId,
      limits,
      now,
      audit: { tenantId, at: now, actor: actorOf(ctx), action: "tenant.limits", subject: tenantId, details: { ...limits } },
    });
    return { tenantId, ...limits };
  }
}
