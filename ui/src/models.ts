// The fitted models as the server reports them (structs.JobModel),
// evaluated as planner/model does.

// lossAt is Optimus' loss model l(k) = 1/(b0·k + b1) + b2, k in steps.
export function lossAt(coef: number[], step: number): number {
  const [b0, b1, b2] = coef;
  const den = b0 * step + b1;
  return den > 0 ? 1 / den + b2 : NaN;
}

// speedAt is the fitted speed in steps per second with p parameter servers
// and w workers: Optimus eq. 3 (async), eq. 4 (sync, global batch m), or the
// ring all-reduce form (planner/model/speed.go).
export function speedAt(kind: string, theta: number[], m: number, p: number, w: number): number {
  if (w < 1 || (p < 1 && kind !== "allreduce")) return 0;
  let row: number[];
  let numerator = 1;
  switch (kind) {
    case "async":
      row = [1, w / p, w, p];
      numerator = w;
      break;
    case "sync":
      row = [m / w, 1, w / p, w, p];
      break;
    default:
      row = [m / w, 1, (w - 1) / w, w];
  }
  let den = 0;
  row.forEach((x, i) => (den += (theta[i] ?? 0) * x));
  return den > 0 ? numerator / den : 0;
}
