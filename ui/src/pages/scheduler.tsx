// The scheduler page: the algorithm in force and its options, the
// plugins that can run and their health, fallbacks, and recent rounds
// (the placements each decision committed, grouped by its Raft index;
// earlier versions keyed events' details in lower case),
// with the leader's round and planning times from /v1/metrics.
import { Event, jobPath, Plan, Plugin, SchedulerConfig, useLive } from "../api";
import { num, time } from "../format";
import { answered, Card, EventTable, Loading, Problem } from "./common";

const roundTypes = ["JobPlaced", "JobRescaled", "JobWaiting"];
const schedTypes = ["AlgorithmChanged", "AlgorithmFallback"];
const filter = encodeURIComponent([...roundTypes, ...schedTypes].map((t) => `Type == "${t}"`).join(" or "));

// How many rounds the page lists.
const recentRounds = 15;

interface Summary {
  count: number;
  sum: number;
  quantiles: Record<string, number>;
}

// summaries reads the Prometheus summaries named in names from metrics text.
function summaries(text: string, names: string[]): Record<string, Summary> {
  const out: Record<string, Summary> = {};
  for (const name of names) out[name] = { count: 0, sum: 0, quantiles: {} };
  for (const line of text.split("\n")) {
    const m = line.match(/^([a-z_]+?)(_sum|_count)?(\{quantile="([0-9.]+)"\})? ([0-9.eE+-]+|NaN)$/);
    if (!m || !(m[1] in out)) continue;
    const v = Number(m[5]);
    if (m[2] === "_sum") out[m[1]].sum = v;
    else if (m[2] === "_count") out[m[1]].count = v;
    else if (m[4]) out[m[1]].quantiles[m[4]] = v;
  }
  return out;
}

// ms formats a go-metrics timer, which is in milliseconds.
function ms(v: number | undefined): string {
  return v === undefined || !isFinite(v) ? "–" : `${num(v)} ms`;
}

export function SchedulerPage() {
  const config = useLive<SchedulerConfig>("/v1/operator/scheduler/configuration");
  const plugins = useLive<Plugin[]>("/v1/plugins", 5000);
  const plan = useLive<Plan>("/v1/plan");
  const events = useLive<Event[]>(`/v1/events?filter=${filter}`);
  const metrics = useLive<string>("/v1/metrics", 5000);
  const evs = events.data ?? [];
  const fallbacks = evs.filter((e) => schedTypes.includes(e.Type)).reverse();
  const rounds = new Map<number, Event[]>();
  for (const e of evs) {
    if (!roundTypes.includes(e.Type)) continue;
    rounds.set(e.Index, [...(rounds.get(e.Index) ?? []), e]);
  }
  const recent = [...rounds.entries()].sort((a, b) => b[0] - a[0]).slice(0, recentRounds);
  const sums = metrics.data ? summaries(metrics.data, ["caravan_leader_round", "caravan_leader_plan"]) : null;
  const discarded = metrics.data?.match(/^caravan_leader_plan_discarded(?:_count)? ([0-9.eE+-]+)$/m)?.[1];
  return (
    <section data-page="scheduler">
      <h1>Scheduler</h1>
      <Problem error={config.error} />
      <Card title="Algorithm" id="algorithm">
        {config.data ? (
          <dl class="overview">
            <dt>In force</dt>
            <dd data-algorithm={config.data.Algorithm}>
              <strong>{config.data.Algorithm}</strong>
              <span class="muted"> since index {config.data.ModifyIndex}</span>
            </dd>
            <dt>Options</dt>
            <dd>
              {Object.entries(config.data.Options ?? {}).length
                ? Object.entries(config.data.Options ?? {})
                    .map(([k, v]) => `${k} = ${v}`)
                    .join(", ")
                : "defaults"}
            </dd>
            <dt>Last decision</dt>
            <dd>
              {plan.data?.Index
                ? `index ${plan.data.Index} by ${plan.data.Algorithm} at ${time(plan.data.CreateTime)}, ${plan.data.Placements?.length ?? 0} jobs placed`
                : "none yet"}
            </dd>
            <dt>Rounds</dt>
            <dd>
              {sums
                ? `${sums.caravan_leader_round.count} on this agent since it started; committing and enacting p50 ${ms(sums.caravan_leader_round.quantiles["0.5"])}, p99 ${ms(
                    sums.caravan_leader_round.quantiles["0.99"],
                  )}; planning p50 ${ms(sums.caravan_leader_plan.quantiles["0.5"])}, p99 ${ms(sums.caravan_leader_plan.quantiles["0.99"])}${
                    discarded ? `; ${discarded} stale plans discarded` : ""
                  }`
                : "–"}
            </dd>
          </dl>
        ) : null}
      </Card>
      <Card title="Plugins" id="plugins">
        <Problem error={plugins.error} />
        <table class="plugins" data-rows={plugins.data?.length ?? 0}>
          <thead>
            <tr>
              <th>Algorithm</th>
              <th>Version</th>
              <th>Origin</th>
              <th>API</th>
              <th>Speed models</th>
              <th>Health</th>
              <th>Restarts</th>
            </tr>
          </thead>
          <tbody>
            {(plugins.data ?? []).map((p) => (
              <tr key={p.Name} class={p.Name === config.data?.Algorithm ? "selected" : ""}>
                <td>{p.Name}</td>
                <td>{p.Version}</td>
                <td>{p.Origin}</td>
                <td>{p.APIVersion}</td>
                <td>{p.SpeedModels ? "yes" : ""}</td>
                <td>
                  <span class={`status status-${p.Health}`}>{p.Health}</span>
                  {p.Error ? <div class="small">{p.Error}</div> : null}
                </td>
                <td>{p.Restarts ?? 0}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
      <Card title="Algorithm changes and fallbacks" id="fallbacks">
        <Problem error={events.error} />
        {answered(events) ? <EventTable events={fallbacks} /> : events.error ? null : <Loading what="the events" />}
      </Card>
      <Card title="Recent rounds" id="rounds">
        {!answered(events) && !events.error ? <Loading what="the rounds" /> : null}
        {answered(events) && recent.length === 0 ? <p class="muted">No placements yet.</p> : null}
        {recent.length > 0 ? (
          <table class="rounds" data-rows={recent.length}>
            <thead>
              <tr>
                <th>Index</th>
                <th>Time</th>
                <th>Algorithm</th>
                <th>Jobs changed</th>
              </tr>
            </thead>
            <tbody>
              {recent.map(([index, es]) => (
                <tr key={index}>
                  <td>{index}</td>
                  <td class="nowrap">{time(es[0].Time)}</td>
                  <td>{es[0].Details?.Algorithm ?? es[0].Details?.algorithm ?? ""}</td>
                  <td>
                    {es.map((e) => (
                      <div key={e.Seq}>
                        <a href={jobPath(e.Namespace, e.JobID)}>{e.JobID}</a> {e.Type.replace(/^Job/, "").toLowerCase()}: {e.Message}
                      </div>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </Card>
    </section>
  );
}
