package sim

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/structs"
)

// ErrOverCommitted is returned by Enact for a plan that puts more on a node
// than it has. The simulator rejects such a plan whole; it never clips it.
var ErrOverCommitted = errors.New("plan over-commits a node")

// Config describes the simulated cluster and its trainers.
type Config struct {
	Nodes       int
	GPUsPerNode int
	// NodeGPUs, when not nil, are the GPUs of each node, one entry per
	// node: it replaces Nodes and GPUsPerNode, for clusters whose nodes
	// differ (Dorm's testbed: 5 GPUs on 20 servers).
	NodeGPUs []int
	// CPU (MHz) and MemoryMB per node.
	CPU, MemoryMB int
	// RestartPenalty is the time a job loses whenever it starts, is
	// rescaled or is moved: checkpoint, restart, reload (Optimus and Pollux
	// assume tens of seconds).
	RestartPenalty time.Duration
	// SampleInterval is how often a running trainer reports a sample.
	SampleInterval time.Duration
	// Noise is the relative standard deviation of reported losses and step
	// times.
	Noise float64
	// ProfileTime is what profiling costs a job per configuration measured
	// (see Profile).
	ProfileTime time.Duration
	// Seed makes runs reproducible.
	Seed uint64
	// Uncoordinated runs subtask jobs that share a node without a subtask
	// coordinator: their computations share the CPU and their
	// communications the network whenever they overlap (naive
	// co-location), and a node holds at most NaiveJobsPerNode of them.
	// False queues their subtasks per resource as Harmony's subtask
	// executor does (harmonytruth.go).
	Uncoordinated bool
	// Attributes are added to every node's attributes.
	Attributes map[string]string
	// GPUModels, when not empty, are the GPU models of the nodes in turn
	// (node i has GPUModels[i % len]); empty means every node has
	// DefaultGPUModel. NodeModels replaces it.
	GPUModels []GPUModel
	// NodeModels, when not nil, is each node's GPU model, one entry per
	// node as NodeGPUs (ClusterSpec.Apply sets both for mixed fleets).
	NodeModels []GPUModel
	// ModelRestartPenalty, when it holds the model a job's meta names as
	// "application", replaces RestartPenalty for that job (the Sia
	// artifact's checkpoint-restore delay per model).
	ModelRestartPenalty map[string]time.Duration
	// TypeProfileSteps is the steps ProfileTypes times at each batch it
	// measures, which the job pays for before it starts; 0 makes that
	// profiling free (DefaultConfig: DefaultTypeProfileSteps).
	TypeProfileSteps int
}

// GPUModel is a kind of GPU card: the device name nodes report and its
// memory, which device constraints read (${device.attr.memory}).
type GPUModel struct {
	Name   string
	Memory string // "16 GiB"
}

// DefaultGPUModel is the GPU of every node of a Config without GPUModels.
var DefaultGPUModel = GPUModel{Name: "Tesla V100-SXM2-16GB", Memory: "16 GiB"}

// GPUModel returns node i's GPU model.
func (c Config) GPUModel(i int) GPUModel {
	if i < len(c.NodeModels) {
		return c.NodeModels[i]
	}
	if len(c.GPUModels) == 0 {
		return DefaultGPUModel
	}
	return c.GPUModels[i%len(c.GPUModels)]
}

// NodeCount returns the number of nodes.
func (c Config) NodeCount() int {
	if c.NodeGPUs != nil {
		return len(c.NodeGPUs)
	}
	return c.Nodes
}

// GPUs returns node i's GPUs.
func (c Config) GPUs(i int) int {
	if c.NodeGPUs != nil {
		return c.NodeGPUs[i]
	}
	return c.GPUsPerNode
}

// TotalGPUs returns the cluster's GPUs.
func (c Config) TotalGPUs() int {
	n := 0
	for i := range c.NodeCount() {
		n += c.GPUs(i)
	}
	return n
}

// DefaultConfig is a 16 × 4-GPU cluster like the Pollux testbed.
func DefaultConfig() Config {
	return Config{
		Nodes: 16, GPUsPerNode: 4, CPU: 64000, MemoryMB: 262144,
		RestartPenalty: 30 * time.Second, SampleInterval: 30 * time.Second,
		ProfileTime: 10 * time.Second, TypeProfileSteps: DefaultTypeProfileSteps, Noise: 0.05, Seed: 1,
	}
}

