package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// fakeClock is a wall clock that moves only when a test moves it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Debug, Output: testWriter{t}})
}

// driverCluster is one node of 4 GPUs (or more nodes), without noise.
func driverCluster(nodes int) Config {
	return Config{
		Nodes: nodes, GPUsPerNode: 4, CPU: 16000, MemoryMB: 65536,
		RestartPenalty: 30 * time.Second, SampleInterval: 30 * time.Second,
		ProfileTime: 10 * time.Second, Seed: 1,
	}
}

// testDriver returns a started Driver on a fake wall clock whose goroutine
// never ticks: the simulator moves only when the test moves the clock and
// calls the Driver, so runs are deterministic.
func testDriver(t *testing.T, cluster Config, speed float64) (*Driver, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	d := newDriver(DriverConfig{
		Cluster: cluster, Speed: speed, Tick: time.Hour, Logger: testLogger(t),
		Profiles: map[string]*Profile{}, // every job parametric, no loading
	}, clk.Now)
	d.Start()
	t.Cleanup(d.Stop)
	return d, clk
}

// driverJob is an all-reduce job with 1 to 4 one-GPU workers that converges
// after a few short epochs.
func driverJob(id string) *structs.Job {
	j := &structs.Job{
		ID: id,
		Training: &structs.Training{
			Architecture: structs.ArchitectureAllReduce, GlobalBatchSize: 64, StepsPerEpoch: 20,
			Convergence: &structs.Convergence{Threshold: 0.05, Patience: 1},
		},
		Elastic: &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 4}},
		Worker: &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: 1000, MemoryMB: 1024,
			Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}}},
	}
	j.Canonicalize()
	return j
}

// workers returns a plan giving each job of perJob that many workers on
// node-00.
func workers(perJob map[string]int) *structs.Plan {
	p := &structs.Plan{}
	for _, id := range []string{"a", "b", "c"} {
		w, ok := perJob[id]
		if !ok {
			continue
		}
		pl := &structs.Placement{Namespace: structs.DefaultNamespace, JobID: id, NumWorkers: w}
		if w > 0 {
			pl.Nodes = []*structs.NodeTasks{{NodeID: "node-00", Workers: w}}
		}
		p.Placements = append(p.Placements, pl)
	}
	return p
}

func jobs(ids ...string) []*structs.Job {
	out := make([]*structs.Job, len(ids))
	for i, id := range ids {
		out[i] = driverJob(id)
	}
	return out
}

func statusOf(t *testing.T, d *Driver) map[string]*structs.JobReport {
	t.Helper()
	reports, err := d.Status(context.Background())
	must.NoError(t, err)
	out := map[string]*structs.JobReport{}
	for _, r := range reports {
		out[r.JobID] = r
	}
	return out
}

func TestDriver_TrainsAndCompletes(t *testing.T) {
	ctx := context.Background()
	d, clk := testDriver(t, driverCluster(2), 1000)
	must.NoError(t, enact(d, ctx, workers(map[string]int{"a": 2}), jobs("a")))
	st := statusOf(t, d)["a"]
	must.Eq(t, structs.JobStatusRunning, st.Status)
	must.Eq(t, "restarting with 0 ps and 2 workers", st.Message)

	truth := TruthFor(driverJob("a"), nil, 1).(*ParametricTruth)
	var (
		samples []structs.Sample
		cursor  uint64
	)
	for i := 0; statusOf(t, d)["a"].Status != structs.JobStatusComplete; i++ {
		must.Less(t, 1000, i, must.Sprint("the job does not complete"))
		clk.Add(time.Second) // 1000 virtual seconds
		smp, next, err := d.Samples(ctx, cursor)
		must.NoError(t, err)
		must.Eq(t, cursor+uint64(len(smp)), next)
		samples, cursor = append(samples, smp...), next
	}
	st = statusOf(t, d)["a"]
	must.Eq(t, int64(truth.TotalSteps()), st.Step)
	must.Eq(t, fmt.Sprintf("converged at epoch %g", truth.TotalSteps()/truth.StepsPerEpoch), st.Message)

	// The first sample comes a sample interval after the restart penalty,
	// at Epoch + 60 s; steps then grow with time.
	must.SliceNotEmpty(t, samples)
	must.Eq(t, d.Epoch().Add(60*time.Second).UnixNano(), samples[0].Time)
	for i := 1; i < len(samples); i++ {
		must.Greater(t, samples[i-1].Time, samples[i].Time)
		must.Greater(t, samples[i-1].Step, samples[i].Step)
		must.Eq(t, 2, samples[i].NumWorkers)
	}
	last := samples[len(samples)-1]
	must.Eq(t, int64(truth.TotalSteps()), last.Step)
	must.LessEq(t, d.Now().UnixNano(), last.Time, must.Sprint("no sample from the future"))

	smp, next, err := d.Samples(ctx, cursor)
	must.NoError(t, err)
	must.SliceEmpty(t, smp)
	must.Eq(t, cursor, next)
}

