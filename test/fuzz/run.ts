// `npm run fuzz -- --seconds N [--seed S] [--path P]`: the long fuzz run.
// Prints each new kind of failure as it is found, then the summary; exits 1
// when anything failed. --path replays the one case a failure names.

import { parseArgs } from "node:util";
import { formatReport, runFuzz } from "./fuzz.js";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "60" },
    seed: { type: "string" },
    path: { type: "string" },
    "slow-connections": { type: "string", default: "500" },
  },
});

const seconds = Number(values.seconds);
const seed = values.seed !== undefined ? Number(values.seed) : Date.now() % 2 ** 31;
const slow = Number(values["slow-connections"]);
if (!Number.isFinite(seconds) || seconds <= 0 || !Number.isInteger(seed) || !Number.isInteger(slow) || slow < 0) {
  console.error("usage: npm run fuzz -- --seconds N [--seed S] [--path P] [--slow-connections N]");
  process.exit(2);
}

const report = await runFuzz({
  seconds,
  seed,
  slowConnections: slow,
  ...(values.path !== undefined ? { path: values.path } : {}),
  log: (line) => console.log(line),
});
console.log(formatReport(report));
process.exit(report.failures.length > 0 ? 1 : 0);
