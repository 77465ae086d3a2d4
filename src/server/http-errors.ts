// One home for turning anything thrown while serving a request into the API's
// error envelope {"error": {"code", "message", "details"?}} with the status of
// the error catalog (core/errors.ts). The status always follows the code, so
// a client can trust either.
//
// Decisions for errors the HTTP layer raises itself (docs/errors.md):
// - an unsupported or invalid Content-Type answers 400 INVALID_ARGUMENT
//   (field "content-type"), not 415: 415 has no code in the catalog;
// - a wrong method on a known path answers 404 NOT_FOUND like an unknown path
//   (Fastify's router does not tell them apart, and 405 has no code);
// - oversized or malformed request heads answer 400 INVALID_ARGUMENT;
// - a request arriving while the server shuts down answers 503 UNAVAILABLE.

import type { Socket } from "node:net";
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from "fastify";
import { ajvErrorToDuetime, type RequestPart } from "../core/validate.js";
import { DuetimeError, ERROR_CODES, invalidArgument, type ErrorCode } from "../core/errors.js";
import type { ErrorObject } from "ajv";

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; details?: Record<string, unknown> };
}

/** Default Retry-After (seconds) for the codes that promise one. */
const RETRY_AFTER: Partial<Record<ErrorCode, number>> = { RESOURCE_EXHAUSTED: 1, UNAVAILABLE: 5, STORE_UNAVAILABLE: 5 };

interface FastifyLikeError {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  validation?: unknown;
  validationContext?: unknown;
}

/**
 * Maps a thrown value to a DuetimeError. Anything not recognised as the
 * caller's fault becomes INTERNAL with a message that reveals nothing; the
 * caller logs the original.
 */
export function toDuetimeError(err: unknown, bodyLimitBytes: number): { error: DuetimeError; internal: boolean } {
  if (err instanceof DuetimeError) return { error: err, internal: false };
  const e = (typeof err === "object" && err !== null ? err : {}) as FastifyLikeError;
  const code = typeof e.code === "string" ? e.code : "";

  // Fastify schema validation (unused by our routes, which validate with
  // core/validate.ts, but kept on the same mapping in case a plugin adds one).
  if (Array.isArray(e.validation) && e.validation.length > 0) {
    const part = (typeof e.validationContext === "string" ? e.validationContext : "body") as string;
    const knownPart: RequestPart = part === "querystring" ? "query" : (part as RequestPart);
    return { error: ajvErrorToDuetime(e.validation[0] as ErrorObject, knownPart), internal: false };
  }

  switch (code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return {
        error: new DuetimeError("PAYLOAD_TOO_LARGE", `body: larger than the limit of ${bodyLimitBytes} bytes`, {
          field: "body",
          limitBytes: bodyLimitBytes,
        }),
        internal: false,
      };
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return { error: invalidArgument("content-type", "unsupported media type; send application/json"), internal: false };
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return { error: invalidArgument("body", "is required (send a JSON body)"), internal: false };
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return { error: invalidArgument("body", "is not valid JSON"), internal: false };
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return { error: invalidArgument("content-length", "does not match the body"), internal: false };
    case "FST_ERR_BAD_URL":
      return { error: invalidArgument("url", "is not a valid URL (bad percent-encoding)"), internal: false };
    case "FST_ERR_MAX_PARAM_LENGTH":
      return { error: new DuetimeError("NOT_FOUND", "not found: a path segment is too long"), internal: false };
  }

  // Other 4xx raised by Fastify itself: their messages are written for users.
  const status = typeof e.statusCode === "number" ? e.statusCode : 0;
  if (code.startsWith("FST_") && status >= 400 && status < 500) {
    const message = typeof e.message === "string" ? e.message : "bad request";
    const mapped: ErrorCode =
      status === 413 ? "PAYLOAD_TOO_LARGE" : status === 404 || status === 414 ? "NOT_FOUND" : "INVALID_ARGUMENT";
    return { error: new DuetimeError(mapped, mapped === "INVALID_ARGUMENT" ? `request: ${message}` : message), internal: false };
  }

  return { error: new DuetimeError("INTERNAL", "internal error"), internal: true };
}

export function envelopeOf(error: DuetimeError): ErrorEnvelope {
  return error.toJSON();
}

/** Sends the envelope for an error, with Retry-After and WWW-Authenticate where they belong. */
export function sendError(reply: FastifyReply, error: DuetimeError): FastifyReply {
  const status = ERROR_CODES[error.code].status;
  const retryAfter = error.retryAfterSeconds ?? RETRY_AFTER[error.code];
  if (retryAfter !== undefined) reply.header("retry-after", String(Math.max(0, Math.ceil(retryAfter))));
  if (error.code === "UNAUTHENTICATED") reply.header("www-authenticate", 'Bearer realm="duetime"');
  return reply.code(status).type("application/json; charset=utf-8").send(envelopeOf(error));
}

/** Fastify error handler: every error of every route ends here. */
export function makeErrorHandler(bodyLimitBytes: number) {
  return function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const { error, internal } = toDuetimeError(err, bodyLimitBytes);
    if (internal) {
      request.log.error({ err }, "unexpected error");
      const withId = new DuetimeError("INTERNAL", "internal error", { requestId: String(request.id) });
      return sendError(reply, withId);
    }
    if (error.code === "INTERNAL" || error.code === "UNAVAILABLE") request.log.warn({ err }, error.message);
    else request.log.debug({ code: error.code }, error.message);
    return sendError(reply, error);
  };
}

/** Errors Fastify raises before a route is found (bad percent-encoding, overlong params). */
export function makeFrameworkErrorHandler(bodyLimitBytes: number) {
  return function frameworkErrors(err: unknown, _request: FastifyRequest, reply: FastifyReply): void {
    void sendError(reply, toDuetimeError(err, bodyLimitBytes).error);
  };
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split("?")[0] ?? "";
  return sendError(reply, new DuetimeError("NOT_FOUND", `no route for ${request.method} ${path}`));
}

/**
 * Node's 'clientError' (a request head that cannot be parsed, too large, or
 * too slow): the socket has no request object yet, so the envelope is written
 * by hand, as Fastify's default handler does with its own body.
 */
export function makeClientErrorHandler(log: { current?: FastifyBaseLogger }) {
  return function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
    if (err.code === "ECONNRESET" || socket.destroyed) return;
    let message = "request: malformed HTTP request";
    if (err.code === "HPE_HEADER_OVERFLOW") message = "headers: larger than the server accepts";
    else if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") message = "request: not received in time";
    log.current?.debug({ code: err.code }, message);
    const body = JSON.stringify({ error: { code: "INVALID_ARGUMENT", message, details: { field: message.split(":")[0] } } });
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}
