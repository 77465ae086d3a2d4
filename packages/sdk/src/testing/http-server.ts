// Test support: real HTTP servers on 127.0.0.1 ephemeral ports.
// - startTestServer(handler): answers each request with what handler returns
//   (or destroys the socket), and records every request;
// - serveApi(api): speaks the operations of the operation table over any
//   part of a DuetimeApi (e.g. FakePool), so the client and the worker are
//   tested over real HTTP without mocking their HTTP layer. It checks no
//   schema: the server's checks are the server's tests'.

import { once, EventEmitter } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { OPERATION_NAMES, operationNamed, type DuetimeApi, type OperationName } from "../operations.js";

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

/** `/v1/jobs/{jobId}:pause` → a pattern capturing each parameter. */
function pathPattern(path: string): RegExp {
  return new RegExp(`^${path.replace(/\{\w+\}/g, "([^/:]+)")}$`);
}

const ROUTES = OPERATION_NAMES.map((name) => {
  const op = operationNamed(name);
  return { name, op, pattern: pathPattern(op.path), paramNames: [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string) };
});

/** Query values as the server's schemas coerce them (numbers for limit and count). */
function queryOf(url: URL): Record<string, unknown> {
  return Object.fromEntries([...url.searchParams].map(([k, v]) => [k, k === "limit" || k === "count" ? Number(v) : v]));
}

/** An HTTP server speaking the API contract over `api` (on `port`, or an ephemeral one); an operation `api` lacks answers 501. */
export function serveApi(api: Partial<DuetimeApi>, port = 0): Promise<TestServer> {
  return startTestServer(async (req, signal) => {
    const url = new URL(req.url, "http://x");
    for (const { name, op, pattern, paramNames } of ROUTES) {
      const match = pattern.exec(url.pathname);
      if (op.method !== req.method || !match) continue;
      const method = api[name as OperationName] as ((...args: unknown[]) => Promise<unknown>) | undefined;
      if (!method) return { status: 501, body: { error: { code: "INTERNAL", message: `${name} is not served here` } } };
      const params = Object.fromEntries(paramNames.map((p, i) => [p, decodeURIComponent(match[i + 1] as string)]));
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : v]));
      const request = { params, query: queryOf(url), headers, body: req.body ?? {} };
      const args = op.decode(request);
      // The call's signal ends a long poll when the client goes away.
      const result = await method.call(api, ...args, ...(name === "lease" ? [{ signal }] : []));
      return op.answer(result, request);
    }
    return { status: 404, body: { error: { code: "NOT_FOUND", message: `no route ${req.method} ${url.pathname}` } } };
  }, port);
}
