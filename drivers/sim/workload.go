package sim

import (
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
)

// Arrival is one job of a workload: when it is submitted, its elastic spec,
// the size policies that do not rescale run it at, and its ground truth.
type Arrival struct {
	Time float64 // seconds from the workload's start
	Job  *structs.Job
	// RequestPS and RequestWorkers are what a user would hand-pick: the
	// fixed size for fifo and tetris.
	RequestPS, RequestWorkers int
	// RequestPSSize and RequestWorkerSize, where not 0, are the CPU and
	// memory per task of the request, for roles whose sizes are ranges.
	RequestPSSize, RequestWorkerSize structs.TaskSize
	// RequestBatch, when not 0, is the global batch of the request: the
	// job's rounded up to a multiple of RequestWorkers (ArtifactBounds).
	RequestBatch int
	// Replicas is the num_replicas of a Pollux workload's row, before any
	// rounding; 0 for other workloads.
	Replicas int
	Truth    Truth
	// Adaptive, when not nil, is the job as a policy that chooses batch
	// sizes runs it (pollux), with AdaptiveTruth its truth at the batch
	// it starts at; nil for jobs whose batch stays fixed under any
	// policy. See adaptiveJob.
	Adaptive      *structs.Job
	AdaptiveTruth Truth
}

// FixedJob returns a copy of the arrival's job whose elastic bounds are its
// request, and whose ranged roles start at the request's sizes, for
// policies that do not rescale.
func (a *Arrival) FixedJob() *structs.Job {
	j := a.Job.Copy()
	e := j.Elastic
	e.Workers = structs.Bounds{Min: a.RequestWorkers, Max: a.RequestWorkers}
	if a.RequestBatch > 0 {
		j.Training.GlobalBatchSize = a.RequestBatch
	}
	if e.ParameterServers != nil {
		e.ParameterServers = &structs.Bounds{Min: a.RequestPS, Max: a.RequestPS}
	}
	pinSize(j.Worker, a.RequestWorkerSize)
	pinSize(j.ParameterServer, a.RequestPSSize)
	return j
}

// pinSize makes size the initial size of role r's ranged resources.
func pinSize(r *structs.Role, size structs.TaskSize) {
	if r == nil || r.Resources == nil {
		return
	}
	res := r.Resources
	if rg := res.CPURange; rg != nil && size.CPU != 0 {
		rg.Initial, res.CPU = size.CPU, size.CPU
	}
	if rg := res.MemoryRange; rg != nil && size.MemoryMB != 0 {
		rg.Initial, res.MemoryMB = size.MemoryMB, size.MemoryMB
	}
}

// Workload is a list of arrivals in time order.
type Workload struct {
	Name     string
	Arrivals []Arrival
	// NodeCPU (MHz) and NodeMemoryMB, when not 0, are the nodes the
	// workload was set up on; they replace the cluster's (Harmony's
	// workload runs on m4.2xlarge machines).
	NodeCPU, NodeMemoryMB int
	// NodeGPUs, when not nil, are the GPUs of each node of the cluster the
	// workload was set up on: they replace the cluster's nodes and GPUs
	// (Config.NodeGPUs; Dorm's testbed).
	NodeGPUs []int
	// Noise, when not 0, replaces the cluster's relative noise of the
	// samples trainers report (SpeCon's workload reports its loss with
	// less).
	Noise float64
	// NodeAttributes are added to every node's attributes (the DLRover
	// workload's cpu.frequency).
	NodeAttributes map[string]string
	// Tenants, when not nil, are the teams whose namespaces the jobs are
	// submitted in, largest first (LoadPhillyTenants); nil for a workload
	// of one team.
	Tenants []Tenant
}

// Worker tasks of Pollux jobs take one GPU and this much CPU and memory.
const (
	polluxTaskCPU = 4000
	polluxTaskMem = 16384
)

// OpenFile reads a workload file from disk or, when no such file exists,
// from the embedded data set (e.g. "pollux/workloads/workload-6.csv").
func OpenFile(name string) (fs.FS, string) {
	if _, err := os.Stat(name); err == nil {
		dir, base := path.Split(name)
		if dir == "" {
			dir = "."
		}
		return os.DirFS(dir), base
	}
	return Data, strings.TrimPrefix(name, "data/")
}

