// The job list, a page at a time: each job with what runs of it and on
// which GPU types, its progress, predicted completion and the reason the
// algorithm gave.
import { useEffect } from "preact/hooks";
import { JobStub, jobPath, useLive } from "../api";
import { duration, shape } from "../format";
import { Loading, Problem, Progress, Status, answered } from "./common";

// perPage is how many jobs a page lists, as Nomad's UI lists 25: the
// server builds only the stubs of the page asked for, so the page costs
// the same at 100 jobs or 100,000.
export const perPage = 25;

// seen remembers, for each page's token (its ?next_token=, "" for the
// first page), the token of the page before it and the number of its
// first job, as Next reaches it: Previous goes back through them. It
// outlives the page (a job's page and back) but not a reload, after which
// Previous leads to the first page.
const seen = new Map<string, { prev: string; first: number }>([["", { prev: "", first: 1 }]]);

// pagePath is the UI's address of the page of the list that starts at token.
function pagePath(token: string): string {
  return token ? `/ui/?next_token=${encodeURIComponent(token)}` : "/ui/";
}

function completion(j: JobStub): string {
  if (j.Status !== "running" && j.Status !== "pending") return "–";
  if (!j.RemainingSeconds) return "not predicted yet";
  return `in ${duration(j.RemainingSeconds)}${j.SimSpeed ? " (sim)" : ""}`;
}

// JobsPage lists the page of jobs that starts at token (a page's
// X-Caravan-NextToken, "" for the first), in the API's order (namespace,
// then ID), kept up to date with a blocking query of that page only.
export function JobsPage({ token }: { token: string }) {
  const q = new URLSearchParams({ per_page: String(perPage) });
  if (token) q.set("next_token", token);
  const jobs = useLive<JobStub[]>(`/v1/jobs?${q}`);
  const list = jobs.data ?? [];
  const here = seen.get(token);
  const next = jobs.nextToken;
  useEffect(() => {
    if (next && !seen.has(next)) seen.set(next, { prev: token, first: here ? here.first + perPage : 0 });
  }, [token, next]);
  const sim = list.find((j) => j.SimSpeed)?.SimSpeed;
  return (
    <section data-page="jobs">
      <h1>Jobs</h1>
      <Problem error={jobs.error} />
      {!answered(jobs) && !jobs.error ? <Loading what="jobs" /> : null}
      {answered(jobs) && list.length === 0 && !token ? (
        <p class="muted">
          No jobs yet. Submit one with <code>caravan job run examples/demo.hcl</code>.
        </p>
      ) : null}
      {answered(jobs) && list.length === 0 && token ? (
        <p class="muted">
          No jobs on this page any more. <a href={pagePath("")}>First page</a>
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
      {list.length > 0 ? <Pager token={token} first={here?.first} shown={list.length} next={next} /> : null}
      {sim ? <p class="muted small">Times are those of the simulated cluster, which runs {sim}× faster than the wall clock.</p> : null}
    </section>
  );
}

// Pager says which jobs the page shows and links the pages before and
// after it, as Nomad's UI does: next with the answer's token, previous
// with the token of the page Next came from (the first page when that is
// not known).
function Pager({ token, first, shown, next }: { token: string; first?: number; shown: number; next?: string }) {
  const prev = seen.get(token)?.prev ?? "";
  return (
    <nav class="pager" aria-label="Pages of jobs">
      {token ? (
        <a href={pagePath(prev)} data-pager="previous" rel="prev">
          ← Previous
        </a>
      ) : (
        <span class="muted">← Previous</span>
      )}
      <span class="muted small" data-first={first ?? ""}>
        {first ? `jobs ${first}–${first + shown - 1}` : `${shown} jobs`}
        {next ? "" : ", the last"}
      </span>
      {next ? (
        <a href={pagePath(next)} data-pager="next" rel="next">
          Next →
        </a>
      ) : (
        <span class="muted">Next →</span>
      )}
    </nav>
  );
}
