// Pieces shared by the pages.
import type { ComponentChildren } from "preact";
import { Event } from "../api";
import { time } from "../format";

export function Status({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}

export function Progress({ value }: { value: number }) {
  const pct = Math.max(0, Math.min(1, value)) * 100;
  return (
    <span class="progress" title={`${pct.toFixed(1)}%`}>
      <span class="bar" style={{ width: `${pct}%` }} />
      <span class="label">{pct.toFixed(0)}%</span>
    </span>
  );
}

// Problem shows a failed read; a 403 says which token to use.
export function Problem({ error }: { error?: string }) {
  if (!error) return null;
  const denied = error.includes("403") || error.includes("Permission denied") || error.includes("ACL token");
  return (
    <p class="problem" role="alert">
      {error}
      {denied ? " — set an ACL token with the right policy in the field above." : ""}
    </p>
  );
}

// Loading stands for what a live read has not answered yet, so that a
// page never shows "no jobs" or an empty table before it knows.
export function Loading({ what }: { what: string }) {
  return (
    <p class="muted loading" role="status" data-loading={what}>
      Loading {what}…
    </p>
  );
}

// answered is whether a live read has had an answer, empty or not (an
// empty list may come as null).
export function answered(live: { data?: unknown; index: number }): boolean {
  return live.data !== undefined || live.index > 0;
}

export function Card({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="card" id={id}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

// simNote marks durations and times of the simulated cluster.
export function simNote(speed?: number): string {
  return speed ? ` (simulated, ${speed}× the wall clock)` : "";
}

export function EventTable({ events, showJob }: { events: Event[]; showJob?: boolean }) {
  if (events.length === 0) return <p class="muted">No events.</p>;
  return (
    <table class="events" data-rows={events.length}>
      <thead>
        <tr>
          <th>Time</th>
          <th>Index</th>
          {showJob ? <th>Job</th> : null}
          <th>Type</th>
          <th>Message</th>
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.Seq} class={`event-${e.Type}`}>
            <td class="nowrap">{time(e.Time)}</td>
            <td>{e.Index}</td>
            {showJob ? <td>{e.JobID ? `${e.Namespace}/${e.JobID}` : "–"}</td> : null}
            <td>{e.Type}</td>
            <td>{e.Message}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
