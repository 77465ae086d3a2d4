// The server under fuzz: `duetime serve` as a child process on an ephemeral
// port and its own SQLite file, so a wedge is a SIGKILL away and its memory is
// read honestly from /proc/<pid>/status. It is restarted on the same store when
// it wedges or grows past the memory limit, so one bug does not end the run.

import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { testStore, type TestStore } from "../helpers.js";

const BIN = new URL("../../bin/duetime.js", import.meta.url).pathname;

/** Keys of the fuzzed tenant (one per role) and of the tenant whose jobs must not move. */
export const KEYS = {
  admin: "fzadmin",
  client: "fzclient",
  worker: "fzworker",
  known: "fzknown",
} as const;

export const API_KEYS = `${KEYS.admin}:fuzz:admin,${KEYS.client}:fuzz:client,${KEYS.worker}:fuzz:worker,${KEYS.known}:known:client`;

/** The command a reader runs before pasting a reproducer (which uses $URL). */
export const SERVE_COMMAND = `node bin/duetime.js serve --port 8080 --store sqlite:/tmp/fuzz.db --api-keys ${API_KEYS} & URL=http://127.0.0.1:8080`;

/** Server log lines kept for the report (500s are looked up by request id). */
const LOG_LINES_KEPT = 2000;

export class FuzzServer {
  url = "";
  /** Highest resident set of any child so far (VmHWM), in bytes. */
  peakRssBytes = 0;
  restarts = 0;
  /** Exits we did not ask for: code or signal, and the last log lines before. */
  readonly crashes: string[] = [];
  private stopping = false;
  private child: ChildProcess | undefined;
  private readonly log: string[] = [];

  /** One store for the whole run: a restarted child finds the known jobs there. */
  private readonly store: TestStore;

  constructor(dir: string) {
    this.store = testStore(dir);
  }

  async start(): Promise<void> {
    const child = spawn(process.execPath, [BIN, "serve", "--port", "0", ...this.store.args, "--log-level", "warn", "--api-keys", API_KEYS], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    this.stopping = false;
    child.once("exit", (code, signal) => {
      if (!this.stopping) this.crashes.push(`exit ${code ?? signal}: ${this.log.slice(-5).join(" | ").slice(0, 1500)}`);
    });
    let pending = "";
    const keep = (chunk: Buffer) => {
      const lines = (pending + chunk.toString()).split("\n");
      pending = lines.pop() ?? "";
      this.log.push(...lines);
      if (this.log.length > LOG_LINES_KEPT) this.log.splice(0, this.log.length - LOG_LINES_KEPT);
    };
    child.stderr!.on("data", keep);
    this.url = await new Promise<string>((resolve, reject) => {
      let out = "";
      const onData = (chunk: Buffer) => {
        out += chunk.toString();
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (!m) return;
        child.stdout!.off("data", onData);
        child.stdout!.on("data", keep);
        resolve(m[1]!);
      };
      child.stdout!.on("data", onData);
      child.once("exit", (code, signal) => reject(new Error(`duetime serve exited early (${code ?? signal}): ${out}`)));
    });
  }

  /** Resident set now, in bytes; also raises peakRssBytes. 0 when the child is gone. */
  rssBytes(): number {
    const pid = this.child?.pid;
    if (pid === undefined || this.child?.exitCode !== null) return 0;
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/status`, "utf8");
    } catch {
      return 0;
    }
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
    this.peakRssBytes = Math.max(this.peakRssBytes, kib("VmHWM"));
    return kib("VmRSS");
  }

  /** True while the child process runs. */
  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The current child's process id (request ids start again in each child). */
  get pid(): number {
    return this.child?.pid ?? 0;
  }

  /** A child's log lines about a request (the stack of a 500). */
  logFor(pid: number, requestId: string): string[] {
    return this.log.filter((line) => line.includes(`"pid":${pid},`) && line.includes(`"reqId":"${requestId}"`));
  }

  /** SIGKILL and a fresh child on the same store (a wedge or a leak must not end the run). */
  async restart(): Promise<void> {
    await this.stop("SIGKILL");
    this.restarts++;
    await this.start();
  }

  async stop(signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.rssBytes();
    this.stopping = true;
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill(signal);
    await gone;
  }
}
