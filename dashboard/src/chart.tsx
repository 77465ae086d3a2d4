// A uPlot time-series chart: x in seconds since the epoch, drawn in the
// browser's time zone (uPlot's default), one line per series.

import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";

export interface ChartProps {
  title: string;
  /** [x (s), ...one array per series]. */
  data: number[][];
  series: { label: string; stroke: string }[];
  height?: number;
  /** The x axis spans the last this many seconds. */
  windowSeconds: number;
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
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.stroke, width: 2 }))],
      axes: [{}, { size: 50 }],
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
