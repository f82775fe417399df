// The cluster page: nodes with their devices and what runs where, and
// the GPUs in use over time, rebuilt from the jobs' placement histories.
import { useMemo } from "preact/hooks";
import uPlot from "uplot";
import { apiJob, Event, get, JobPlacement, JobStub, JobSummary, jobPath, Node, NodeDetail, useFetched, useLive } from "../api";
import { Chart, countAxis, palette, timeAxis } from "../chart";
import { percent } from "../format";
import { answered, Card, Loading, Problem } from "./common";

const endTypes = ["JobCompleted", "JobFailed", "JobStopped"];
const endFilter = encodeURIComponent(endTypes.map((t) => `Type == "${t}"`).join(" or "));

// At most this many jobs, the most recent, make the utilisation history.
const historyJobs = 30;

interface JobHistory {
  stub: JobStub;
  history: JobPlacement[];
  gpusPerWorker: number;
  gpusPerPS: number;
  // lastSample is the time of the job's newest sample, 0 if none.
  lastSample: number;
}

function gpus(devs: { Name: string; Count: number }[] | null | undefined): number {
  return (devs ?? []).filter((d) => d.Name.includes("gpu")).reduce((n, d) => n + d.Count, 0);
}

export function ClusterPage() {
  const nodes = useLive<Node[]>("/v1/nodes");
  // The most recently submitted jobs, newest first: a page, not the list.
  const jobs = useLive<JobStub[]>(`/v1/jobs?sort=submit_time&reverse=true&per_page=${historyJobs}`);
  const ends = useLive<Event[]>(`/v1/events?filter=${endFilter}`);
  const nodeIDs = (nodes.data ?? []).map((n) => n.ID);
  // The nodes' tasks change with what runs: read them again when the jobs
  // change, at most every few seconds.
  const details = useFetched<NodeDetail[]>(
    nodes.data && jobs.data ? `${nodes.index}/${jobs.index}` : null,
    (signal) => Promise.all(nodeIDs.map((id) => get<NodeDetail>(`/v1/node/${encodeURIComponent(id)}`, 0, signal).then((a) => a.data))),
    3000,
  );
  const recent = jobs.data ?? [];
  const histories = useFetched<JobHistory[]>(
    jobs.data ? String(jobs.index) : null,
    (signal) =>
      Promise.all(
        recent.map(async (stub) => {
          const [h, s] = await Promise.all([
            get<JobPlacement[]>(apiJob(stub.Namespace, stub.ID, "history"), 0, signal),
            get<JobSummary>(apiJob(stub.Namespace, stub.ID, "summary"), 0, signal),
          ]);
          const job = s.data.Job;
          return {
            stub,
            history: h.data,
            gpusPerWorker: gpus(job.Worker?.Resources.Devices),
            gpusPerPS: gpus(job.ParameterServer?.Resources.Devices),
            lastSample: s.data.LastSample?.Time ?? 0,
          };
        }),
      ),
    5000,
  );
  const totalGPUs = (nodes.data ?? []).reduce(
    (n, node) => n + (node.Devices ?? []).filter((d) => d.Type === "gpu").reduce((m, d) => m + (d.Instances?.length ?? 0), 0),
    0,
  );
  const sim = jobs.data?.find((j) => j.SimSpeed)?.SimSpeed;
  return (
    <section data-page="cluster">
      <h1>Cluster</h1>
      <Problem error={nodes.error ?? jobs.error} />
      <Card title="GPUs in use over time" id="utilisation">
        <Utilisation histories={histories.data ?? []} ends={ends.data ?? []} total={totalGPUs} sim={!!sim} />
      </Card>
      <Card title="Nodes" id="nodes">
        <Problem error={details.error} />
        {answered(nodes) ? <NodeTable nodes={nodes.data ?? []} details={details.data ?? []} /> : nodes.error ? null : <Loading what="the nodes" />}
      </Card>
    </section>
  );
}

