package planner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/structs"
)

// Harness builds planner requests for tests and checks every decision
// against CheckDecision. Create it with NewHarness.
type Harness struct {
	t     testing.TB
	Nodes []*structs.Node
	Jobs  []*Job
}

// NewHarness returns an empty harness for t.
func NewHarness(t testing.TB) *Harness { return &Harness{t: t} }

// AddNodes adds n ready nodes named prefix-0, prefix-1, … with cpu MHz,
// memory MB and gpus "nvidia/gpu/Tesla V100" instances of 16 GiB each.
func (h *Harness) AddNodes(prefix string, n, cpu, memoryMB, gpus int) []*structs.Node {
	var out []*structs.Node
	for i := range n {
		node := &structs.Node{
			ID: fmt.Sprintf("%s-%d", prefix, i), Name: fmt.Sprintf("%s-%d", prefix, i),
			Datacenter: "dc1", Status: structs.NodeStatusReady, Eligible: true,
			CPU: cpu, MemoryMB: memoryMB,
			Attributes: map[string]string{"kernel.name": "linux"},
		}
		if gpus > 0 {
			node.NodeClass = "gpu"
			d := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "Tesla V100",
				Attributes: map[string]*structs.Attribute{"memory": structs.ParseAttribute("16 GiB")}}
			for g := range gpus {
				d.Instances = append(d.Instances, &structs.NodeDevice{ID: fmt.Sprintf("%s-gpu-%d", node.ID, g), Healthy: true})
			}
			node.Devices = []*structs.NodeDeviceResource{d}
		}
		out = append(out, node)
	}
	h.Nodes = append(h.Nodes, out...)
	return out
}

// AddJob adds job j, canonicalized and validated, with the given fitted
// speed model (nil for none), and returns its view for further setup.
func (h *Harness) AddJob(j *structs.Job, speed *model.Speed) *Job {
	h.t.Helper()
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		h.t.Fatalf("harness: job %q is invalid: %v", j.ID, err)
	}
	v := &Job{Job: j, Speed: speed}
	h.Jobs = append(h.Jobs, v)
	return v
}

// Request returns the request for the harness's nodes and jobs.
func (h *Harness) Request() *Request { return &Request{Nodes: h.Nodes, Jobs: h.Jobs} }

// Plan runs alg, fails the test if it errs or breaks CheckDecision, and
// returns the placements by job ID. It fails the test when two placed jobs
// share an ID in two namespaces, which the map cannot tell apart: such a
// test reads alg.Plan(h.Request()) itself.
func (h *Harness) Plan(alg Algorithm) map[string]*structs.Placement {
	h.t.Helper()
	req := h.Request()
	dec, err := alg.Plan(req)
	if err != nil {
		h.t.Fatalf("%s: plan: %v", alg.Name(), err)
	}
	if err := CheckDecision(req, dec); err != nil {
		h.t.Fatalf("%s: invalid decision: %v", alg.Name(), err)
	}
	out := make(map[string]*structs.Placement, len(dec.Placements))
	for _, p := range dec.Placements {
		if o, ok := out[p.JobID]; ok {
			h.t.Fatalf("harness: jobs %s and %s share an ID: Plan returns placements by ID", o.Key(), p.Key())
			return nil
		}
		out[p.JobID] = p
	}
	return out
}

// MockJob returns a valid CPU-only PS job with the given bounds, 1000 MHz
// and 1024 MB per task, and 100 steps per epoch.
func MockJob(id string, ps, workers structs.Bounds) *structs.Job {
	j := &structs.Job{
		ID: id,
		Training: &structs.Training{
			Architecture: structs.ArchitecturePS, Mode: structs.ModeAsync,
			GlobalBatchSize: 64, StepsPerEpoch: 100,
			Convergence: &structs.Convergence{MaxEpochs: 10},
		},
		Elastic: &structs.Elastic{Workers: workers, ParameterServers: &ps},
		Worker:  &structs.Role{Driver: "exec", Resources: &structs.Resources{CPU: 1000, MemoryMB: 1024}},
	}
	j.Canonicalize()
	return j
}

