// Opaque pagination cursors: base64url JSON of the last item's sort keys,
// checked on the way back in so a forged or mangled cursor is a 400; and the
// keyset paging every list service runs on them (pageOf).

import type { Page, PageQuery } from "@duetime/sdk/contract";
import { invalidArgument } from "../core/errors.js";
import { DEFAULT_LIMIT } from "./wire.js";

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

/**
 * A list's sort keys, by cursor field: the row's field it holds (the same
 * name in the store's `after`) and its type. Short cursor fields keep the
 * cursors small; they are the wire's, so a list keeps its fields.
 */
export type Keyset<A> = Record<string, readonly [field: keyof A & string, type: "number" | "string"]>;

/**
 * The one paging recipe of the list services: `limit` rows after the
 * cursor's keys (DEFAULT_LIMIT unless asked), each mapped by toItem; a full
 * page carries the cursor of its last row, a short one ends the list.
 */
export async function pageOf<A, R extends A, T>(
  query: PageQuery,
  keys: Keyset<A>,
  fetch: (p: { limit: number; after?: A }) => Promise<R[]>,
  toItem: (row: R) => T,
): Promise<Page<T>> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const shape = Object.fromEntries(Object.entries(keys).map(([k, [, type]]) => [k, type])) as Shape;
  let after: A | undefined;
  if (query.cursor) {
    const decoded = decodeCursor(query.cursor, shape);
    after = Object.fromEntries(Object.entries(keys).map(([k, [field]]) => [field, decoded[k]])) as A;
  }
  const rows = await fetch({ limit, ...(after !== undefined ? { after } : {}) });
  const last = rows[rows.length - 1];
  const next =
    rows.length === limit && last
      ? encodeCursor(Object.fromEntries(Object.entries(keys).map(([k, [field]]) => [k, last[field] as number | string])))
      : null;
  return { items: rows.map(toItem), nextCursor: next };
}
