// The UI reads only Caravan's public HTTP API (server/README.md), with the
// ACL token the user saved in this browser, sent as X-Caravan-Token.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";

const tokenKey = "caravan.token";

export function getToken(): string {
  return localStorage.getItem(tokenKey) ?? "";
}

export function setToken(token: string) {
  if (token) localStorage.setItem(tokenKey, token);
  else localStorage.removeItem(tokenKey);
}

export class APIError extends Error {
  constructor(
    public status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface Answer<T> {
  data: T;
  index: number;
  // nextToken is a list page's X-Caravan-NextToken: the ?next_token= of
  // the page after it; absent on the last page.
  nextToken?: string;
}

// get reads path (with its query) from the API; index > 0 makes it a
// blocking query that answers once the result's index exceeds index.
export async function get<T>(path: string, index = 0, signal?: AbortSignal): Promise<Answer<T>> {
  const url = new URL(path, window.location.origin);
  if (index > 0) {
    url.searchParams.set("index", String(index));
    url.searchParams.set("wait", "60s");
  }
  const headers: Record<string, string> = {};
  const token = getToken();
  if (token) headers["X-Caravan-Token"] = token;
  const res = await fetch(url, { headers, signal });
  if (!res.ok) {
    throw new APIError(res.status, (await res.text()).trim() || res.statusText);
  }
  const ct = res.headers.get("Content-Type") ?? "";
  const data = (ct.includes("json") ? await res.json() : await res.text()) as T;
  return {
    data,
    index: Number(res.headers.get("X-Caravan-Index") ?? 0),
    nextToken: res.headers.get("X-Caravan-NextToken") ?? undefined,
  };
}

export interface Live<T> {
  data?: T;
  error?: string;
  index: number;
  // nextToken is the latest answer's (Answer.nextToken).
  nextToken?: string;
}

// minGap bounds how often a live read asks again: a job's samples change
// its index many times a second on a fast simulated cluster.
const minGap = 1000;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });
}

// notRead is what useLive returns for a path it has no answer of yet.
const notRead: Live<never> = { index: 0 };

// useLive keeps path's answer up to date with blocking queries, as Nomad's
// UI does: each answer's X-Caravan-Index is the next request's ?index=.
// Endpoints without an index (agent, plugins, metrics) are polled every
// poll ms. A null path reads nothing. When path changes, the last path's
// answer is not returned, not even for the render before the new read
// starts: a page of a list never shows the page before it.
export function useLive<T>(path: string | null, poll = 5000): Live<T> {
  const [state, setState] = useState<{ path: string | null; live: Live<T> }>({ path, live: notRead });
  useEffect(() => {
    setState({ path, live: notRead });
    if (path === null) return;
    const ctl = new AbortController();
    (async () => {
      let index = 0;
      while (!ctl.signal.aborted) {
        const started = Date.now();
        try {
          const ans = await get<T>(path, index, ctl.signal);
          setState({ path, live: { data: ans.data, index: ans.index, nextToken: ans.nextToken } });
          if (ans.index > 0) {
            // An index that went backwards (a restarted agent) starts over.
            index = ans.index < index ? 0 : ans.index;
            await sleep(Math.max(0, minGap - (Date.now() - started)), ctl.signal);
          } else {
            await sleep(poll, ctl.signal);
          }
        } catch (err) {
          if (ctl.signal.aborted) return;
          setState((s) => ({ path, live: { ...s.live, error: String(err instanceof Error ? err.message : err) } }));
          index = 0;
          await sleep(3000, ctl.signal);
        }
      }
    })();
    return () => ctl.abort();
  }, [path, poll]);
  return state.path === path ? state.live : notRead;
}

// useEventLog keeps the events a /v1/events query selects as they
// arrive, oldest first, at most max of them (the newest): a blocking read
// of /v1/events answers only the events after its ?index=, so each answer
// is added to those before it, by Seq (a read again from the start after
// an error adds nothing twice).
export function useEventLog(path: string | null, max = 500): Live<Event[]> {
  const live = useLive<Event[]>(path);
  const log = useRef<{ path: string | null; bySeq: Map<number, Event> }>({ path, bySeq: new Map() });
  const data = useMemo(() => {
    if (log.current.path !== path) log.current = { path, bySeq: new Map() };
    if (live.data === undefined) return undefined;
    const bySeq = log.current.bySeq;
    for (const e of live.data ?? []) bySeq.set(e.Seq, e);
    const all = [...bySeq.values()].sort((a, b) => a.Seq - b.Seq);
    for (const e of all.slice(0, Math.max(0, all.length - max))) bySeq.delete(e.Seq);
    return all.slice(-max);
  }, [path, live.data]);
  return { data, error: live.error, index: live.index };
}

