// The dashboard's build (issue 12): Preact and uPlot bundled by Vite into
// dist/dashboard/, which the server serves (src/server/dashboard.ts) and the
// npm package ships. Relative asset URLs (base "./") so the same build works
// at "/" and under --dashboard-path. Each text file also gets .gz and .br
// siblings, so the server sends them compressed without compressing at run
// time. No source maps, no inline script or style (the page's CSP forbids
// both), no modulepreload polyfill (it would be code the page never needs).

import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { defineConfig, type Plugin } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));
const outDir = fileURLToPath(new URL("../dist/dashboard/", import.meta.url));

function compressed(): Plugin {
  return {
    name: "duetime-precompress",
    apply: "build",
    closeBundle() {
      const walk = (dir: string): string[] =>
        readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
      for (const file of walk(outDir)) {
        if (!/\.(js|css|html|svg)$/.test(file)) continue;
        const raw = readFileSync(file);
        writeFileSync(`${file}.gz`, gzipSync(raw, { level: 9 }));
        writeFileSync(
          `${file}.br`,
          brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }),
        );
      }
    },
  };
}

export default defineConfig({
  root,
  base: "./",
  publicDir: false,
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  plugins: [compressed()],
  build: {
    outDir,
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    target: "es2022",
    modulePreload: { polyfill: false },
    // Every asset a file of its own: a data: URL in CSS would need a looser CSP.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
});
