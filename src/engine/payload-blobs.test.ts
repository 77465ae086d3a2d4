// Payload blobs in the engine, on a fake clock, on SQLite and on PostgreSQL:
// retention removes a job's blob with the job (its index row and every
// chunk), and the sweep removes a cut-off create's blob once the grace has
// passed, never before, never one its job holds. The engine is not started:
// "time passes" is the clock jumping, and the tests drive retention's runs.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { FakeClock } from "../core/clock.js";
import { DuetimeError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { openStore, type StoreOptions } from "../store/factory.js";
import { freshPostgresSchema, postgresAvailable } from "../store/postgres/test-support.js";
import type { Store } from "../store/store.js";
import { openEngine, type Engine } from "./engine.js";
import { DEFAULT_CONTEXT as ctx } from "./service.js";

const dir = mkdtempSync(join(tmpdir(), "duetime-payload-blobs-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const big = (n: number) => ({ n, text: "b".repeat(600_000) });

interface Where {
  url: string;
  options: StoreOptions;
}

const STORES: { kind: string; where: () => Where }[] = [
  { kind: "sqlite", where: () => ({ url: `sqlite:${join(dir, `${newId(Date.now())}.db`)}`, options: {} }) },
];
if (await postgresAvailable("payload blobs in the engine: postgres")) {
  STORES.push({
    kind: "postgres",
    where: () => {
      const { url, schema } = freshPostgresSchema();
      return { url, options: { schema } };
    },
  });
}

/** An engine on a fake clock (inline limit 1 KiB), and a second handle on its store to look at what it keeps. */
async function setup(where: Where): Promise<{ clock: FakeClock; engine: Engine; look: Store; close(): Promise<void> }> {
  const clock = new FakeClock("2026-03-02T10:00:00Z");
  const engine = await openEngine({
    store: where.url,
    storeOptions: where.options,
    clock,
    nodeId: "n",
    httpTargets: false,
    payloads: { inlineBytes: 1024 },
  });
  const look = await openStore(where.url, where.options);
  return { clock, engine, look, close: async () => void (await Promise.all([engine.stop(), look.close()])) };
}

/** Every chunk the store holds of a blob. */
const chunksOf = (store: Store, blobId: string) => store.blobChunksGet({ blobId, first: 0, limit: 100 });
const notFound = (err: unknown) => err instanceof DuetimeError && err.code === "NOT_FOUND";

for (const { kind, where } of STORES) {
  describe(`payload blobs in the engine (${kind})`, () => {
    test("retention removes a job's blob with the job: its index row and every chunk, in the run that removes the job", async () => {
      const { clock, engine, look, close } = await setup(where());
      try {
        const done = await engine.service.createJob(ctx, {
          name: "once",
          target: { type: "queue", pool: "p" },
          payload: big(1),
          schedule: { delaySeconds: 0 },
        });
        const live = await engine.service.createJob(ctx, {
          name: "later",
          target: { type: "queue", pool: "q" },
          payload: big(2),
          schedule: { delaySeconds: 60 * DAY },
        });
        const { leased } = await engine.executor.lease({ pool: "p", workerId: "w", max: 1, leaseMs: 30_000, waitMs: 0 });
        assert.equal(leased.length, 1);
        await engine.executor.complete([{ executionId: leased[0]!.executionId, tenantId: "default", attempt: leased[0]!.attempt }]);
        const doneBlob = done.payloadRef!.blobId;
        const liveBlob = live.payloadRef!.blobId;
        assert.ok((await chunksOf(look, doneBlob)).length >= 2, "the payload is in chunks");

        clock.jump(29 * DAY);
        await engine.retention.runOnce();
        assert.deepEqual(await engine.service.getBlob(ctx, doneBlob), big(1), "kept while its job is");

        clock.jump(2 * DAY); // the execution ended 31 days ago: it goes, then its job, then the blob
        assert.deepEqual(await engine.retention.runOnce(), { executions: 1, jobs: 1, idempotency: 0, audit: 0 });
        await assert.rejects(engine.service.getJob(ctx, done.jobId), notFound);
        await assert.rejects(engine.service.getBlob(ctx, doneBlob), notFound);
        assert.equal(await look.blobGet({ blobId: doneBlob }), null);
        assert.deepEqual(await chunksOf(look, doneBlob), [], "every chunk went");
        assert.deepEqual(await look.blobSweep({ before: clock.now() + 1000 * DAY, limit: 10 }), [], "nothing left to sweep");
        assert.deepEqual(await engine.service.getBlob(ctx, liveBlob), big(2), "a live job's blob stays");
      } finally {
        await close();
      }
    });

    test("the sweep removes a blob no job took once the grace (an hour) has passed, never before, never one a job holds", async () => {
      const { clock, engine, look, close } = await setup(where());
      try {
        const held = await engine.service.createJob(ctx, {
          name: "held",
          target: { type: "queue", pool: "p" },
          payload: big(3),
          schedule: { delaySeconds: DAY },
        });
        // A create cut off after its blob was written (a crash, a refused idempotency repeat that could not clean up).
        const planned = engine.payloads.plan(big(4), "queue", "payload")!;
        const { blobId: orphan } = await engine.payloads.write({ tenantId: "default", jobId: newId(clock.now()), planned });
        await engine.retention.runOnce();
        assert.ok((await chunksOf(look, orphan)).length > 0, "within the grace: a create may still be on its way");
        clock.jump(HOUR + 1000);
        await engine.retention.runOnce();
        assert.equal(await look.blobGet({ blobId: orphan }), null);
        assert.deepEqual(await chunksOf(look, orphan), []);
        assert.deepEqual(await engine.service.getBlob(ctx, held.payloadRef!.blobId), big(3), "its job's blob stays");
      } finally {
        await close();
      }
    });

    test("an idempotent repeat stores nothing more: the repeat's blob is removed at once, the first one's stays", async () => {
      const { engine, look, close } = await setup(where());
      try {
        const spec = { name: "same", target: { type: "queue" as const, pool: "p" }, payload: big(5), schedule: { delaySeconds: DAY } };
        const first = await engine.service.createJob(ctx, spec, { idempotencyKey: "k" });
        const again = await engine.service.createJob(ctx, spec, { idempotencyKey: "k" });
        assert.equal(again.jobId, first.jobId);
        assert.equal(again.created, false);
        assert.deepEqual(again.payloadRef, first.payloadRef);
        assert.deepEqual(await look.blobSweep({ before: Number.MAX_SAFE_INTEGER, limit: 10 }), [], "no blob left unattached");
      } finally {
        await close();
      }
    });
  });
}
