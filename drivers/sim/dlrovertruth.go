package sim

import (
	"math"

	"github.com/caravan-sched/caravan/structs"
)

// TaskTruth is a ground truth that sees each task at its own size: how
// fast each worker trains and what each task uses, as the tasks of the
// placement run (node, CPU and memory limits, an injected slowness). The
// simulator type-asserts it, as it does SubtaskTruth; a job of such a
// truth trains at Rate, reports per-task usage (structs.TaskUsage) and is
// OOM-killed when a task needs more memory than its size.
type TaskTruth interface {
	Truth
	// Rate is the job's steps per second with tasks (asynchronous: the
	// sum of its workers' speeds, unless the data is sharded statically).
	Rate(tasks []SimTask) float64
	// Use is what each task uses and, for a worker, its time per step,
	// after step steps; in the order of tasks.
	Use(step float64, tasks []SimTask) []TaskUse
	// OOMStep is the first step at or after from at which a task needs
	// more memory than its MemoryMB, and the index of that task; +Inf and
	// -1 when none ever does.
	OOMStep(from float64, tasks []SimTask) (float64, int)
}

// SimTask is one task of a running job as the ground truth sees it.
type SimTask struct {
	Role string
	Rank int
	Node int
	// CPU (MHz) and MemoryMB are the task's size.
	CPU, MemoryMB int
	// Slow is the share of its CPU the task really gets (1 for a healthy
	// task; an injected straggler has 0.25).
	Slow float64
}

// TaskUse is what one task uses: CPU in MHz, memory in MB, and its own
// seconds per step: a worker's local step, a server's update of one step
// (0 when the truth does not say).
type TaskUse struct {
	CPUMHz, MemoryMB, StepTimeS float64
}

// DLRoverModel is a parameter-server recommendation model of the DLRover
// paper (Table 1) as the simulator's ground truth sees it. Times are
// seconds per step of one worker at batch 512; cores are the paper's.
type DLRoverModel struct {
	Name string
	// IO, Compute and Update split one worker's step time alone with
	// enough CPU (t_IO, W_compute/(r·ŵ), W_update/(r·ŝ) of eq. 1).
	IO, Compute, Update float64
	// WorkerCores is ŵ, the cores a worker uses at full speed, and
	// PSCoresPerWorker ŝ, the server cores one worker keeps busy.
	WorkerCores, PSCoresPerWorker float64
	// Contention is how much a worker's IO slows per other worker
	// (shared storage and network): t_IO·(1 + Contention·(N_w − 1)).
	Contention float64
	// HotPS and HotWeight make the parameters uneven: with three servers
	// or more, the servers of the first HotPS ranks hold HotWeight times the share of
	// the others (W&D's large embedding tables, §4.2, D:154, D:160).
	HotPS     int
	HotWeight float64
	// WaitCPU is the share of ŵ a worker keeps using while it waits for
	// its servers or its IO beyond its step alone (gRPC polling).
	WaitCPU float64
	// WorkerMemoryMB is a worker's memory need; PSBaseMB a server's, plus
	// its share of the model's ModelMB, which grows with training as
	// ModelMB·(1 − e^(−step/ModelSteps)) (new feature IDs fill the
	// embedding tables).
	WorkerMemoryMB, PSBaseMB, ModelMB, ModelSteps float64
	// Steps is how many steps the job trains for (5 epochs of 90% of
	// Criteo at batch 512 in the paper; the count is assumed).
	Steps float64
}

// The paper's models, calibrated to Table 1 and the text around it
// (drivers/sim/README.md says which numbers are the paper's).
var (
	WideDeep = DLRoverModel{
		Name: "wide-deep", IO: 0.035, Compute: 0.0154, Update: 0.0329,
		WorkerCores: 2.5, PSCoresPerWorker: 5.7, HotPS: 2, HotWeight: 2.5, WaitCPU: 0.7,
		WorkerMemoryMB: 3072, PSBaseMB: 1024, ModelMB: 16384, ModelSteps: 100000,
		Steps: 400000,
	}
	XDeepFM = DLRoverModel{
		Name: "xdeepfm", IO: 0.03, Compute: 0.12, Update: 0.0113,
		WorkerCores: 19.4, PSCoresPerWorker: 3.1, Contention: 0.04, WaitCPU: 0.7,
		WorkerMemoryMB: 6144, PSBaseMB: 1024, ModelMB: 8192, ModelSteps: 50000,
		Steps: 200000,
	}
)

