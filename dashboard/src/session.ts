// Who is logged in (GET /v1/whoami) and what that key may use. The pages ask
// before they show a link, a filter or a button, so none of them sends a
// request the server would refuse with 403 (Chromium logs each as an error).
// The rules are docs/api.md's "Roles", and a platform key (tenant "*") reads
// no tenant's jobs.

import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { WhoAmI } from "@duetime/sdk/contract";

export const SessionContext = createContext<WhoAmI>({ role: "admin", tenantId: "default", keyId: null });

export function useSession(): WhoAmI {
  return useContext(SessionContext);
}

export type Ability =
  /** Jobs, their executions and run ledger, possible duplicates, the dead-letter list; create and change jobs. */
  | "jobs"
  /** GET /v1/stats: the Overview. */
  | "stats"
  /** Dead-letter replays, single and bulk. */
  | "replay"
  /** GET /v1/cluster and /v1/targets. */
  | "cluster"
  /** Every tenant's figures side by side (a filter or column by tenant). */
  | "tenants";

export function may(who: WhoAmI, what: Ability): boolean {
  const platform = who.tenantId === "*";
  switch (what) {
    case "jobs":
      return (who.role === "admin" || who.role === "client") && !platform;
    case "stats":
      return who.role === "admin" || who.role === "worker";
    case "replay":
      return who.role === "admin" && !platform;
    case "cluster":
    case "tenants":
      return who.role === "admin";
  }
}