// The API's types, as far as the UI reads them (api/types.go, structs/).

export interface JobStub {
  ID: string;
  Name: string;
  Namespace: string;
  Status: string;
  StatusDescription?: string;
  Version: number;
  Priority: number;
  SubmitTime: number;
  Declared: boolean;
  NumPS: number;
  NumWorkers: number;
  Nodes: number;
  GPUs: number;
  // GPUTypes are the GPU types of the nodes of what runs, sorted.
  GPUTypes?: string[];
  Step: number;
  TotalSteps: number;
  Progress: number;
  RemainingSeconds: number;
  SimSpeed?: number;
  Algorithm?: string;
  Reason?: string;
}

export interface NodeShare {
  NodeID: string;
  PS: number;
  Workers: number;
}

export interface Placement {
  Namespace: string;
  JobID: string;
  NumPS: number;
  NumWorkers: number;
  Nodes: NodeShare[] | null;
  Reason: string;
}

export interface JobPlacement {
  PlanIndex: number;
  Time: number;
  Algorithm: string;
  Placement: Placement;
}

export interface Resources {
  CPU: number;
  MemoryMB: number;
  Devices: { Name: string; Count: number }[] | null;
}

export interface Role {
  Resources: Resources;
}

export interface Job {
  ID: string;
  Namespace: string;
  Priority: number;
  Status: string;
  // StatusDescription says why a job ended; for a rejected job, the
  // errors, one a line.
  StatusDescription?: string;
  Version: number;
  // Training and Elastic are null for a rejected job, which has no spec.
  Training: {
    Architecture: string;
    Mode: string;
    GlobalBatchSize: number;
    StepsPerEpoch: number;
    Convergence: { Threshold: number; Patience: number; MaxEpochs: number };
  };
  Elastic: { Workers: { Min: number; Max: number }; ParameterServers: { Min: number; Max: number } | null };
  Worker: Role | null;
  ParameterServer: Role | null;
}

export interface Shape {
  PS: number;
  Workers: number;
}

export interface JobModel {
  Loss: number[] | null;
  SpeedKind: string;
  Speed: number[] | null;
  Step: number;
  TotalSteps: number;
  StepsPerSecond: number;
  RemainingSeconds: number;
  LossRMSE: number;
  SpeedError: number;
  SpeedConfigs: number;
  Goodput?: GoodputModel;
  Profiling?: Shape[];
}

// GoodputModel is Pollux's goodput model of a job (structs.GoodputModel):
// Perf holds α_c, β_c, α_n, β_n, α_r, β_r and γ, in seconds.
export interface GoodputModel {
  Perf: number[] | null;
  FitError: number;
  MaxFitError: number;
  Configs: number;
  NoiseScale: number;
  RefBatch: number;
  Batch: number;
  Efficiency: number;
  Goodput: number;
  ByType?: GPUTypeModel[];
}

// GPUTypeModel is the throughput model of one GPU type against the step
// times measured there (structs.GPUTypeModel); Points holds at most 32 of
// the Configs configurations.
export interface GPUTypeModel {
  Type: string;
  Perf: number[] | null;
  FitError: number;
  MaxFitError: number;
  Configs: number;
  Points: PerfPoint[] | null;
}

// PerfPoint is a configuration measured, with the step time measured there
// and the model's, in seconds.
export interface PerfPoint {
  Nodes: number;
  Replicas: number;
  LocalBatch: number;
  StepTimeS: number;
  ModelStepTimeS: number;
}

export interface Change {
  Target: Placement | null;
  Phase: string;
  Message: string;
  Since: number;
}

export interface Observed {
  Placement: Placement | null;
  Change: Change | null;
}

export interface Sample {
  Role?: string;
  Rank: number;
  Step: number;
  Epoch: number;
  Loss: number;
  StepTimeS: number;
  NumPS: number;
  NumWorkers: number;
  Time: number;
}

export interface JobSummary {
  Job: Job;
  Placement?: JobPlacement;
  Observed?: Observed;
  Model?: JobModel;
  // GPUTypes is the GPU type of each node of the job's placements, by
  // node ID.
  GPUTypes?: Record<string, string>;
  Samples: number;
  LastSample?: Sample;
  SimSpeed?: number;
  // Queue is the queue the job's namespace maps to; absent while no
  // queue is defined.
  Queue?: string;
}

export interface JobSamples {
  Samples: Sample[] | null;
  Received: number;
}

export interface Event {
  Seq: number;
  Index: number;
  Time: number;
  Type: string;
  Namespace: string;
  JobID: string;
  Message: string;
  Details: Record<string, string> | null;
}

