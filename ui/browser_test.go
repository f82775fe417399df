package ui_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/chromedp/chromedp"
	"github.com/shoenig/test/must"
)

// The browser tests drive Debian's Chromium (installed by `make tools`,
// tools/build.sh chromium) headless against an in-process server on the
// simulated cluster. With CARAVAN_UI_SCREENSHOTS set to a directory (as
// `make screenshots` does), TestBrowser also writes a PNG of each page
// there.

// chromiumPath is the browser the tests start.
func chromiumPath() string {
	if p := os.Getenv("CARAVAN_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// startServer starts a server with a 4 × 4-GPU simulated cluster running
// speed times faster than the wall clock, its config changed by configure,
// and waits for it to lead. The client it returns sends no token.
func startServer(t *testing.T, speed float64, configure ...func(*server.Config)) (*server.Server, *api.Client) {
	t.Helper()
	cluster := sim.DefaultConfig()
	cluster.Nodes, cluster.GPUsPerNode = 4, 4
	d := sim.NewDriver(sim.DriverConfig{Cluster: cluster, Speed: speed})
	d.Start()
	t.Cleanup(d.Stop)
	cfg := server.TestConfig(t, d)
	for _, f := range configure {
		f(&cfg)
	}
	s := server.TestServer(t, cfg)
	agent.WaitFor(t, 10*time.Second, "the server to lead and record its version", func() error {
		if !s.IsLeader() {
			return errors.New("not the leader")
		}
		// Until it has, writes gated on a version (queues) are refused
		// with 503, as during an upgrade.
		members, err := state.Members(s.State().Txn(), nil)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(members, func(m *structs.Member) bool { return m.ID == s.ID() && m.Version != "" }) {
			return errors.New("its version is not recorded")
		}
		return nil
	})
	c, err := api.NewClient(&api.Config{Address: s.HTTPAddr()})
	must.NoError(t, err)
	return s, c
}

// register submits the example jobspec file as a job.
func register(t *testing.T, c *api.Client, file string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "examples", file))
	must.NoError(t, err)
	_, _, err = c.Jobs().Register(&api.JobRegisterRequest{JobHCL: string(src), Filename: file}, nil)
	must.NoError(t, err)
}

// browser is a headless Chromium tab that records the page's console
// errors, uncaught exceptions and failed loads.
type browser struct {
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromiumPath()
	if _, err := os.Stat(exe); err != nil {
		t.Fatalf("the UI's tests need Chromium at %s (run make tools, which installs Debian's chromium, or set CARAVAN_CHROMIUM): %v", exe, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &browser{ctx: ctx}
	// Subscribing starts the browser. The reader ends when the context is
	// cancelled, which closes the tab and stops the browser, on failure too.
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				if ctx.Err() == nil {
					b.problem("console: %v", err)
				}
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == "assert" || m.IsException() {
				b.problem("%s", m.String())
			}
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		<-done
	})
	return b
}

func (b *browser) problem(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// checkClean fails the test if a page logged an error.
func (b *browser) checkClean(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	must.SliceEmpty(t, b.problems, must.Sprintf("the pages logged errors:\n%s", strings.Join(b.problems, "\n")))
}

// do runs actions with a timeout.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, js string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](js))
}

// waitNumber waits until the JavaScript expression js, a number, is at
// least min, and returns it.
func (b *browser) waitNumber(t *testing.T, what, js string, min float64) float64 {
	t.Helper()
	var n float64
	agent.WaitFor(t, 60*time.Second, what, func() error {
		var err error
		if n, err = eval[float64](b, js); err != nil {
			return err
		}
		if n < min {
			return fmt.Errorf("%s is %v, want at least %v", what, n, min)
		}
		return nil
	})
	return n
}

