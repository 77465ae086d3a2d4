// Tracing (OpenTelemetry, off by default; `duetime serve --tracing`): the
// engine's spans, their names and attributes, in one place. Only
// @opentelemetry/api is used: spans go to whatever global TracerProvider the
// process registered (none: the API's no-op), so the SDK and the exporter are
// the user's choice (docs/operations.md, "Tracing").
//
// How the spans hang together: a job's create span is the root of its story.
// Its W3C traceparent is kept with the job and copied to every execution
// written for it (SQLite migration 11, PostgreSQL migration 6), so each later
// span about one execution (dispatch, HTTP call, complete, fail, and the
// worker SDK's handler span) is a child of it, and a lease, which grants many
// executions at once, links to each. With tracing off no Tracing exists: the
// hot paths test one null and allocate nothing.

import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from "@opentelemetry/api";
import type { AckOutcome, LeasedRow } from "../store/store.js";

/** The tracer's name (instrumentation scope). */
export const TRACER_NAME = "duetime";

export const SPAN_NAMES = {
  /** One per create request (POST /v1/jobs or /v1/jobs:batch, or the embedded client's createJob/createJobs). */
  create: "duetime.job.create",
  /** A recurring job's occurrence becoming an execution (the scheduler); a one-off's is written inside its create span. */
  dispatch: "duetime.dispatch",
  /** One lease call that granted work (a worker's, or the server's HTTP-target runner's); links to each execution leased. */
  lease: "duetime.lease",
  /** The server's call to an HTTP target; its traceparent is the one sent in the request's `traceparent` header. */
  httpCall: "duetime.http.call",
  /** An attempt acknowledged as succeeded. */
  complete: "duetime.complete",
  /** An attempt acknowledged as failed (retried, dead, or cancelled). */
  fail: "duetime.fail",
} as const;

export const ATTRIBUTES = {
  jobId: "duetime.job.id",
  executionId: "duetime.execution.id",
  attempt: "duetime.attempt",
  tenantId: "duetime.tenant.id",
  pool: "duetime.pool",
  /** Jobs in a create request (its events name each one created). */
  jobCount: "duetime.job.count",
  /** Executions granted by a lease. */
  leasedCount: "duetime.lease.count",
  workerId: "duetime.worker.id",
  /** The occurrence's nominal time, RFC 3339. */
  scheduledFor: "duetime.scheduled_for",
  /** What an acknowledgement did: SUCCEEDED, READY (retried), DEAD, CANCELLED, or lost / not_found when refused. */
  outcome: "duetime.outcome",
  /** The failure's class: transient, permanent, throttled. */
  errorClass: "duetime.error.class",
} as const;

