// A uPlot time-series chart: x in seconds since the epoch, drawn in the
// browser's time zone (uPlot's default), the hovered time also in UTC in the
// legend; one line per series, null for a gap.

import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { localTime, utcTime } from "./time";

export interface ChartProps {
  title: string;
  /** [x (s), ...one array per series]. */
  data: (number | null)[][];
  series: { label: string; stroke: string }[];
  height?: number;
  /** The x axis spans the last this many seconds. */
  windowSeconds: number;
}

const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });

/** The legend's x value: local wall time, then UTC. */
function hoverTime(_u: uPlot, seconds: number | null): string {
  if (seconds === null || seconds === undefined) return "—";
  const iso = new Date(seconds * 1000).toISOString();
  return `${localTime(iso)} (${utcTime(iso)})`;
}

export function Chart({ title, data, series, height = 220, windowSeconds }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label).join("|");
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      title,
      width: Math.max(300, el.clientWidth),
      height,
      // Points as well as lines: a minute alone between gaps (a sample, the first start) has no line to draw.
      series: [{ value: hoverTime }, ...series.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, points: { show: true, size: 4 } }))],
      axes: [{}, { size: 50, values: (_u: uPlot, splits: number[]) => splits.map((n) => compact.format(n)) }],
      // The window ends now, whatever the samples span (a few samples would otherwise stretch over years).
      scales: { x: { time: true, range: () => [Date.now() / 1000 - windowSeconds, Date.now() / 1000] } },
    };
    plot.current = new uPlot(opts, data as uPlot.AlignedData, el);
    const resize = () => plot.current?.setSize({ width: Math.max(300, el.clientWidth), height });
    window.addEventListener("resize", resize);
    return () => {
      window.removeEventListener("resize", resize);
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape, title, height, windowSeconds]);
  useEffect(() => {
    plot.current?.setData(data as uPlot.AlignedData);
  }, [data]);
  return <div class="chart" ref={box} />;
}
