// Where the time goes, from a V8 CPU profile: self time by function and by
// file, top N. Profile a benchmark run with
//
//   NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench -- herd --jobs 100000 --contenders duetime-server --runs 1 --out /tmp/bench
//
// (NODE_OPTIONS reaches the `duetime serve` child too: one profile per
// process), then: node --import tsx bench/profile-summary.ts /tmp/prof/*.cpuprofile [--top 25]

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

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: "string" } } });
const top = Number(values.top ?? 25);
const ROOT = new URL("../", import.meta.url).href;

function short(url: string): string {
  if (!url) return "(native)";
  return url.replace(ROOT, "").replace(/^file:\/\//, "").replace(/.*node_modules\//, "node_modules/");
}

for (const file of positionals) {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  // Self time per node: the time deltas of the samples that landed on it.
  const self = new Map<number, number>();
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) self.set(samples[i]!, (self.get(samples[i]!) ?? 0) + (deltas[i] ?? 0) / 1000);
  const total = (p.endTime - p.startTime) / 1000;
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
  const table = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, ms]) => `${ms.toFixed(0).padStart(8)} ms ${((ms / busy) * 100).toFixed(1).padStart(5)}%  ${k}`)
      .join("\n");
  console.log(`\n== ${file}: ${total.toFixed(0)} ms profiled, ${busy.toFixed(0)} ms busy (${((busy / total) * 100).toFixed(0)}%)`);
  console.log(`-- self time by function (share of busy time)\n${table(fns)}`);
  console.log(`-- self time by file\n${table(files)}`);
}
