package server

import (
	"context"
	"fmt"

	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// enact hands a plan to the driver with the specs of its jobs, and
// commits what the driver reports runs of them. Each job goes with the
// spec of the version its placement was made for, never a newer one at
// that placement (which might break the newer's bounds). A plan that
// placed a job at another version than the one the scheduler holds (a
// new leader's plan in force, made before the job's newest version), or
// than the state's for a job the scheduler does not hold, is not enacted
// at all: enact asks for the round that plans the version the scheduler
// holds, and reports false.
func (l *leader) enact(ctx context.Context, plan *structs.Plan) (bool, error) {
	txn := l.s.State().Txn()
	jobs := make([]*structs.Job, 0, len(plan.Placements))
	for _, p := range plan.Placements {
		j, err := state.JobByID(txn, nil, p.Namespace, p.JobID)
		if err != nil {
			return false, err
		}
		if j == nil {
			return false, fmt.Errorf("plan names job %q, which the state does not hold", p.JobID)
		}
		r := l.runOf(p.Key())
		if r != nil && r.version != p.JobVersion || r == nil && j.Version != p.JobVersion {
			l.log.Info("left a plan to the next round: it placed another version of a job", "plan_index", plan.Index,
				"job_id", j.ID, "namespace", j.Namespace, "placed_version", p.JobVersion, "version", j.Version)
			l.unenacted, l.urgent = nil, true
			return false, nil
		}
		if j.Version != p.JobVersion {
			// A version registered since the step synced the jobs, or
			// one the scheduler refused: the placement's own runs until
			// a round plans the newest.
			if j, err = specAt(txn, p.Namespace, p.JobID, p.JobVersion); err != nil {
				return false, err
			}
			if j == nil {
				l.log.Info("left a plan to the next round: the version it placed is gone", "plan_index", plan.Index,
					"job_id", p.JobID, "namespace", p.Namespace, "placed_version", p.JobVersion)
				l.unenacted, l.urgent = nil, true
				return false, nil
			}
		}
		jobs = append(jobs, j)
	}
	dctx, cancel := context.WithTimeout(ctx, driverTimeout)
	defer cancel()
	reports, err := l.s.cfg.Driver.Enact(dctx, plan, jobs)
	if err != nil {
		l.unenacted = plan
		if oerr := l.observe(ctx, reports); oerr != nil {
			l.log.Warn("failed to commit what runs", "error", oerr)
		}
		return false, &driverError{err}
	}
	l.unenacted = nil
	return true, l.observe(ctx, reports)
}

// specAt returns version v of a job, nil when the state does not hold
// it.
func specAt(txn *memdb.Txn, namespace, id string, v uint64) (*structs.Job, error) {
	versions, err := state.JobVersions(txn, nil, namespace, id)
	if err != nil {
		return nil, err
	}
	for _, j := range versions {
		if j.Version == v {
			return j, nil
		}
	}
	return nil, nil
}