// Job states the simulator reports.
const (
	StatePending  = "pending"  // submitted, never placed
	StateRunning  = "running"  // placed (possibly restarting)
	StatePaused   = "paused"   // was placed, has no tasks now
	StateComplete = "complete" // trained to the end
	StateFailed   = "failed"   // OOM-killed and never placed again
)

// JobState is what the simulator reports about one job.
type JobState struct {
	Namespace, JobID string
	Status           string
	Step             float64
	Placement        *structs.Placement
}

// JobResult is one job's history, for reports.
type JobResult struct {
	Namespace string
	JobID     string
	// MinGPUs is the GPUs the job needs to run at all: its minimum workers
	// and parameter servers (as submitted), times each task's GPUs.
	MinGPUs  int
	Arrival  float64 // seconds
	Start    float64 // first placement; -1 if never placed
	Finish   float64 // -1 if not finished
	Rescales int
	// RegroupS is the time the job spent restarting after any start but
	// its first (a rescale, a move, or a resume after a pause): what
	// regrouping cost it, in seconds.
	RegroupS float64
	// Failed is set for a job whose task was OOM-killed, or that was
	// placed on a GPU type it cannot run on (hetero.go), and that was not
	// placed again within OOMFailAfter (Finish is -1).
	Failed bool
	// OOMKills counts the job's tasks killed for memory, over its life.
	OOMKills int
	// Speeds are the configurations a job of a TaskTruth or a CruiseTruth
	// ran at, one per placement, with the speed its ground truth gives
	// each.
	Speeds []SpeedPoint
	// Batches are the batches an adaptive job was given, in time order
	// (structs.Placement.Batch), the first decision's included; nil for a
	// job never given one.
	Batches []BatchPoint
}

// SpeedPoint is one configuration a job ran at from Time on: its counts,
// the CPU (MHz) and memory (MB) it held, and its steps per second once
// restarted.
type SpeedPoint struct {
	Time           float64
	PS, Workers    int
	CPU, MemoryMB  int
	StepsPerSecond float64
}

// UsePoint records the GPUs held by all jobs from a time on.
type UsePoint struct {
	Time float64
	GPUs int
	// CPU and Net are the cluster's utilisation by subtask jobs (Harmony's
	// workloads): per node, the share of the time its CPU and its network
	// are busy in the phase simulation (harmonytruth.go), averaged over
	// every node; 0 without them.
	CPU, Net float64
}

// AllocChange records what a job holds from a time on: its tasks' GPUs,
// CPU (MHz) and memory (MB) together, all 0 once it holds no tasks.
type AllocChange struct {
	Time     float64
	JobID    string
	GPUs     int
	CPU      int
	MemoryMB int
}

// Resources are what tasks take: CPU (MHz), memory (MB) and GPUs.
type Resources struct{ CPU, MemoryMB, GPUs int }

// TaskResources returns what one worker and one parameter server of j
// take, as the simulator charges them; a PS job without a
// parameter_server template runs its servers from the worker template.
func TaskResources(j *structs.Job) (worker, ps Resources) {
	wc, wm, wg := taskNeeds(j.Worker)
	pc, pm, pg := taskNeeds(psRole(j))
	return Resources{wc, wm, wg}, Resources{pc, pm, pg}
}

// Sim is the simulated cluster. Times are seconds of virtual time.
type Sim struct {
	cfg   Config
	now   float64
	nodes []*structs.Node
	// models is each node's GPU model name, "" for a node without GPUs.
	models []string
	index  map[string]int
	jobs   map[string]*job
	order  []*job // submission order, for determinism
	// submitted counts the submissions (job.seq).
	submitted int
	live      []*job // submitted and not finished, in submission order
	done      []string
	samples   []structs.Sample
	// sampleBase is the cursor of samples[0].
	sampleBase int
	usage      []UsePoint
	allocs     []AllocChange
	held       int // GPUs held by all jobs now
	// subtasks caches the co-location of subtask jobs (subtasks.go).
	subtasks subtaskCache
}

