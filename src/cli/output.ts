// Human output of the CLI: compact tables and lines, times in UTC ISO.
// With --json the commands print the API's JSON instead (see Printer.json).

import { isValidTimeZone } from "../core/cron/index.js";
import { localTime } from "../core/schedule.js";

export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Reads a file ("-" is standard input). */
  readFile(path: string): Promise<string>;
}

export class Printer {
  constructor(
    private readonly io: Io,
    readonly jsonMode: boolean,
  ) {}

  /** Machine output: the API's JSON on one line. */
  json(value: unknown): void {
    this.io.stdout(`${JSON.stringify(value)}\n`);
  }

  line(text = ""): void {
    this.io.stdout(`${text}\n`);
  }

  /** A warning for people, on standard error (so it never mixes with --json output). */
  warn(text: string): void {
    this.io.stderr(`${text}\n`);
  }

  /** Prints a value as JSON in --json mode, or calls human() otherwise. */
  either(value: unknown, human: () => void): void {
    if (this.jsonMode) this.json(value);
    else human();
  }

  table(headers: string[], rows: string[][]): void {
    const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
    const render = (cells: string[]): string =>
      cells
        .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
        .join("  ")
        .trimEnd();
    this.line(render(headers));
    for (const row of rows) this.line(render(row));
  }

  /** "key: value" lines with aligned values. */
  fields(pairs: [string, string][]): void {
    const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
    for (const [key, value] of pairs) this.line(`${`${key}:`.padEnd(width)} ${value}`);
  }
}

/** An RFC 3339 time as UTC ISO with milliseconds; "-" for null; unparsable text as is. */
export function utc(time: string | null | undefined): string {
  if (time === null || time === undefined) return "-";
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? time : new Date(ms).toISOString();
}

/** Shortens text to one line of at most max characters. */
export function oneLine(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/**
 * An RFC 3339 time as wall time in an IANA zone with its offset then,
 * "2026-10-16T10:00:00+01:00"; "-" for null; unparsable text (or an unknown
 * zone) falls back to utc(). The scheduler's own zone code does the work.
 */
export function zoned(time: string | null | undefined, tz: string): string {
  if (time === null || time === undefined) return "-";
  const ms = Date.parse(time);
  if (Number.isNaN(ms)) return time;
  if (!isValidTimeZone(tz)) return utc(time);
  return localTime(ms, tz).replace(/\[.*\]$/, "");
}
