package structs

import (
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
	// Nodes is sorted by NodeID; a node appears at most once.
	Nodes []*NodeTasks
	// Reason says, for people, why the job got this placement.
	Reason string
	// Metric, on a paused placement whose job's minimum does not fit,
	// says why; nil otherwise. The server computes it after the
	// algorithm's decision (planner.ExplainPaused), so that it reads the
	// same for every algorithm, and Reason is then its String.
	Metric *PlacementMetric `json:",omitempty"`
}

// NodeTasks is the tasks of one job on one node.
type NodeTasks struct {
	NodeID  string
	PS      int
	Workers int
}

// Paused reports whether the placement runs no task of the job.
func (p *Placement) Paused() bool { return p.NumWorkers == 0 && p.NumPS == 0 }

// SameTasks reports whether two placements run the same tasks on the same
// nodes; reasons do not count, and nil runs no task, as a paused placement.
func (p *Placement) SameTasks(o *Placement) bool {
	if p == nil || o == nil {
		return (p == nil || p.Paused()) && (o == nil || o.Paused())
	}
	return p.NumPS == o.NumPS && p.NumWorkers == o.NumWorkers &&
		slices.EqualFunc(p.Nodes, o.Nodes, func(a, b *NodeTasks) bool { return *a == *b })
}

// Validate checks that the per-node counts add up to the totals, that no
// count is negative and that no node appears twice. Whether the placement
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
	seen := make(map[string]bool, len(p.Nodes))
	for i, n := range p.Nodes {
		nv := v.at(fmt.Sprintf("nodes[%d]", i))
		if n.NodeID == "" {
			nv.missing("node_id")
		}
		if seen[n.NodeID] {
			nv.fail("node_id", "node %q appears more than once", n.NodeID)
		}
		seen[n.NodeID] = true
		if n.PS < 0 || n.Workers < 0 {
			nv.fail("", "task counts must not be negative (ps %d, workers %d)", n.PS, n.Workers)
		}
		ps += n.PS
		workers += n.Workers
	}
	if ps != p.NumPS || workers != p.NumWorkers {
		v.fail("nodes", "nodes hold %d ps and %d workers, but the placement says %d and %d", ps, workers, p.NumPS, p.NumWorkers)
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
