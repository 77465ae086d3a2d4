// The start-lag distribution per contender as a hand-written SVG: one
// cumulative curve per contender (share of jobs started within a lag), with
// the lag on a log scale, so a 5 ms scheduler and a 50 s one fit on one
// chart. Left and steep is better. No browser, no dependency.

export interface Series {
  name: string;
  /** Sorted start lags in ms, as evenly spaced quantiles from p0 to p100. */
  quantiles: number[];
  /** How many steps a full curve has (quantiles.length − 1 when every job started). */
  points?: number;
  /** The run's exact percentiles for the legend (the same figures as the table). */
  p50?: number | undefined;
  p99?: number | undefined;
}

const COLORS: Record<string, string> = {
  "duetime-embedded": "#1f6fd1",
  "duetime-server": "#1a9e55",
  bullmq: "#d33a2c",
  "pg-boss": "#8a4fc7",
  "graphile-worker": "#e68a00",
};
const SPARE = ["#0f8f9e", "#b0457a", "#6b6b6b", "#7a8f1f"];

const W = 820;
const H = 420;
const M = { left: 64, right: 210, top: 44, bottom: 52 };

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

function label(ms: number): string {
  if (ms >= 1000) return `${ms / 1000} s`;
  return `${ms} ms`;
}

function pctOf(q: number[], p: number): number {
  return q[Math.min(q.length - 1, Math.round(p * (q.length - 1)))]!;
}

function fmtMs(ms: number): string {
  if (ms === Infinity) return "∞";
  if (ms >= 10_000) return `${(ms / 1000).toFixed(0)} s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms)} ms`;
}

export function lagChart(title: string, subtitle: string, series: Series[]): string {
  const drawn = series.filter((s) => s.quantiles.length > 1);
  const maxLag = Math.max(10, ...drawn.map((s) => s.quantiles[s.quantiles.length - 1]!));
  const decades = Math.max(1, Math.ceil(Math.log10(maxLag)));
  const x = (ms: number) => M.left + (Math.log10(Math.max(1, ms)) / decades) * (W - M.left - M.right);
  const y = (share: number) => H - M.bottom - share * (H - M.top - M.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${M.left}" y="20" font-size="15" font-weight="600">${esc(title)}</text>`,
    `<text x="${M.left}" y="36" fill="#555">${esc(subtitle)}</text>`,
  ];
  // Grid: decades on x (with 2× and 5× ticks), quarters on y.
  for (let d = 0; d <= decades; d++) {
    const ms = 10 ** d;
    out.push(`<line x1="${x(ms)}" y1="${M.top}" x2="${x(ms)}" y2="${H - M.bottom}" stroke="#ddd"/>`);
    out.push(`<text x="${x(ms)}" y="${H - M.bottom + 16}" text-anchor="middle" fill="#333">${label(ms)}</text>`);
    if (d < decades) {
      for (const k of [2, 5]) out.push(`<line x1="${x(k * ms)}" y1="${M.top}" x2="${x(k * ms)}" y2="${H - M.bottom}" stroke="#f0f0f0"/>`);
    }
  }
  for (const share of [0, 0.25, 0.5, 0.75, 0.9, 0.99, 1]) {
    out.push(
      `<line x1="${M.left}" y1="${y(share)}" x2="${W - M.right}" y2="${y(share)}" stroke="${share === 0.99 || share === 0.9 ? "#eee" : "#ddd"}"/>`,
    );
    if (share !== 0.99) out.push(`<text x="${M.left - 6}" y="${y(share) + 4}" text-anchor="end" fill="#333">${Math.round(share * 100)}%</text>`);
  }
  out.push(
    `<text x="${(M.left + W - M.right) / 2}" y="${H - 12}" text-anchor="middle" fill="#333">start lag (handler start − due time), log scale; values under 1 ms drawn at 1 ms</text>`,
  );
  out.push(`<text transform="translate(16 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle" fill="#333">jobs started</text>`);
  drawn.forEach((s, i) => {
    const color = COLORS[s.name] ?? SPARE[i % SPARE.length]!;
    const q = s.quantiles;
    const pts: string[] = [`${x(q[0]!).toFixed(1)},${y(0).toFixed(1)}`];
    // A curve that ends below 100% (jobs that never started) has fewer than POINTS + 1 quantiles.
    const steps = Math.max(q.length - 1, s.points ?? q.length - 1);
    for (let j = 0; j < q.length; j++) {
      const share = steps === 0 ? 1 : j / steps;
      pts.push(`${x(q[j]!).toFixed(1)},${y(share).toFixed(1)}`);
    }
    out.push(`<polyline points="${pts.join(" ")}" fill="none" stroke="${color}" stroke-width="2.2" stroke-linejoin="round"/>`);
    const ly = M.top + 8 + i * 42;
    const lx = W - M.right + 16;
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 22}" y2="${ly}" stroke="${color}" stroke-width="3"/>`);
    out.push(`<text x="${lx + 28}" y="${ly + 4}" font-weight="600">${esc(s.name)}</text>`);
    out.push(`<text x="${lx + 28}" y="${ly + 20}" fill="#555">p50 ${fmtMs(s.p50 ?? pctOf(q, 0.5))} · p99 ${fmtMs(s.p99 ?? pctOf(q, 0.99))}</text>`);
  });
  series
    .filter((s) => s.quantiles.length <= 1)
    .forEach((s, i) => {
      out.push(`<text x="${W - M.right + 16}" y="${H - M.bottom - i * 16}" fill="#a00">${esc(s.name)}: no data</text>`);
    });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
