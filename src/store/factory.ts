// Opens the store a URL names. Each driver is loaded with a dynamic import
// when its scheme is asked for, so `sqlite:` loads better-sqlite3 and never a
// PostgreSQL client (and the reverse), and a process that opens no store (the
// SDK, `import("duetime")` before a server starts) loads no driver at all.

import { resolve } from "node:path";
import { invalidArgument } from "../core/errors.js";
import type { Store } from "./store.js";

export interface OpenStoreOptions {
  /** PostgreSQL: the schema holding duetime's tables (default "duetime"); SQLite has none and ignores it. */
  schema?: string;
  /** PostgreSQL: apply missing migrations on open (default true); SQLite always migrates its file on open. */
  migrate?: boolean;
}

export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  if (url.startsWith("sqlite:")) {
    const path = url.slice("sqlite:".length);
    if (!path) throw invalidArgument("store", 'needs a path, e.g. "sqlite:./duetime.db" or "sqlite::memory:"');
    const { openSqliteStore } = await import("./sqlite/index.js");
    return openSqliteStore({ path: path === ":memory:" ? path : resolve(path) });
  }
  if (url.startsWith("postgres:") || url.startsWith("postgresql:")) {
    const { openPostgresStore } = await import("./postgres/index.js");
    return openPostgresStore({
      url,
      ...(options.schema !== undefined ? { schema: options.schema } : {}),
      ...(options.migrate !== undefined ? { migrate: options.migrate } : {}),
    });
  }
  throw invalidArgument("store", `unknown store ${JSON.stringify(url)}; use sqlite:PATH or postgres://USER@HOST:PORT/DATABASE`);
}
