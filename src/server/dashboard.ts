// The dashboard (issue 12): a single-page app built from dashboard/ by Vite
// into dist/dashboard/ (index.html and hashed files under assets/), served
// here at "/" or under a path prefix (--dashboard-path /ops), or not at all
// (--no-dashboard). It talks to /v1 with the key its user typed in, like any
// client: this module only serves files.
//
// The files are read once, when the app is built, into memory, with their
// gzip and brotli forms (written beside them by the build, else made here).
// A request names a file the build produced or gets 404: nothing a URL says
// ever reaches the file system, so no path can climb out of the directory.
// This module loads no framework at run time: `duetime serve` checks its
// --dashboard-path with dashboardPathProblem() before the server is loaded.
//
// Headers: hashed assets are immutable for a year; index.html is `no-cache`
// (revalidated with its ETag), so a new build is picked up at once. Every
// answer carries a strict Content-Security-Policy (no inline script or style,
// no other origin), nosniff and no referrer.

import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants as zlib, gzipSync } from "node:zlib";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DuetimeError } from "../core/errors.js";

/**
 * Where the build puts the dashboard: <package>/dist/dashboard, from
 * dist/server/dashboard.js (the package) and src/server/dashboard.ts (tests
 * run from source) alike.
 */
export const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL("../../dist/dashboard/", import.meta.url));

export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const IMMUTABLE = "public, max-age=31536000, immutable";

export interface DashboardOptions {
  /** Where it is served: "/" (default) or a prefix such as "/ops" (see dashboardPathProblem). */
  path?: string;
  /** The built files (default DEFAULT_DASHBOARD_DIR). */
  dir?: string;
}

/** Paths the dashboard may not take: the API's and the operational endpoints'. */
const RESERVED = ["/v1", "/metrics", "/healthz", "/readyz", "/openapi.json"];

/** Why `path` cannot be the dashboard's path prefix, or null when it can. */
export function dashboardPathProblem(path: string): string | null {
  if (!path.startsWith("/")) return "must start with /";
  if (path.length > 200) return "must be at most 200 characters";
  if (!/^[A-Za-z0-9._~/-]*$/.test(path)) return "may hold only letters, digits, /, ., _, ~ and -";
  if (path.includes("//")) return "must not hold an empty segment (//)";
  const normal = normalizeDashboardPath(path);
  if (normal.split("/").some((segment) => segment === "." || segment === "..")) return "must not hold . or .. segments";
  for (const reserved of RESERVED) {
    if (normal === reserved || normal.startsWith(`${reserved}/`)) return `must not be ${reserved} or under it (the server's own routes)`;
  }
  return null;
}

/** "/ops/" → "/ops"; "/" stays "/". */
export function normalizeDashboardPath(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, "") || "/" : path;
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".json": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};

const COMPRESSIBLE = new Set([".html", ".js", ".css", ".svg", ".json", ".txt"]);

interface Asset {
  type: string;
  etag: string;
  raw: Buffer;
  gzip?: Buffer;
  br?: Buffer;
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** The built files by path relative to the directory ("index.html", "assets/index-1a2b.js"); empty when there is no build. */
export function loadDashboardAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!existsSync(join(dir, "index.html")) || !statSync(dir).isDirectory()) return assets;
  const files = listFiles(dir);
  const present = new Set(files);
  for (const file of files) {
    const ext = extname(file);
    if (ext === ".gz" || ext === ".br" || ext === ".map") continue;
    const type = TYPES[ext];
    if (type === undefined) continue;
    const raw = readFileSync(file);
    const asset: Asset = { type, raw, etag: `"${createHash("sha256").update(raw).digest("base64url").slice(0, 27)}"` };
    if (COMPRESSIBLE.has(ext) && raw.length > 256) {
      asset.gzip = present.has(`${file}.gz`) ? readFileSync(`${file}.gz`) : gzipSync(raw, { level: 9 });
      asset.br = present.has(`${file}.br`)
        ? readFileSync(`${file}.br`)
        : brotliCompressSync(raw, { params: { [zlib.BROTLI_PARAM_QUALITY]: 9, [zlib.BROTLI_PARAM_SIZE_HINT]: raw.length } });
    }
    assets.set(relative(dir, file).split(sep).join("/"), asset);
  }
  return assets;
}