type job struct {
	spec *structs.Job
	// seq orders the jobs by submission.
	seq       int
	truth     Truth
	rng       *rand.Rand
	arrival   float64
	start     float64
	finish    float64
	placement *structs.Placement
	perNode   []int // workers per node index
	// onPlacement is what the placement gives the job, computed when
	// first asked (Sim.onPlacement) and reset (nil) when perNode or the
	// truth changes: computing it walks every node of the cluster.
	onPlacement *onPlacement
	ps          int
	gpus        int
	cpu, mem    int // MHz and MB held now
	step        float64
	// stepOffset is the optimizer steps taken beyond step, the truth's:
	// an adaptive job's truth counts steps at its current batch
	// (rebatch); batches are the batches it was given.
	stepOffset float64
	batches    []BatchPoint
	restartTo  float64 // no progress before this time
	profiling  float64 // seconds of profiling still owed at the first start
	rescales   int
	regroup    float64 // seconds restarting after starts but the first
	nextSample float64
	failed     bool // a TaskTruth job whose OOM no placement cured
	// unfit says why a Pollux job cannot run on its placement (a GPU
	// type it has no measurements of or whose memory its smallest batch
	// exceeds); "" when it can. Such a job is stalled as by an OOM kill.
	unfit string
	// Tasks of a TaskTruth job (tasks.go): each at its size, with its OOM
	// kills and memory peak in the current generation; stalled is when a
	// task was killed for memory (-1: none), after which the job makes no
	// progress until placed again.
	tasks     []SimTask
	taskState []taskState
	stalled   float64
	slow      [2]slowSlot // injected slow worker and server
	slowSet   bool
	usage     *structs.JobUsage
	byShape   []structs.ShapeUsage
	speeds    []SpeedPoint
	oomKills  int
}

// ended reports whether j trained to its end or failed.
func (j *job) ended() bool { return j.finish >= 0 || j.failed }

// New returns an empty cluster of cfg.NodeCount() nodes named node-00,
// node-01, …
func New(cfg Config) *Sim {
	s := &Sim{cfg: cfg, index: map[string]int{}, jobs: map[string]*job{}}
	for i := range cfg.NodeCount() {
		n := &structs.Node{
			ID: fmt.Sprintf("node-%02d", i), Name: fmt.Sprintf("node-%02d", i),
			Datacenter: "dc1", NodePool: "default", Status: structs.NodeStatusReady, Eligible: true,
			CPU: cfg.CPU, MemoryMB: cfg.MemoryMB,
			Attributes: map[string]string{"kernel.name": "linux", "driver.sim": "1"},
		}
		maps.Copy(n.Attributes, cfg.Attributes)
		s.models = append(s.models, "")
		if gpus := cfg.GPUs(i); gpus > 0 {
			m := cfg.GPUModel(i)
			s.models[i] = m.Name
			d := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: m.Name,
				Attributes: map[string]*structs.Attribute{"memory": structs.ParseAttribute(m.Memory)}}
			for g := range gpus {
				d.Instances = append(d.Instances, &structs.NodeDevice{ID: fmt.Sprintf("%s-gpu%d", n.ID, g), Healthy: true})
			}
			n.Devices = []*structs.NodeDeviceResource{d}
		}
		s.index[n.ID] = i
		s.nodes = append(s.nodes, n)
	}
	return s
}

// Now returns the virtual time in seconds.
func (s *Sim) Now() float64 { return s.now }

// Nodes returns the cluster's nodes. The slice and nodes must not be
// modified.
func (s *Sim) Nodes() []*structs.Node { return s.nodes }

// Submit tells the simulator about a job and its ground truth. The
// scheduler learns of the job separately, as it would from a user.
func (s *Sim) Submit(j *structs.Job, truth Truth) error {
	if _, ok := s.jobs[j.ID]; ok {
		return fmt.Errorf("job %q is already submitted", j.ID)
	}
	s.submitted++
	jb := &job{
		spec: j, truth: truth, arrival: s.now, start: -1, finish: -1, stalled: -1, seq: s.submitted,
		rng: rand.New(rand.NewPCG(s.cfg.Seed, uint64(len(s.order))+1)),
	}
	s.jobs[j.ID] = jb
	s.order = append(s.order, jb)
	s.live = append(s.live, jb)
	return nil
}