// DLRoverTruth is an asynchronous parameter-server job of a DLRover model
// (eq. 1 of the paper with contention): worker i's step takes
//
//	t_i = t_IO·(1 + c·(N_w−1)) + t_c·max(1, ŵ/w_i) + t_u·max(1, ρ)
//
// where w_i is the worker's cores (times its Slow) and ρ =
// max_j f_j·N_w·ŝ/s_j the load of the busiest server j (f_j its share of
// the parameters, s_j its cores times its Slow). A worker alone with
// enough cores trains at 1/(t_IO+t_c+t_u), eq. 1's min(w,ŵ), min(s,ŝ)
// form. The job's speed is Σ 1/t_i (data shards handed out on demand,
// DLRover's dynamic sharding), or with StaticShards N_w·min 1/t_i: each
// worker has 1/N_w of the data and the job ends with the slowest.
type DLRoverTruth struct {
	Model DLRoverModel
	// CoreMHz converts the tasks' MHz to cores (2500, the paper's
	// E5-2682 @2.5GHz).
	CoreMHz float64
	// StaticShards splits the data evenly and statically over the
	// workers, as the paper's TFJob baseline does (D:234).
	StaticShards bool
	// SlowWorker and SlowPS, when not 0, inject one slow worker or server
	// that gets this share of its CPU (Injector).
	SlowWorker, SlowPS float64
}

var (
	_ TaskTruth = (*DLRoverTruth)(nil)
	_ Injector  = (*DLRoverTruth)(nil)
)

// Slow returns the injected slow worker's and server's share of their CPU.
func (t *DLRoverTruth) Slow() (worker, ps float64) { return t.SlowWorker, t.SlowPS }

func (t *DLRoverTruth) cores(mhz int, slow float64) float64 {
	if slow <= 0 {
		slow = 1
	}
	return float64(mhz) / t.CoreMHz * slow
}

// shares returns the servers' shares of the parameters, by rank.
func (t *DLRoverTruth) shares(ps int) []float64 {
	f := make([]float64, ps)
	sum := 0.0
	for j := range f {
		f[j] = 1
		if ps >= 3 && j < t.Model.HotPS {
			f[j] = t.Model.HotWeight
		}
		sum += f[j]
	}
	for j := range f {
		f[j] /= sum
	}
	return f
}

// share is the partition a server of rank holds: its rank, or its
// position j among the servers when the ranks do not number them.
func share(rank, j, n int) int {
	if rank >= 0 && rank < n {
		return rank
	}
	return j
}

// split returns the workers' and servers' indexes in tasks, by rank.
func split(tasks []SimTask) (workers, servers []int) {
	for i, k := range tasks {
		if k.Role == structs.RolePS {
			servers = append(servers, i)
		} else {
			workers = append(workers, i)
		}
	}
	return workers, servers
}

// load is ρ, the busiest server's demand over its cores (0 without
// servers), and each server's demand in cores.
func (t *DLRoverTruth) load(tasks []SimTask, workers, servers []int) (float64, []float64) {
	if len(servers) == 0 {
		return 0, nil
	}
	f := t.shares(len(servers))
	demand := make([]float64, len(servers))
	rho := 0.0
	for j, i := range servers {
		demand[j] = f[share(tasks[i].Rank, j, len(f))] * float64(len(workers)) * t.Model.PSCoresPerWorker
		rho = max(rho, demand[j]/max(t.cores(tasks[i].CPU, tasks[i].Slow), 1e-9))
	}
	return rho, demand
}

// stepTimes returns each worker's time per step and its time alone.
func (t *DLRoverTruth) stepTimes(tasks []SimTask, workers, servers []int) (times, alone []float64) {
	m := t.Model
	rho, _ := t.load(tasks, workers, servers)
	io := m.IO * (1 + m.Contention*float64(max(len(workers)-1, 0)))
	for _, i := range workers {
		w := max(t.cores(tasks[i].CPU, tasks[i].Slow), 1e-9)
		compute := m.Compute * max(1, m.WorkerCores/w)
		times = append(times, io+compute+m.Update*max(1, rho))
		alone = append(alone, m.IO+compute+m.Update)
	}
	return times, alone
}

// Rate is the job's steps per second; 0 without a worker or, for a PS
// model, without a server.
func (t *DLRoverTruth) Rate(tasks []SimTask) float64 {
	workers, servers := split(tasks)
	if len(workers) == 0 || len(servers) == 0 {
		return 0
	}
	times, _ := t.stepTimes(tasks, workers, servers)
	if t.StaticShards {
		return float64(len(times)) / slicesMax(times)
	}
	r := 0.0
	for _, s := range times {
		r += 1 / s
	}
	return r
}

func slicesMax(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return m
}