// LoadPolluxWorkload reads a workload in the Pollux CSV format
// (name,time,application,num_replicas,batch_size). Each job becomes an
// all-reduce, synchronous job with one GPU per worker and the given global
// batch, which trains for its model's epochs:
//
//   - elastic bounds: at least the GPUs that fit the batch in memory
//     (batch / the model's largest measured per-GPU batch), at most about
//     twice num_replicas, and only divisors of the batch, so that every
//     worker count the jobspec rules allow splits the batch evenly;
//   - fixed request (fifo, tetris): num_replicas rounded to the nearest
//     divisor of the batch within those bounds (2048/6 is no whole per-GPU
//     batch; 8 is used).
func LoadPolluxWorkload(fsys fs.FS, name string, profiles map[string]*Profile) (*Workload, error) {
	w := &Workload{Name: strings.TrimSuffix(path.Base(name), ".csv")}
	err := readCSV(fsys, name, func(r map[string]string) error {
		v, err := floats(r["time"], r["num_replicas"], r["batch_size"])
		if err != nil {
			return err
		}
		a, err := polluxArrival(r["name"], r["application"], v[0], int(v[1]), int(v[2]), profiles)
		if err != nil {
			return err
		}
		w.Arrivals = append(w.Arrivals, *a)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(w.Arrivals, func(a, b Arrival) int { return cmpFloat(a.Time, b.Time) })
	return w, nil
}

func polluxArrival(name, app string, at float64, replicas, batch int, profiles map[string]*Profile) (*Arrival, error) {
	p, ok := profiles[app]
	if !ok {
		return nil, fmt.Errorf("job %s: unknown application %q", name, app)
	}
	if batch < 1 || replicas < 1 {
		return nil, fmt.Errorf("job %s: batch %d and replicas %d must be positive", name, batch, replicas)
	}
	truth := NewPolluxTruth(p, float64(batch))
	minW := smallestDivisorAtLeast(batch, int(math.Ceil(float64(batch)/p.MaxLocalBatch)))
	maxW := max(largestDivisorAtMost(batch, max(2*replicas, minW)), minW)
	req := nearestDivisor(batch, replicas, minW, maxW)
	spe := max(int(math.Round(truth.TotalSteps()/float64(p.Epochs))), 1)
	j := &structs.Job{
		ID:   name,
		Meta: map[string]string{"application": app},
		Training: &structs.Training{
			Framework: "pytorch", Architecture: structs.ArchitectureAllReduce, Mode: structs.ModeSync,
			GlobalBatchSize: batch, StepsPerEpoch: spe,
			// Pollux jobs train for their epochs: a tiny threshold leaves
			// max_epochs as the convergence point the scheduler predicts.
			Convergence: &structs.Convergence{Threshold: 1e-6, Patience: 1, MaxEpochs: p.Epochs},
		},
		Elastic: &structs.Elastic{Workers: structs.Bounds{Min: minW, Max: maxW}},
		Worker: &structs.Role{Driver: "sim", Resources: &structs.Resources{
			CPU: polluxTaskCPU, MemoryMB: polluxTaskMem,
			Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}},
		}},
	}
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("job %s: %w", name, err)
	}
	a := &Arrival{Time: at, Job: j, RequestWorkers: req, Replicas: replicas, Truth: truth}
	var err error
	if a.Adaptive, err = adaptiveJob(j, p); err != nil {
		return nil, fmt.Errorf("job %s: %w", name, err)
	}
	a.AdaptiveTruth = NewPolluxTruth(p, float64(a.Adaptive.Training.GlobalBatchSize))
	return a, nil
}

// ncfBatch is the batch the Pollux artifact fixes for its ncf jobs under
// Pollux (simulator.py Cluster: target_batch_size 32768).
const ncfBatch = 32768

// adaptiveJob returns the job of model p as the Pollux artifact runs it
// under Pollux (simulator.py Cluster and get_pollux_job_info): its batch
// within [the model's initial batch, its largest batch], starting at the
// initial batch, which is also the reference of its statistical
// efficiency; local batches within the traces' per-GPU range (yolov3: at
// most 8); 1 to min(64, largest batch ÷ smallest local batch) workers.
// ncf, the artifact's exception, keeps a fixed batch of 32768 on one
// worker.
func adaptiveJob(fixed *structs.Job, p *Profile) (*structs.Job, error) {
	j := fixed.Copy()
	t := j.Training
	if p.Name == "ncf" {
		t.GlobalBatchSize = ncfBatch
		j.Elastic.Workers = structs.Bounds{Min: 1, Max: 1}
	} else {
		t.GlobalBatchSize = int(p.InitBatch)
		t.BatchSize = &structs.BatchSize{
			Min: int(p.InitBatch), Max: int(p.MaxBatch),
			MinLocal: int(p.MinLocalBatch), MaxLocal: int(p.MaxLocalBatch),
		}
		j.Elastic.Workers = structs.Bounds{Min: 1, Max: min(64, int(p.MaxBatch/p.MinLocalBatch))}
	}
	t.StepsPerEpoch = max(int(math.Round(p.Steps(float64(t.GlobalBatchSize))/float64(p.Epochs))), 1)
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("adaptive batch: %w", err)
	}
	return j, nil
}

