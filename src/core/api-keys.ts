// The --api-keys format, "key1:tenantA:admin,key2:tenantB:worker", parsed in
// one place for the server and the CLI. Secrets never appear in messages.
// Tenant "*" is every tenant (a platform key): worker or admin only.

import { ALL_TENANTS, type Role } from "@duetime/sdk/contract";
import { invalidArgument } from "./errors.js";

export interface ApiKey {
  key: string;
  tenantId: string;
  role: Role;
}

const ROLES: readonly string[] = ["admin", "client", "worker"];

export function parseApiKeys(spec: string): ApiKey[] {
  const entries = spec.split(",").map((e) => e.trim());
  if (entries.every((e) => e === "")) throw invalidArgument("apiKeys", "no keys given; expected key:tenant:role,...");
  return entries
    .filter((e) => e !== "")
    .map((entry, i) => {
      const parts = entry.split(":");
      const [key, tenantId, role] = parts;
      if (parts.length !== 3 || !key || !tenantId || !role) {
        throw invalidArgument("apiKeys", `entry ${i + 1}: expected key:tenant:role`);
      }
      if (!ROLES.includes(role)) {
        throw invalidArgument("apiKeys", `entry ${i + 1}: role must be admin, client or worker, got ${JSON.stringify(role)}`);
      }
      if (tenantId === ALL_TENANTS && role === "client") {
        throw invalidArgument("apiKeys", `entry ${i + 1}: a key for every tenant (*) is a worker or admin key; a client's jobs belong to one tenant`);
      }
      return { key, tenantId, role: role as Role };
    });
}
