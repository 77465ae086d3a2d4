// The ready-made monitoring files (docs/monitoring/) are checked here, since
// promtool is not installed in CI: the alerting rules parse as Prometheus
// rule groups, cover what issue 12 asks for and point at runbook sections
// that exist; the Grafana dashboard is well formed, with a data-source
// variable and tenant/pool templating; and every metric either file queries
// is one a real server exposes on /metrics. docs/operations.md documents
// every metric the server exposes.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { parse as parseYaml } from "yaml";
import { startTestServer, type TestServer } from "./helpers.js";
import { parseExposition } from "./metrics-text.js";

const root = new URL("../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");

interface Rule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

const rulesFile = parseYaml(read("docs/monitoring/alerts.yml")) as { groups: { name: string; rules: Rule[] }[] };
const dashboard = JSON.parse(read("docs/monitoring/grafana-dashboard.json")) as {
  title: string;
  uid: string;
  templating: { list: { name: string; type: string; query: unknown; datasource?: { uid: string } }[] };
  panels: {
    id: number;
    type: string;
    title: string;
    gridPos: unknown;
    datasource?: { uid: string };
    targets?: { expr: string; datasource?: { uid: string } }[];
  }[];
};
const operations = read("docs/operations.md");

/** Grafana's reference to the data-source variable (spelled so, as it is not a template string). */
const DS_UID = "\u0024{datasource}";

const rules = rulesFile.groups.flatMap((g) => g.rules);
const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
const variableQueries = dashboard.templating.list.filter((v) => v.type === "query").map((v) => JSON.stringify(v.query));

/** duetime_* names used in a PromQL expression. */
const metricNames = (expr: string): string[] => [...expr.matchAll(/\b(duetime_[a-z0-9_]+)\b/g)].map((m) => m[1]!);

/** GitHub's anchor of each Markdown heading in a file. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    out.add(
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, "")
        .replace(/ /g, "-"),
    );
  }
  return out;
}

/** Parentheses, brackets and braces balance, and quotes close. */
function balanced(expr: string): boolean {
  const stack: string[] = [];
  const pairs: Record<string, string> = { ")": "(", "]": "[", "}": "{" };
  let quoted = false;
  for (const ch of expr) {
    if (ch === '"') quoted = !quoted;
    if (quoted) continue;
    if ("([{".includes(ch)) stack.push(ch);
    else if (ch in pairs && stack.pop() !== pairs[ch]) return false;
  }
  return !quoted && stack.length === 0;
}

let t: TestServer;
/** Metric family names a real server exposes, with a histogram's series names. */
const exposed = new Set<string>();
const families = new Set<string>();

before(async () => {
  t = await startTestServer();
  const e = parseExposition(await (await fetch(`${t.url}/metrics`)).text());
  for (const [name, type] of e.types) {
    families.add(name);
    exposed.add(name);
    if (type === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) exposed.add(name + suffix);
  }
});
after(() => t.close());

test("alerting rules: groups of rules, each with alert, expr, for, a severity, a summary and a runbook section of docs/operations.md that exists", () => {
  assert.ok(rulesFile.groups.length > 0);
  assert.ok(rules.length >= 5, `${rules.length} rules`);
  const sections = anchors(operations);
  const names = new Set<string>();
  for (const g of rulesFile.groups) {
    assert.match(g.name, /^[a-z0-9-]+$/);
    assert.ok(Array.isArray(g.rules) && g.rules.length > 0, g.name);
  }
  for (const r of rules) {
    assert.deepEqual(Object.keys(r).sort(), ["alert", "annotations", "expr", "for", "labels"], r.alert);
    assert.match(r.alert, /^Duetime[A-Z][A-Za-z]+$/);
    assert.ok(!names.has(r.alert), `${r.alert} twice`);
    names.add(r.alert);
    assert.match(r.for, /^\d+[smh]$/, `${r.alert} for`);
    assert.ok(["warning", "critical"].includes(r.labels.severity!), `${r.alert} severity`);
    assert.ok((r.annotations.summary ?? "").length > 10, `${r.alert} summary`);
    const runbook = /^docs\/operations\.md#([a-z0-9-]+)$/.exec(r.annotations.runbook ?? "");
    assert.ok(runbook, `${r.alert} runbook ${r.annotations.runbook}`);
    assert.ok(sections.has(runbook[1]!), `${r.alert}: docs/operations.md has no section #${runbook[1]}`);
    assert.ok(balanced(r.expr), `${r.alert} expr unbalanced: ${r.expr}`);
    assert.match(r.expr, /(>|<|==|!=)\s*[\d.]+\s*$/, `${r.alert} expr ends in a comparison`);
    assert.ok(!r.expr.includes("$"), `${r.alert} expr uses a dashboard variable`);
  }
});

