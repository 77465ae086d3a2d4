// Dead letters: executions that ran out of attempts, listed newest first, and
// replayed (a new attempt, READY now, the job revived when it died with it).

import type { DeadLetter, ExecutionItem, Page, PageQuery } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { notFound } from "../core/errors.js";
import { isExecutionId } from "../core/ids.js";
import { toIso } from "../core/time.js";
import type { Store } from "../store/store.js";
import { pageOf } from "./cursor.js";
import { wirePayload } from "./payload-blobs.js";
import type { Executor } from "./executor.js";
import type { ReadStore } from "./read-routing.js";
import type { RequestContext } from "./service.js";
import { toExecution } from "./wire.js";

export class DeadLetterService {
  constructor(
    private readonly store: Store,
    /** Only for reads that show data (read-routing.ts). */
    private readonly reads: ReadStore,
    private readonly clock: Clock,
    private readonly executor: Pick<Executor, "ready">,
  ) {}

  async list(ctx: RequestContext, query: PageQuery): Promise<Page<DeadLetter>> {
    return pageOf(
      query,
      { d: ["deadAt", "number"], e: ["executionId", "string"] },
      (p) => this.reads.deadLetterList({ tenantId: ctx.tenantId, ...p }),
      (r) => ({
        executionId: r.executionId,
        jobId: r.jobId,
        name: r.name,
        scheduledFor: toIso(r.scheduledFor),
        attempts: r.attempts,
        lastError: r.lastError,
        deadAt: toIso(r.deadAt),
        ...wirePayload(r.payload),
      }),
    );
  }

  async replay(ctx: RequestContext, executionId: string): Promise<ExecutionItem> {
    if (!isExecutionId(executionId)) throw notFound("dead letter", executionId);
    const now = this.clock.now();
    const replayed = await this.store.deadLetterReplay({
      tenantId: ctx.tenantId,
      executionId,
      now,
      audit: { tenantId: ctx.tenantId, at: now, actor: ctx.actor ?? "admin", action: "dead-letter.replay", subject: executionId },
    });
    if (!replayed) throw notFound("dead letter", executionId);
    this.executor.ready(ctx.tenantId, replayed.pool);
    return { ...toExecution(replayed.row, this.clock.now()), attempt: replayed.row.attempt + 1 };
  }
}