// ArtifactBounds bounds the jobs of a Pollux workload as the Pollux
// artifact's baselines run them (its simulator.py), in place of
// LoadPolluxWorkload's bounds:
//
//   - elastic (its Optimus+Oracle): 1 to batch ÷ the smallest measured
//     per-GPU batch workers, a per-GPU batch too large for a GPU being
//     trained by gradient accumulation (Profile.Iteration); ncf, the
//     smallest model, on 1 GPU only, as the artifact pins it;
//   - fixed request (its Tiresias): the row's num_replicas as it is, the
//     per-GPU batch rounded up (⌈batch / replicas⌉), so the request's
//     global batch is the next multiple of the replicas (RequestBatch).
//
// Arrivals of other truths are left alone. The truth's batch stays the
// row's.
func (w *Workload) ArtifactBounds() {
	for i := range w.Arrivals {
		a := &w.Arrivals[i]
		pt, ok := a.Truth.(*PolluxTruth)
		if !ok || a.Replicas == 0 {
			continue
		}
		batch := a.Job.Training.GlobalBatchSize
		maxW := max(batch/int(pt.Profile.MinLocalBatch), 1)
		if pt.Profile.Name == "ncf" {
			maxW = 1
		}
		for batch%maxW != 0 {
			maxW-- // a batch the jobspec rules accept; none of the Pollux workloads needs it
		}
		j := a.Job.Copy()
		j.Elastic.Workers = structs.Bounds{Min: 1, Max: maxW}
		a.Job = j
		a.RequestWorkers = a.Replicas
		a.RequestBatch = (batch + a.Replicas - 1) / a.Replicas * a.Replicas
	}
}

func largestDivisorAtMost(n, limit int) int {
	for d := min(limit, n); d > 1; d-- {
		if n%d == 0 {
			return d
		}
	}
	return 1
}

func smallestDivisorAtLeast(n, limit int) int {
	for d := max(limit, 1); d < n; d++ {
		if n%d == 0 {
			return d
		}
	}
	return n
}