// MockAllReduceJob returns a valid synchronous all-reduce job whose
// workers take one GPU each, 1000 MHz and 1024 MB, with the given worker
// bounds and 100 steps per epoch. A nil batch fixes its global batch at
// 32 samples per worker of its maximum; else the batch varies within
// batch and starts at its minimum.
func MockAllReduceJob(id string, workers structs.Bounds, batch *structs.BatchSize) *structs.Job {
	j := &structs.Job{
		ID: id,
		Training: &structs.Training{
			Architecture: structs.ArchitectureAllReduce, Mode: structs.ModeSync,
			StepsPerEpoch: 100, BatchSize: batch,
			Convergence: &structs.Convergence{MaxEpochs: 10},
		},
		Elastic: &structs.Elastic{Workers: workers},
		Worker: &structs.Role{Driver: "exec", Resources: &structs.Resources{
			CPU: 1000, MemoryMB: 1024, Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}},
		}},
	}
	if batch == nil {
		j.Training.GlobalBatchSize = 32 * workers.Max
	}
	j.Canonicalize()
	return j
}

// MockSpeed returns an async speed model that scales well to a few dozen
// workers: f(p,w) = w / (1 + 0.2·w/p + 0.01·w + 0.02·p).
func MockSpeed() *model.Speed {
	return &model.Speed{Kind: model.SpeedAsync, Theta: [5]float64{1, 0.2, 0.01, 0.02}}
}

