// The short seeded fuzz run of `npm test` (test/fuzz/): about 60 s of hostile
// HTTP and raw-socket requests against a real `duetime serve` child. The
// seed is fixed so a red run replays; DUETIME_FUZZ_SECONDS and
// DUETIME_FUZZ_SEED change the length and the seed. Longer runs:
// `npm run fuzz -- --seconds N`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { formatReport, runFuzz } from "./fuzz/fuzz.js";

const seconds = Number(process.env.DUETIME_FUZZ_SECONDS ?? 60);
const seed = Number(process.env.DUETIME_FUZZ_SEED ?? 20261016);

test(`fuzz: ${seconds} s of hostile requests (seed ${seed}): no 5xx, every 4xx an envelope, answers within 2 s, RSS under 512 MiB, known jobs unchanged`, async () => {
  const report = await runFuzz({ seconds, seed });
  const summary = formatReport(report);
  console.log(summary);
  assert.equal(report.failures.length, 0, summary);
});
