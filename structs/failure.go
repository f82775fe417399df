package structs

import (
	"slices"
	"strings"
)

// Kinds of Failure.
const (
	// FailurePlacement: the cluster's scheduler could not place tasks of
	// the job (Nomad's blocked or failed evaluation, its FailedTGAllocs).
	FailurePlacement = "placement"
	// FailureTask: a task of the job failed where it was placed (Nomad's
	// task events of a failed allocation: "Driver Failure", ...).
	FailureTask = "task"
)

// Failure is a failure the cluster reported for a job's tasks, in the
// cluster's own words, so that a job that does not run says why even where
// Caravan's model of the cluster did not foresee it (a host volume, a
// port, disk). Drivers report the job's latest failures in
// JobReport.Failures while not all its tasks run, and the leader commits
// them with the job's observed state.
type Failure struct {
	// Kind is FailurePlacement or FailureTask.
	Kind string
	// Group is the cluster's task group the failure is about.
	Group string
	// Summary is one line for people: "Nomad could not place 1 allocation
	// of group worker-… (evaluation 1a2b3c4d)", or the failed task's last
	// event.
	Summary string
	// Details are the cluster's lines about it, as Nomad's command line
	// renders an allocation metric: `Constraint "missing drivers": 1
	// nodes excluded by filter`, `Dimension "disk" exhausted on 1 nodes`.
	Details []string `json:",omitempty"`
}

// String renders the failure on one line: the summary, then the details,
// separated by "; ".
func (f *Failure) String() string {
	if len(f.Details) == 0 {
		return f.Summary
	}
	return f.Summary + ": " + strings.Join(f.Details, "; ")
}

// Equal reports whether two failures say the same.
func (f *Failure) Equal(o *Failure) bool {
	if f == nil || o == nil {
		return f == o
	}
	return f.Kind == o.Kind && f.Group == o.Group && f.Summary == o.Summary && slices.Equal(f.Details, o.Details)
}

// Copy returns a deep copy of f; nil stays nil.
func (f *Failure) Copy() *Failure {
	if f == nil {
		return nil
	}
	c := *f
	c.Details = slices.Clone(f.Details)
	return &c
}

// SameFailures reports whether two lists of failures say the same, in the
// same order.
func SameFailures(a, b []*Failure) bool {
	return slices.EqualFunc(a, b, (*Failure).Equal)
}

// CopyFailures returns a deep copy of fs; nil stays nil.
func CopyFailures(fs []*Failure) []*Failure {
	if fs == nil {
		return nil
	}
	out := make([]*Failure, len(fs))
	for i, f := range fs {
		out[i] = f.Copy()
	}
	return out
}
