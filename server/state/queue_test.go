package state

import (
	"fmt"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func queue(name string, namespaces ...string) *structs.Queue {
	return &structs.Queue{Name: name, Namespaces: namespaces, Cohort: "research",
		Quota: structs.QueueQuota{GPU: []*structs.GPUQuota{{Type: "A100", Nominal: 8}}, CPU: 4000}}
}

func queueNames(t *testing.T, s *Store) []string {
	t.Helper()
	qs, err := Queues(s.Txn(), nil)
	must.NoError(t, err)
	var names []string
	for _, q := range qs {
		names = append(names, q.Name)
	}
	return names
}

// TestQueues_Upsert: queues are stored canonical, by name, keep their
// CreateIndex, and an unchanged queue is not written again.
func TestQueues_Upsert(t *testing.T) {
	s, err := New()
	must.NoError(t, err)
	in := queue("nlp", "nlp", "nlp-*")
	must.NoError(t, s.UpsertQueues(5, []*structs.Queue{in, queue("cv", "cv")}))
	must.Eq(t, 0, in.Weight, must.Sprint("the caller's queue is not modified"))
	must.Eq(t, []string{"cv", "nlp"}, queueNames(t, s))
	got, err := QueueByName(s.Txn(), nil, "nlp")
	must.NoError(t, err)
	must.Eq(t, structs.DefaultWeight, got.Weight)
	must.Eq(t, 5, got.CreateIndex)
	must.Eq(t, 5, got.ModifyIndex)
	must.Eq(t, 5, s.Index(TableQueues))

	must.NoError(t, s.UpsertQueues(6, []*structs.Queue{queue("nlp", "nlp", "nlp-*")}))
	must.Eq(t, 5, s.Index(TableQueues), must.Sprint("the same queue again changes nothing"))

	changed := queue("nlp", "nlp")
	changed.Quota.GPU[0].Nominal = 16
	must.NoError(t, s.UpsertQueues(7, []*structs.Queue{changed}))
	got, err = QueueByName(s.Txn(), nil, "nlp")
	must.NoError(t, err)
	must.Eq(t, 5, got.CreateIndex)
	must.Eq(t, 7, got.ModifyIndex)
	must.Eq(t, 16, got.Quota.GPU[0].Nominal)
	must.Eq(t, []string{"nlp"}, got.Namespaces)

	// A namespace a queue gave up may go to another queue in the same
	// request, and one it keeps may not.
	must.NoError(t, s.UpsertQueues(8, []*structs.Queue{queue("nlp", "nlp-new"), queue("cv", "cv", "nlp")}))

	must.NoError(t, s.DeleteQueues(9, []string{"cv"}))
	must.Eq(t, []string{"nlp"}, queueNames(t, s))
	must.ErrorIs(t, s.DeleteQueues(10, []string{"nlp", "nope"}), ErrQueueNotFound)
	must.Eq(t, []string{"nlp"}, queueNames(t, s), must.Sprint("a failed delete deletes nothing"))
	must.Eq(t, 9, s.Index(TableQueues))
}

// TestQueues_Refused: a write with one bad queue changes nothing and says
// why, with the field's path.
func TestQueues_Refused(t *testing.T) {
	s, err := New()
	must.NoError(t, err)
	must.NoError(t, s.UpsertQueues(1, []*structs.Queue{queue("nlp", "nlp", "nlp-*")}))

	many := func(n int) []*structs.Queue {
		qs := make([]*structs.Queue, n)
		for i := range qs {
			qs[i] = queue(fmt.Sprint("q", i), fmt.Sprint("ns", i))
		}
		return qs
	}
	cases := []struct {
		name   string
		queues []*structs.Queue
		want   error
		text   string
	}{
		{"nil queue", []*structs.Queue{queue("ok", "ok"), nil}, ErrQueueInvalid, "queue[1]: is required"},
		{"invalid field", []*structs.Queue{queue("ok", "ok"), {Name: "bad", Namespaces: []string{"b"}, Quota: structs.QueueQuota{CPU: -1}}}, ErrQueueInvalid, "queue[1].quota.cpu: -1 must be between 0 and 68719476736"},
		{"no name", []*structs.Queue{{Namespaces: []string{"x"}}}, ErrQueueInvalid, "queue[0].name: is required"},
		{"stored namespace", []*structs.Queue{queue("cv", "nlp-*")}, ErrQueueConflict, `"nlp-*" is queue "nlp"'s already`},
		{"namespace twice in request", []*structs.Queue{queue("a", "x"), queue("b", "x")}, ErrQueueConflict, `"x" is queue "a"'s already`},
		{"name twice", []*structs.Queue{queue("a", "x"), queue("a", "y")}, ErrQueueConflict, `queue "a" is given twice`},
		{"too many in request", many(structs.MaxQueues + 1), ErrTooManyQueues, "in one request"},
		{"too many stored", many(structs.MaxQueues), ErrTooManyQueues, "would be stored"},
		{"too many namespaces", []*structs.Queue{{Name: "wide", Namespaces: make([]string, MaxQueueNamespaces+1)}}, ErrQueueInvalid, "queue[0].namespaces: 257 namespaces"},
		{"too many GPU types", []*structs.Queue{{Name: "wide", Namespaces: []string{"w"}, Quota: structs.QueueQuota{GPU: make([]*structs.GPUQuota, MaxQueueGPUQuotas+1)}}}, ErrQueueInvalid, "queue[0].quota.gpu: 65 GPU types"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := s.UpsertQueues(2, tc.queues)
			must.ErrorIs(t, err, tc.want)
			must.ErrorContains(t, err, tc.text)
			must.Eq(t, []string{"nlp"}, queueNames(t, s))
			must.Eq(t, 1, s.Index(TableQueues))
		})
	}
}