// RandomRequest builds a random but valid request from rng, the same one for
// the same rng state: 1 to 24 ready nodes, half of them with 1 to 8 "nvidia/gpu"
// instances of one of two models (some unhealthy), and 1 to 30 canonicalized
// jobs, PS and all-reduce, with GPU requests and memory constraints, rack
// constraints, distinct_hosts, a parameter-server template for some, fitted
// and missing loss and speed models, priorities and weights. Some jobs
// already run at their minimum: their current placements fit together and
// keep every rule of CheckDecision. It also fills what algorithms do not read
// today but a plugin receives: node names, classes, pools and metadata,
// device health descriptions and typed device attributes of every kind, job
// names, regions, metadata, statuses, indexes, speed priors, progress
// histories, affinities,
// checkpoint settings, role metadata, and the driver config and environment
// that are never sent to plugins.
//
// Property tests of algorithms and round-trip tests of the plugin wire form
// use it; it is not a model of a real cluster.
func RandomRequest(rng *rand.Rand) *Request {
	req := &Request{Now: 1_700_000_000_000_000_000 + rng.Int64N(int64(time.Hour))}
	for i := range 1 + rng.IntN(24) {
		n := &structs.Node{
			ID: fmt.Sprintf("node-%02d", i), Name: fmt.Sprintf("host-%02d", i),
			Datacenter: "dc1", NodeClass: "cpu", Status: structs.NodeStatusReady, Eligible: true,
			CPU: 2000 * (1 + rng.IntN(8)), MemoryMB: 4096 * (1 + rng.IntN(8)),
			Attributes: map[string]string{"kernel.name": "linux", "rack": fmt.Sprint(rng.IntN(3))},
		}
		if rng.IntN(2) == 0 {
			n.NodeClass = "gpu"
			n.Devices = []*structs.NodeDeviceResource{randomGPUs(rng, n.ID)}
		}
		if rng.IntN(2) == 0 {
			n.NodePool = "default"
			n.Meta = map[string]string{"zone": fmt.Sprintf("zone-%d", rng.IntN(2)), "owner": "ml"}
		}
		req.Nodes = append(req.Nodes, n)
	}
	c := NewCluster(req.Nodes)
	for i := range 1 + rng.IntN(30) {
		minW := 1 + rng.IntN(3)
		j := MockJob(fmt.Sprintf("job-%02d", i), structs.Bounds{Min: 1, Max: 1 + rng.IntN(4)}, structs.Bounds{Min: minW, Max: minW + rng.IntN(12)})
		j.Priority = 1 + rng.IntN(100)
		j.Weight = 0.5 + rng.Float64()*2
		j.SubmitTime = int64(rng.IntN(1000))
		j.Worker.Resources.CPU = 500 * (1 + rng.IntN(6))
		j.Worker.Resources.MemoryMB = 1024 * (1 + rng.IntN(6))
		if rng.IntN(3) == 0 {
			j.Training.Architecture, j.Training.Mode, j.Elastic.ParameterServers = structs.ArchitectureAllReduce, structs.ModeSync, nil
		}
		if rng.IntN(3) == 0 {
			dev := &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1 + rng.IntN(2)}
			if rng.IntN(2) == 0 {
				dev.Constraints = []*structs.Constraint{{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "32 GiB"}}
			}
			if rng.IntN(2) == 0 {
				dev.Affinities = []*structs.Affinity{{LTarget: "${device.attr.ecc}", Operand: "=", RTarget: "true", Weight: 25}}
			}
			j.Worker.Resources.Devices = []*structs.RequestedDevice{dev}
		}
		if rng.IntN(5) == 0 {
			j.Worker.Constraints = []*structs.Constraint{{LTarget: "${attr.rack}", Operand: "=", RTarget: "1"}}
		}
		if rng.IntN(6) == 0 {
			j.Worker.Constraints = append(j.Worker.Constraints, &structs.Constraint{Operand: structs.OpDistinctHosts})
		}
		randomSpecExtras(rng, j)
		j.Canonicalize()
		v := &Job{Job: j, Young: rng.IntN(3) == 0, Step: float64(rng.IntN(500))}
		if rng.IntN(4) != 0 {
			kind := model.SpeedAsync
			if j.Training.Architecture == structs.ArchitectureAllReduce {
				kind = model.SpeedAllReduce
			}
			v.Speed = &model.Speed{Kind: kind, Batch: 64, Theta: [5]float64{rng.Float64(), rng.Float64() * 0.5, rng.Float64() * 0.05, rng.Float64() * 0.05}}
			v.Speed.RelRMSE, v.Speed.Points = rng.Float64()*0.1, 4+rng.IntN(20)
		}
		if rng.IntN(2) == 0 {
			v.Loss = &model.Loss{B0: 0.01 + rng.Float64()*0.3, B1: 1, B2: rng.Float64() * 0.1, Scale: 1}
			v.Loss.RMSE, v.Loss.Points = rng.Float64()*0.05, 5+rng.IntN(50)
		}
		if rng.IntN(2) == 0 {
			v.Subtasks = &Subtasks{CPU: rng.Float64(), Net: rng.Float64(), PS: 1 + rng.IntN(4), Workers: 1 + rng.IntN(8)}
		}
		if rng.IntN(3) == 0 {
			v.Current = runAtMinimum(c, v)
		}
		if v.Current != nil {
			j.Status = structs.JobStatusRunning
		}
		req.Jobs = append(req.Jobs, v)
	}
	// Progress histories, drawn from no randomness so that the instances
	// stay those they were before histories existed.
	for k, v := range req.Jobs {
		if k%3 == 0 {
			continue
		}
		n := 2 + k%5
		for i := range n {
			v.Progress = append(v.Progress, ProgressPoint{Time: req.Now - int64(n-i)*int64(30*time.Second), Loss: 1 / float64(1+i+k)})
		}
	}
	// Ranges, sizes and usage, also drawn from no randomness.
	for k, v := range req.Jobs {
		if k%4 == 1 {
			sizeRandomJob(v, req.Now)
		}
	}
	// Goodput inputs, again drawn from no randomness.
	for k, v := range req.Jobs {
		goodputRandomJob(v, k)
	}
	return req
}

