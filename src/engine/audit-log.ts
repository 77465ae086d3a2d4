// The audit log: who did what to which resource, newest first (read only; the
// writes are made in the same transactions as the changes they record).

import type { AuditItem, Page, PageQuery } from "@duetime/sdk/contract";
import { toIso } from "../core/time.js";
import { decodeCursor, encodeCursor } from "./cursor.js";
import type { ReadStore } from "./read-routing.js";
import type { RequestContext } from "./service.js";
import { DEFAULT_LIMIT } from "./wire.js";

export class AuditLog {
  constructor(private readonly reads: ReadStore) {}

  async list(ctx: RequestContext, query: PageQuery): Promise<Page<AuditItem>> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor, { t: "number", i: "number" }) : undefined;
    const rows = await this.reads.auditList({ tenantId: ctx.tenantId, limit, ...(after ? { after: { at: after.t, id: after.i } } : {}) });
    const last = rows[rows.length - 1];
    return {
      items: rows.map((r) => ({ at: toIso(r.at), actor: r.actor, action: r.action, subject: r.subject, details: r.details ?? null })),
      nextCursor: rows.length === limit && last ? encodeCursor({ t: last.at, i: last.id }) : null,
    };
  }
}