// Use returns each task's CPU, memory and step time. A worker uses ŵ (at
// most its cores) while it computes and WaitCPU of it while it waits; a
// server uses its share of the job's update work, at most its cores, and
// takes t_u·max(1, ρ_j) to apply a step's update (ρ_j its own load, as in
// the workers' step time).
func (t *DLRoverTruth) Use(step float64, tasks []SimTask) []TaskUse {
	m := t.Model
	out := make([]TaskUse, len(tasks))
	workers, servers := split(tasks)
	if len(workers) == 0 || len(servers) == 0 {
		return out
	}
	times, alone := t.stepTimes(tasks, workers, servers)
	for k, i := range workers {
		need := min(m.WorkerCores, t.cores(tasks[i].CPU, tasks[i].Slow))
		busy := (alone[k] + m.WaitCPU*(times[k]-alone[k])) / times[k]
		out[i] = TaskUse{CPUMHz: need * busy * t.CoreMHz, MemoryMB: m.WorkerMemoryMB, StepTimeS: times[k]}
	}
	// A server's work per step is ŝ/R₁ core-seconds (R₁ = 1/(t_IO+t_c+t_u),
	// one worker alone), spread by the parameter shares.
	rate := t.Rate(tasks)
	perStep := m.PSCoresPerWorker * (m.IO + m.Compute + m.Update)
	f := t.shares(len(servers))
	_, demand := t.load(tasks, workers, servers)
	for j, i := range servers {
		fj := f[share(tasks[i].Rank, j, len(f))]
		cores := t.cores(tasks[i].CPU, tasks[i].Slow)
		cpu := min(fj*rate*perStep, cores)
		// A server applies a step's update in t_u, or t_u·ρ_j when its
		// share of the load is more than its cores.
		update := m.Update * max(1, demand[j]/max(cores, 1e-9))
		out[i] = TaskUse{CPUMHz: cpu * t.CoreMHz, MemoryMB: t.psMemory(step, fj), StepTimeS: update}
	}
	return out
}

func (t *DLRoverTruth) psMemory(step, share float64) float64 {
	m := t.Model
	return m.PSBaseMB + share*m.ModelMB*(1-math.Exp(-step/m.ModelSteps))
}

// OOMStep returns the first step at or after from at which a task needs
// more memory than it has: a worker at once if its need is above its
// size, a server when its share of the growing model gets there.
func (t *DLRoverTruth) OOMStep(from float64, tasks []SimTask) (float64, int) {
	m := t.Model
	best, which := math.Inf(1), -1
	_, servers := split(tasks)
	f := t.shares(len(servers))
	j := 0
	for i, k := range tasks {
		limit := float64(k.MemoryMB)
		at := math.Inf(1)
		if k.Role == structs.RolePS {
			share := f[share(k.Rank, j, len(f))]
			j++
			// PSBaseMB + share·ModelMB·(1 − e^(−s/τ)) > limit
			switch x := (limit - m.PSBaseMB) / (share * m.ModelMB); {
			case x < 0:
				at = from
			case x < 1:
				at = max(from, -m.ModelSteps*math.Log(1-x))
			}
		} else if m.WorkerMemoryMB > limit {
			at = from
		}
		if at < best {
			best, which = at, i
		}
	}
	return best, which
}

// StepTime is the job's time per step (1/Rate) with every worker at ŵ
// cores rounded up and every server at 16 cores, spread as given; Profile
// and non-sized callers read it.
func (t *DLRoverTruth) StepTime(ps int, workersPerNode []int) float64 {
	var tasks []SimTask
	wc := int(math.Ceil(t.Model.WorkerCores) * t.CoreMHz)
	for n, w := range workersPerNode {
		for range w {
			tasks = append(tasks, SimTask{Role: structs.RoleWorker, Node: n, CPU: wc, Slow: 1})
		}
	}
	for range max(ps, 1) {
		tasks = append(tasks, SimTask{Role: structs.RolePS, CPU: int(16 * t.CoreMHz), Slow: 1})
	}
	if r := t.Rate(tasks); r > 0 {
		return 1 / r
	}
	return math.Inf(1)
}

func (t *DLRoverTruth) TotalSteps() float64 { return t.Model.Steps }

// Epoch counts the paper's 5 epochs over the job's steps.
func (t *DLRoverTruth) Epoch(step float64) float64 { return 5 * step / t.Model.Steps }

// Loss is a plain decreasing curve; nothing in the paper's experiments
// reads it.
func (t *DLRoverTruth) Loss(step float64) float64 { return 0.44 + 0.1/(1+t.Epoch(step)) }
