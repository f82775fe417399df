// Chart wraps uPlot in a Preact component. The wrapper carries what it
// plots as data attributes (data-chart, data-points: the points of the
// measured series) so that tests and people can tell an empty chart from
// one with data without reading pixels.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { clock } from "./format";

export interface ChartProps {
  name: string;
  title: string;
  options: Omit<uPlot.Options, "width" | "height" | "title">;
  data: uPlot.AlignedData;
  // points counts the measured points plotted (data-points).
  points: number;
  height?: number;
  // rebuild, when it changes, makes a new plot (options captured in
  // plugins, such as marks, changed).
  rebuild?: string;
}

export function Chart({ name, title, options, data, points, height = 260, rebuild = "" }: ChartProps) {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  // A new set of series makes a new plot; new data only updates it.
  const seriesKey = options.series.map((s) => s.label ?? "").join("|");
  useEffect(() => {
    if (!el.current) return;
    const width = Math.max(300, el.current.clientWidth);
    plot.current = new uPlot({ ...options, title, width, height }, data, el.current);
    const resize = new ResizeObserver(() => {
      if (el.current && plot.current) plot.current.setSize({ width: Math.max(300, el.current.clientWidth), height });
    });
    resize.observe(el.current);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [seriesKey, title, height, rebuild]);
  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);
  return <div class="chart" ref={el} data-chart={name} data-points={points} />;
}

// Colours of series, in order.
export const palette = ["#1563ff", "#e0533d", "#2e9e5b", "#9a52d1", "#d99a00", "#00a3b5", "#6b7280"];

// markX draws dashed vertical lines at the x values of marks, labelled.
export function markX(marks: { x: number; label: string; color?: string }[]): uPlot.Plugin {
  return {
    hooks: {
      draw: (u: uPlot) => {
        const ctx = u.ctx;
        ctx.save();
        ctx.setLineDash([6, 4]);
        ctx.lineWidth = 1.5 * devicePixelRatio;
        ctx.font = `${11 * devicePixelRatio}px sans-serif`;
        for (const m of marks) {
          const x = u.valToPos(m.x, "x", true);
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
          ctx.strokeStyle = ctx.fillStyle = m.color ?? "#6b7280";
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
          ctx.fillText(m.label, x + 4 * devicePixelRatio, u.bbox.top + 12 * devicePixelRatio);
        }
        ctx.restore();
      },
    },
  };
}

// timeAxis is an x axis of Unix seconds labelled with the time of day,
// its ticks spaced so that the labels never overlap (uPlot's default
// puts the date under the first one, which runs into the next).
export function timeAxis(simulated: boolean): uPlot.Axis {
  return { label: simulated ? "time (simulated)" : "time", space: 90, values: (_u, splits) => splits.map(clock) };
}

// countAxis is a y axis of whole counts.
export function countAxis(label: string, more: uPlot.Axis = {}): uPlot.Axis {
  return { label, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000], ...more };
}
