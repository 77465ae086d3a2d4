#!/usr/bin/env node
// The duetime command: the compiled CLI (dist/, built by `npm run build`,
// which `npm install` runs in a clone through the prepare script).
import { existsSync } from "node:fs";

const entry = new URL("../dist/cli/main.js", import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write("duetime: dist/ is missing; run `npm run build` in the package folder first\n");
  process.exit(70); // EX_SOFTWARE
}
const { main } = await import(entry.href);
const code = await main(process.argv.slice(2));
// Let stdout and stderr drain, then exit even if a library left a handle open
// (keep-alive sockets, a server's timers after close()).
await new Promise((resolve) => process.stdout.write("", resolve));
await new Promise((resolve) => process.stderr.write("", resolve));
process.exit(code);
