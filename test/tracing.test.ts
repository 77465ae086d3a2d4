// Tracing (issue 12): with an in-memory exporter registered as the global
// TracerProvider, a real server with --tracing's option records the spans of
// a job's life, each linked to the job's create span: an HTTP target called
// on loopback (which receives the traceparent) and an SDK Worker (whose
// handler runs in a child span of it). With tracing off, nothing is recorded.

import assert from "node:assert/strict";
import type { IncomingHttpHeaders } from "node:http";
import { after, before, beforeEach, test } from "node:test";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { type LeasedExecution, NonRetryableError, Worker } from "@duetime/sdk";
import { listenOnLoopback, startTestServer, type TestServer, waitFor } from "./helpers.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

before(() => {
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(provider);
});
after(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

const spans = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);
const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;
const traceparentOf = (s: ReadableSpan): string => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`;

/** The one create span of a trace whose event names the job. */
function createSpanOf(jobId: string): ReadableSpan {
  const found = spans("duetime.job.create").filter((s) => s.events.some((e) => e.attributes?.["duetime.job.id"] === jobId));
  assert.equal(found.length, 1, `one create span names job ${jobId}`);
  return found[0]!;
}

/** Asserts `s` is a child of `parent`, in its trace. */
function assertChild(s: ReadableSpan, parent: ReadableSpan): void {
  assert.equal(s.spanContext().traceId, parent.spanContext().traceId, `${s.name} is in the create span's trace`);
  assert.equal(parentOf(s), parent.spanContext().spanId, `${s.name} is a child of the create span`);
}

