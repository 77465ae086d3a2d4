#!/usr/bin/env node
// The duetime command. The sources are TypeScript, run through tsx (no build
// step): register tsx's loader, then hand argv to src/cli/main.ts.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
const code = await main(process.argv.slice(2));
// Let stdout and stderr drain, then exit even if a library left a handle open
// (keep-alive sockets, a server's timers after close()).
await new Promise((resolve) => process.stdout.write("", resolve));
await new Promise((resolve) => process.stderr.write("", resolve));
process.exit(code);
