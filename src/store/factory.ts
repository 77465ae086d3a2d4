// Opens the store a URL names. Each driver is loaded with a dynamic import
// when its scheme is asked for, so `sqlite:` loads better-sqlite3 and never a
// PostgreSQL client (and the reverse), and a process that opens no store (the
// SDK, `import("duetime")` before a server starts) loads no driver at all.

import { resolve } from "node:path";
import { invalidArgument } from "../core/errors.js";
import type { Store } from "./store.js";

export async function openStore(url: string): Promise<Store> {
  if (url.startsWith("sqlite:")) {
    const path = url.slice("sqlite:".length);
    if (!path) throw invalidArgument("store", 'needs a path, e.g. "sqlite:./duetime.db" or "sqlite::memory:"');
    const { openSqliteStore } = await import("./sqlite/index.js");
    return openSqliteStore({ path: path === ":memory:" ? path : resolve(path) });
  }
  if (url.startsWith("postgres:") || url.startsWith("postgresql:")) {
    throw invalidArgument("store", "the PostgreSQL store is not available in this version yet; use sqlite:PATH");
  }
  throw invalidArgument("store", `unknown store ${JSON.stringify(url)}; use sqlite:PATH`);
}
