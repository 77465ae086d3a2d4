// `duetime serve`: options from flags and DUETIME_* variables (flags win),
// validated before anything starts; then the server, loaded lazily so that
// the other commands never load the engine or a store driver.

import { parseApiKeys } from "../core/api-keys.js";
import { DuetimeError } from "../core/errors.js";
import type { RunningServer, ServerOptions } from "../server/index.js";
import { UsageError, expectPositionals, integerOption, strictParse, type Env } from "./args.js";
import type { Io } from "./output.js";

export interface ServeCommand {
  command: "serve";
  options: ServerOptions;
}

export const SERVE_HELP = `Usage: duetime serve [options]

Runs the server: HTTP API, scheduler and executor. Each option can also be
set from the environment variable shown; a flag wins over the environment.

  --host HOST                 DUETIME_HOST                 (default 127.0.0.1)
  --port PORT                 DUETIME_PORT                 0..65535, 0 picks a free port (default 8080)
  --store URL                 DUETIME_STORE                sqlite:PATH or postgres://... (default sqlite:./duetime.db)
  --signing-secret S          DUETIME_SIGNING_SECRET       secret of the default tenant's callback signatures
  --allow-target-hosts A,B    DUETIME_ALLOW_TARGET_HOSTS   HTTP targets may reach these hosts even on private addresses
  --api-keys K:T:R,...        DUETIME_API_KEYS             turn auth on: key:tenant:role, role admin|client|worker
  --body-limit BYTES          DUETIME_BODY_LIMIT           request body limit (default 1048576)
  --log-level LEVEL           DUETIME_LOG_LEVEL            fatal|error|warn|info|debug|trace|silent (default info)
  -h, --help                  Show this help

SIGTERM or SIGINT stops accepting work, drains, and exits within 10 seconds.`;

const SERVE_OPTIONS = {
  host: { type: "string" },
  port: { type: "string" },
  store: { type: "string" },
  "signing-secret": { type: "string" },
  "allow-target-hosts": { type: "string" },
  "api-keys": { type: "string" },
  "body-limit": { type: "string" },
  "log-level": { type: "string" },
} as const;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export function parseServe(args: string[], env: Env): ServeCommand {
  const usage = SERVE_HELP;
  const { values: v, positionals } = strictParse(args, SERVE_OPTIONS, usage);
  expectPositionals(positionals, [], usage);
  // flag, else environment variable; an empty variable counts as unset
  const pick = (flag: keyof typeof SERVE_OPTIONS, variable: string): { value: string; source: string } | undefined => {
    if (v[flag] !== undefined) return { value: v[flag], source: `--${flag}` };
    const fromEnv = env[variable];
    return fromEnv === undefined || fromEnv === "" ? undefined : { value: fromEnv, source: variable };
  };

  const host = pick("host", "DUETIME_HOST") ?? { value: "127.0.0.1", source: "--host" };
  if (host.value.trim() === "") throw new UsageError(`${host.source}: must not be empty`, usage);
  const port = pick("port", "DUETIME_PORT");
  const store = pick("store", "DUETIME_STORE") ?? { value: "sqlite:./duetime.db", source: "--store" };
  if (!/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(store.value)) {
    throw new UsageError(`${store.source}: expected sqlite:PATH or postgres://..., got ${JSON.stringify(store.value)}`, usage);
  }
  const options: ServerOptions = {
    host: host.value,
    port: port ? integerOption(port.source.replace(/^--/, ""), port.value, 0, 65535, usage)! : 8080,
    store: store.value,
  };
  const secret = pick("signing-secret", "DUETIME_SIGNING_SECRET");
  if (secret) options.signingSecret = secret.value;
  const hosts = pick("allow-target-hosts", "DUETIME_ALLOW_TARGET_HOSTS");
  if (hosts) {
    const list = hosts.value.split(",").map((h) => h.trim());
    if (list.some((h) => h === "")) throw new UsageError(`${hosts.source}: expected a comma-separated list of host names, got ${JSON.stringify(hosts.value)}`, usage);
    options.allowTargetHosts = list;
  }
  const keys = pick("api-keys", "DUETIME_API_KEYS");
  if (keys) options.apiKeys = parseKeys(keys.value, keys.source, usage);
  const bodyLimit = pick("body-limit", "DUETIME_BODY_LIMIT");
  if (bodyLimit) options.bodyLimitBytes = integerOption(bodyLimit.source.replace(/^--/, ""), bodyLimit.value, 1, 2 ** 31 - 1, usage)!;
  const logLevel = pick("log-level", "DUETIME_LOG_LEVEL");
  if (logLevel) {
    if (!LOG_LEVELS.includes(logLevel.value)) throw new UsageError(`${logLevel.source}: expected one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(logLevel.value)}`, usage);
    options.logLevel = logLevel.value;
  }
  return { command: "serve", options };
}

/** A mistake in the keys is a usage error (exit 2), found without loading the server. */
function parseKeys(text: string, source: string, usage: string): NonNullable<ServerOptions["apiKeys"]> {
  try {
    return parseApiKeys(text);
  } catch (err) {
    if (err instanceof DuetimeError) throw new UsageError(`${source}: ${err.message.replace(/^apiKeys: /, "")}`, usage);
    throw err;
  }
}

export interface ServeDeps {
  /** Defaults to server/index.ts's startServer, imported on first use. */
  startServer?: (options: ServerOptions) => Promise<RunningServer>;
  /** Where SIGTERM/SIGINT come from (default process). */
  signals?: Pick<NodeJS.Process, "once" | "off">;
  /** Called when close() overruns the deadline (default process.exit). */
  exit?: (code: number) => void;
  /** How long close() may take before the process is ended anyway (default 9 500 ms: exit within 10 s). */
  closeDeadlineMs?: number;
}

export async function runServe(cmd: ServeCommand, io: Io, deps: ServeDeps = {}): Promise<number> {
  const start = deps.startServer ?? (await import("../server/index.js")).startServer;
  if (typeof start !== "function") {
    io.stderr("error: this build has no server (server/index.ts exports no startServer)\n");
    return 1;
  }
  let server: RunningServer;
  try {
    server = await start(cmd.options);
  } catch (err) {
    io.stderr(`error: the server did not start: ${describe(err)}\n`);
    return 1;
  }
  io.stdout(`duetime listening on ${server.url}\n`);

  const signals = deps.signals ?? process;
  const signal = await new Promise<string>((resolve) => {
    const onTerm = (): void => done("SIGTERM");
    const onInt = (): void => done("SIGINT");
    const done = (name: string): void => {
      signals.off("SIGTERM", onTerm);
      signals.off("SIGINT", onInt);
      resolve(name);
    };
    signals.once("SIGTERM", onTerm);
    signals.once("SIGINT", onInt);
  });
  io.stderr(`${signal}: shutting down\n`);
  const exit = deps.exit ?? ((code: number) => process.exit(code));
  const deadline = setTimeout(() => {
    io.stderr("error: shutdown took too long; exiting\n");
    exit(1);
  }, deps.closeDeadlineMs ?? 9_500);
  deadline.unref();
  try {
    await server.close();
    return 0;
  } catch (err) {
    io.stderr(`error: shutdown failed: ${describe(err)}\n`);
    return 1;
  } finally {
    clearTimeout(deadline);
  }
}

function describe(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  return [typeof e?.code === "string" ? e.code : undefined, typeof e?.message === "string" ? e.message : String(err)].filter(Boolean).join(": ");
}