func TestDriver_Clock(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	d := newDriver(DriverConfig{Cluster: driverCluster(1), Speed: 10, Tick: time.Hour}, clk.Now)
	must.Eq(t, clk.Now(), d.Epoch())
	clk.Add(time.Second)
	must.Eq(t, d.Epoch(), d.Now(), must.Sprint("the clock stands still before Start"))

	d.Start()
	d.Start() // no-op
	clk.Add(2 * time.Second)
	must.Eq(t, d.Epoch().Add(20*time.Second), d.Now())
	d.Stop()
	d.Stop() // no-op
	clk.Add(5 * time.Second)
	must.Eq(t, d.Epoch().Add(20*time.Second), d.Now(), must.Sprint("the clock stands still after Stop"))
	d.Start()
	clk.Add(time.Second)
	must.Eq(t, d.Epoch().Add(30*time.Second), d.Now())
	d.Stop()

	nodes, err := d.Nodes(context.Background())
	must.NoError(t, err)
	must.SliceLen(t, 1, nodes)
	must.Eq(t, 4, nodes[0].Devices[0].HealthyCount())
	nodes[0].CPU = 1
	nodes[0].Devices[0].Instances[0].Healthy = false
	nodes[0].Attributes["kernel.name"] = "plan9"
	again, err := d.Nodes(context.Background())
	must.NoError(t, err)
	must.Eq(t, 16000, again[0].CPU, must.Sprint("callers get copies"))
	must.Eq(t, 4, again[0].Devices[0].HealthyCount())
	must.Eq(t, "linux", again[0].Attributes["kernel.name"])
}

func TestDriver_EnactTwiceDoesNotRestart(t *testing.T) {
	ctx := context.Background()
	d, clk := testDriver(t, driverCluster(1), 10)
	must.NoError(t, enact(d, ctx, workers(map[string]int{"a": 2, "b": 1}), jobs("a", "b")))
	clk.Add(10 * time.Second) // 100 virtual seconds: past the restart
	before := statusOf(t, d)
	allocs := len(d.sim.Allocations())

	// The same plan again, as a new leader would enact it, with new specs
	// and placement objects.
	must.NoError(t, enact(d, ctx, workers(map[string]int{"a": 2, "b": 1}), jobs("a", "b")))
	must.Eq(t, before, statusOf(t, d), must.Sprint("nothing restarts"))
	must.Eq(t, allocs, len(d.sim.Allocations()))
	for _, r := range d.sim.Results() {
		must.Eq(t, 0, r.Rescales, must.Sprintf("job %s", r.JobID))
	}

	must.NoError(t, enact(d, ctx, workers(map[string]int{"a": 3, "b": 1}), nil))
	must.Eq(t, []int{1, 0}, []int{d.sim.Results()[0].Rescales, d.sim.Results()[1].Rescales},
		must.Sprint("a changed plan rescales a"))
	must.StrHasPrefix(t, "restarting", statusOf(t, d)["a"].Message)
}