function NodeTable({ nodes, details }: { nodes: Node[]; details: NodeDetail[] }) {
  const byID = new Map(details.map((d) => [d.Node.ID, d]));
  if (nodes.length === 0) return <p class="muted">No nodes.</p>;
  return (
    <table class="nodes" data-rows={nodes.length}>
      <thead>
        <tr>
          <th>Node</th>
          <th>Status</th>
          <th>CPU / memory</th>
          <th>Devices</th>
          <th>GPUs in use</th>
          <th>What runs there</th>
        </tr>
      </thead>
      <tbody>
        {nodes.map((n) => {
          const d = byID.get(n.ID);
          return (
            <tr key={n.ID} data-node={n.ID}>
              <td>
                {n.Name}
                <div class="muted small">
                  {n.Datacenter} · {n.NodePool}
                </div>
              </td>
              <td>
                <span class={`status status-${n.Status}`}>{n.Status}</span>
                {n.Eligible ? "" : <span class="tag">ineligible</span>}
              </td>
              <td class="nowrap">
                {(n.CPU / 1000).toFixed(0)} GHz · {(n.MemoryMB / 1024).toFixed(0)} GiB
              </td>
              <td>
                {(n.Devices ?? []).map((dev) => (
                  <div key={dev.Name}>
                    {dev.Instances?.length ?? 0} × {dev.Vendor}/{dev.Type} {dev.Name}
                    {(dev.Instances ?? []).some((i) => !i.Healthy) ? <span class="tag">unhealthy</span> : null}
                  </div>
                ))}
              </td>
              <td class="nowrap">
                {d ? (
                  <span class="gpus" title={d.GPUsTotal ? percent(d.GPUsUsed / d.GPUsTotal) : ""}>
                    {Array.from({ length: d.GPUsTotal }, (_, i) => (
                      <span key={i} class={i < d.GPUsUsed ? "gpu used" : "gpu"} />
                    ))}{" "}
                    {d.GPUsUsed}/{d.GPUsTotal}
                  </span>
                ) : (
                  "…"
                )}
              </td>
              <td>
                {(d?.Tasks ?? []).map((t) => (
                  <div key={`${t.Namespace}/${t.JobID}`}>
                    <a href={jobPath(t.Namespace, t.JobID)}>{t.JobID}</a>: {t.PS ? `${t.PS} ps, ` : ""}
                    {t.Workers} workers{t.GPUs ? `, ${t.GPUs} GPUs` : ""}
                  </div>
                ))}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

// Utilisation plots the GPUs Caravan's placements held over time: each
// job's placement history is a step function that ends when the job ends.
function Utilisation({ histories, ends, total, sim }: { histories: JobHistory[]; ends: Event[]; total: number; sim: boolean }) {
  const { data, points } = useMemo(() => {
    const endOf = new Map<string, number>();
    for (const e of ends) endOf.set(`${e.Namespace}/${e.JobID}`, e.Time);
    // Changes: (time, job, GPUs it holds from then on).
    const changes: { t: number; key: string; gpus: number; tasks: number }[] = [];
    let now = 0;
    for (const h of histories) {
      const key = `${h.stub.Namespace}/${h.stub.ID}`;
      for (const p of h.history) {
        const pl = p.Placement;
        changes.push({ t: p.Time, key, gpus: pl.NumWorkers * h.gpusPerWorker + pl.NumPS * h.gpusPerPS, tasks: pl.NumWorkers + pl.NumPS });
        now = Math.max(now, p.Time);
      }
      const end = endOf.get(key);
      if (end !== undefined && h.history.length > 0) {
        changes.push({ t: end, key, gpus: 0, tasks: 0 });
        now = Math.max(now, end);
      }
    }
    // Now is the newest time the cluster reported: on the simulated
    // cluster its clock runs ahead of the wall clock.
    for (const e of ends) now = Math.max(now, e.Time);
    for (const h of histories) now = Math.max(now, h.lastSample);
    changes.sort((a, b) => a.t - b.t);
    const held = new Map<string, { gpus: number; tasks: number }>();
    const x: number[] = [];
    const used: number[] = [];
    const tasks: number[] = [];
    for (const c of changes) {
      held.set(c.key, { gpus: c.gpus, tasks: c.tasks });
      let g = 0;
      let n = 0;
      held.forEach((v) => {
        g += v.gpus;
        n += v.tasks;
      });
      const t = c.t / 1e9;
      if (x.length && x[x.length - 1] === t) {
        used[used.length - 1] = g;
        tasks[tasks.length - 1] = n;
      } else {
        x.push(t);
        used.push(g);
        tasks.push(n);
      }
    }
    if (x.length && now / 1e9 > x[x.length - 1]) {
      x.push(now / 1e9);
      used.push(used[used.length - 1]);
      tasks.push(tasks[tasks.length - 1]);
    }
    return { data: [x, used, x.map(() => total), tasks] as uPlot.AlignedData, points: x.length };
  }, [histories, ends, total]);
  const stepped = uPlot.paths.stepped!({ align: 1 });
  return (
    <>
      <Chart
        name="utilisation"
        title=""
        points={points}
        data={data}
        height={220}
        options={{
          axes: [timeAxis(sim), countAxis("GPUs"), countAxis("tasks", { side: 1, scale: "tasks", grid: { show: false } })],
          scales: { tasks: { auto: true } },
          series: [
            { label: sim ? "time (simulated)" : "time" },
            { label: "GPUs in use", stroke: palette[0], fill: "rgba(21,99,255,0.12)", width: 2, paths: stepped },
            { label: "GPUs in the cluster", stroke: palette[6], dash: [4, 4], width: 1, points: { show: false } },
            { label: "tasks", stroke: palette[2], width: 1.5, paths: stepped, scale: "tasks" },
          ],
        }}
      />
      <p class="muted small">From the placement histories of the {historyJobs} most recent jobs: GPUs that placements held, not measured utilisation.</p>
    </>
  );
}
