// `duetime secrets show`: the callback signing secret(s) of the caller's
// tenant (GET /v1/secrets/signing, an admin --token), for receivers that
// verify Duetime-Signature. Parsing (pure) and running (against a DuetimeClient).

import type { DuetimeClient } from "@duetime/sdk";
import { GLOBAL_HELP, GLOBAL_OPTIONS, expectPositionals, globalOptions, strictParse, type Env, type GlobalOptions } from "./args.js";
import type { Printer } from "./output.js";

export type SecretsCommand = { command: "secrets show"; global: GlobalOptions };

export const SECRETS_HELP = `Usage: duetime secrets <command> [options]

Callback signing secrets: HTTP targets sign each call with their tenant's
secret (Duetime-Signature); receivers check it with verifySignature.

Commands:
  show                    Print your tenant's signing secret(s), newest first

${GLOBAL_HELP}`;

export const SECRETS_SHOW_HELP = `Usage: duetime secrets show

Prints the signing secret(s) of your --token's tenant, one per line, newest
first (during a rotation every one signs). They come from the server's
--signing-secret (DUETIME_SIGNING_SECRET) or --signing-secrets-file; without
those, the default tenant's is generated once and kept in the store. Needs an
admin key. --json prints {"tenantId", "secrets", "source": "config"|"store"}.
A tenant without a secret (its calls go unsigned) is an error (NOT_FOUND).

${GLOBAL_HELP}`;

export function parseSecretsShow(args: string[], env: Env): SecretsCommand {
  const usage = SECRETS_SHOW_HELP;
  const { values, positionals } = strictParse(args, GLOBAL_OPTIONS, usage);
  expectPositionals(positionals, [], usage);
  return { command: "secrets show", global: globalOptions(values, env, usage) };
}

export async function runSecrets(_cmd: SecretsCommand, client: DuetimeClient, out: Printer): Promise<void> {
  const answer = await client.signingSecrets();
  out.either(answer, () => {
    for (const secret of answer.secrets) out.line(secret);
  });
}