func TestDriver_StopsJobsLeftOut(t *testing.T) {
	ctx := context.Background()
	d, clk := testDriver(t, driverCluster(1), 10)
	must.NoError(t, enact(d, ctx, workers(map[string]int{"a": 4}), jobs("a")))
	clk.Add(10 * time.Second)
	must.Positive(t, statusOf(t, d)["a"].Step)

	// b takes all 4 GPUs: the plan only fits because a is stopped.
	must.NoError(t, enact(d, ctx, workers(map[string]int{"b": 4}), jobs("b")))
	st := statusOf(t, d)
	must.MapLen(t, 1, st, must.Sprint("a stopped job is not reported"))
	must.Eq(t, structs.JobStatusRunning, st["b"].Status)
	must.Eq(t, 4, d.sim.held)
	allocs := d.sim.Allocations()
	must.Eq(t, []AllocChange{{Time: 100, JobID: "a"}, {Time: 100, JobID: "b", GPUs: 4, CPU: 4000, MemoryMB: 4096}}, allocs[len(allocs)-2:],
		must.Sprint("a holds nothing, b four workers of 1 GPU, 1000 MHz and 1024 MB"))

	// A plan that names a again starts it over.
	must.NoError(t, enact(d, ctx, workers(map[string]int{"a": 2, "b": 2}), jobs("a", "b")))
	st = statusOf(t, d)
	must.Eq(t, int64(0), st["a"].Step)
	must.Eq(t, "restarting with 0 ps and 2 workers", st["a"].Message)
	must.Eq(t, "restarting with 0 ps and 2 workers", st["b"].Message)

	// A job that has completed stays complete, whatever later plans say.
	for statusOf(t, d)["a"].Status != structs.JobStatusComplete {
		clk.Add(10 * time.Second)
	}
	must.NoError(t, enact(d, ctx, workers(map[string]int{"a": 2}), nil))
	st = statusOf(t, d)
	must.Eq(t, structs.JobStatusComplete, st["a"].Status, must.Sprint("a is still complete"))
	if r, ok := st["b"]; ok {
		must.Eq(t, structs.JobStatusComplete, r.Status, must.Sprint("b is stopped unless it completed"))
	}
}

