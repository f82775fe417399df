package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
	"golang.org/x/sync/errgroup"
)

// The scale harness (issue 33): a real server, its Raft log on disk, on
// a simulated cluster of N nodes, with J jobs registered through the HTTP
// API, and its leader loop stepped by hand (Config.Manual) on a virtual
// clock, as caravan sim steps it, so that each measured step is one round
// of the loop `caravan agent` runs. BenchmarkScale (scale_bench_test.go)
// measures it at sizes up to 100,000 jobs; TestScale_NotQuadratic checks
// in `make test` that its costs grow linearly.

// scaleSize is one size of the harness: Nodes nodes of 4 and 8 GPUs in
// turn, and Jobs jobs sized so that about a fifth of them fit at once.
type scaleSize struct {
	Nodes, Jobs int
}

func (z scaleSize) String() string { return fmt.Sprintf("nodes=%d/jobs=%d", z.Nodes, z.Jobs) }

// gpus is the cluster's GPU count.
func (z scaleSize) gpus() int { return z.Nodes/2*12 + z.Nodes%2*4 }

// jobGPUs is each job's fixed size: the cluster holds about a fifth of
// the jobs at once (at least one GPU each, so fewer when jobs outnumber
// five times the GPUs).
func (z scaleSize) jobGPUs() int { return max(1, z.gpus()*5/z.Jobs) }

// scaleClock is the harness's virtual clock: the server and the simulated
// cluster read it, the harness moves it.
type scaleClock struct{ ns atomic.Int64 }

var scaleEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *scaleClock) Now() time.Time { return scaleEpoch.Add(time.Duration(c.ns.Load())) }

func (c *scaleClock) set(t time.Time) {
	if d := t.Sub(scaleEpoch); d > time.Duration(c.ns.Load()) {
		c.ns.Store(int64(d))
	}
}

// scaleEnv is one server of the harness.
type scaleEnv struct {
	tb     testing.TB
	size   scaleSize
	clock  *scaleClock
	server *Server
	client *api.Client
}

