package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"sync"
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
