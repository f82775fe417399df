package planner

import (
	"fmt"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// pauseAll pauses every job of a request.
type pauseAll struct{}

func (pauseAll) Name() string { return "pause-all" }

func (pauseAll) Plan(req *Request) (*Decision, error) {
	dec := &Decision{}
	for _, j := range req.Jobs {
		dec.Placements = append(dec.Placements, &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID})
	}
	return dec, nil
}

// fatalRecorder is a testing.TB whose Fatalf records the message instead
// of stopping the test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

// TestHarnessPlan_SameIDInTwoNamespaces: Plan, which returns placements by
// job ID, fails the test when two jobs share an ID in two namespaces,
// rather than return one placement for both. Jobs of distinct IDs are
// returned each under its own.
func TestHarnessPlan_SameIDInTwoNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name      string
		secondID  string
		wantFatal string
		wantIDs   []string
	}{
		{"distinct IDs", "b", "", []string{"a", "b"}},
		{"one ID in two namespaces", "a", "harness: jobs x/a and y/a share an ID: Plan returns placements by ID", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fatalRecorder{TB: t}
			h := NewHarness(rec)
			first := MockJob("a", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 2})
			first.Namespace = "x"
			second := MockJob(tc.secondID, structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 2})
			second.Namespace = "y"
			h.AddJob(first, nil)
			h.AddJob(second, nil)
			got := h.Plan(pauseAll{})
			must.Eq(t, tc.wantFatal, rec.fatal)
			var ids []string
			for id, p := range got {
				must.Eq(t, id, p.JobID)
				ids = append(ids, id)
			}
			must.SliceContainsAll(t, tc.wantIDs, ids)
		})
	}
}
