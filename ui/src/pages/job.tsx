// A job's page: its state, the loss curve with the fitted model and the
// predicted convergence, the speed model against the measured speeds at
// each (ps, workers), each GPU type's throughput model against the step
// times measured on it, the placement timeline and the job's events.
import { useMemo } from "preact/hooks";
import uPlot from "uplot";
import { apiJob, Event, GPUTypeModel, JobPlacement, JobSamples, JobSummary, queuePath, Sample, useLive } from "../api";
import { Chart, countAxis, markX, palette, timeAxis } from "../chart";
import { duration, num, percent, plural, shape, time } from "../format";
import { lossAt, speedAt } from "../models";
import { answered, Card, EventTable, Loading, Problem, Progress, simNote, Status } from "./common";

export function JobPage({ id, ns }: { id: string; ns: string }) {
  const summary = useLive<JobSummary>(apiJob(ns, id, "summary"));
  const samples = useLive<JobSamples>(apiJob(ns, id, "samples"));
  const history = useLive<JobPlacement[]>(apiJob(ns, id, "history"));
  const events = useLive<Event[]>(`/v1/events?job=${encodeURIComponent(id)}&namespace=${encodeURIComponent(ns)}`);
  const s = summary.data;
  // A job declared in Nomad that Caravan rejected has no spec to show:
  // its page says why instead.
  const rejected = s?.Job.Status === "rejected" ? s : undefined;
  const spec = rejected ? undefined : s;
  const chief = useMemo(() => (samples.data?.Samples ?? []).filter((x) => x.Role !== "ps"), [samples.data]);
  const evs = events.data ?? [];
  return (
    <section data-page="job">
      <h1>
        {id} {s ? <Status status={s.Job.Status} /> : null}
        {ns !== "default" ? <span class="muted"> @{ns}</span> : null}
      </h1>
      <Problem error={summary.error} />
      {rejected ? (
        <Card title="Rejected" id="rejected">
          <p>Declared in Nomad at a version Caravan does not run; Caravan stopped it in Nomad. Fix the job file and run it again with nomad job run.</p>
          <ul>
            {(rejected.Job.StatusDescription ?? "").split("\n").map((e: string) => (
              <li>{e}</li>
            ))}
          </ul>
        </Card>
      ) : null}
      {spec ? <Overview s={spec} /> : s || summary.error ? null : <Loading what="the job" />}
      {rejected ? null : (
        <>
          <Card title="Loss and predicted convergence" id="loss">
            {spec ? <LossChart s={spec} samples={chief} /> : null}
          </Card>
          <Card title="Speed model against measured speeds" id="speed">
            {spec ? <SpeedChart s={spec} samples={chief} /> : null}
          </Card>
          <Card title="Throughput by GPU type" id="throughput">
            {spec ? <ThroughputByType types={spec.Model?.Goodput?.ByType ?? []} /> : null}
          </Card>
          <Card title="Placement timeline" id="timeline">
            <Problem error={history.error} />
            {spec && answered(history) ? <Timeline s={spec} history={history.data ?? []} events={evs} /> : history.error ? null : <Loading what="the placements" />}
          </Card>
        </>
      )}
      <Card title="Events" id="events">
        <Problem error={events.error} />
        {answered(events) ? <EventTable events={[...evs].reverse()} /> : events.error ? null : <Loading what="the events" />}
      </Card>
    </section>
  );
}