// newScaleEnv starts a Manual-mode server with its Raft log on disk (in
// tb's temp dir) on a simulated cluster of size.Nodes nodes, and waits
// until it leads. New jobs are not profiled: they start at their fixed
// size.
func newScaleEnv(tb testing.TB, size scaleSize, algorithm string) *scaleEnv {
	tb.Helper()
	clk := &scaleClock{}
	cluster := sim.DefaultConfig()
	cluster.NodeGPUs = make([]int, size.Nodes)
	for i := range cluster.NodeGPUs {
		cluster.NodeGPUs[i] = 4 + 4*(i%2)
	}
	driver := sim.NewDriver(sim.DriverConfig{Cluster: cluster, Clock: clk.Now})
	cfg := TestConfig(tb, driver)
	cfg.Manual = true
	cfg.Clock = clk.Now
	cfg.Interval = time.Minute
	cfg.Algorithm = algorithm
	cfg.ProfileConfigs = -1
	s := TestServer(tb, cfg)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Step(context.Background())
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNotLeader) || time.Now().After(deadline) {
			tb.Fatalf("first step: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c, err := api.NewClient(&api.Config{Address: s.HTTPAddr()})
	if err != nil {
		tb.Fatal(err)
	}
	return &scaleEnv{tb: tb, size: size, clock: clk, server: s, client: c}
}

// scaleJob is the i-th job of a harness: gpus workers of one GPU each,
// all-reduce, fixed size; a tenth of the jobs per team.
func scaleJob(i, gpus int) (*api.Job, error) {
	j := structs.MockJob()
	j.ID = fmt.Sprintf("job-%06d", i)
	j.Meta = map[string]string{"team": fmt.Sprintf("team-%d", i%10)}
	j.Training.Architecture = structs.ArchitectureAllReduce
	j.Training.GlobalBatchSize = 64 * gpus
	j.Elastic.Workers = structs.Bounds{Min: gpus, Max: gpus}
	j.Elastic.ParameterServers = nil
	j.Worker.Resources.Devices[0].Constraints = nil
	j.Canonicalize()
	return jobspec.APIJob(j)
}

// scaleInFlight is how many requests the harness keeps in flight when it
// registers jobs and commits samples, as many clients would.
const scaleInFlight = 32

// register registers jobs [from, to) through the HTTP API, scaleInFlight
// at a time.
func (e *scaleEnv) register(from, to int) error {
	jobs := make([]*api.Job, 0, to-from)
	for i := from; i < to; i++ {
		j, err := scaleJob(i, e.size.jobGPUs())
		if err != nil {
			return err
		}
		jobs = append(jobs, j)
	}
	return inParallel(len(jobs), func(i int) error {
		if _, _, err := e.client.Jobs().Register(&api.JobRegisterRequest{Job: jobs[i]}, nil); err != nil {
			return fmt.Errorf("register job %q: %w", jobs[i].ID, err)
		}
		return nil
	})
}

// sampleBatches commits n batches of maxSampleBatch samples through Raft,
// each for one of the first jobs in turn, scaleInFlight at a time.
func (e *scaleEnv) sampleBatches(n int) error {
	var step atomic.Int64
	return inParallel(n, func(i int) error {
		id := fmt.Sprintf("job-%06d", i%e.size.Jobs)
		batch := make([]structs.Sample, maxSampleBatch)
		for k := range batch {
			batch[k] = structs.Sample{JobID: id, Step: step.Add(1), Loss: 1, StepTimeS: 0.1, NumWorkers: 1}
		}
		_, _, err := e.server.apply(context.Background(), fsm.SampleBatchType, &fsm.SampleBatchRequest{Samples: batch})
		return err
	})
}

// inParallel runs f(0) … f(n-1), scaleInFlight at a time, and returns the
// first error; after one, it starts no more.
func inParallel(n int, f func(i int) error) error {
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(scaleInFlight)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

// round moves the clock to the next periodic round and steps the loop
// once, which runs it; it fails when no round ran.
func (e *scaleEnv) round(ctx context.Context) error {
	next := e.server.NextRound()
	e.clock.set(next)
	if err := e.server.Step(ctx); err != nil {
		return err
	}
	if !e.server.NextRound().After(next) {
		return fmt.Errorf("no round ran at %s", next)
	}
	return nil
}

// setAlgorithm switches the scheduler to algorithm through the API and
// runs one round with it, which is not measured: the first round after a
// switch builds what the algorithm keeps between rounds.
func (e *scaleEnv) setAlgorithm(ctx context.Context, algorithm string) error {
	if _, err := e.client.Operator().SetSchedulerConfig(&api.SchedulerConfigRequest{Algorithm: algorithm}, nil); err != nil {
		return fmt.Errorf("set algorithm %s: %w", algorithm, err)
	}
	return e.round(ctx)
}

// listFirstPage reads the first page of GET /v1/jobs, filtered by filter
// when it is not empty.
func (e *scaleEnv) listFirstPage(filter string) error {
	jobs, _, err := e.client.Jobs().List(&api.QueryOptions{PerPage: 100, Filter: filter})
	if err == nil && len(jobs) == 0 {
		err = fmt.Errorf("no jobs listed for filter %q", filter)
	}
	return err
}

// jobStatus reads one job's status page (GET /v1/job/:id/summary).
func (e *scaleEnv) jobStatus(i int) error {
	_, _, err := e.client.Jobs().Summary(fmt.Sprintf("job-%06d", i%e.size.Jobs), nil)
	return err
}

// running counts the jobs the server holds as running.
func (e *scaleEnv) running() int {
	jobs, err := state.Jobs(e.server.State().Txn(), nil, "")
	if err != nil {
		e.tb.Fatal(err)
	}
	n := 0
	for _, j := range jobs {
		if j.Status == structs.JobStatusRunning {
			n++
		}
	}
	return n
}

// snapshot saves a snapshot through the operator API.
func (e *scaleEnv) snapshot() ([]byte, error) {
	var buf bytes.Buffer
	_, err := e.client.Operator().SnapshotSave(&buf, nil)
	return buf.Bytes(), err
}

// restore restores a snapshot through the operator API.
func (e *scaleEnv) restore(snap []byte) error {
	_, err := e.client.Operator().SnapshotRestore(bytes.NewReader(snap), nil)
	return err
}

// heapInUse is the process's heap in use after a full collection, in
// bytes: the server's, the simulated cluster's and the harness's.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// cost is the work one operation took: the process's CPU time (user and
// system, of every goroutine) and the heap objects it allocated.
type cost struct {
	cpu     time.Duration
	mallocs uint64
}

// measure returns the cost of f.
func measure(tb testing.TB, f func() error) cost {
	tb.Helper()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	if err := f(); err != nil {
		tb.Fatal(err)
	}
	c1 := cpuTime()
	runtime.ReadMemStats(&m1)
	return cost{cpu: c1 - c0, mallocs: m1.Mallocs - m0.Mallocs}
}

// cpuTime is the process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// medianCost is the median of costs, measure by measure.
func medianCost(costs []cost) cost {
	cpus := make([]time.Duration, len(costs))
	mallocs := make([]uint64, len(costs))
	for i, c := range costs {
		cpus[i], mallocs[i] = c.cpu, c.mallocs
	}
	slices.Sort(cpus)
	slices.Sort(mallocs)
	return cost{cpu: cpus[len(cpus)/2], mallocs: mallocs[len(mallocs)/2]}
}

// TestScale_NotQuadratic checks that the server's costs grow linearly
// with its jobs: registering 1,000 jobs, one round among 1,000 jobs and
// ten reads of the first page of GET /v1/jobs among them cost less than
// three times what they cost with 500 jobs (on 1,000 nodes), by the
// medians of three repetitions of each. A cost is CPU time and
// allocations, not wall time, so that a loaded machine does not fail it;
// the clock's numbers are BenchmarkScale's. It takes about 30 s on a
// loaded 2-core machine, much of it Raft's fsyncs, and is skipped under the race detector, which slows
// it tenfold: `make test` runs it without.
func TestScale_NotQuadratic(t *testing.T) {
	if raceDetector {
		t.Skip("slow under the race detector; make test runs it without")
	}
	const reps = 3
	small, double := scaleSize{Nodes: 1000, Jobs: 500}, scaleSize{Nodes: 1000, Jobs: 1000}
	type costs struct{ register, round, list []cost }
	run := func(size scaleSize) costs {
		var c costs
		ctx := context.Background()
		for r := range reps {
			e := newScaleEnv(t, size, "fifo")
			c.register = append(c.register, measure(t, func() error { return e.register(0, size.Jobs) }))
			if r == 0 {
				// The rounds and reads are repeated on one server.
				must.NoError(t, e.round(ctx))
				for range reps {
					c.round = append(c.round, measure(t, func() error { return e.round(ctx) }))
					c.list = append(c.list, measure(t, func() error {
						for range 10 {
							if err := e.listFirstPage(""); err != nil {
								return err
							}
						}
						return nil
					}))
				}
				must.Positive(t, e.running())
			}
			e.server.Shutdown()
		}
		return c
	}
	one, two := run(small), run(double)
	for _, m := range []struct {
		name     string
		one, two []cost
	}{
		{"register", one.register, two.register},
		{"round", one.round, two.round},
		{"list first page", one.list, two.list},
	} {
		a, b := medianCost(m.one), medianCost(m.two)
		cpuRatio := float64(b.cpu) / float64(max(a.cpu, time.Millisecond))
		mallocRatio := float64(b.mallocs) / float64(max(a.mallocs, 1))
		t.Logf("%s: cpu %v → %v (×%.2f), allocations %d → %d (×%.2f)", m.name, a.cpu, b.cpu, cpuRatio, a.mallocs, b.mallocs, mallocRatio)
		must.Less(t, 3, cpuRatio, must.Sprintf("%s: CPU time at 2× the jobs is %.2f× that at 1×", m.name, cpuRatio))
		must.Less(t, 3, mallocRatio, must.Sprintf("%s: allocations at 2× the jobs are %.2f× those at 1×", m.name, mallocRatio))
	}
}
