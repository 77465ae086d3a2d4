// Resident memory and CPU time of processes, read from /proc (Linux). The
// harness measures this process with Node's own counters and any child
// process (a `duetime serve`) through /proc/<pid>/stat and /proc/<pid>/status.

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

let ticksPerSecond = 0;
function clockTicks(): number {
  if (!ticksPerSecond) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** User + system CPU time of a process in ms (0 if it is gone). */
export function cpuMs(pid: number): number {
  if (pid === process.pid) {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of the whole line, i.e. 11 and 12 here (0-based).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks();
  } catch {
    return 0;
  }
}

/** Resident set size of a process in bytes (0 if it is gone). */
export function rssBytes(pid: number): number {
  if (pid === process.pid) return process.memoryUsage.rss();
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Pids of processes whose command name starts with one of the prefixes (e.g. "postgres", "redis-server"). */
export function pidsNamed(prefixes: string[]): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = readFileSync(`/proc/${entry}/comm`, "utf8").trim();
      if (prefixes.some((p) => comm.startsWith(p))) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Pids of processes whose command line contains `text` (a PostgreSQL backend shows its database name there). */
export function pidsWithCmdline(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(text)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * CPU time of a set of processes as a sampler: call it again for the CPU they
 * used since. The set is read again at the end: a process born meanwhile
 * counts whole, one that ended meanwhile is left out (its CPU is lost with it).
 */
export function cpuSampler(pids: () => number[]): () => number {
  const start = new Map(pids().map((pid) => [pid, cpuMs(pid)]));
  return () => {
    let used = 0;
    for (const pid of new Set(pids())) {
      const now = cpuMs(pid);
      if (now > 0) used += Math.max(0, now - (start.get(pid) ?? 0));
    }
    return used;
  };
}