// entryNeeds returns what the tasks of one placement entry of job j take,
// each at the entry's size (NodeTasks.PSSize and WorkerSize).
func entryNeeds(j *structs.Job, nt *structs.NodeTasks) Resources {
	var out Resources
	for _, e := range []struct {
		r     *structs.Role
		n     int
		sized structs.TaskSize
	}{{j.Worker, nt.Workers, nt.WorkerSize}, {psRole(j), nt.PS, nt.PSSize}} {
		if e.n == 0 || e.r == nil || e.r.Resources == nil {
			continue
		}
		_, _, gpus := taskNeeds(e.r)
		cpu, mem := e.r.Resources.Sized(e.sized)
		out.CPU += e.n * cpu
		out.MemoryMB += e.n * mem
		out.GPUs += e.n * gpus
	}
	return out
}

// taskNeeds returns what one task of role r needs: CPU, memory, GPUs.
func taskNeeds(r *structs.Role) (cpu, mem, gpus int) {
	if r == nil || r.Resources == nil {
		return 0, 0, 0
	}
	for _, d := range r.Resources.Devices {
		if id, err := structs.ParseDeviceID(d.Name); err == nil && id.Type == "gpu" {
			gpus += d.Count
		}
	}
	return r.Resources.CPU, r.Resources.MemoryMB, gpus
}

func psRole(j *structs.Job) *structs.Role {
	if j.ParameterServer != nil {
		return j.ParameterServer
	}
	return j.Worker
}

// Enact applies a plan: jobs whose placement changes restart (losing
// RestartPenalty of progress time, keeping their steps, as from a
// checkpoint); jobs not in the plan keep what they have. A plan that names
// an unknown or finished job or node, or that puts more tasks on a node than
// its CPU, memory or GPUs hold, is rejected with an error and changes
// nothing.
func (s *Sim) Enact(plan *structs.Plan) error {
	type use struct{ cpu, mem, gpus int }
	used := make([]use, len(s.nodes))
	next := map[*job]*structs.Placement{}
	for _, p := range plan.Placements {
		j, ok := s.jobs[p.JobID]
		if !ok {
			return fmt.Errorf("plan places unknown job %q", p.JobID)
		}
		if j.ended() {
			if !p.Paused() {
				return fmt.Errorf("plan places job %q, which has finished", p.JobID)
			}
			continue
		}
		if err := p.Validate(); err != nil {
			return err
		}
		next[j] = p
	}
	for _, j := range s.live {
		p, ok := next[j]
		if !ok {
			p = j.placement
		}
		if p == nil || j.ended() {
			continue
		}
		for _, nt := range p.Nodes {
			i, ok := s.index[nt.NodeID]
			if !ok {
				return fmt.Errorf("plan places job %q on unknown node %q", j.spec.ID, nt.NodeID)
			}
			need := entryNeeds(j.spec, nt)
			u := &used[i]
			u.cpu += need.CPU
			u.mem += need.MemoryMB
			u.gpus += need.GPUs
		}
	}
	if err := s.checkNaiveMemory(next); err != nil {
		return err
	}
	for i, u := range used {
		n := s.nodes[i]
		if u.cpu > n.CPU || u.mem > n.MemoryMB || u.gpus > s.cfg.GPUs(i) {
			return fmt.Errorf("%w: %s would hold %d MHz, %d MB and %d GPUs of %d, %d and %d",
				ErrOverCommitted, n.ID, u.cpu, u.mem, u.gpus, n.CPU, n.MemoryMB, s.cfg.GPUs(i))
		}
	}
	changed := false
	for _, j := range s.live {
		p, ok := next[j]
		if !ok {
			continue
		}
		if samePlacement(j.placement, p) {
			// A new batch alone moves no task and restarts nothing.
			if j.running() {
				j.placement = p
			}
		} else {
			changed = true
			s.place(j, p)
		}
		if j.running() {
			j.rebatch(p, s.now)
		}
	}
	if changed {
		s.recordUsage()
	}
	return nil
}

