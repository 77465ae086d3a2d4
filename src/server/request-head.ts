// Checks of a parsed request head that Node's HTTP server would otherwise
// make itself with an empty body (no Host: 400; an Expect other than
// 100-continue: 417), or not at all (an HTTP version other than 1.x, a
// duplicate Host, more header fields than we accept). Run first of all
// hooks, so a refused request is answered before its body is read, with the
// error envelope, and its connection is closed.

import type { IncomingMessage } from "node:http";
import { invalidArgument, type DuetimeError } from "../core/errors.js";
import { LIMITS } from "../core/schemas.js";

export const HEAD_LIMITS = {
  /** Request line and headers together (Node's maxHeaderSize); more is refused while parsing. */
  maxHeaderBytes: LIMITS.requestHeadMaxBytes,
  /** Header fields (Apache's LimitRequestFields); below Node's own 2000, past which it drops fields silently. */
  maxHeaderFields: 100,
} as const;

/** The refusal for a request head we do not serve, or undefined to go on. */
export function checkRequestHead(req: IncomingMessage): DuetimeError | undefined {
  if (req.httpVersionMajor !== 1) {
    return invalidArgument("request", `HTTP/${req.httpVersion} is not supported; send HTTP/1.1`);
  }
  const fields = req.rawHeaders.length / 2;
  if (fields > HEAD_LIMITS.maxHeaderFields) {
    return invalidArgument("headers", `more than ${HEAD_LIMITS.maxHeaderFields} header fields`, { limit: HEAD_LIMITS.maxHeaderFields });
  }
  const hosts = req.rawHeaders.filter((name, i) => i % 2 === 0 && name.toLowerCase() === "host").length;
  // RFC 9112 3.2: an HTTP/1.1 request without a Host, or with several, is refused.
  if (hosts > 1) return invalidArgument("host", "must be sent once");
  if (hosts === 0 && req.httpVersionMinor >= 1) return invalidArgument("host", "is required in HTTP/1.1");
  const expect = req.headers.expect;
  if (expect !== undefined && expect.trim().toLowerCase() !== "100-continue") {
    return invalidArgument("expect", `${JSON.stringify(expect)} is not supported; only 100-continue is`);
  }
  return undefined;
}
