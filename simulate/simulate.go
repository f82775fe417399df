package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/dlrover"
	"github.com/caravan-sched/caravan/planner/harmony"
	"github.com/caravan-sched/caravan/planner/straggler"
	"github.com/caravan-sched/caravan/plugins/loader"
	"github.com/caravan-sched/caravan/server"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"gonum.org/v1/gonum/stat"
)

// Baselines are policies only `caravan sim` runs, beside the built-in
// algorithms: comparison baselines that leave jobs waiting while there is
// room, which the server's algorithms never do.
var Baselines = map[string]planner.Factory{
	harmony.IsolatedName: harmony.NewIsolated, harmony.ColocatedName: harmony.NewColocated,
	// The DLRover paper's §6.3 baselines.
	dlrover.AutoscaleName: dlrover.NewAutoscale, dlrover.StepOptimusName: dlrover.NewStepOptimus,
}

// Policy returns the algorithm of a built-in or a baseline by name.
func Policy(name string) (planner.Algorithm, bool) {
	if f, ok := builtin.Algorithms[name]; ok {
		return f(), true
	}
	if f, ok := Baselines[name]; ok {
		return f(), true
	}
	return nil, false
}

// Options configure one run.
type Options struct {
	Cluster sim.Config
	// Interval is the time between scheduling rounds (default 60 s, as in
	// the Pollux simulator).
	Interval time.Duration
	// Progress, when set, is called whenever jobs finish, with how many
	// have finished so far and how many the workload has.
	Progress func(done, total int)
	// DataDir, when set, is where the run's server keeps its Raft log and
	// snapshots on disk, as an agent does; empty means in memory.
	DataDir string
	// Logger receives the server's logs; nil means none.
	Logger hclog.Logger
	// AlgorithmOptions are the algorithm's options (see ParsePolicy), set
	// as the agent's scheduler block sets them; the run's Result names the
	// policy with them. Nil runs the algorithm with its defaults.
	AlgorithmOptions map[string]string
	// Stragglers, when set, turns on the scheduler's straggler handling
	// (server.Config.Stragglers) for the run.
	Stragglers *straggler.Config
	// PeriodicRounds steps the server only at multiples of Interval, as
	// the Pollux artifact's simulator does: a job that arrives is
	// submitted at the next of them, and one that finishes frees its
	// GPUs for the round after. Otherwise the server also steps at every
	// arrival and event of the simulator (AssumePollux sets it).
	PeriodicRounds bool
	// Oracle hands the algorithm the jobs' true speeds and remaining
	// steps instead of their fitted models (NewOracle).
	Oracle bool
	// Queues, when not empty, are stored in the run's server once its
	// leader is up and before any job is submitted, as `caravan queue
	// apply` stores a queue file (issue 32; TenantQueues builds them for a
	// workload of tenants). They are only read.
	Queues []*structs.Queue
}

// Result is the outcome of one policy on one workload.
type Result struct {
	Policy    string
	Jobs      []sim.JobResult
	Usage     []sim.UsePoint
	Allocs    []sim.AllocChange
	TotalGPUs int
	// Queues are the queues the run's server held (Options.Queues once
	// stored); nil for a run without queues.
	Queues []*structs.Queue
	// Fairness is each job's share against its DRF share, in the order
	// of Jobs.
	Fairness []JobFairness
	Summary  Summary
	// Wall is how long the run took in real time.
	Wall time.Duration
	// PlanTime is the wall time of the algorithm's plans.
	PlanTime PlanTime
	// Collected is how many ended jobs the server's garbage collector
	// purged during the run.
	Collected int
}

// PlanTime is the median, the 95th percentile (nearest rank) and the
// longest wall time of one plan, in seconds (for dorm, mostly glpsol's
// solve). Unlike Summary it is not reproducible: it depends on the
// machine and its load.
type PlanTime struct {
	P50S float64
	P95S float64
	MaxS float64
}

