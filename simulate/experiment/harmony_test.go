package experiment

import (
	"testing"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/shoenig/test/must"
)

// TestMeanRunning: jobs holding tasks, averaged over time: a from 0 to 10,
// b from 5 to 20 (a resize at 8 changes nothing), over 20 s: (10 + 15)/20.
func TestMeanRunning(t *testing.T) {
	got, err := meanRunning([]sim.AllocChange{
		{Time: 0, JobID: "a", CPU: 100},
		{Time: 5, JobID: "b", CPU: 100},
		{Time: 8, JobID: "b", CPU: 200},
		{Time: 10, JobID: "a"},
		{Time: 20, JobID: "b"},
	}, 20)
	must.NoError(t, err)
	must.Eq(t, 25.0/20, got)
	_, err = meanRunning(nil, 0)
	must.Error(t, err)
}
