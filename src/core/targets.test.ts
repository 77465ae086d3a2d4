import assert from "node:assert/strict";
import { test } from "node:test";
import type { JobSpec } from "@duetime/sdk/contract";
import { DuetimeError } from "./errors.js";
import { effectiveJob } from "./job-spec.js";
import { brokerRefusal, HTTP_POOL, poolOf, type BrokerKind } from "./targets.js";

const NOW = Date.parse("2026-12-02T00:00:00Z");
const spec = (target: JobSpec["target"]): JobSpec => ({ name: "n", target, schedule: { delaySeconds: 0 } });

test("each target waits in its pool: a queue's own, $http, or its broker connection's", () => {
  assert.equal(poolOf({ type: "queue", pool: "emails" }), "emails");
  assert.equal(poolOf({ type: "http", url: "https://x.test" }), HTTP_POOL);
  assert.equal(poolOf({ type: "nats", subject: "a.b" }), "$broker:nats");
  assert.equal(poolOf({ type: "amqp", exchange: "", routingKey: "q" }), "$broker:amqp");
  assert.equal(poolOf({ type: "nats", subject: "a.b", broker: "eu" }), "$broker:eu");
});

test("a broker target's effective form names its broker and headers; a routing key over 255 bytes is refused", () => {
  assert.deepEqual(effectiveJob(spec({ type: "nats", subject: "orders.due" }), "j1", NOW).target, {
    type: "nats",
    subject: "orders.due",
    broker: "nats",
    headers: {},
  });
  assert.deepEqual(effectiveJob(spec({ type: "amqp", exchange: "", routingKey: "q", broker: "rabbit", headers: { a: "b" } }), "j1", NOW).target, {
    type: "amqp",
    exchange: "",
    routingKey: "q",
    broker: "rabbit",
    headers: { a: "b" },
  });
  // 128 characters of two bytes each: within the schema's 255 characters, over AMQP's 255 bytes.
  assert.throws(
    () => effectiveJob(spec({ type: "amqp", exchange: "x", routingKey: "é".repeat(128) }), "j1", NOW),
    (e: unknown) => e instanceof DuetimeError && e.details?.field === "target.routingKey" && /255 bytes/.test(e.message),
  );
});

test("brokerRefusal names the field and the fix: an unknown broker, or one of the other kind", () => {
  const brokers = new Map<string, BrokerKind>([
    ["nats", "nats"],
    ["rabbit", "amqp"],
  ]);
  assert.equal(brokerRefusal({ type: "nats", subject: "a" }, brokers), null);
  assert.equal(brokerRefusal({ type: "amqp", exchange: "", routingKey: "q", broker: "rabbit" }, brokers), null);
  assert.equal(brokerRefusal({ type: "queue", pool: "p" }, new Map()), null);

  const unknown = brokerRefusal({ type: "amqp", exchange: "", routingKey: "q" }, brokers);
  assert.equal(unknown?.field, "target.type");
  assert.match(unknown!.message, /no broker named "amqp" is configured.*configured: "nats", "rabbit"; start the server with --broker amqp=URL/);
  assert.match(brokerRefusal({ type: "nats", subject: "a" }, new Map())!.message, /none is/);

  const named = brokerRefusal({ type: "nats", subject: "a", broker: "eu" }, brokers);
  assert.equal(named?.field, "target.broker");
  const wrongKind = brokerRefusal({ type: "nats", subject: "a", broker: "rabbit" }, brokers);
  assert.deepEqual(wrongKind, { field: "target.broker", message: 'broker "rabbit" takes amqp targets, not nats' });
});
