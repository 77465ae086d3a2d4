// The Prefer request header (RFC 7240), as far as the API honours it: the
// `return` preference of a create (`return=minimal` answers each created job's
// id and next run time only; `return=representation` is the default answer).
//
//   Prefer     = 1#preference
//   preference = token [ BWS "=" BWS word ] *( OWS ";" [ OWS parameter ] )
//   word       = token / quoted-string
//
// Preference names compare case-insensitively, values case-sensitively; only
// the first instance of a preference counts; a preference that cannot be
// parsed, or is not understood, is ignored (never an error). One pass over the
// text, no backtracking: its length is bounded by the server's header limit.

/** The value that asks for the minimal answer, and the Preference-Applied header that says it was given. */
export const RETURN_MINIMAL = "return=minimal";

const isTchar = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || // 0-9
  (c >= 0x41 && c <= 0x5a) || // A-Z
  (c >= 0x61 && c <= 0x7a) || // a-z
  "!#$%&'*+-.^_`|~".includes(String.fromCharCode(c));

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09;

/**
 * The value of the first `return` preference in a Prefer header ("" when it
 * has none), or undefined when there is none. Several Prefer headers arrive
 * joined by ", " (Node), or as an array.
 */
export function returnPreference(header: unknown): string | undefined {
  const text = Array.isArray(header) ? header.filter((h) => typeof h === "string").join(", ") : header;
  if (typeof text !== "string") return undefined;
  let i = 0;
  const n = text.length;
  const skipSpace = () => {
    while (i < n && isSpace(text.charCodeAt(i))) i++;
  };
  const token = (): string => {
    const start = i;
    while (i < n && isTchar(text.charCodeAt(i))) i++;
    return text.slice(start, i);
  };
  /** A quoted-string at i (which is `"`), unescaped; undefined when it is not closed. */
  const quoted = (): string | undefined => {
    let out = "";
    for (i++; i < n; i++) {
      const c = text[i]!;
      if (c === '"') {
        i++;
        return out;
      }
      if (c === "\\") {
        i++;
        if (i >= n) return undefined;
      }
      out += text[i];
    }
    return undefined;
  };
  /** Past the rest of this element (its parameters, or whatever could not be parsed), to just after the next comma outside quotes. */
  const skipElement = () => {
    while (i < n) {
      const c = text[i]!;
      if (c === ",") {
        i++;
        return;
      }
      if (c === '"') {
        if (quoted() === undefined) i = n;
      } else i++;
    }
  };
  const seen = new Set<string>();
  while (i < n) {
    skipSpace();
    const name = token().toLowerCase();
    skipSpace();
    let value: string | undefined = "";
    if (i < n && text[i] === "=") {
      i++;
      skipSpace();
      value = text[i] === '"' ? quoted() : token() || undefined;
      skipSpace();
    }
    // Well formed: the element ends here, or its parameters begin.
    const ended = i >= n || text[i] === "," || text[i] === ";";
    skipElement();
    if (name === "" || value === undefined || !ended || seen.has(name)) continue;
    seen.add(name);
    if (name === "return") return value;
  }
  return undefined;
}

/** Whether a Prefer header asks for `return=minimal` (its first `return` preference). */
export function prefersMinimal(header: unknown): boolean {
  return returnPreference(header) === "minimal";
}
