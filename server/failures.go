package server

import (
	"context"
	"slices"

	"github.com/caravan-sched/caravan/structs"
)

// observedFailures is what a job's observed state records of the
// cluster's failures from report r: the report's, or, when the driver does
// not know yet (nil, as a new leader's driver before its first read of
// the job's evaluations), those committed before, so that a leader change
// keeps them. Nothing is recorded unless supported: servers before 0.2.0
// would drop the field and hold other observed states than the rest (see
// Placement.Finished).
func observedFailures(prev *structs.Observed, r *structs.JobReport, supported bool) []*structs.Failure {
	switch {
	case !supported:
		return nil
	case r.Failures == nil && prev != nil:
		return prev.Failures
	case len(r.Failures) == 0:
		return nil
	}
	return r.Failures
}

// failureEvents records a PlacementFailed event for each failure of o
// that prev (the job's observed state committed before, nil for none) did
// not have: a failure is an event once, and again only after it went away
// and came back. A new leader compares with the committed state, so it
// repeats no event.
func (l *leader) failureEvents(ctx context.Context, prev, o *structs.Observed) error {
	var before []*structs.Failure
	if prev != nil {
		before = prev.Failures
	}
	for _, f := range o.Failures {
		if slices.ContainsFunc(before, f.Equal) {
			continue
		}
		ev := &structs.Event{Type: structs.EventPlacementFailed, Namespace: o.Namespace, JobID: o.JobID, Message: f.String(),
			Details: map[string]string{"Kind": f.Kind, "Group": f.Group}}
		if err := l.s.Event(ctx, ev); err != nil {
			return err
		}
		l.log.Warn("the cluster reported a failure for a job", "job_id", o.JobID, "kind", f.Kind, "group", f.Group, "failure", f.String())
	}
	return nil
}
