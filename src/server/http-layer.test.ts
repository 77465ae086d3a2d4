// What Node's HTTP parser and Fastify answer before a route runs, over raw
// sockets against a real listening server: every refusal carries the error
// envelope naming the part of the request at fault, closes the connection
// when it cannot carry another request, and nothing hangs.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect, type AddressInfo, type Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { buildApp, HTTP_TIMEOUTS, type HttpTimeouts } from "./app.js";
import { toDuetimeError } from "./http-errors.js";
import { HEAD_LIMITS } from "./request-head.js";
import { RecordingService } from "./test-support.js";

interface Started {
  app: FastifyInstance;
  svc: RecordingService;
  port: number;
}

async function start(timeouts: Partial<HttpTimeouts> = {}): Promise<Started> {
  const svc = new RecordingService();
  const app = buildApp({ service: svc, timeouts });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return { app, svc, port: (app.server.address() as AddressInfo).port };
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Parses the first response of a raw byte stream (every answer here has a Content-Length). */
function parseResponse(text: string): RawResponse {
  const headEnd = text.indexOf("\r\n\r\n");
  assert.ok(headEnd > 0, `no response head in ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine = "", ...lines] = text.slice(0, headEnd).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"] ?? 0);
  const bodyText = text.slice(headEnd + 4, headEnd + 4 + length);
  return { status: Number(statusLine.split(" ")[1]), headers, body: bodyText === "" ? undefined : JSON.parse(bodyText) };
}

/** Resolves with everything the server sent once it closes the connection; rejects if it has not within 10 s. */
function untilClosed(socket: Socket, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (data += chunk));
    socket.on("error", () => undefined);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close the connection within 10 s (${what}); got ${JSON.stringify(data.slice(0, 200))}`));
    }, 10_000);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(data);
    });
  });
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Sends bytes (then half-closes if asked) and returns the response the server sent before closing. */
async function exchange(port: number, bytes: string, options: { halfClose?: boolean } = {}): Promise<RawResponse> {
  const socket = await open(port);
  const closed = untilClosed(socket, JSON.stringify(bytes.slice(0, 60)));
  socket.write(bytes, "latin1");
  if (options.halfClose === true) socket.end();
  return parseResponse(await closed);
}

/** The response is the error envelope for code and field, and the server closed the connection. */
function assertRefused(res: RawResponse, status: number, code: string, field: string | undefined): void {
  assert.equal(res.status, status, JSON.stringify(res));
  assert.equal(res.headers.connection?.toLowerCase(), "close");
  assert.match(res.headers["content-type"] ?? "", /^application\/json/);
  const { error } = res.body as { error: { code: string; message: string; details?: { field?: string } } };
  assert.equal(error.code, code);
  assert.equal(error.details?.field, field);
  if (field !== undefined) assert.ok(error.message.startsWith(`${field}: `), error.message);
}

const POST_HEAD = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";

