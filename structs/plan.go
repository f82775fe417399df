package structs

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Plan is one scheduling decision for the whole cluster: a placement for every
// active job. The leader commits it through Raft before a driver enacts it.
type Plan struct {
	// Index is the Raft index the plan was committed at.
	Index     uint64
	Algorithm string
	// CreateTime is stamped by the leader, Unix nanoseconds.
	CreateTime int64
	// Placements holds one entry per job, sorted by (Namespace, JobID).
	Placements []*Placement
}

// Placement is what one job gets: how many parameter servers and workers,
// and how many of each on which node. A job with no workers is paused.
type Placement struct {
	Namespace  string
	JobID      string
	NumPS      int
	NumWorkers int
	// Nodes is sorted by NodeID, then by sizes (SortNodeTasks). A node
	// appears once per distinct pair of sizes: tasks of one role on one
	// node that run at different sizes are separate entries.
	Nodes []*NodeTasks
	// Reason says, for people, why the job got this placement.
	Reason string
	// Metric, on a paused placement whose job's minimum does not fit,
	// says why; nil otherwise. The server computes it after the
	// algorithm's decision (planner.ExplainPaused), so that it reads the
	// same for every algorithm, and Reason is then its String.
	Metric *PlacementMetric `json:",omitempty"`
	// Batch is the batch configuration the job is to run at, set only for
	// a job whose jobspec lets its batch size vary (training.batch_size);
	// nil keeps the job's fixed global batch, split evenly over its
	// workers. It does not count in SameTasks: a new batch alone moves no
	// task. A driver that can change a running job's batch (the
	// simulator) applies it at once; the Nomad driver restarts the job
	// from its checkpoint for a large enough change (its tasks learn
	// their batch when they start) and applies a smaller one when the
	// job next starts. In an observed placement (JobReport) it is the
	// batch the tasks run at, when the driver knows it.
	Batch *Batch `json:",omitempty"`
	// Actions are what the algorithm did to single tasks of the job in
	// this decision, beyond counts (a task resized, a straggler
	// replaced), for the job's events; nil when none. They do not count
	// in SameTasks.
	Actions []*TaskAction `json:",omitempty"`
	// JobVersion is the version of the job the placement was decided
	// for, set by the server: the leader enacts a placement with that
	// version's spec only, since a placement made for an older version
	// may break a newer's bounds. A placement a round keeps because its
	// change is in flight carries the round's version; the driver
	// finishes the change it is making before it takes another.
	JobVersion uint64 `json:",omitempty"`
	// Finished, in an observed placement (JobReport), counts the tasks of
	// the job's placement that finished their work (exited successfully)
	// and so no longer run: the job is ending, and they are not lost. Nil
	// when none did, and in a decision. It does not count in SameTasks.
	Finished *Shape `json:",omitempty"`
}

// Batch is how a job's global batch is split: each of its workers
// computes Local samples a pass and accumulates AccumSteps passes before
// the last one, whose gradients it then exchanges, so that
// Global = workers × Local × (AccumSteps + 1).
type Batch struct {
	Global     int
	Local      int
	AccumSteps int
}

// Equal reports whether two batches are the same; nil equals nil only.
func (b *Batch) Equal(o *Batch) bool {
	if b == nil || o == nil {
		return b == o
	}
	return *b == *o
}

// NodeTasks is the tasks of one job on one node, at one size per role.
type NodeTasks struct {
	NodeID  string
	PS      int
	Workers int
	// PSSize and WorkerSize are the size of this entry's tasks of each
	// role; a zero field takes the role's size from the job
	// (Resources.Sized). A size may be set only for a role the entry runs
	// tasks of, and is within the role's range (planner.CheckDecision).
	PSSize     TaskSize `json:",omitempty"`
	WorkerSize TaskSize `json:",omitempty"`
}

// TaskSize is the CPU (MHz) and memory (MB) of one task; a zero field
// takes the role's size. It is a comparable value, so that SameTasks sees
// a change of size alone as a change.
type TaskSize struct {
	CPU      int `json:",omitempty"`
	MemoryMB int `json:",omitempty"`
}

// IsZero reports whether s sets no size.
func (s TaskSize) IsZero() bool { return s == TaskSize{} }

// Sized reports whether the entry sets a size for either role.
func (n *NodeTasks) Sized() bool { return !n.PSSize.IsZero() || !n.WorkerSize.IsZero() }

// compareSize orders sizes by CPU, then memory.
func compareSize(a, b TaskSize) int {
	return cmp.Or(cmp.Compare(a.CPU, b.CPU), cmp.Compare(a.MemoryMB, b.MemoryMB))
}

// SortNodeTasks orders entries as Placement.Nodes is kept: by NodeID, then
// PS size, then worker size.
func SortNodeTasks(nodes []*NodeTasks) {
	slices.SortFunc(nodes, func(a, b *NodeTasks) int {
		return cmp.Or(cmp.Compare(a.NodeID, b.NodeID), compareSize(a.PSSize, b.PSSize), compareSize(a.WorkerSize, b.WorkerSize))
	})
}

// Task action kinds: what an algorithm did to single tasks of a job.
const (
	// ActionResized: tasks of a role got a new size.
	ActionResized = "resized"
	// ActionOOMResized: a task killed for memory restarts with more.
	ActionOOMResized = "oom-resized"
	// ActionHotPSReplaced: a parameter server over its CPU is replaced by
	// a larger one.
	ActionHotPSReplaced = "hot-ps-replaced"
	// ActionStragglerReplaced: a slow task is moved to another node.
	ActionStragglerReplaced = "straggler-replaced"
)

