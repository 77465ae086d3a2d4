// Raw-socket cases (node:net): requests node's HTTP client refuses to send,
// built byte by byte. A "complete" case must be answered within the deadline;
// an incomplete one (a body longer than sent, a chunked body that never ends)
// is left open while the fuzz goes on, and whatever it receives is checked
// when it is closed.

import fc from "fast-check";
import { KEYS } from "./server.js";

export interface RawCase {
  kind: "raw";
  label: string;
  /** The bytes to send, one char per byte (latin1). */
  bytes: string;
  /** The request is whole: the server owes an answer. */
  complete: boolean;
}

const AUTH = `Authorization: Bearer ${KEYS.admin}\r\n`;
const JOB = '{"name":"raw","target":{"type":"queue","pool":"raw"},"schedule":{"runAt":"2099-01-01T00:00:00Z"}}';

const head = (line: string, headers: string[] = ["Host: 127.0.0.1"]) => `${line}\r\n${headers.map((h) => `${h}\r\n`).join("")}`;
const post = (path: string, headers: string[], body: string) =>
  `${head(`POST ${path} HTTP/1.1`, ["Host: 127.0.0.1", "Content-Type: application/json", ...headers])}${AUTH}\r\n${body}`;

const MALFORMED_LINES = [
  "GET",
  "GET /",
  "GET / HTTP/1.1 extra",
  "GET  /healthz  HTTP/1.1",
  "get /healthz HTTP/1.1",
  "GET /healthz HTTP/9.9",
  "GET /healthz HTTP/0.9",
  "GET /healthz HTTP/1.0",
  "GET /healthz HTTP/1.1\n",
  "GET http://x/healthz HTTP/1.1",
  "GET * HTTP/1.1",
  "OPTIONS * HTTP/1.1",
  "CONNECT 127.0.0.1:1 HTTP/1.1",
  "FOO /healthz HTTP/1.1",
  "GET /\x00 HTTP/1.1",
  "GET /%zz HTTP/1.1",
  "GET /v1/jobs?limit=1%00 HTTP/1.1",
  "GET /v1/jobs/\xfc HTTP/1.1",
  "GET /v1/jobs/a b HTTP/1.1",
  "GET /v1/jobs?cursor=\x7f HTTP/1.1",
  `GET /${"a".repeat(20_000)} HTTP/1.1`,
  `GET /v1/jobs?${"a=1&".repeat(5000)} HTTP/1.1`,
  "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
  "PRI * HTTP/2.0\r\n\r\nSM\r\n",
  "\r\n\r\nGET /healthz HTTP/1.1",
];