func TestDriver_RejectsAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	d, clk := testDriver(t, driverCluster(1), 10)
	must.NoError(t, enact(d, ctx, workers(map[string]int{"a": 2}), jobs("a")))
	clk.Add(10 * time.Second)
	must.NoError(t, d.Profile(ctx, structs.NewJobKey("", "b"), []structs.Shape{{Workers: 1}, {Workers: 2}}))

	_, cursor, err := d.Samples(ctx, 0)
	must.NoError(t, err)
	before := statusOf(t, d)
	allocs, usage := len(d.sim.Allocations()), len(d.sim.Usage())

	cases := []struct {
		name string
		plan *structs.Plan
		jobs []*structs.Job
		err  string
	}{
		// b's 5 GPUs do not fit even with a stopped: nothing is submitted,
		// profiled or stopped.
		{"over-committed", workers(map[string]int{"b": 5}), jobs("b"), "node-00 would hold 5000 MHz"},
		{"over-committed with a", workers(map[string]int{"a": 2, "b": 3}), jobs("a", "b"), "would hold 5000 MHz"},
		{"new job without a spec", workers(map[string]int{"b": 1}), nil, `job "b" in namespace "default" is new and jobs holds no spec`},
		{"invalid", &structs.Plan{Placements: []*structs.Placement{{JobID: "a", NumWorkers: 1}}}, nil, "nodes hold 0 ps and 0 workers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.ErrorContains(t, enact(d, ctx, tc.plan, tc.jobs), tc.err)
			must.Eq(t, before, statusOf(t, d))
			must.SliceLen(t, 1, d.sim.order)
			must.Eq(t, allocs, len(d.sim.Allocations()))
			must.Eq(t, usage, len(d.sim.Usage()))
			smp, next, err := d.Samples(ctx, cursor)
			must.NoError(t, err)
			must.SliceEmpty(t, smp, must.Sprint("no profiling samples"))
			must.Eq(t, cursor, next)
		})
	}
	must.ErrorIs(t, enact(d, ctx, workers(map[string]int{"b": 5}), jobs("b")), ErrOverCommitted)

	// A job of another namespace with a's ID fails, said why, once; a
	// runs on.
	other := driverJob("a")
	other.Namespace = "other"
	otherPlan := workers(map[string]int{"a": 2})
	otherPlan.Placements = append(otherPlan.Placements, &structs.Placement{Namespace: "other", JobID: "a", NumWorkers: 1,
		Nodes: []*structs.NodeTasks{{NodeID: otherPlan.Placements[0].Nodes[0].NodeID, Workers: 1}}})
	reports, err := d.Enact(ctx, otherPlan, []*structs.Job{driverJob("a"), other})
	must.NoError(t, err)
	failed := func(rs []*structs.JobReport) []*structs.JobReport {
		var out []*structs.JobReport
		for _, r := range rs {
			if r.Namespace == "other" {
				out = append(out, r)
			}
		}
		return out
	}
	must.SliceLen(t, 1, failed(reports))
	must.Eq(t, structs.JobStatusFailed, failed(reports)[0].Status)
	must.StrContains(t, failed(reports)[0].Message, `job "a" of namespace "default" holds it`)
	st, err := d.Status(ctx)
	must.NoError(t, err)
	must.SliceLen(t, 1, failed(st))
	st, err = d.Status(ctx)
	must.NoError(t, err)
	must.SliceEmpty(t, failed(st), must.Sprint("reported once"))
	must.Eq(t, before, statusOf(t, d))

	// The deferred profiling of b happens when a valid plan submits it: one
	// sample per configuration, and 2 × 10 s before its first start.
	must.NoError(t, enact(d, ctx, workers(map[string]int{"a": 2, "b": 2}), jobs("a", "b")))
	smp, _, err := d.Samples(ctx, cursor)
	must.NoError(t, err)
	must.SliceLen(t, 2, smp)
	for i, s := range smp {
		must.Eq(t, "b", s.JobID)
		must.Eq(t, i+1, s.NumWorkers)
		must.Positive(t, s.StepTimeS)
		must.Eq(t, d.Now().UnixNano(), s.Time)
	}
	must.Eq(t, d.sim.Now()+30+20, d.sim.jobs["b"].restartTo)
	must.MapEmpty(t, d.deferred)

	// Profiling a known job happens at once.
	must.NoError(t, d.Profile(ctx, structs.NewJobKey("", "a"), []structs.Shape{{Workers: 3}}))
	smp, _, err = d.Samples(ctx, cursor+2)
	must.NoError(t, err)
	must.SliceLen(t, 1, smp)
	must.Eq(t, 3, smp[0].NumWorkers)
	must.ErrorContains(t, d.Profile(ctx, structs.NewJobKey("other", "a"), []structs.Shape{{Workers: 1}}), `holds job "a" in namespace "default"`)
}

func TestDriver_ContextCanceled(t *testing.T) {
	d, _ := testDriver(t, driverCluster(1), 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	must.ErrorIs(t, enact(d, ctx, workers(map[string]int{"a": 1}), jobs("a")), context.Canceled)
	_, err := d.Status(ctx)
	must.ErrorIs(t, err, context.Canceled)
	must.SliceEmpty(t, d.sim.order)
}

// TestDriver_RealTime runs the clock goroutine on the wall clock, with
// readers polling while it ticks (run with -race).
func TestDriver_RealTime(t *testing.T) {
	ctx := context.Background()
	d := NewDriver(DriverConfig{Cluster: driverCluster(1), Speed: 1000, Tick: 5 * time.Millisecond,
		Logger: testLogger(t), Profiles: map[string]*Profile{}})
	t.Cleanup(d.Stop)
	d.Stop() // stopping a stopped driver does nothing
	d.Start()
	must.NoError(t, enact(d, ctx, workers(map[string]int{"a": 4}), jobs("a")))

	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var cursor uint64
			for {
				select {
				case <-done:
					return
				default:
				}
				_, next, err := d.Samples(ctx, cursor)
				if err != nil {
					t.Error(err)
					return
				}
				cursor = next
				if _, err := d.Status(ctx); err != nil {
					t.Error(err)
					return
				}
				d.Now()
			}
		})
	}
	agent.WaitFor(t, 20*time.Second, "job a to complete", func() error {
		if st := statusOf(t, d)["a"]; st.Status != structs.JobStatusComplete {
			return fmt.Errorf("a is %s at step %d", st.Status, st.Step)
		}
		return nil
	})
	close(done)
	wg.Wait()

	d.Stop()
	frozen := d.Now()
	for range 100 {
		statusOf(t, d)
	}
	must.Eq(t, frozen, d.Now(), must.Sprint("the clock stands still after Stop"))
	d.Start()
	agent.WaitFor(t, 10*time.Second, "the clock to run again", func() error {
		if !d.Now().After(frozen) {
			return errors.New("the clock stands still")
		}
		return nil
	})
	d.Stop()
}

