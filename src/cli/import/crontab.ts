// `duetime import crontab FILE`: a user crontab (crontab -l) or a system one
// (/etc/crontab, /etc/cron.d/*, with a user column) as duetime jobs, read the
// way cronie reads it (man 5 crontab). Pure: see plan.ts.

import type { CronSchedule } from "@duetime/sdk/contract";
import { LIMITS } from "../../core/schemas.js";
import {
  compact,
  cronProblem,
  DEFAULT_IMPORT_MODE,
  fileBasename,
  type ImportOptions,
  type ImportPlan,
  keyMaker,
  shorten,
  storableProblem,
  zoneProblem,
} from "./plan.js";

export interface CrontabOptions extends ImportOptions {
  /** /etc/crontab or /etc/cron.d format: a user column after the time fields (or the macro). */
  system?: boolean;
  /** The zone the crontab's host ran in: schedules are read in it unless CRON_TZ= says otherwise. Default "UTC". */
  defaultTz?: string;
}

/** What a crontab job's payload holds: the command as cron would run it. */
export interface CrontabPayload {
  source: "crontab";
  file: string;
  line: number;
  /** The command up to the first unescaped %, with \% made %. */
  command: string;
  /** The text after the first unescaped %, each further unescaped % a newline: the command's standard input. */
  stdin?: string;
  /** The user column of a system crontab. */
  user?: string;
  /** MAILTO= in effect ("" = mail nothing). */
  mailto?: string;
  /** Every other variable in effect (TZ, SHELL, PATH, ...), as cron sets it for the command. */
  env?: Record<string, string>;
}

