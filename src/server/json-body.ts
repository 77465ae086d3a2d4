// The only body parser of the server: JSON, guarded. It replaces Fastify's
// parsers with one catch-all so every content type gets the same answers:
// - an empty body is "no body" (undefined) whatever the content type, so
//   DELETE and the action POSTs accept an empty body even when a client sends
//   content-type: application/json; routes that need a body say so;
// - a non-empty body must be application/json or application/*+json, else
//   400 INVALID_ARGUMENT on "content-type" (see http-errors.ts for why not 415);
// - nesting deeper than maxDepth is refused before parsing;
// - "__proto__" keys and constructor.prototype are refused (prototype
//   poisoning), like Fastify's default parser.

import type { IncomingMessage } from "node:http";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { invalidArgument } from "../core/errors.js";

export const DEFAULT_MAX_JSON_DEPTH = 64;

export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const media = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  return media === "application/json" || (media.startsWith("application/") && media.endsWith("+json"));
}

/** Depth of the deepest array/object of a JSON text, counted without parsing (stops past limit). */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}

function hasPoisonedKey(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null) continue;
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item);
      continue;
    }
    if (Object.hasOwn(node, "__proto__")) return true;
    const ctor = (node as Record<string, unknown>).constructor;
    if (Object.hasOwn(node, "constructor") && typeof ctor === "object" && ctor !== null && Object.hasOwn(ctor, "prototype")) {
      return true;
    }
    for (const key of Object.keys(node)) stack.push((node as Record<string, unknown>)[key]);
  }
  return false;
}

export function parseJsonBody(text: string, contentType: string | undefined, maxDepth: number): unknown {
  if (text.length === 0) return undefined;
  if (!isJsonMediaType(contentType)) {
    const got = contentType === undefined ? "none" : JSON.stringify(contentType.split(";")[0]?.trim());
    throw invalidArgument("content-type", `unsupported media type ${got}; send application/json`);
  }
  if (jsonDepthExceeds(text, maxDepth)) throw invalidArgument("body", `is nested deeper than ${maxDepth} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The parser's own message quotes the input; keep ours short and plain.
    throw invalidArgument("body", "is not valid JSON");
  }
  if ((text.includes("__proto__") || text.includes("prototype")) && hasPoisonedKey(value)) {
    throw invalidArgument("body", 'must not contain "__proto__" or "constructor.prototype" keys');
  }
  return value;
}

export function installJsonParser(app: FastifyInstance, options: { bodyLimitBytes: number; maxDepth: number }): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    "*",
    { parseAs: "string", bodyLimit: options.bodyLimitBytes },
    (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      try {
        done(null, parseJsonBody(String(body), request.headers["content-type"], options.maxDepth));
      } catch (err) {
        done(err as Error, undefined);
      }
    },
  );
}

/**
 * Reads and drops a body that no parser read (a GET or HEAD that carries
 * one), before the answer goes out. Answering first and closing with bytes
 * unread makes the kernel reset the connection, and the reset can overtake
 * the answer on its way to the client (RFC 9112 9.6 asks servers to linger
 * for this reason). Bounded by the body limit: past it, `tooLarge()` is thrown.
 */
export async function drainUnreadBody(raw: IncomingMessage, limitBytes: number, tooLarge: () => Error): Promise<void> {
  const announced = Number(raw.headers["content-length"] ?? 0);
  if (raw.complete || (!(announced > 0) && raw.headers["transfer-encoding"] === undefined)) return;
  if (announced > limitBytes) throw tooLarge();
  let received = 0;
  for await (const chunk of raw) {
    received += (chunk as Buffer).length;
    if (received > limitBytes) throw tooLarge();
  }
}
