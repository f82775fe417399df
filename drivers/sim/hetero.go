package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/caravan-sched/caravan/structs"
)

// Heterogeneous ground truth (issue 30, after the Sia artifact, SOSP'23,
// sia-simulator/applications.py and job.py): a Pollux model measured on
// each GPU type of the catalog (GPUTypes) trains on nodes of a type at
// that type's measured speed.
//
//   - Speed. On nodes of one catalog type a step takes what that type's
//     traces (placements-<suffix>.csv, scalability-<suffix>.csv) give,
//     by the rules of the Pollux truth (Profile.StepSync, Iteration). On
//     nodes of a GPU the catalog does not hold (DefaultGPUModel's), the
//     Pollux traces' (PolluxTruth.Profile). A placement that spans types
//     runs at its slowest type: every replica computes the same per-GPU
//     batch and waits for the others at the gradient synchronisation, so
//     the step takes the largest of the times each type's traces give
//     for the whole placement (all its nodes and replicas), at one split
//     of the batch that fits the GPU of least memory. The Sia artifact
//     never spans types (a job runs in one "cluster" at a time, job.py
//     migrate); neither does Sia (§3.2).
//   - Memory. A type fits per-GPU batches up to its largest measured one
//     (its placements file; deepspeech2 on rtx 57, as applications.py
//     sets it, TypeMaxLocalBatch); a larger per-GPU batch accumulates
//     gradients as the Pollux rules do (Profile.Iteration).
//   - A model without measurements of a type, or whose smallest measured
//     per-GPU batch does not fit it, cannot run there: a job placed so
//     makes no progress and is failed after OOMFailAfter unless placed
//     again (the path of an OOM-killed task; Sim.place).
//   - Length. Statistical progress and epochs are the model's validation
//     curves, the same on every type (the traces' validation files are
//     one set per model).
//   - Calibration. PolluxTruth.Slowdown multiplies every step time: the
//     artifact's SLOWDOWNS (simulator_config.py), applied under -assume
//     sia-artifact.

// TypeMaxLocalBatch holds the per-GPU batch limits the Sia artifact sets
// below a type's largest measured one, by model and trace suffix
// (applications.py: deepspeech2 on rtx, 57).
var TypeMaxLocalBatch = map[string]map[string]float64{
	"deepspeech2": {"rtx": 57},
}

// TypeProfiles are one model's profiles on the GPU types it was measured
// on, keyed by the type's device model name (GPUType.Model.Name, what
// structs.Node.GPUType reports). A type it lacks is one the model cannot
// run on.
type TypeProfiles map[string]*Profile

// LoadTypeProfile reads one model's traces on one GPU type from the Sia
// data (sia/traces/<name>/placements-<suffix>.csv and the rest). The
// error wraps fs.ErrNotExist when the model was not measured on the type.
func LoadTypeProfile(fsys fs.FS, name string, t GPUType) (*Profile, error) {
	if _, ok := PolluxModels[name]; !ok {
		return nil, fmt.Errorf("unknown Pollux model %q", name)
	}
	p, err := loadProfile(fsys, path.Join("sia/traces", name), name, "-"+t.TraceSuffix, TypeMaxLocalBatch[name][t.TraceSuffix])
	if err != nil {
		return nil, fmt.Errorf("model %s on %s: %w", name, t.Short, err)
	}
	p.Type = t.Short
	return p, nil
}

// LoadTypeProfiles loads every Pollux model's profiles on every catalog
// GPU type it has measurements of.
func LoadTypeProfiles(fsys fs.FS) (map[string]TypeProfiles, error) {
	out := map[string]TypeProfiles{}
	for name := range PolluxModels {
		tp := TypeProfiles{}
		for _, t := range GPUTypes {
			p, err := LoadTypeProfile(fsys, name, t)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			tp[t.Model.Name] = p
		}
		out[name] = tp
	}
	return out, nil
}

