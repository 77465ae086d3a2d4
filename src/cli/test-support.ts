// Test support for the CLI: an Io that records what a command prints.

import type { Io } from "./output.js";

/** An Io that records what a command prints. */
export function captureIo(env: Record<string, string> = {}, files: Record<string, string> = {}): Io & { out: string; err: string } {
  const io = {
    out: "",
    err: "",
    env,
    stdout: (t: string) => void (io.out += t),
    stderr: (t: string) => void (io.err += t),
    readFile: async (path: string) => {
      if (!(path in files)) throw new Error(`ENOENT: no such file, open '${path}'`);
      return files[path]!;
    },
  };
  return io;
}
