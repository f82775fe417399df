// Caravan's web UI: a Preact app served by every agent at /ui/, reading
// the agent's HTTP API. Routes are paths under /ui/ (the agent answers
// index.html for each), handled here without a router library.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { AgentSelf, getToken, setToken, useLive } from "./api";
import { JobsPage } from "./pages/jobs";
import { JobPage } from "./pages/job";
import { ClusterPage } from "./pages/cluster";
import { SchedulerPage } from "./pages/scheduler";
import { QueuePage, QueuesPage } from "./pages/queues";
import "./style.css";

// navigate moves to an address of the UI without reloading.
export function navigate(to: string) {
  history.pushState(null, "", to);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

function useLocation(): URL {
  const [url, setURL] = useState(() => new URL(window.location.href));
  useEffect(() => {
    const on = () => setURL(new URL(window.location.href));
    window.addEventListener("popstate", on);
    // Links inside the UI move without reloading.
    const click = (e: MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
      const a = (e.target as Element).closest("a");
      if (!a || a.target || !a.href.startsWith(window.location.origin + "/ui/")) return;
      e.preventDefault();
      navigate(a.href.slice(window.location.origin.length));
    };
    document.addEventListener("click", click);
    return () => {
      window.removeEventListener("popstate", on);
      document.removeEventListener("click", click);
    };
  }, []);
  return url;
}

function TokenField() {
  const [value, setValue] = useState(getToken());
  const [saved, setSaved] = useState(false);
  return (
    <form
      class="token"
      onSubmit={(e) => {
        e.preventDefault();
        setToken(value.trim());
        setSaved(true);
        window.location.reload();
      }}
    >
      <input
        type="password"
        placeholder="ACL token"
        aria-label="ACL token"
        value={value}
        onInput={(e) => {
          setValue((e.target as HTMLInputElement).value);
          setSaved(false);
        }}
      />
      <button type="submit">{saved ? "Saved" : "Use token"}</button>
    </form>
  );
}

function Header({ path }: { path: string }) {
  const self = useLive<AgentSelf>("/v1/agent/self", 10000);
  const tab = (to: string, label: string, match: (p: string) => boolean) => (
    <a href={to} class={match(path) ? "active" : ""}>
      {label}
    </a>
  );
  return (
    <header>
      <a class="brand" href="/ui/">
        Caravan
      </a>
      <nav>
        {tab("/ui/", "Jobs", (p) => p === "/ui/" || p.startsWith("/ui/jobs"))}
        {tab("/ui/queues", "Queues", (p) => p.startsWith("/ui/queues"))}
        {tab("/ui/cluster", "Cluster", (p) => p.startsWith("/ui/cluster"))}
        {tab("/ui/scheduler", "Scheduler", (p) => p.startsWith("/ui/scheduler"))}
      </nav>
      <span class="agent">
        {self.data
          ? `${self.data.Name} · ${self.data.Version}${self.data.SimSpeed ? ` · simulated cluster at ${self.data.SimSpeed}×` : ""}`
          : ""}
      </span>
      <TokenField />
    </header>
  );
}

function App() {
  const url = useLocation();
  const path = url.pathname.replace(/\/+$/, "/") || "/ui/";
  let page;
  const job = path.match(/^\/ui\/jobs\/([^/]+)$/);
  const queue = path.match(/^\/ui\/queues\/([^/]+)$/);
  if (job) {
    page = <JobPage id={decodeURIComponent(job[1])} ns={url.searchParams.get("namespace") ?? "default"} />;
  } else if (queue) {
    page = <QueuePage name={decodeURIComponent(queue[1])} />;
  } else if (path === "/ui/queues" || path === "/ui/queues/") {
    page = <QueuesPage />;
  } else if (path === "/ui/cluster") {
    page = <ClusterPage />;
  } else if (path === "/ui/scheduler") {
    page = <SchedulerPage />;
  } else if (path === "/ui/" || path === "/ui/jobs") {
    page = <JobsPage token={url.searchParams.get("next_token") ?? ""} />;
  } else {
    page = (
      <section>
        <h1>Not found</h1>
        <p>
          No page at {path}. <a href="/ui/">Jobs</a>
        </p>
      </section>
    );
  }
  return (
    <>
      <Header path={path} />
      <main>{page}</main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