// attr is JavaScript reading a numeric attribute of the first element
// that selector matches, or -1 when none does.
func attr(selector, name string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? Number(e.getAttribute(%q)) : -1 })()`, selector, name)
}

// screenshot writes a PNG of the page into CARAVAN_UI_SCREENSHOTS, if set.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("CARAVAN_UI_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100 is PNG, less is JPEG
	must.NoError(t, err)
	must.NoError(t, os.MkdirAll(dir, 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	t.Logf("wrote %s", filepath.Join(dir, name+".png"))
}

func TestBrowser(t *testing.T) {
	s, c := startServer(t, 30)
	base := "http://" + s.HTTPAddr()
	shots := os.Getenv("CARAVAN_UI_SCREENSHOTS") != ""
	register(t, c, "demo.hcl")
	if shots {
		for _, f := range []string{"resnet50-ps.hcl", "logreg-async.hcl", "bert-allreduce.hcl"} {
			register(t, c, f)
		}
	}
	b := newBrowser(t)

	t.Run("jobs", func(t *testing.T) {
		// / is the UI's address too.
		must.NoError(t, b.do(chromedp.Navigate(base+"/")))
		loc, err := eval[string](b, `location.pathname`)
		must.NoError(t, err)
		must.EqOp(t, "/ui/", loc)
		b.waitNumber(t, "the demo job in the list", `document.querySelectorAll('tr[data-job="demo"]').length`, 1)
		row, err := eval[string](b, `document.querySelector('tr[data-job="demo"]').innerText`)
		must.NoError(t, err)
		must.StrContains(t, row, "running")
		must.StrContains(t, row, "optimus")
		b.waitNumber(t, "the demo job's GPU type", fmt.Sprintf(`document.querySelector('tr[data-job="demo"] td[data-gpu-types]').dataset.gpuTypes === %q ? 1 : 0`, sim.DefaultGPUModel.Name), 1)
		if shots {
			b.waitNumber(t, "four jobs", `document.querySelectorAll('tr[data-job]').length`, 4)
			b.waitNumber(t, "the demo job's progress", `parseFloat(document.querySelector('tr[data-job="demo"] .progress .bar').style.width)`, 30)
		}
		b.screenshot(t, "jobs")
	})

	t.Run("job", func(t *testing.T) {
		// The link routes in the page, without a reload.
		must.NoError(t, b.do(chromedp.Evaluate[chromedp.Void](`window.__noReload = true`), chromedp.Click(chromedp.CSS(`tr[data-job="demo"] a`))))
		b.waitNumber(t, "the job page", `document.querySelectorAll('[data-page="job"]').length`, 1)
		same, err := eval[bool](b, `window.__noReload === true && location.pathname === "/ui/jobs/demo"`)
		must.NoError(t, err)
		must.True(t, same, must.Sprint("the job link did not route in the page"))
		min := 5.0
		if shots {
			min = 15 // a longer curve for the README
		}
		b.waitNumber(t, "measured losses on the loss chart", attr(`[data-chart="loss"]`, "data-points"), min)
		b.waitNumber(t, "the loss chart's canvas", `document.querySelectorAll('[data-chart="loss"] canvas').length`, 1)
		b.waitNumber(t, "the fitted loss model", `document.body.innerText.includes("Optimus' model l(k)") ? 1 : 0`, 1)
		b.waitNumber(t, "measured speeds on the speed chart", attr(`[data-chart="speed"]`, "data-points"), 1)
		b.waitNumber(t, "placements on the timeline", attr(`[data-chart="timeline"]`, "data-points"), 1)
		b.waitNumber(t, "the job's events", attr(`#events table.events`, "data-rows"), 2)
		b.waitNumber(t, "the job's GPU types", fmt.Sprintf(`document.querySelector('dd[data-gpu-types]').dataset.gpuTypes === %q ? 1 : 0`, sim.DefaultGPUModel.Name), 1)
		checkThroughputByType(t, b, c, "demo", sim.DefaultGPUModel.Name)
		b.screenshot(t, "job")
	})

	t.Run("cluster", func(t *testing.T) {
		must.NoError(t, b.do(chromedp.Navigate(base+"/ui/cluster")))
		must.EqOp(t, 4, b.waitNumber(t, "the nodes", attr(`table.nodes`, "data-rows"), 4))
		b.waitNumber(t, "a job on a node", `document.querySelectorAll('table.nodes td a[href^="/ui/jobs/"]').length`, 1)
		b.waitNumber(t, "GPU use over time", attr(`[data-chart="utilisation"]`, "data-points"), 2)
		b.screenshot(t, "cluster")
	})

	t.Run("scheduler", func(t *testing.T) {
		must.NoError(t, b.do(chromedp.Navigate(base+"/ui/scheduler")))
		b.waitNumber(t, "the plugins", attr(`table.plugins`, "data-rows"), 3)
		must.NoError(t, b.do(chromedp.WaitVisible(chromedp.CSS(`[data-algorithm]`))))
		algo, err := eval[string](b, `document.querySelector('[data-algorithm]').dataset.algorithm`)
		must.NoError(t, err)
		must.EqOp(t, "optimus", algo)
		b.waitNumber(t, "recent rounds", attr(`table.rounds`, "data-rows"), 1)
		b.screenshot(t, "scheduler")
	})

	b.checkClean(t)
}

