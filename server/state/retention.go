package state

import (
	"errors"
	"fmt"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// ErrInvalidRetention is returned by SetRetention for bounds that would
// keep nothing (structs.Retention.Valid).
var ErrInvalidRetention = errors.New("invalid retention bounds")

func retention(txn *memdb.Txn, ws memdb.WatchSet) (*structs.Retention, error) {
	raw, err := watchFirst(txn, ws, TableRetention)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return structs.DefaultRetention(), nil
	}
	return raw.(*structs.Retention), nil
}

// Retention returns the retention bounds in force: the last a leader
// committed, or the defaults (structs.DefaultRetention, ModifyIndex 0).
// The result must not be changed.
func Retention(txn *memdb.Txn, ws memdb.WatchSet) (*structs.Retention, error) {
	return retention(txn, ws)
}

// retention returns the bounds in force in w's transaction, read once.
func (w *writer) retention() (*structs.Retention, error) {
	if w.ret != nil {
		return w.ret, nil
	}
	r, err := retention(w.txn, nil)
	if err != nil {
		return nil, fmt.Errorf("read retention: %w", err)
	}
	w.ret = r
	return r, nil
}

// SetRetention makes r the retention bounds, at index, and trims what the
// store holds to them at once: the oldest events, each job's oldest
// placement history entries, and each job's samples, thinned as
// AppendSamples thins them (the oldest cut when thinning cannot shorten a
// history further). Bounds that grow take effect as histories grow. Bounds
// that keep nothing are ErrInvalidRetention, and change nothing.
func (s *Store) SetRetention(index uint64, r *structs.Retention) error {
	if r == nil {
		return fmt.Errorf("%w: none given", ErrInvalidRetention)
	}
	if !r.Valid() {
		return fmt.Errorf("%w: samples %d (at least %d), placements %d and events %d (at least 1)",
			ErrInvalidRetention, r.MaxJobSamples, structs.MinJobSamples, r.MaxJobPlacements, r.MaxEvents)
	}
	return s.write(index, func(w *writer) error {
		ret := &structs.Retention{MaxJobSamples: r.MaxJobSamples, MaxJobPlacements: r.MaxJobPlacements, MaxEvents: r.MaxEvents, ModifyIndex: index}
		if err := w.insert(TableRetention, ret); err != nil {
			return err
		}
		w.ret = ret
		if err := w.trimEvents(ret.MaxEvents); err != nil {
			return err
		}
		jobs, err := watchAll[*structs.Job](w.txn, nil, TableJobs, "id", forward)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if err := w.trim(TablePlacements, ret.MaxJobPlacements, jobPrefix(j.Namespace, j.ID)...); err != nil {
				return err
			}
		}
		all, err := watchAll[*structs.JobSamples](w.txn, nil, TableSamples, "id", forward)
		if err != nil {
			return err
		}
		for _, js := range all {
			if len(js.Samples) <= ret.MaxJobSamples {
				continue
			}
			row := *js
			for len(row.Samples) > ret.MaxJobSamples {
				t := thin(row.Samples)
				if len(t) == len(row.Samples) {
					t = row.Samples[len(row.Samples)-ret.MaxJobSamples:]
				}
				row.Samples = t
			}
			if err := w.insert(TableSamples, &row); err != nil {
				return err
			}
		}
		return nil
	})
}

// trimEvents deletes the oldest events beyond keep. Sequence numbers are
// dense, so they are those numbered up to the last one less keep.
func (w *writer) trimEvents(keep int) error {
	raw, err := w.txn.Last(TableEvents, "id")
	if err != nil || raw == nil {
		return err
	}
	last := raw.(*structs.Event).Seq
	if last <= uint64(keep) {
		return nil
	}
	cut := last - uint64(keep)
	it, err := w.txn.Get(TableEvents, "id")
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	var old []any
	for raw := it.Next(); raw != nil && raw.(*structs.Event).Seq <= cut; raw = it.Next() {
		old = append(old, raw)
	}
	for _, ev := range old {
		if err := w.delete(TableEvents, ev); err != nil {
			return err
		}
	}
	return nil
}

// Collectable names a job the job garbage collector found ended long
// enough ago, as it found it: ModifyIndex is the job record's, so that
// CollectJobs leaves a job that changed since.
type Collectable struct {
	Namespace, JobID string
	ModifyIndex      uint64
}

// CollectJobs purges, at index, each of jobs that the store still holds
// as the collector found it: ended (structs.Terminal) and unchanged since,
// its record's ModifyIndex the one found. A job registered again, or
// whose record changed in any way, since the collector looked is left,
// as is one already gone. It returns how many it purged. Each purge
// deletes the job and every row kept about it, as StopJob's purge does,
// and records no event: the events of a job that ended long ago are not
// worth those of the living.
//
// The age is not read again here: a job's ModifyTime may differ between
// servers (a record last written before servers stamped it, restored on
// one server from an earlier version's snapshot and replayed with this
// version on another), while its status and ModifyIndex never do, and
// anything that would make the job younger moves its ModifyIndex.
func (s *Store) CollectJobs(index uint64, jobs []Collectable) (int, error) {
	n := 0
	err := s.write(index, func(w *writer) error {
		n = 0
		for _, c := range jobs {
			job, err := jobByID(w.txn, nil, c.Namespace, c.JobID)
			if err != nil {
				return err
			}
			if job == nil || !structs.Terminal(job.Status) || job.ModifyIndex != c.ModifyIndex {
				continue
			}
			if err := w.purge(job); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