/** `NAME=value`, `NAME = "value"`: a variable for the lines after it. */
const ENV_LINE = /^([^\s=]+)\s*=(.*)$/;
/** A user name as useradd allows it (a trailing $ for machine accounts). */
const USER_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*\$?$/;
/** A token that reads as a cron time field (a 6th one means a seconds-first schedule). */
const TIME_FIELD = /^(?:[0-9*?][0-9*?,/#LlWw-]*|(?:sun|mon|tue|wed|thu|fri|sat)(?:[-,](?:sun|mon|tue|wed|thu|fri|sat))*)$/i;

const REBOOT = "@reboot runs at boot; duetime has no boot event: start it from your service manager (e.g. a systemd unit) instead";

/** Parses a crontab into a plan: one job per schedule line, a refusal for every line that cannot be one. */
export function planCrontab(text: string, options: CrontabOptions): ImportPlan {
  const plan: ImportPlan = { jobs: [], refused: [] };
  const file = options.file;
  const base = fileBasename(file) || "crontab";
  const mode = options.mode ?? DEFAULT_IMPORT_MODE;
  const defaultTz = options.defaultTz ?? "UTC";
  const nextKey = keyMaker();

  let cronTz: { tz: string; line: number } | null = null;
  let mailto: string | undefined;
  const env: Record<string, string> = {};

  const lines = text.split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const line = index + 1;
    const source = `${file || "crontab"}:${line}`;
    const refuse = (reason: string) => void plan.refused.push({ source, reason });
    const body = raw.trimStart();
    if (body === "" || body.startsWith("#")) continue;

    const assignment = ENV_LINE.exec(body);
    if (assignment !== null) {
      const name = assignment[1]!;
      const value = unquote(assignment[2]!.trim());
      if (name === "CRON_TZ") cronTz = value === "" ? null : { tz: value, line };
      else if (name === "MAILTO") mailto = value;
      else env[name] = value;
      continue;
    }

    const entry = splitEntry(body, options.system === true);
    if ("problem" in entry) {
      refuse(entry.problem);
      continue;
    }
    const { cron, rest, user, warnings } = entry;

    const { command, stdin } = splitPercent(rest);
    if (command.trim() === "") {
      refuse(
        stdin === undefined
          ? "no command after the schedule"
          : "the command is empty: everything after the first unescaped % is the command's input (write \\% for a literal %)",
      );
      continue;
    }

    const tz = cronTz?.tz ?? defaultTz;
    const problems = [cronProblem(cron), zoneProblem(tz, cronTz !== null ? `CRON_TZ= on line ${cronTz.line}` : "the crontab's default zone")];
    if (cronTz === null && env.TZ !== undefined) {
      warnings.push(`TZ= sets the command's environment, not the schedule's zone (cronie); the schedule is read in ${tz}; add CRON_TZ= to change it`);
    }

    const payload: CrontabPayload = compact({
      source: "crontab" as const,
      file,
      line,
      command,
      stdin,
      user,
      mailto,
      env: Object.keys(env).length > 0 ? { ...env } : undefined,
    });
    problems.push(storableProblem(payload, "the line"));
    const found = problems.filter((p): p is string => p !== null);
    if (found.length > 0) {
      refuse(found.join("; "));
      continue;
    }

    const schedule: CronSchedule = { cron, tz, misfire: "skip", overlap: "allow" };
    // cron runs a command once per time and never again when it fails.
    const retry = { maxAttempts: 1 };
    const { file: _file, line: _line, ...keyed } = payload;
    plan.jobs.push({
      source,
      job: {
        name: shorten(`${base}:${line} ${command}`, LIMITS.nameMaxLength),
        target: options.target,
        payload,
        schedule,
        retry,
        mode,
        idempotencyKey: nextKey({ kind: "crontab", file: base, identity: null, schedule, payload: keyed, target: options.target, retry }),
      },
      warnings,
    });
  }
  return plan;
}

/** A value as cron reads it: one pair of matching quotes around it is removed. */
function unquote(value: string): string {
  const q = value[0];
  if (value.length >= 2 && (q === '"' || q === "'") && value.endsWith(q)) return value.slice(1, -1);
  return value;
}

type Entry = { cron: string; rest: string; user?: string; warnings: string[] } | { problem: string };

/** Splits a schedule line into its cron expression, user (system crontabs) and the rest (the command). */
function splitEntry(body: string, system: boolean): Entry {
  const tokens = [...body.matchAll(/\S+/g)];
  const tokenText = (i: number) => tokens[i]?.[0];
  const warnings: string[] = [];
  let cron: string;
  let used: number;
  const first = tokenText(0)!;
  if (first.startsWith("@")) {
    if (first.toLowerCase() === "@reboot") return { problem: REBOOT };
    cron = first;
    used = 1;
  } else {
    if (tokens.length < 5) {
      return {
        problem: `has ${tokens.length} field${tokens.length === 1 ? "" : "s"}; a crontab line needs 5 time fields (minute hour day-of-month month day-of-week) and then ${system ? "a user and " : ""}a command`,
      };
    }
    cron = tokens
      .slice(0, 5)
      .map((t) => t[0])
      .join(" ");
    used = 5;
    const sixth = tokenText(5);
    if (sixth !== undefined && TIME_FIELD.test(sixth) && tokens.length > 6 && cronProblem(`${cron} ${sixth}`) === null) {
      const six = `${cron} ${sixth}`;
      const rest = body.slice(tokens[6]!.index);
      warnings.push(
        `6 time fields: read as duetime's seconds-first cron ${JSON.stringify(six)}; classic cron reads only 5 and would run ${JSON.stringify(`${sixth} ${rest}`)} as the command`,
      );
      cron = six;
      used = 6;
    }
  }
  let user: string | undefined;
  if (system) {
    user = tokenText(used);
    if (user === undefined) return { problem: "no user: in a system crontab (/etc/crontab, /etc/cron.d) the user comes after the schedule" };
    if (!USER_NAME.test(user)) {
      return {
        problem: `${JSON.stringify(user)} is not a user name: in a system crontab (/etc/crontab, /etc/cron.d) the user comes after the schedule, as in "0 5 * * * root /usr/local/bin/backup"`,
      };
    }
    used += 1;
  }
  const next = tokens[used];
  return { cron, rest: next === undefined ? "" : body.slice(next.index), user, warnings };
}

/**
 * man 5 crontab, as cronie's do_command does it: the first unescaped % ends
 * the command and the rest is its standard input, where each unescaped % is a
 * newline; `\%` is a literal % (the backslash goes); other backslashes stay.
 */
export function splitPercent(text: string): { command: string; stdin?: string } {
  let command = "";
  let escaped = false;
  let i = 0;
  for (; i < text.length; i++) {
    const ch = text[i]!;
    if (escaped) {
      command = ch === "%" ? `${command.slice(0, -1)}%` : command + ch;
      escaped = false;
    } else if (ch === "%") {
      break;
    } else {
      command += ch;
      escaped = ch === "\\";
    }
  }
  if (i >= text.length) return { command };
  let stdin = "";
  escaped = false;
  for (const c of text.slice(i + 1)) {
    let ch = c;
    if (escaped) {
      if (ch !== "%") stdin += "\\";
    } else if (ch === "%") {
      ch = "\n";
    }
    escaped = ch === "\\";
    if (!escaped) stdin += ch;
  }
  if (escaped) stdin += "\\";
  return { command, stdin };
}
