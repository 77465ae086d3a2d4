import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AckItem, CompleteItem, FailItem } from "./api.js";
import { AckBuffer, type AckSink } from "./acks.js";
import { coerceError, NonRetryableError, ThrottledError } from "./errors.js";

/** A sink that records batches and resolves waiters when a batch arrives. */
class RecordingSink implements AckSink {
  batches: { kind: "complete" | "fail"; items: (CompleteItem | FailItem)[] }[] = [];
  failNext = 0;
  private waiters: (() => void)[] = [];

  async completeMany(items: CompleteItem[]): Promise<AckItem[]> {
    return this.record("complete", items);
  }
  async failMany(items: FailItem[]): Promise<AckItem[]> {
    return this.record("fail", items);
  }
  sent(): number {
    return this.batches.reduce((n, b) => n + b.items.length, 0);
  }
  async until(pred: () => boolean): Promise<void> {
    const timeout = AbortSignal.timeout(5_000);
    while (!pred()) {
      if (timeout.aborted) throw new Error("timed out waiting for acks");
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        timeout.addEventListener("abort", () => resolve(), { once: true });
      });
    }
  }
  /** Wakes until() to re-check its condition. */
  wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    queueMicrotask(() => {
      for (const w of waiters) w();
    });
  }
  private record(kind: "complete" | "fail", items: (CompleteItem | FailItem)[]): AckItem[] {
    this.wake();
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error("sink down");
    }
    this.batches.push({ kind, items });
    return items.map((i) => ({ executionId: i.executionId, attempt: i.attempt, status: 200, state: kind === "complete" ? "SUCCEEDED" : "FAILED" }));
  }
}

const c = (n: number): CompleteItem => ({ executionId: `e${n}`, attempt: 1 });
const f = (n: number): FailItem => ({ executionId: `e${n}`, attempt: 1, error: { message: "boom" } });

describe("AckBuffer", () => {
  test("acks added together go out in one batch call per kind after the delay", async () => {
    const sink = new RecordingSink();
    const answers: AckItem[] = [];
    const acks = new AckBuffer({
      sink,
      delayMs: 10,
      maxBatch: 100,
      onAnswers: (_s, a) => {
        answers.push(...a);
        sink.wake();
      },
    });
    for (let i = 0; i < 30; i++) acks.addComplete(c(i));
    acks.addFail(f(99));
    await sink.until(() => answers.length === 31);
    assert.equal(sink.batches.length, 2);
    assert.equal(answers.length, 31);
    assert.equal(acks.size, 0);
  });

  test("maxBatch sends at once; take() hands acks to a lease call and restore() puts them back first", async () => {
    const sink = new RecordingSink();
    const acks = new AckBuffer({ sink, delayMs: 60_000, maxBatch: 5 });
    for (let i = 0; i < 5; i++) acks.addComplete(c(i));
    await sink.until(() => sink.sent() === 5);

    acks.hold();
    for (let i = 5; i < 12; i++) acks.addComplete(c(i));
    assert.equal(sink.sent(), 5, "held: nothing is sent");
    const taken = acks.take(4);
    assert.deepEqual(
      taken.complete.map((x) => x.executionId),
      ["e5", "e6", "e7", "e8"],
    );
    acks.restore(taken);
    assert.deepEqual(
      acks.take().complete.map((x) => x.executionId),
      ["e5", "e6", "e7", "e8", "e9", "e10", "e11"],
    );
  });

  test("a failed batch call is retried with backoff; drain() sends everything", async () => {
    const sink = new RecordingSink();
    sink.failNext = 2;
    const errors: unknown[] = [];
    const acks = new AckBuffer({
      sink,
      delayMs: 1,
      maxBatch: 100,
      backoff: { baseMs: 5, maxMs: 10 },
      onError: (e) => {
        errors.push(e);
        sink.wake();
      },
    });
    acks.addComplete(c(1));
    acks.addComplete(c(2));
    await sink.until(() => sink.sent() === 2 && errors.length === 2);
    acks.addFail(f(3));
    assert.equal(await acks.drain(), true);
    assert.equal(sink.sent(), 3);
  });

  test("drain() gives up after its attempts and reports what is left", async () => {
    const sink = new RecordingSink();
    sink.failNext = 100;
    const acks = new AckBuffer({ sink, delayMs: 1, maxBatch: 100, backoff: { baseMs: 1, maxMs: 2 } });
    acks.hold();
    acks.addComplete(c(1));
    assert.equal(await acks.drain(2), false);
    assert.equal(acks.size, 1);
  });
});

test("AckBuffer survives a sink that throws synchronously", async () => {
  let calls = 0;
  const sent: string[] = [];
  const acks = new AckBuffer({
    delayMs: 1,
    maxBatch: 100,
    backoff: { baseMs: 1, maxMs: 2 },
    sink: {
      completeMany(items) {
        if (++calls === 1) throw new Error("sync throw");
        sent.push(...items.map((i) => i.executionId));
        return Promise.resolve([]);
      },
      failMany: () => Promise.resolve([]),
    },
  });
  acks.hold();
  acks.addComplete(c(1));
  assert.equal(await acks.drain(3), true);
  assert.deepEqual(sent, ["e1"]);
});

describe("coerceError", () => {
  test("classifies what handlers throw", () => {
    assert.deepEqual(coerceError(new Error("boom")), { message: "boom", class: "transient" });
    assert.deepEqual(coerceError(new TypeError("bad")), { message: "bad", class: "transient", name: "TypeError" });
    assert.deepEqual(coerceError(new NonRetryableError("no")), { message: "no", class: "permanent", name: "NonRetryableError" });
    assert.deepEqual(coerceError(new ThrottledError("later", 7)), {
      message: "later",
      class: "throttled",
      retryAfterSeconds: 7,
      name: "ThrottledError",
    });
    assert.deepEqual(coerceError("plain"), { message: "plain", class: "transient" });
    assert.deepEqual(coerceError({ a: 1 }), { message: 'non-error thrown: {"a":1}', class: "transient" });
    assert.deepEqual(coerceError(undefined), { message: "non-error thrown: undefined", class: "transient" });
    assert.equal(coerceError(new Error("x".repeat(5000))).message.length, 2000);
    // another copy of the SDK: recognised by shape
    const foreign = Object.assign(new Error("nope"), { nonRetryable: true });
    assert.equal(coerceError(foreign).class, "permanent");
    assert.throws(() => new ThrottledError("x", -1), RangeError);
  });
});
