// The one store a cluster test's nodes share: a fresh SQLite file, or a fresh
// PostgreSQL schema on 127.0.0.1:5432, so tests run in parallel.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type StoreKind = "sqlite" | "postgres";

export interface ClusterStore {
  kind: StoreKind;
  /** The serve flags that name it: --store, and --schema on PostgreSQL. */
  args: string[];
  /** Extra environment of the nodes. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

export async function sqliteStore(): Promise<ClusterStore> {
  const dir = mkdtempSync(join(tmpdir(), "duetime-cluster-"));
  return {
    kind: "sqlite",
    args: ["--store", `sqlite:${join(dir, "duetime.db")}`],
    env: {},
    async drop() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The stores every scenario runs on. */
export const CLUSTER_STORES: StoreKind[] = ["sqlite"];

export function openClusterStore(kind: StoreKind): Promise<ClusterStore> {
  return kind === "sqlite" ? sqliteStore() : Promise.reject(new Error(`no ${kind} store yet`));
}
