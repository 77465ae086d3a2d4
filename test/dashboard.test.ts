// The dashboard's serving (src/server/dashboard.ts, issue 12) on a real
// server on loopback: index.html and hashed assets with their cache headers,
// precompressed gzip and brotli by Accept-Encoding, the strict CSP and the
// other security headers, the API's routes untouched, unknown assets and path
// traversal refused, --dashboard-path and --no-dashboard (flags and server
// options). Needs the built dashboard (dist/dashboard: npm run build, or
// npm run build:dashboard).

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, test } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { UsageError } from "../src/cli/args.js";
import { parseServe } from "../src/cli/serve.js";
import { acceptsEncoding, DASHBOARD_CSP, DEFAULT_DASHBOARD_DIR, dashboardPathProblem } from "../src/server/dashboard.js";
import { startTestServer, type TestServer } from "./helpers.js";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A GET with exactly these headers and this raw path (no client-side URL normalization, no automatic decompression). */
function get(base: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method: "GET", path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

function assertSecurityHeaders(a: Answer): void {
  assert.equal(a.headers["content-security-policy"], DASHBOARD_CSP);
  assert.equal(a.headers["x-content-type-options"], "nosniff");
  assert.equal(a.headers["referrer-policy"], "no-referrer");
}

function assertEnvelope404(a: Answer): void {
  assert.equal(a.status, 404);
  assert.equal(JSON.parse(a.body.toString()).error.code, "NOT_FOUND");
}

/** The built index.html's script and stylesheet, "assets/index-….js" and "assets/index-….css". */
function builtAssets(): { js: string; css: string } {
  const html = readFileSync(join(DEFAULT_DASHBOARD_DIR, "index.html"), "utf8");
  const js = /src="\.\/(assets\/[^"]+\.js)"/.exec(html)?.[1];
  const css = /href="\.\/(assets\/[^"]+\.css)"/.exec(html)?.[1];
  assert.ok(js && css, "index.html names its script and stylesheet by relative URLs");
  return { js, css };
}

before(() => {
  assert.ok(
    existsSync(join(DEFAULT_DASHBOARD_DIR, "index.html")),
    `the dashboard is not built in ${DEFAULT_DASHBOARD_DIR}: run npm run build:dashboard`,
  );
});

/**
 * Runs fn against a server of its own, started inside the test (so a
 * PostgreSQL test store's schema lives as long as the test: see
 * freshPostgresSchema).
 */
async function withServer(fn: (t: TestServer) => Promise<void>, options: Parameters<typeof startTestServer>[0] = {}): Promise<void> {
  const t = await startTestServer(options);
  try {
    await fn(t);
  } finally {
    await t.close();
  }
}

