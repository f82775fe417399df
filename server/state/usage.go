package state

import (
	"errors"
	"fmt"

	"github.com/caravan-sched/caravan/structs"
)

// UpsertUsage records what the tasks of jobs use, stamped with now. Every
// usage is validated first: one that is invalid fails the whole write,
// which then changes nothing. Usage of jobs the store does not hold as
// active is dropped. The usage's ByShape is not taken from the caller: it
// is the running mean, per shape, of the committed usage at the shape
// the job was observed running at (ŵ: mean CPU per worker; ŝ_total:
// the CPU of all parameter servers), so that every server, and a new
// leader, has the same means.
func (s *Store) UpsertUsage(index uint64, now int64, usage []*structs.JobUsage) error {
	var errs []error
	for _, u := range usage {
		if u == nil {
			errs = append(errs, errors.New("usage: missing"))
			continue
		}
		if err := u.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("usage of job %q: %w", u.JobID, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return s.write(index, func(w *writer) error {
		for _, u := range usage {
			job, err := activeJob(w.txn, u.Namespace, u.JobID)
			if err != nil {
				return err
			}
			if job == nil {
				continue
			}
			row := u.Copy()
			row.Time, row.ModifyIndex, row.ByShape = now, index, nil
			prev, err := UsageOf(w.txn, nil, u.Namespace, u.JobID)
			if err != nil {
				return err
			}
			if prev != nil {
				row.ByShape = prev.Copy().ByShape
			}
			o, err := observedOf(w.txn, nil, u.Namespace, u.JobID)
			if err != nil {
				return err
			}
			if o != nil && o.Placement != nil && !o.Change.InFlight() {
				row.ByShape = addShapeUsage(row.ByShape, o.Placement.Shape(), row.Tasks)
			}
			if err := w.insert(TableUsage, row); err != nil {
				return err
			}
		}
		return nil
	})
}

// addShapeUsage folds one usage report into the running means at shape;
// a report without a measured worker leaves them alone. A shape not seen
// before is appended, the oldest dropped beyond MaxUsageShapes.
func addShapeUsage(by []structs.ShapeUsage, shape structs.Shape, tasks []*structs.TaskUsage) []structs.ShapeUsage {
	var workerCPU, psCPU float64
	workers := 0
	for _, t := range tasks {
		switch t.Role {
		case structs.RoleWorker:
			workerCPU += t.CPUMHz
			workers++
		case structs.RolePS:
			psCPU += t.CPUMHz
		}
	}
	if workers == 0 {
		return by
	}
	workerCPU /= float64(workers)
	for i := range by {
		if su := &by[i]; su.Shape == shape {
			n := float64(su.Measurements)
			su.WorkerCPUMHz = (su.WorkerCPUMHz*n + workerCPU) / (n + 1)
			su.PSCPUMHz = (su.PSCPUMHz*n + psCPU) / (n + 1)
			su.Measurements++
			return by
		}
	}
	by = append(by, structs.ShapeUsage{Shape: shape, WorkerCPUMHz: workerCPU, PSCPUMHz: psCPU, Measurements: 1})
	if len(by) > structs.MaxUsageShapes {
		by = by[len(by)-structs.MaxUsageShapes:]
	}
	return by
}
