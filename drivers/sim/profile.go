package sim

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
)

// PolluxModels lists the models of the Pollux traces with the epochs they
// train for (max_epochs in the artifact's applications.py) and whether their
// validation metric rises as they learn.
var PolluxModels = map[string]struct {
	Epochs       int
	HigherBetter bool
	// Scale divides the metric to bring it to [0, 1] for the loss.
	Scale float64
	// MaxLocalBatch, when not 0, is the largest per-GPU batch that fits
	// a GPU, where the artifact sets one below the largest measured.
	MaxLocalBatch float64
}{
	"bert":        {Epochs: 2, HigherBetter: true, Scale: 100},
	"cifar10":     {Epochs: 100, HigherBetter: true, Scale: 1},
	"deepspeech2": {Epochs: 80, HigherBetter: false, Scale: 100},
	"imagenet":    {Epochs: 90, HigherBetter: true, Scale: 1},
	"ncf":         {Epochs: 10, HigherBetter: true, Scale: 1},
	"yolov3":      {Epochs: 50, HigherBetter: false, Scale: 100, MaxLocalBatch: 8},
}

// Profile is one model's measured behaviour from the Pollux traces: its
// step time for a placement and per-GPU batch, and how many steps it needs,
// gridPoint is a placement of a Pollux profile's grid: replicas spread
// over nodes.
type gridPoint struct{ nodes, replicas int }

// epoch by epoch, at a given global batch.
type Profile struct {
	Name   string
	Epochs int
	// Type is the catalog's short name of the GPU type the traces
	// measured (LoadTypeProfile); "" for the Pollux traces.
	Type string
	// MinLocalBatch and MaxLocalBatch bound the measured per-GPU batch; the
	// largest is what fits a GPU's memory (yolov3: 8, below its largest
	// measured, as the artifact sets it).
	MinLocalBatch, MaxLocalBatch float64
	// MaxReplicas is the most GPUs a measurement used.
	MaxReplicas int
	// InitBatch and MaxBatch are the smallest and largest global batches
	// of the validation traces: the batch at which statistical efficiency
	// is 1 (the artifact's init_batch_size), and the largest the model
	// trains at (max_batch_size).
	InitBatch, MaxBatch float64

	placements map[string][]bszPoint    // canonical placement → points by batch
	grid       map[gridPoint][]bszPoint // points by batch
	nodes      []int                    // distinct node counts of grid, sorted
	replicas   map[int][]int            // node count → distinct replica counts
	curves     []curve                  // by batch, ascending
	epochEnd   []float64                // progress at each epoch's end (EpochProgress)
	higher     bool
	scale      float64
}

// bszPoint is a measured step at one per-GPU batch: its whole time and
// the part of it spent synchronising gradients (sync_time).
type bszPoint struct{ bsz, stepTime, syncTime float64 }

// curve is a validation trace at one global batch, a row per epoch:
// iterations, statistical progress and metric at the epoch's end, and the
// gradient's squared norm and variance (grad_sqr, grad_var) measured
// during the epoch.
type curve struct {
	batch      float64
	iterations []float64
	progress   []float64
	metric     []float64
	gradSqr    []float64
	gradVar    []float64
}

// LoadProfile reads the traces of one model from fsys, e.g.
// LoadProfile(sim.Data, "cifar10").
func LoadProfile(fsys fs.FS, name string) (*Profile, error) {
	meta, ok := PolluxModels[name]
	if !ok {
		return nil, fmt.Errorf("unknown Pollux model %q", name)
	}
	return loadProfile(fsys, path.Join("pollux/traces", name), name, "", meta.MaxLocalBatch)
}

