package tiresias

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "tiresias"

// DefaultQueueThreshold is the attained service, in GPU time, at which a
// job moves to the second queue: the Pollux artifact's 16 GPU-hours
// (tiresias.py, queue_threshold = 3600 × 16 GPU-seconds).
const DefaultQueueThreshold = 16 * time.Hour

// Tiresias implements planner.Algorithm.
type Tiresias struct {
	// threshold is the queue threshold in GPU-seconds.
	threshold float64
}

var (
	_ planner.Algorithm    = (*Tiresias)(nil)
	_ planner.Describer    = (*Tiresias)(nil)
	_ planner.Configurable = (*Tiresias)(nil)
)

// New returns Tiresias with DefaultQueueThreshold.
func New() planner.Algorithm { return &Tiresias{threshold: DefaultQueueThreshold.Seconds()} }

// Name returns "tiresias".
func (*Tiresias) Name() string { return Name }

// Capabilities: Tiresias runs jobs at their fixed request, queued by
// their attained service (planner.Describer).
func (*Tiresias) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorAttainedService}, FixedSize: true}
}

// SetConfig sets queue_threshold, the GPU time after which a job moves to
// the second queue, as a positive duration of GPU time ("16h": 16
// GPU-hours). Unknown keys and bad values are errors, and then nothing
// changes; a key left out takes its default.
func (t *Tiresias) SetConfig(options map[string]string) error {
	threshold := DefaultQueueThreshold
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "queue_threshold":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("queue_threshold = %q: must be a positive duration of GPU time such as \"16h\"", v))
			}
			threshold = d
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; %s takes queue_threshold", k, Name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	t.threshold = threshold.Seconds()
	return nil
}

// Queue returns the queue of a job with the given attained service: 0
// below the threshold, else 1.
func (t *Tiresias) Queue(attained float64) int {
	if attained < t.threshold {
		return 0
	}
	return 1
}

// Plan admits jobs in queue order while their requests fit the aggregate
// free capacity, keeps the admitted running jobs where they run, places
// the other admitted jobs, then any other job whose request fits the room
// left, and pauses the rest (see the package doc).
func (t *Tiresias) Plan(req *planner.Request) (*planner.Decision, error) {
	jobs := slices.Clone(req.Jobs)
	planner.SortArrival(jobs)
	slices.SortStableFunc(jobs, func(a, b *planner.Job) int {
		return cmp.Compare(t.Queue(a.AttainedService), t.Queue(b.AttainedService))
	})

	c := planner.NewCluster(req.Nodes)
	agg := planner.NewAggregate(c)
	admitted := make([]bool, len(jobs))
	tasks := make([]planner.JobTasks, len(jobs))
	out := make([]*structs.Placement, len(jobs))
	for i, j := range jobs {
		tasks[i] = c.JobTasks(j)
		ps, w := j.FixedRequest()
		if !agg.Fits(tasks[i].PS, ps, tasks[i].Worker, w) {
			out[i] = planner.Paused(j, fmt.Sprintf("tiresias: queue %d, attained %.0f GPU-s: waiting, %s",
				t.Queue(j.AttainedService), j.AttainedService, agg.Shortfall(tasks[i].PS, ps, tasks[i].Worker, w)))
			continue
		}
		agg.Take(tasks[i].PS, ps)
		agg.Take(tasks[i].Worker, w)
		admitted[i] = true
	}
	// Admitted jobs that run keep their placements; the others are placed
	// in the room left, in queue order.
	for i, j := range jobs {
		if !admitted[i] {
			continue
		}
		ps, w := j.FixedRequest()
		if kept := c.KeepCurrent(j.Current, tasks[i], ps, w); kept != nil {
			kept.Reason = fmt.Sprintf("tiresias: queue %d, attained %.0f GPU-s: running at its request", t.Queue(j.AttainedService), j.AttainedService)
			out[i] = kept
		}
	}
	placer := placement.New(c)
	for i, j := range jobs {
		if !admitted[i] || out[i] != nil {
			continue
		}
		ps, w := j.FixedRequest()
		q := t.Queue(j.AttainedService)
		nodes, ok := placer.Place(tasks[i].PS, ps, tasks[i].Worker, w)
		if !ok {
			out[i] = planner.Paused(j, fmt.Sprintf("tiresias: queue %d, attained %.0f GPU-s: admitted, but no set of nodes has room for its request of %s", q, j.AttainedService, structs.Shape{PS: ps, Workers: w}))
			continue
		}
		out[i] = &structs.Placement{
			Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: w, Nodes: nodes,
			Reason: fmt.Sprintf("tiresias: queue %d, attained %.0f GPU-s: started at its request of %s", q, j.AttainedService, structs.Shape{PS: ps, Workers: w}),
		}
	}
	// Backfill: a request the aggregate check turned away may still fit
	// the room left, where tasks take less than their templates (resized
	// running tasks) or an admitted job found no set of nodes.
	for i, j := range jobs {
		if admitted[i] {
			continue
		}
		ps, w := j.FixedRequest()
		if nodes, ok := placer.Place(tasks[i].PS, ps, tasks[i].Worker, w); ok {
			out[i] = &structs.Placement{
				Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: w, Nodes: nodes,
				Reason: fmt.Sprintf("tiresias: queue %d, attained %.0f GPU-s: started at its request of %s in room the others left", t.Queue(j.AttainedService), j.AttainedService, structs.Shape{PS: ps, Workers: w}),
			}
		}
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}
