package nomad

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestFinished: only allocations that completed while Nomad wanted them to
// run finished their work; one Nomad stopped, or one that failed, did not.
func TestFinished(t *testing.T) {
	info := &api.Job{TaskGroups: []*api.TaskGroup{{Name: new("ps-node-a")}, {Name: new("worker-node-a")}}}
	alloc := func(group, client, desired string) *api.AllocationListStub {
		return &api.AllocationListStub{TaskGroup: group, ClientStatus: client, DesiredStatus: desired}
	}
	cases := []struct {
		name   string
		allocs []*api.AllocationListStub
		want   *structs.Shape
	}{
		{"all run", []*api.AllocationListStub{
			alloc("ps-node-a", api.AllocClientStatusRunning, api.AllocDesiredStatusRun),
			alloc("worker-node-a", api.AllocClientStatusRunning, api.AllocDesiredStatusRun),
		}, nil},
		{"a worker finished", []*api.AllocationListStub{
			alloc("ps-node-a", api.AllocClientStatusRunning, api.AllocDesiredStatusRun),
			alloc("worker-node-a", api.AllocClientStatusComplete, api.AllocDesiredStatusRun),
			alloc("worker-node-a", api.AllocClientStatusRunning, api.AllocDesiredStatusRun),
		}, &structs.Shape{Workers: 1}},
		{"stopped or failed did not finish", []*api.AllocationListStub{
			alloc("ps-node-a", api.AllocClientStatusComplete, api.AllocDesiredStatusStop),
			alloc("worker-node-a", api.AllocClientStatusFailed, api.AllocDesiredStatusRun),
		}, nil},
		{"both roles finished", []*api.AllocationListStub{
			alloc("ps-node-a", api.AllocClientStatusComplete, api.AllocDesiredStatusRun),
			alloc("worker-node-a", api.AllocClientStatusComplete, api.AllocDesiredStatusRun),
			alloc("worker-node-a", api.AllocClientStatusComplete, api.AllocDesiredStatusRun),
		}, &structs.Shape{PS: 1, Workers: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, finished(info, tc.allocs))
		})
	}
}
