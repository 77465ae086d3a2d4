// The per-minute history's counting (workload-history.ts) on a real SQLite
// store and a fake clock: events are summed per minute, tenant and pool; a
// failed write keeps what it held for the next one, once, without losing or
// doubling a count.

import assert from "node:assert/strict";
import { test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { Store } from "../store/store.js";
import { EngineEvents } from "./events.js";
import { WorkloadHistory } from "./workload-history.js";

const T0 = Date.parse("2026-03-01T10:00:00Z");

function leased(events: EngineEvents, tenantId: string, pool: string, startLagMs: number): void {
  events.emit("execution:leased", { jobId: "j", executionId: "j-1", tenantId, pool, attempt: 1, retry: false, startLagMs });
}

test("counts per minute, tenant and pool; a write that fails is retried with what came since, each event counted once", async () => {
  const store = await openSqliteStore({ path: ":memory:" });
  let failNext = false;
  const flaky: Store = Object.create(store, {
    workloadAdd: {
      value: async (p: Parameters<Store["workloadAdd"]>[0]) => {
        if (failNext) {
          failNext = false;
          throw new Error("store down");
        }
        return store.workloadAdd(p);
      },
    },
  });
  const clock = new FakeClock(T0);
  const events = new EngineEvents();
  const errors: unknown[] = [];
  events.on("error", ({ error }) => errors.push(error));
  const history = new WorkloadHistory({ store: flaky, clock, events, flushMs: 1000 });
  try {
    history.start();
    leased(events, "a", "p", 5);
    leased(events, "a", "p", 30);
    leased(events, "b", "p", 5);
    events.emit("execution:succeeded", { jobId: "j", executionId: "j-1", tenantId: "a", attempt: 1, pool: "p" });
    failNext = true;
    clock.advance(1000);
    await new Promise((r) => setImmediate(r));
    assert.equal(errors.length, 1, "the failed write is reported");
    leased(events, "a", "p", 5);
    events.emit("execution:failed", { jobId: "j", executionId: "j-1", tenantId: "a", attempt: 1, pool: "p", state: "DEAD" });
    // The next minute: a row of its own.
    clock.advance(60_000 - 1000);
    leased(events, "a", "p", 5000);
    await history.stop();
    const rows = await store.workloadMinutes({ from: T0 });
    const counts = rows.map((r) => [r.minute - T0, r.tenantId, r.pool, r.started, r.succeeded, r.failed, r.dead, r.lag.reduce((x, y) => x + y, 0)]);
    assert.deepEqual(counts, [
      [0, "a", "p", 3, 1, 1, 1, 3],
      [0, "b", "p", 1, 0, 0, 0, 1],
      [60_000, "a", "p", 1, 0, 0, 0, 1],
    ]);
    assert.deepEqual(rows[0]!.lag.slice(0, 3), [2, 0, 1], "lags of 5, 5 and 30 ms in their buckets");
  } finally {
    await store.close();
  }
});