// Summary is what summary.json reports per policy.
type Summary struct {
	AvgJCT   float64
	P50JCT   float64
	P99JCT   float64
	Makespan float64
	GPUUtil  float64
	// CPUUtil and NetUtil are the cluster's average utilisation by subtask
	// jobs (Harmony's workloads; 0 for others), over the same span.
	CPUUtil  float64
	NetUtil  float64
	Rescales int
	Jobs     int
	// RegroupS is the time all jobs spent restarting after a start but
	// their first (rescales, moves, resumes; sim.JobResult.RegroupS), and
	// RegroupShare that time over the time jobs spent from their first
	// start to their end: the share of the jobs' running time that
	// regrouping cost, the regrouping overhead reported beside the
	// makespan.
	RegroupS     float64
	RegroupShare float64
	// RescalesPerHour is Rescales over the makespan in hours: Dorm's
	// resource adjustments (eq. 4) per hour.
	RescalesPerHour float64
	// ResourceUtil is Dorm's eq. 1, the sum of the CPU, memory and GPU
	// shares of the cluster that jobs hold (0 to 3), averaged over the
	// makespan; ResourceUtilEarly the same over its first EarlyWindow (5
	// hours), as Dorm's §V-B1 reports it.
	ResourceUtil      float64
	ResourceUtilEarly float64
	// Plans is how many times the algorithm planned (their wall times are
	// Result.PlanTime, which a rerun does not reproduce).
	Plans int
	// Fairness is Jain's index over the jobs' shares against their DRF
	// shares, and the fairness loss (Dorm's eq. 2).
	Fairness
}

// epoch is the wall time virtual time 0 stands for: fixed, so that runs
// reproduce.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clock is a virtual clock the runner sets and the server reads.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time { return epoch.Add(time.Duration(c.ns.Load())) }

// set moves the clock to t seconds, rounded up to the next nanosecond
// and one more, so that what reads the clock back reaches t.
func (c *clock) set(t float64) { c.ns.Store(int64(math.Ceil(t*1e9)) + 1) }

func (c *clock) seconds() float64 { return float64(c.ns.Load()) / 1e9 }
func at(t time.Time) float64      { return t.Sub(epoch).Seconds() }

