import assert from "node:assert/strict";
import { test } from "node:test";
import { classify, MAX_RETRY_AFTER_SECONDS, parseRetryAfter } from "./http-call.js";
import { signatureHeader, SigningKeys, verifySignature } from "@duetime/sdk/contract";

const NOW = Date.parse("2026-01-01T00:00:00Z");

test("classification: 2xx success; 429/503 throttled; 408/5xx transient; 3xx recorded with location; other 4xx permanent", () => {
  assert.equal(classify(204, {}, NOW), null);
  assert.deepEqual(classify(429, { "retry-after": "7" }, NOW), { message: "HTTP 429", class: "throttled", retryAfterSeconds: 7 });
  assert.deepEqual(classify(503, {}, NOW), { message: "HTTP 503", class: "throttled" });
  assert.equal(classify(408, {}, NOW)?.class, "transient");
  assert.equal(classify(502, {}, NOW)?.class, "transient");
  assert.deepEqual(classify(302, { location: "https://elsewhere.test/" }, NOW), {
    message: "HTTP 302: redirect to https://elsewhere.test/ not followed",
    class: "transient",
    location: "https://elsewhere.test/",
  });
  for (const s of [400, 401, 404, 410, 422]) assert.equal(classify(s, {}, NOW)?.class, "permanent", String(s));
});

test("Retry-After: seconds or an HTTP date, capped; unreadable is ignored", () => {
  assert.equal(parseRetryAfter("3", NOW), 3);
  assert.equal(parseRetryAfter(["12", "1"], NOW), 12);
  assert.equal(parseRetryAfter(new Date(NOW + 90_500).toUTCString(), NOW), 90);
  assert.equal(parseRetryAfter(new Date(NOW - 5000).toUTCString(), NOW), 0);
  assert.equal(parseRetryAfter("99999999", NOW), MAX_RETRY_AFTER_SECONDS);
  assert.equal(parseRetryAfter("soon", NOW), undefined);
  assert.equal(parseRetryAfter(undefined, NOW), undefined);
});

test("signatures: one v1 per secret; verifySignature accepts any current secret and rejects stale timestamps and tampering", () => {
  const ts = String(NOW / 1000);
  const body = '{"a":1}';
  const header = signatureHeader(["new", "old"], ts, body);
  assert.match(header, /^v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
  const headers = { "Duetime-Timestamp": ts, "Duetime-Signature": header };
  assert.equal(verifySignature({ secret: "old", headers, body, now: NOW }), true);
  assert.equal(verifySignature({ secret: ["other", "new"], headers, body, now: NOW + 60_000 }), true);
  assert.equal(verifySignature({ secret: "old", headers, body: '{"a":2}', now: NOW }), false);
  assert.equal(verifySignature({ secret: "wrong", headers, body, now: NOW }), false);
  assert.equal(verifySignature({ secret: "old", headers, body, now: NOW + 301_000 }), false);
  assert.equal(verifySignature({ secret: "old", headers, body, now: NOW + 301_000, toleranceSeconds: 600 }), true);
  assert.equal(verifySignature({ secret: "old", headers: new Headers(headers), body: Buffer.from(body), now: NOW }), true);
  assert.equal(verifySignature({ secret: "old", headers: {}, body, now: NOW }), false);
});

test("signing keys: each tenant its own list; a tenant without one signs nothing", () => {
  const keys = new SigningKeys({ default: ["a", "b"], acme: "c", empty: [] });
  assert.deepEqual(keys.forTenant("default"), ["a", "b"]);
  assert.deepEqual(keys.forTenant("acme"), ["c"]);
  assert.deepEqual(keys.forTenant("empty"), []);
  assert.deepEqual(keys.forTenant("other"), []);
});
