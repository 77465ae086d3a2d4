// Test support: real HTTP servers on 127.0.0.1 ephemeral ports.
// - startTestServer(handler): answers each request with what handler returns
//   (or destroys the socket), and records every request;
// - serveApi(api): speaks the docs/api.md routes the SDK uses over any
//   DuetimeApi (e.g. FakePool), so the client and the worker are tested over
//   real HTTP without mocking their HTTP layer.

import { once, EventEmitter } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { DuetimeApi, LeaseRequest, LeaseResponse } from "../api.js";

export interface RecordedRequest {
  method: string;
  /** Path and query as sent (ids still encoded). */
  url: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  /** The raw body text. */
  text: string;
}

export interface TestReply {
  status: number;
  headers?: Record<string, string>;
  /** Serialised as JSON unless it is a string. */
  body?: unknown;
  /** Destroy the socket instead of answering (a connection reset after the request was sent). */
  destroy?: boolean;
}

export type TestHandler = (req: RecordedRequest, signal: AbortSignal) => TestReply | Promise<TestReply>;

export interface TestServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Emits "request" for every request received. */
  events: EventEmitter;
  close(): Promise<void>;
}

export async function startTestServer(handler: TestHandler, port = 0): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const events = new EventEmitter();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      if (text !== "") {
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
      }
      const recorded: RecordedRequest = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body, text };
      requests.push(recorded);
      events.emit("request", recorded);
      const gone = new AbortController();
      res.on("close", () => gone.abort());
      Promise.resolve()
        .then(() => handler(recorded, gone.signal))
        .then(
          (reply) => {
            if (reply.destroy) return void req.socket.destroy();
            const payload = reply.body === undefined ? "" : typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
            const headers: Record<string, string> = { ...reply.headers };
            if (payload !== "" && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) headers["content-type"] = "application/json";
            res.writeHead(reply.status, headers).end(payload);
          },
          (err: unknown) => {
            const { status, envelope } = errorEnvelope(err);
            if (!res.headersSent && !res.destroyed) res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(envelope));
          },
        );
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}`,
    port: actual,
    requests,
    events,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Maps a thrown error with code/status (core's DuetimeError, the SDK's DuetimeApiError) to the API's envelope. */
export function errorEnvelope(err: unknown): { status: number; envelope: unknown } {
  const e = err as { code?: unknown; status?: unknown; message?: unknown; details?: unknown };
  const status = typeof e?.status === "number" && e.status >= 400 ? e.status : 500;
  const code = typeof e?.code === "string" ? e.code : "INTERNAL";
  const message = typeof e?.message === "string" ? e.message : "internal error";
  return { status, envelope: { error: { code, message, ...(e?.details ? { details: e.details } : {}) } } };
}

type Route = [method: string, pattern: RegExp, call: (api: DuetimeApi, m: string[], req: RecordedRequest, signal: AbortSignal) => Promise<TestReply>];

const ok = (body: unknown, status = 200): TestReply => ({ status, body });
const segment = "([^/:]+)";
const body = (req: RecordedRequest): Record<string, unknown> => (req.body ?? {}) as Record<string, unknown>;
const query = (req: RecordedRequest): Record<string, string> => Object.fromEntries(new URL(req.url, "http://x").searchParams);
const num = (q: Record<string, string>) => Object.fromEntries(Object.entries(q).map(([k, v]) => [k, k === "limit" || k === "count" ? Number(v) : v]));
type LeaseWithSignal = (pool: string, r: LeaseRequest, o: { signal: AbortSignal }) => Promise<LeaseResponse>;

const ROUTES: Route[] = [
  [
    "POST",
    /^\/v1\/jobs$/,
    async (api, _m, req) => {
      const key = req.headers["idempotency-key"];
      const job = await api.createJob(req.body as never, typeof key === "string" ? { idempotencyKey: key } : {});
      const { created, ...rest } = job;
      return ok(rest, created === false ? 200 : 201);
    },
  ],
  ["POST", /^\/v1\/jobs:batch$/, async (api, _m, req) => ok({ items: await api.createJobs(body(req).jobs as never) })],
  ["GET", /^\/v1\/jobs$/, async (api, _m, req) => ok(await api.listJobs(num(query(req))))],
  ["GET", new RegExp(`^/v1/jobs/${segment}$`), async (api, m) => ok(await api.getJob(m[0]!))],
  [
    "DELETE",
    new RegExp(`^/v1/jobs/${segment}$`),
    async (api, m) => {
      await api.cancelJob(m[0]!);
      return { status: 204 };
    },
  ],
  ["POST", new RegExp(`^/v1/jobs/${segment}:pause$`), async (api, m) => ok(await api.pauseJob(m[0]!))],
  ["POST", new RegExp(`^/v1/jobs/${segment}:resume$`), async (api, m) => ok(await api.resumeJob(m[0]!))],
  ["POST", new RegExp(`^/v1/jobs/${segment}:trigger$`), async (api, m) => ok(await api.triggerJob(m[0]!), 201)],
  [
    "PATCH",
    new RegExp(`^/v1/jobs/${segment}$`),
    async (api, m, req) => {
      const ifMatch = /^(?:W\/)?"?(\d+)"?$/.exec(String(req.headers["if-match"] ?? ""));
      const job = await api.updateJob(m[0]!, req.body as never, ifMatch ? { ifMatch: Number(ifMatch[1]) } : {});
      return { status: 200, headers: { etag: `"${job.version}"` }, body: job };
    },
  ],
  ["POST", new RegExp(`^/v1/jobs/${segment}:backfill$`), async (api, m, req) => ok(await api.backfillJob(m[0]!, req.body as never), 201)],
  ["GET", new RegExp(`^/v1/jobs/${segment}/occurrences$`), async (api, m, req) => ok(await api.listOccurrences(m[0]!, query(req) as never))],
  ["GET", new RegExp(`^/v1/jobs/${segment}/executions$`), async (api, m, req) => ok(await api.listExecutions(m[0]!, num(query(req))))],
  ["GET", /^\/v1\/dead-letters$/, async (api, _m, req) => ok(await api.listDeadLetters(num(query(req))))],
  ["POST", new RegExp(`^/v1/dead-letters/${segment}:replay$`), async (api, m) => ok(await api.replayDeadLetter(m[0]!), 201)],
  ["GET", /^\/v1\/schedules\/preview$/, async (api, _m, req) => ok(await api.previewSchedule(num(query(req)) as never))],
  [
    "POST",
    new RegExp(`^/v1/pools/${segment}/lease$`),
    async (api, m, req, signal) => ok(await (api.lease as LeaseWithSignal).call(api, m[0]!, req.body as LeaseRequest, { signal })),
  ],
  ["GET", new RegExp(`^/v1/pools/${segment}/stats$`), async (api, m) => ok(await api.poolStats(m[0]!))],
  ["POST", new RegExp(`^/v1/executions/${segment}/heartbeat$`), async (api, m, req) => ok(await api.heartbeat(m[0]!, req.body as never))],
  [
    "POST",
    new RegExp(`^/v1/executions/${segment}/complete$`),
    async (api, m, req) => ok(await api.complete(m[0]!, body(req).attempt as number, body(req).result)),
  ],
  [
    "POST",
    new RegExp(`^/v1/executions/${segment}/fail$`),
    async (api, m, req) => ok(await api.fail(m[0]!, body(req).attempt as number, body(req).error as never)),
  ],
  ["POST", /^\/v1\/executions:complete$/, async (api, _m, req) => ok({ items: await api.completeMany(body(req).items as never) })],
  ["POST", /^\/v1\/executions:fail$/, async (api, _m, req) => ok({ items: await api.failMany(body(req).items as never) })],
];

/** An HTTP server speaking the API contract over `api` (on `port`, or an ephemeral one). */
export function serveApi(api: DuetimeApi, port = 0): Promise<TestServer> {
  return startTestServer(async (req, signal) => {
    const path = new URL(req.url, "http://x").pathname;
    for (const [method, pattern, call] of ROUTES) {
      const match = pattern.exec(path);
      if (method !== req.method || !match) continue;
      return call(api, match.slice(1).map(decodeURIComponent), req, signal);
    }
    return { status: 404, body: { error: { code: "NOT_FOUND", message: `no route ${req.method} ${path}` } } };
  }, port);
}