// SiaProfiles returns LoadTypeProfiles(Data), loaded on the first call and
// shared after it; callers must not modify them.
func SiaProfiles() (map[string]TypeProfiles, error) { return siaProfiles() }

var siaProfiles = sync.OnceValues(func() (map[string]TypeProfiles, error) {
	return LoadTypeProfiles(Data)
})

// slowdown is the factor of every step time.
func (t *PolluxTruth) slowdown() float64 {
	if t.Slowdown > 0 {
		return t.Slowdown
	}
	return 1
}

// profileOn returns the profile of the job on GPUs of model m: its
// type's for a catalog type (nil if it has none), else Profile.
func (t *PolluxTruth) profileOn(m string) *Profile {
	if _, typed := GPUTypeOf(m); typed && t.Types != nil {
		return t.Types[m]
	}
	return t.Profile
}

// IterationOn is how a step runs with the given workers per node when
// node i has GPUs of model models[i] (see the rules above), with the
// model of the GPUs whose time it is (the slowest type's), and false
// when the job cannot run on that placement. A truth without Types runs
// as Iteration says on any GPU.
func (t *PolluxTruth) IterationOn(workersPerNode []int, models []string) (it Iteration, model string, ok bool) {
	var profs []*Profile
	var names []string
	limit := math.Inf(1)
	for i, w := range workersPerNode {
		if w == 0 {
			continue
		}
		m := ""
		if i < len(models) {
			m = models[i]
		}
		p := t.profileOn(m)
		if p == nil {
			return Iteration{}, m, false
		}
		if !slices.Contains(profs, p) {
			profs, names = append(profs, p), append(names, m)
			limit = min(limit, p.MaxLocalBatch)
		}
	}
	if len(profs) == 0 {
		return Iteration{}, "", true
	}
	for _, p := range profs {
		if limit < p.MinLocalBatch {
			return Iteration{}, names[0], false
		}
	}
	for i, p := range profs {
		if x := t.iterationOn(p, workersPerNode, limit); i == 0 || x.Seconds > it.Seconds {
			it, model = x, names[i]
		}
	}
	it.Seconds *= t.slowdown()
	return it, model, true
}

// iterationOn is how a step runs on profile p's GPUs with per-GPU batches
// of at most limit: at the truth's split (Local, Accum) when it makes
// Batch on that many replicas (and, for a truth with Types, fits), else
// by the artifact's rules. Beyond the most replicas p measured, as
// StepTime says.
func (t *PolluxTruth) iterationOn(p *Profile, workersPerNode []int, limit float64) Iteration {
	_, replicas := shape(workersPerNode)
	if replicas > p.MaxReplicas {
		workersPerNode = packed(p.MaxReplicas, slices.Max(workersPerNode))
		return p.iterationLimit(workersPerNode, t.Batch, limit)
	}
	if t.Local > 0 && float64(replicas)*t.Local*float64(t.Accum+1) == t.Batch && (t.Types == nil || t.Local <= limit) {
		return p.IterationAt(workersPerNode, t.Local, t.Accum)
	}
	return p.iterationLimit(workersPerNode, t.Batch, limit)
}

// DefaultTypeProfileSteps is the steps ProfileTypes times at each batch
// in DefaultConfig (Config.TypeProfileSteps): a first step and one more
// to time.
// At the traces' one-GPU step times that costs a job 0.2 to 10 GPU
// seconds a type for most models (ProfileBatches' batches), within Sia
// §3.1's "< 20 GPU seconds"; deepspeech2, whose one-GPU steps at large
// batches take seconds, pays 16 s on t4, 21 s on quad and 33 s on a100.
const DefaultTypeProfileSteps = 2

// MaxTypeProfileBatches is the most per-GPU batches ProfileTypes measures
// on a type (Sia §3.1: about ten).
const MaxTypeProfileBatches = 10