describe("the dashboard served at / (the default)", () => {
  test("GET / answers index.html, no-cache with an ETag, and the strict CSP, nosniff and no referrer", async () => {
    await withServer(async (t) => {
      const a = await get(t.url, "/");
      assert.equal(a.status, 200);
      assert.match(String(a.headers["content-type"]), /^text\/html; charset=utf-8/);
      assert.equal(a.headers["cache-control"], "no-cache");
      assert.match(String(a.headers.etag), /^"[A-Za-z0-9_-]+"$/);
      assertSecurityHeaders(a);
      assert.equal(a.headers["x-frame-options"], "DENY");
      const html = a.body.toString();
      assert.match(html, /<div id="app"><\/div>/);
      // Nothing inline for the CSP to refuse: no inline script or style, no other origin.
      assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/);
      assert.doesNotMatch(html, /<style|\sstyle=/);
      assert.doesNotMatch(html, /https?:\/\//);
      const again = await get(t.url, "/", { "if-none-match": String(a.headers.etag) });
      assert.equal(again.status, 304);
      assert.equal(again.body.length, 0);
    });
  });

  test("hashed assets are immutable for a year, gzip or brotli by Accept-Encoding with Vary, identity otherwise", async () => {
    await withServer(async (t) => {
      const { js, css } = builtAssets();
      const raw = readFileSync(join(DEFAULT_DASHBOARD_DIR, js));
      const plain = await get(t.url, `/${js}`);
      assert.equal(plain.status, 200);
      assert.equal(plain.headers["content-encoding"], undefined);
      assert.deepEqual(plain.body, raw);
      assert.match(String(plain.headers["content-type"]), /^text\/javascript; charset=utf-8/);
      assert.equal(plain.headers["cache-control"], "public, max-age=31536000, immutable");
      assert.equal(plain.headers.vary, "Accept-Encoding");
      assertSecurityHeaders(plain);

      const gz = await get(t.url, `/${js}`, { "accept-encoding": "gzip, deflate" });
      assert.equal(gz.headers["content-encoding"], "gzip");
      assert.equal(gz.headers.vary, "Accept-Encoding");
      assert.ok(gz.body.length < raw.length / 2, `gzip ${gz.body.length} B of ${raw.length} B`);
      assert.deepEqual(gunzipSync(gz.body), raw);

      const br = await get(t.url, `/${js}`, { "accept-encoding": "gzip, deflate, br" });
      assert.equal(br.headers["content-encoding"], "br");
      assert.deepEqual(brotliDecompressSync(br.body), raw);

      // q=0 refuses a coding.
      const noBr = await get(t.url, `/${js}`, { "accept-encoding": "br;q=0, gzip" });
      assert.equal(noBr.headers["content-encoding"], "gzip");
      const none = await get(t.url, `/${js}`, { "accept-encoding": "gzip;q=0, br;q=0" });
      assert.equal(none.headers["content-encoding"], undefined);
      assert.deepEqual(none.body, raw);

      const style = await get(t.url, `/${css}`, { "accept-encoding": "gzip" });
      assert.equal(style.status, 200);
      assert.match(String(style.headers["content-type"]), /^text\/css/);
      assert.equal(style.headers["content-encoding"], "gzip");
      assert.equal(style.headers["cache-control"], "public, max-age=31536000, immutable");
    });
  });

  test("the API, health, metrics and OpenAPI routes are not shadowed, and the dashboard is not in the OpenAPI document", async () => {
    await withServer(async (t) => {
      const jobs = await get(t.url, "/v1/jobs");
      assert.equal(jobs.status, 200, jobs.body.toString());
      assert.ok(Array.isArray(JSON.parse(jobs.body.toString()).items));
      assert.equal(jobs.headers["content-security-policy"], undefined);
      assert.equal((await get(t.url, "/healthz")).status, 200);
      const metrics = await get(t.url, "/metrics");
      assert.equal(metrics.status, 200);
      assert.match(metrics.body.toString(), /^# (HELP|TYPE) /m);
      assertEnvelope404(await get(t.url, "/v1/nothing"));
      const doc = JSON.parse((await get(t.url, "/openapi.json")).body.toString()) as { paths: Record<string, unknown> };
      assert.ok(Object.keys(doc.paths).length > 10);
      assert.equal(doc.paths["/"], undefined);
      assert.ok(!Object.keys(doc.paths).some((p) => p.includes("assets")));
    });
  });

  test("an unknown asset, and every path-traversal form, answers 404 and no file outside the build", async () => {
    await withServer(async (t) => {
      const { js } = builtAssets();
      const paths = [
        "/assets/nope.js",
        "/assets/index.html",
        "/assets/",
        `/${js}.gz`,
        `/${js}/x`,
        "/assets/../package.json",
        "/assets/..%2f..%2fpackage.json",
        "/assets/..%2F..%2F..%2Fpackage.json",
        "/assets/%2e%2e%2f%2e%2e%2fpackage.json",
        "/assets/..%5c..%5cpackage.json",
        "/assets/....//package.json",
        "/%2e%2e/%2e%2e/package.json",
        "/../../package.json",
        "/index.html",
        "/package.json",
      ];
      for (const path of paths) {
        const a = await get(t.url, path);
        assert.equal(a.status, 404, `${path} answered ${a.status}`);
        assert.doesNotMatch(a.body.toString(), /"devDependencies"|"scripts"/, path);
      }
    });
  });
});

describe("--dashboard-path and --no-dashboard", () => {
  test("under --dashboard-path /ops: /ops/ and /ops/assets/ serve it, /ops redirects to /ops/, / is not the dashboard", async () => {
    const t = await startTestServer({ dashboardPath: "/ops" });
    try {
      const { js } = builtAssets();
      const index = await get(t.url, "/ops/");
      assert.equal(index.status, 200);
      assertSecurityHeaders(index);
      const redirect = await get(t.url, "/ops");
      assert.equal(redirect.status, 308);
      assert.equal(redirect.headers.location, "/ops/");
      const asset = await get(t.url, `/ops/${js}`, { "accept-encoding": "gzip" });
      assert.equal(asset.status, 200);
      assert.equal(asset.headers["content-encoding"], "gzip");
      assertEnvelope404(await get(t.url, "/"));
      assertEnvelope404(await get(t.url, `/${js}`));
      assert.equal((await get(t.url, "/v1/jobs")).status, 200);
    } finally {
      await t.close();
    }
  });

  test("with the dashboard off (--no-dashboard), / and its assets answer 404 and the API works", async () => {
    const t = await startTestServer({ dashboard: false });
    try {
      assertEnvelope404(await get(t.url, "/"));
      assertEnvelope404(await get(t.url, `/${builtAssets().js}`));
      assert.equal((await get(t.url, "/v1/jobs")).status, 200);
    } finally {
      await t.close();
    }
  });

  test("without a build, / answers 404 saying the dashboard is not built", async () => {
    const empty = mkdtempSync(join(tmpdir(), "duetime-no-dashboard-"));
    const t = await startTestServer({ dashboardDir: empty });
    try {
      const a = await get(t.url, "/");
      assertEnvelope404(a);
      assert.match(JSON.parse(a.body.toString()).error.message, /not built/);
    } finally {
      await t.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });

  test("duetime serve reads --no-dashboard, --dashboard-path and DUETIME_DASHBOARD(_PATH), and refuses bad paths", () => {
    assert.equal(parseServe([], {}).options.dashboard, undefined);
    assert.equal(parseServe([], {}).options.dashboardPath, undefined);
    assert.equal(parseServe(["--no-dashboard"], {}).options.dashboard, false);
    assert.equal(parseServe([], { DUETIME_DASHBOARD: "off" }).options.dashboard, false);
    assert.equal(parseServe(["--dashboard-path", "/ops/"], {}).options.dashboardPath, "/ops");
    assert.equal(parseServe(["--dashboard-path", "/"], {}).options.dashboardPath, "/");
    assert.equal(parseServe([], { DUETIME_DASHBOARD_PATH: "/internal/duetime" }).options.dashboardPath, "/internal/duetime");
    for (const bad of [
      "ops",
      "/v1",
      "/v1/ui",
      "/metrics",
      "/healthz",
      "/readyz",
      "/openapi.json",
      "/a/../b",
      "/..",
      "/a//b",
      "/a b",
      "/a?b",
      "/%2e%2e",
    ]) {
      assert.throws(() => parseServe(["--dashboard-path", bad], {}), UsageError, bad);
      assert.notEqual(dashboardPathProblem(bad), null, bad);
    }
    assert.throws(() => parseServe(["--no-dashboard", "--dashboard-path", "/ops"], {}), /--dashboard-path: the dashboard is off/);
    assert.throws(() => parseServe([], { DUETIME_DASHBOARD: "maybe" }), /DUETIME_DASHBOARD: expected on or off/);
  });

  test("Accept-Encoding is read with its q-values", () => {
    assert.equal(acceptsEncoding(undefined, "gzip"), 0);
    assert.equal(acceptsEncoding("gzip", "gzip"), 1);
    assert.equal(acceptsEncoding("GZIP;q=0.5", "gzip"), 0.5);
    assert.equal(acceptsEncoding("br;q=0, *", "br"), 0);
    assert.equal(acceptsEncoding("*;q=0.2", "gzip"), 0.2);
    assert.equal(acceptsEncoding("deflate", "gzip"), 0);
  });
});