// Run runs wl under the algorithm alg until every job has finished, with
// the server's own leader loop (server.Config.Manual) on a virtual clock:
// an in-memory Caravan server whose driver is the simulated cluster, to
// which jobs are submitted through the HTTP API at their arrival times.
// The runner moves the clock to the next arrival, round or event of the
// simulator and runs one step of the loop there, so what it measures is
// what the agent does. The run is deterministic for the cluster's seed.
// The workload's node shape (sim.Workload.NodeCPU, NodeMemoryMB, NodeGPUs)
// and sample noise (Noise) replace the cluster's.
//
// What the algorithm declares under its options (planner.CapabilitiesOf),
// not its name, decides how its jobs run, so that a plugin runs as the
// built-in with the same declaration does: a FixedSize algorithm's jobs
// are submitted at their fixed request (sim.Arrival.FixedJob), so that
// `specon` and `fifo` run the same jobs; a ChoosesBatch algorithm's as
// adaptive jobs where the workload has them (sim.Arrival.Adaptive: a
// Pollux model's job within the batch bounds the Pollux artifact gives
// it); and an Uncoordinated algorithm's co-located subtask jobs run
// without a subtask coordinator (sim.Config.Uncoordinated). Every other
// algorithm's co-located subtask jobs are coordinated, as Caravan's
// node-local subtask coordinator (collector/coord) does on a real
// cluster.
func Run(wl *sim.Workload, alg planner.Algorithm, opts Options) (*Result, error) {
	start := time.Now()
	if opts.Interval == 0 {
		opts.Interval = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	// The server sets the same options again on the same instance.
	if err := passConfig(alg, opts.AlgorithmOptions); err != nil {
		return nil, fmt.Errorf("options of %s: %w", alg.Name(), err)
	}
	caps := planner.CapabilitiesOf(alg)
	fixed, adaptive := caps.FixedSize, caps.ChoosesBatch
	if caps.Uncoordinated {
		opts.Cluster.Uncoordinated = true
	}
	if wl.NodeCPU > 0 {
		opts.Cluster.CPU = wl.NodeCPU
	}
	if wl.NodeMemoryMB > 0 {
		opts.Cluster.MemoryMB = wl.NodeMemoryMB
	}
	if wl.NodeGPUs != nil {
		opts.Cluster.NodeGPUs, opts.Cluster.NodeModels = wl.NodeGPUs, nil
	}
	if wl.Noise > 0 {
		opts.Cluster.Noise = wl.Noise
	}
	if len(wl.NodeAttributes) > 0 {
		opts.Cluster.Attributes = maps.Clone(opts.Cluster.Attributes)
		if opts.Cluster.Attributes == nil {
			opts.Cluster.Attributes = map[string]string{}
		}
		maps.Copy(opts.Cluster.Attributes, wl.NodeAttributes)
	}
	// Workloads are shared by runs in parallel: each run submits its own
	// canonical copies.
	jobs := make([]*structs.Job, len(wl.Arrivals))
	truths := make(map[string]sim.Truth, len(wl.Arrivals))
	// Every policy's shares are measured against DRF's of the elastic
	// jobs, whatever size the policy runs them at.
	fair := make(map[string]fairJob, len(wl.Arrivals))
	for i := range wl.Arrivals {
		a := &wl.Arrivals[i]
		elastic := a.Job.Copy()
		elastic.Canonicalize()
		fair[elastic.ID] = newFairJob(elastic)
		job, truth := a.Job, a.Truth
		switch {
		case fixed:
			job = a.FixedJob()
		case adaptive && a.Adaptive != nil:
			job, truth = a.Adaptive, a.AdaptiveTruth
		}
		job = job.Copy()
		job.Canonicalize()
		jobs[i] = job
		truths[job.ID] = truth
	}

	clk := &clock{}
	driver := sim.NewDriver(sim.DriverConfig{
		Cluster: opts.Cluster, Clock: clk.Now, Logger: opts.Logger,
		Truth: func(j *structs.Job) sim.Truth { return truths[j.ID] },
	})
	if opts.Oracle {
		alg = NewOracle(alg, truths, opts.Cluster)
	}
	timed := &planTimes{alg: alg}
	builtins := maps.Clone(builtin.Algorithms)
	builtins[alg.Name()] = func() planner.Algorithm { return timed }
	algs, err := loader.New(loader.Config{Builtins: builtins, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	defer algs.Shutdown()
	srv, err := server.New(server.Config{
		NodeName: "sim", HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", DataDir: opts.DataDir,
		Driver: driver, Metrics: driver, Profiler: driver,
		Algorithm: alg.Name(), AlgorithmOptions: opts.AlgorithmOptions, Algorithms: algs, Interval: opts.Interval,
		Clock: clk.Now, Manual: true, Logger: opts.Logger, RaftConfig: fastRaft(), Stragglers: opts.Stragglers,
		JobGCInterval: gcInterval,
	})
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	ctx := context.Background()
	if err := waitLeader(ctx, srv); err != nil {
		return nil, err
	}
	client, err := api.NewClient(&api.Config{Address: "http://" + srv.HTTPAddr()})
	if err != nil {
		return nil, err
	}
	if err := applyQueues(client, opts.Queues); err != nil {
		return nil, err
	}

	next, finished, last, stuck, idle := 0, 0, -1.0, 0, 0
	interval := opts.Interval.Seconds()
	var jobsIndex uint64
	collected, purged := 0.0, 0
	for {
		t := min(at(srv.NextRound()), driver.NextEvent())
		if next < len(jobs) {
			t = min(t, wl.Arrivals[next].Time)
		}
		if opts.PeriodicRounds {
			// The next multiple of the interval; while no job is active,
			// the first at or after the next arrival.
			t = (math.Floor(max(last, 0)/interval) + 1) * interval
			if next < len(jobs) && finished == next {
				t = max(t, math.Ceil(wl.Arrivals[next].Time/interval)*interval)
			}
		}
		if next == len(jobs) && finished == len(jobs) {
			break
		}
		if t <= last {
			if stuck++; stuck > 1000 {
				return nil, fmt.Errorf("simulation made no progress at %.3fs (next round %.3fs, next event %.3fs, %d of %d jobs submitted, %d ended)",
					t, at(srv.NextRound()), driver.NextEvent(), next, len(jobs), finished)
			}
		} else {
			stuck = 0
		}
		last = max(t, clk.seconds())
		clk.set(last)
		for next < len(jobs) && wl.Arrivals[next].Time <= last {
			job, err := jobspec.APIJob(jobs[next])
			if err != nil {
				return nil, err
			}
			if _, _, err := client.Jobs().Register(&api.JobRegisterRequest{Job: job}, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
				return nil, fmt.Errorf("submit job %q at %.0fs: %w", jobs[next].ID, last, err)
			}
			next++
		}
		if err := srv.Step(ctx); err != nil {
			return nil, fmt.Errorf("step at %.0fs: %w", last, err)
		}
		// The job garbage collector, which a server in Manual mode leaves
		// to its caller, at its interval of virtual time: the state of a
		// long trace holds the jobs that run, not every job that ran.
		if last >= collected+gcInterval.Seconds() {
			n, err := srv.CollectGarbage(ctx)
			if err != nil {
				return nil, fmt.Errorf("collect garbage at %.0fs: %w", last, err)
			}
			collected, purged = last, purged+n
		}
		// Every job submitted, some waiting, and none running toward an
		// event: a job no round starts (its minimum beyond the cluster,
		// or beyond what its queue may hold) would hold the run forever.
		if next == len(jobs) && finished < len(jobs) && math.IsInf(driver.NextEvent(), 1) {
			if idle++; idle > maxIdleSteps {
				return nil, fmt.Errorf("%d of %d jobs still wait at %.0fs and nothing has run for %d steps: a job's minimum is more than the cluster, or its queue, can hold",
					len(jobs)-finished, len(jobs), last, maxIdleSteps)
			}
		} else {
			idle = 0
		}
		if index := srv.State().Index(state.TableJobs); index != jobsIndex {
			jobsIndex = index
			done, err := ended(srv, next)
			if err != nil {
				return nil, err
			}
			if done != finished && opts.Progress != nil {
				opts.Progress(done, len(jobs))
			}
			finished = done
		}
	}
	res := &Result{Policy: PolicySpec{Name: alg.Name(), Options: opts.AlgorithmOptions, Oracle: opts.Oracle}.String(), Queues: opts.Queues}
	res.Jobs, res.Usage, res.Allocs, res.TotalGPUs = driver.Results()
	// A job's time counts from its arrival in the workload, also when
	// the server saw it only at the next round (PeriodicRounds).
	arrival := make(map[string]float64, len(wl.Arrivals))
	for i, a := range wl.Arrivals {
		arrival[jobs[i].ID] = a.Time
	}
	for i := range res.Jobs {
		if t, ok := arrival[res.Jobs[i].JobID]; ok {
			res.Jobs[i].Arrival = t
		}
	}
	res.Summary = summarize(res.Jobs, res.Usage, res.TotalGPUs)
	if s := &res.Summary; s.Makespan > 0 {
		first := math.Inf(1)
		for _, j := range res.Jobs {
			first = min(first, j.Arrival)
		}
		s.RescalesPerHour = float64(s.Rescales) / (s.Makespan / 3600)
		s.ResourceUtil, s.ResourceUtilEarly = resourceUtil(res.Allocs, capacityOf(opts.Cluster), first, first+s.Makespan)
	}
	res.Summary.Plans, res.PlanTime = timed.stats()
	res.Collected = purged
	specs := make([]fairJob, len(res.Jobs))
	for i, j := range res.Jobs {
		specs[i] = fair[j.JobID]
	}
	res.Fairness, res.Summary.Fairness = fairness(res.Jobs, specs, res.Allocs, capacityOf(opts.Cluster))
	res.Wall = time.Since(start)
	return res, nil
}

// gcInterval is how often, in virtual time, Run collects the jobs that
// ended more than the server's job_gc_threshold (its default, 4 h) ago:
// the agent's default interval.
const gcInterval = 5 * time.Minute

// maxIdleSteps is how many steps in a row Run takes with every job
// submitted, some waiting and none running before it gives up.
const maxIdleSteps = 1000

// ended counts the jobs that ended of the submitted ones: those the
// server no longer holds as active (read through its index of them, not
// every job it ever held).
func ended(srv *server.Server, submitted int) (int, error) {
	active, err := state.ActiveJobs(srv.State().Txn(), nil)
	return submitted - len(active), err
}

// waitLeader waits, in real time, until the in-memory server leads and
// its loop can step.
func waitLeader(ctx context.Context, srv *server.Server) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := srv.Step(ctx)
		if !errors.Is(err, server.ErrNotLeader) {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("the simulation's server did not become leader within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fastRaft is Raft's configuration for the run's one in-memory server: it
// elects itself at once.
func fastRaft() *raft.Config {
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout = 50 * time.Millisecond
	rc.ElectionTimeout = 50 * time.Millisecond
	rc.LeaderLeaseTimeout = 50 * time.Millisecond
	rc.CommitTimeout = time.Millisecond
	rc.LogOutput = io.Discard
	return rc
}

func summarize(jobs []sim.JobResult, usage []sim.UsePoint, totalGPUs int) Summary {
	var s Summary
	jcts := make([]float64, 0, len(jobs))
	first, last := math.Inf(1), 0.0
	running := 0.0
	for _, j := range jobs {
		s.Rescales += j.Rescales
		s.RegroupS += j.RegroupS
		first = min(first, j.Arrival)
		if j.Finish >= 0 {
			jcts = append(jcts, j.Finish-j.Arrival)
			last = max(last, j.Finish)
			running += j.Finish - max(j.Start, j.Arrival)
		}
	}
	if running > 0 {
		s.RegroupShare = s.RegroupS / running
	}
	s.Jobs = len(jcts)
	if len(jcts) == 0 {
		return s
	}
	slices.Sort(jcts)
	sum := 0.0
	for _, v := range jcts {
		sum += v
	}
	s.AvgJCT = sum / float64(len(jcts))
	// Nearest-rank percentiles: stat.Empirical inverts the empirical CDF.
	s.P50JCT = stat.Quantile(0.50, stat.Empirical, jcts, nil)
	s.P99JCT = stat.Quantile(0.99, stat.Empirical, jcts, nil)
	s.Makespan = last - first
	// GPU utilisation: GPU-seconds held by jobs over GPU-seconds available
	// from the first arrival to the last completion.
	held, cpu, net := 0.0, 0.0, 0.0
	for i, u := range usage {
		end := last
		if i+1 < len(usage) {
			end = usage[i+1].Time
		}
		held += float64(u.GPUs) * max(end-u.Time, 0)
		cpu += u.CPU * max(end-u.Time, 0)
		net += u.Net * max(end-u.Time, 0)
	}
	if s.Makespan > 0 {
		s.CPUUtil, s.NetUtil = cpu/s.Makespan, net/s.Makespan
	}
	if s.Makespan > 0 && totalGPUs > 0 {
		s.GPUUtil = held / (s.Makespan * float64(totalGPUs))
	}
	return s
}