/** The event of a create span for each job it created. */
export const JOB_CREATED_EVENT = "duetime.job.created";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A span's W3C traceparent (version 00). */
export function traceparentOf(span: Span): string {
  const c = span.spanContext();
  return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The span context a W3C traceparent names, or null when it is not one (all-zero ids included). */
export function parseTraceparent(value: string | null | undefined): SpanContext | null {
  const m = value ? TRACEPARENT.exec(value) : null;
  if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return null;
  return { traceId: m[1]!, spanId: m[2]!, traceFlags: Number.parseInt(m[3]!, 16) & TraceFlags.SAMPLED, isRemote: true };
}

/** The context whose parent is the span a traceparent names; without one, `fallback`. */
function parentContext(traceparent: string | null | undefined, fallback: Context): Context {
  const parent = parseTraceparent(traceparent);
  return parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : fallback;
}

const now = (): number => performance.timeOrigin + performance.now();

/** The engine's spans; exists only while tracing is on. */
export class Tracing {
  private readonly tracer: Tracer;

  constructor(tracer: Tracer = trace.getTracer(TRACER_NAME)) {
    // A ProxyTracer: it finds a provider registered after this, too.
    this.tracer = tracer;
  }

  /** The create span of one request, a child of the caller's active span if any; end it with createEnded. */
  createStarted(tenantId: string, jobs: number): { span: Span; traceparent: string } {
    const span = this.tracer.startSpan(SPAN_NAMES.create, {
      kind: SpanKind.PRODUCER,
      attributes: { [ATTRIBUTES.tenantId]: tenantId, [ATTRIBUTES.jobCount]: jobs },
    });
    return { span, traceparent: traceparentOf(span) };
  }

  /** Ends a create span: an event per job created (with its one-off's execution), the job's id when it is the only one. */
  createEnded(span: Span, created: { jobId: string; executionId?: string }[], error?: unknown): void {
    for (const c of created) {
      span.addEvent(JOB_CREATED_EVENT, {
        [ATTRIBUTES.jobId]: c.jobId,
        ...(c.executionId !== undefined ? { [ATTRIBUTES.executionId]: c.executionId } : {}),
      });
    }
    if (created.length === 1) span.setAttribute(ATTRIBUTES.jobId, created[0]!.jobId);
    if (error !== undefined) failed(span, error);
    span.end();
  }

  /** One span per occurrence dispatched, each a child of its job's create span, spanning the store call that wrote it. */
  dispatched(
    startedAt: number,
    items: { jobId: string; executionId: string; tenantId: string; pool: string; scheduledFor: string; traceParent?: string | undefined }[],
  ): void {
    const endedAt = now();
    for (const d of items) {
      const span = this.tracer.startSpan(
        SPAN_NAMES.dispatch,
        {
          kind: SpanKind.INTERNAL,
          startTime: startedAt,
          attributes: {
            [ATTRIBUTES.jobId]: d.jobId,
            [ATTRIBUTES.executionId]: d.executionId,
            [ATTRIBUTES.tenantId]: d.tenantId,
            [ATTRIBUTES.pool]: d.pool,
            [ATTRIBUTES.scheduledFor]: d.scheduledFor,
          },
        },
        parentContext(d.traceParent, ROOT_CONTEXT),
      );
      span.end(endedAt);
    }
  }

  /** One span for a lease call that granted work, in the caller's context, linked to each leased execution's create span. */
  leased(startedAt: number, p: { pool: string; workerId: string; tenantId?: string | undefined }, rows: readonly LeasedRow[]): void {
    const links: Link[] = [];
    for (const r of rows) {
      const linked = parseTraceparent(r.traceParent);
      if (linked) links.push({ context: linked, attributes: executionAttributes(r) });
    }
    const span = this.tracer.startSpan(
      SPAN_NAMES.lease,
      {
        kind: SpanKind.INTERNAL,
        startTime: startedAt,
        links,
        attributes: {
          [ATTRIBUTES.pool]: p.pool,
          [ATTRIBUTES.workerId]: p.workerId,
          [ATTRIBUTES.leasedCount]: rows.length,
          ...(p.tenantId !== undefined ? { [ATTRIBUTES.tenantId]: p.tenantId } : {}),
          // The one execution, when there is one: a lease of one is the common case of a busy worker.
          ...(rows.length === 1 ? executionAttributes(rows[0]!) : {}),
        },
      },
      context.active(),
    );
    span.end();
  }

  /** The span of an HTTP-target call, a child of the job's create span; its traceparent goes in the request. */
  httpCallStarted(row: LeasedRow, pool: string, method: string, url: string): { span: Span; traceparent: string } {
    const span = this.tracer.startSpan(
      SPAN_NAMES.httpCall,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          ...executionAttributes(row),
          [ATTRIBUTES.pool]: pool,
          "http.request.method": method,
          // Without query and fragment: they may carry secrets.
          "url.full": urlWithoutQuery(url),
        },
      },
      parentContext(row.traceParent, ROOT_CONTEXT),
    );
    return { span, traceparent: traceparentOf(span) };
  }

  httpCallEnded(span: Span, outcome: { status: number | null; error: { message: string; class?: string } | null; kind: string }): void {
    if (outcome.status !== null) span.setAttribute("http.response.status_code", outcome.status);
    if (outcome.error) {
      span.setAttribute(ATTRIBUTES.errorClass, outcome.error.class ?? "transient");
      span.setAttribute("error.type", outcome.status !== null ? String(outcome.status) : outcome.kind);
      span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.message });
    }
    span.end();
  }

  /**
   * One span per acknowledged attempt (complete or fail), a child of its
   * job's create span (parents: by execution id, read from the store), over
   * the store call that recorded it.
   */
  acked(
    startedAt: number,
    endedAt: number,
    kind: "complete" | "fail",
    items: readonly { executionId: string; attempt: number; error?: { message: string; class?: string } }[],
    outcomes: readonly AckOutcome[],
    parents: ReadonlyMap<string, string>,
  ): void {
    items.forEach((item, i) => {
      const o = outcomes[i];
      const outcome = !o ? "unknown" : o.status === "ok" ? o.state : o.status;
      const span = this.tracer.startSpan(
        kind === "complete" ? SPAN_NAMES.complete : SPAN_NAMES.fail,
        {
          kind: SpanKind.INTERNAL,
          startTime: startedAt,
          attributes: {
            [ATTRIBUTES.executionId]: item.executionId,
            [ATTRIBUTES.jobId]: jobIdOf(item.executionId),
            [ATTRIBUTES.attempt]: item.attempt,
            [ATTRIBUTES.outcome]: outcome,
            ...(o?.status === "ok" ? { [ATTRIBUTES.tenantId]: o.tenantId } : {}),
            ...(item.error ? { [ATTRIBUTES.errorClass]: item.error.class ?? "transient" } : {}),
          },
        },
        parentContext(parents.get(item.executionId), context.active()),
      );
      if (item.error) span.setStatus({ code: SpanStatusCode.ERROR, message: item.error.message });
      else if (o?.status !== "ok") span.setStatus({ code: SpanStatusCode.ERROR, message: `acknowledgement refused: ${outcome}` });
      span.end(endedAt);
    });
  }
}

/** The start time of a span recorded later (dispatch, lease, acks), on the clock the SDK uses. */
export const spanClock = now;

function executionAttributes(r: { executionId: string; jobId: string; attempt: number; tenantId: string }): Attributes {
  return {
    [ATTRIBUTES.jobId]: r.jobId,
    [ATTRIBUTES.executionId]: r.executionId,
    [ATTRIBUTES.attempt]: r.attempt,
    [ATTRIBUTES.tenantId]: r.tenantId,
  };
}

/** An execution id is `<jobId>-<scheduledFor>` (core/ids.ts executionIdFor). */
function jobIdOf(executionId: string): string {
  const dash = executionId.indexOf("-");
  return dash > 0 ? executionId.slice(0, dash) : executionId;
}

function urlWithoutQuery(url: string): string {
  const cut = url.search(/[?#]/);
  return cut === -1 ? url : url.slice(0, cut);
}

function failed(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}