// place moves job j to placement p (nil or paused: no tasks).
func (s *Sim) place(j *job, p *structs.Placement) {
	wasRunning := j.placement != nil && !j.placement.Paused()
	if p == nil || p.Paused() {
		s.setHeld(j, Resources{}, s.now)
		j.placement, j.perNode, j.ps, j.onPlacement = p, nil, 0, nil
		j.tasks, j.taskState, j.stalled = nil, nil, -1
		return
	}
	if wasRunning {
		j.rescales++
	}
	if j.start < 0 {
		j.start = s.now
	} else {
		j.regroup += s.restartPenalty(j)
	}
	j.placement, j.onPlacement = p, nil
	j.perNode = make([]int, len(s.nodes))
	j.ps = p.NumPS
	var held Resources
	for _, nt := range p.Nodes {
		need := entryNeeds(j.spec, nt)
		held.CPU += need.CPU
		held.MemoryMB += need.MemoryMB
		held.GPUs += need.GPUs
		// A node may hold several entries of sizes.
		j.perNode[s.index[nt.NodeID]] += nt.Workers
	}
	s.setHeld(j, held, s.now)
	s.placeTasks(j, p)
	if t, ok := j.truth.(*PolluxTruth); ok {
		j.stalled, j.unfit = -1, ""
		if st := s.onPlacement(j).pollux; !st.fits {
			// It would fail at once, as a task OOM-killed at start:
			// no progress, and failed unless placed again (Advance).
			j.stalled, j.unfit = s.now, fmt.Sprintf("%s cannot run on %s", t.Profile.Name, st.model)
		}
	}
	if t, ok := j.truth.(TaskTruth); ok {
		j.speeds = append(j.speeds, SpeedPoint{Time: s.now, PS: p.NumPS, Workers: p.NumWorkers, CPU: held.CPU, MemoryMB: held.MemoryMB, StepsPerSecond: t.Rate(j.tasks)})
	}
	if t, ok := j.truth.(*CruiseTruth); ok {
		j.speeds = append(j.speeds, SpeedPoint{Time: s.now, PS: p.NumPS, Workers: p.NumWorkers, CPU: held.CPU, MemoryMB: held.MemoryMB, StepsPerSecond: 1 / t.StepTime(j.ps, j.perNode)})
	}
	j.restartTo = s.now + s.restartPenalty(j) + j.profiling
	j.profiling = 0
	j.nextSample = j.restartTo + s.cfg.SampleInterval.Seconds()
}

// restartPenalty is the seconds job j loses on a start, rescale or move:
// its model's (ModelRestartPenalty, by meta "application") or
// RestartPenalty.
func (s *Sim) restartPenalty(j *job) float64 {
	if d, ok := s.cfg.ModelRestartPenalty[j.spec.Meta["application"]]; ok {
		return d.Seconds()
	}
	return s.cfg.RestartPenalty.Seconds()
}

// samePlacement reports whether a and b run the same tasks at the same
// sizes (NodeTasks is compared whole).
func samePlacement(a, b *structs.Placement) bool {
	if a == nil || b == nil {
		return (a == nil || a.Paused()) && (b == nil || b.Paused())
	}
	if a.NumPS != b.NumPS || a.NumWorkers != b.NumWorkers || len(a.Nodes) != len(b.Nodes) {
		return false
	}
	for i := range a.Nodes {
		if *a.Nodes[i] != *b.Nodes[i] {
			return false
		}
	}
	return true
}

// running reports whether j holds tasks and has not finished.
func (j *job) running() bool { return !j.ended() && j.perNode != nil }

// stepTime is j's seconds per step now: its truth's, or for a subtask
// job its iteration among the subtask jobs it shares nodes with (co).
func (s *Sim) stepTime(j *job, co *colocation) float64 {
	if _, ok := j.truth.(*SubtaskTruth); ok {
		return s.colocatedStepTime(j, co)
	}
	if t, ok := j.truth.(*SharedCPUTruth); ok {
		return s.sharedStepTime(j, t)
	}
	if t, ok := j.truth.(TaskTruth); ok {
		if r := t.Rate(j.tasks); r > 0 && j.stalled < 0 {
			return 1 / r
		}
		return math.Inf(1)
	}
	if _, ok := j.truth.(*PolluxTruth); ok {
		st := s.onPlacement(j).pollux
		if !st.fits {
			return math.Inf(1)
		}
		return st.it.Seconds
	}
	return j.truth.StepTime(j.ps, j.perNode)
}

