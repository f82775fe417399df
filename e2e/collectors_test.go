//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/collector"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server"
	"github.com/caravan-sched/caravan/server/collectors"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// startCollector starts an in-process collector registered in Consul for
// job and returns it; it is shut down when the test ends.
func startCollector(t *testing.T, consul *agent.Consul, job string) *collector.Collector {
	t.Helper()
	c, err := collector.New(collector.Config{
		Consul:       consul.Client,
		Registration: collector.Registration{Tags: []string{"job=" + job}, CheckInterval: 200 * time.Millisecond},
	})
	must.NoError(t, err)
	must.NoError(t, c.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Shutdown(ctx)
	})
	return c
}

// gathered reads a Source after *cursor, as the leader does, until it
// returned want samples, and advances *cursor.
func gathered(t *testing.T, src *collectors.Source, cursor *uint64, want int) []structs.Sample {
	t.Helper()
	var all []structs.Sample
	agent.WaitFor(t, 30*time.Second, fmt.Sprintf("%d samples gathered", want), func() error {
		smps, next, err := src.Samples(context.Background(), *cursor)
		if err != nil {
			return err
		}
		all, *cursor = append(all, smps...), next
		if len(all) < want {
			return fmt.Errorf("%d of %d samples", len(all), want)
		}
		return nil
	})
	return all
}