func TestSim_StopJob(t *testing.T) {
	s := New(driverCluster(1))
	must.ErrorContains(t, s.StopJob("a"), `stop unknown job "a"`)
	must.NoError(t, s.Submit(driverJob("a"), TruthFor(driverJob("a"), nil, 1)))
	must.NoError(t, s.Submit(driverJob("b"), TruthFor(driverJob("b"), nil, 1)))
	must.NoError(t, s.Enact(workers(map[string]int{"a": 3, "b": 1})))
	s.Advance(100)

	must.NoError(t, s.StopJob("a"))
	must.Eq(t, 1, s.held, must.Sprint("a's GPUs are free"))
	must.Eq(t, UsePoint{Time: 100, GPUs: 1}, s.Usage()[len(s.Usage())-1])
	must.SliceLen(t, 1, s.Jobs())
	must.Eq(t, "b", s.Jobs()[0].JobID)
	must.ErrorContains(t, s.Enact(workers(map[string]int{"a": 1})), `unknown job "a"`)
	must.NoError(t, s.Enact(workers(map[string]int{"b": 4})), must.Sprint("b may take a's GPUs"))

	for !s.Done() {
		s.Advance(s.NextEvent())
	}
	must.ErrorContains(t, s.StopJob("b"), `stop job "b": it has finished`)
	must.NoError(t, s.Submit(driverJob("a"), TruthFor(driverJob("a"), nil, 1)), must.Sprint("a's ID is free again"))
	must.Eq(t, StatePending, s.Jobs()[1].Status)
	must.Eq(t, 0.0, s.Jobs()[1].Step)
}

// enact enacts a plan and drops the reports.
func enact(d *Driver, ctx context.Context, plan *structs.Plan, jobs []*structs.Job) error {
	_, err := d.Enact(ctx, plan, jobs)
	return err
}

// TestDriver_EnactReports checks that Enact reports what runs of every job
// the plan names and the change it made, and that enacting the same plan
// again makes no new change.
func TestDriver_EnactReports(t *testing.T) {
	d, _ := testDriver(t, driverCluster(1), 1)
	ctx := context.Background()
	plan := workers(map[string]int{"a": 2})
	plan.Index = 7
	reports, err := d.Enact(ctx, plan, jobs("a"))
	must.NoError(t, err)
	must.SliceLen(t, 1, reports)
	r := reports[0]
	must.Eq(t, "a", r.JobID)
	must.NotNil(t, r.Placement)
	must.Eq(t, 2, r.Placement.NumWorkers)
	must.NotNil(t, r.Change)
	must.Eq(t, structs.ChangeDone, r.Change.Phase)
	must.Eq(t, uint64(7), r.Change.PlanIndex)
	must.True(t, r.Change.Target.SameTasks(plan.Placements[0]))

	again := workers(map[string]int{"a": 2})
	again.Index = 8
	reports, err = d.Enact(ctx, again, jobs("a"))
	must.NoError(t, err)
	must.Eq(t, uint64(7), reports[0].Change.PlanIndex, must.Sprint("an unchanged placement makes no new change"))

	status, err := d.Status(ctx)
	must.NoError(t, err)
	must.Eq(t, 2, status[0].Placement.NumWorkers)
}
