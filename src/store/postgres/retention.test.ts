// Retention never reads a whole table: every statement of
// postgres/retention.ts searches an index of migration 1 on its leading
// column (in time order, or by key), so a batch costs the rows it touches
// however large the history grows. The planner is told to avoid sequential
// scans: a statement that still needs one, or that can only walk a whole
// index, has no index to search. The behaviour itself is in the store contract.

import assert from "node:assert/strict";
import { test } from "node:test";

import { openPostgresStore } from "./index.js";
import { EXPIRED_SQL, PURGE_ONLY_SQL, PURGE_SQL } from "./retention.js";
import { adminPool, freshPostgresSchema, postgresAvailable } from "./test-support.js";

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Index Cond"?: string;
  Plans?: PlanNode[];
}

const SEARCHES = new Set(["Index Scan", "Index Only Scan", "Bitmap Heap Scan"]);

const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

/** Sample parameters by kind: before, limit, or before and the listed keys. */
const LISTED: Record<string, unknown[]> = {
  executions: [["j"], [1]],
  jobs: [["j"]],
  idempotency: [["t"], ["k"]],
  audit: [[1]],
};

if (await postgresAvailable("PostgreSQL retention plans")) {
  test("every retention statement is served by an index, never a sequential scan of a table", async () => {
    const db = freshPostgresSchema();
    await (await openPostgresStore(db)).close(); // migrated
    const client = await adminPool().connect();
    try {
      await client.query("BEGIN");
      await client.query(`SET LOCAL search_path TO "${db.schema}"`);
      await client.query("SET LOCAL enable_seqscan = off");
      const { rows: indexes } = await client.query<{ index: string; column: string }>(
        `SELECT c.relname AS index, a.attname AS column FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] WHERE c.relnamespace = $1::regnamespace`,
        [db.schema],
      );
      const leading = new Map(indexes.map((r) => [r.index, r.column]));
      const statements = Object.entries({ EXPIRED_SQL, PURGE_SQL, PURGE_ONLY_SQL }).flatMap(([group, sqls]) =>
        Object.entries(sqls).map(([kind, sql]) => ({
          name: `${group}.${kind}`,
          sql,
          values: group === "PURGE_ONLY_SQL" ? [0, ...LISTED[kind]!] : [0, 10],
        })),
      );
      assert.equal(statements.length, 12);
      for (const { name, sql, values } of statements) {
        const { rows } = await client.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${sql}`, values);
        const plan = nodes(rows[0]!["QUERY PLAN"][0]!.Plan);
        const scans = plan.filter((n) => n["Relation Name"] !== undefined && n["Node Type"] !== "ModifyTable"); // the DELETE itself names its table
        assert.ok(scans.length > 0, `${name} reads a table`);
        const shown = JSON.stringify(plan.map((n) => [n["Node Type"], n["Relation Name"] ?? n["Index Name"], n["Index Cond"]]));
        assert.deepEqual(
          scans.filter((n) => !SEARCHES.has(n["Node Type"])),
          [],
          `${name} scans a table: ${shown}`,
        );
        // Searched: the condition holds the index's leading column (a condition on a later one walks the whole index).
        const walks = plan.filter((n) => n["Index Name"] !== undefined && !(n["Index Cond"] ?? "").includes(`(${leading.get(n["Index Name"])} `));
        assert.deepEqual(walks, [], `${name} walks a whole index: ${shown}`);
      }
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });
}