/** The q-value Accept-Encoding gives `coding` (an explicit entry, else `*`), 0 when it is not accepted. */
export function acceptsEncoding(header: string | undefined, coding: string): number {
  if (header === undefined) return 0;
  let star: number | undefined;
  for (const part of header.split(",")) {
    const [name = "", ...params] = part.trim().toLowerCase().split(";");
    let q = 1;
    for (const param of params) {
      const m = /^\s*q=([01](?:\.\d{0,3})?)\s*$/.exec(param);
      if (m) q = Number(m[1]);
    }
    if (name.trim() === coding) return q;
    if (name.trim() === "*") star = q;
  }
  return star ?? 0;
}

function securityHeaders(reply: FastifyReply): void {
  void reply.header("content-security-policy", DASHBOARD_CSP);
  void reply.header("x-content-type-options", "nosniff");
  void reply.header("referrer-policy", "no-referrer");
  void reply.header("x-frame-options", "DENY");
  void reply.header("cross-origin-opener-policy", "same-origin");
  void reply.header("cross-origin-resource-policy", "same-origin");
}

function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: Asset, cacheControl: string): FastifyReply {
  securityHeaders(reply);
  void reply.header("cache-control", cacheControl);
  void reply.header("etag", asset.etag);
  if (asset.gzip !== undefined) void reply.header("vary", "Accept-Encoding");
  const inm = request.headers["if-none-match"];
  if (inm?.split(",").some((tag) => tag.trim().replace(/^W\//, "") === asset.etag)) return reply.code(304).send();
  void reply.type(asset.type);
  const accept = request.headers["accept-encoding"];
  const br = asset.br !== undefined ? acceptsEncoding(accept, "br") : 0;
  const gz = asset.gzip !== undefined ? acceptsEncoding(accept, "gzip") : 0;
  if (br > 0 && br >= gz) return reply.header("content-encoding", "br").send(asset.br);
  if (gz > 0) return reply.header("content-encoding", "gzip").send(asset.gzip);
  return reply.send(asset.raw);
}

/** Registers the dashboard's routes on the app: `path` (index.html) and `path/assets/:file`. */
export function registerDashboard(app: FastifyInstance, options: DashboardOptions = {}): void {
  const path = normalizeDashboardPath(options.path ?? "/");
  const problem = dashboardPathProblem(path);
  if (problem !== null) throw new Error(`dashboard path ${JSON.stringify(path)}: ${problem}`);
  const dir = options.dir ?? DEFAULT_DASHBOARD_DIR;
  const assets = loadDashboardAssets(dir);
  const base = path === "/" ? "/" : `${path}/`;
  const route = { schema: { hide: true } } as const;

  const index = async (request: FastifyRequest, reply: FastifyReply) => {
    const asset = assets.get("index.html");
    if (asset === undefined) {
      throw new DuetimeError("NOT_FOUND", `the dashboard is not built: no index.html in ${dir} (npm run build)`);
    }
    return sendAsset(request, reply, asset, "no-cache");
  };
  app.get(base, route, index);
  // "/ops" → "/ops/": the page's relative asset URLs resolve under the prefix.
  if (path !== "/") app.get(path, route, async (_request, reply) => reply.redirect(base, 308));

  app.get<{ Params: { file: string } }>(`${base}assets/:file`, route, async (request, reply) => {
    const file = request.params.file;
    const asset = /^[A-Za-z0-9_.-]+$/.test(file) && !file.includes("..") ? assets.get(`assets/${file}`) : undefined;
    if (asset === undefined) throw new DuetimeError("NOT_FOUND", `no dashboard asset ${JSON.stringify(file)}`);
    return sendAsset(request, reply, asset, IMMUTABLE);
  });
}
