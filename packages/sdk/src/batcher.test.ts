// The one Batcher, on a fake clock: items share a send after the delay, a
// send carries at most maxSend, a failed send puts back only what keep()
// keeps and tries again after retryDelayMs, and close() drops everything.
// (Its users' behaviour is tested with them: AckBuffer in acks.test.ts, the
// engine's acknowledgements and releases in the HTTP-target tests.)

import assert from "node:assert/strict";
import { test } from "node:test";
import { FakeClock } from "../../../src/core/clock.js";
import { Batcher, type SendFailure } from "./batcher.js";

/** Lets the microtasks of a send finish. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function recording(clock: FakeClock, opts: { failNext?: number; keep?: (n: number) => boolean; maxSend?: number } = {}) {
  const sends: number[][] = [];
  const errors: { count: number; retryInMs: number }[] = [];
  let failNext = opts.failNext ?? 0;
  const batcher = new Batcher<number>({
    send: async (batch): Promise<SendFailure<number> | undefined> => {
      if (failNext > 0) {
        failNext--;
        throw new Error("store down");
      }
      sends.push(batch);
      return undefined;
    },
    delayMs: 10,
    maxBatch: 100,
    ...(opts.maxSend ? { maxSend: opts.maxSend } : {}),
    clock,
    ...(opts.keep ? { keep: opts.keep } : {}),
    retryDelayMs: () => 500,
    onError: (_error, count, retryInMs) => errors.push({ count, retryInMs }),
  });
  return { batcher, sends, errors };
}

test("items added together share one send after the delay; a send carries at most maxSend", async () => {
  const clock = new FakeClock();
  const { batcher, sends } = recording(clock, { maxSend: 3 });
  for (const n of [1, 2, 3, 4, 5]) batcher.add(n);
  clock.advance(9);
  await settle();
  assert.deepEqual(sends, []);
  clock.advance(1);
  await settle();
  assert.deepEqual(sends, [
    [1, 2, 3],
    [4, 5],
  ]);
});

test("a failed send puts back what keep() keeps, ahead of newer items, and tries again after retryDelayMs", async () => {
  const clock = new FakeClock();
  const { batcher, sends, errors } = recording(clock, { failNext: 1, keep: (n) => n % 2 === 1 });
  for (const n of [1, 2, 3]) batcher.add(n);
  clock.advance(10);
  await settle();
  assert.deepEqual(errors, [{ count: 2, retryInMs: 500 }]);
  batcher.add(4);
  clock.advance(499);
  await settle();
  assert.deepEqual(sends, [], "nothing goes before the retry delay");
  clock.advance(1);
  await settle();
  assert.deepEqual(sends, [[1, 3, 4]]);
});

test("held, the timer sends nothing and take() hands the items over; close() drops them and refuses more", async () => {
  const clock = new FakeClock();
  const { batcher, sends } = recording(clock);
  batcher.hold();
  batcher.add(1);
  batcher.add(2);
  clock.advance(1_000);
  await settle();
  assert.deepEqual(sends, []);
  assert.deepEqual(batcher.take(), [1, 2]);
  batcher.restore([7]);
  batcher.close();
  batcher.add(8);
  assert.equal(batcher.size, 0);
  await batcher.flush();
  assert.deepEqual(sends, []);
});