// TestCollectors_DiscoverAndScrape runs real collectors registered in a
// real Consul agent: the source finds them, gathers their samples once
// each even when a collector is read again from its start, drops
// implausible ones, and stops scraping a collector that left.
func TestCollectors_DiscoverAndScrape(t *testing.T) {
	t.Parallel()
	consul := agent.StartConsul(t)
	a := startCollector(t, consul, "a")
	b := startCollector(t, consul, "b")

	src := collectors.New(collectors.Config{Consul: consul.Client, Wait: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); src.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	report := func(c *collector.Collector, smps ...structs.Sample) {
		_, err := c.Report(smps)
		must.NoError(t, err)
	}
	report(a, structs.Sample{JobID: "a", Step: 1, Loss: 1, Time: 10}, structs.Sample{JobID: "a", Step: 2, Loss: 0.9, Time: 20})
	report(b, structs.Sample{JobID: "b", Step: 7, Loss: 2, Time: 30})
	// 10^12 samples in a second, and a step before a checkpoint it
	// reported: a lying collector.
	report(b, structs.Sample{JobID: "b", Step: 8, Loss: 1.9, Samples: 1e12, StepTimeS: 1, Time: 40})
	report(b, structs.Sample{JobID: "b", Step: 9, Loss: 1.8, CheckpointStep: 9, Time: 50})
	report(b, structs.Sample{JobID: "b", Step: 4, Loss: 1.7, Time: 60})
	var cursor uint64
	got := gathered(t, src, &cursor, 4)
	must.SliceLen(t, 4, got)
	agent.WaitFor(t, 10*time.Second, "two samples flagged", func() error {
		flagged := 0
		for _, n := range src.Flagged() {
			flagged += n
		}
		if flagged != 2 {
			return fmt.Errorf("%d samples flagged", flagged)
		}
		return nil
	})

	// The same samples again (a collector read from its start) are not
	// gathered twice; a new one is.
	report(a, structs.Sample{JobID: "a", Step: 2, Loss: 0.9, Time: 20}, structs.Sample{JobID: "a", Step: 3, Loss: 0.8, Time: 30})
	smps := gathered(t, src, &cursor, 1)
	must.Eq(t, []int64{3}, []int64{smps[0].Step})

	// A collector that leaves is deregistered and no longer scraped.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	must.NoError(t, b.Shutdown(sctx))
	agent.WaitFor(t, 30*time.Second, "collector b deregistered", func() error {
		entries, _, err := consul.Client.Health().Service(collectors.DefaultService, "", true, nil)
		if err != nil {
			return err
		}
		if len(entries) != 1 {
			return fmt.Errorf("%d collectors registered", len(entries))
		}
		return nil
	})
}

// scrapingServer starts a Caravan server on a simulated cluster whose
// samples come from the collectors in consul, registers the demo job as
// id, and returns its client.
func scrapingServer(t *testing.T, consul *agent.Consul, id string) *api.Client {
	t.Helper()
	d := sim.NewDriver(sim.DriverConfig{Speed: 1})
	d.Start()
	t.Cleanup(d.Stop)
	cfg := server.TestConfig(t, d)
	scraper := collectors.New(collectors.Config{Consul: consul.Client, Wait: time.Second})
	cfg.Metrics, cfg.Gatherer = scraper, scraper
	srv := server.TestServer(t, cfg)
	c, err := api.NewClient(&api.Config{Address: srv.HTTPAddr()})
	must.NoError(t, err)
	agent.WaitFor(t, 10*time.Second, "a leader", func() error {
		if !srv.IsLeader() {
			return fmt.Errorf("not leading yet")
		}
		return nil
	})
	src, err := os.ReadFile("../examples/demo.hcl")
	must.NoError(t, err)
	_, _, err = c.Jobs().Register(&api.JobRegisterRequest{
		JobHCL: strings.Replace(string(src), `job "demo"`, fmt.Sprintf("job %q", id), 1), Filename: "demo.hcl"}, nil)
	must.NoError(t, err)
	return c
}

// TestCollectors_FeedRefits runs a Caravan server whose samples come from
// collectors in a real Consul agent: a collector registers, the leader
// discovers it, the samples reach the replicated state, and the refitted
// models change the job's predicted remaining time.
func TestCollectors_FeedRefits(t *testing.T) {
	consul := agent.StartConsul(t)
	col := startCollector(t, consul, "refit")
	c := scrapingServer(t, consul, "refit")
	agent.WaitFor(t, 20*time.Second, "job placed", jobIs(c, "refit", structs.JobStatusRunning))

	// A trainer at 1 PS + 1 worker, then 1 PS + 2 workers, for 4 epochs,
	// its loss falling as 1/(0.01k + 1) + 0.1.
	start := time.Now().Add(-time.Hour)
	report := func(from, to int64, workers int, stepTime float64) {
		var smps []structs.Sample
		for k := from; k < to; k++ {
			smps = append(smps, structs.Sample{
				JobID: "refit", Role: structs.RoleWorker, Step: k, Loss: 1/(0.01*float64(k)+1) + 0.1,
				StepTimeS: stepTime, NumPS: 1, NumWorkers: workers,
				Time: start.Add(time.Duration(k) * time.Second).UnixNano(),
			})
		}
		_, err := col.Report(smps)
		must.NoError(t, err)
	}
	report(1, 100, 1, 0.5)
	report(100, 200, 2, 0.3)
	var first float64
	var firstSpeed []float64
	agent.WaitFor(t, 30*time.Second, "a fitted model predicting the remaining time", func() error {
		sum, _, err := c.Jobs().Summary("refit", nil)
		if err != nil {
			return err
		}
		if sum.Samples < 199 || sum.Model == nil || sum.Model.RemainingSeconds <= 0 {
			return fmt.Errorf("%d samples, model %+v", sum.Samples, sum.Model)
		}
		first, firstSpeed = sum.Model.RemainingSeconds, sum.Model.Speed
		return nil
	})

	// The trainer reports much slower steps: the speed model is refitted
	// (the scheduler averages each configuration's speed over its samples
	// and predicts at the job's placement) and the prediction changes.
	report(200, 300, 2, 3)
	agent.WaitFor(t, 30*time.Second, "a refit", func() error {
		sum, _, err := c.Jobs().Summary("refit", nil)
		if err != nil {
			return err
		}
		if sum.Samples < 299 || slices.Equal(sum.Model.Speed, firstSpeed) || sum.Model.RemainingSeconds == first {
			return fmt.Errorf("%d samples, speed %v (was %v), remaining %v s (was %v s)", sum.Samples, sum.Model.Speed, firstSpeed, sum.Model.RemainingSeconds, first)
		}
		t.Logf("predicted remaining time: %.0fs, after the refit %.0fs", first, sum.Model.RemainingSeconds)
		return nil
	})
}

// TestCollectors_RetriedReportStoredOnce follows one sample a trainer
// reports again after answers it could not read (issue 26): twice to its
// collector, once to a second collector it failed over to, and once to the
// server's API. The leader scrapes both collectors from a real Consul
// agent, and the server stores the sample once.
func TestCollectors_RetriedReportStoredOnce(t *testing.T) {
	consul := agent.StartConsul(t)
	a := startCollector(t, consul, "retry")
	b := startCollector(t, consul, "retry")
	c := scrapingServer(t, consul, "retry")
	agent.WaitFor(t, 20*time.Second, "job placed", jobIs(c, "retry", structs.JobStatusRunning))

	at := time.Now().UnixNano()
	sample := func(step int64) string {
		return fmt.Sprintf(`{"Samples": [{"job_id": "retry", "step": %d, "loss": 0.5, "step_time_s": 0.2, "num_ps": 1, "num_workers": 1, "time": %d}]}`, step, at+step)
	}
	post := func(addr, body string) {
		t.Helper()
		resp, err := http.Post("http://"+addr+"/v1/report", "application/json", strings.NewReader(body))
		must.NoError(t, err)
		resp.Body.Close()
		must.Eq(t, http.StatusOK, resp.StatusCode, must.Sprintf("report to %s", addr))
	}
	stored := func(step int64) int {
		smps, _, err := c.Jobs().Samples("retry", nil)
		must.NoError(t, err)
		n := 0
		for _, s := range smps.Samples {
			if s.Step == step {
				n++
			}
		}
		return n
	}
	waitStored := func(step int64) {
		t.Helper()
		agent.WaitFor(t, 30*time.Second, fmt.Sprintf("step %d stored", step), func() error {
			if stored(step) == 0 {
				return fmt.Errorf("step %d not stored yet", step)
			}
			return nil
		})
	}

	post(a.Addr(), sample(1000))
	post(a.Addr(), sample(1000))
	post(b.Addr(), sample(1000))
	waitStored(1000)
	post(strings.TrimPrefix(c.Address(), "http://"), sample(1000))
	// Later samples through each collector: once they are stored, the
	// repeats before them were read too. One after the other: the leader
	// drops a collector's sample older than one committed through the
	// other (server/README.md), and the two are scraped in either order.
	post(a.Addr(), sample(1001))
	waitStored(1001)
	post(b.Addr(), sample(1002))
	waitStored(1002)
	must.Eq(t, 1, stored(1000), must.Sprint("the sample reported four times is stored once"))
}

// TestCollectors_KilledCollectorExpires SIGKILLs a real `caravan
// collector` process whose samples the leader committed: Consul's check
// expires it (Consul reaps a service critical for its minimum of one
// minute, looking every 30 s) and the committed samples stay.
func TestCollectors_KilledCollectorExpires(t *testing.T) {
	t.Parallel()
	consul := agent.StartConsul(t)
	c := scrapingServer(t, consul, "killed")

	port := agent.FreePorts(t, 1)[0]
	proc := agent.StartCaravanCommand(t, agent.BuildCaravan(t), "collector", "collector",
		"-port", fmt.Sprint(port), "-consul-addr", consul.HTTPAddr, "-job", "killed", "-check-interval", "500ms")
	addr := fmt.Sprintf("http://127.0.0.1:%d", port)
	agent.WaitFor(t, 30*time.Second, "the collector registered and passing", func() error {
		if err := proc.Running(); err != nil {
			return err
		}
		entries, _, err := consul.Client.Health().Service(collectors.DefaultService, "job=killed", true, nil)
		if err != nil || len(entries) != 1 {
			return fmt.Errorf("%d passing collectors (%v)", len(entries), err)
		}
		return nil
	})
	body := `{"samples": [{"job_id": "killed", "step": 5, "loss": 0.5, "step_time_s": 0.1, "num_ps": 1, "num_workers": 1, "time": 1000}]}`
	resp, err := http.Post(addr+"/v1/report", "application/json", strings.NewReader(body))
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	committed := func() error {
		sum, _, err := c.Jobs().Summary("killed", nil)
		if err != nil {
			return err
		}
		if sum.LastSample == nil || sum.LastSample.Step != 5 {
			return fmt.Errorf("sample not committed: %+v", sum.LastSample)
		}
		return nil
	}
	agent.WaitFor(t, 30*time.Second, "the sample committed", committed)

	proc.Kill()
	start := time.Now()
	agent.WaitFor(t, 3*time.Minute, "the killed collector reaped by Consul", func() error {
		entries, _, err := consul.Client.Health().Service(collectors.DefaultService, "", false, nil)
		if err != nil || len(entries) != 0 {
			return fmt.Errorf("%d collectors registered (%v)", len(entries), err)
		}
		return nil
	})
	t.Logf("killed collector deregistered after %v", time.Since(start).Round(time.Second))
	must.NoError(t, committed(), must.Sprint("committed samples outlive their collector"))
}
