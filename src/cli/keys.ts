// `duetime keys create|list|revoke`: API keys kept hashed in the store, for
// production (the server's --api-keys are for development and bootstrap).
// Parsing (pure) and running (against a DuetimeClient, with an admin --token).

import type { CreateKeyRequest, ListKeysQuery, Role } from "@duetime/sdk/contract";
import type { DuetimeClient } from "@duetime/sdk";
import {
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  UsageError,
  choiceOption,
  expectPositionals,
  globalOptions,
  integerOption,
  strictParse,
  type Env,
  type GlobalOptions,
} from "./args.js";
import { oneLine, utc, type Printer } from "./output.js";

export type KeysCommand =
  | { command: "keys create"; global: GlobalOptions; request: CreateKeyRequest }
  | { command: "keys list"; global: GlobalOptions; query: ListKeysQuery }
  | { command: "keys revoke"; global: GlobalOptions; keyId: string };

const ROLES: readonly Role[] = ["admin", "client", "worker"];

export const KEYS_HELP = `Usage: duetime keys <command> [options]

API keys kept in the server's store (only a SHA-256 digest of each secret is
stored). Every command needs an admin key (--token): an admin key of a tenant
manages that tenant's keys; a key from the server's --api-keys (bootstrap)
manages every tenant's. A server with no keys at all is open, and the first
key created turns authentication on.

Commands:
  create --role R [--tenant T] [--name N]
                          Create a key; prints its secret once
  list [--tenant T]       List keys (never their secrets), revoked ones too
  revoke <keyId>          Revoke a key

${GLOBAL_HELP}`;

export const KEYS_CREATE_HELP = `Usage: duetime keys create --role ROLE [--tenant TENANT] [--name NAME]

Creates an API key and prints its secret. The secret is shown only this once:
the server keeps only its SHA-256 digest. Use it as --token (DUETIME_TOKEN) or
as "Authorization: Bearer <key>".

  --role ROLE       admin, client or worker
  --tenant TENANT   The key's tenant (default: the tenant of your --token);
                    another tenant needs a bootstrap admin key (--api-keys)
  --name NAME       A label for people, e.g. "worker eu-1" (not secret)

${GLOBAL_HELP}`;

export const KEYS_LIST_HELP = `Usage: duetime keys list [--tenant TENANT] [--limit N] [--cursor C]

Lists API keys, newest first, revoked ones included; never their secrets. A
tenant's admin key sees its own tenant's keys; a bootstrap admin key sees
every tenant's unless --tenant is given.

  --tenant TENANT   Only this tenant's keys
  --limit N         Page size, 1..500 (default 50)
  --cursor C        The nextCursor of the previous page

${GLOBAL_HELP}`;

export const KEYS_REVOKE_HELP = `Usage: duetime keys revoke <keyId>

Revokes an API key; repeating it is harmless. The node that handles the call
refuses the key at once, other nodes within 30 seconds.

${GLOBAL_HELP}`;

export function parseKeysCreate(args: string[], env: Env): KeysCommand {
  const usage = KEYS_CREATE_HELP;
  const options = { ...GLOBAL_OPTIONS, role: { type: "string" }, tenant: { type: "string" }, name: { type: "string" } } as const;
  const { values, positionals } = strictParse(args, options, usage);
  expectPositionals(positionals, [], usage);
  const role = choiceOption("role", values.role, ROLES, usage);
  if (role === undefined) throw new UsageError("missing --role (admin, client or worker)", usage);
  const request: CreateKeyRequest = { role };
  if (values.tenant !== undefined) request.tenantId = nonEmpty("tenant", values.tenant, usage);
  if (values.name !== undefined) request.name = nonEmpty("name", values.name, usage);
  return { command: "keys create", global: globalOptions(values, env, usage), request };
}

export function parseKeysList(args: string[], env: Env): KeysCommand {
  const usage = KEYS_LIST_HELP;
  const options = { ...GLOBAL_OPTIONS, tenant: { type: "string" }, limit: { type: "string" }, cursor: { type: "string" } } as const;
  const { values, positionals } = strictParse(args, options, usage);
  expectPositionals(positionals, [], usage);
  const query: ListKeysQuery = {};
  if (values.tenant !== undefined) query.tenantId = nonEmpty("tenant", values.tenant, usage);
  const limit = integerOption("limit", values.limit, 1, 500, usage);
  if (limit !== undefined) query.limit = limit;
  if (values.cursor !== undefined) query.cursor = values.cursor;
  return { command: "keys list", global: globalOptions(values, env, usage), query };
}

export function parseKeysRevoke(args: string[], env: Env): KeysCommand {
  const usage = KEYS_REVOKE_HELP;
  const { values, positionals } = strictParse(args, GLOBAL_OPTIONS, usage);
  const [keyId] = expectPositionals(positionals, ["keyId"], usage);
  return { command: "keys revoke", global: globalOptions(values, env, usage), keyId: keyId! };
}

function nonEmpty(flag: string, value: string, usage: string): string {
  if (value === "") throw new UsageError(`--${flag}: must not be empty`, usage);
  return value;
}

export async function runKeys(cmd: KeysCommand, client: DuetimeClient, out: Printer): Promise<void> {
  switch (cmd.command) {
    case "keys create": {
      const created = await client.createKey(cmd.request);
      out.either(created, () =>
        out.fields([
          ["keyId", created.keyId],
          ["tenant", created.tenantId],
          ["role", created.role],
          ["name", created.name ?? "-"],
          ["createdAt", utc(created.createdAt)],
          ["key", created.key],
        ]),
      );
      out.warn("warning: store this key now (in a secret manager, say): it is shown only once and cannot be shown again.");
      return;
    }
    case "keys list": {
      const page = await client.listKeys(cmd.query);
      out.either(page, () => {
        if (page.items.length === 0) out.line("no API keys");
        else
          out.table(
            ["KEY ID", "TENANT", "ROLE", "NAME", "CREATED (UTC)", "REVOKED (UTC)"],
            page.items.map((k) => [k.keyId, k.tenantId, k.role, k.name === null ? "-" : oneLine(k.name, 30), utc(k.createdAt), utc(k.revokedAt)]),
          );
        if (page.nextCursor) out.line(`next page: --cursor ${page.nextCursor}`);
      });
      return;
    }
    case "keys revoke": {
      await client.revokeKey(cmd.keyId);
      if (!out.jsonMode) out.line(`revoked API key ${cmd.keyId} (other nodes refuse it within 30 s)`);
      return;
    }
  }
}
