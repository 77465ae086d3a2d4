// The dashboard's client of the /v1 API: fetch with the key the user typed
// (kept in sessionStorage only, never in localStorage or a cookie), and the
// error envelope turned into an ApiError the pages show. The wire types the
// pages read are the SDK's: `import type` from @duetime/sdk/contract, so
// nothing of the SDK reaches the bundle.

const KEY_ITEM = "duetime.apiKey";

/** The key of this tab's session: a string (maybe empty: no key, a server without auth), or null when not logged in. */
export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_ITEM);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY_ITEM, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_ITEM);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The envelope's details: `field` names the input at fault (a dotted path), VERSION_CONFLICT's `version` the current one. */
    readonly details: { field?: string; [name: string]: unknown } = {},
  ) {
    super(message);
  }
}

/** What a person should read for an error: 401 and 403 said plainly. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 401) return `The server refused the key (401 ${err.code}): it is unknown, revoked or missing. Log in again with a valid key.`;
    if (err.status === 403) return `This key's role may not do this (403 ${err.code}): ${err.message}`;
    return `${err.status} ${err.code}: ${err.message}`;
  }
  if (err instanceof Error) return `Cannot reach the server: ${err.message}`;
  return String(err);
}

/** Listeners told when an answer is 401: the app then goes back to the login form. */
const unauthenticated = new Set<(err: ApiError) => void>();
export function onUnauthenticated(listener: (err: ApiError) => void): () => void {
  unauthenticated.add(listener);
  return () => unauthenticated.delete(listener);
}

export type Query = Record<string, string | number | undefined | null>;

function url(path: string, query?: Query): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  const qs = params.toString();
  return qs === "" ? path : `${path}?${qs}`;
}

/** Calls the API with the session's key (or the one given, at login); resolves to the JSON body, undefined for 204. */
export async function api<T>(
  method: string,
  path: string,
  options: { query?: Query; body?: unknown; key?: string; signal?: AbortSignal } = {},
): Promise<T> {
  const key = options.key ?? storedKey() ?? "";
  const headers: Record<string, string> = { accept: "application/json" };
  if (key !== "") headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url(path, options.query), {
    method,
    headers,
    body: options.body === undefined ? null : JSON.stringify(options.body),
    cache: "no-store",
    credentials: "omit",
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let body: unknown;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const error = (body as { error?: { code?: string; message?: string; details?: ApiError["details"] } } | undefined)?.error;
    const err = new ApiError(res.status, error?.code ?? "HTTP_ERROR", error?.message ?? (text.slice(0, 200) || res.statusText), error?.details ?? {});
    if (res.status === 401 && options.key === undefined) for (const listener of unauthenticated) listener(err);
    throw err;
  }
  return body as T;
}