// TaskAction is one thing an algorithm did to a task of a job, beyond
// counts; the server records it as an event when it commits the decision.
type TaskAction struct {
	// Kind is one of the Action constants.
	Kind string
	// Role is RoleWorker or RolePS; Rank the task's rank within it, -1
	// when the action concerns the role as a whole.
	Role   string
	Rank   int
	NodeID string `json:",omitempty"`
	// Reason says why, for people.
	Reason string
	// Details are the action's facts for programs, added to its event's
	// Details (see Event), keys spelt as field names are ("From", "To").
	Details map[string]string `json:",omitempty"`
}

// Paused reports whether the placement runs no task of the job.
func (p *Placement) Paused() bool { return p.NumWorkers == 0 && p.NumPS == 0 }

// SameTasks reports whether two placements run the same tasks on the same
// nodes; reasons do not count, and nil runs no task, as a paused placement.
func (p *Placement) SameTasks(o *Placement) bool {
	if p == nil || o == nil {
		return (p == nil || p.Paused()) && (o == nil || o.Paused())
	}
	// NodeTasks is comparable, so sizes count.
	return p.NumPS == o.NumPS && p.NumWorkers == o.NumWorkers &&
		slices.EqualFunc(p.Nodes, o.Nodes, func(a, b *NodeTasks) bool { return *a == *b })
}

// SameRun reports whether two placements run the same tasks (SameTasks) at
// the same batch; nil runs no task, at no batch.
func (p *Placement) SameRun(o *Placement) bool {
	batch := func(p *Placement) *Batch {
		if p == nil {
			return nil
		}
		return p.Batch
	}
	return p.SameTasks(o) && batch(p).Equal(batch(o))
}

// Validate checks that the per-node counts add up to the totals, that no
// count or size is negative, that sizes are set only for a role an entry
// runs, and that no node appears twice with the same sizes. Whether the placement
// fits the cluster and the job's bounds is the planner's to check.
func (p *Placement) Validate() error {
	v := newValidator()
	if p.JobID == "" {
		v.missing("job_id")
	}
	if p.NumPS < 0 || p.NumWorkers < 0 {
		v.fail("", "task counts must not be negative (ps %d, workers %d)", p.NumPS, p.NumWorkers)
	}
	ps, workers := 0, 0
	type entryKey struct {
		node       string
		ps, worker TaskSize
	}
	seen := make(map[entryKey]bool, len(p.Nodes))
	for i, n := range p.Nodes {
		nv := v.at(fmt.Sprintf("nodes[%d]", i))
		if n.NodeID == "" {
			nv.missing("node_id")
		}
		key := entryKey{n.NodeID, n.PSSize, n.WorkerSize}
		if seen[key] {
			if n.Sized() {
				nv.fail("node_id", "node %q appears more than once with the same sizes", n.NodeID)
			} else {
				nv.fail("node_id", "node %q appears more than once", n.NodeID)
			}
		}
		seen[key] = true
		if n.PS < 0 || n.Workers < 0 {
			nv.fail("", "task counts must not be negative (ps %d, workers %d)", n.PS, n.Workers)
		}
		for _, s := range []struct {
			name  string
			size  TaskSize
			count int
		}{{"ps_size", n.PSSize, n.PS}, {"worker_size", n.WorkerSize, n.Workers}} {
			switch {
			case s.size.CPU < 0 || s.size.MemoryMB < 0:
				nv.fail(s.name, "sizes must not be negative (cpu %d, memory %d)", s.size.CPU, s.size.MemoryMB)
			case !s.size.IsZero() && s.count == 0:
				nv.fail(s.name, "is set for a role with no task on the node")
			}
		}
		ps += n.PS
		workers += n.Workers
	}
	if ps != p.NumPS || workers != p.NumWorkers {
		v.fail("nodes", "nodes hold %s, but the placement says %d and %d", Shape{PS: ps, Workers: workers}, p.NumPS, p.NumWorkers)
	}
	if b := p.Batch; b != nil {
		switch {
		case b.Local < 1 || b.AccumSteps < 0:
			v.fail("batch", "local batch %d must be at least 1 and accumulation steps %d not negative", b.Local, b.AccumSteps)
		case p.NumWorkers == 0:
			v.fail("batch", "is set for a placement with no workers")
		case b.Global != p.NumWorkers*b.Local*(b.AccumSteps+1):
			v.fail("batch", "global batch %d is not workers × local × (accum_steps + 1) = %d × %d × %d", b.Global, p.NumWorkers, b.Local, b.AccumSteps+1)
		}
	}
	if err := v.err(); err != nil {
		return fmt.Errorf("placement of job %q: %w", p.JobID, err)
	}
	return nil
}

// Validate checks every placement and that no job is placed twice.
func (p *Plan) Validate() error {
	var errs []error
	seen := make(map[JobKey]bool, len(p.Placements))
	for _, pl := range p.Placements {
		key := pl.Key()
		if seen[key] {
			errs = append(errs, fmt.Errorf("job %q in namespace %q is placed more than once", pl.JobID, pl.Namespace))
		}
		seen[key] = true
		if err := pl.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