// ProfileTypes measures a job on one GPU of each GPU type of the cluster
// it can run on, before it trains, as Sia bootstraps its throughput
// models (§3.1): for every distinct GPU model of the nodes, in node
// order, one sample per per-GPU batch from the smallest measured to the
// largest that fits the type (ProfileBatches), each with GPUType,
// Profile, StepTimeS (the traces' one-GPU step, times Slowdown), LocalBatchSize =
// BatchSize = the batch, NumWorkers 1, no accumulation, and for an
// adaptive job CPUS, the step less its sync time, as polluxSample splits
// a step. The job pays Config.TypeProfileSteps steps at each batch
// measured, on every type, before its first start; profiling later costs nothing
// more (the measurements are reported all the same). A job that is not
// a Pollux model's has no GPU-type measurements: nothing is reported and
// ProfileTypes returns nil. Types the job cannot run on are skipped.
func (s *Sim) ProfileTypes(id string) error {
	j, ok := s.jobs[id]
	if !ok {
		return fmt.Errorf("profile GPU types of unknown job %q", id)
	}
	t, ok := j.truth.(*PolluxTruth)
	if !ok {
		return nil
	}
	steps := float64(max(s.cfg.TypeProfileSteps, 0))
	var seen []string
	cost := 0.0
	for _, m := range s.models {
		if m == "" || slices.Contains(seen, m) {
			continue
		}
		seen = append(seen, m)
		p := t.profileOn(m)
		if p == nil || p.MaxLocalBatch < p.MinLocalBatch {
			continue
		}
		for _, b := range p.ProfileBatches() {
			step, sync := p.StepSync([]int{1}, b)
			step, sync = step*t.slowdown(), sync*t.slowdown()
			noise := max(1+s.cfg.Noise*j.rng.NormFloat64(), 0.05)
			smp := structs.Sample{
				Namespace: j.spec.Namespace, JobID: j.spec.ID, Role: structs.RoleWorker,
				StepTimeS: step * noise, NumWorkers: 1, GPUType: m, Profile: true,
				BatchSize: int64(b), LocalBatchSize: int64(b),
				Time: int64(s.now * 1e9),
			}
			if j.adaptive() {
				smp.CPUS = max(step-sync, 0) * noise
			}
			s.samples = append(s.samples, smp)
			cost += steps * step
		}
	}
	if j.start < 0 {
		j.profiling += cost
	}
	return nil
}

// ProfileBatches returns the per-GPU batches ProfileTypes measures on
// p's GPU type: those measured on one GPU (placement "1") up to the
// largest that fits (MaxLocalBatch), at most MaxTypeProfileBatches of
// them spread evenly from the smallest to the largest; without one-GPU
// measurements, MaxTypeProfileBatches batches spaced geometrically over
// [MinLocalBatch, MaxLocalBatch].
func (p *Profile) ProfileBatches() []float64 {
	var fits []float64
	for _, pt := range p.placements["1"] {
		if pt.bsz <= p.MaxLocalBatch {
			fits = append(fits, pt.bsz)
		}
	}
	if len(fits) == 0 {
		lo, hi := p.MinLocalBatch, p.MaxLocalBatch
		for i := range MaxTypeProfileBatches {
			b := math.Round(lo * math.Pow(hi/lo, float64(i)/float64(MaxTypeProfileBatches-1)))
			if !slices.Contains(fits, b) {
				fits = append(fits, b)
			}
		}
		return fits
	}
	if len(fits) <= MaxTypeProfileBatches {
		return fits
	}
	out := make([]float64, MaxTypeProfileBatches)
	for i := range out {
		out[i] = fits[int(math.Round(float64(i*(len(fits)-1))/float64(MaxTypeProfileBatches-1)))]
	}
	return out
}