test("alerting rules: dead letters growing, start lag p99 over 2 s, the oldest ready age, repeated shard takeovers and store errors each have a rule", () => {
  const ruleOn = (pattern: RegExp) => rules.find((r) => pattern.test(r.expr));
  assert.ok(ruleOn(/increase\(duetime_dead_letters_total\[/), "dead letters growing");
  const lag = ruleOn(/duetime_start_lag_seconds_bucket/);
  assert.ok(lag, "start lag");
  assert.match(lag.expr, /^histogram_quantile\(0\.99,.*\)\s*>\s*2$/);
  assert.ok(ruleOn(/duetime_oldest_ready_age_seconds/), "oldest ready age");
  assert.ok(ruleOn(/duetime_shard_takeover_seconds_count/), "repeated shard takeovers");
  assert.ok(ruleOn(/duetime_store_failures_total/), "store errors");
});

test("grafana dashboard: a data-source variable, tenant, pool and node templating, unique panel ids, every query on the data-source variable", () => {
  assert.equal(dashboard.title, "duetime");
  assert.ok(dashboard.uid.length > 0);
  const vars = new Map(dashboard.templating.list.map((v) => [v.name, v]));
  assert.equal(vars.get("datasource")?.type, "datasource");
  assert.equal(vars.get("datasource")?.query, "prometheus");
  for (const name of ["tenant", "pool", "instance"]) {
    assert.equal(vars.get(name)?.type, "query", name);
    assert.equal(vars.get(name)?.datasource?.uid, DS_UID, name);
  }
  const ids = dashboard.panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, "unique panel ids");
  const graphs = dashboard.panels.filter((p) => p.type !== "row");
  assert.ok(graphs.length >= 10, `${graphs.length} panels`);
  for (const p of graphs) {
    assert.ok(p.gridPos, p.title);
    assert.equal(p.datasource?.uid, DS_UID, p.title);
    assert.ok((p.targets ?? []).length > 0, `${p.title} has queries`);
    for (const target of p.targets!) {
      assert.equal(target.datasource?.uid, DS_UID, p.title);
      assert.ok(balanced(target.expr), `${p.title}: ${target.expr}`);
    }
  }
  // The tenant and pool variables filter the per-tenant panels.
  assert.ok(queries.some((q) => q.includes('tenant=~"$tenant"') && q.includes('pool=~"$pool"')));
  // Issue 12's metrics each have a panel.
  const charted = new Set(queries.flatMap(metricNames));
  for (const name of [
    "duetime_dispatch_lag_seconds_bucket",
    "duetime_start_lag_seconds_bucket",
    "duetime_due_backlog",
    "duetime_due_upcoming",
    "duetime_ready_depth",
    "duetime_oldest_ready_age_seconds",
    "duetime_attempts_total",
    "duetime_dead_letters_total",
    "duetime_lease_expiries_total",
    "duetime_shard_changes_total",
    "duetime_store_operation_duration_seconds_bucket",
    "duetime_event_loop_delay_seconds",
    "duetime_shard_dispatched_total",
  ])
    assert.ok(charted.has(name), `no panel charts ${name}`);
});

test("monitoring files query only metrics the server exposes (histogram _bucket, _sum and _count allowed)", () => {
  assert.ok(families.has("duetime_start_lag_seconds") && families.size > 20, `${families.size} families scraped`);
  const used = [...rules.map((r) => r.expr), ...queries, ...variableQueries].flatMap(metricNames);
  assert.ok(used.length > 20, `${used.length} metric references`);
  const unknown = [...new Set(used)].filter((name) => !exposed.has(name));
  assert.deepEqual(unknown, [], "metrics used in docs/monitoring/ that /metrics does not expose");
});

test("docs/operations.md documents every metric the server exposes, each in a row of its metrics table", () => {
  assert.ok(families.size > 20);
  // The first cell of each row of the metrics table names one or more metrics.
  const rows = operations.split("\n").filter((line) => line.startsWith("| `duetime_"));
  const documented = new Set(rows.flatMap((row) => [...row.split(" | ")[0]!.matchAll(/`(duetime_[a-z0-9_]+)/g)].map((m) => m[1]!)));
  assert.ok(documented.size > 20, `${documented.size} metrics in the table`);
  const undocumented = [...families].filter((name) => name.startsWith("duetime_") && !documented.has(name));
  assert.deepEqual(undocumented, [], "metrics missing from docs/operations.md");
});
