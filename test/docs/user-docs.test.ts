// README.md and docs/ speak to the people who run duetime: they give the
// figures, the commands and the reasons, not the project's history (that is
// CHANGELOG.md's). So they name no tracker reference ("issue 13", "#42") and
// no path that exists only on some developer's machine (/work/…, /home/…,
// /tmp/…). Plain files, no server: this runs once, from a subdirectory.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** README.md and every file under docs/. */
function userDocs(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
  return [join(root, "README.md"), ...walk(join(root, "docs"))].map((p) => relative(root, p)).sort();
}

const FORBIDDEN: { what: string; pattern: RegExp }[] = [
  // "issue 13", "issues 5, 8", "Issue #13's", "PR 7", "ticket #9".
  { what: "a tracker reference", pattern: /\b(?:issues?|tickets?|PRs?|pull requests?)\s*#?\d+/gi },
  // "#42" as a word of its own; not cron's `1#3`, a colour "#123456" in JSON, an anchor "(#the-dashboard)" or a route "#/jobs/ID".
  { what: "a tracker reference", pattern: /(?<![\w#&"'/-])#\d+\b(?![\w-])/g },
  // An absolute path on a developer's machine, also in a store URL or file: URL; not a path after a host or a
  // segment ("https://host/home/…", "/v1/tenants/root/"), nor a relative one ("./tmp/", "~/projects/").
  {
    what: "a machine's absolute path",
    pattern: /(?<![\w.~%-])(?:\/(?:work|home|root|Users|tmp)\/|\/private\/var\/folders\/|\/var\/folders\/|[A-Za-z]:\\Users\\)\S*/g,
  },
];

/** Each forbidden phrase of the text, with its line number. */
function findings(text: string): { line: number; what: string; found: string }[] {
  const out: { line: number; what: string; found: string }[] = [];
  const lines = text.split("\n");
  lines.forEach((content, i) => {
    for (const { what, pattern } of FORBIDDEN) for (const m of content.matchAll(pattern)) out.push({ line: i + 1, what, found: m[0] });
  });
  return out;
}

/** An absolute path from its segments: the samples name machine paths without this file naming one. */
const abs = (...segments: string[]): string => `/${segments.join("/")}`;
/** A path under the user's home directory, from its segments (same reason). */
const home = (...segments: string[]): string => ["~", ...segments].join("/");

describe("the scanner", () => {
  test("finds tracker references and machine paths", () => {
    for (const text of [
      "### Issue 13's targets",
      "as issues 5, 8 and 13 asked",
      "see issue #15",
      "fixed in #42.",
      "(#7)",
      "PR 12 moved it",
      `duetime serve --store sqlite:${abs("work", "main", "data.db")}`,
      `written to ${abs("tmp", "duetime-bench-x1", "herd.json")}`,
      `\`${abs("home", "alice", "duetime")}\``,
      `open ${abs("Users", "bob", "duetime", "README.md")}`,
      abs("root", ".npm", "_logs"),
      `file://${abs("home", "alice", "report.html")}`,
      "C:\\Users\\carol\\duetime",
    ])
      assert.notEqual(findings(text).length, 0, `found in: ${text}`);
  });

  test("leaves legitimate text alone", () => {
    for (const text of [
      "answers 404 NOT_FOUND; a 503 carries Retry-After",
      "`1#3` is the third Monday; `0 0 * 2 1#5`",
      "the dashboard links #/jobs/job_1 and #/dead-letters",
      "see [The dashboard](#the-dashboard) and [5xx](#5xx-errors)",
      '"color": "#123456", "fixedColor": "#73BF69"',
      "&#8212; an HTML entity",
      `cron's log: ${abs("var", "log", "syslog")}, the script ${abs("usr", "local", "bin", "backup.sh")}`,
      `--dir ${abs("var", "lib", "duetime", "archive")}, or ${home("work", "duetime")}, or ./tmp/duetime.db`,
      "https://example.com/home/work/tmp/ and /v1/tenants/root/",
      "the issue of ordering; 3 issues remain open",
    ])
      assert.deepEqual(findings(text), [], `nothing in: ${text}`);
  });
});

test("README.md and docs/ name no tracker reference and no machine's path", () => {
  const files = userDocs();
  assert.ok(files.includes("docs/api.md") && files.includes("README.md"), "the docs were found");
  const problems = files.flatMap((file) => findings(readFileSync(join(root, file), "utf8")).map((f) => `${file}:${f.line}: ${f.what}: ${f.found}`));
  assert.deepEqual(problems, []);
});