export interface Device {
  Vendor: string;
  Type: string;
  Name: string;
  Instances: { ID: string; Healthy: boolean }[] | null;
}

export interface Node {
  ID: string;
  Name: string;
  Datacenter: string;
  NodePool: string;
  Status: string;
  Eligible: boolean;
  CPU: number;
  MemoryMB: number;
  Devices: Device[] | null;
}

export interface NodeDetail {
  Node: Node;
  Tasks: { Namespace: string; JobID: string; PS: number; Workers: number; GPUs: number }[] | null;
  GPUsUsed: number;
  GPUsTotal: number;
}

export interface Plugin {
  Name: string;
  Version: string;
  Origin: string;
  APIVersion: string;
  SpeedModels: boolean;
  Health: string;
  Restarts?: number;
  Error?: string;
}

export interface SchedulerConfig {
  Algorithm: string;
  Options: Record<string, string> | null;
  ModifyIndex: number;
}

export interface Plan {
  Index: number;
  Algorithm: string;
  CreateTime: number;
  Placements: Placement[] | null;
}

export interface AgentSelf {
  ID: string;
  Name: string;
  Version: string;
  HTTPAddr: string;
  LeaderID: string;
  Voters: number;
  SimSpeed?: number;
}

// Queue is a team's share of the cluster (api/queues.go): the jobs of its
// Namespaces may use its nominal Quota, and borrow the idle quota of the
// queues of its Cohort.
export interface Queue {
  Name: string;
  Namespaces: string[] | null;
  Weight: number;
  Cohort: string;
  Quota: { GPU?: GPUQuota[] | null; CPU?: number; MemoryMB?: number };
  // Usage is what the queue's jobs hold and wait for under the latest
  // decision; absent when not known.
  Usage?: QueueUsage;
  CreateIndex: number;
  ModifyIndex: number;
}

// GPUQuota is a queue's quota of one GPU type; a limit left out is no
// cap (borrowing) or all of Nominal (lending).
export interface GPUQuota {
  Type: string;
  Nominal: number;
  BorrowingLimit?: number;
  LendingLimit?: number;
}

export interface QueueUsage {
  Resources: QueueResource[] | null;
  PendingJobs: number;
  // Jobs, pending first, only in GET /v1/queue/<name>.
  Jobs?: QueueJob[] | null;
}

// QueueResource is a queue's standing in one resource ("gpu/<type>",
// "cpu", "memory"), in GPUs, MHz or MB; Quota is the Type of the GPU
// quota that counts it.
export interface QueueResource {
  Resource: string;
  Quota?: string;
  Nominal: number;
  Used: number;
  Borrowed: number;
  Lent: number;
  Pending: number;
}

export interface QueueJob {
  Namespace: string;
  ID: string;
  Status: string;
  PS: number;
  Workers: number;
  Pending: boolean;
  Reason?: string;
}

// queuePath is the UI's address of a queue.
export function queuePath(name: string): string {
  return `/ui/queues/${encodeURIComponent(name)}`;
}

// jobPath is the UI's address of a job.
export function jobPath(ns: string, id: string): string {
  const q = ns && ns !== "default" ? `?namespace=${encodeURIComponent(ns)}` : "";
  return `/ui/jobs/${encodeURIComponent(id)}${q}`;
}

// apiJob is the API path of a job's endpoint.
export function apiJob(ns: string, id: string, what = ""): string {
  return `/v1/job/${encodeURIComponent(id)}${what ? "/" + what : ""}?namespace=${encodeURIComponent(ns)}`;
}

// useFetched runs load whenever key changes, at most every gap ms, and
// keeps its last result: reads derived from a live one (the nodes' details
// when the jobs change) that need no blocking query of their own.
export function useFetched<T>(key: string | null, load: (signal: AbortSignal) => Promise<T>, gap = 5000): Live<T> {
  const [state, setState] = useState<Live<T>>({ index: 0 });
  const [last, setLast] = useState(0);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (key === null) return;
    const wait = last + gap - Date.now();
    if (wait > 0) {
      // Too soon: load once the gap has passed.
      const t = setTimeout(() => setTick((n) => n + 1), wait);
      return () => clearTimeout(t);
    }
    const ctl = new AbortController();
    setLast(Date.now());
    load(ctl.signal)
      .then((data) => setState({ data, index: 0 }))
      .catch((err) => {
        if (!ctl.signal.aborted) setState((s) => ({ ...s, error: String(err instanceof Error ? err.message : err) }));
      });
    return () => ctl.abort();
  }, [key, tick]);
  return state;
}
