// End to end: an attempt whose worker runs on after losing its lease is a
// possible duplicate: its late complete answers 409 LEASE_LOST, and the
// execution is listed by GET /v1/executions?possibleDuplicate=true (newest
// first, the tenant's own) and counted by duetime_possible_duplicates_total.

import assert from "node:assert/strict";
import { test } from "node:test";
import { apiError, queueJob, startTestServer, waitFor } from "./helpers.js";

test("possible duplicates: a late complete of an attempt that lost its lease, and a success after an expired lease, are listed with their reasons and counted", {
  timeout: 60_000,
}, async () => {
  const t = await startTestServer();
  try {
    const { client } = t;
    const job = await client.createJob(queueJob("dups"));
    const control = await client.createJob(queueJob("dups"));
    const silent = await client.createJob(queueJob("silent"));
    const first = await waitFor(async () => {
      const items = (await client.lease("dups", { workerId: "slow", max: 2, leaseSeconds: 1 })).items;
      return items.length === 2 ? items : null;
    }, "both leased");
    // A worker that never calls back: its lease expires, a later attempt succeeds.
    const gone = await waitFor(async () => (await client.lease("silent", { workerId: "gone", max: 1, leaseSeconds: 1 })).items[0], "silent leased");
    const mine = first.find((i) => i.jobId === job.jobId)!;
    const theirs = first.find((i) => i.jobId === control.jobId)!;
    // The control completes in time: not a duplicate. The other's lease expires and a second worker takes it over.
    await client.complete(theirs.executionId, theirs.attempt);
    const second = await waitFor(
      async () => (await client.lease("dups", { workerId: "fast", max: 1, leaseSeconds: 60 })).items.find((i) => i.executionId === mine.executionId),
      "the reaped execution leased again",
    );
    assert.equal(second.attempt, 2);
    assert.deepEqual((await client.listPossibleDuplicates()).items, [], "nothing yet: the slow worker has not shown up");
    const lost = await apiError(client.complete(mine.executionId, 1));
    assert.equal(lost.code, "LEASE_LOST");
    await client.complete(mine.executionId, 2);
    const page = await client.listPossibleDuplicates();
    assert.equal(page.items.length, 1);
    const [dup] = page.items;
    assert.equal(dup!.executionId, mine.executionId);
    assert.equal(dup!.jobId, job.jobId);
    assert.equal(dup!.pool, "dups");
    assert.equal(dup!.state, "SUCCEEDED");
    assert.equal(dup!.attempt, 2);
    assert.equal(dup!.possibleDuplicate.attempt, 1);
    assert.equal(dup!.possibleDuplicate.reason, "lease_lost");
    assert.ok(Date.parse(dup!.possibleDuplicate.at) > 0);
    // A repeat of the late call is the same duplicate, counted once.
    assert.equal((await apiError(client.heartbeat(mine.executionId, { attempt: 1 }))).code, "LEASE_LOST");
    const retried = await waitFor(
      async () => (await client.lease("silent", { workerId: "fast", max: 1, leaseSeconds: 60 })).items[0],
      "the silent one leased again",
    );
    assert.equal(retried.attempt, 2);
    await client.complete(retried.executionId, 2);
    const both = (await client.listPossibleDuplicates()).items;
    assert.deepEqual(
      both.map((d) => [d.jobId, d.possibleDuplicate.attempt, d.possibleDuplicate.reason]),
      [
        [silent.jobId, 1, "expired_then_succeeded"],
        [job.jobId, 1, "lease_lost"],
      ],
      "newest first",
    );
    assert.equal(gone.executionId, retried.executionId);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    assert.match(metrics, /^duetime_possible_duplicates_total 2$/m);
    const raw = await fetch(`${t.url}/v1/executions?possibleDuplicate=true&limit=1`);
    assert.equal(raw.status, 200);
    const missing = await fetch(`${t.url}/v1/executions`);
    assert.equal(missing.status, 400);
    assert.equal(((await missing.json()) as { error: { details: { field: string } } }).error.details.field, "possibleDuplicate");
    const falseValue = await fetch(`${t.url}/v1/executions?possibleDuplicate=false`);
    assert.equal(falseValue.status, 400);
  } finally {
    await t.close();
  }
});
