// The preview of a cron expression: its next fire times in a zone, computed by
// the scheduler's own code (core/cron), with DST gaps and overlaps marked.

import type { PreviewQuery, PreviewResponse } from "@duetime/sdk/contract";
import type { Clock } from "../core/clock.js";
import { CronSyntaxError, fireTimes, isValidTimeZone, parseCron } from "../core/cron/index.js";
import { invalidArgument } from "../core/errors.js";
import { parseRfc3339, toIso } from "../core/time.js";

export class SchedulePreview {
  constructor(private readonly clock: Clock) {}

  async preview(query: PreviewQuery): Promise<PreviewResponse> {
    const tz = query.tz ?? "UTC";
    if (!isValidTimeZone(tz)) throw invalidArgument("tz", `${JSON.stringify(tz)} is not a known IANA time zone`);
    let from = this.clock.now();
    if (query.from !== undefined) {
      const parsed = parseRfc3339(query.from);
      if (parsed === null) throw invalidArgument("from", `${JSON.stringify(query.from)} is not an RFC 3339 time`);
      from = parsed;
    }
    let expr: ReturnType<typeof parseCron>;
    try {
      expr = parseCron(query.cron);
    } catch (err) {
      if (err instanceof CronSyntaxError) throw invalidArgument("cron", err.message, { cronField: err.field, token: err.token });
      throw err;
    }
    const times = fireTimes(expr, tz, from, query.count ?? 10);
    return { times: times.map((t) => toIso(t.at)), local: times.map((t) => t.local), dst: times.map((t) => t.dst ?? null) };
  }
}
