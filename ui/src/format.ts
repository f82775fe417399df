// Formatting of the API's numbers for people.

// duration formats seconds as "1h02m", "3m05s" or "12s".
export function duration(s: number): string {
  if (!isFinite(s) || s <= 0) return "–";
  s = Math.round(s);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h > 0) return `${h}h${String(m).padStart(2, "0")}m`;
  if (m > 0) return `${m}m${String(sec).padStart(2, "0")}s`;
  return `${sec}s`;
}

// time formats Unix nanoseconds as local date and time.
export function time(ns: number): string {
  if (!ns) return "–";
  const d = new Date(ns / 1e6);
  return d.toLocaleString(undefined, { hour12: false });
}

// num formats a number with at most digits significant digits.
export function num(x: number, digits = 3): string {
  if (!isFinite(x)) return "–";
  if (x === 0) return "0";
  return Number(x.toPrecision(digits)).toString();
}

// percent formats a fraction as a percentage: whole percents from 10%
// on, two significant digits below ("0.1%", "2.5%"), so that a small
// threshold never reads "0%"; below 0.001% it is "0%", not a float's
// rounding error in exponent notation ("-1.1e-14%" for a model error of
// two equal step times).
export function percent(x: number): string {
  if (!isFinite(x)) return "–";
  const p = x * 100;
  if (Math.abs(p) < 0.001) return "0%";
  if (Math.abs(p) >= 10) return `${Math.round(p)}%`;
  return `${Number(p.toPrecision(2))}%`;
}

// clock formats Unix seconds as the local time of day, "16:04:05".
export function clock(s: number): string {
  return new Date(s * 1000).toLocaleTimeString(undefined, { hour12: false });
}

// plural is "1 worker", "2 workers".
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// shape is "2 ps × 4 workers on 2 nodes".
export function shape(ps: number, workers: number, nodes?: number): string {
  let s = ps > 0 ? `${ps} ps × ${plural(workers, "worker")}` : plural(workers, "worker");
  if (nodes !== undefined) s += ` on ${plural(nodes, "node")}`;
  return s;
}