// onPlacement is what job j's placement gives it.
type onPlacement struct {
	workers int
	gpuType string
	// pollux is how a PolluxTruth's steps run there.
	pollux polluxStep
}

// onPlacement returns what job j's placement gives it, computed once a
// placement and truth.
func (s *Sim) onPlacement(j *job) *onPlacement {
	if o := j.onPlacement; o != nil {
		return o
	}
	_, workers := shape(j.perNode)
	o := &onPlacement{workers: workers, gpuType: s.gpuType(j)}
	if t, ok := j.truth.(*PolluxTruth); ok {
		o.pollux = newPolluxStep(t, j.perNode, s.models)
	}
	j.onPlacement = o
	return o
}

// gpuType is the model of the GPUs job j's workers run on, the nodes'
// when they share one, else "" (a Pollux job's sample names its slowest
// type instead, polluxSample).
func (s *Sim) gpuType(j *job) string {
	model := ""
	for i, w := range j.perNode {
		switch {
		case w == 0:
		case model == "":
			model = s.models[i]
		case model != s.models[i]:
			return ""
		}
	}
	return model
}

// rate is j's steps per second while not restarting.
func (s *Sim) rate(j *job, co *colocation) float64 {
	st := s.stepTime(j, co)
	if st <= 0 || math.IsNaN(st) {
		return 0
	}
	return 1 / st
}

// NextEvent returns the earliest time after now at which a job finishes or
// ends a restart, or +Inf.
func (s *Sim) NextEvent() float64 {
	next := math.Inf(1)
	co := s.colocation(false)
	for _, j := range s.live {
		if !j.running() {
			continue
		}
		if j.restartTo > s.now {
			next = min(next, j.restartTo)
			continue
		}
		if j.stalled >= 0 {
			next = min(next, j.stalled+OOMFailAfter.Seconds())
			continue
		}
		if r := s.rate(j, co); r > 0 {
			next = min(next, s.now+(j.truth.TotalSteps()-j.step)/r)
			oom, _, _ := j.oomAt(s.now, r, j.truth.TotalSteps())
			next = min(next, oom)
		}
	}
	return next
}

// Advance moves the clock to t: running jobs train, report samples every
// SampleInterval, and finish when they reach their total steps, freeing
// their tasks.
func (s *Sim) Advance(t float64) {
	if t < s.now {
		return
	}
	finished, allocs := false, len(s.allocs)
	// Subtask jobs' speeds depend on each other's placements, which only
	// change at events: callers advance event by event (NextEvent).
	co := s.colocation(false)
	for _, j := range s.live {
		if !j.running() {
			continue
		}
		from := max(s.now, j.restartTo)
		if from > t {
			continue
		}
		if j.stalled >= 0 {
			finished = s.failStalled(j, t) || finished
			continue
		}
		r := s.rate(j, co)
		total := j.truth.TotalSteps()
		// Steps are floats: a job within a hair of its total is done, or
		// its completion would sit at "now" forever.
		eps := 1e-9 * max(total, 1)
		end := t
		if r > 0 && j.step+(t-from)*r >= total-eps {
			end = min(from+max(total-j.step, 0)/r, t)
		}
		oom, oomStep, killed := j.oomAt(from, r, total)
		if oom <= end {
			end = oom
		}
		for j.nextSample <= end {
			s.sample(j, j.step+(j.nextSample-from)*r, j.nextSample, co)
			j.nextSample += s.cfg.SampleInterval.Seconds()
		}
		j.step += (end - from) * r
		if killed >= 0 && oom <= t {
			j.step = oomStep
			j.kill(killed, oom)
			s.measure(j, j.step, oom)
			finished = s.failStalled(j, t) || finished
			continue
		}
		if j.step >= total-eps {
			j.step = total
			j.finish = end
			s.sample(j, total, end, co)
			s.setHeld(j, Resources{}, end)
			j.placement, j.perNode, j.ps, j.onPlacement = nil, nil, 0, nil
			finished = true
		}
	}
	s.now = t
	if finished {
		// Jobs finish at their own times within (now, t]: keep the
		// allocation changes in time order.
		slices.SortStableFunc(s.allocs[allocs:], func(a, b AllocChange) int { return cmp.Compare(a.Time, b.Time) })
		live := s.live[:0]
		for _, j := range s.live {
			if !j.ended() {
				live = append(live, j)
			} else {
				s.done = append(s.done, j.spec.ID)
			}
		}
		clear(s.live[len(live):])
		s.live = live
		s.recordUsage()
	}
}

