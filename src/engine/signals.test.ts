// ClusterSignals over two real SQLite handles on one file (which hear each
// other within this process): batching, coalescing, ignoring one's own, and
// a resync when the subscription had failed.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { ClusterSignal, Store } from "../store/store.js";
import { EngineEvents } from "./events.js";
import { ClusterSignals } from "./signals.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-signals-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const T0 = Date.parse("2026-03-01T00:00:00Z");

async function pair(): Promise<[Store, Store]> {
  const path = join(dir, `s${files++}.db`);
  return [await openSqliteStore({ path }), await openSqliteStore({ path })];
}

function node(store: Store, nodeId: string, clock = new FakeClock(T0)) {
  const heard: ClusterSignal[] = [];
  let resyncs = 0;
  const errors: unknown[] = [];
  const events = new EngineEvents();
  events.on("error", (e) => errors.push(e.error));
  const signals = new ClusterSignals({
    store,
    clock,
    nodeId,
    events,
    onSignal: (s) => heard.push(s),
    onResync: () => resyncs++,
  });
  return { signals, heard, resyncs: () => resyncs, clock, errors };
}

/** Waits until cond() holds, a turn of the event loop at a time (signals arrive on later turns), for at most 10 s. */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

test("signals sent in one turn go out as one batch; a pool's ready signals keep only the earliest; a node ignores its own", async () => {
  const [sa, sb] = await pair();
  const a = node(sa, "a");
  const b = node(sb, "b");
  await Promise.all([a.signals.start(), b.signals.start()]);
  const events: number[] = [];
  sb.signalSubscribe((e) => "signals" in e && events.push(e.signals.length));
  a.signals.send({ kind: "ready", tenantId: "t1", pool: "p", at: T0 + 500 });
  a.signals.send({ kind: "ready", tenantId: "t1", pool: "p", at: T0 + 100 });
  a.signals.send({ kind: "ready", tenantId: "t1", pool: "q", at: T0 + 300 });
  a.signals.send({ kind: "ready", tenantId: "t1", pool: "p", at: T0 + 200 });
  await until(() => b.heard.length >= 2, "node b to hear node a");
  assert.deepEqual(b.heard, [
    { kind: "ready", tenantId: "t1", pool: "p", at: T0 + 100 },
    { kind: "ready", tenantId: "t1", pool: "q", at: T0 + 300 },
  ]);
  assert.deepEqual(events, [2], "one batch");
  assert.deepEqual(a.heard, [], "a node does not act on its own signals");
  await Promise.all([a.signals.stop(), b.signals.stop()]);
  await Promise.all([sa.close(), sb.close()]);
});

test("a node whose subscription failed subscribes again and resyncs (it may have missed signals)", async () => {
  const [sa, sb] = await pair();
  let failures = 1;
  const flaky = Object.create(sb) as Store;
  flaky.signalSubscribe = async (handler) => {
    if (failures-- > 0) throw new Error("listener connection refused");
    return sb.signalSubscribe(handler);
  };
  const b = node(flaky, "b");
  await b.signals.start();
  assert.equal(b.resyncs(), 0);
  assert.match(String(b.errors[0]), /listener connection refused/, "the failure is reported, not thrown");
  b.clock.advance(1000); // the retry
  await until(() => b.resyncs() === 1, "the resync after subscribing again");
  const a = node(sa, "a");
  await a.signals.start();
  a.signals.send({ kind: "ready", tenantId: "t1", pool: "p", at: T0 });
  await until(() => b.heard.length === 1, "node b to hear node a once subscribed");
  await Promise.all([a.signals.stop(), b.signals.stop()]);
  await Promise.all([sa.close(), sb.close()]);
});
