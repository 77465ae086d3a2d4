import assert from "node:assert/strict";
import { test } from "node:test";
import { CircuitBreaker } from "./circuit-breaker.js";
import { TokenBucket } from "../core/token-bucket.js";
import { OriginLimits } from "./origin-limits.js";

const call = (b: CircuitBreaker, now: number) => {
  const p = b.permit(now);
  assert.notEqual(p.kind, "wait", `expected a permit at ${now}`);
  return (p as { generation: number }).generation;
};

test("opens after the threshold of consecutive failures; a success in between resets the count", () => {
  const b = new CircuitBreaker({ failureThreshold: 3, openSeconds: 5, maxOpenSeconds: 20 });
  for (const health of ["unhealthy", "unhealthy", "healthy", "unhealthy", "unhealthy"] as const) b.record(call(b, 0), health, 0);
  assert.equal(b.snapshot(0).state, "closed");
  assert.equal(b.record(call(b, 0), "unhealthy", 1000), "open");
  assert.deepEqual(b.permit(2000), { kind: "wait", until: 6000 });
  assert.equal(b.snapshot(2000).openUntil, 6000);
});

test("half-open grants exactly one probe; a failed probe reopens for twice as long, capped; a good one closes", () => {
  const b = new CircuitBreaker({ failureThreshold: 1, openSeconds: 5, maxOpenSeconds: 12 });
  b.record(call(b, 0), "unhealthy", 0); // open until 5000
  const probe = b.permit(5000);
  assert.equal(probe.kind, "probe");
  assert.deepEqual(b.permit(5001), { kind: "wait", until: null });
  assert.equal(b.record((probe as { generation: number }).generation, "unhealthy", 5100), "open");
  assert.equal(b.snapshot(5100).openUntil, 15_100); // 10 s
  const p2 = b.permit(15_100);
  assert.equal(b.record((p2 as { generation: number }).generation, "unhealthy", 15_100), "open");
  assert.equal(b.snapshot(15_100).openUntil, 27_100); // 20 s capped at 12 s
  const p3 = b.permit(27_100);
  assert.equal(b.record((p3 as { generation: number }).generation, "healthy", 27_200), "closed");
  assert.equal(b.permit(27_200).kind, "call");
  assert.equal(b.snapshot(27_200).opened, 3);
});

test("results of calls started under an earlier state are ignored; an unknown probe result frees the probe", () => {
  const b = new CircuitBreaker({ failureThreshold: 1, openSeconds: 1 });
  const straggler = call(b, 0);
  b.record(call(b, 0), "unhealthy", 0);
  assert.equal(b.record(straggler, "healthy", 10), null);
  assert.equal(b.snapshot(10).state, "open");
  const probe = b.permit(1000) as { generation: number };
  b.record(probe.generation, "unknown", 1000);
  assert.equal(b.permit(1000).kind, "probe");
});

test("a Retry-After on the failure that opens the breaker stretches the open time, up to the maximum", () => {
  const b = new CircuitBreaker({ failureThreshold: 1, openSeconds: 1, maxOpenSeconds: 30 });
  b.record(call(b, 0), "unhealthy", 0, 20_000);
  assert.equal(b.snapshot(0).openUntil, 20_000);
  const c = new CircuitBreaker({ failureThreshold: 1, openSeconds: 1, maxOpenSeconds: 30 });
  c.record(call(c, 0), "unhealthy", 0, 3_600_000);
  assert.equal(c.snapshot(0).openUntil, 30_000);
});

test("token bucket: burst, then one token per 1/rate seconds", () => {
  const bucket = new TokenBucket(2, 2, 0);
  assert.deepEqual(bucket.take(0), { ok: true });
  assert.deepEqual(bucket.take(0), { ok: true });
  assert.deepEqual(bucket.take(0), { ok: false, at: 500 });
  assert.deepEqual(bucket.take(500), { ok: true });
});

test("origin limits: defaults, overrides by origin (default port made explicit), rate 0 or null means none", () => {
  const limits = new OriginLimits(
    { concurrency: 10 },
    { "https://fragile.example": { concurrency: 2, ratePerSecond: 1 }, "http://x.example:8080": { ratePerSecond: 0 } },
  );
  assert.deepEqual(limits.resolve("https://fragile.example:443"), { concurrency: 2, ratePerSecond: 1, burst: 1 });
  assert.deepEqual(limits.resolve("http://x.example:8080"), { concurrency: 10, ratePerSecond: null, burst: 1 });
  assert.deepEqual(limits.resolve("http://other:80"), { concurrency: 10, ratePerSecond: null, burst: 1 });
  assert.equal(new OriginLimits().resolve("http://a:80").concurrency, 64);
});
