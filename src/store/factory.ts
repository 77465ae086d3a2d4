// Opens the store a URL names. Each driver is loaded with a dynamic import
// when its scheme is asked for, so `sqlite:` loads better-sqlite3 and never a
// PostgreSQL client (and the reverse), and a process that opens no store (the
// SDK, `import("duetime")` before a server starts) loads no driver at all.

import { resolve } from "node:path";
import { invalidArgument } from "../core/errors.js";
import { checkSchemaName } from "./names.js";
import type { Durability, Store } from "./store.js";

export interface StoreOptions {
  /** PostgreSQL only: the schema duetime's tables live in (default "duetime"). */
  schema?: string;
  /** PostgreSQL only: connections in the pool (default 10). */
  poolSize?: number;
  /** Apply missing migrations on open (default true); `duetime migrate` opens without and migrates itself. */
  migrate?: boolean;
  /** What a commit must survive before it answers (store.ts Durability; default "accepted"). */
  durability?: Durability;
}

export async function openStore(url: string, options: StoreOptions = {}): Promise<Store> {
  if (url.startsWith("sqlite:")) {
    const path = url.slice("sqlite:".length);
    if (!path) throw invalidArgument("store", 'needs a path, e.g. "sqlite:./duetime.db" or "sqlite::memory:"');
    if (options.schema !== undefined) throw invalidArgument("schema", "only a PostgreSQL store has schemas; a SQLite store is one file");
    if (options.poolSize !== undefined) throw invalidArgument("poolSize", "only a PostgreSQL store has a connection pool");
    const { openSqliteStore } = await import("./sqlite/index.js");
    return openSqliteStore({
      path: path === ":memory:" ? path : resolve(path),
      migrate: options.migrate ?? true,
      ...(options.durability !== undefined ? { durability: options.durability } : {}),
    });
  }
  if (url.startsWith("postgres:") || url.startsWith("postgresql:")) {
    if (options.schema !== undefined) checkSchemaName(options.schema);
    const { openPostgresStore } = await import("./postgres/index.js");
    return openPostgresStore({
      url,
      ...(options.schema !== undefined ? { schema: options.schema } : {}),
      ...(options.poolSize !== undefined ? { poolSize: options.poolSize } : {}),
      ...(options.migrate !== undefined ? { migrate: options.migrate } : {}),
      ...(options.durability !== undefined ? { durability: options.durability } : {}),
    });
  }
  throw invalidArgument("store", `unknown store ${JSON.stringify(url)}; use sqlite:PATH or postgres://USER@HOST:PORT/DATABASE`);
}
