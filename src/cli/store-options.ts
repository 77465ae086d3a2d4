// The flags that name and open a store, shared by `duetime serve` and
// `duetime migrate`, checked before anything is opened.

import { SCHEMA_NAME, SCHEMA_NAME_RULE } from "../store/names.js";
import type { StoreOptions } from "../store/factory.js";
import { UsageError, integerOption, type Env } from "./args.js";

export const STORE_OPTIONS = {
  store: { type: "string" },
  schema: { type: "string" },
  "pool-size": { type: "string" },
} as const;

export const DEFAULT_STORE = "sqlite:./duetime.db";

export const STORE_HELP = `  --store URL                 DUETIME_STORE                sqlite:PATH or postgres://USER@HOST:PORT/DB (default ${DEFAULT_STORE})
  --schema NAME               DUETIME_SCHEMA               PostgreSQL: the schema duetime's tables live in (default duetime)
  --pool-size N               DUETIME_POOL_SIZE            PostgreSQL: connections in the pool, 1..1000 (default 10)`;

export interface StoreChoice {
  url: string;
  options: StoreOptions;
}

type Values = { store?: string | undefined; schema?: string | undefined; "pool-size"?: string | undefined };

/** The store flags (a flag wins over its variable; an empty variable counts as unset). */
export function parseStoreOptions(values: Values, env: Env, usage: string): StoreChoice {
  const pick = (flag: keyof Values, variable: string): { value: string; source: string } | undefined => {
    const given = values[flag];
    if (given !== undefined) return { value: given, source: `--${flag}` };
    const fromEnv = env[variable];
    return fromEnv === undefined || fromEnv === "" ? undefined : { value: fromEnv, source: variable };
  };
  const store = pick("store", "DUETIME_STORE") ?? { value: DEFAULT_STORE, source: "--store" };
  const postgres = /^postgres(ql)?:\/\/.+/.test(store.value);
  if (!postgres && !/^sqlite:.+/.test(store.value)) {
    throw new UsageError(`${store.source}: expected sqlite:PATH or postgres://..., got ${JSON.stringify(store.value)}`, usage);
  }
  const options: StoreOptions = {};
  const schema = pick("schema", "DUETIME_SCHEMA");
  if (schema) {
    if (!postgres) throw new UsageError(`${schema.source}: only a PostgreSQL store has schemas (the store is ${JSON.stringify(store.value)})`, usage);
    if (!SCHEMA_NAME.test(schema.value))
      throw new UsageError(`${schema.source}: expected ${SCHEMA_NAME_RULE}, got ${JSON.stringify(schema.value)}`, usage);
    options.schema = schema.value;
  }
  const poolSize = pick("pool-size", "DUETIME_POOL_SIZE");
  if (poolSize) {
    if (!postgres) throw new UsageError(`${poolSize.source}: only a PostgreSQL store has a connection pool`, usage);
    options.poolSize = integerOption(poolSize.source.replace(/^--/, ""), poolSize.value, 1, 1000, usage)!;
  }
  return { url: store.value, options };
}