// loadProfile reads a model's traces from dir: placements<suffix>.csv,
// scalability<suffix>.csv and the validation curves; maxLocal, when not
// 0, replaces the largest measured per-GPU batch as the most that fits a
// GPU.
func loadProfile(fsys fs.FS, dir, name, suffix string, maxLocal float64) (*Profile, error) {
	meta := PolluxModels[name]
	p := &Profile{
		Name: name, Epochs: meta.Epochs, higher: meta.HigherBetter, scale: meta.Scale,
		placements: map[string][]bszPoint{}, grid: map[gridPoint][]bszPoint{}, replicas: map[int][]int{},
		MinLocalBatch: math.Inf(1),
	}
	type sum struct{ n, t, sync float64 }
	means := map[[3]float64]*sum{}
	err := readCSV(fsys, path.Join(dir, "placements"+suffix+".csv"), func(r map[string]string) error {
		v, err := floats(r["local_bsz"], r["step_time"], r["sync_time"])
		if err != nil {
			return err
		}
		bsz, t, sync := v[0], v[1], v[2]
		key := canonical(digits(r["placement"]))
		p.placements[key] = append(p.placements[key], bszPoint{bsz, t, sync})
		p.MinLocalBatch, p.MaxLocalBatch = min(p.MinLocalBatch, bsz), max(p.MaxLocalBatch, bsz)
		nodes, replicas := shape(digits(r["placement"]))
		k := [3]float64{float64(nodes), float64(replicas), bsz}
		if means[k] == nil {
			means[k] = &sum{}
		}
		means[k].n++
		means[k].t += t
		means[k].sync += sync
		return nil
	})
	if err != nil {
		return nil, err
	}
	for k, s := range means {
		g := gridPoint{nodes: int(k[0]), replicas: int(k[1])}
		p.grid[g] = append(p.grid[g], bszPoint{k[2], s.t / s.n, s.sync / s.n})
	}
	err = readCSV(fsys, path.Join(dir, "scalability"+suffix+".csv"), func(r map[string]string) error {
		v, err := floats(r["num_nodes"], r["num_replicas"], r["local_bsz"], r["step_time"], r["sync_time"])
		if err != nil {
			return err
		}
		g := gridPoint{nodes: int(v[0]), replicas: int(v[1])}
		p.grid[g] = append(p.grid[g], bszPoint{v[2], v[3], v[4]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for k := range p.placements {
		p.placements[k] = sortPoints(p.placements[k])
	}
	for g := range p.grid {
		p.MaxReplicas = max(p.MaxReplicas, g.replicas)
		p.grid[g] = sortPoints(p.grid[g])
		if !slices.Contains(p.nodes, g.nodes) {
			p.nodes = append(p.nodes, g.nodes)
		}
		p.replicas[g.nodes] = append(p.replicas[g.nodes], g.replicas)
	}
	slices.Sort(p.nodes)
	for n := range p.replicas {
		slices.Sort(p.replicas[n])
	}

	files, err := fs.Glob(fsys, path.Join(dir, "validation-*.csv"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(path.Base(f), "validation-"), ".csv"), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: batch size in the file name: %w", f, err)
		}
		c := curve{batch: b}
		err = readCSV(fsys, f, func(r map[string]string) error {
			v, err := floats(r["iteration"], r["metric"], r["progress"], r["grad_sqr"], r["grad_var"])
			if err != nil {
				return err
			}
			c.iterations, c.metric = append(c.iterations, v[0]), append(c.metric, v[1])
			c.progress, c.gradSqr, c.gradVar = append(c.progress, v[2]), append(c.gradSqr, v[3]), append(c.gradVar, v[4])
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(c.iterations) == 0 {
			return nil, fmt.Errorf("%s: no rows", f)
		}
		p.curves = append(p.curves, c)
	}
	if len(p.curves) == 0 || len(p.placements) == 0 {
		return nil, fmt.Errorf("model %s: traces are incomplete in %s", name, dir)
	}
	slices.SortFunc(p.curves, func(a, b curve) int { return cmp.Compare(a.batch, b.batch) })
	for _, c := range p.curves {
		if len(c.progress) < p.Epochs {
			return nil, fmt.Errorf("model %s: validation-%g.csv has %d epochs, fewer than the model's %d", name, c.batch, len(c.progress), p.Epochs)
		}
	}
	p.InitBatch, p.MaxBatch = p.curves[0].batch, p.curves[len(p.curves)-1].batch
	if maxLocal > 0 {
		p.MaxLocalBatch = maxLocal
	}
	p.initProgress()
	return p, nil
}

// StepTime returns the seconds one step takes with the given GPUs per node
// (order does not matter) and per-GPU batch. A placement measured in the
// traces is interpolated over the batch alone; any other is interpolated
// over node count, replica count and batch among the measured and
// scalability points, clamped to their range (beyond the measured replica
// counts a job gets no faster).
func (p *Profile) StepTime(gpusPerNode []int, localBatch float64) float64 {
	step, _ := p.StepSync(gpusPerNode, localBatch)
	return step
}

// StepSync is StepTime with the part of the step spent synchronising
// gradients (the traces' sync_time), interpolated the same way; the rest
// of the step, step − sync, is the forward and backward pass that a
// micro-batch of gradient accumulation repeats.
func (p *Profile) StepSync(gpusPerNode []int, localBatch float64) (step, sync float64) {
	if pts, ok := p.placements[canonical(gpusPerNode)]; ok {
		return interpBatch(pts, localBatch)
	}
	nodes, replicas := shape(gpusPerNode)
	return interpAxis(p.nodes, float64(nodes), func(n int) (float64, float64) {
		return interpAxis(p.replicas[n], float64(replicas), func(r int) (float64, float64) {
			return interpBatch(p.grid[gridPoint{nodes: n, replicas: r}], localBatch)
		})
	})
}

// Steps returns how many steps a job with this global batch needs to reach
// the model's target progress (PolluxTruth).
func (p *Profile) Steps(batch float64) float64 { return NewPolluxTruth(p, batch).TotalSteps() }

// Loss returns the model's validation metric turned into a loss in [0, 1]
// that falls as it learns, at a (fractional) epoch.
func (p *Profile) Loss(batch, epoch float64) float64 {
	m := p.atBatch(batch, func(c curve) float64 { return interpIndex(c.metric, epoch-1, false) })
	if p.higher {
		return math.Max(1-m/p.scale, 0)
	}
	return math.Max(m/p.scale, 0)
}

// atBatch evaluates f on the curves of the two batch sizes around batch and
// interpolates in log space.
func (p *Profile) atBatch(batch float64, f func(curve) float64) float64 {
	cs := p.curves
	if batch <= cs[0].batch {
		return f(cs[0]) * cs[0].batch / batch
	}
	if batch >= cs[len(cs)-1].batch {
		last := cs[len(cs)-1]
		return f(last) * last.batch / batch
	}
	i, found := slices.BinarySearchFunc(cs, batch, func(c curve, b float64) int { return cmp.Compare(c.batch, b) })
	if found {
		return f(cs[i])
	}
	a, b := cs[i-1], cs[i]
	t := (math.Log(batch) - math.Log(a.batch)) / (math.Log(b.batch) - math.Log(a.batch))
	fa, fb := f(a), f(b)
	if fa > 0 && fb > 0 {
		return math.Exp(math.Log(fa) + t*(math.Log(fb)-math.Log(fa)))
	}
	return fa + t*(fb-fa)
}

// interpIndex interpolates xs at a fractional index; before the first
// point, counts (steps) scale down linearly to 0 and values hold.
func interpIndex(xs []float64, idx float64, counts bool) float64 {
	switch {
	case idx < 0:
		if counts {
			return xs[0] * max(idx+1, 0)
		}
		return xs[0]
	case idx >= float64(len(xs)-1):
		return xs[len(xs)-1]
	}
	i := int(idx)
	t := idx - float64(i)
	return xs[i] + t*(xs[i+1]-xs[i])
}

// interpBatch interpolates step and sync time linearly over the per-GPU
// batch, clamped to the measured range.
func interpBatch(pts []bszPoint, b float64) (step, sync float64) {
	if b <= pts[0].bsz {
		return pts[0].stepTime, pts[0].syncTime
	}
	last := pts[len(pts)-1]
	if b >= last.bsz {
		return last.stepTime, last.syncTime
	}
	i, _ := slices.BinarySearchFunc(pts, b, func(p bszPoint, b float64) int { return cmp.Compare(p.bsz, b) })
	a, c := pts[i-1], pts[i]
	t := (b - a.bsz) / (c.bsz - a.bsz)
	return a.stepTime + t*(c.stepTime-a.stepTime), a.syncTime + t*(c.syncTime-a.syncTime)
}

// interpAxis interpolates the pair f gives linearly between the two values
// of axis around x, clamped to the axis's range.
func interpAxis(axis []int, x float64, f func(int) (float64, float64)) (float64, float64) {
	if x <= float64(axis[0]) {
		return f(axis[0])
	}
	if x >= float64(axis[len(axis)-1]) {
		return f(axis[len(axis)-1])
	}
	i, _ := slices.BinarySearch(axis, int(math.Ceil(x)))
	if float64(axis[i]) == x {
		return f(axis[i])
	}
	a, b := axis[i-1], axis[i]
	t := (x - float64(a)) / float64(b-a)
	a0, a1 := f(a)
	b0, b1 := f(b)
	return a0 + t*(b0-a0), a1 + t*(b1-a1)
}

// sortPoints sorts points by batch and averages those of equal batch.
func sortPoints(pts []bszPoint) []bszPoint {
	slices.SortStableFunc(pts, func(a, b bszPoint) int { return cmp.Compare(a.bsz, b.bsz) })
	out := pts[:0]
	for i := 0; i < len(pts); {
		j, s, sync := i, 0.0, 0.0
		for ; j < len(pts) && pts[j].bsz == pts[i].bsz; j++ {
			s += pts[j].stepTime
			sync += pts[j].syncTime
		}
		n := float64(j - i)
		out = append(out, bszPoint{pts[i].bsz, s / n, sync / n})
		i = j
	}
	return out
}

// canonical is Pollux's key for a placement: GPUs per node without empty
// nodes, as the smallest rotation of the digit string.
func canonical(gpus []int) string {
	var ds []byte
	for _, g := range gpus {
		if g > 0 {
			ds = append(ds, byte('0'+min(g, 9)))
		}
	}
	best := string(ds)
	for i := 1; i < len(ds); i++ {
		if r := string(ds[i:]) + string(ds[:i]); r < best {
			best = r
		}
	}
	return best
}

func shape(gpus []int) (nodes, replicas int) {
	for _, g := range gpus {
		if g > 0 {
			nodes++
			replicas += g
		}
	}
	return nodes, replicas
}

func digits(s string) []int {
	out := make([]int, 0, len(s))
	for _, c := range s {
		out = append(out, int(c-'0'))
	}
	return out
}

func floats(ss ...string) ([]float64, error) {
	out := make([]float64, len(ss))
	for i, s := range ss {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// readCSV calls row for each record of a CSV file with a header line.
func readCSV(fsys fs.FS, name string, row func(map[string]string) error) error {
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		m := make(map[string]string, len(header))
		for i, h := range header {
			if i < len(rec) {
				m[h] = rec[i]
			}
		}
		if err := row(m); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
}
