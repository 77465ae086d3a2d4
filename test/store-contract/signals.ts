// The store contract, in part (index.ts runs the parts in order).
// Signals between nodes (store.ts, "signals between nodes"): signalPublish and
// signalSubscribe across two handles.

import assert from "node:assert/strict";
import { describe } from "node:test";

import type { ClusterSignal, Store } from "../../src/store/store.js";
import { T0, SECOND, CRON_SCHEDULE, newJob, entryOf, type ContractTests } from "./support.js";

export function signalsContract({ pairTest }: ContractTests): void {
  describe("signals (two handles on one database)", () => {
    const dueSignal = (i: number): ClusterSignal => {
      const nj = newJob({ kind: "cron", schedule: CRON_SCHEDULE, due: { scheduledFor: T0 + i * SECOND, dueAt: T0 + i * SECOND } });
      return { kind: "due", entry: { ...entryOf(nj), schedule: CRON_SCHEDULE } };
    };

    pairTest("a batch published on one handle reaches the subscribers of both, whole, in order, with its sender", async (a, b) => {
      const onA = collectSignals(a);
      const onB = collectSignals(b);
      await Promise.all([onA.ready, onB.ready]);
      const sent: ClusterSignal[] = [dueSignal(1), { kind: "ready", tenantId: "t1", pool: "p1", at: T0 }, dueSignal(2)];
      await a.signalPublish({ from: "node-a", signals: sent });
      for (const heard of [await onA.until(3), await onB.until(3)])
        assert.deepEqual(
          heard,
          sent.map((signal) => ({ from: "node-a", signal })),
        );
      await Promise.all([onA.stop(), onB.stop()]);
    });

    pairTest("a batch larger than one notification arrives whole and in order", async (a, b) => {
      const onB = collectSignals(b);
      await onB.ready;
      const sent = Array.from({ length: 300 }, (_, i) => dueSignal(i)); // about 100 KB of JSON
      await a.signalPublish({ from: "node-a", signals: sent });
      assert.deepEqual(
        await onB.until(sent.length),
        sent.map((signal) => ({ from: "node-a", signal })),
      );
      await onB.stop();
    });

    pairTest("an unsubscribed handler hears nothing more", async (a, b) => {
      const gone = collectSignals(b);
      const stays = collectSignals(b);
      await Promise.all([gone.ready, stays.ready]);
      await gone.stop();
      await a.signalPublish({ from: "node-a", signals: [dueSignal(1)] });
      assert.equal((await stays.until(1)).length, 1, "the batch reached handle b");
      await stays.stop();
      assert.deepEqual(gone.heard, []);
    });
  });
}

/** Records what a handle's subscription hears; until(n) waits (up to 10 s) for n signals. */
function collectSignals(store: Store): {
  ready: Promise<unknown>;
  heard: { from: string; signal: ClusterSignal }[];
  until(n: number): Promise<{ from: string; signal: ClusterSignal }[]>;
  stop(): Promise<void>;
} {
  const heard: { from: string; signal: ClusterSignal }[] = [];
  let wake = (): void => undefined;
  const subscribed = store.signalSubscribe((event) => {
    if ("resync" in event) return;
    for (const signal of event.signals) heard.push({ from: event.from, signal });
    wake();
  });
  return {
    ready: subscribed,
    heard,
    async until(n) {
      const deadline = Date.now() + 10_000;
      while (heard.length < n) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`heard ${heard.length} of ${n} signals in 10 s`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      return heard.slice(0, n);
    },
    async stop() {
      await (await subscribed)();
    },
  };
}