// nearestDivisor returns the divisor of n in [lo, hi] nearest to want, the
// larger on a tie.
func nearestDivisor(n, want, lo, hi int) int {
	best := lo
	for d := lo; d <= hi; d++ {
		if n%d == 0 && abs(d-want) <= abs(best-want) {
			best = d
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// phillyApps maps a Philly job's GPU time to a model, as the Pollux artifact
// built its workloads: short jobs are small models, long jobs large ones.
// Jobs of each band alternate between its models.
var phillyApps = []struct {
	maxGPUHours float64
	apps        []string
}{
	{1, []string{"cifar10", "ncf"}},
	{10, []string{"deepspeech2", "yolov3"}},
	{100, []string{"bert", "cifar10"}},
	{math.Inf(1), []string{"imagenet"}},
}

// LoadPhilly reads the Philly trace (timestamp,duration,num_gpus,gpu_time,
// cluster) into a workload of Pollux models: each job's model comes from
// its GPU time (phillyApps), its replicas are its GPUs (at most 64), and
// its global batch is the smallest measured batch of the model that gives
// each replica at least the smallest measured per-GPU batch. Arrivals are
// seconds after the first job. limit > 0 keeps the first limit jobs.
func LoadPhilly(fsys fs.FS, name string, profiles map[string]*Profile, limit int) (*Workload, error) {
	rows, err := readPhilly(fsys, name)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	w := &Workload{Name: "philly"}
	models := phillyModels{}
	for i, r := range rows {
		a, err := models.arrival(i, r, rows[0].at, profiles)
		if err != nil {
			return nil, err
		}
		w.Arrivals = append(w.Arrivals, *a)
	}
	return w, nil
}

// phillyRow is one job of the Philly trace.
type phillyRow struct {
	at            time.Time
	gpus, gpuTime float64
	// cluster is the job's virtual cluster, the team it ran for.
	cluster string
}

// readPhilly reads the Philly trace's rows in time order (a stable sort:
// rows of one second keep the file's order).
func readPhilly(fsys fs.FS, name string) ([]phillyRow, error) {
	var rows []phillyRow
	err := readCSV(fsys, name, func(r map[string]string) error {
		at, err := time.Parse("2006-01-02 15:04:05", r["timestamp"])
		if err != nil {
			return err
		}
		v, err := floats(r["num_gpus"], r["gpu_time"])
		if err != nil {
			return err
		}
		rows = append(rows, phillyRow{at, v[0], v[1], r["cluster"]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(rows, func(a, b phillyRow) int { return a.at.Compare(b.at) })
	return rows, nil
}

// phillyModels assigns the Philly trace's jobs their models: it counts the
// jobs of each band of phillyApps, so that the models of a band alternate
// in the order of arrival.
type phillyModels map[int]int

// arrival returns the i-th job of a workload of the trace's rows that
// starts at start: its model from its GPU time, its replicas its GPUs (at
// most 64), its batch the smallest measured batch of the model that gives
// each replica at least the smallest measured per-GPU batch.
func (m phillyModels) arrival(i int, r phillyRow, start time.Time, profiles map[string]*Profile) (*Arrival, error) {
	band := 0
	for r.gpuTime/3600 >= phillyApps[band].maxGPUHours {
		band++
	}
	apps := phillyApps[band].apps
	app := apps[m[band]%len(apps)]
	m[band]++
	p := profiles[app]
	replicas := int(min(max(r.gpus, 1), 64))
	batch := int(p.curves[len(p.curves)-1].batch)
	for _, c := range p.curves {
		if c.batch >= float64(replicas)*p.MinLocalBatch {
			batch = int(c.batch)
			break
		}
	}
	return polluxArrival(fmt.Sprintf("philly-%05d-%s", i, app), app, r.at.Sub(start).Seconds(), replicas, batch, profiles)
}

// LoadProfiles loads every Pollux model's profile.
func LoadProfiles(fsys fs.FS) (map[string]*Profile, error) {
	out := map[string]*Profile{}
	for name := range PolluxModels {
		p, err := LoadProfile(fsys, name)
		if err != nil {
			return nil, err
		}
		out[name] = p
	}
	return out, nil
}

// ParametricWorkload generates n synthetic synchronous parameter-server
// jobs in the form of the Optimus paper's models, arriving as a Poisson
// process with the given mean gap: step times from eq. 4 (the planner's own
// speed model: this workload tests how Optimus handles jobs it can model
// exactly, not the paper's evaluation, which is OptimusWorkload's) with
// coefficients drawn around sizes that give
// steps of a fraction of a second to a few seconds, loss curves of Fig. 5's
// shape (b around the Seq2Seq fit (0.21, 1.07, 0.07)), 1 to 16 workers with
// a GPU each and 1 to 8 CPU parameter servers. A user would request 2
// parameter servers and 4 workers.
func ParametricWorkload(n int, meanGap float64, seed uint64) *Workload {
	rng := rand.New(rand.NewPCG(seed, 0x0971))
	w := &Workload{Name: fmt.Sprintf("parametric-%d", n)}
	at := 0.0
	for i := range n {
		at += rng.ExpFloat64() * meanGap
		u := func(lo, hi float64) float64 { return lo + rng.Float64()*(hi-lo) }
		batch := 64 * (1 << rng.IntN(3)) // 64, 128 or 256: divisible by 16
		truth := (&ParametricTruth{
			Theta:         [5]float64{u(0.005, 0.02), u(0.02, 0.1), u(0.05, 0.3), u(0.005, 0.03), u(0.005, 0.03)},
			Batch:         float64(batch),
			B:             [3]float64{u(0.1, 0.4), u(0.8, 1.3), u(0.03, 0.1)},
			StepsPerEpoch: float64(100 * (1 + rng.IntN(10))),
			Threshold:     0.02,
			Patience:      2,
		}).Init()
		j := &structs.Job{
			ID: fmt.Sprintf("ps-%03d", i),
			Training: &structs.Training{
				Architecture: structs.ArchitecturePS, Mode: structs.ModeSync,
				GlobalBatchSize: batch, StepsPerEpoch: int(truth.StepsPerEpoch),
				Convergence: &structs.Convergence{Threshold: truth.Threshold, Patience: truth.Patience, MaxEpochs: 200},
			},
			Elastic: &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 16}, ParameterServers: &structs.Bounds{Min: 1, Max: 8}},
			Worker: &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: 4000, MemoryMB: 8192,
				Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}}},
			ParameterServer: &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: 4000, MemoryMB: 8192}},
		}
		j.Canonicalize()
		w.Arrivals = append(w.Arrivals, Arrival{Time: math.Round(at), Job: j, RequestPS: 2, RequestWorkers: 4, Truth: truth})
	}
	return w
}
