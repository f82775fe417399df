// The queues (issue 32): each team's GPUs used against its quota, what it
// borrows and lends, what waits; and a page per queue with its resources,
// its usage over time as this page sampled it, its jobs (pending first,
// with their reasons) and its recent preemptions.
import { useMemo } from "preact/hooks";
import uPlot from "uplot";
import { Event, GPUQuota, jobPath, Queue, QueueJob, QueueResource, queuePath, useEventLog, useLive } from "../api";
import { Chart, countAxis, palette, timeAxis } from "../chart";
import { num, plural, time } from "../format";
import { answered, Card, Loading, Problem, Status } from "./common";

// UsageSample is a queue's GPUs, summed over its GPU types, when an
// answer of the API arrived (t: Unix seconds of the browser's clock).
interface UsageSample {
  t: number;
  used: number;
  nominal: number;
  borrowed: number;
  lent: number;
  pending: number;
}

// The server keeps no history of a queue's usage: the pages sample each
// answer of /v1/queues and /v1/queue/<name> into this history, which
// lasts as long as the page is open (navigating within the UI keeps it)
// and holds each queue's newest maxSamples.
const maxSamples = 900;
const history = new Map<string, UsageSample[]>();

// gpuTotals sums a queue's GPU resources.
function gpuTotals(q: Queue): Omit<UsageSample, "t"> {
  const out = { used: 0, nominal: 0, borrowed: 0, lent: 0, pending: 0 };
  for (const r of q.Usage?.Resources ?? []) {
    if (!isGPU(r)) continue;
    out.used += r.Used;
    out.nominal += r.Nominal;
    out.borrowed += r.Borrowed;
    out.lent += r.Lent;
    out.pending += r.Pending;
  }
  return out;
}

function isGPU(r: QueueResource): boolean {
  return r.Resource.startsWith("gpu/");
}

// sample adds each queue's usage in an answer to its history.
function sample(queues: Queue[]) {
  const t = Date.now() / 1000;
  for (const q of queues) {
    if (!q.Usage) continue;
    const h = history.get(q.Name) ?? [];
    h.push({ t, ...gpuTotals(q) });
    if (h.length > maxSamples) h.splice(0, h.length - maxSamples);
    history.set(q.Name, h);
  }
}

// preemptedFilter selects the JobPreempted events.
const preemptedFilter = encodeURIComponent(`Type == "JobPreempted"`);

// How many preemptions a queue's page lists, the newest.
const recentPreemptions = 20;

