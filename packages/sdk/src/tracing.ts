// Continues a job's trace into its handler. A server that traces
// (`duetime serve --tracing`) sends each leased execution's `traceparent`
// (the job's create span); when @opentelemetry/api is installed (an optional
// peer dependency, loaded lazily, once, and only for such a job) the handler
// runs inside a span that is its child, active while the handler runs, so
// the handler's own spans join the job's trace. Without the package, or
// without a traceparent, the handler runs as it is.

import type { LeasedExecution } from "./api.js";

type OtelApi = typeof import("@opentelemetry/api");

/** The handler's span: one per attempt run by a Worker. */
export const HANDLER_SPAN_NAME = "duetime.handler";

let loading: Promise<OtelApi | null> | undefined;

function otel(): Promise<OtelApi | null> {
  loading ??= import("@opentelemetry/api").then(
    (m) => m,
    () => null,
  );
  return loading;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Runs `run` in a span whose parent is the job's traceparent, when there is one and @opentelemetry/api is installed. */
export async function traced<T>(job: LeasedExecution, pool: string, workerId: string, run: () => Promise<T>): Promise<T> {
  const m = typeof job.traceparent === "string" ? TRACEPARENT.exec(job.traceparent) : null;
  const api = m ? await otel() : null;
  if (!m || !api || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return run();
  const parent = api.trace.setSpanContext(api.ROOT_CONTEXT, {
    traceId: m[1]!,
    spanId: m[2]!,
    traceFlags: Number.parseInt(m[3]!, 16) & api.TraceFlags.SAMPLED,
    isRemote: true,
  });
  const tracer = api.trace.getTracer("@duetime/sdk");
  const attributes = {
    "duetime.job.id": job.jobId,
    "duetime.execution.id": job.executionId,
    "duetime.attempt": job.attempt,
    "duetime.tenant.id": job.tenantId,
    "duetime.pool": pool,
    "duetime.worker.id": workerId,
  };
  return tracer.startActiveSpan(HANDLER_SPAN_NAME, { kind: api.SpanKind.CONSUMER, attributes }, parent, async (span) => {
    try {
      const result = await run();
      span.end();
      return result;
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      span.end();
      throw error;
    }
  });
}
