// Overview: what is waiting and running now (GET /v1/stats, every 5 s), and
// the last hour by the minute, per pool or per tenant (GET
// /v1/stats/history, every 10 s, as often as the nodes add to it): start-lag
// percentiles, throughput, failures and queue depth. Times are the
// browser's, with UTC on hover.

import { useMemo, useState } from "preact/hooks";
import type { PoolStats, Stats, StatsHistory, StatsSeries } from "@duetime/sdk/contract";
import { api } from "../api";
import { Chart } from "../chart";
import { ErrorBox, Section, useLoad } from "../components";
import { may, useSession } from "../session";

const STATS_MS = 5000;
const HISTORY_MS = 10_000;
const WINDOW_S = 3600;
/** The busiest series drawn; a chart of more lines reads as noise. */
const MAX_LINES = 8;
const PALETTE = ["#2563eb", "#d98e04", "#16a34a", "#dc2626", "#7c3aed", "#0891b2", "#be185d", "#4b5563"];

type Percentile = "p50" | "p90" | "p99";

function total(stats: Stats): PoolStats {
  const sum = { pending: 0, queued: 0, running: 0 };
  for (const c of Object.values(stats.tenants)) {
    sum.pending += c.pending;
    sum.queued += c.queued;
    sum.running += c.running;
  }
  return sum;
}

function CountsTable({ label, rows, testId }: { label: string; rows: Record<string, PoolStats>; testId: string }) {
  const names = Object.keys(rows).sort();
  if (names.length === 0) return <p class="muted empty">No {label.toLowerCase()} with work.</p>;
  return (
    <table class="list" data-testid={testId}>
      <thead>
        <tr>
          <th>{label}</th>
          <th class="num">Pending</th>
          <th class="num">Queued</th>
          <th class="num">Running</th>
        </tr>
      </thead>
      <tbody>
        {names.map((name) => (
          <tr key={name}>
            <td class="mono">{name}</td>
            <td class="num">{rows[name]!.pending}</td>
            <td class="num">{rows[name]!.queued}</td>
            <td class="num">{rows[name]!.running}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The keys with the most attempts started in the window, at most MAX_LINES, by name. */
function busiest(history: StatsHistory): string[] {
  const activity = (s: StatsSeries) =>
    s.started.reduce((a, b) => a + b, 0) + s.failed.reduce((a, b) => a + b, 0) + Math.max(0, ...s.queued.map((n) => n ?? 0));
  return Object.entries(history.series)
    .sort(([a, x], [b, y]) => activity(y) - activity(x) || a.localeCompare(b))
    .slice(0, MAX_LINES)
    .map(([key]) => key)
    .sort();
}

function HistoryChart({
  history,
  keys,
  title,
  pick,
}: {
  history: StatsHistory;
  keys: string[];
  title: string;
  pick: (s: StatsSeries) => (number | null)[];
}) {
  const data = useMemo(() => [history.minutes.map((m) => Date.parse(m) / 1000), ...keys.map((k) => pick(history.series[k]!))], [history, keys, pick]);
  return (
    <Chart title={title} data={data} windowSeconds={WINDOW_S} series={keys.map((label, i) => ({ label, stroke: PALETTE[i % PALETTE.length]! }))} />
  );
}

function Choice<T extends string>({ value, options, onChange, label }: { value: T; options: readonly T[]; onChange: (v: T) => void; label: string }) {
  return (
    <label class="muted">
      {label}{" "}
      <select value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value as T)} data-testid={`overview-${label.toLowerCase()}`}>
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

const pickers = {
  started: (s: StatsSeries) => s.started,
  failed: (s: StatsSeries) => s.failed,
  queued: (s: StatsSeries) => s.queued,
  p50: (s: StatsSeries) => s.startLagMs.p50,
  p90: (s: StatsSeries) => s.startLagMs.p90,
  p99: (s: StatsSeries) => s.startLagMs.p99,
};

export function OverviewPage() {
  const who = useSession();
  // Per tenant only for a key that sees every tenant; a tenant's key has one.
  const [by, setBy] = useState<"pool" | "tenant">("pool");
  const [percentile, setPercentile] = useState<Percentile>("p90");
  const stats = useLoad((signal) => api<Stats>("GET", "/v1/stats", { signal }), [], STATS_MS);
  const history = useLoad((signal) => api<StatsHistory>("GET", "/v1/stats/history", { signal, query: { by } }), [by], HISTORY_MS);
  const keys = useMemo(() => (history.data ? busiest(history.data) : []), [history.data]);
  const t = stats.data ? total(stats.data) : undefined;
  const byChoice = may(who, "tenants") || who.tenantId === "*" ? (["pool", "tenant"] as const) : (["pool"] as const);
  const shown = Object.keys(history.data?.series ?? {}).length;
  return (
    <>
      <ErrorBox error={stats.error ?? history.error} />
      {t ? (
        <div class="tiles" data-testid="overview-tiles">
          <div class="tile">
            <div class="tile-n">{t.pending}</div>
            <div class="muted">pending</div>
          </div>
          <div class="tile">
            <div class="tile-n">{t.queued}</div>
            <div class="muted">queued</div>
          </div>
          <div class="tile">
            <div class="tile-n">{t.running}</div>
            <div class="muted">running</div>
          </div>
        </div>
      ) : null}
      <Section
        title="Last hour, by the minute"
        actions={
          <>
            <Choice label="By" value={by} options={byChoice} onChange={setBy} />
            <Choice label="Lag" value={percentile} options={["p50", "p90", "p99"] as const} onChange={setPercentile} />
          </>
        }
      >
        {history.data && keys.length > 0 ? (
          <div class="charts" data-testid="overview-charts">
            <HistoryChart history={history.data} keys={keys} title={`Start lag ${percentile} (ms)`} pick={pickers[percentile]} />
            <HistoryChart history={history.data} keys={keys} title="Attempts started per minute" pick={pickers.started} />
            <HistoryChart history={history.data} keys={keys} title="Attempts failed per minute" pick={pickers.failed} />
            <HistoryChart history={history.data} keys={keys} title="Queued (sampled)" pick={pickers.queued} />
            {shown > keys.length ? (
              <p class="muted">
                The {keys.length} busiest of {shown} {by}s are drawn.
              </p>
            ) : null}
          </div>
        ) : history.data ? (
          <p class="muted empty">No work in the last hour.</p>
        ) : null}
      </Section>
      {stats.data ? (
        <>
          {may(who, "tenants") || who.tenantId === "*" ? (
            <Section title="By tenant">
              <CountsTable label="Tenant" rows={stats.data.tenants} testId="tenants-table" />
            </Section>
          ) : null}
          <Section title="By pool">
            <CountsTable label="Pool" rows={stats.data.pools} testId="pools-table" />
          </Section>
        </>
      ) : null}
    </>
  );
}
