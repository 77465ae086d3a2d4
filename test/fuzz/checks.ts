// What every answer must satisfy (docs/api.md, docs/errors.md): no 5xx, every
// 4xx carries the envelope {"error":{"code","message"}} with a catalog code
// whose status is the answer's status, and every whole request is answered
// before the deadline. A 503 with Retry-After is legitimate backpressure, but
// the fuzz should not provoke it, so it is flagged too.

import { ERROR_CODES, isErrorCode } from "../../src/core/errors.js";
import type { Answer } from "./send.js";

export interface Violation {
  /** Short and stable: failures are grouped by route and this. */
  kind: string;
  detail: string;
  /** The server's request id of a 500, to find its stack in the server log. */
  requestId?: string;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function envelopeOf(body: string): { code?: unknown; message?: unknown; details?: unknown } | undefined {
  const parsed = parseJson(body) as { error?: unknown } | undefined;
  const error = parsed?.error;
  return typeof error === "object" && error !== null ? error : undefined;
}

export function checkAnswer(a: Answer, deadlineMs: number): Violation | undefined {
  if (a.outcome === "timeout") return { kind: "no answer", detail: `no answer within ${deadlineMs} ms` };
  if (a.outcome === "closed") return { kind: "closed without an answer", detail: a.detail ?? "" };
  if (a.outcome === "error") return { kind: "fuzz client error", detail: a.detail ?? "" };
  const status = a.status ?? 0;
  const shown = a.body.length > 300 ? `${a.body.slice(0, 300)}…` : a.body;
  if (status >= 200 && status < 300) {
    const json = (a.headers["content-type"] ?? "").includes("json");
    if (json && a.body !== "" && parseJson(a.body) === undefined) return { kind: `${status} body is not JSON`, detail: shown };
    return undefined;
  }
  if (status < 400 || status > 599) return { kind: `unexpected status ${status}`, detail: shown };
  const error = envelopeOf(a.body);
  const code = error?.code;
  if (status === 503 && (code === "UNAVAILABLE" || code === "STORE_UNAVAILABLE") && a.headers["retry-after"] !== undefined) {
    return { kind: `503 ${String(code)} (backpressure; the fuzz should not provoke it)`, detail: shown };
  }
  if (status >= 500) {
    const details = error?.details as { requestId?: unknown } | undefined;
    return {
      kind: `${status} ${typeof code === "string" ? code : ""}`.trim(),
      detail: shown,
      ...(typeof details?.requestId === "string" ? { requestId: details.requestId } : {}),
    };
  }
  if (a.method === "HEAD") return undefined; // a HEAD answer has no body to carry the envelope
  if (!error) return { kind: `${status} without the error envelope`, detail: shown === "" ? "(empty body)" : shown };
  if (typeof code !== "string" || typeof error.message !== "string") return { kind: `${status} envelope lacks code or message`, detail: shown };
  if (!isErrorCode(code)) return { kind: `${status} code ${code} is not in the catalog`, detail: shown };
  if (ERROR_CODES[code].status !== status) return { kind: `${status} with ${code} (catalog says ${ERROR_CODES[code].status})`, detail: shown };
  return undefined;
}