async function receiver() {
  const hits: IncomingHttpHeaders[] = [];
  const server = await listenOnLoopback((req, res) => {
    req.resume();
    req.on("end", () => {
      hits.push(req.headers);
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  return { ...server, hits };
}

async function post(t: TestServer, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${t.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  assert.ok(res.status === 201 || res.status === 200 || res.status === 207, `POST ${path}: ${res.status} ${await res.clone().text()}`);
  return (await res.json()) as Record<string, unknown>;
}

test("tracing on: an HTTP target's job: create, dispatch, lease, HTTP call (traceparent sent) and complete, all linked to the create span", async () => {
  const t = await startTestServer({ tracing: true, allowTargetHosts: ["127.0.0.1"] });
  const hook = await receiver();
  try {
    // Recurring (every second), so the scheduler dispatches an occurrence.
    const job = await post(t, "/v1/jobs", {
      name: "traced-hook",
      target: { type: "http", url: `${hook.base}/hook?token=secret` },
      payload: { n: 1 },
      schedule: { cron: "* * * * * *" },
    });
    const jobId = job.jobId as string;
    const headers = await waitFor(() => hook.hits[0], "the receiver is called");
    await post(t, `/v1/jobs/${jobId}:pause`, {});
    const executionId = headers["duetime-execution-id"] as string;
    assert.ok(executionId.startsWith(`${jobId}-`));

    const create = createSpanOf(jobId);
    assert.equal(create.kind, SpanKind.PRODUCER);
    assert.equal(create.attributes["duetime.job.id"], jobId);
    assert.equal(create.attributes["duetime.tenant.id"], "default");
    assert.equal(create.attributes["duetime.job.count"], 1);

    const dispatch = await waitFor(
      () => spans("duetime.dispatch").find((s) => s.attributes["duetime.execution.id"] === executionId),
      "a dispatch span",
    );
    assertChild(dispatch, create);
    assert.equal(dispatch.attributes["duetime.job.id"], jobId);
    assert.equal(dispatch.attributes["duetime.pool"], "$http");

    // The call's span ends once its answer is read, a moment after the receiver saw it.
    const call = await waitFor(
      () => spans("duetime.http.call").find((s) => s.attributes["duetime.execution.id"] === executionId),
      "an HTTP call span",
    );
    assertChild(call, create);
    assert.equal(call.kind, SpanKind.CLIENT);
    assert.equal(call.attributes["duetime.attempt"], 1);
    assert.equal(call.attributes["http.response.status_code"], 200);
    assert.equal(call.attributes["url.full"], `${hook.base}/hook`, "no query string in the span");
    // The receiver continues the trace: the header names the call's span, in the create span's trace.
    assert.equal(headers.traceparent, traceparentOf(call));
    assert.equal((headers.traceparent as string).split("-")[1], create.spanContext().traceId);

    const lease = spans("duetime.lease").find((s) => s.links.some((l) => l.attributes?.["duetime.execution.id"] === executionId));
    assert.ok(lease, "a lease span linked to the execution");
    assert.equal(lease.attributes["duetime.pool"], "$http");
    const link = lease.links.find((l) => l.attributes?.["duetime.execution.id"] === executionId)!;
    assert.equal(link.context.spanId, create.spanContext().spanId, "the lease links to the create span");
    assert.equal(link.context.traceId, create.spanContext().traceId);

    const complete = await waitFor(
      () => spans("duetime.complete").find((s) => s.attributes["duetime.execution.id"] === executionId),
      "a complete span",
    );
    assertChild(complete, create);
    assert.equal(complete.attributes["duetime.outcome"], "SUCCEEDED");
    assert.equal(complete.attributes["duetime.job.id"], jobId);
  } finally {
    await hook.close();
    await t.close();
  }
});

test("tracing on: a batch run by an SDK Worker: the lease answer carries traceparent, the handler runs in a child span, complete and fail spans", async () => {
  const t = await startTestServer({ tracing: true });
  const seen = new Map<string, { job: LeasedExecution; active: string | undefined }>();
  const worker = new Worker({
    url: t.url,
    pool: "traced",
    concurrency: 2,
    waitSeconds: 1,
    logger: null,
    handler: async (job) => {
      seen.set(job.jobId, { job, active: trace.getActiveSpan()?.spanContext().spanId });
      if ((job.payload as { fail?: boolean }).fail) throw new NonRetryableError("bad payload");
      return { ok: true };
    },
  });
  const running = worker.run();
  try {
    const batch = await post(t, "/v1/jobs:batch", {
      jobs: [
        { name: "ok", target: { type: "queue", pool: "traced" }, payload: { fail: false }, schedule: { delaySeconds: 0 } },
        { name: "bad", target: { type: "queue", pool: "traced" }, payload: { fail: true }, schedule: { delaySeconds: 0 } },
      ],
    });
    const [ok, bad] = (batch.items as { jobId: string }[]).map((i) => i.jobId) as [string, string];
    await waitFor(() => seen.size === 2, "the worker runs both jobs");

    // One create span for the request, an event per job with its one-off's execution.
    const create = createSpanOf(ok);
    assert.equal(createSpanOf(bad), create);
    assert.equal(create.attributes["duetime.job.count"], 2);
    assert.equal(create.attributes["duetime.job.id"], undefined, "a batch names its jobs in events");
    const events = create.events.filter((e) => e.name === "duetime.job.created");
    assert.deepEqual(events.map((e) => e.attributes?.["duetime.job.id"]).sort(), [ok, bad].sort());
    assert.ok(events.every((e) => String(e.attributes?.["duetime.execution.id"]).startsWith(`${e.attributes?.["duetime.job.id"]}-`)));

    for (const [jobId, outcome] of [
      [ok, "SUCCEEDED"],
      [bad, "DEAD"],
    ] as const) {
      const { job, active } = seen.get(jobId)!;
      assert.equal(job.traceparent, `00-${create.spanContext().traceId}-${create.spanContext().spanId}-01`, "the lease answer carries it");
      const handler = await waitFor(
        () => spans("duetime.handler").find((s) => s.attributes["duetime.execution.id"] === job.executionId),
        "a handler span",
      );
      assertChild(handler, create);
      assert.equal(handler.kind, SpanKind.CONSUMER);
      assert.equal(active, handler.spanContext().spanId, "the handler span is active while the handler runs");
      assert.equal(handler.attributes["duetime.pool"], "traced");
      assert.equal(handler.attributes["duetime.worker.id"], worker.workerId);
      assert.equal(handler.status.code, jobId === bad ? SpanStatusCode.ERROR : SpanStatusCode.UNSET);

      const lease = spans("duetime.lease").find((s) => s.links.some((l) => l.attributes?.["duetime.execution.id"] === job.executionId));
      assert.ok(lease, "a worker lease span linked to the execution");
      assert.equal(lease.attributes["duetime.pool"], "traced");
      assert.equal(lease.attributes["duetime.worker.id"], worker.workerId);
      assert.equal(lease.links.find((l) => l.attributes?.["duetime.execution.id"] === job.executionId)!.context.spanId, create.spanContext().spanId);

      const name = outcome === "SUCCEEDED" ? "duetime.complete" : "duetime.fail";
      const ack = await waitFor(() => spans(name).find((s) => s.attributes["duetime.execution.id"] === job.executionId), `a ${name} span`);
      assertChild(ack, create);
      assert.equal(ack.attributes["duetime.outcome"], outcome);
      assert.equal(ack.attributes["duetime.attempt"], 1);
      if (outcome === "DEAD") {
        assert.equal(ack.status.code, SpanStatusCode.ERROR);
        assert.equal(ack.attributes["duetime.error.class"], "permanent");
      }
    }
  } finally {
    await worker.shutdown();
    await running;
    await t.close();
  }
});

test("tracing off (the default): no spans, no traceparent on the wire", async () => {
  const t = await startTestServer({ allowTargetHosts: ["127.0.0.1"] });
  const hook = await receiver();
  const seen: LeasedExecution[] = [];
  const worker = new Worker({
    url: t.url,
    pool: "untraced",
    waitSeconds: 1,
    logger: null,
    handler: async (job) => {
      seen.push(job);
    },
  });
  const running = worker.run();
  try {
    const cron = await post(t, "/v1/jobs", { name: "hook", target: { type: "http", url: `${hook.base}/hook` }, schedule: { cron: "* * * * * *" } });
    await post(t, "/v1/jobs:batch", { jobs: [{ name: "q", target: { type: "queue", pool: "untraced" }, schedule: { delaySeconds: 0 } }] });
    await waitFor(() => hook.hits.length > 0 && seen.length > 0, "the receiver and the worker run their jobs");
    await post(t, `/v1/jobs/${cron.jobId as string}:pause`, {});
    // Acknowledgements are written a moment later: let them land before counting.
    await waitFor(async () => {
      const res = await fetch(`${t.url}/v1/jobs/${cron.jobId as string}/executions`);
      const body = (await res.json()) as { items: { state: string }[] };
      return body.items.some((e) => e.state === "SUCCEEDED");
    }, "the HTTP call is acknowledged");
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(hook.hits[0]!.traceparent, undefined);
    assert.equal(seen[0]!.traceparent, undefined);
    assert.deepEqual(
      exporter.getFinishedSpans().map((s) => s.name),
      [],
    );
  } finally {
    await worker.shutdown();
    await running;
    await hook.close();
    await t.close();
  }
});