// goodputRandomJob gives job v, the k-th of a random request, what
// Pollux's goodput model reads: every third synchronous job a batch that
// may vary (and, when running, its batch now), every other job a fitted
// throughput model, most jobs gradient statistics, and restarts.
func goodputRandomJob(v *Job, k int) {
	t := v.Job.Training
	if t.Mode == structs.ModeSync && k%3 == 2 {
		t.BatchSize = &structs.BatchSize{Min: t.GlobalBatchSize, Max: 8 * t.GlobalBatchSize, MaxLocal: 64}
		if k%2 == 0 {
			t.BatchSize.MinLocal = 4
		}
		if c := v.Current; c != nil && c.NumWorkers > 0 {
			share := (t.GlobalBatchSize + c.NumWorkers - 1) / c.NumWorkers
			local := min(share, 64)
			accum := (share+local-1)/local - 1
			c.Batch = &structs.Batch{Global: c.NumWorkers * local * (accum + 1), Local: local, AccumSteps: accum}
		}
	}
	if k%2 == 0 {
		f := float64(1 + k%7)
		v.Perf = &goodput.Fit{
			Params: goodput.PerfParams{AlphaC: 0.01 * f, BetaC: 0.001 * f, AlphaN: 0.1 * f, BetaN: 0.01, AlphaR: 0.03 * f, BetaR: 1e-8, Gamma: 1 + f/4},
			Error:  0.01 * f, MaxError: 0.03 * f, Points: 3 + k, MaxReplicas: 1 + k%5, MaxLocal: float64(int(16) << (k % 3)),
		}
		if k%4 == 0 {
			// Measured on the random nodes' two GPU models apart, the
			// A100 twice as fast.
			v100, a100 := *v.Perf, *v.Perf
			a100.Params.AlphaC, a100.Params.BetaC = v100.Params.AlphaC/2, v100.Params.BetaC/2
			a100.MaxReplicas = 1
			v.PerfByType = map[string]*goodput.Fit{"V100": &v100, "A100": &a100}
		}
	}
	if k%3 != 1 {
		v.Grad = &goodput.GradParams{Sqr: 0.5 + float64(k%4), Var: float64(k % 5)}
	}
	v.Restarts = k % 4
	if v.Restarts > 0 {
		v.RestartCost = float64(25 * v.Restarts)
	}
}

// sizeRandomJob gives job j's worker role ranges around its size (so that
// algorithms that ignore ranges see the same job), its running workers
// half their CPU, which still fits where they run, and usage measured at
// its current shape.
func sizeRandomJob(v *Job, now int64) {
	r := v.Job.Worker.Resources
	r.CPURange = &structs.ResourceRange{Min: r.CPU / 2, Max: 2 * r.CPU, Initial: r.CPU}
	r.MemoryRange = &structs.ResourceRange{Min: 512, Initial: r.MemoryMB}
	if v.Current == nil {
		return
	}
	v.Since = now - int64(2*time.Minute)
	v.AttainedService = 120 * float64(v.Current.NumWorkers)
	u := &structs.JobUsage{Namespace: v.Job.Namespace, JobID: v.Job.ID, Time: now}
	for _, nt := range v.Current.Nodes {
		if nt.Workers > 0 {
			nt.WorkerSize = structs.TaskSize{CPU: r.CPU / 2}
		}
		for range nt.Workers {
			u.Tasks = append(u.Tasks, &structs.TaskUsage{
				Role: structs.RoleWorker, Rank: len(u.Tasks), NodeID: nt.NodeID,
				CPUMHz: float64(r.CPU) / 3, MemoryMB: float64(r.MemoryMB) / 2, MaxMemoryMB: float64(r.MemoryMB) / 2,
				CPULimitMHz: r.CPU / 2, MemoryLimitMB: r.MemoryMB, Source: structs.UsageSourceSim,
			})
		}
	}
	shape := structs.Shape{PS: v.Current.NumPS, Workers: v.Current.NumWorkers}
	u.ByShape = []structs.ShapeUsage{{Shape: shape, WorkerCPUMHz: float64(r.CPU) / 3, PSCPUMHz: 700, Measurements: 3}}
	v.Usage = u
}

