// `duetime tenants show|set-quota`: a tenant's limits (GET/PUT
// /v1/tenants/{tenantId}/limits): its weight in pools leased across tenants
// and its quotas. Parsing (pure) and running (against a DuetimeClient, with
// an admin --token).

import type { DuetimeClient } from "@duetime/sdk";
import type { TenantLimits, TenantLimitsRequest } from "@duetime/sdk/contract";
import {
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  UsageError,
  expectPositionals,
  globalOptions,
  integerOption,
  strictParse,
  type Env,
  type GlobalOptions,
} from "./args.js";
import type { Printer } from "./output.js";

export type TenantsCommand =
  | { command: "tenants show"; global: GlobalOptions; tenantId: string }
  | { command: "tenants set-quota"; global: GlobalOptions; tenantId: string; limits: TenantLimitsRequest };

export const TENANTS_HELP = `Usage: duetime tenants <command> [options]

A tenant's limits. A tenant's admin key reads its own; setting them needs an
admin key for every tenant (tenant *, or one of the server's --api-keys).

Commands:
  show <tenant>                         The tenant's limits, defaults filled in
  set-quota <tenant> [--weight W] [--max-pending N] [--create-rate R]
            [--dispatch-rate R] [--max-leased N] [--max-payload-bytes N]
                                        Set them whole (a limit left out
                                        goes back to its default)

${GLOBAL_HELP}`;

export const TENANTS_SHOW_HELP = `Usage: duetime tenants show <tenant>

Prints the tenant's limits, defaults filled in.

${GLOBAL_HELP}`;

export const TENANTS_SET_QUOTA_HELP = `Usage: duetime tenants set-quota <tenant> [--weight W] [--max-pending N]
           [--create-rate R] [--dispatch-rate R] [--max-leased N]
           [--max-payload-bytes N]

Sets the tenant's limits whole; a limit left out goes back to its default
(no limit, weight 1). Audited. Over a quota, the API answers 429
RESOURCE_EXHAUSTED with Retry-After and the quota named.

  --weight W              The tenant's share of a pool leased across
                          tenants (the HTTP-target pool, or a platform
                          worker's), against the other tenants' weights:
                          0.01 to 1000. With weights 3 and 1, two
                          backlogged tenants get 3/4 and 1/4 of the work.
  --max-pending N         Jobs not yet ended it may hold
  --create-rate R         Jobs it may create per second (0.01 or more; a
                          burst of one second's worth)
  --dispatch-rate R       Its attempts started per second, every pool
                          together (0.01 or more): the excess waits its
                          turn, in order, and the wait is recorded on the
                          attempt (throttledMs in its history)
  --max-leased N          Attempts it may have leased (running) at once
  --max-payload-bytes N   The largest payload of its jobs, in bytes of JSON

${GLOBAL_HELP}`;

export function parseTenantsShow(args: string[], env: Env): TenantsCommand {
  const usage = TENANTS_SHOW_HELP;
  const { values, positionals } = strictParse(args, GLOBAL_OPTIONS, usage);
  const [tenantId] = expectPositionals(positionals, ["tenant"], usage);
  return { command: "tenants show", global: globalOptions(values, env, usage), tenantId: tenantId! };
}

export function parseTenantsSetQuota(args: string[], env: Env): TenantsCommand {
  const usage = TENANTS_SET_QUOTA_HELP;
  const options = {
    ...GLOBAL_OPTIONS,
    weight: { type: "string" },
    "max-pending": { type: "string" },
    "create-rate": { type: "string" },
    "dispatch-rate": { type: "string" },
    "max-leased": { type: "string" },
    "max-payload-bytes": { type: "string" },
  } as const;
  const { values, positionals } = strictParse(args, options, usage);
  const [tenantId] = expectPositionals(positionals, ["tenant"], usage);
  const limits: TenantLimitsRequest = {};
  if (values.weight !== undefined) limits.weight = decimalOption("weight", values.weight, 0.01, 1000, usage);
  const maxPending = integerOption("max-pending", values["max-pending"], 1, 1_000_000_000, usage);
  if (maxPending !== undefined) limits.maxPendingJobs = maxPending;
  if (values["create-rate"] !== undefined) limits.createRatePerSecond = decimalOption("create-rate", values["create-rate"], 0.01, 1_000_000, usage);
  if (values["dispatch-rate"] !== undefined)
    limits.dispatchRatePerSecond = decimalOption("dispatch-rate", values["dispatch-rate"], 0.01, 1_000_000, usage);
  const maxLeased = integerOption("max-leased", values["max-leased"], 1, 1_000_000, usage);
  if (maxLeased !== undefined) limits.maxLeasedAttempts = maxLeased;
  const maxPayload = integerOption("max-payload-bytes", values["max-payload-bytes"], 1, 104_857_600, usage);
  if (maxPayload !== undefined) limits.maxPayloadBytes = maxPayload;
  return { command: "tenants set-quota", global: globalOptions(values, env, usage), tenantId: tenantId!, limits };
}

/** A plain decimal number (digits, an optional fraction) in [min, max]. */
function decimalOption(flag: string, text: string, min: number, max: number, usage: string): number {
  const value = /^\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) throw new UsageError(`--${flag}: expected a number from ${min} to ${max}, got ${JSON.stringify(text)}`, usage);
  return value;
}

export async function runTenants(cmd: TenantsCommand, client: DuetimeClient, out: Printer): Promise<void> {
  const limits = cmd.command === "tenants show" ? await client.getTenantLimits(cmd.tenantId) : await client.putTenantLimits(cmd.tenantId, cmd.limits);
  out.either(limits, () => printLimits(out, limits));
}

function printLimits(out: Printer, limits: TenantLimits): void {
  const quota = (value: number | null) => (value === null ? "no limit" : String(value));
  out.fields([
    ["tenant", limits.tenantId],
    ["weight", String(limits.weight)],
    ["maxPendingJobs", quota(limits.maxPendingJobs)],
    ["createRatePerSecond", quota(limits.createRatePerSecond)],
    ["dispatchRatePerSecond", quota(limits.dispatchRatePerSecond)],
    ["maxLeasedAttempts", quota(limits.maxLeasedAttempts)],
    ["maxPayloadBytes", quota(limits.maxPayloadBytes)],
  ]);
}
