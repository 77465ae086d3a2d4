// JSON bodies the fuzz sends, including what JSON.stringify cannot write:
// number tokens that overflow (1e309) or lose precision, and objects with
// duplicate keys. A body is a tree of plain values plus these two markers,
// written out by toJsonText().

/** A token written as is: `1e309`, `-0`, `123456789012345678901234567890`. */
export class RawToken {
  constructor(readonly text: string) {}
}

/** An object written with its entries in order, duplicate keys included. */
export class Entries {
  constructor(readonly entries: ReadonlyArray<readonly [string, FuzzJson]>) {}
}

export type FuzzJson = null | boolean | number | string | RawToken | Entries | FuzzJson[] | { [key: string]: FuzzJson };

export function toJsonText(value: FuzzJson): string {
  if (value instanceof RawToken) return value.text;
  if (value instanceof Entries) return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(",")}}`;
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`)
      .join(",")}}`;
  }
  // JSON.stringify writes NaN and Infinity as null; the fuzz means them as numbers.
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  return JSON.stringify(value);
}