/** Builders by label: (path of a route that takes a body) → bytes and whether the request is whole. */
const BUILDERS: Record<string, (path: string) => { bytes: string; complete: boolean }> = {
  "no Host": () => ({ bytes: `${head("GET /healthz HTTP/1.1", [])}\r\n`, complete: true }),
  "no Host, POST": (p) => ({ bytes: `POST ${p} HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n${AUTH}\r\n{}`, complete: true }),
  "two Hosts": () => ({ bytes: `${head("GET /healthz HTTP/1.1", ["Host: a", "Host: b"])}\r\n`, complete: true }),
  "garbage Expect": () => ({ bytes: `${head("GET /healthz HTTP/1.1", ["Host: 127.0.0.1", "Expect: garbage"])}\r\n`, complete: true }),
  "garbage Expect, POST": (p) => ({ bytes: post(p, ["Expect: 200-ok", `Content-Length: ${JOB.length}`], JOB), complete: true }),
  "Expect 100-continue": (p) => ({ bytes: post(p, ["Expect: 100-continue", `Content-Length: ${JOB.length}`], JOB), complete: true }),
  "Content-Length shorter than body": (p) => ({ bytes: post(p, ["Content-Length: 2"], JOB), complete: true }),
  "Content-Length longer than body": (p) => ({ bytes: post(p, [`Content-Length: ${JOB.length + 100}`], JOB), complete: false }),
  "Content-Length not a number": (p) => ({ bytes: post(p, ["Content-Length: abc"], JOB), complete: true }),
  "Content-Length negative": (p) => ({ bytes: post(p, ["Content-Length: -1"], JOB), complete: true }),
  "Content-Length hex": (p) => ({ bytes: post(p, ["Content-Length: 0x10"], JOB), complete: true }),
  "Content-Length twice, different": (p) => ({ bytes: post(p, ["Content-Length: 2", `Content-Length: ${JOB.length}`], JOB), complete: true }),
  "Content-Length and chunked": (p) => ({ bytes: post(p, [`Content-Length: ${JOB.length}`, "Transfer-Encoding: chunked"], JOB), complete: true }),
  "announced 100 MiB": (p) => ({ bytes: post(p, ["Content-Length: 104857600"], JOB), complete: true }),
  "announced 2^64": (p) => ({ bytes: post(p, ["Content-Length: 18446744073709551616"], JOB), complete: true }),
  "chunked, valid": (p) => ({ bytes: post(p, ["Transfer-Encoding: chunked"], `${JOB.length.toString(16)}\r\n${JOB}\r\n0\r\n\r\n`), complete: true }),
  "chunked, never ends": (p) => ({ bytes: post(p, ["Transfer-Encoding: chunked"], `5\r\n{"a":\r\n`), complete: false }),
  "chunked, announces 100 MiB": (p) => ({ bytes: post(p, ["Transfer-Encoding: chunked"], `6400000\r\n{"a":`), complete: false }),
  "chunked, size not hex": (p) => ({ bytes: post(p, ["Transfer-Encoding: chunked"], "zz\r\nhello\r\n0\r\n\r\n"), complete: true }),
  "chunked, negative size": (p) => ({ bytes: post(p, ["Transfer-Encoding: chunked"], "-1\r\nhello\r\n0\r\n\r\n"), complete: true }),
  "chunked, size overflows": (p) => ({ bytes: post(p, ["Transfer-Encoding: chunked"], "ffffffffffffffffff\r\nhello\r\n0\r\n\r\n"), complete: true }),
  "chunked, data longer than size": (p) => ({ bytes: post(p, ["Transfer-Encoding: chunked"], "2\r\nhello\r\n0\r\n\r\n"), complete: true }),
  "chunked, NUL in extension": (p) => ({ bytes: post(p, ["Transfer-Encoding: chunked"], "2;a=\x00\r\n{}\r\n0\r\n\r\n"), complete: true }),
  "Transfer-Encoding unknown": (p) => ({ bytes: post(p, ["Transfer-Encoding: xchunked", `Content-Length: ${JOB.length}`], JOB), complete: true }),
  "Transfer-Encoding twice": (p) => ({
    bytes: post(p, ["Transfer-Encoding: chunked", "Transfer-Encoding: identity"], `2\r\n{}\r\n0\r\n\r\n`),
    complete: true,
  }),
  "header flood (2000 headers)": () => ({
    bytes: `${head("GET /healthz HTTP/1.1", ["Host: 127.0.0.1", ...Array.from({ length: 2000 }, (_, i) => `X-F${i}: v`)])}\r\n`,
    complete: true,
  }),
  "one 64 KiB header": () => ({ bytes: `${head("GET /healthz HTTP/1.1", ["Host: 127.0.0.1", `X-Big: ${"b".repeat(65_536)}`])}\r\n`, complete: true }),
  "NUL in a header": () => ({
    bytes: `${head("GET /v1/stats HTTP/1.1", ["Host: 127.0.0.1", `Authorization: Bearer ${KEYS.admin}\x00`])}\r\n`,
    complete: true,
  }),
  "CR in a header": () => ({ bytes: `${head("GET /healthz HTTP/1.1", ["Host: 127.0.0.1", "X-A: a\rb"])}\r\n`, complete: true }),
  "obs-fold header": () => ({
    bytes: `${head("GET /v1/stats HTTP/1.1", ["Host: 127.0.0.1", "Authorization: Bearer", ` ${KEYS.admin}`])}\r\n`,
    complete: true,
  }),
  "header without colon": () => ({ bytes: `${head("GET /healthz HTTP/1.1", ["Host: 127.0.0.1", "Foo"])}\r\n`, complete: true }),
  "header name with space": () => ({ bytes: `${head("GET /healthz HTTP/1.1", ["Host: 127.0.0.1", "Foo Bar: x"])}\r\n`, complete: true }),
  "empty header name": () => ({ bytes: `${head("GET /healthz HTTP/1.1", ["Host: 127.0.0.1", ": x"])}\r\n`, complete: true }),
  "Idempotency-Key with DEL and 0xff": (p) => ({
    bytes: post(p, ["Idempotency-Key: a\x7f\xff", `Content-Length: ${JOB.length}`], JOB),
    complete: true,
  }),
  "If-Match with tab and 0x80": () => ({
    bytes: `PATCH /v1/jobs/job_x HTTP/1.1\r\nHost: 127.0.0.1\r\n${AUTH}If-Match: \t"1"\x80\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"name":"x"}`,
    complete: true,
  }),
  "pipelined pair": () => ({ bytes: `${head("GET /healthz HTTP/1.1")}\r\n${head("GET /healthz HTTP/1.1")}\r\n`, complete: true }),
  "head never ends": () => ({ bytes: head("GET /healthz HTTP/1.1"), complete: false }),
};

const BODY_PATHS = ["/v1/jobs", "/v1/jobs:batch", "/v1/pools/raw/lease", "/v1/keys", "/v1/executions:complete", "/v1/jobs/job_x"];

/** The case of a builder's label (see BUILDERS) on a path. */
export function rawOf(label: string, path = "/v1/jobs"): RawCase {
  const build = BUILDERS[label];
  if (!build) throw new Error(`no raw case labelled ${JSON.stringify(label)}`);
  return { kind: "raw", label, ...build(path) };
}

export function malformedLine(line: string): RawCase {
  return { kind: "raw", label: "malformed request line", bytes: `${line}\r\nHost: 127.0.0.1\r\n\r\n`, complete: true };
}

export function rawCase(): fc.Arbitrary<RawCase> {
  const line = fc.constantFrom(...MALFORMED_LINES).map(malformedLine);
  const built = fc.tuple(fc.constantFrom(...Object.keys(BUILDERS)), fc.constantFrom(...BODY_PATHS)).map(([label, path]) => rawOf(label, path));
  return fc.oneof({ weight: 1, arbitrary: line }, { weight: 3, arbitrary: built });
}