// Completions returns the IDs of the jobs finished since cursor, in the
// order they finished, and the next cursor.
func (s *Sim) Completions(cursor int) ([]string, int) {
	cursor = min(cursor, len(s.done))
	return s.done[cursor:], len(s.done)
}

// sample records what j's trainer reports at time at, after step steps;
// a subtask job also reports its computation and communication.
func (s *Sim) sample(j *job, step, at float64, co *colocation) {
	noise := func() float64 { return max(1+s.cfg.Noise*j.rng.NormFloat64(), 0.05) }
	on := s.onPlacement(j)
	workers := on.workers
	smp := structs.Sample{
		Namespace: j.spec.Namespace, JobID: j.spec.ID, Role: structs.RoleWorker,
		Step: int64(j.reported(step)), Epoch: j.truth.Epoch(step), Loss: j.truth.Loss(step) * noise(),
		StepTimeS: s.stepTime(j, co) * noise(),
		NumPS:     j.ps, NumWorkers: workers, CheckpointStep: int64(j.reported(step)),
		GPUType: on.gpuType, Time: int64(at * 1e9),
	}
	if t, ok := j.truth.(*PolluxTruth); ok {
		polluxSample(&smp, t, j.adaptive(), on.pollux, true, step, noise)
	}
	if t, ok := j.truth.(*SubtaskTruth); ok {
		cpu, net := t.Subtasks(workers)
		smp.CPUS, smp.NetS = cpu*noise(), net*noise()
	}
	if t, ok := j.truth.(*CruiseTruth); ok {
		cpu, net := t.Subtasks(j.ps, j.perNode)
		smp.CPUS, smp.NetS = cpu*noise(), net*noise()
	}
	if _, ok := j.truth.(TaskTruth); ok {
		s.measure(j, step, at)
	}
	s.samples = append(s.samples, smp)
}

// failStalled fails job j, stalled by an OOM kill, if time t is
// OOMFailAfter past the kill, and reports whether it did.
func (s *Sim) failStalled(j *job, t float64) bool {
	if end := j.stalled + OOMFailAfter.Seconds(); t >= end {
		s.fail(j, end)
		return true
	}
	return false
}

// fail ends job j, whose tasks were killed for memory and never placed
// again, at time at: it frees what it holds and never finishes.
func (s *Sim) fail(j *job, at float64) {
	j.failed = true
	s.setHeld(j, Resources{}, at)
	j.placement, j.perNode, j.ps, j.onPlacement = nil, nil, 0, nil
}

// Profile measures a job's speed at each (ps, workers) configuration, as
// Optimus profiles a new job for a few seconds per configuration before it
// trains: it reports one sample per configuration now, with workers packed
// as many to a node as the largest node has GPUs, and the job pays
// ProfileTime per configuration before its first start. The simulator does not model the resources the
// short profiling runs borrow.
func (s *Sim) Profile(id string, configs []structs.Shape) error {
	j, ok := s.jobs[id]
	if !ok {
		return fmt.Errorf("profile unknown job %q", id)
	}
	per := 1
	for i := range s.cfg.NodeCount() {
		per = max(per, s.cfg.GPUs(i))
	}
	for _, c := range configs {
		var perNode []int
		for w := c.Workers; w > 0; w -= per {
			perNode = append(perNode, min(w, per))
		}
		noise := max(1+s.cfg.Noise*j.rng.NormFloat64(), 0.05)
		smp := structs.Sample{
			Namespace: j.spec.Namespace, JobID: j.spec.ID, Role: structs.RoleWorker,
			StepTimeS: j.truth.StepTime(c.PS, perNode) * noise, NumPS: c.PS, NumWorkers: c.Workers,
			Time: int64(s.now * 1e9),
		}
		if t, ok := j.truth.(*PolluxTruth); ok {
			polluxSample(&smp, t, j.adaptive(), newPolluxStep(t, perNode, nil), false, j.step, func() float64 { return noise })
		}
		s.samples = append(s.samples, smp)
	}
	if j.start < 0 {
		j.profiling += float64(len(configs)) * s.cfg.ProfileTime.Seconds()
	}
	return nil
}