function Overview({ s }: { s: JobSummary }) {
  const m = s.Model;
  const running = s.Observed?.Placement;
  const desired = s.Placement?.Placement;
  const change = s.Observed?.Change;
  const total = m?.TotalSteps ?? 0;
  const step = m?.Step ?? s.LastSample?.Step ?? 0;
  const j = s.Job;
  return (
    <dl class="overview">
      <dt>Runs</dt>
      <dd>{running && running.NumWorkers > 0 ? shape(running.NumPS, running.NumWorkers, running.Nodes?.length ?? 0) : "nothing"}</dd>
      <dt>Decided</dt>
      <dd>
        {desired ? shape(desired.NumPS, desired.NumWorkers, desired.Nodes?.length ?? 0) : "–"}
        {s.Placement ? <span class="muted"> by {s.Placement.Algorithm}</span> : null}
        {desired?.Reason ? <div class="reason">{desired.Reason}</div> : null}
      </dd>
      <dt>GPU types</dt>
      <dd data-gpu-types={gpuTypes(s).join(", ")}>{gpuTypes(s).join(", ") || "–"}</dd>
      {s.Queue ? (
        <>
          <dt>Queue</dt>
          <dd data-queue={s.Queue}>
            <a href={queuePath(s.Queue)}>{s.Queue}</a>
          </dd>
        </>
      ) : null}
      {change && change.Phase !== "done" ? (
        <>
          <dt>Change</dt>
          <dd>
            {change.Phase}: {change.Message}
          </dd>
        </>
      ) : null}
      <dt>Progress</dt>
      <dd>
        <Progress value={j.Status === "complete" ? 1 : total > 0 ? step / total : 0} /> step {step}
        {total ? ` of ~${Math.round(total)} predicted` : ""}
      </dd>
      <dt>Remaining</dt>
      <dd>
        {m?.RemainingSeconds ? duration(m.RemainingSeconds) + simNote(s.SimSpeed) : "–"}
        {m?.StepsPerSecond ? <span class="muted"> at {num(m.StepsPerSecond)} steps/s</span> : null}
      </dd>
      <dt>Training</dt>
      <dd>
        {j.Training.Architecture} {j.Training.Mode}, global batch {j.Training.GlobalBatchSize}, {j.Training.StepsPerEpoch} steps per epoch;
        workers {j.Elastic.Workers.Min}–{j.Elastic.Workers.Max}
        {j.Elastic.ParameterServers ? `, ps ${j.Elastic.ParameterServers.Min}–${j.Elastic.ParameterServers.Max}` : ""}
      </dd>
      <dt>Fits</dt>
      <dd>
        loss RMSE {m?.Loss ? percent(m.LossRMSE) : "–"} of the largest loss; speed error{" "}
        {m?.Speed ? `${percent(m.SpeedError)} over ${plural(m.SpeedConfigs, "configuration")}` : "–"}; {plural(s.Samples, "sample")}
      </dd>
    </dl>
  );
}

// gpuTypes is the GPU types of the job's placements' nodes, sorted and once
// each.
function gpuTypes(s: JobSummary): string[] {
  return [...new Set(Object.values(s.GPUTypes ?? {}))].sort();
}

// perfParams names the parameters of a throughput model (GoodputModel.Perf).
function perfParams(p: number[]): string {
  return ["α_c", "β_c", "α_n", "β_n", "α_r", "β_r", "γ"].map((name, i) => `${name} = ${num(p[i] ?? NaN)}`).join(", ");
}

// stepTime formats a step time in seconds as milliseconds.
function stepTime(s: number): string {
  return `${num(s * 1000)} ms`;
}

