// Overview: what is waiting and running now, per tenant and per pool
// (GET /v1/stats, a worker or admin key), and a chart of the totals over the
// last hour, sampled every 5 s while the page is open. Start lag, throughput
// and failure charts need a history the API does not serve yet.

import { useEffect, useState } from "preact/hooks";
import { api, type Counts, type Stats } from "../api";
import { Chart } from "../chart";
import { ErrorBox, Section, useLoad } from "../components";

const SAMPLE_MS = 5000;
const WINDOW_S = 3600;

/** Samples kept across page changes (this tab only): [t (s), pending, queued, running]. */
const samples: [number, number, number, number][] = [];

function total(stats: Stats): Counts {
  const sum = { pending: 0, queued: 0, running: 0 };
  for (const c of Object.values(stats.tenants)) {
    sum.pending += c.pending;
    sum.queued += c.queued;
    sum.running += c.running;
  }
  return sum;
}

function CountsTable({ label, rows, testId }: { label: string; rows: Record<string, Counts>; testId: string }) {
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

export function OverviewPage() {
  const stats = useLoad((signal) => api<Stats>("GET", "/v1/stats", { signal }), [], SAMPLE_MS);
  const [series, setSeries] = useState<number[][]>([[], [], [], []]);
  useEffect(() => {
    if (!stats.data) return;
    const now = Date.now() / 1000;
    const t = total(stats.data);
    samples.push([now, t.pending, t.queued, t.running]);
    while (samples.length > 0 && samples[0]![0] < now - WINDOW_S) samples.shift();
    setSeries([samples.map((s) => s[0]), samples.map((s) => s[1]), samples.map((s) => s[2]), samples.map((s) => s[3])]);
  }, [stats.data]);
  const t = stats.data ? total(stats.data) : undefined;
  return (
    <>
      <ErrorBox error={stats.error} />
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
      <Section title="Queue depth, last hour">
        <Chart
          title="executions (sampled every 5 s while this page is open)"
          data={series}
          windowSeconds={WINDOW_S}
          series={[
            { label: "pending", stroke: "#8a8f98" },
            { label: "queued", stroke: "#d98e04" },
            { label: "running", stroke: "#2563eb" },
          ]}
        />
      </Section>
      {stats.data ? (
        <>
          <Section title="By tenant">
            <CountsTable label="Tenant" rows={stats.data.tenants} testId="tenants-table" />
          </Section>
          <Section title="By pool">
            <CountsTable label="Pool" rows={stats.data.pools} testId="pools-table" />
          </Section>
        </>
      ) : null}
    </>
  );
}
