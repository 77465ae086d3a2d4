// The audit log: who did what to which resource, newest first (read only; the
// writes are made in the same transactions as the changes they record).

import type { AuditItem, Page, PageQuery } from "@duetime/sdk/contract";
import { toIso } from "../core/time.js";
import { pageOf } from "./cursor.js";
import type { ReadStore } from "./read-routing.js";
import type { RequestContext } from "./service.js";

export class AuditLog {
  constructor(private readonly reads: ReadStore) {}

  async list(ctx: RequestContext, query: PageQuery): Promise<Page<AuditItem>> {
    return pageOf(
      query,
      { t: ["at", "number"], i: ["id", "number"] },
      (p) => this.reads.auditList({ tenantId: ctx.tenantId, ...p }),
      (r) => ({ at: toIso(r.at), actor: r.actor, action: r.action, subject: r.subject, details: r.details ?? null }),
    );
  }
}