export function QueuesPage() {
  const queues = useLive<Queue[]>("/v1/queues");
  useMemo(() => queues.data && sample(queues.data), [queues.data]);
  const list = queues.data ?? [];
  return (
    <section data-page="queues">
      <h1>Queues</h1>
      <Problem error={queues.error} />
      {!answered(queues) && !queues.error ? <Loading what="the queues" /> : null}
      {answered(queues) && list.length === 0 ? (
        <p class="muted">
          No queues: every job runs in the default queue. Define them with <code>caravan queue apply queues.hcl</code>.
        </p>
      ) : null}
      {list.length > 0 ? (
        <table class="queues" data-rows={list.length}>
          <thead>
            <tr>
              <th>Queue</th>
              <th>Cohort</th>
              <th>Weight</th>
              <th>GPUs used / nominal</th>
              <th>Borrowed</th>
              <th>Lent</th>
              <th>Pending GPUs</th>
              <th>Pending jobs</th>
            </tr>
          </thead>
          <tbody>
            {list.map((q) => {
              const g = gpuTotals(q);
              const known = !!q.Usage;
              return (
                <tr key={q.Name} data-queue={q.Name}>
                  <td class="nowrap">
                    <a href={queuePath(q.Name)}>{q.Name}</a>
                  </td>
                  <td>{q.Cohort || "–"}</td>
                  <td>{num(q.Weight)}</td>
                  <td class="nowrap">{known ? `${g.used} / ${g.nominal}` : "–"}</td>
                  <td>{known ? g.borrowed : "–"}</td>
                  <td>{known ? g.lent : "–"}</td>
                  <td>{known ? g.pending : "–"}</td>
                  <td>{known ? q.Usage!.PendingJobs : "–"}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
      <p class="muted small">GPUs summed over the GPU types of each queue's quotas and of what its jobs use, under the latest decision.</p>
    </section>
  );
}

export function QueuePage({ name }: { name: string }) {
  const queue = useLive<Queue>(`/v1/queue/${encodeURIComponent(name)}`);
  const samples = useMemo(() => {
    if (queue.data) sample([queue.data]);
    return [...(history.get(name) ?? [])];
  }, [name, queue.data]);
  const events = useEventLog(`/v1/events?filter=${preemptedFilter}`);
  const preemptions = useMemo(
    () => (events.data ?? []).filter((e) => e.Details?.Queue === name).reverse().slice(0, recentPreemptions),
    [events.data, name],
  );
  const q = queue.data;
  return (
    <section data-page="queue">
      <h1>
        {name} <span class="muted small">queue</span>
      </h1>
      <Problem error={queue.error} />
      {q ? (
        <p class="muted" data-cohort={q.Cohort}>
          {q.Cohort ? `Cohort ${q.Cohort}` : "No cohort: borrows and lends nothing"} · weight {num(q.Weight)} · namespaces{" "}
          {(q.Namespaces ?? []).join(", ") || "none (jobs of no other queue)"}
        </p>
      ) : queue.error ? null : (
        <Loading what="the queue" />
      )}
      <Card title="Resources" id="resources">
        {q ? q.Usage ? <Resources q={q} /> : <p class="muted">No decision yet: the usage is not known.</p> : null}
      </Card>
      <Card title="GPUs used against quota over time" id="usage">
        <UsageChart samples={samples} />
      </Card>
      <Card title="Jobs" id="jobs">
        {q ? <Jobs jobs={q.Usage?.Jobs ?? []} /> : null}
      </Card>
      <Card title="Recent preemptions" id="preemptions">
        <Problem error={events.error} />
        {answered(events) ? <Preemptions events={preemptions} /> : events.error ? null : <Loading what="the preemptions" />}
      </Card>
    </section>
  );
}

// limits are a resource's borrowing and lending limits, from the GPU
// quota that counts it.
function limits(q: Queue, r: QueueResource): [string, string] {
  if (!isGPU(r)) return ["–", "–"];
  const g: GPUQuota | undefined = (q.Quota.GPU ?? []).find((g) => g.Type === r.Quota);
  if (!g) return ["–", "–"];
  return [g.BorrowingLimit === undefined ? "no cap" : String(g.BorrowingLimit), g.LendingLimit === undefined ? "all" : String(g.LendingLimit)];
}

function unit(r: QueueResource): string {
  if (isGPU(r)) return "GPUs";
  return r.Resource === "cpu" ? "MHz" : "MB";
}

function Resources({ q }: { q: Queue }) {
  const rs = q.Usage?.Resources ?? [];
  if (rs.length === 0) return <p class="muted">The queue's quota names no resource, and its jobs use none.</p>;
  return (
    <table class="resources" data-rows={rs.length}>
      <thead>
        <tr>
          <th>Resource</th>
          <th>Quota</th>
          <th>Nominal</th>
          <th>Used</th>
          <th>Borrowed</th>
          <th>Lent</th>
          <th>Pending</th>
          <th>Borrowing limit</th>
          <th>Lending limit</th>
        </tr>
      </thead>
      <tbody>
        {rs.map((r) => {
          const [borrow, lend] = limits(q, r);
          return (
            <tr key={r.Resource} data-resource={r.Resource}>
              <td class="nowrap">
                {r.Resource} <span class="muted small">{unit(r)}</span>
              </td>
              <td>{r.Quota || "–"}</td>
              <td>{r.Nominal}</td>
              <td>{r.Used}</td>
              <td>{r.Borrowed}</td>
              <td>{r.Lent}</td>
              <td>{r.Pending}</td>
              <td>{borrow}</td>
              <td>{lend}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function UsageChart({ samples }: { samples: UsageSample[] }) {
  const data = useMemo(
    () =>
      [samples.map((s) => s.t), samples.map((s) => s.used), samples.map((s) => s.nominal), samples.map((s) => s.pending)] as uPlot.AlignedData,
    [samples],
  );
  const stepped = uPlot.paths.stepped!({ align: 1 });
  return (
    <>
      <Chart
        name="queue-usage"
        title=""
        points={samples.length}
        data={data}
        height={220}
        options={{
          axes: [timeAxis(false), countAxis("GPUs")],
          series: [
            { label: "time" },
            { label: "GPUs used", stroke: palette[0], fill: "rgba(21,99,255,0.12)", width: 2, paths: stepped },
            { label: "nominal", stroke: palette[6], dash: [4, 4], width: 1.5, paths: stepped, points: { show: false } },
            { label: "pending", stroke: palette[1], width: 1.5, paths: stepped },
          ],
        }}
      />
      <p class="muted small">
        The server keeps no history of a queue's usage: this page samples it each time the API answers (at most once a second, and only when it changes), from
        when the page was opened, keeping the newest {maxSamples} samples, on this browser's clock. GPUs summed over the queue's GPU types.
      </p>
    </>
  );
}

function Jobs({ jobs }: { jobs: QueueJob[] }) {
  if (jobs.length === 0) return <p class="muted">No active jobs (or none your token may list).</p>;
  return (
    <table class="queue-jobs" data-rows={jobs.length}>
      <thead>
        <tr>
          <th>Job</th>
          <th>Status</th>
          <th>Decided</th>
          <th>Pending</th>
          <th>Reason</th>
        </tr>
      </thead>
      <tbody>
        {jobs.map((j) => (
          <tr key={`${j.Namespace}/${j.ID}`} data-job={j.ID} data-namespace={j.Namespace} data-pending={j.Pending ? "true" : "false"}>
            <td class="nowrap">
              <a href={jobPath(j.Namespace, j.ID)}>{j.ID}</a>
              {j.Namespace !== "default" ? <span class="muted"> @{j.Namespace}</span> : null}
            </td>
            <td>
              <Status status={j.Status} />
            </td>
            <td class="nowrap">{j.PS || j.Workers ? `${j.PS ? `${j.PS} ps × ` : ""}${plural(j.Workers, "worker")}` : "nothing"}</td>
            <td>{j.Pending ? <span class="tag">pending</span> : ""}</td>
            <td class="reason">{j.Reason ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Preemptions({ events }: { events: Event[] }) {
  if (events.length === 0) return <p class="muted">No preemptions since the server's oldest kept event.</p>;
  return (
    <table class="preemptions" data-rows={events.length}>
      <thead>
        <tr>
          <th>Time</th>
          <th>Job</th>
          <th>From</th>
          <th>To</th>
          <th>Why</th>
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.Seq} data-job={e.JobID}>
            <td class="nowrap">{time(e.Time)}</td>
            <td class="nowrap">
              <a href={jobPath(e.Namespace, e.JobID)}>{e.JobID}</a>
              {e.Namespace !== "default" ? <span class="muted"> @{e.Namespace}</span> : null}
            </td>
            <td class="nowrap">{e.Details?.From ?? "–"}</td>
            <td class="nowrap">{e.Details?.To ?? "–"}</td>
            <td>{e.Message}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
