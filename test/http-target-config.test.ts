// The serve flags of HTTP targets: signing secrets (rotation, per-tenant file)
// and per-origin limits and breaker settings.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { UsageError } from "../src/cli/args.js";
import { parseOriginLimits, parseServe } from "../src/cli/serve.js";

test("--signing-secret takes one secret, or several (newest first) during a rotation", () => {
  assert.equal(parseServe(["--signing-secret", "s1"], {}).options.signingSecret, "s1");
  assert.deepEqual(parseServe([], { DUETIME_SIGNING_SECRET: "new, old" }).options.signingSecret, ["new", "old"]);
  assert.throws(() => parseServe(["--signing-secret", "a,,b"], {}), UsageError);
});

test("--signing-secrets-file reads each tenant's secrets from JSON, and says what is wrong with a bad file", () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-secrets-"));
  try {
    const good = join(dir, "good.json");
    writeFileSync(good, JSON.stringify({ default: "d", acme: ["new", "old"] }));
    assert.deepEqual(parseServe(["--signing-secrets-file", good], {}).options.signingSecrets, { default: "d", acme: ["new", "old"] });
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ acme: [1] }));
    assert.throws(() => parseServe(["--signing-secrets-file", bad], {}), /expected \{"tenant"/);
    assert.throws(() => parseServe([], { DUETIME_SIGNING_SECRETS_FILE: join(dir, "missing.json") }), /DUETIME_SIGNING_SECRETS_FILE: cannot read/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the --http-* flags become the engine's HTTP-target settings; none given, none set", () => {
  assert.equal(parseServe([], {}).options.httpTarget, undefined);
  const { options } = parseServe(
    [
      "--http-concurrency",
      "512",
      "--http-origin-concurrency",
      "16",
      "--http-origin-rate",
      "50",
      "--http-origin-limits",
      "https://fragile.example=2/0.5,http://10.0.0.5:8080=128",
      "--http-breaker-failures",
      "3",
      "--http-breaker-open-seconds",
      "10",
    ],
    {},
  );
  assert.deepEqual(options.httpTarget, {
    concurrency: 512,
    origin: { concurrency: 16, ratePerSecond: 50 },
    origins: { "https://fragile.example": { concurrency: 2, ratePerSecond: 0.5 }, "http://10.0.0.5:8080": { concurrency: 128 } },
    breaker: { failureThreshold: 3, openSeconds: 10, maxOpenSeconds: 60 },
  });
  assert.deepEqual(parseServe([], { DUETIME_HTTP_ORIGIN_RATE: "0" }).options.httpTarget, { origin: { ratePerSecond: null } });
  assert.throws(() => parseServe(["--http-origin-concurrency", "0"], {}), /must be between 1/);
  assert.throws(() => parseServe(["--http-origin-rate", "fast"], {}), /expected a number/);
  assert.throws(() => parseServe(["--http-origin-limits", "fragile.example=2"], {}), /--http-origin-limits: expected ORIGIN=CONCURRENCY/);
  assert.throws(() => parseOriginLimits("https://a.example=0"), /at least 1/);
  assert.throws(() => parseServe(["--http-hold-seconds", "120"], {}), UsageError, "no hold budget any more: calls of an open origin are released");
});
