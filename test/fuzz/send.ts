// Sending a case and reading its answer, each with a hard deadline, so a
// wedged server becomes a reported "timeout", never a hung fuzz. Each case
// has a connection of its own, so an answer is never blamed on the case
// before it (and a curl reproducer behaves the same).

import http from "node:http";
import net from "node:net";
import type { HttpCase, Refs } from "./cases.js";
import { resolvePath } from "./cases.js";
import type { RawCase } from "./raw.js";

export interface Answer {
  outcome: "answered" | "timeout" | "closed" | "error";
  status?: number;
  headers: Record<string, string>;
  body: string;
  ms: number;
  /** The method the answer is to (HEAD answers have no body). */
  method: string;
  detail?: string;
}

export function sendHttp(baseUrl: string, c: HttpCase, refs: Refs, timeoutMs: number): Promise<Answer> {
  const started = performance.now();
  const url = new URL(baseUrl);
  const path = resolvePath(c, refs) + (c.query ? `?${c.query}` : "");
  const body = c.body ? Buffer.from(c.body.text, c.body.encoding) : undefined;
  // Given headers as an array, node adds neither Host nor Content-Length (raw cases send requests without them).
  const headers = ["host", url.host, ...c.headers.flat(), ...(body ? ["content-length", String(body.length)] : [])];
  return new Promise((resolve) => {
    let done = false;
    const finish = (a: Omit<Answer, "ms" | "method">) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...a, ms: performance.now() - started, method: c.method });
    };
    let req: http.ClientRequest;
    try {
      req = http.request({ host: url.hostname, port: url.port, method: c.method, path, agent: false, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : (v ?? "");
          finish({ outcome: "answered", status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString("utf8") });
        });
        res.on("error", (err) => finish({ outcome: "closed", headers: {}, body: "", detail: err.message }));
      });
    } catch (err) {
      // Our own client refused the request (a bug in the fuzz, not the server).
      resolve({ outcome: "error", headers: {}, body: "", ms: 0, method: c.method, detail: (err as Error).message });
      return;
    }
    const timer = setTimeout(() => {
      finish({ outcome: "timeout", headers: {}, body: "" });
      req.destroy();
    }, timeoutMs);
    req.on("error", (err) => finish({ outcome: "closed", headers: {}, body: "", detail: err.message }));
    req.end(body);
  });
}

/** The first HTTP response in bytes (1xx skipped), or undefined while incomplete. */
export function parseResponse(bytes: Buffer, closed: boolean): { status: number; headers: Record<string, string>; body: string } | undefined {
  let rest = bytes;
  for (;;) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) return undefined;
    const [statusLine = "", ...lines] = rest.subarray(0, end).toString("latin1").split("\r\n");
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const i = line.indexOf(":");
      if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const after = rest.subarray(end + 4);
    if (status >= 100 && status < 200) {
      rest = after;
      continue;
    }
    if (headers["content-length"] !== undefined) {
      const length = Number(headers["content-length"]);
      if (after.length < length) return undefined;
      return { status, headers, body: after.subarray(0, length).toString("utf8") };
    }
    if (headers["transfer-encoding"] === "chunked") {
      const body = dechunk(after);
      return body === undefined ? undefined : { status, headers, body };
    }
    return closed ? { status, headers, body: after.toString("utf8") } : undefined;
  }
}

function dechunk(bytes: Buffer): string | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = bytes.indexOf("\r\n", at);
    if (eol < 0) return undefined;
    const size = parseInt(bytes.subarray(at, eol).toString("latin1"), 16);
    if (size === 0) return Buffer.concat(parts).toString("utf8");
    if (bytes.length < eol + 2 + size + 2) return undefined;
    parts.push(bytes.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** Opens a connection and writes the bytes; the socket keeps what arrives in `received`. */
export function connectRaw(baseUrl: string, bytes: string): { socket: net.Socket; received: Buffer[]; closed: Promise<void> } {
  const url = new URL(baseUrl);
  const socket = net.connect(Number(url.port), url.hostname);
  const received: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  socket.on("error", () => undefined);
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write(Buffer.from(bytes, "latin1"));
  return { socket, received, closed };
}

/** Sends a whole raw request and waits for its first answer (or the deadline, or the server closing). */
export async function sendRaw(baseUrl: string, c: RawCase, timeoutMs: number): Promise<Answer> {
  const started = performance.now();
  const { socket, received, closed } = connectRaw(baseUrl, c.bytes);
  const method = /^[A-Z]+/.exec(c.bytes)?.[0] ?? "?";
  let isClosed = false;
  void closed.then(() => (isClosed = true));
  return new Promise((resolve) => {
    let done = false;
    const check = () => {
      const parsed = parseResponse(Buffer.concat(received), isClosed);
      if (parsed) finish({ outcome: "answered", ...parsed });
      else if (isClosed) finish({ outcome: "closed", headers: {}, body: "", detail: `${Buffer.concat(received).length} bytes before close` });
    };
    const finish = (a: Omit<Answer, "ms" | "method">) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.off("data", check);
      socket.destroy();
      resolve({ ...a, ms: performance.now() - started, method });
    };
    const timer = setTimeout(() => finish({ outcome: "timeout", headers: {}, body: "" }), timeoutMs);
    socket.on("data", check);
    void closed.then(check);
  });
}
