// The dashboard's size budget (issue 12): all the JavaScript the build ships
// (dist/dashboard/assets/*.js), gzipped, is under 150 kB. Needs the built
// dashboard (npm run build, or npm run build:dashboard).

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { DEFAULT_DASHBOARD_DIR } from "../src/server/dashboard.js";

export const JS_BUDGET_GZIP_BYTES = 150 * 1000;

test("the dashboard's JavaScript is under its size budget: 150 kB gzipped, all files together", () => {
  const assets = join(DEFAULT_DASHBOARD_DIR, "assets");
  assert.ok(existsSync(assets), `the dashboard is not built in ${DEFAULT_DASHBOARD_DIR}: run npm run build:dashboard`);
  const files = readdirSync(assets).filter((f) => f.endsWith(".js"));
  assert.ok(files.length > 0, "the build has JavaScript");
  let raw = 0;
  let gzip = 0;
  for (const file of files) {
    const bytes = readFileSync(join(assets, file));
    raw += bytes.length;
    gzip += gzipSync(bytes, { level: 9 }).length;
  }
  console.log(`# dashboard JavaScript: ${files.length} file(s), ${raw} B raw, ${gzip} B gzipped (budget ${JS_BUDGET_GZIP_BYTES} B)`);
  assert.ok(gzip < JS_BUDGET_GZIP_BYTES, `the dashboard's JavaScript is ${gzip} B gzipped, over the budget of ${JS_BUDGET_GZIP_BYTES} B`);
});
