package jobspec

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// nomadFixture is testdata/nomad/valid/resnet50.nomad.hcl as Nomad parsed
// it (`nomad job run -output`), canonicalized as Nomad's API returns it.
func nomadFixture(t *testing.T) *api.Job {
	src, err := os.ReadFile("testdata/nomad/api/resnet50.json")
	must.NoError(t, err)
	var req struct{ Job *api.Job }
	must.NoError(t, json.Unmarshal(src, &req))
	req.Job.Canonicalize()
	req.Job.JobModifyIndex = new(uint64(42))
	return req.Job
}

// TestFromNomad checks that a Nomad job read from Nomad's API declares
// the same job as its file does, with the Nomad job as its template.
func TestFromNomad(t *testing.T) {
	nj := nomadFixture(t)
	must.True(t, HasPolicy(nj))
	job, diags := FromNomad(nj)
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	fromFile, _, diags := NewParser().ParseAny(&Config{Filename: "testdata/nomad/valid/resnet50.nomad.hcl"})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))

	must.Eq(t, uint64(42), job.Nomad.JobModifyIndex)
	must.Eq(t, map[string]string{structs.RoleWorker: "worker", structs.RolePS: "ps"}, job.Nomad.Groups)
	var template api.Job
	must.NoError(t, json.Unmarshal(job.Nomad.Template, &template))
	must.Eq(t, "resnet50", *template.ID)
	must.Nil(t, template.JobModifyIndex, must.Sprint("the template leaves out what Nomad sets"))
	must.Len(t, 2, template.TaskGroups)

	// Both ways in give the same job, but for what only Nomad fills in.
	job.Nomad, fromFile.Nomad = nil, nil
	must.Eq(t, fromFile.Training, job.Training)
	must.Eq(t, fromFile.Elastic, job.Elastic)
	must.Eq(t, fromFile.Weight, job.Weight)
	must.Eq(t, fromFile.Worker.Resources, job.Worker.Resources)
	must.Eq(t, fromFile.ParameterServer.Resources, job.ParameterServer.Resources)
	must.Eq(t, fromFile.Worker.Env, job.Worker.Env)
	must.Eq(t, fromFile.Worker.Driver, job.Worker.Driver)
}

// TestFromNomad_Invalid checks that a Nomad job with a wrong caravan
// block is refused with what is wrong and in which group.
func TestFromNomad_Invalid(t *testing.T) {
	nj := nomadFixture(t)
	caravan := nj.TaskGroups[0].Scaling.Policy[NomadPolicy].([]any)[0].(map[string]any)
	caravan["training"].([]any)[0].(map[string]any)["mode"] = "synch"
	caravan["epochs"] = 3
	nj.TaskGroups[1].Scaling.Policy[NomadPolicy] = []any{map[string]any{"role": "ps", "weight": 2}}
	job, diags := FromNomad(nj)
	must.Nil(t, job)
	msg := render(diags)
	must.StrContains(t, msg, `"synch" is not a training mode`)
	must.StrContains(t, msg, `No argument or block type is named "epochs"`)
	must.StrContains(t, msg, "weight belongs in the worker group's")
	must.StrContains(t, msg, "worker policy:1:")

	nj = nomadFixture(t)
	nj.Type = new(api.JobTypeService)
	_, diags = FromNomad(nj)
	must.StrContains(t, diags.Error(), "set type = \"batch\"")

	nj = nomadFixture(t)
	for _, tg := range nj.TaskGroups {
		tg.Scaling.Policy = map[string]any{"check": []any{}}
	}
	must.False(t, HasPolicy(nj))
}
