// `duetime migrate`: applies the store's missing migrations and exits, so a
// deploy can migrate once before it starts (or restarts) its nodes. Servers
// also migrate on start, under the same lock, so this step is optional.

import { strictParse, expectPositionals, type Env } from "./args.js";
import type { Io } from "./output.js";
import { redactStoreUrl } from "../store/names.js";
import { parseStoreOptions, STORE_HELP, STORE_OPTIONS, type StoreChoice } from "./store-options.js";

export interface MigrateCommand {
  command: "migrate";
  store: StoreChoice;
  json: boolean;
}

export const MIGRATE_HELP = `Usage: duetime migrate [--store URL] [--schema NAME] [--json]

Creates the store's tables, or brings them up to this version, and exits.
Safe to run while nodes are serving, and from several places at once: on
PostgreSQL each migration is applied once, under an advisory lock. duetime
serve does the same on start.

${STORE_HELP}
  --json                      Print {"applied": [versions], "version": N}
  -h, --help                  Show this help

Exit codes: 0 migrated (or already current), 1 the store could not be
opened or migrated, 2 usage error.`;

export function parseMigrate(args: string[], env: Env): MigrateCommand {
  const usage = MIGRATE_HELP;
  const { values, positionals } = strictParse(args, { ...STORE_OPTIONS, json: { type: "boolean" } }, usage);
  expectPositionals(positionals, [], usage);
  return { command: "migrate", store: parseStoreOptions(values, env, usage), json: values.json ?? false };
}

export async function runMigrate(cmd: MigrateCommand, io: Io): Promise<void> {
  const { openStore } = await import("../store/factory.js");
  const store = await openStore(cmd.store.url, { ...cmd.store.options, migrate: false });
  try {
    const result = await store.migrate();
    if (cmd.json) io.stdout(`${JSON.stringify(result)}\n`);
    else {
      const where = `${redactStoreUrl(cmd.store.url)}${cmd.store.options.schema ? ` (schema ${cmd.store.options.schema})` : ""}`;
      const what =
        result.applied.length > 0 ? `applied migration${result.applied.length > 1 ? "s" : ""} ${result.applied.join(", ")}` : "already current";
      io.stdout(`${where}: ${what}; at version ${result.version}\n`);
    }
  } finally {
    await store.close();
  }
}
