// A recurring job in a zone with daylight saving time: "every day at 01:30
// London time". On the spring-forward night 01:30 does not exist in London
// (clocks jump from 01:00 to 02:00); on the fall-back night it happens twice.
// Preview first (the scheduler's own code answers), then create the job with
// the DST policy you chose. Runs on an embedded engine with a temporary store.
//
//   npx tsx examples/cron-dst.ts

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDuetime } from "duetime/embedded";

const dir = mkdtempSync(join(tmpdir(), "duetime-cron-dst-"));
const duetime = await createDuetime({ store: `sqlite:${join(dir, "jobs.db")}` });
try {
  for (const from of ["2027-03-26T00:00:00Z", "2027-10-29T00:00:00Z"]) {
    const preview = await duetime.client.previewSchedule({ cron: "30 1 * * *", tz: "Europe/London", from, count: 4 });
    preview.times.forEach((utc, i) => {
      const note = {
        gap: "  (gap: 01:30 does not exist that night; by default it runs when the gap ends)",
        overlap: "  (overlap: 01:30 happens twice that night)",
      };
      const dst = preview.dst?.[i];
      console.log(`${preview.local?.[i]} London = ${utc}${dst ? note[dst] : ""}`);
    });
  }

  // gap "skip": no run on the spring-forward night (the default runs it at 02:00, when the gap ends);
  // overlap "first": one run on the fall-back night (the default), at the first 01:30.
  const job = await duetime.client.createJob({
    name: "nightly-report",
    target: { type: "queue", pool: "reports" },
    schedule: { cron: "30 1 * * *", tz: "Europe/London", dst: { gap: "skip", overlap: "first" } },
  });
  console.log(`created ${job.jobId}; next run ${job.nextRunAt} (${job.nextRunAtLocal})`);
} finally {
  await duetime.stop();
  rmSync(dir, { recursive: true, force: true });
}
