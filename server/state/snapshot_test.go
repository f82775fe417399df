package state

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestRestore_PlanWithEmptyPlacement: a whole-cluster plan row (the
// snapshots of earlier versions) with an empty placement is an error that
// says so, not a panic: a snapshot restore takes bytes an operator sends
// (PUT /v1/operator/snapshot). Found by FuzzRestore.
func TestRestore_PlanWithEmptyPlacement(t *testing.T) {
	r, err := NewRestore()
	must.NoError(t, err)
	defer r.Abort()
	row := structs.Plan{Index: 7, Placements: []*structs.Placement{{JobID: "a"}, nil}}
	err = r.Load(recordPlan, func(v any) error { *v.(*structs.Plan) = row; return nil })
	must.ErrorContains(t, err, "restore plan row 7: placement 1 is empty")
}
