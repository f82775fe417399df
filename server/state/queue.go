package state

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// ErrQueueNotFound is returned when a deleted queue does not exist.
var ErrQueueNotFound = errors.New("queue not found")

// ErrQueueInvalid is wrapped by the error of a queue that is not valid
// (structs.Queue.Validate, or beyond the bounds below): the whole write
// is refused.
var ErrQueueInvalid = errors.New("invalid queue")

// ErrQueueConflict is wrapped by the error of a queue that gives a
// namespace pattern another queue gives (structs.QueueConflict), or of a
// request that names a queue twice.
var ErrQueueConflict = errors.New("queue conflicts with another")

// ErrTooManyQueues is returned when a write would leave more than
// structs.MaxQueues queues.
var ErrTooManyQueues = errors.New("too many queues")

// Bounds on one queue, checked before Validate and QueueConflict, whose
// cost grows with the square of these: a hostile queue must not make
// applying its log entry slow on every server.
const (
	// MaxQueueNamespaces bounds the namespace patterns of a queue.
	MaxQueueNamespaces = 256
	// MaxQueueGPUQuotas bounds the GPU types of a queue's quota.
	MaxQueueGPUQuotas = 64
)

// CanonicalQueues checks what can be checked of queues without the
// store, and returns their canonical copies (the arguments are not
// modified): at most structs.MaxQueues of them (ErrTooManyQueues), each
// within the bounds above and valid once canonicalized (an error wrapping
// ErrQueueInvalid, joining each queue's *structs.FieldError with its path
// prefixed "queue[i].").
func CanonicalQueues(queues []*structs.Queue) ([]*structs.Queue, error) {
	if len(queues) > structs.MaxQueues {
		return nil, fmt.Errorf("%w: %d queues in one request, more than %d", ErrTooManyQueues, len(queues), structs.MaxQueues)
	}
	out := make([]*structs.Queue, len(queues))
	var errs []error
	invalid := func(i int, path, format string, args ...any) {
		errs = append(errs, &structs.FieldError{Path: queuePath(i, path), Err: fmt.Errorf(format, args...)})
	}
	for i, q := range queues {
		switch {
		case q == nil:
			errs = append(errs, &structs.FieldError{Path: queuePath(i, ""), Err: structs.ErrMissing})
			continue
		case len(q.Namespaces) > MaxQueueNamespaces:
			invalid(i, "namespaces", "%d namespaces, more than %d", len(q.Namespaces), MaxQueueNamespaces)
			continue
		case len(q.Quota.GPU) > MaxQueueGPUQuotas:
			invalid(i, "quota.gpu", "%d GPU types, more than %d", len(q.Quota.GPU), MaxQueueGPUQuotas)
			continue
		}
		c := q.Copy()
		c.Canonicalize()
		for _, fe := range structs.FieldErrors(c.Validate()) {
			errs = append(errs, &structs.FieldError{Path: queuePath(i, fe.Path), Err: fe.Err})
		}
		out[i] = c
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrQueueInvalid, errors.Join(errs...))
	}
	return out, nil
}