// randomGPUs returns a group of 1 to 8 GPUs of one of two models on node
// id, every seventh unhealthy, with a typed attribute of every kind.
func randomGPUs(rng *rand.Rand, id string) *structs.NodeDeviceResource {
	name, mem, cores, clock := "V100", "16 GiB", int64(5120), 1.53
	if rng.IntN(2) == 0 {
		name, mem, cores, clock = "A100", "40 GiB", 6912, 1.41
	}
	driver, ecc := "535.104.05", rng.IntN(2) == 0
	d := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: name,
		Attributes: map[string]*structs.Attribute{
			"memory":         structs.ParseAttribute(mem),
			"cuda_cores":     {Int: &cores},
			"clock":          {Float: &clock, Unit: "GHz"},
			"driver_version": {String: &driver},
			"ecc":            {Bool: &ecc},
		}}
	for g := range 1 + rng.IntN(8) {
		inst := &structs.NodeDevice{ID: fmt.Sprintf("%s-%d", id, g), Healthy: g%7 != 6}
		if !inst.Healthy {
			inst.HealthDescription = "uncorrectable ECC errors"
		}
		d.Instances = append(d.Instances, inst)
	}
	return d
}

// randomSpecExtras fills the fields of job j that placement does not read,
// keeping it valid, and for some PS jobs a parameter-server template.
func randomSpecExtras(rng *rand.Rand, j *structs.Job) {
	j.Name = "train " + j.ID
	j.Region = []string{"global", "eu-west"}[rng.IntN(2)]
	j.Status = structs.JobStatusPending
	j.Version = uint64(rng.IntN(5))
	j.CreateIndex = uint64(10 + rng.IntN(1000))
	j.ModifyIndex = j.CreateIndex + uint64(rng.IntN(100))
	j.Meta = map[string]string{"team": []string{"vision", "nlp"}[rng.IntN(2)]}
	j.Training.Framework = []string{"pytorch", "tensorflow"}[rng.IntN(2)]
	if j.Training.Mode == structs.ModeSync {
		// Each worker must get an equal share of the batch.
		j.Training.GlobalBatchSize = 16 * j.Elastic.Workers.Max
	}
	ps := 0
	if j.Training.Architecture == structs.ArchitecturePS {
		ps = j.Elastic.ParameterServers.Min
	}
	if rng.IntN(2) == 0 {
		j.Training.Speeds = []*structs.SpeedPrior{
			{PS: ps, Workers: j.Elastic.Workers.Min, StepsPerSecond: 0.5 + rng.Float64()},
			{PS: ps, Workers: j.Elastic.Workers.Max, StepsPerSecond: 1 + rng.Float64()*4},
		}
	}
	j.Elastic.Checkpoint = &structs.Checkpoint{
		Signal:  []string{"SIGUSR1", "SIGUSR2", "SIGTERM"}[rng.IntN(3)],
		Timeout: time.Duration(1+rng.IntN(600)) * time.Second,
	}
	if rng.IntN(3) == 0 {
		j.Affinities = []*structs.Affinity{{LTarget: "${meta.zone}", Operand: "=", RTarget: "zone-0", Weight: 50}}
	}
	j.Worker.Meta = map[string]string{"image": "trainer:1." + fmt.Sprint(rng.IntN(9))}
	j.Worker.Env = map[string]string{"NCCL_DEBUG": "WARN"}
	j.Worker.Config = map[string]any{"command": "python", "args": []any{"train.py"}}
	if j.Training.Architecture == structs.ArchitecturePS && rng.IntN(3) == 0 {
		// The template differs from the worker's in size but not in where
		// it may run: same devices and constraints.
		ps := j.Worker.Copy()
		ps.Config = map[string]any{"command": "ps-server"}
		ps.Meta = map[string]string{"image": "ps:1"}
		ps.Resources.CPU, ps.Resources.MemoryMB = 250*(1+rng.IntN(4)), 512*(1+rng.IntN(4))
		ps.Affinities = []*structs.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "cpu", Weight: 30}}
		j.ParameterServer = ps
	}
}

