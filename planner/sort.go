package planner

import (
	"cmp"
	"slices"

	"github.com/caravan-sched/caravan/structs"
)

// SortPlacements orders placements by (namespace, job ID), the order
// decisions use.
func SortPlacements(ps []*structs.Placement) {
	slices.SortFunc(ps, func(a, b *structs.Placement) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.JobID, b.JobID))
	})
}

// SortJobs orders jobs by (namespace, job ID), so that algorithms that
// iterate over jobs are deterministic whatever the request's order.
func SortJobs(jobs []*Job) {
	slices.SortFunc(jobs, func(a, b *Job) int {
		return cmp.Or(cmp.Compare(a.Job.Namespace, b.Job.Namespace), cmp.Compare(a.Job.ID, b.Job.ID))
	})
}

// SortArrival orders jobs by arrival: submit time, then (namespace, job
// ID), the order of first-come-first-served policies.
func SortArrival(jobs []*Job) {
	SortJobs(jobs)
	slices.SortStableFunc(jobs, func(a, b *Job) int { return cmp.Compare(a.Job.SubmitTime, b.Job.SubmitTime) })
}
