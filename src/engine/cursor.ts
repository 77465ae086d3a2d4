// Opaque pagination cursors: base64url JSON of the last item's sort keys,
// checked on the way back in so a forged or mangled cursor is a 400.

import { invalidArgument } from "../core/errors.js";

type Shape = Record<string, "number" | "string">;
type Decoded<S extends Shape> = { [K in keyof S]: S[K] extends "number" ? number : string };

export function encodeCursor(keys: Record<string, number | string>): string {
  return Buffer.from(JSON.stringify(keys)).toString("base64url");
}

export function decodeCursor<S extends Shape>(cursor: string, shape: S): Decoded<S> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw invalidArgument("cursor", "is not a cursor this server issued");
  }
  if (typeof value !== "object" || value === null) throw invalidArgument("cursor", "is not a cursor this server issued");
  for (const [key, type] of Object.entries(shape)) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v !== type || (type === "number" && !Number.isFinite(v))) {
      throw invalidArgument("cursor", "is not a cursor this server issued");
    }
  }
  return value as Decoded<S>;
}
