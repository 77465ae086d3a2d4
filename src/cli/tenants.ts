// `duetime tenants show|set-quota`: a tenant's limits (GET/PUT
// /v1/tenants/{tenantId}/limits). Today the limit is the tenant's weight in
// pools leased across tenants. Parsing (pure) and running (against a
// DuetimeClient, with an admin --token).

import type { DuetimeClient } from "@duetime/sdk";
import type { TenantLimits, TenantLimitsRequest } from "@duetime/sdk/contract";
import { GLOBAL_HELP, GLOBAL_OPTIONS, UsageError, expectPositionals, globalOptions, strictParse, type Env, type GlobalOptions } from "./args.js";
import type { Printer } from "./output.js";

export type TenantsCommand =
  | { command: "tenants show"; global: GlobalOptions; tenantId: string }
  | { command: "tenants set-quota"; global: GlobalOptions; tenantId: string; limits: TenantLimitsRequest };

export const TENANTS_HELP = `Usage: duetime tenants <command> [options]

A tenant's limits. A tenant's admin key reads its own; setting them needs an
admin key for every tenant (tenant *, or one of the server's --api-keys).

Commands:
  show <tenant>                         The tenant's limits, defaults filled in
  set-quota <tenant> [--weight W]       Set them whole (a limit left out
                                        goes back to its default)

${GLOBAL_HELP}`;

export const TENANTS_SHOW_HELP = `Usage: duetime tenants show <tenant>

Prints the tenant's limits, defaults filled in.

${GLOBAL_HELP}`;

export const TENANTS_SET_QUOTA_HELP = `Usage: duetime tenants set-quota <tenant> [--weight W]

Sets the tenant's limits whole; a limit left out goes back to its default.
Audited.

  --weight W   The tenant's share of a pool leased across tenants (the
               HTTP-target pool, or a platform worker's), against the other
               tenants' weights: 0.01 to 1000, default 1. With weights 3 and
               1, two backlogged tenants get 3/4 and 1/4 of the work.

${GLOBAL_HELP}`;

export function parseTenantsShow(args: string[], env: Env): TenantsCommand {
  const usage = TENANTS_SHOW_HELP;
  const { values, positionals } = strictParse(args, GLOBAL_OPTIONS, usage);
  const [tenantId] = expectPositionals(positionals, ["tenant"], usage);
  return { command: "tenants show", global: globalOptions(values, env, usage), tenantId: tenantId! };
}

export function parseTenantsSetQuota(args: string[], env: Env): TenantsCommand {
  const usage = TENANTS_SET_QUOTA_HELP;
  const { values, positionals } = strictParse(args, { ...GLOBAL_OPTIONS, weight: { type: "string" } } as const, usage);
  const [tenantId] = expectPositionals(positionals, ["tenant"], usage);
  const limits: TenantLimitsRequest = {};
  if (values.weight !== undefined) limits.weight = weightOption(values.weight, usage);
  return { command: "tenants set-quota", global: globalOptions(values, env, usage), tenantId: tenantId!, limits };
}

function weightOption(text: string, usage: string): number {
  const weight = /^\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!(weight >= 0.01 && weight <= 1000)) throw new UsageError(`--weight: expected a number from 0.01 to 1000, got ${JSON.stringify(text)}`, usage);
  return weight;
}

export async function runTenants(cmd: TenantsCommand, client: DuetimeClient, out: Printer): Promise<void> {
  const limits = cmd.command === "tenants show" ? await client.getTenantLimits(cmd.tenantId) : await client.putTenantLimits(cmd.tenantId, cmd.limits);
  out.either(limits, () => printLimits(out, limits));
}

function printLimits(out: Printer, limits: TenantLimits): void {
  out.fields([
    ["tenant", limits.tenantId],
    ["weight", String(limits.weight)],
  ]);
}