// typeTruth gives a Pollux truth that has no per-type profiles the
// embedded ones of its model (SiaProfiles) when the cluster has nodes of
// a catalog GPU type, so that a job from a jobspec trains at each type's
// speed (the real-time Driver's TruthFor jobs). truth must be the
// caller's own: it is changed in place.
func (s *Sim) typeTruth(truth Truth) error {
	t, ok := truth.(*PolluxTruth)
	if !ok || t.Types != nil || !slices.ContainsFunc(s.models, func(m string) bool { _, ok := GPUTypeOf(m); return ok }) {
		return nil
	}
	types, err := SiaProfiles()
	if err != nil {
		return fmt.Errorf("load GPU-type profiles: %w", err)
	}
	t.Types = types[t.Profile.Name]
	return nil
}

// LoadSiaWorkload reads a workload of the Sia artifact
// (sia/workloads/<trace>/workload-N.csv; Pollux's CSV format) as
// LoadPolluxWorkload does, each job's truth (and adaptive truth) trained
// at each GPU type's speed: Types from types by the job's model. A model
// types lacks runs at the Pollux traces' speed on every GPU. A job's
// request is the workload's num_replicas at its batch_size, rounded down
// to a multiple of them, accumulating gradients where the batch does not
// fit (Sia's TunedJobs, as the artifact's gavel.py runs them: its local
// batch is at most batch_size ÷ replicas), not the Pollux artifact's
// divisor of the batch that fits without accumulating; its truth trains
// at that batch.
func LoadSiaWorkload(fsys fs.FS, name string, profiles map[string]*Profile, types map[string]TypeProfiles) (*Workload, error) {
	w, err := LoadPolluxWorkload(fsys, name, profiles)
	if err != nil {
		return nil, err
	}
	for i := range w.Arrivals {
		a := &w.Arrivals[i]
		a.RequestWorkers = a.Replicas
		a.RequestBatch = a.Job.Training.GlobalBatchSize / a.Replicas * a.Replicas
		if t, ok := a.Truth.(*PolluxTruth); ok && a.RequestBatch != a.Job.Training.GlobalBatchSize {
			a.Truth = NewPolluxTruth(t.Profile, float64(a.RequestBatch))
		}
		for _, tr := range []Truth{a.Truth, a.AdaptiveTruth} {
			if t, ok := tr.(*PolluxTruth); ok {
				t.Types = types[t.Profile.Name]
			}
		}
	}
	return w, nil
}

// SiaWorkloadFile returns the file in the embedded data of a Sia workload
// named as `caravan sim -workload` takes it: "sia/<trace>/<N>" is
// sia/workloads/<trace>/workload-<N>.csv (saturn, philly, newtrace) and
// "sia/scale/<file>" is sia/workloads/scale/<file>.csv (e.g.
// sia/scale/rate_10-workload-2); a path already under sia/workloads/ is
// its own. false for a name that is none of these.
func SiaWorkloadFile(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "sia/")
	if !ok {
		return "", false
	}
	if strings.HasPrefix(rest, "workloads/") {
		return name, true
	}
	trace, file, ok := strings.Cut(rest, "/")
	if !ok || file == "" || strings.Contains(file, "/") {
		return "", false
	}
	file = strings.TrimSuffix(file, ".csv")
	if trace == "scale" {
		return path.Join("sia/workloads/scale", file+".csv"), true
	}
	return path.Join("sia/workloads", trace, "workload-"+strings.TrimPrefix(file, "workload-")+".csv"), true
}

// Calibrate sets the Slowdown of every Pollux truth of the workload (its
// adaptive truths too) to its model's factor in slowdowns; models it
// lacks keep theirs. The truths are the workload's own: call it before
// any run reads them.
func (w *Workload) Calibrate(slowdowns map[string]float64) {
	for i := range w.Arrivals {
		a := &w.Arrivals[i]
		for _, tr := range []Truth{a.Truth, a.AdaptiveTruth} {
			if t, ok := tr.(*PolluxTruth); ok {
				if f, ok := slowdowns[t.Profile.Name]; ok {
					t.Slowdown = f
				}
			}
		}
	}
}
