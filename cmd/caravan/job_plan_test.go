package main

import (
	"testing"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestNomadPlan: the plan of a Nomad job file against the job Caravan
// took over from that file differs only in the nomad fields Caravan
// recorded, which nomadPlan leaves out: unchanged. A real change stays.
func TestNomadPlan(t *testing.T) {
	registered := structs.MockJob()
	registered.Nomad = &structs.NomadSource{JobModifyIndex: 42, Groups: map[string]string{structs.RoleWorker: "worker", structs.RolePS: "ps"}}
	file := structs.MockJob()
	placed := &api.Placement{JobID: file.ID, NumPS: 1, NumWorkers: 2, Nodes: []*api.NodeTasks{{NodeID: "n1", PS: 1, Workers: 2}}}

	plan := func(file *structs.Job) *api.PlanResponse {
		d, err := asServer[*api.JobDiff](registered.Diff(file))
		must.NoError(t, err)
		must.True(t, d.Changed(), must.Sprint("the nomad fields differ"))
		return &api.PlanResponse{Diff: d, Changed: true, Version: 3, Status: api.JobStatusRunning, Placement: placed, Current: placed}
	}

	resp := plan(file)
	nomadPlan(resp)
	must.False(t, resp.Changed)
	must.Eq(t, api.DiffTypeNone, resp.Diff.Type)
	must.SliceEmpty(t, resp.Diff.Fields)
	must.StrContains(t, formatPlan(file.ID, "nomad job run f.nomad.hcl", resp), "running it changes nothing")

	file.Priority = 70
	resp = plan(file)
	nomadPlan(resp)
	must.True(t, resp.Changed)
	must.Eq(t, []*api.FieldDiff{{Type: api.DiffTypeEdited, Path: "priority", Old: "50", New: "70"}}, resp.Diff.Fields)
	must.StrContains(t, formatPlan(file.ID, "nomad job run f.nomad.hcl", resp), "To submit the job, run:\n  nomad job run f.nomad.hcl")
}
