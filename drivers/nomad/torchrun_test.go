package nomad

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// torchrunJob is examples/pytorch-ddp's job in file (its Caravan jobspec
// or its Nomad job file), canonicalized.
func torchrunJob(t *testing.T, file string) *structs.Job {
	t.Helper()
	src, err := os.ReadFile("../../examples/pytorch-ddp/" + file)
	must.NoError(t, err)
	job, _, diags := jobspec.NewParser().ParseAny(&jobspec.Config{Filename: file, Src: src})
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	job.Canonicalize()
	if job.Nomad != nil {
		// What `nomad job run` would submit: the template of the worker
		// group, as FromNomad keeps it.
		w := job.Worker
		tmpl, err := json.Marshal(&api.Job{ID: new("pytorch-ddp"), Type: new(api.JobTypeBatch), TaskGroups: []*api.TaskGroup{{
			Name: new("worker"),
			Tasks: []*api.Task{{Name: "train", Driver: w.Driver, Config: w.Config, Env: w.Env,
				Resources: &api.Resources{CPU: new(w.Resources.CPU), MemoryMB: new(w.Resources.MemoryMB)}}},
		}}})
		must.NoError(t, err)
		job.Nomad.Template = tmpl
	}
	return job
}

// torchrunPlacement is 2 workers on node-a and 1 on node-b.
func torchrunPlacement() *structs.Placement {
	return &structs.Placement{
		Namespace: "default", JobID: "pytorch-ddp", NumWorkers: 3,
		Nodes: []*structs.NodeTasks{{NodeID: "node-a", Workers: 2}, {NodeID: "node-b", Workers: 1}},
	}
}

// rdzvGroup is what a test reads back of a group of a torchrun job.
type rdzvGroup struct {
	name, node string
	count      int
	rankBase   string
	reserved   []api.Port
}

func rdzvGroups(nj *api.Job) []rdzvGroup {
	var out []rdzvGroup
	for _, tg := range nj.TaskGroups {
		g := rdzvGroup{name: *tg.Name, node: tg.Meta[metaGroupNode], count: *tg.Count, rankBase: tg.Meta[metaGroupRankBase]}
		for _, n := range tg.Networks {
			g.reserved = append(g.reserved, n.ReservedPorts...)
		}
		out = append(out, g)
	}
	return out
}

// TestTranslate_Torchrun checks a torchrun job's groups and environment in
// both formats: rank 0 alone in a group that reserves the rendezvous
// port on its node, and every worker told the endpoint (that node's
// address and the port) and the generation's rendezvous ID.
func TestTranslate_Torchrun(t *testing.T) {
	for _, file := range []string{"pytorch-ddp.hcl", "pytorch-ddp.nomad.hcl"} {
		t.Run(file, func(t *testing.T) {
			job := torchrunJob(t, file)
			sub := Submission{CheckpointDir: "/ckpt", Generation: 3, NodeAddrs: map[string]string{"node-a": "10.0.0.7", "node-b": "10.0.0.8"}}
			nj, err := Translate(job, torchrunPlacement(), sub)
			must.NoError(t, err)
			port := rdzvPort(job, 3)
			must.Between(t, rdzvPortBase, port, rdzvPortBase+rdzvPortRange-1)
			must.Eq(t, []rdzvGroup{
				{"worker-node-a-rdzv", "node-a", 1, "0", []api.Port{{Label: "rdzv", Value: port}}},
				{"worker-node-a", "node-a", 1, "1", nil},
				{"worker-node-b", "node-b", 1, "2", nil},
			}, rdzvGroups(nj))
			for _, tg := range nj.TaskGroups {
				env := tg.Tasks[0].Env
				must.Eq(t, "torchrun", env["CARAVAN_LAUNCHER"])
				must.Eq(t, "10.0.0.7:"+strconv.Itoa(port), env["CARAVAN_RDZV_ENDPOINT"])
				must.Eq(t, "default.pytorch-ddp.3", env["CARAVAN_RDZV_ID"])
				must.Eq(t, "3", env["CARAVAN_NUM_WORKERS"])
				must.Eq(t, "worker", env["CARAVAN_ROLE"])
				must.Eq(t, "1m0s", env["CARAVAN_CHECKPOINT_TIMEOUT"])
				must.Eq(t, "/opt/caravan/collector/python", env["PYTHONPATH"])
				must.Eq(t, "/usr/bin/python3", tg.Tasks[0].Config["command"])
			}
			tmpl := *nj.TaskGroups[1].Tasks[0].Templates[len(nj.TaskGroups[1].Tasks[0].Templates)-1].EmbeddedTmpl
			must.StrContains(t, tmpl, "add 1 }}", must.Sprint("the rest of rank 0's node starts at rank 1"))

			// The next generation meets elsewhere.
			sub.Generation = 4
			next, err := Translate(job, torchrunPlacement(), sub)
			must.NoError(t, err)
			must.Eq(t, "default.pytorch-ddp.4", next.TaskGroups[0].Tasks[0].Env["CARAVAN_RDZV_ID"])
			must.NotEq(t, port, next.TaskGroups[0].Networks[0].ReservedPorts[0].Value)
		})
	}
}

