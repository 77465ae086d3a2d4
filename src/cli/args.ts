// Argument plumbing shared by the commands: the usage error, the global
// client flags, strict parseArgs, and the value parsers (durations, times,
// integers). Everything here is pure: no I/O, no network.

import { parseArgs, type ParseArgsConfig } from "node:util";

/** A usage mistake: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
    this.name = "UsageError";
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_URL = "http://127.0.0.1:8080";

/** Flags every command that talks to a server accepts. */
export interface GlobalOptions {
  url: string;
  token?: string;
  json: boolean;
}

type OptionsConfig = NonNullable<ParseArgsConfig["options"]>;

export const GLOBAL_OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean" },
} as const satisfies OptionsConfig;

export const GLOBAL_HELP = `Global options:
  --url URL          Server URL (env DUETIME_URL, default ${DEFAULT_URL})
  --token KEY        API key (env DUETIME_TOKEN)
  --json             Print the API's JSON as is
  -h, --help         Show this help`;

const HELP_OPTION = { help: { type: "boolean", short: "h" } } as const satisfies OptionsConfig;

export interface Parsed<O extends OptionsConfig> {
  values: { [K in keyof O]?: O[K] extends { type: "boolean" } ? boolean : O[K] extends { multiple: true } ? string[] : string };
  positionals: string[];
}

/** parseArgs with strict: true, its errors turned into UsageError with the command's usage. */
export function strictParse<O extends OptionsConfig>(args: string[], options: O, usage: string): Parsed<O> {
  try {
    const { values, positionals } = parseArgs({ args, options: { ...options, ...HELP_OPTION }, allowPositionals: true, strict: true });
    return { values: values as Parsed<O>["values"], positionals };
  } catch (err) {
    throw new UsageError(cleanParseError(err), usage);
  }
}

function cleanParseError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  // node's messages end with advice about "--" that does not apply to us
  return message.replace(/\. To specify a positional argument starting with a '-'.*$/s, "").replace(/\s+$/, "");
}

export function globalOptions(
  values: { url?: string | undefined; token?: string | undefined; json?: boolean | undefined },
  env: Env,
  usage: string,
): GlobalOptions {
  const url = values.url ?? env.DUETIME_URL ?? DEFAULT_URL;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url: not a URL: ${JSON.stringify(url)}`, usage);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw new UsageError(`--url: must be http or https, got ${JSON.stringify(url)}`, usage);
  const token = values.token ?? env.DUETIME_TOKEN;
  return { url, json: values.json ?? false, ...(token ? { token } : {}) };
}

export function expectPositionals(positionals: string[], names: string[], usage: string): string[] {
  if (positionals.length < names.length) throw new UsageError(`missing argument <${names[positionals.length]}>`, usage);
  if (positionals.length > names.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[names.length])}`, usage);
  for (const [i, p] of positionals.entries()) if (p === "") throw new UsageError(`<${names[i]}> must not be empty`, usage);
  return positionals;
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/**
 * Parses a duration into whole seconds: "30s", "5m", "2h", "1d", combinations
 * such as "1h30m", or a bare number of seconds ("90"). Returns undefined when
 * the text is not a duration.
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  if (!/^(\d+(\.\d+)?[smhd])+$/.test(trimmed)) return undefined;
  let seconds = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)([smhd])/g)) seconds += Number(amount) * UNIT_SECONDS[unit!]!;
  return Number.isInteger(seconds) ? seconds : undefined;
}

export function durationOption(flag: string, text: string | undefined, usage: string): number | undefined {
  if (text === undefined) return undefined;
  const seconds = parseDuration(text);
  if (seconds === undefined)
    throw new UsageError(`--${flag}: expected a duration such as 30s, 5m, 2h, 1d or a number of seconds, got ${JSON.stringify(text)}`, usage);
  return seconds;
}

export function integerOption(flag: string, text: string | undefined, min: number, max: number, usage: string): number | undefined {
  if (text === undefined) return undefined;
  if (!/^-?\d+$/.test(text.trim())) throw new UsageError(`--${flag}: expected an integer, got ${JSON.stringify(text)}`, usage);
  const value = Number(text);
  if (value < min || value > max) throw new UsageError(`--${flag}: must be between ${min} and ${max}, got ${value}`, usage);
  return value;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

export function timeOption(flag: string, text: string | undefined, usage: string): string | undefined {
  if (text === undefined) return undefined;
  if (!RFC3339.test(text) || Number.isNaN(Date.parse(text))) {
    throw new UsageError(`--${flag}: expected an RFC 3339 time such as 2026-10-16T09:00:00Z, got ${JSON.stringify(text)}`, usage);
  }
  return text;
}

/** An http or https URL (an HTTP target's). */
export function httpUrlOption(flag: string, text: string, usage: string): string {
  if (!/^https?:\/\//i.test(text) || !URL.canParse(text))
    throw new UsageError(`--${flag}: expected an http or https URL, got ${JSON.stringify(text)}`, usage);
  return text;
}

export function jsonOption(flag: string, text: string | undefined, usage: string): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--${flag}: not valid JSON (${(err as Error).message})`, usage);
  }
}

export function choiceOption<T extends string>(flag: string, text: string | undefined, choices: readonly T[], usage: string): T | undefined {
  if (text === undefined) return undefined;
  if (!(choices as readonly string[]).includes(text))
    throw new UsageError(`--${flag}: expected one of ${choices.join(", ")}, got ${JSON.stringify(text)}`, usage);
  return text as T;
}
