// GET /v1/executions?possibleDuplicate=true: executions where an attempt ran
// on after losing its lease (store.ts executionPossibleDuplicates records
// them as the lost calls come), newest first, the caller's tenant's only.

import type { ExecutionsQuery, Page, PossibleDuplicateExecution } from "@duetime/sdk/contract";
import { toIso } from "../core/time.js";
import type { Store } from "../store/store.js";
import { decodeCursor, encodeCursor } from "./cursor.js";
import type { RequestContext } from "./service.js";
import { DEFAULT_LIMIT } from "./wire.js";

export async function listPossibleDuplicates(
  store: Pick<Store, "executionPossibleDuplicates">,
  ctx: RequestContext,
  query: Partial<ExecutionsQuery>,
): Promise<Page<PossibleDuplicateExecution>> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = query.cursor ? decodeCursor(query.cursor, { t: "number", e: "string" }) : undefined;
  const rows = await store.executionPossibleDuplicates({
    tenantId: ctx.tenantId,
    limit,
    ...(after ? { after: { at: after.t, executionId: after.e } } : {}),
  });
  const last = rows[rows.length - 1];
  return {
    items: rows.map((r) => ({
      executionId: r.executionId,
      jobId: r.jobId,
      name: r.name,
      pool: r.pool,
      scheduledFor: toIso(r.scheduledFor),
      state: r.state,
      attempt: r.attempt,
      possibleDuplicate: { attempt: r.duplicateAttempt, reason: r.reason, at: toIso(r.at) },
    })),
    nextCursor: rows.length === limit && last ? encodeCursor({ t: last.at, e: last.executionId }) : null,
  };
}