// TestTranslate_TorchrunOneWorker: rank 0's entry of one worker is its
// group alone; a torchrun job's groups read back as the placement.
func TestTranslate_TorchrunOneWorker(t *testing.T) {
	job := torchrunJob(t, "pytorch-ddp.hcl")
	p := &structs.Placement{Namespace: "default", JobID: "pytorch-ddp", NumWorkers: 1, Nodes: []*structs.NodeTasks{{NodeID: "node-b", Workers: 1}}}
	nj, err := Translate(job, p, Submission{Generation: 1, NodeAddrs: map[string]string{"node-b": "10.0.0.8"}})
	must.NoError(t, err)
	must.Eq(t, []rdzvGroup{{"worker-node-b-rdzv", "node-b", 1, "0", []api.Port{{Label: "rdzv", Value: rdzvPort(job, 1)}}}}, rdzvGroups(nj))
	must.Eq(t, "1", nj.TaskGroups[0].Tasks[0].Env["CARAVAN_NUM_WORKERS"])
}

// TestTranslate_TorchrunNoAddress: without rank 0's node address there is
// no endpoint to give, and Translate says so rather than submit tasks that
// would wait for a rendezvous that never forms.
func TestTranslate_TorchrunNoAddress(t *testing.T) {
	job := torchrunJob(t, "pytorch-ddp.hcl")
	_, err := Translate(job, torchrunPlacement(), Submission{Generation: 1, NodeAddrs: map[string]string{"node-b": "10.0.0.8"}})
	must.ErrorContains(t, err, "node node-a of its rank 0 has no unique.network.ip-address")
}

// TestTranslate_NotTorchrun: other jobs get no rendezvous.
func TestTranslate_NotTorchrun(t *testing.T) {
	nj, err := Translate(resnet(t), placement(), Submission{Generation: 1})
	must.NoError(t, err)
	for _, tg := range nj.TaskGroups {
		must.SliceEmpty(t, tg.Networks)
		must.MapNotContainsKey(t, tg.Tasks[0].Env, "CARAVAN_RDZV_ENDPOINT")
	}
}

// TestObserved_Torchrun: rank 0's group and the rest of its node read back
// as one entry, so that the running job matches its placement (and its
// fingerprint) and Caravan does not enact it again.
func TestObserved_Torchrun(t *testing.T) {
	job := torchrunJob(t, "pytorch-ddp.hcl")
	want := torchrunPlacement()
	nj, err := Translate(job, want, Submission{Generation: 1, NodeAddrs: map[string]string{"node-a": "10.0.0.7"}})
	must.NoError(t, err)
	got := observed(structs.JobKey{Namespace: "default", ID: "pytorch-ddp"}, nj, runningAllocs(nj))
	must.Eq(t, want.Nodes, got.Nodes)
	must.Eq(t, 3, got.NumWorkers)
	must.Eq(t, Fingerprint(job, want), Fingerprint(job, got))
}

// runningAllocs is one running allocation for each task a Nomad job's
// groups count.
func runningAllocs(nj *api.Job) []*api.AllocationListStub {
	var allocs []*api.AllocationListStub
	for _, tg := range nj.TaskGroups {
		for range *tg.Count {
			allocs = append(allocs, &api.AllocationListStub{TaskGroup: *tg.Name, ClientStatus: api.AllocClientStatusRunning})
		}
	}
	return allocs
}