// CheckQueues checks queues as UpsertQueues will apply them over the
// queues txn holds, and returns their canonical copies: CanonicalQueues'
// checks, then no two may share a name or a namespace pattern, none may
// give a pattern that a stored queue of another name gives
// (ErrQueueConflict), and the queues stored afterwards may number at most
// structs.MaxQueues (ErrTooManyQueues). The HTTP API calls it before
// committing, and the FSM again when applying, so that an entry a server
// would refuse changes no server's state.
func CheckQueues(txn *memdb.Txn, queues []*structs.Queue) ([]*structs.Queue, error) {
	out, err := CanonicalQueues(queues)
	if err != nil {
		return nil, err
	}
	stored, err := Queues(txn, nil)
	if err != nil {
		return nil, err
	}
	// owner maps each namespace pattern to the queue that gives it, so
	// that the check is linear in the patterns (structs.QueueConflict,
	// called on each pair of queues, would be quadratic in them).
	owner := map[string]*structs.Queue{}
	after := 0
	for _, st := range stored {
		if slices.ContainsFunc(out, func(q *structs.Queue) bool { return q.Name == st.Name }) {
			continue
		}
		after++
		for _, p := range st.Namespaces {
			owner[p] = st
		}
	}
	for i, q := range out {
		if j := slices.IndexFunc(out[:i], func(o *structs.Queue) bool { return o.Name == q.Name }); j >= 0 {
			return nil, fmt.Errorf("%w: queue %q is given twice (queue[%d] and queue[%d])", ErrQueueConflict, q.Name, j, i)
		}
		for _, p := range q.Namespaces {
			if o, ok := owner[p]; ok {
				return nil, fmt.Errorf("%w: queue %q: %w", ErrQueueConflict, q.Name, structs.QueueConflict([]*structs.Queue{o}, q))
			}
		}
		for _, p := range q.Namespaces {
			owner[p] = q
		}
		after++
	}
	if after > structs.MaxQueues {
		return nil, fmt.Errorf("%w: %d queues would be stored, more than %d", ErrTooManyQueues, after, structs.MaxQueues)
	}
	return out, nil
}

func queuePath(i int, path string) string {
	if path == "" {
		return fmt.Sprintf("queue[%d]", i)
	}
	return fmt.Sprintf("queue[%d].%s", i, path)
}

// UpsertQueues stores queues at index, all or none: it refuses the whole
// write, changing nothing, with CheckQueues' error. A queue keeps its
// CreateIndex; one equal to the stored queue of its name is left as it
// is (its ModifyIndex does not move), so that applying the same file
// again changes nothing, and the table's index moves only when a queue
// changed.
func (s *Store) UpsertQueues(index uint64, queues []*structs.Queue) error {
	return s.write(index, func(w *writer) error {
		checked, err := CheckQueues(w.txn, queues)
		if err != nil {
			return err
		}
		for _, q := range checked {
			prev, err := QueueByName(w.txn, nil, q.Name)
			if err != nil {
				return err
			}
			q.CreateIndex, q.ModifyIndex = index, index
			if prev != nil {
				if sameQueue(prev, q) {
					continue
				}
				q.CreateIndex = prev.CreateIndex
			}
			if err := w.insert(TableQueues, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// sameQueue reports whether a and b define the same queue, whatever their
// indexes.
func sameQueue(a, b *structs.Queue) bool {
	x, y := a.Copy(), b.Copy()
	x.CreateIndex, x.ModifyIndex, y.CreateIndex, y.ModifyIndex = 0, 0, 0, 0
	return reflect.DeepEqual(x, y)
}

// DeleteQueues deletes queues by name; a missing one fails the whole
// request with ErrQueueNotFound. The jobs of a deleted queue's namespaces
// fall to the queue the remaining queues give them (structs.QueueFor).
func (s *Store) DeleteQueues(index uint64, names []string) error {
	return s.write(index, func(w *writer) error {
		for _, n := range names {
			raw, err := w.txn.First(TableQueues, "id", n)
			if err != nil {
				return fmt.Errorf("read queue %q: %w", n, err)
			}
			if raw == nil {
				return fmt.Errorf("queue %q: %w", n, ErrQueueNotFound)
			}
			if err := w.delete(TableQueues, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// QueueByName returns a queue, nil when there is none. The queue is the
// store's: callers must not modify it.
func QueueByName(txn *memdb.Txn, ws memdb.WatchSet, name string) (*structs.Queue, error) {
	raw, err := watchFirst(txn, ws, TableQueues, name)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Queue), nil
}

// Queues returns every queue, by name. The queues are the store's:
// callers must not modify them.
func Queues(txn *memdb.Txn, ws memdb.WatchSet) ([]*structs.Queue, error) {
	return watchAll[*structs.Queue](txn, ws, TableQueues, "id", forward)
}