// runAtMinimum places job j at its minimum size on c, first fit in node
// order and at most one task of a role per node under distinct_hosts, takes
// the capacity and returns the placement, or nil when the minimum does not
// fit.
func runAtMinimum(c *Cluster, j *Job) *structs.Placement {
	tasks := c.JobTasks(j)
	psb, wb := j.Bounds()
	ps, w := 0, max(wb.Min, 1)
	if j.HasPS() {
		ps = max(psb.Min, 1)
	}
	onPS, onW := make([]int, len(c.Nodes)), make([]int, len(c.Nodes))
	place := func(isPS bool) bool {
		for i := range c.Nodes {
			p, n := onPS[i], onW[i]
			if isPS {
				p++
			} else {
				n++
			}
			if isPS && tasks.PS.DistinctHosts && p > 1 || !isPS && tasks.Worker.DistinctHosts && n > 1 {
				continue
			}
			if c.FitsPair(i, tasks.PS, p, tasks.Worker, n) {
				onPS[i], onW[i] = p, n
				return true
			}
		}
		return false
	}
	for range ps {
		if !place(true) {
			return nil
		}
	}
	for range w {
		if !place(false) {
			return nil
		}
	}
	p := &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: w, Reason: "running at its minimum"}
	for i, n := range c.Nodes {
		if onPS[i] == 0 && onW[i] == 0 {
			continue
		}
		if onPS[i] > 0 {
			c.Take(i, tasks.PS, onPS[i])
		}
		if onW[i] > 0 {
			c.Take(i, tasks.Worker, onW[i])
		}
		p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: n.ID, PS: onPS[i], Workers: onW[i]})
	}
	slices.SortFunc(p.Nodes, func(a, b *structs.NodeTasks) int { return strings.Compare(a.NodeID, b.NodeID) })
	return p
}

// LargeRequest returns a deterministic request of nodes nodes, half of them
// with eight GPUs, and jobs jobs, a third of them asking for GPUs and all
// running on two nodes with fitted models: what benchmarks of the
// plugin path send.
func LargeRequest(tb testing.TB, nodes, jobs int) *Request {
	h := NewHarness(tb)
	h.AddNodes("gpu", nodes/2, 64000, 262144, 8)
	h.AddNodes("cpu", nodes-nodes/2, 32000, 131072, 0)
	for i, n := range h.Nodes {
		n.Meta = map[string]string{"rack": strconv.Itoa(i % 40)}
	}
	for i := range jobs {
		j := MockJob(fmt.Sprintf("job-%04d", i), structs.Bounds{Min: 1, Max: 4}, structs.Bounds{Min: 1, Max: 16})
		j.Meta = map[string]string{"team": "vision"}
		j.Training.Speeds = []*structs.SpeedPrior{{PS: 1, Workers: 1, StepsPerSecond: 1}, {PS: 2, Workers: 4, StepsPerSecond: 3.5}}
		if i%3 == 0 {
			j.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1,
				Constraints: []*structs.Constraint{{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "16 GiB"}}}}
		}
		v := h.AddJob(j, MockSpeed())
		v.Loss = &model.Loss{B0: 0.1, B1: 1, B2: 0.01, Scale: 2.5, RMSE: 0.01, Points: 40}
		v.Step = float64(100 * i)
		a, b := h.Nodes[(2*i)%nodes].ID, h.Nodes[(2*i+1)%nodes].ID
		v.Current = &structs.Placement{Namespace: j.Namespace, JobID: j.ID, NumPS: 1, NumWorkers: 2,
			Nodes: []*structs.NodeTasks{{NodeID: a, PS: 1, Workers: 1}, {NodeID: b, Workers: 1}}, Reason: "running"}
	}
	return h.Request()
}
