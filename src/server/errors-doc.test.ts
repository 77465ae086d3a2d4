// Keeps docs/errors.md and the catalog (core/errors.ts) in step, like
// Fastify's errors sync test: a code added to one and not the other fails.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { ERROR_CODES } from "../core/errors.js";

const DOC = new URL("../../docs/errors.md", import.meta.url);

/** Rows of the "## Catalog" table: | `CODE` | status | when | what to do | */
async function documentedCodes(): Promise<Map<string, { status: number; when: string; todo: string }>> {
  const text = await readFile(DOC, "utf8");
  const section = text.split(/^## /m).find((s) => s.startsWith("Catalog"));
  assert.ok(section, 'docs/errors.md has a "## Catalog" section');
  const rows = new Map<string, { status: number; when: string; todo: string }>();
  for (const line of section.split("\n")) {
    const m = /^\|\s*`([A-Z_]+)`\s*\|\s*(\d{3})\s*\|([^|]*)\|([^|]*)\|\s*$/.exec(line);
    if (!m) continue;
    const [, code, status, when, todo] = m as unknown as [string, string, string, string, string];
    assert.ok(!rows.has(code), `${code} is documented twice`);
    rows.set(code, { status: Number(status), when: when.trim(), todo: todo.trim() });
  }
  return rows;
}

test("every catalog code is documented in docs/errors.md with its status", async () => {
  const doc = await documentedCodes();
  for (const [code, { status }] of Object.entries(ERROR_CODES)) {
    const row = doc.get(code);
    assert.ok(row, `${code} is missing from docs/errors.md`);
    assert.equal(row.status, status, `${code}: docs say ${row.status}, the catalog says ${status}`);
    assert.ok(row.when.length > 0 && row.todo.length > 0, `${code}: say when it happens and what to do`);
  }
});

test("docs/errors.md documents no code the catalog lacks", async () => {
  const doc = await documentedCodes();
  for (const code of doc.keys()) assert.ok(Object.hasOwn(ERROR_CODES, code), `${code} is documented but not in ERROR_CODES`);
});