// ThroughputByType shows each GPU type's throughput model (Pollux's, fitted
// to that type's step times alone) against the step time measured at each
// configuration: the model's step time there and its error.
function ThroughputByType({ types }: { types: GPUTypeModel[] }) {
  if (types.length === 0) {
    return <p class="muted">No throughput model per GPU type yet: one is fitted for each GPU type the job's step times were measured on.</p>;
  }
  return (
    <>
      {types.map((t) => {
        const points = t.Points ?? [];
        return (
          <div key={t.Type}>
            <h3>{t.Type}</h3>
            <table class="compact throughput" data-type={t.Type} data-rows={points.length}>
              <thead>
                <tr>
                  <th>nodes</th>
                  <th>replicas</th>
                  <th>local batch</th>
                  <th>measured step time</th>
                  <th>model</th>
                  <th>error</th>
                </tr>
              </thead>
              <tbody>
                {points.map((p) => {
                  const err = p.ModelStepTimeS / p.StepTimeS - 1;
                  return (
                    <tr
                      key={`${p.Nodes}/${p.Replicas}/${p.LocalBatch}`}
                      data-config={`${p.Nodes}/${p.Replicas}/${p.LocalBatch}`}
                    >
                      <td>{p.Nodes}</td>
                      <td>{p.Replicas}</td>
                      <td>{p.LocalBatch}</td>
                      <td>{stepTime(p.StepTimeS)}</td>
                      <td>{stepTime(p.ModelStepTimeS)}</td>
                      <td>{isFinite(err) ? `${err > 0 ? "+" : ""}${percent(err)}` : "–"}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
            <p class="muted small">
              {t.Perf ? `Pollux's throughput model, ${perfParams(t.Perf)} (seconds); ` : ""}
              fit error {percent(t.FitError)} mean, {percent(t.MaxFitError)} max over {plural(t.Configs, "configuration")}
              {points.length < t.Configs ? `, the first ${points.length} shown` : ""}.
            </p>
          </div>
        );
      })}
    </>
  );
}

function LossChart({ s, samples }: { s: JobSummary; samples: Sample[] }) {
  const coef = s.Model?.Loss ?? null;
  const total = s.Model?.TotalSteps ?? 0;
  const { data, points } = useMemo(() => {
    const measured = samples.filter((x) => x.Loss > 0 && isFinite(x.Loss));
    const last = measured.length ? measured[measured.length - 1].Step : 0;
    const xmax = Math.max(last, total) * 1.08 || 1;
    const xs = new Set<number>(measured.map((x) => x.Step));
    if (coef) for (let i = 0; i <= 120; i++) xs.add(Math.round((xmax * i) / 120));
    const x = [...xs].sort((a, b) => a - b);
    const byStep = new Map(measured.map((p) => [p.Step, p.Loss]));
    const y = x.map((k) => byStep.get(k) ?? null);
    const series: uPlot.AlignedData = coef ? [x, y, x.map((k) => lossAt(coef, k))] : [x, y];
    return { data: series, points: measured.length };
  }, [samples, coef, total]);
  const series: uPlot.Series[] = [
    { label: "step" },
    { label: "measured loss", stroke: palette[0], paths: () => null, points: { show: true, size: 6, fill: palette[0] } },
  ];
  if (coef) {
    series.push({ label: "fitted 1/(b0·k+b1)+b2", stroke: palette[1], width: 2, points: { show: false } });
  }
  const marks = total > 0 ? [{ x: total, label: `converges ~step ${Math.round(total)}`, color: palette[2] }] : [];
  return (
    <>
      <Chart
        name="loss"
        title=""
        points={points}
        data={data}
        rebuild={`${coef ? 1 : 0}:${Math.round(total)}`}
        options={{
          scales: { x: { time: false } },
          axes: [{ label: "step" }, { label: "loss" }],
          series,
          plugins: [markX(marks)],
        }}
      />
      <p class="muted small">
        {coef
          ? `Optimus' model l(k) = 1/(b0·k + b1) + b2 with b0 = ${num(coef[0])}, b1 = ${num(coef[1])}, b2 = ${num(coef[2])}; the job converges when the loss falls by less than ${percent(s.Job.Training.Convergence.Threshold)} an epoch for ${plural(s.Job.Training.Convergence.Patience, "epoch")} in a row.`
          : "No loss model yet: it is fitted once the job reported losses at enough distinct steps."}
      </p>
    </>
  );
}

interface Measured {
  ps: number;
  workers: number;
  speed: number;
  n: number;
}

// measuredSpeeds averages the samples' speeds (1 / step time) per (ps, workers).
function measuredSpeeds(samples: Sample[]): Measured[] {
  const acc = new Map<string, Measured>();
  for (const x of samples) {
    if (!(x.StepTimeS > 0) || x.NumWorkers < 1) continue;
    const key = `${x.NumPS}/${x.NumWorkers}`;
    const m = acc.get(key) ?? { ps: x.NumPS, workers: x.NumWorkers, speed: 0, n: 0 };
    m.speed += 1 / x.StepTimeS;
    m.n++;
    acc.set(key, m);
  }
  return [...acc.values()].map((m) => ({ ...m, speed: m.speed / m.n })).sort((a, b) => a.ps - b.ps || a.workers - b.workers);
}

function SpeedChart({ s, samples }: { s: JobSummary; samples: Sample[] }) {
  const theta = s.Model?.Speed ?? null;
  const kind = s.Model?.SpeedKind ?? "";
  const batch = s.Job.Training.GlobalBatchSize;
  const measured = useMemo(() => measuredSpeeds(samples), [samples]);
  // One curve per number of parameter servers measured (the four most
  // measured), over the job's range of workers.
  const psValues = useMemo(() => {
    const count = new Map<number, number>();
    measured.forEach((m) => count.set(m.ps, (count.get(m.ps) ?? 0) + m.n));
    return [...count.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 4)
      .map((e) => e[0])
      .sort((a, b) => a - b);
  }, [measured]);
  const maxW = Math.max(s.Job.Elastic.Workers.Max, ...measured.map((m) => m.workers), 1);
  const x = Array.from({ length: maxW }, (_, i) => i + 1);
  const data: (number | null)[][] = [x];
  const series: uPlot.Series[] = [{ label: "workers" }];
  psValues.forEach((p, i) => {
    const c = palette[i % palette.length];
    const label = kind === "allreduce" ? "" : `, ${p} ps`;
    data.push(x.map((w) => measured.find((m) => m.ps === p && m.workers === w)?.speed ?? null));
    series.push({ label: `measured${label}`, stroke: c, paths: () => null, points: { show: true, size: 7, fill: c } });
    if (theta) {
      data.push(x.map((w) => speedAt(kind, theta, batch, p, w)));
      series.push({ label: `model${label}`, stroke: c, width: 1.5, dash: [5, 3], points: { show: false } });
    }
  });
  const shown = measured.filter((m) => psValues.includes(m.ps)).length;
  return (
    <>
      <Chart
        name="speed"
        title=""
        points={shown}
        data={data as uPlot.AlignedData}
        options={{
          scales: { x: { time: false } },
          // Workers are whole numbers.
          axes: [{ label: "workers", incrs: [1, 2, 5, 10, 20, 50] }, { label: "steps per second" }],
          series,
        }}
      />
      {measured.length > 0 ? (
        <table class="compact" data-rows={measured.length}>
          <thead>
            <tr>
              <th>ps</th>
              <th>workers</th>
              <th>measured steps/s</th>
              <th>model</th>
              <th>error</th>
              <th>samples</th>
            </tr>
          </thead>
          <tbody>
            {measured.map((m) => {
              const pred = theta ? speedAt(kind, theta, batch, m.ps, m.workers) : NaN;
              return (
                <tr key={`${m.ps}/${m.workers}`}>
                  <td>{m.ps}</td>
                  <td>{m.workers}</td>
                  <td>{num(m.speed)}</td>
                  <td>{theta ? num(pred) : "–"}</td>
                  <td>{theta ? percent(Math.abs(pred - m.speed) / m.speed) : "–"}</td>
                  <td>{m.n}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
      <p class="muted small">
        {theta ? `${kind} speed model (${speedForm(kind)}), θ = ${theta.map((t) => num(t)).join(", ")}.` : "No speed model yet."}
        {s.Model?.Profiling?.length ? ` Still to profile at ${s.Model.Profiling.map((p) => `(${p.PS}, ${p.Workers})`).join(", ")}.` : ""}
      </p>
    </>
  );
}

function speedForm(kind: string): string {
  switch (kind) {
    case "async":
      return "Optimus eq. 3: f(p,w) = w / (θ0 + θ1·w/p + θ2·w + θ3·p)";
    case "sync":
      return "Optimus eq. 4: f(p,w) = 1 / (θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p)";
    default:
      return "ring all-reduce: f(w) = 1 / (θ0·M/w + θ1 + θ2·(w−1)/w + θ3·w)";
  }
}

// Events that belong on the placement timeline besides the placements.
const timelineEvents = new Set([
  "RescaleAborted",
  "CheckpointRequested",
  "CheckpointConfirmed",
  "JobRestarted",
  "TasksLost",
  "TasksFinished",
  "TaskResized",
  "HotPSReplaced",
  "StragglerReplaced",
  "TaskOOMKilled",
  "JobCompleted",
  "JobFailed",
  "JobStopped",
  "JobWaiting",
]);

function Timeline({ s, history, events }: { s: JobSummary; history: JobPlacement[]; events: Event[] }) {
  const placements = [...history].sort((a, b) => a.Time - b.Time);
  const others = events.filter((e) => timelineEvents.has(e.Type));
  if (placements.length === 0 && others.length === 0) {
    return <p class="muted">No placements yet: the job waits for the scheduler's next round.</p>;
  }
  const end = Math.max(
    s.LastSample?.Time ?? 0,
    ...events.map((e) => e.Time),
    ...placements.map((p) => p.Time),
  );
  const t = placements.map((p) => p.Time / 1e9);
  const workers = placements.map((p) => p.Placement.NumWorkers);
  const ps = placements.map((p) => p.Placement.NumPS);
  if (placements.length > 0 && end / 1e9 > t[t.length - 1]) {
    t.push(end / 1e9);
    workers.push(workers[workers.length - 1]);
    ps.push(ps[ps.length - 1]);
  }
  const marks = others
    .filter((e) => e.Type === "RescaleAborted" || e.Type === "TasksLost" || e.Type === "JobRestarted")
    .map((e) => ({ x: e.Time / 1e9, label: e.Type === "RescaleAborted" ? "aborted" : e.Type, color: palette[1] }));
  const stepped = uPlot.paths.stepped!({ align: 1 });
  const rows = [
    ...placements.map((p) => ({
      time: p.Time,
      what: p.Placement.Reason.includes("profil") ? "profiling" : "placed",
      detail: `${shape(p.Placement.NumPS, p.Placement.NumWorkers, p.Placement.Nodes?.length ?? 0)} (${(p.Placement.Nodes ?? [])
        .map((n) => `${n.NodeID}: ${n.PS}p/${n.Workers}w`)
        .join(", ")})`,
      reason: `${p.Algorithm}: ${p.Placement.Reason.replace(/^[a-z-]+: /, "")}`,
    })),
    ...others.map((e) => ({ time: e.Time, what: e.Type, detail: e.Message, reason: "" })),
  ].sort((a, b) => b.time - a.time);
  return (
    <>
      <Chart
        name="timeline"
        title=""
        points={placements.length}
        data={[t, workers, ps]}
        rebuild={marks.map((m) => m.x).join(",")}
        height={200}
        options={{
          axes: [timeAxis(!!s.SimSpeed), countAxis("tasks")],
          series: [
            { label: s.SimSpeed ? "time (simulated)" : "time" },
            { label: "workers", stroke: palette[0], width: 2, paths: stepped, points: { show: true } },
            { label: "ps", stroke: palette[3], width: 2, paths: stepped, points: { show: true } },
          ],
          plugins: [markX(marks)],
        }}
      />
      <table class="compact timeline" data-rows={rows.length}>
        <thead>
          <tr>
            <th>Time</th>
            <th>What</th>
            <th>Placement or event</th>
            <th>Reason</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i} class={r.what === "RescaleAborted" ? "aborted" : ""}>
              <td class="nowrap">{time(r.time)}</td>
              <td>{r.what}</td>
              <td>{r.detail}</td>
              <td class="reason">{r.reason}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
