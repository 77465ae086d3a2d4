// A pool's READY rows include every one-off not yet due (store.ts,
// executionLease): a lease and a long poll's next-ready look must read the
// rows they answer with, never walk the future ones. Measured in buffers on
// a real server: 20,000 one-offs due tomorrow, in three priority levels,
// may cost a lease some index pages more (about 30: a seek per level), not
// the pages that hold them (about 1,900 for a lease that walked them).
// The behaviour itself is in the store contract.

import assert from "node:assert/strict";
import { test } from "node:test";
import { openPostgresStore } from "./index.js";
import { LANES_PER_PICK, NO_WORK } from "../../core/fair-share.js";
import { LEASE_ACROSS_TENANTS, LEASE_TENANT, NEXT_READY_POOL } from "./leases.js";
import { adminPool, freshPostgresSchema, oneOffJob, postgresAvailable } from "./test-support.js";

const NOW = Date.parse("2026-03-01T00:00:00Z");
const DAY = 86_400_000;

if (await postgresAvailable("PostgreSQL lease reads")) {
  test("a lease and a next-ready look read the rows due, not the pool's one-offs due later", async () => {
    const db = freshPostgresSchema();
    const store = await openPostgresStore(db);
    /** Buffers the statement touched (hit or read), run and rolled back. */
    const cost = async (sql: string, values: unknown[]): Promise<number> => {
      const client = await adminPool().connect();
      try {
        await client.query("BEGIN");
        await client.query(`SET LOCAL search_path TO "${db.schema}"`);
        const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, values);
        const plan = (rows[0] as { "QUERY PLAN": { Plan: Record<string, number> }[] })["QUERY PLAN"][0]!.Plan;
        return plan["Shared Hit Blocks"]! + plan["Shared Read Blocks"]!;
      } finally {
        await client.query("ROLLBACK");
        client.release();
      }
    };
    const lease = () => cost(LEASE_ACROSS_TENANTS, [NOW, "p", 100, "w", 30_000, 0, LANES_PER_PICK, NO_WORK]);
    const nextReady = () => cost(NEXT_READY_POOL, ["p"]);
    try {
      await store.jobCreateMany({ nodeId: "n1", jobs: Array.from({ length: 5 }, (_, i) => oneOffJob(NOW, NOW - 1000, i % 2)), now: NOW });
      const [leaseBefore, nextBefore] = [await lease(), await nextReady()];
      for (let batch = 0; batch < 20; batch++) {
        const later = Array.from({ length: 1000 }, (_, i) => oneOffJob(NOW, NOW + DAY + batch * 1000 + i, (batch + i) % 3));
        await store.jobCreateMany({ nodeId: "n1", jobs: later, now: NOW });
      }
      await adminPool().query(`ANALYZE "${db.schema}".executions`);
      const [leaseAfter, nextAfter] = [await lease(), await nextReady()];
      assert.ok(leaseAfter - leaseBefore < 100, `a lease read ${leaseBefore} buffers, then ${leaseAfter} with 20,000 one-offs due later`);
      assert.ok(nextAfter - nextBefore < 100, `a next-ready look read ${nextBefore} buffers, then ${nextAfter}`);
      const leased = await store.executionLease({ pool: "p", workerId: "w", max: 100, leaseMs: 30_000, now: NOW });
      assert.equal(leased.length, 5, "the five due are leased, none of the later ones");
    } finally {
      await store.close();
    }
  });
}

if (await postgresAvailable("PostgreSQL lease plan")) {
  // lease_epoch is never analysed (it holds one row): estimated at thousands,
  // it made the grant materialise its rows once per supposed row of the epoch
  // (on disk for a lease of 500 in a herd; bench/lease-plan.ts).
  test("a lease on tables never analysed plans its epoch as one row", async () => {
    const db = freshPostgresSchema();
    const store = await openPostgresStore(db);
    const client = await adminPool().connect();
    try {
      await store.jobCreateMany({ nodeId: "n1", jobs: Array.from({ length: 50 }, (_, i) => oneOffJob(NOW, NOW - 1000 - i)), now: NOW });
      assert.deepEqual(await store.executionLease({ tenantId: "t1", pool: "p", workerId: "w", max: 0, leaseMs: 30_000, now: NOW }), []);
      await client.query("BEGIN");
      await client.query(`SET LOCAL search_path TO "${db.schema}"`);
      const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${LEASE_TENANT}`, [NOW, "p", 50, "w", 30_000, 0, "t1"]);
      const plan = (rows[0] as { "QUERY PLAN": { Plan: PlanNode }[] })["QUERY PLAN"][0]!.Plan;
      const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
      assert.equal(plan["Actual Rows"], 50, "the lease granted all 50");
      assert.equal(nodes(plan).find((n) => n["Subplan Name"] === "CTE t")?.["Plan Rows"], 1, "the epoch is planned as one row");
    } finally {
      await client.query("ROLLBACK");
      client.release();
      await store.close();
    }
  });
}

interface PlanNode {
  "Subplan Name"?: string;
  "Plan Rows": number;
  "Actual Rows": number;
  Plans?: PlanNode[];
}

if (await postgresAvailable("PostgreSQL wake rows")) {
  test("retention settles the wake rows no cross-tenant lease took: the table stays small, and the sleeping tenant still wakes", async () => {
    const db = freshPostgresSchema();
    const store = await openPostgresStore(db);
    const sql = (text: string) => adminPool().query(text.replaceAll("$schema", `"${db.schema}"`));
    const acrossTenants = () => store.executionLease({ pool: "p", workerId: "w", max: 10, leaseMs: 30_000, now: NOW });
    try {
      assert.deepEqual(await acrossTenants(), []);
      const job = oneOffJob(NOW, NOW - 1000);
      await store.jobCreateMany({ nodeId: "n1", jobs: [job], now: NOW });
      // As if a lease had put the tenant to sleep without seeing the job, and nothing had taken its wake row for two minutes.
      await sql("UPDATE $schema.lanes SET idle_until = 253402300799999");
      await sql("UPDATE $schema.lane_wakes SET written_at = written_at - 120000");
      await store.retentionPurge({ kind: "executions", before: NOW - DAY, limit: 100 });
      assert.equal((await sql("SELECT count(*)::int AS n FROM $schema.lane_wakes")).rows[0].n, 0);
      assert.deepEqual(
        (await acrossTenants()).map((r) => r.jobId),
        [job.job.jobId],
      );
    } finally {
      await store.close();
    }
  });
}