// Samples returns the samples reported since cursor and the next cursor.
// Samples before cursor count as consumed and are dropped, so a long run
// holds only what its reader has not read; the returned slice is valid
// until the next call.
func (s *Sim) Samples(cursor int) ([]structs.Sample, int) {
	if n := min(max(cursor-s.sampleBase, 0), len(s.samples)); n > 0 {
		s.samples = s.samples[n:]
		s.sampleBase += n
	}
	return s.samples, s.sampleBase + len(s.samples)
}

// Jobs reports the state of every submitted job.
func (s *Sim) Jobs() []JobState {
	out := make([]JobState, 0, len(s.order))
	for _, j := range s.order {
		st := StatePending
		switch {
		case j.finish >= 0:
			st = StateComplete
		case j.failed:
			st = StateFailed
		case j.running():
			st = StateRunning
		case j.start >= 0:
			st = StatePaused
		}
		out = append(out, JobState{Namespace: j.spec.Namespace, JobID: j.spec.ID, Status: st, Step: j.reported(j.step), Placement: j.placement})
	}
	return out
}

// Done reports whether every submitted job has finished.
func (s *Sim) Done() bool { return len(s.live) == 0 }

// setHeld records that j holds r from time at on: now, or within an
// Advance the time j finished.
func (s *Sim) setHeld(j *job, r Resources, at float64) {
	if j.gpus == r.GPUs && j.cpu == r.CPU && j.mem == r.MemoryMB {
		return
	}
	s.held += r.GPUs - j.gpus
	j.gpus, j.cpu, j.mem = r.GPUs, r.CPU, r.MemoryMB
	s.allocs = append(s.allocs, AllocChange{Time: at, JobID: j.spec.ID, GPUs: r.GPUs, CPU: r.CPU, MemoryMB: r.MemoryMB})
}

// recordUsage records the GPUs held now; Advance and Enact call it after
// changes.
func (s *Sim) recordUsage() {
	p := UsePoint{Time: s.now, GPUs: s.held}
	p.CPU, p.Net = s.subtaskUtilisation()
	if n := len(s.usage); n > 0 && s.usage[n-1].Time == s.now {
		s.usage[n-1] = p
		return
	}
	s.usage = append(s.usage, p)
}

// Allocations returns every change of what a job holds, in time order.
func (s *Sim) Allocations() []AllocChange { return s.allocs }

// Usage returns GPUs held over time, one point per change.
func (s *Sim) Usage() []UsePoint { return s.usage }

// TotalGPUs returns the cluster's GPUs.
func (s *Sim) TotalGPUs() int { return s.cfg.TotalGPUs() }

// Results returns every job's history, in submission order.
func (s *Sim) Results() []JobResult {
	out := make([]JobResult, 0, len(s.order))
	for _, j := range s.order {
		minGPUs := 0
		if e := j.spec.Elastic; e != nil {
			worker, ps := TaskResources(j.spec)
			minGPUs = e.Workers.Min * worker.GPUs
			if e.ParameterServers != nil {
				minGPUs += e.ParameterServers.Min * ps.GPUs
			}
		}
		out = append(out, JobResult{Namespace: j.spec.Namespace, JobID: j.spec.ID, MinGPUs: minGPUs, Arrival: j.arrival, Start: j.start, Finish: j.finish, Rescales: j.rescales, RegroupS: j.regroup,
			Failed: j.failed, OOMKills: j.oomKills, Speeds: slices.Clone(j.speeds), Batches: slices.Clone(j.batches)})
	}
	return out
}
