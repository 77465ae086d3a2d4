// One home for turning anything thrown while serving a request into the API's
// error envelope {"error": {"code", "message", "details"?}} with the status of
// the error catalog (core/errors.ts). The status always follows the code, so
// a client can trust either.
//
// Decisions for errors the HTTP layer raises itself (docs/errors.md lists
// every one):
// - an unsupported or invalid Content-Type answers 400 INVALID_ARGUMENT
//   (field "content-type"), not 415: 415 has no code in the catalog;
// - a wrong method on a known path answers 404 NOT_FOUND like an unknown path
//   (Fastify's router does not tell them apart, and 405 has no code);
// - what Node's parser refuses, and what Node would answer with 408, 414, 417,
//   431 or 505, answers 400 INVALID_ARGUMENT naming the part at fault
//   (request, url, headers, host, expect, content-length, transfer-encoding,
//   body), for the same reason; the connection is closed;
// - a request arriving while the server shuts down answers 503 UNAVAILABLE.

import { STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from "fastify";
import { ajvErrorToDuetime, type RequestPart } from "../core/validate.js";
import { DuetimeError, ERROR_CODES, invalidArgument, type ErrorCode } from "../core/errors.js";
import type { ErrorObject } from "ajv";
import { HEAD_LIMITS } from "./request-head.js";

/** The two limits on receiving a request (app.ts HTTP_TIMEOUTS), named in the timeout's message. */
export interface RequestTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

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
      return { error: payloadTooLarge(bodyLimitBytes), internal: false };
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
    case "ECONNRESET": // the body stream saw the client go away (Node's "aborted"); nobody is left to answer
      return { error: invalidArgument("body", "the connection ended before the body did"), internal: false };
    case "FST_ERR_MAX_PARAM_LENGTH":
      return { error: new DuetimeError("NOT_FOUND", "not found: a path segment is too long"), internal: false };
  }

  // Other 4xx raised by Fastify itself: their messages are written for users.
  const status = typeof e.statusCode === "number" ? e.statusCode : 0;
  if (code.startsWith("FST_") && status >= 400 && status < 500) {
    const message = typeof e.message === "string" ? e.message : "bad request";
    const mapped: ErrorCode = status === 413 ? "PAYLOAD_TOO_LARGE" : status === 404 || status === 414 ? "NOT_FOUND" : "INVALID_ARGUMENT";
    return { error: new DuetimeError(mapped, mapped === "INVALID_ARGUMENT" ? `request: ${message}` : message), internal: false };
  }

  return { error: new DuetimeError("INTERNAL", "internal error"), internal: true };
}

export function payloadTooLarge(bodyLimitBytes: number): DuetimeError {
  return new DuetimeError("PAYLOAD_TOO_LARGE", `body: larger than the limit of ${bodyLimitBytes} bytes`, {
    field: "body",
    limitBytes: bodyLimitBytes,
  });
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
    // A route's own limit (the creates' and PATCH's: the body limit plus the payload limit) names itself in the 413.
    const { error, internal } = toDuetimeError(err, request.routeOptions?.bodyLimit ?? bodyLimitBytes);
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

/** A 'clientError' error; rawPacket is the Buffer being parsed (Fastify's types say otherwise). */
type ParserError = Error & { code?: string; reason?: string; rawPacket?: unknown };

/** The request part a parse error of Node's (llhttp's) is about; the rest is "request". */
const PARSER_ERROR_FIELD: Record<string, string> = {
  HPE_INVALID_URL: "url",
  HPE_INVALID_HEADER_TOKEN: "headers",
  HPE_INVALID_CONTENT_LENGTH: "content-length",
  HPE_UNEXPECTED_CONTENT_LENGTH: "content-length",
  HPE_INVALID_TRANSFER_ENCODING: "transfer-encoding",
  HPE_INVALID_CHUNK_SIZE: "body",
};

/** The overflow is the URL's when the packet holds a request line longer than the whole limit. */
function urlOverflowed(packet: unknown): boolean {
  if (!Buffer.isBuffer(packet) || !/^[A-Z]+ /.test(packet.toString("latin1", 0, 16))) return false;
  const lineEnd = packet.indexOf("\r\n");
  return (lineEnd === -1 ? packet.length : lineEnd) > HEAD_LIMITS.maxHeaderBytes;
}

/**
 * Maps a 'clientError' (the parser refused the bytes, the request was too
 * slow, or the client hung up mid-request) to the error it answers.
 * bodyStarted: the head was parsed, so what is missing is the body.
 */
function clientErrorToDuetime(err: ParserError, bodyStarted: boolean, timeouts: RequestTimeouts): DuetimeError {
  switch (err.code) {
    case "HPE_HEADER_OVERFLOW": {
      const field = urlOverflowed(err.rawPacket) ? "url" : "headers";
      const limitBytes = HEAD_LIMITS.maxHeaderBytes;
      return invalidArgument(field, `the request line and headers are larger than ${limitBytes} bytes`, { limitBytes });
    }
    case "HPE_PAUSED_H2_UPGRADE": // the HTTP/2 connection preface, "PRI * HTTP/2.0"
      return invalidArgument("request", "HTTP/2 is not supported; send HTTP/1.1");
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new DuetimeError("PAYLOAD_TOO_LARGE", "body: chunk extensions are too large", { field: "body" });
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return invalidArgument(
        "request",
        `not received in time (the head within ${timeouts.headersTimeoutMs / 1000} s, ` +
          `the whole request within ${timeouts.requestTimeoutMs / 1000} s)`,
      );
    case "HPE_INVALID_EOF_STATE":
      return bodyStarted
        ? invalidArgument("body", "the connection ended before the body did (fewer bytes than Content-Length, or no last chunk)")
        : invalidArgument("request", "the connection ended in the middle of the request head");
  }
  const field = PARSER_ERROR_FIELD[err.code ?? ""] ?? "request";
  return invalidArgument(field, `not valid HTTP/1.1 (${err.reason ?? err.message})`);
}

/** Writes a whole error response on a socket no ServerResponse writes to, asking the client to close. */
function writeRawError(socket: Socket, error: DuetimeError): void {
  const body = JSON.stringify(envelopeOf(error));
  socket.write(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nConnection: close\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/** Node's private link from a socket to the response in progress on it (as its own clientError default uses). */
function responseInProgress(socket: Socket): ServerResponse | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

/**
 * Node's 'clientError': the socket has no request object (or its request
 * cannot go on), so the envelope is written by hand, as Fastify's default
 * handler does with its own body, unless a response has started already.
 * The connection is always closed: the parser's state is lost.
 */
export function makeClientErrorHandler(log: { current?: FastifyBaseLogger }, timeouts: RequestTimeouts) {
  return function clientErrorHandler(err: ParserError, socket: Socket): void {
    if (err.code === "ECONNRESET" || socket.destroyed) return;
    const response = responseInProgress(socket);
    const error = clientErrorToDuetime(err, response !== undefined, timeouts);
    log.current?.debug({ code: err.code }, error.message);
    if (socket.writable && response?.headersSent !== true) writeRawError(socket, error);
    socket.destroy(err);
  };
}

/**
 * Node's 'connect' (a CONNECT request, which takes the socket over as a
 * tunnel): this server tunnels nothing, so it answers like an unknown route.
 */
export function connectHandler(req: IncomingMessage, socket: Socket): void {
  if (socket.writable) writeRawError(socket, new DuetimeError("NOT_FOUND", `no route for CONNECT ${req.url ?? ""}`));
  socket.destroy();
}
