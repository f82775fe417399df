package server

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func TestObservedFailures(t *testing.T) {
	f := []*structs.Failure{{Kind: structs.FailurePlacement, Group: "worker-n1", Summary: `Task Group "worker-n1" (failed to place 1 allocation)`}}
	prev := &structs.Observed{Failures: f}
	g := []*structs.Failure{{Kind: structs.FailureTask, Group: "worker-n1", Summary: "task worker of worker-n1 on node n1: Driver Failure: x"}}
	cases := []struct {
		name      string
		prev      *structs.Observed
		report    []*structs.Failure
		supported bool
		want      []*structs.Failure
	}{
		{"the driver does not know yet: the committed stay", prev, nil, true, f},
		{"none any more", prev, []*structs.Failure{}, true, nil},
		{"new ones replace them", prev, g, true, g},
		{"nothing committed before", nil, nil, true, nil},
		{"not every server applies them", prev, g, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &structs.JobReport{Failures: tc.report}
			must.Eq(t, tc.want, observedFailures(tc.prev, r, tc.supported))
		})
	}
}
