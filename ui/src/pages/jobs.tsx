// The job list: every job with what runs of it and on which GPU types,
// its progress, predicted completion and the reason the algorithm gave.
import { JobStub, jobPath, useLive } from "../api";
import { duration, shape } from "../format";
import { Loading, Problem, Progress, Status, answered } from "./common";

function completion(j: JobStub): string {
  if (j.Status !== "running" && j.Status !== "pending") return "–";
  if (!j.RemainingSeconds) return "not predicted yet";
  return `in ${duration(j.RemainingSeconds)}${j.SimSpeed ? " (sim)" : ""}`;
}

export function JobsPage() {
  const jobs = useLive<JobStub[]>("/v1/jobs");
  const list = jobs.data ?? [];
  const sim = list.find((j) => j.SimSpeed)?.SimSpeed;
  return (
    <section>
      <h1>Jobs</h1>
      <Problem error={jobs.error} />
      {!answered(jobs) && !jobs.error ? <Loading what="jobs" /> : null}
      {answered(jobs) && list.length === 0 ? (
        <p class="muted">
          No jobs yet. Submit one with <code>caravan job run examples/demo.hcl</code>.
        </p>
      ) : null}
      {list.length > 0 ? (
        <table class="jobs" data-rows={list.length}>
          <thead>
            <tr>
              <th>Job</th>
              <th>Status</th>
              <th>Shape</th>
              <th>GPUs</th>
              <th>GPU type</th>
              <th>Progress</th>
              <th>Completes</th>
              <th>Algorithm's reason</th>
            </tr>
          </thead>
          <tbody>
            {list.map((j) => (
              <tr key={`${j.Namespace}/${j.ID}`} data-job={j.ID}>
                <td class="nowrap">
                  <a href={jobPath(j.Namespace, j.ID)}>{j.ID}</a>
                  {j.Namespace !== "default" ? <span class="muted"> @{j.Namespace}</span> : null}
                  {j.Declared ? <span class="tag">Nomad</span> : null}
                </td>
                <td>
                  <Status status={j.Status} />
                </td>
                <td class="nowrap">{j.NumWorkers > 0 ? shape(j.NumPS, j.NumWorkers, j.Nodes) : "–"}</td>
                <td>{j.GPUs}</td>
                <td class="nowrap" data-gpu-types={(j.GPUTypes ?? []).join(", ")}>
                  {j.GPUTypes?.length ? j.GPUTypes.join(", ") : "–"}
                </td>
                <td>
                  <Progress value={j.Progress} />
                  <span class="muted small">
                    {" "}
                    step {j.Step}
                    {j.TotalSteps ? ` of ~${Math.round(j.TotalSteps)}` : ""}
                  </span>
                </td>
                <td class="nowrap">{completion(j)}</td>
                <td class="reason">{j.Reason ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {sim ? <p class="muted small">Times are those of the simulated cluster, which runs {sim}× faster than the wall clock.</p> : null}
    </section>
  );
}