// checkThroughputByType waits until the job page's throughput table of
// GPU type typ lists the configurations the API's summary of job gives for
// that type, in its order, and checks that each row shows its measured and
// model step times in milliseconds with the model's signed error.
func checkThroughputByType(t *testing.T, b *browser, c *api.Client, job, typ string) {
	t.Helper()
	table := fmt.Sprintf(`table.throughput[data-type=%q]`, typ)
	b.waitNumber(t, "a measured configuration of "+typ, attr(table, "data-rows"), 1)
	var rows []string
	agent.WaitFor(t, 60*time.Second, "the page's configurations of "+typ+" to be the API's", func() error {
		sum, _, err := c.Jobs().Summary(job, nil)
		if err != nil {
			return err
		}
		var want []string
		if m := sum.Model; m != nil && m.Goodput != nil {
			for _, tm := range m.Goodput.ByType {
				if tm.Type != typ {
					continue
				}
				for _, p := range tm.Points {
					want = append(want, fmt.Sprintf("%d/%d/%d", p.Nodes, p.Replicas, p.LocalBatch))
				}
			}
		}
		got, err := eval[[]string](b, fmt.Sprintf(`[...document.querySelectorAll('%s tbody tr')].map((r) => r.dataset.config)`, table))
		if err != nil {
			return err
		}
		if len(want) == 0 || strings.Join(got, " ") != strings.Join(want, " ") {
			return fmt.Errorf("the page lists %v, the API %v", got, want)
		}
		rows, err = eval[[]string](b, fmt.Sprintf(`[...document.querySelectorAll('%s tbody tr')].map((r) => r.innerText)`, table))
		return err
	})
	row := regexp.MustCompile(`^\d+\t\d+\t\d+\t[\d.]+ ms\t[\d.]+ ms\t([+-][\d.]+|0)%$`)
	for _, r := range rows {
		must.RegexMatch(t, row, r)
	}
}

// TestBrowser_States: an empty job list says so (and never stays blank),
// and the job page's sentences read right for small values: a 0.1%
// convergence threshold is not "0%", one epoch is not "1 epochs".
func TestBrowser_States(t *testing.T) {
	s, c := startServer(t, 30)
	base := "http://" + s.HTTPAddr()
	b := newBrowser(t)

	must.NoError(t, b.do(chromedp.Navigate(base+"/ui/")))
	b.waitNumber(t, "the empty list's sentence", `document.body.innerText.includes("No jobs yet") ? 1 : 0`, 1)
	loading, err := eval[int](b, `document.querySelectorAll('[data-loading]').length`)
	must.NoError(t, err)
	must.EqOp(t, 0, loading)

	src, err := os.ReadFile(filepath.Join("..", "examples", "demo.hcl"))
	must.NoError(t, err)
	hcl := strings.Replace(string(src), "threshold  = 0.01", "threshold  = 0.001", 1)
	hcl = strings.Replace(hcl, "patience   = 2", "patience   = 1", 1)
	must.StrContains(t, hcl, "0.001")
	_, _, err = c.Jobs().Register(&api.JobRegisterRequest{JobHCL: hcl, Filename: "demo.hcl"}, nil)
	must.NoError(t, err)
	b.waitNumber(t, "the job in the list", `document.querySelectorAll('tr[data-job="demo"]').length`, 1)

	must.NoError(t, b.do(chromedp.Navigate(base+"/ui/jobs/demo")))
	b.waitNumber(t, "the fitted loss model", `document.body.innerText.includes("Optimus' model l(k)") ? 1 : 0`, 1)
	text, err := eval[string](b, `document.querySelector('#loss').innerText`)
	must.NoError(t, err)
	must.StrContains(t, text, "falls by less than 0.1% an epoch for 1 epoch in a row")
	b.checkClean(t)
}
