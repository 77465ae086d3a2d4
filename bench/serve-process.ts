// `duetime serve` as a child process of a bench script (the compiled CLI,
// bin/duetime.js, on an ephemeral port), resolved once it prints its URL.

import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

const ROOT = new URL("../", import.meta.url).pathname;

/** Starts `duetime serve --port 0 <args>` (node flags first, e.g. --cpu-prof); resolves with the process and its URL. */
export async function serveProcess(args: string[], nodeArgs: string[] = []): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [...nodeArgs, join(ROOT, "bin/duetime.js"), "serve", "--port", "0", ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = /http:\/\/[^\s]+/.exec(out);
      if (m) resolve(m[0]);
    });
    child.once("exit", (code) => reject(new Error(`duetime serve exited early with ${code}`)));
  });
  return { child, url };
}