describe("answers from the HTTP layer, over raw sockets", () => {
  let s: Started;
  before(async () => {
    s = await start();
  });
  after(async () => {
    await s.app.close();
  });

  test("an HTTP/1.1 request without Host answers 400 on host", async () => {
    assertRefused(await exchange(s.port, "GET /healthz HTTP/1.1\r\n\r\n"), 400, "INVALID_ARGUMENT", "host");
  });

  test("two Host headers answer 400 on host", async () => {
    assertRefused(await exchange(s.port, "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400, "INVALID_ARGUMENT", "host");
  });

  test("an HTTP/1.0 request needs no Host", async () => {
    const res = await exchange(s.port, "GET /healthz HTTP/1.0\r\n\r\n");
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: "ok" });
  });

  test("an Expect other than 100-continue answers 400 on expect, before the body is read", async () => {
    // The 1 MiB body is announced but never sent: the answer cannot wait for it.
    const calls = s.svc.calls.length;
    const res = await exchange(s.port, `${POST_HEAD}Expect: foo\r\nContent-Length: 1000000\r\n\r\n`);
    assertRefused(res, 400, "INVALID_ARGUMENT", "expect");
    assert.equal(s.svc.calls.length, calls);
  });

  test("Expect: 100-continue gets 100 Continue, then the request is served", async () => {
    const body = JSON.stringify({ name: "q", target: { type: "queue", pool: "emails" }, schedule: { delaySeconds: 30 } });
    const socket = await open(s.port);
    const closed = untilClosed(socket, "100-continue");
    const gotContinue = new Promise<void>((resolve) => socket.once("data", () => resolve()));
    socket.write(`${POST_HEAD}Connection: close\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`);
    await gotContinue;
    socket.write(body);
    const text = await closed;
    assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\n/);
    const res = parseResponse(text.slice(text.indexOf("\r\n\r\n") + 4));
    assert.equal(res.status, 201);
  });

  test("a malformed request line answers 400 on request", async () => {
    assertRefused(await exchange(s.port, "GARBAGE\r\n\r\n"), 400, "INVALID_ARGUMENT", "request");
  });

  test("HTTP/2.0 in the request line answers 400 on request", async () => {
    const res = await exchange(s.port, "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n");
    assertRefused(res, 400, "INVALID_ARGUMENT", "request");
    assert.match((res.body as { error: { message: string } }).error.message, /HTTP\/2\.0 is not supported/);
  });

  test("the HTTP/2 connection preface answers 400 on request", async () => {
    const res = await exchange(s.port, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    assertRefused(res, 400, "INVALID_ARGUMENT", "request");
    assert.match((res.body as { error: { message: string } }).error.message, /HTTP\/2 is not supported/);
  });

  test("an unknown HTTP/1.x version answers 400 on request", async () => {
    assertRefused(await exchange(s.port, "GET /healthz HTTP/1.2\r\nHost: x\r\n\r\n"), 400, "INVALID_ARGUMENT", "request");
  });

  test("request headers over 16 KiB answer 400 on headers", async () => {
    const res = await exchange(s.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(HEAD_LIMITS.maxHeaderBytes)}\r\n\r\n`);
    assertRefused(res, 400, "INVALID_ARGUMENT", "headers");
    assert.equal((res.body as { error: { details: { limitBytes: number } } }).error.details.limitBytes, HEAD_LIMITS.maxHeaderBytes);
  });

  test("a URL over 16 KiB answers 400 on url", async () => {
    const res = await exchange(s.port, `GET /v1/jobs/${"a".repeat(20 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    assertRefused(res, 400, "INVALID_ARGUMENT", "url");
  });

  test("more header fields than the limit answer 400 on headers; the limit itself is served", async () => {
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `X-${i}: 1\r\n`).join("");
    const over = await exchange(s.port, `GET /healthz HTTP/1.1\r\nHost: x\r\n${fields(HEAD_LIMITS.maxHeaderFields)}\r\n`);
    assertRefused(over, 400, "INVALID_ARGUMENT", "headers");
    const at = await exchange(s.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${fields(HEAD_LIMITS.maxHeaderFields - 2)}\r\n`);
    assert.equal(at.status, 200);
  });

  test("more body bytes than Content-Length: the rest is read as a next request and refused", async () => {
    const res = await exchange(s.port, `${POST_HEAD}Content-Length: 2\r\n\r\n{}"name":"smuggled"}\r\n\r\n`);
    assertRefused(res, 400, "INVALID_ARGUMENT", "request");
  });

  test("fewer body bytes than Content-Length, then the end of the stream, answer 400 on body", async () => {
    const res = await exchange(s.port, `${POST_HEAD}Content-Length: 100\r\n\r\n{}`, { halfClose: true });
    assertRefused(res, 400, "INVALID_ARGUMENT", "body");
  });

  test("a request head cut short by the end of the stream answers 400 on request", async () => {
    const res = await exchange(s.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n", { halfClose: true });
    assertRefused(res, 400, "INVALID_ARGUMENT", "request");
  });

  test("a body announced as 100 MiB answers 413 at once, unread", async () => {
    const res = await exchange(s.port, `${POST_HEAD}Content-Length: ${100 * 1024 * 1024}\r\n\r\n{`);
    assertRefused(res, 413, "PAYLOAD_TOO_LARGE", "body");
  });

  test("with Expect: 100-continue, a body announced over the limit answers 413 without 100 Continue", async () => {
    const res = await exchange(s.port, `${POST_HEAD}Expect: 100-continue\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n`);
    assertRefused(res, 413, "PAYLOAD_TOO_LARGE", "body");
  });

  test("a malformed chunk size answers 400 on body", async () => {
    const res = await exchange(s.port, `${POST_HEAD}Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n`);
    assertRefused(res, 400, "INVALID_ARGUMENT", "body");
  });

  test("oversized chunk extensions answer 413 on body", async () => {
    const res = await exchange(s.port, `${POST_HEAD}Transfer-Encoding: chunked\r\n\r\n2;${"e".repeat(20 * 1024)}\r\n{}\r\n0\r\n\r\n`);
    assertRefused(res, 413, "PAYLOAD_TOO_LARGE", "body");
  });

  test("Transfer-Encoding with Content-Length (request smuggling) answers 400 on content-length", async () => {
    const res = await exchange(s.port, `${POST_HEAD}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n`);
    assertRefused(res, 400, "INVALID_ARGUMENT", "content-length");
  });

  test("a Transfer-Encoding other than chunked answers 400 on transfer-encoding", async () => {
    const res = await exchange(s.port, `${POST_HEAD}Transfer-Encoding: gzip\r\n\r\n`);
    assertRefused(res, 400, "INVALID_ARGUMENT", "transfer-encoding");
  });

  test("two Content-Length headers answer 400 on content-length", async () => {
    const res = await exchange(s.port, `${POST_HEAD}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`);
    assertRefused(res, 400, "INVALID_ARGUMENT", "content-length");
  });

  test("obsolete line folding answers 400 on headers", async () => {
    const res = await exchange(s.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  folded\r\n\r\n");
    assertRefused(res, 400, "INVALID_ARGUMENT", "headers");
  });

  test("a null byte in a header value answers 400 on headers", async () => {
    const res = await exchange(s.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n");
    assertRefused(res, 400, "INVALID_ARGUMENT", "headers");
  });

  test("malformed percent-encoding in the path answers 400 on url", async () => {
    const res = await exchange(s.port, "GET /v1/jobs/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assertRefused(res, 400, "INVALID_ARGUMENT", "url");
  });

  test("CONNECT answers 404 like an unknown route and closes", async () => {
    const res = await exchange(s.port, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
    assertRefused(res, 404, "NOT_FOUND", undefined);
  });

  test("a client gone mid-body is not an internal error", () => {
    // Node's "aborted" error reaches the error handler when the body stream ends early.
    const aborted = Object.assign(new Error("aborted"), { code: "ECONNRESET" });
    const { error, internal } = toDuetimeError(aborted, 1024);
    assert.equal(internal, false);
    assert.equal(error.details?.field, "body");
  });

  test("a GET carrying a body is answered only once its body has arrived (no reset can overtake the answer)", async () => {
    const body = JSON.stringify({ pad: "x".repeat(50_000) });
    const socket = await open(s.port);
    const closed = untilClosed(socket, "GET with a body");
    let answered = false;
    socket.once("data", () => (answered = true));
    socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body.slice(0, 1000));
    // Another request answered proves the server has turned its event loop since the head arrived.
    for (let i = 0; i < 3; i++) assert.equal((await exchange(s.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).status, 200);
    assert.equal(answered, false, "answered before the body arrived");
    socket.end(body.slice(1000));
    const res = parseResponse(await closed);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: "ok" });
  });

  test("a GET carrying a body over the limit answers 413 on body", async () => {
    const res = await exchange(s.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n");
    assertRefused(res, 413, "PAYLOAD_TOO_LARGE", "body");
  });

  test("the server runs with the bounded timings and limits", () => {
    const server = s.app.server;
    assert.equal(server.headersTimeout, HTTP_TIMEOUTS.headersTimeoutMs);
    assert.equal(server.requestTimeout, HTTP_TIMEOUTS.requestTimeoutMs);
    assert.ok(HTTP_TIMEOUTS.headersTimeoutMs <= 10_000 && HTTP_TIMEOUTS.requestTimeoutMs <= 30_000);
  });
});

describe("slow clients, with shortened timeouts", () => {
  const timeouts = { headersTimeoutMs: 1000, requestTimeoutMs: 2000, checkIntervalMs: 100 };
  let s: Started;
  before(async () => {
    s = await start(timeouts);
  });
  after(async () => {
    await s.app.close();
  });

  test("a body that never ends (chunked) is refused after the request timeout, 400 on request", async () => {
    const res = await exchange(s.port, `${POST_HEAD}Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n`);
    assertRefused(res, 400, "INVALID_ARGUMENT", "request");
    assert.match((res.body as { error: { message: string } }).error.message, /not received in time/);
  });

  test("fewer body bytes than Content-Length are refused after the request timeout", async () => {
    assertRefused(await exchange(s.port, `${POST_HEAD}Content-Length: 100\r\n\r\n{}`), 400, "INVALID_ARGUMENT", "request");
  });

  test("a request head that never ends is refused after the headers timeout", async () => {
    assertRefused(await exchange(s.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n"), 400, "INVALID_ARGUMENT", "request");
  });

  test("a long poll that outlasts the request timeout is still answered", async () => {
    // The service answers after twice the request timeout, as a long poll with no work would.
    const waitMs = timeouts.requestTimeoutMs * 2;
    s.svc.override.lease = () => new Promise((resolve) => setTimeout(() => resolve({ items: [] }), waitMs));
    try {
      const body = JSON.stringify({ workerId: "w1", waitSeconds: 60 });
      const res = await fetch(`http://127.0.0.1:${s.port}/v1/pools/emails/lease`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { items: [] });
    } finally {
      delete s.svc.override.lease;
    }
  });
});

test("500 slow-loris sockets do not stop /healthz, and the headers timeout closes each with the envelope", async () => {
  // The head may take 3 s here, so /healthz has that long to answer while all of them are open.
  const s = await start({ headersTimeoutMs: 3000, requestTimeoutMs: 3000, checkIntervalMs: 100 });
  const sockets = await Promise.all(Array.from({ length: 500 }, () => open(s.port)));
  const answers = sockets.map((socket, i) => untilClosed(socket, `slow socket ${i}`));
  let firstClosed = Number.POSITIVE_INFINITY;
  for (const socket of sockets) socket.once("close", () => (firstClosed = Math.min(firstClosed, Date.now())));
  const head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  let sent = 0;
  const drip = () => {
    for (const socket of sockets) if (!socket.destroyed) socket.write(head[sent] ?? "a");
    sent++;
  };
  drip();
  const dripping = setInterval(drip, 1000); // one header byte per second
  try {
    const healthz = await fetch(`http://127.0.0.1:${s.port}/healthz`, { signal: AbortSignal.timeout(5000) });
    assert.equal(healthz.status, 200);
    assert.ok(Date.now() < firstClosed, "/healthz answered while every slow socket was open");
    for (const text of await Promise.all(answers)) assertRefused(parseResponse(text), 400, "INVALID_ARGUMENT", "request");
  } finally {
    clearInterval(dripping);
    for (const socket of sockets) socket.destroy();
    await s.app.close();
  }
});
