// GET /v1/executions?possibleDuplicate=true: executions where an attempt ran
// on after losing its lease (store.ts executionPossibleDuplicates records
// them as the lost calls come), newest first, the caller's tenant's only.

import type { ExecutionsQuery, Page, PossibleDuplicateExecution } from "@duetime/sdk/contract";
import { toIso } from "../core/time.js";
import type { Store } from "../store/store.js";
import { pageOf } from "./cursor.js";
import type { RequestContext } from "./service.js";

export async function listPossibleDuplicates(
  store: Pick<Store, "executionPossibleDuplicates">,
  ctx: RequestContext,
  query: Partial<ExecutionsQuery>,
): Promise<Page<PossibleDuplicateExecution>> {
  return pageOf(
    query,
    { t: ["at", "number"], e: ["executionId", "string"] },
    (p) => store.executionPossibleDuplicates({ tenantId: ctx.tenantId, ...p }),
    (r) => ({
      executionId: r.executionId,
      jobId: r.jobId,
      name: r.name,
      pool: r.pool,
      scheduledFor: toIso(r.scheduledFor),
      state: r.state,
      attempt: r.attempt,
      possibleDuplicate: { attempt: r.duplicateAttempt, reason: r.reason, at: toIso(r.at) },
    }),
  );
}
