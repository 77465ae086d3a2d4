import assert from "node:assert/strict";
import { test } from "node:test";
import type { LoadedDueEntry } from "../store/store.js";
import { DueTimer } from "./timer.js";

const entry = (jobId: string, dueAt: number): LoadedDueEntry => ({
  jobId,
  tenantId: "t",
  shard: 0,
  scheduledFor: dueAt,
  dueAt,
  kind: "once",
  schedule: { runAt: new Date(dueAt).toISOString() },
});

test("pops due entries in due order, up to max", () => {
  const t = new DueTimer();
  for (const [id, at] of [
    ["c", 30],
    ["a", 10],
    ["d", 40],
    ["b", 20],
  ] as const)
    t.push(entry(id, at));
  assert.equal(t.peekTime(), 10);
  assert.deepEqual(
    t.popDue(25, 10).map((e) => e.jobId),
    ["a", "b"],
  );
  assert.deepEqual(
    t.popDue(100, 1).map((e) => e.jobId),
    ["c"],
  );
  assert.equal(t.size, 1);
});

test("a re-pushed job replaces its old entry", () => {
  const t = new DueTimer();
  t.push(entry("a", 10));
  t.push({ ...entry("a", 50) });
  assert.deepEqual(t.popDue(20, 10), []);
  assert.deepEqual(
    t.popDue(60, 10).map((e) => e.dueAt),
    [50],
  );
});

test("removed jobs never fire", () => {
  const t = new DueTimer();
  t.push(entry("a", 10));
  t.push(entry("b", 20));
  t.remove("a");
  assert.equal(t.peekTime(), 20);
  assert.deepEqual(
    t.popDue(100, 10).map((e) => e.jobId),
    ["b"],
  );
});

test("keeps heap order under random pushes", () => {
  const t = new DueTimer();
  const times = Array.from({ length: 5000 }, (_, i) => ({ id: `j${i}`, at: Math.floor(Math.random() * 1e6) }));
  for (const { id, at } of times) t.push(entry(id, at));
  const popped = t.popDue(Infinity, 10_000).map((e) => e.dueAt);
  assert.deepEqual(
    popped,
    times.map((x) => x.at).sort((a, b) => a - b),
  );
});

test("due entries are taken round-robin across tenants: a big tenant does not starve a small one", () => {
  const t = new DueTimer();
  for (let i = 0; i < 1000; i++) t.push({ ...entry(`big${i}`, 10), tenantId: "big" });
  t.push({ ...entry("small", 10), tenantId: "small" });
  const first = t.popDue(10, 10);
  assert.ok(
    first.some((e) => e.tenantId === "small"),
    "the small tenant waited behind the big one",
  );
  assert.equal(first.length, 10);
  assert.equal(t.size, 991);
});

test("within a tenant, entries still come out earliest first", () => {
  const t = new DueTimer();
  for (const [id, at] of [
    ["c", 30],
    ["a", 10],
    ["b", 20],
  ] as const)
    t.push({ ...entry(id, at), tenantId: "x" });
  t.push({ ...entry("z", 5), tenantId: "y" });
  assert.equal(t.peekTime(), 5);
  const out = t.popDue(100, 10);
  assert.deepEqual(
    out.filter((e) => e.tenantId === "x").map((e) => e.jobId),
    ["a", "b", "c"],
  );
});
