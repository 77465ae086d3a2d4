// Where the time goes, from a V8 CPU profile: self time by function and by
// file, top N. Profile a benchmark run with
//
//   BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof/server" \
//     node --cpu-prof --cpu-prof-dir=/tmp/prof/bench --import tsx bench/run.ts herd --jobs 100000 --contenders duetime-server --runs 1 --lead 60 --out /tmp/bench
//
// (BENCH_SERVER_NODE_ARGS goes to the `duetime serve` children; Node 20
// refuses --cpu-prof in NODE_OPTIONS), then: node --import tsx bench/profile-summary.ts /tmp/prof/*.cpuprofile [--top 25]
// [--callers NAME]: also split NAME's self time by the nearest caller in src/ or dist/
// (e.g. --callers sqliteTransaction: which store operation's commits cost what),
// passing over wrappers named in --skip (default "tx,(anonymous)").
// [--since NAME]: count only samples from the first one in function NAME on
// (e.g. --since dispatchMany: the herd's drain, from its first dispatch).
// [--after NAME]: count only samples after the last one in function NAME
// (e.g. --after createOne: the herd's drain, once every job is created).
// [--from S] [--to S]: count only samples between S seconds after the
// profile's start and S seconds after it (an idle window between phases).
// [--timeline S]: also print the busy share of every S seconds, to find
// the phases (creation, a rebuild, the idle window between them).

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: "string" },
    callers: { type: "string" },
    skip: { type: "string" },
    since: { type: "string" },
    after: { type: "string" },
    from: { type: "string" },
    to: { type: "string" },
    timeline: { type: "string" },
  },
});
const top = Number(values.top ?? 25);
const ROOT = new URL("../", import.meta.url).href;

function short(url: string): string {
  if (!url) return "(native)";
  return url
    .replace(ROOT, "")
    .replace(/^file:\/\//, "")
    .replace(/.*node_modules\//, "node_modules/");
}

for (const file of positionals) {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  // Self time per node: the time deltas of the samples that landed on it.
  const self = new Map<number, number>();
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  const parentOf = new Map<number, number>();
  for (const node of p.nodes) for (const c of node.children ?? []) parentOf.set(c, node.id);
  const within = (id: number, name: string) => {
    for (let n: number | undefined = id; n !== undefined; n = parentOf.get(n)) if (byId.get(n)!.callFrame.functionName === name) return true;
    return false;
  };
  let from = 0;
  if (values.since) {
    from = samples.findIndex((id) => within(id, values.since!));
    if (from < 0) throw new Error(`no sample in ${values.since}`);
  }
  if (values.after) {
    const last = samples.findLastIndex((id) => within(id, values.after!));
    if (last < 0) throw new Error(`no sample in ${values.after}`);
    from = Math.max(from, last + 1);
  }
  // Each sample's time since the profile's start (ms).
  const at: number[] = [];
  let clock = 0;
  for (let i = 0; i < samples.length; i++) at.push((clock += (deltas[i] ?? 0) / 1000));
  const fromMs = values.from === undefined ? -Infinity : Number(values.from) * 1000;
  const toMs = values.to === undefined ? Infinity : Number(values.to) * 1000;
  const isIdle = (id: number) => byId.get(id)!.callFrame.functionName === "(idle)";
  if (values.timeline) {
    const bucketMs = Number(values.timeline) * 1000;
    const busyIn = new Map<number, number>();
    for (let i = 0; i < samples.length; i++) {
      if (isIdle(samples[i]!)) continue;
      const b = Math.floor(at[i]! / bucketMs);
      busyIn.set(b, (busyIn.get(b) ?? 0) + (deltas[i] ?? 0) / 1000);
    }
    const last = Math.floor(clock / bucketMs);
    const lines: string[] = [];
    for (let b = 0; b <= last; b++)
      lines.push(`${String(b * Number(values.timeline)).padStart(6)} s ${(((busyIn.get(b) ?? 0) / bucketMs) * 100).toFixed(1).padStart(6)}%`);
    console.log(`\n== ${file}: busy share per ${values.timeline} s\n${lines.join("\n")}`);
  }
  let total = 0;
  for (let i = from; i < samples.length; i++) {
    if (at[i]! < fromMs || at[i]! >= toMs) continue;
    const ms = (deltas[i] ?? 0) / 1000;
    total += ms;
    self.set(samples[i]!, (self.get(samples[i]!) ?? 0) + ms);
  }
  let idle = 0;
  const fns = new Map<string, number>();
  const files = new Map<string, number>();
  for (const [id, ms] of self) {
    const n = byId.get(id)!;
    const { functionName, url, lineNumber } = n.callFrame;
    if (functionName === "(idle)") {
      idle += ms;
      continue;
    }
    const key = `${functionName || "(anonymous)"}  ${short(url)}${url ? `:${lineNumber + 1}` : ""}`;
    fns.set(key, (fns.get(key) ?? 0) + ms);
    const f = url ? short(url) : functionName;
    files.set(f, (files.get(f) ?? 0) + ms);
  }
  const busy = total - idle;
  const callers = new Map<string, number>();
  if (values.callers) {
    const parent = parentOf;
    for (const [id, ms] of self) {
      if (byId.get(id)!.callFrame.functionName !== values.callers) continue;
      let up = parent.get(id);
      const skip = new Set((values.skip ?? "tx,(anonymous)").split(","));
      const wrapper = (n: ProfileNode) => !/\/(src|dist)\//.test(n.callFrame.url) || skip.has(n.callFrame.functionName || "(anonymous)");
      while (up !== undefined && wrapper(byId.get(up)!)) up = parent.get(up);
      const key =
        up === undefined
          ? "(no caller in src/ or dist/)"
          : `${byId.get(up)!.callFrame.functionName || "(anonymous)"}  ${short(byId.get(up)!.callFrame.url)}`;
      callers.set(key, (callers.get(key) ?? 0) + ms);
    }
  }
  const table = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, ms]) => `${ms.toFixed(0).padStart(8)} ms ${((ms / busy) * 100).toFixed(1).padStart(5)}%  ${k}`)
      .join("\n");
  console.log(`\n== ${file}: ${total.toFixed(0)} ms profiled, ${busy.toFixed(0)} ms busy (${((busy / total) * 100).toFixed(0)}%)`);
  console.log(`-- self time by function (share of busy time)\n${table(fns)}`);
  console.log(`-- self time by file\n${table(files)}`);
  if (values.callers) console.log(`-- self time of ${values.callers} by nearest caller in src/ or dist/\n${table(callers)}`);
}
