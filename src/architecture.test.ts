// Imports point down: cli → server/sdk/embedded → engine → store → core
// (a layer may reach past the one below it, never up or sideways; the SDK
// sees only core, so a client never loads the engine or a driver). This
// test reads every source file's imports, so the layering in DESIGN.md
// cannot rot quietly.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";

const SRC = new URL(".", import.meta.url).pathname;

/** Which top-level folders of src/ each folder may import from (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  store: ["core"],
  engine: ["core", "store"],
  sdk: ["core"],
  server: ["core", "store", "engine"],
  embedded: ["core", "store", "engine", "sdk"],
  testing: ["core", "store", "engine", "sdk", "embedded"],
  cli: ["core", "store", "engine", "sdk", "server", "embedded"],
  ".": ["core", "store", "engine", "sdk", "server", "embedded"],
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [path] : [];
  });
}

function layerOf(file: string): string {
  const rel = relative(SRC, file);
  return rel.includes("/") ? rel.split("/")[0]! : ".";
}

test("imports point down the layers", () => {
  const violations: string[] = [];
  for (const file of sources(SRC)) {
    const from = layerOf(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:import|export)[^;]*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g)) {
      const spec = m[1] ?? m[2]!;
      const target = resolve(dirname(file), spec);
      if (!target.startsWith(SRC)) continue;
      const to = layerOf(target);
      if (to !== from && !ALLOWED[from]!.includes(to)) violations.push(`${relative(SRC, file)} imports ${spec} (${from} → ${to})`);
    }
  }
  assert.deepEqual(violations, []);
});

test("the layer table covers every folder of src/", () => {
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  assert.deepEqual(
    folders.filter((f) => !(f in ALLOWED)),
    [],
  );
});
