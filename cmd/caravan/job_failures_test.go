package main

import (
	"testing"

	"github.com/caravan-sched/caravan/api"
	"github.com/shoenig/test/must"
)

func TestFormatFailures(t *testing.T) {
	must.Eq(t, "", formatFailures(nil))
	got := formatFailures([]*api.Failure{
		{Kind: api.FailurePlacement, Group: "worker-n1", Summary: `Task Group "worker-n1" (failed to place 1 allocation)`,
			Details: []string{`Constraint "missing compatible host volumes": 1 nodes excluded by filter`}},
		{Kind: api.FailureTask, Group: "ps-n2", Summary: "task ps of ps-n2 on node n2: Driver Failure: no such file"},
	})
	must.Eq(t, "\n\nCluster Failures\n"+
		`Task Group "worker-n1" (failed to place 1 allocation)`+"\n"+
		`  * Constraint "missing compatible host volumes": 1 nodes excluded by filter`+"\n"+
		"task ps of ps-n2 on node n2: Driver Failure: no such file", got)
}
