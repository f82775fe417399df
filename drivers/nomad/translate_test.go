package nomad

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

func resnet(t *testing.T) *structs.Job {
	src, err := os.ReadFile("../../examples/resnet50-ps.hcl")
	must.NoError(t, err)
	job, diags := jobspec.Parse(&jobspec.Config{Filename: "resnet50-ps.hcl", Src: src})
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	job.Canonicalize()
	job.Version = 3
	return job
}

// placement is 1 PS and 2 workers on node-a, 3 workers on node-b.
func placement() *structs.Placement {
	return &structs.Placement{
		Namespace: "default", JobID: "resnet50", NumPS: 1, NumWorkers: 5,
		Nodes: []*structs.NodeTasks{{NodeID: "node-a", PS: 1, Workers: 2}, {NodeID: "node-b", Workers: 3}},
	}
}

func TestTranslate(t *testing.T) {
	job := resnet(t)
	nj, err := Translate(job, placement(), Submission{CheckpointDir: "/ckpt", ReportAddrs: []string{"http://10.0.0.1:4680", "http://10.0.0.2:4680"}, Generation: 2, PlanIndex: 42})
	must.NoError(t, err)

	must.Eq(t, "caravan-resnet50", *nj.ID)
	must.Eq(t, "default", *nj.Namespace)
	must.Eq(t, api.JobTypeBatch, *nj.Type)
	must.Eq(t, []string{"dc1"}, nj.Datacenters)
	must.Eq(t, 60, *nj.Priority)
	must.Eq(t, "vision", nj.Meta["team"], must.Sprint("the job's meta is kept"))
	must.Eq(t, "resnet50", nj.Meta[metaJobID])
	must.Eq(t, "2", nj.Meta[metaGeneration])
	must.Eq(t, "42", nj.Meta[metaPlanIndex])
	must.Eq(t, Fingerprint(job, placement()), nj.Meta[metaPlacement])

	// One group per role and node, pinned, with the role's count.
	type group struct {
		name, node string
		count      int
		rankBase   string
	}
	var got []group
	for _, tg := range nj.TaskGroups {
		must.SliceLen(t, 1, tg.Constraints)
		must.Eq(t, "${node.unique.id}", tg.Constraints[0].LTarget)
		must.Eq(t, "fail", *tg.RestartPolicy.Mode)
		must.Eq(t, 0, *tg.ReschedulePolicy.Attempts, must.Sprint("Nomad must not move tasks Caravan placed"))
		must.SliceLen(t, 1, tg.Tasks)
		tmpl := *tg.Tasks[0].Templates[0].EmbeddedTmpl
		got = append(got, group{*tg.Name, tg.Constraints[0].RTarget, *tg.Count, tmpl})
	}
	must.Eq(t, []group{
		{"ps-node-a", "node-a", 1, `CARAVAN_RANK={{ env "NOMAD_ALLOC_INDEX" | parseInt | add 0 }}` + "\n"},
		{"worker-node-a", "node-a", 2, `CARAVAN_RANK={{ env "NOMAD_ALLOC_INDEX" | parseInt | add 0 }}` + "\n"},
		{"worker-node-b", "node-b", 3, `CARAVAN_RANK={{ env "NOMAD_ALLOC_INDEX" | parseInt | add 2 }}` + "\n"},
	}, got)

	ps, worker := nj.TaskGroups[0].Tasks[0], nj.TaskGroups[2].Tasks[0]
	must.Eq(t, "docker", worker.Driver)
	must.Eq(t, "ghcr.io/acme/resnet:1.4", worker.Config["image"])
	must.Eq(t, 4000, *worker.Resources.CPU)
	must.Eq(t, 16384, *worker.Resources.MemoryMB)
	must.SliceLen(t, 1, worker.Resources.Devices)
	dev := worker.Resources.Devices[0]
	must.Eq(t, "nvidia/gpu", dev.Name)
	must.Eq(t, 1, *dev.Count)
	must.Eq(t, []*api.Constraint{{LTarget: "${device.attr.memory}", RTarget: "16 GiB", Operand: ">="}}, dev.Constraints)
	must.SliceEmpty(t, ps.Resources.Devices, must.Sprint("the PS template asks for no GPU"))
	must.Eq(t, 2000, *ps.Resources.CPU)

	must.MapContainsValues(t, worker.Env, []string{"WARN"}, must.Sprint("the role's env is kept"))
	for k, v := range map[string]string{
		"CARAVAN_JOB_ID": "resnet50", "CARAVAN_ROLE": "worker", "CARAVAN_NUM_WORKERS": "5",
		"CARAVAN_NUM_PS": "1", "CARAVAN_LOCAL_BATCH_SIZE": "102", "CARAVAN_GLOBAL_BATCH_SIZE": "512",
		"CARAVAN_RESUME": "1", "CARAVAN_CHECKPOINT_DIR": "/ckpt/default/resnet50",
		"CARAVAN_COLLECTOR_ADDR":    "http://10.0.0.1:4680,http://10.0.0.2:4680",
		"CARAVAN_CHECKPOINT_SIGNAL": "SIGUSR1", "CARAVAN_GENERATION": "2", "CARAVAN_MODE": "sync",
		"CARAVAN_STEPS_PER_EPOCH": "2500", "CARAVAN_MAX_EPOCHS": "90",
	} {
		must.Eq(t, v, worker.Env[k], must.Sprintf("worker env %s", k))
	}
	must.Eq(t, "ps", ps.Env["CARAVAN_ROLE"])
	must.Eq(t, "/ckpt/default/resnet50", ps.Env["CARAVAN_CHECKPOINT_DIR"])
}

func TestTranslate_FirstGenerationDoesNotResume(t *testing.T) {
	nj, err := Translate(resnet(t), placement(), Submission{Generation: 1})
	must.NoError(t, err)
	must.Eq(t, "0", nj.TaskGroups[0].Tasks[0].Env["CARAVAN_RESUME"])
}

func TestTranslate_NamespaceFromConfig(t *testing.T) {
	nj, err := Translate(resnet(t), placement(), Submission{Namespace: "ml", Generation: 1})
	must.NoError(t, err)
	must.Eq(t, "ml", *nj.Namespace)
	must.Eq(t, "default", nj.Meta[metaNamespace], must.Sprint("the Caravan namespace is kept in meta"))
}

// TestTranslate_SharedNamespaceIDs: in a Nomad namespace shared by every
// Caravan namespace (nomad.namespace), Caravan jobs of the same ID in
// several namespaces, and jobs whose namespace and ID would run together,
// get Nomad jobs of their own; the default namespace's keep the IDs they
// had, and so does every job in its own Nomad namespace. Before, "a" in
// "x" and "a" in "y" were both caravan-a and overwrote each other.
func TestTranslate_SharedNamespaceIDs(t *testing.T) {
	for _, tc := range []struct {
		name, nomadNamespace string
		// jobs are namespace and ID pairs; want their Nomad job IDs.
		jobs [][2]string
		want []string
	}{
		{"same ID in two namespaces", "ml",
			[][2]string{{"default", "a"}, {"x", "a"}, {"y", "a"}},
			[]string{"caravan-a", "caravan-x~a", "caravan-y~a"}},
		{"namespace run into the ID", "ml",
			[][2]string{{"default", "x.a"}, {"default", "x-a"}, {"default", "x_a"}, {"x", "a"}, {"x-y", "a"}, {"x", "y-a"}},
			[]string{"caravan-x.a", "caravan-x-a", "caravan-x_a", "caravan-x~a", "caravan-x-y~a", "caravan-x~y-a"}},
		{"namespace the same as Nomad's", "x",
			[][2]string{{"default", "a"}, {"x", "a"}},
			[]string{"caravan-a", "caravan-x~a"}},
		{"each in its own Nomad namespace", "",
			[][2]string{{"default", "a"}, {"x", "a"}},
			[]string{"caravan-a", "caravan-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, nsID := range tc.jobs {
				job := resnet(t)
				job.Namespace, job.ID = nsID[0], nsID[1]
				must.NoError(t, job.Validate())
				nj, err := Translate(job, placement(), Submission{Namespace: tc.nomadNamespace, Generation: 1})
				must.NoError(t, err)
				must.Eq(t, *nj.ID, *nj.Name)
				must.Eq(t, nsID[0], nj.Meta[metaNamespace])
				must.Eq(t, nsID[1], nj.Meta[metaJobID])
				got = append(got, *nj.ID)
			}
			must.Eq(t, tc.want, got)
		})
	}
}

func TestTranslate_PSFromWorkerTemplate(t *testing.T) {
	job := resnet(t)
	job.ParameterServer = nil
	nj, err := Translate(job, placement(), Submission{Generation: 1})
	must.NoError(t, err)
	ps := nj.TaskGroups[0].Tasks[0]
	must.Eq(t, "ps", ps.Name)
	must.Eq(t, "ps", ps.Env["CARAVAN_ROLE"])
	must.Eq(t, 4000, *ps.Resources.CPU, must.Sprint("parameter servers run the worker template"))
}

func TestFingerprint(t *testing.T) {
	job := resnet(t)
	fp := Fingerprint(job, placement())
	must.Eq(t, fp, Fingerprint(job, placement()), must.Sprint("stable"))

	moved := placement()
	moved.Nodes[1].NodeID = "node-c"
	must.NotEq(t, fp, Fingerprint(job, moved), must.Sprint("a move changes it"))

	grown := placement()
	grown.Nodes[1].Workers, grown.NumWorkers = 4, 6
	must.NotEq(t, fp, Fingerprint(job, grown), must.Sprint("a count changes it"))

	job.Version++
	must.NotEq(t, fp, Fingerprint(job, placement()), must.Sprint("a new job version changes it"))

	reasoned := placement()
	reasoned.Reason = "another reason"
	must.Eq(t, fp, Fingerprint(resnet(t), reasoned), must.Sprint("the reason does not"))
}

func TestTranslate_CollectorSidecar(t *testing.T) {
	nj, err := Translate(resnet(t), placement(), Submission{
		Generation: 1, ReportAddrs: []string{"http://10.0.0.1:4680"},
		Collector: &Sidecar{Command: "/usr/local/bin/caravan", ConsulAddr: "127.0.0.1:8500"},
	})
	must.NoError(t, err)
	for _, tg := range nj.TaskGroups {
		must.Eq(t, "collector", tg.Networks[0].DynamicPorts[0].Label)
		must.SliceLen(t, 2, tg.Tasks)
		main, sc := tg.Tasks[0], tg.Tasks[1]
		must.Eq(t, "http://${NOMAD_ADDR_collector},http://10.0.0.1:4680", main.Env["CARAVAN_COLLECTOR_ADDR"],
			must.Sprint("the group's collector first, the servers after"))
		must.Eq(t, "collector", sc.Name)
		must.Eq(t, "prestart", sc.Lifecycle.Hook)
		must.True(t, sc.Lifecycle.Sidecar)
		must.Eq(t, "/usr/local/bin/caravan", sc.Config["command"])
		must.SliceContainsSubset(t, sc.Config["args"].([]string), []string{"collector", "-job", "resnet50", "-role", main.Name, "-consul-addr", "127.0.0.1:8500"})
	}
}

// declaredResnet is the job testdata/nomad/valid/resnet50.nomad.hcl declares,
// read from Nomad's API (jobspec's fixture).
func declaredResnet(t *testing.T) *structs.Job {
	src, err := os.ReadFile("../../jobspec/testdata/nomad/api/resnet50.json")
	must.NoError(t, err)
	var req struct{ Job *api.Job }
	must.NoError(t, json.Unmarshal(src, &req))
	req.Job.Canonicalize()
	req.Job.JobModifyIndex = new(uint64(42))
	job, diags := jobspec.FromNomad(req.Job)
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	return job
}

// TestTranslate_Declared checks that a job declared in Nomad runs in the
// user's Nomad job: per-node copies of its role groups, every task of
// them with the contract's environment, Caravan's counts and nothing
// that would let Nomad resize or move them.
func TestTranslate_Declared(t *testing.T) {
	job := declaredResnet(t)
	p := placement()
	p.Reason = "marginal gain"
	nj, err := Translate(job, p, Submission{CheckpointDir: "/ckpt", Generation: 3, Collector: &Sidecar{Command: "/bin/caravan"}})
	must.NoError(t, err)
	must.Eq(t, "resnet50", *nj.ID, must.Sprint("the user's Nomad job, not caravan-<id>"))
	must.Eq(t, 60, *nj.Priority)
	must.Eq(t, "vision", nj.Meta["team"])
	must.Eq(t, "3", nj.Meta[metaGeneration])
	must.Eq(t, "1 ps and 5 workers on 2 nodes", nj.Meta[metaShape])
	must.Eq(t, "marginal gain", nj.Meta[metaReason])
	must.StrContains(t, nj.UI.Description, "1 ps and 5 workers on 2 nodes")

	groups := map[string]*api.TaskGroup{}
	for _, tg := range nj.TaskGroups {
		groups[*tg.Name] = tg
	}
	must.MapLen(t, 3, groups)
	w := groups["worker-node-b"]
	must.NotNil(t, w)
	must.Eq(t, 3, *w.Count)
	must.Nil(t, w.Scaling)
	must.Eq(t, 0, *w.ReschedulePolicy.Attempts)
	must.Eq(t, &api.Constraint{LTarget: "${node.unique.id}", RTarget: "node-b", Operand: "="}, w.Constraints[len(w.Constraints)-1])
	must.SliceLen(t, 3, w.Tasks, must.Sprint("train, log-shipper and the collector"))
	for _, task := range w.Tasks[:2] {
		must.Eq(t, "worker", task.Env["CARAVAN_ROLE"])
		must.Eq(t, "1", task.Env["CARAVAN_RESUME"])
		must.Eq(t, "/ckpt/default/resnet50", task.Env["CARAVAN_CHECKPOINT_DIR"])
		must.StrContains(t, *task.Templates[len(task.Templates)-1].EmbeddedTmpl, "add 2")
	}
	must.Eq(t, "WARN", w.Tasks[0].Env["NCCL_DEBUG"], must.Sprint("the user's environment stays"))
	must.Eq(t, "collector", w.Tasks[2].Name)
	must.Eq(t, "ps", groups["ps-node-a"].Tasks[0].Name)
	must.Eq(t, "ps", groups["ps-node-a"].Tasks[0].Env["CARAVAN_ROLE"])

	paused, err := Translate(job, &structs.Placement{Namespace: "default", JobID: "resnet50"}, Submission{Generation: 4})
	must.NoError(t, err)
	must.SliceLen(t, 2, paused.TaskGroups)
	for _, tg := range paused.TaskGroups {
		must.Eq(t, 0, *tg.Count, must.Sprintf("group %s paused", *tg.Name))
		must.Nil(t, tg.Scaling)
	}
}

func TestCheckpointDir_StaysUnderRoot(t *testing.T) {
	cases := []struct{ ns, id, want string }{
		{"default", "resnet", "/ckpt/default/resnet"},
		{"..", "x", "/ckpt/%%2E%2E/x"},
		{"a/b", "x", "/ckpt/%a%2Fb/x"},
		{"", "x", "/ckpt/%/x"},
		{"default", "../../etc", "/ckpt/default/%%2E%2E%2F%2E%2E%2Fetc"},
	}
	for _, tc := range cases {
		got := checkpointDir("/ckpt", tc.ns, tc.id)
		must.Eq(t, tc.want, got)
		must.Eq(t, "/ckpt", filepath.Dir(filepath.Dir(got)))
	}
}

// TestTranslate_OptionalEnv: the report token reaches every task as
// CARAVAN_TOKEN, the node's subtask coordinator as
// CARAVAN_COORDINATOR_ADDR; an empty option means no variable (no token;
// trainers run uncoordinated).
func TestTranslate_OptionalEnv(t *testing.T) {
	for _, tc := range []struct {
		env, val string
		sub      Submission
	}{
		{"CARAVAN_TOKEN", "secret-report", Submission{ReportToken: "secret-report"}},
		{"CARAVAN_COORDINATOR_ADDR", "127.0.0.1:9190", Submission{CoordinatorAddr: "127.0.0.1:9190"}},
	} {
		t.Run(tc.env, func(t *testing.T) {
			tc.sub.Generation = 1
			nj, err := Translate(resnet(t), placement(), tc.sub)
			must.NoError(t, err)
			for _, tg := range nj.TaskGroups {
				must.Eq(t, tc.val, tg.Tasks[0].Env[tc.env])
			}
			nj, err = Translate(resnet(t), placement(), Submission{Generation: 1})
			must.NoError(t, err)
			_, ok := nj.TaskGroups[0].Tasks[0].Env[tc.env]
			must.False(t, ok)
		})
	}
}

// sizedPlacement is placement() with node-a's workers split: one at the
// template's size, one larger, and node-b's PS-less workers smaller in
// memory.
func sizedPlacement() *structs.Placement {
	return &structs.Placement{
		Namespace: "default", JobID: "resnet50", NumPS: 1, NumWorkers: 5,
		Nodes: []*structs.NodeTasks{
			{NodeID: "node-a", PS: 1, Workers: 1},
			{NodeID: "node-a", Workers: 1, WorkerSize: structs.TaskSize{CPU: 6000, MemoryMB: 20000}},
			{NodeID: "node-b", Workers: 3, WorkerSize: structs.TaskSize{MemoryMB: 8192}},
		},
	}
}

// TestTranslate_Sizes checks that each entry of a sized placement becomes
// its own group with the entry's sizes, that Status reads the same
// placement back from the groups, and that a change of size alone changes
// the fingerprint.
func TestTranslate_Sizes(t *testing.T) {
	job := resnet(t)
	p := sizedPlacement()
	nj, err := Translate(job, p, Submission{Generation: 2})
	must.NoError(t, err)

	type group struct {
		name       string
		cpu, mem   int
		count      int
		entryMeta  string
		rankSuffix string
	}
	var got []group
	for _, tg := range nj.TaskGroups {
		res := tg.Tasks[0].Resources
		got = append(got, group{*tg.Name, *res.CPU, *res.MemoryMB, *tg.Count, tg.Meta[metaGroupPSSize] + " " + tg.Meta[metaGroupWorkerSize], (*tg.Tasks[0].Templates[0].EmbeddedTmpl)[53:]})
		must.Eq(t, tg.Constraints[0].RTarget, tg.Meta[metaGroupNode])
	}
	must.Eq(t, []group{
		{"ps-node-a", 2000, 8192, 1, " ", "add 0 }}\n"},
		{"worker-node-a", 4000, 16384, 1, " ", "add 0 }}\n"},
		{"worker-node-a-1", 6000, 20000, 1, "0/0 6000/20000", "add 1 }}\n"},
		{"worker-node-b-1", 4000, 8192, 3, "0/0 0/8192", "add 2 }}\n"},
	}, got)

	// Status reads the placement back from the groups' meta.
	var allocs []*api.AllocationListStub
	for _, tg := range nj.TaskGroups {
		for range *tg.Count {
			allocs = append(allocs, &api.AllocationListStub{TaskGroup: *tg.Name, ClientStatus: api.AllocClientStatusRunning})
		}
	}
	allocs = append(allocs, &api.AllocationListStub{TaskGroup: "worker-node-a-1", ClientStatus: api.AllocClientStatusComplete})
	back := observed(structs.JobKey{Namespace: "default", ID: "resnet50"}, nj, allocs)
	must.True(t, p.SameTasks(back), must.Sprintf("read back %+v", back.Nodes))

	// Groups submitted before groups had meta read by their name.
	old, err := Translate(job, placement(), Submission{Generation: 2})
	must.NoError(t, err)
	allocs = allocs[:0]
	for _, tg := range old.TaskGroups {
		tg.Meta = nil
		for range *tg.Count {
			allocs = append(allocs, &api.AllocationListStub{TaskGroup: *tg.Name, ClientStatus: api.AllocClientStatusRunning})
		}
	}
	must.True(t, placement().SameTasks(observed(structs.JobKey{Namespace: "default", ID: "resnet50"}, old, allocs)))

	// Fingerprints: unsized placements keep theirs; a size alone changes it.
	must.Eq(t, Fingerprint(job, placement()), Fingerprint(job, placement()))
	resized := sizedPlacement()
	resized.Nodes[2].WorkerSize.MemoryMB = 16384
	must.NotEq(t, Fingerprint(job, p), Fingerprint(job, resized))
}

// TestTranslate_DeclaredSizes checks that a sized entry of a job declared
// in Nomad resizes the group's main task and leaves its sidecar alone.
func TestTranslate_DeclaredSizes(t *testing.T) {
	job := declaredResnet(t)
	res := job.Worker.Resources
	nj, err := Translate(job, sizedPlacement(), Submission{Generation: 3})
	must.NoError(t, err)
	groups := map[string]*api.TaskGroup{}
	for _, tg := range nj.TaskGroups {
		groups[*tg.Name] = tg
	}
	plain, big := groups["worker-node-a"], groups["worker-node-a-1"]
	must.NotNil(t, big)
	must.Eq(t, *plain.Tasks[0].Resources.CPU+6000-res.CPU, *big.Tasks[0].Resources.CPU)
	must.Eq(t, *plain.Tasks[0].Resources.MemoryMB+20000-res.MemoryMB, *big.Tasks[0].Resources.MemoryMB)
	must.Eq(t, plain.Tasks[1].Resources, big.Tasks[1].Resources, must.Sprint("the sidecar keeps its size"))
	must.Eq(t, "worker", big.Meta[metaGroupRole])
	must.Eq(t, "node-a", big.Meta[metaGroupNode])
	// The whole group adds up to the entry's size.
	cpu := 0
	for _, task := range big.Tasks[:2] {
		cpu += *task.Resources.CPU
	}
	must.Eq(t, 6000, cpu)
}

// TestTranslate_Batch: a placement's batch (an adaptive job's) is the
// tasks' batch and is recorded in the job's meta, which Status reads back
// into what runs; without one the job's fixed batch is split over the
// workers, with no accumulation, as before batches could vary.
func TestTranslate_Batch(t *testing.T) {
	job := resnet(t)
	worker := func(nj *api.Job) map[string]string { return nj.TaskGroups[1].Tasks[0].Env }

	fixed, err := Translate(job, placement(), Submission{Generation: 1})
	must.NoError(t, err)
	for k, v := range map[string]string{
		"CARAVAN_GLOBAL_BATCH_SIZE": "512", "CARAVAN_LOCAL_BATCH_SIZE": "102", "CARAVAN_ACCUM_STEPS": "0",
		"CARAVAN_REFERENCE_BATCH_SIZE": "512",
	} {
		must.Eq(t, v, worker(fixed)[k], must.Sprintf("fixed batch: %s", k))
	}
	must.MapNotContainsKey(t, fixed.Meta, metaBatch)

	p := placement()
	p.Batch = &structs.Batch{Global: 1920, Local: 192, AccumSteps: 1}
	adaptive, err := Translate(job, p, Submission{Generation: 2})
	must.NoError(t, err)
	for _, tg := range adaptive.TaskGroups {
		env := tg.Tasks[0].Env
		must.Eq(t, "1920", env["CARAVAN_GLOBAL_BATCH_SIZE"], must.Sprint(*tg.Name))
		must.Eq(t, "192", env["CARAVAN_LOCAL_BATCH_SIZE"], must.Sprint(*tg.Name))
		must.Eq(t, "1", env["CARAVAN_ACCUM_STEPS"], must.Sprint(*tg.Name))
		must.Eq(t, "512", env["CARAVAN_REFERENCE_BATCH_SIZE"], must.Sprint(*tg.Name), must.Sprint("the jobspec's batch stays the reference"))
	}
	must.Eq(t, "1920/192/1", adaptive.Meta[metaBatch])
	must.Eq(t, Fingerprint(job, placement()), adaptive.Meta[metaPlacement], must.Sprint("the batch is not in the fingerprint"))

	allocs := runningAllocs(adaptive)
	back := observed(structs.JobKey{Namespace: "default", ID: "resnet50"}, adaptive, allocs)
	must.Eq(t, p.Batch, back.Batch)
	must.Nil(t, observed(structs.JobKey{Namespace: "default", ID: "resnet50"}, fixed, allocs).Batch)

	for _, bad := range []string{"", "1920/192", "1920/0/1", "1920/192/-1", "a/b/c"} {
		must.Nil(t, parseBatch(bad), must.Sprint(bad))
	}
}

// TestBatchMoved: a job whose tasks run its placement is restarted for
// its batch alone only when the batch moved by BatchRestartRatio or more.
func TestBatchMoved(t *testing.T) {
	job := resnet(t) // global_batch_size 512
	d := &Driver{}
	d.cfg.setDefaults()
	running := func(meta string) *nomadJob {
		stub := &api.JobListStub{Meta: map[string]string{}}
		if meta != "" {
			stub.Meta[metaBatch] = meta
		}
		return &nomadJob{stub: stub}
	}
	for _, tc := range []struct {
		name    string
		running string
		want    *structs.Batch
		moved   bool
	}{
		{"no batch decided", "1024/128/0", nil, false},
		{"the same", "1024/128/0", &structs.Batch{Global: 1024, Local: 128}, false},
		{"a small drift", "1024/128/0", &structs.Batch{Global: 1152, Local: 144}, false},
		{"grown by 1.25", "1024/128/0", &structs.Batch{Global: 1280, Local: 160}, true},
		{"shrunk by half", "1024/128/0", &structs.Batch{Global: 512, Local: 64}, true},
		{"started at the jobspec's batch", "", &structs.Batch{Global: 1024, Local: 128}, true},
		{"the jobspec's batch, decided", "", &structs.Batch{Global: 512, Local: 64}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.moved, d.batchMoved(job, running(tc.running), tc.want))
		})
	}
	d.cfg.BatchRestartRatio = 1
	must.True(t, d.batchMoved(job, running("1024/128/0"), &structs.Batch{Global: 1032, Local: 129}), must.Sprint("ratio 1: any change"))
}

// TestChangeFor_BatchAlone: a running job whose placement Nomad already
// runs is changed for a batch alone only when the batch moved by
// BatchRestartRatio or more; a finished one is left as it ended.
func TestChangeFor_BatchAlone(t *testing.T) {
	job := resnet(t)
	p := placement()
	d := &Driver{jobs: map[structs.JobKey]*jobState{}}
	d.cfg.setDefaults()
	runs := func(status string) *nomadJob {
		return &nomadJob{stub: &api.JobListStub{Status: status, Meta: map[string]string{
			metaPlacement: Fingerprint(job, p), metaBatch: "1024/128/0"}}}
	}
	at := func(global, local int) *structs.Placement {
		q := p.Copy()
		q.Batch = &structs.Batch{Global: global, Local: local}
		return q
	}
	must.Nil(t, d.changeFor(job.Key(), job, at(1152, 144), runs("running")), must.Sprint("a small drift waits"))
	c := d.changeFor(job.Key(), job, at(2048, 256), runs("running"))
	must.NotNil(t, c, must.Sprint("a batch doubled restarts the job"))
	must.True(t, c.checkpoint)
	must.Nil(t, d.changeFor(job.Key(), job, at(2048, 256), runs("dead")), must.Sprint("a finished job stays finished"))
}

// GPU device groups of a mixed fleet: node-a has T4s, node-b A100s.
var (
	t4GPU   = structs.DeviceID{Vendor: "nvidia", Type: "gpu", Name: "Tesla T4"}
	a100GPU = structs.DeviceID{Vendor: "nvidia", Type: "gpu", Name: "A100-SXM4-40GB"}
)

// TestTranslate_GPUModel places resnet50, whose workers ask for an
// `nvidia/gpu` of at least 16 GiB, on a T4 node and an A100 node: each
// worker group asks for its node's model by name, with the job's constraint
// kept, and the parameter server, which asks for no GPU, for none.
func TestTranslate_GPUModel(t *testing.T) {
	nj, err := Translate(resnet(t), placement(), Submission{Generation: 1,
		GPUs: map[string]structs.DeviceID{"node-a": t4GPU, "node-b": a100GPU}})
	must.NoError(t, err)
	memory := []*api.Constraint{{LTarget: "${device.attr.memory}", RTarget: "16 GiB", Operand: ">="}}
	devices := map[string][]*api.RequestedDevice{}
	for _, tg := range nj.TaskGroups {
		devices[*tg.Name] = tg.Tasks[0].Resources.Devices
	}
	must.Eq(t, map[string][]*api.RequestedDevice{
		"ps-node-a":     nil,
		"worker-node-a": {{Name: "nvidia/gpu/Tesla T4", Count: new(uint64(1)), Constraints: memory}},
		"worker-node-b": {{Name: "nvidia/gpu/A100-SXM4-40GB", Count: new(uint64(1)), Constraints: memory}},
	}, devices)

	// Without the nodes' types, the requests are the job's.
	nj, err = Translate(resnet(t), placement(), Submission{Generation: 1})
	must.NoError(t, err)
	must.Eq(t, []*api.RequestedDevice{{Name: "nvidia/gpu", Count: new(uint64(1)), Constraints: memory}},
		nj.TaskGroups[2].Tasks[0].Resources.Devices)
}

// TestTranslate_DeclaredGPUModel: the groups of a job declared in Nomad
// ask for their node's model too, and the user's template is not changed.
func TestTranslate_DeclaredGPUModel(t *testing.T) {
	job := declaredResnet(t)
	template := string(job.Nomad.Template)
	nj, err := Translate(job, placement(), Submission{Generation: 1,
		GPUs: map[string]structs.DeviceID{"node-a": t4GPU, "node-b": a100GPU}})
	must.NoError(t, err)
	devices := map[string][]*api.RequestedDevice{}
	for _, tg := range nj.TaskGroups {
		devices[*tg.Name] = tg.Tasks[0].Resources.Devices
	}
	must.Eq(t, map[string][]*api.RequestedDevice{
		"ps-node-a":     nil,
		"worker-node-a": {{Name: "nvidia/gpu/Tesla T4", Count: new(uint64(1))}},
		"worker-node-b": {{Name: "nvidia/gpu/A100-SXM4-40GB", Count: new(uint64(1))}},
	}, devices)
	must.Eq(t, template, string(job.Nomad.Template))
}

func TestPinModel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		requested string
		gpu       structs.DeviceID
		want      string
	}{
		{"type only", "gpu", t4GPU, "nvidia/gpu/Tesla T4"},
		{"vendor and type", "nvidia/gpu", a100GPU, "nvidia/gpu/A100-SXM4-40GB"},
		{"the node's model already", "nvidia/gpu/Tesla T4", t4GPU, "nvidia/gpu/Tesla T4"},
		{"another model, left for Nomad to refuse", "nvidia/gpu/Tesla T4", a100GPU, "nvidia/gpu/Tesla T4"},
		{"another vendor", "amd/gpu", t4GPU, "amd/gpu"},
		{"another type", "nvidia/fpga", t4GPU, "nvidia/fpga"},
		{"a node without GPUs", "nvidia/gpu", structs.DeviceID{}, "nvidia/gpu"},
		{"a name Caravan does not parse", "nvidia//gpu", t4GPU, "nvidia//gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			affinity := []*api.Affinity{{LTarget: "${device.attr.memory}", RTarget: "16 GiB", Operand: ">=", Weight: new(int8(50))}}
			reqs := []*api.RequestedDevice{{Name: tc.requested, Count: new(uint64(2)), Affinities: affinity}}
			pinModel(reqs, tc.gpu)
			must.Eq(t, []*api.RequestedDevice{{Name: tc.want, Count: new(uint64(2)), Affinities: affinity}}, reqs)
		})
	}
}

// TestEnact_NodeGPUModel enacts a job that asks for `nvidia/gpu` on a
// node whose GPUs are T4s: the Nomad job the driver submits asks for
// `nvidia/gpu/Tesla T4`, the model read from Nomad's node list.
func TestEnact_NodeGPUModel(t *testing.T) {
	f := newFakeNomad(t)
	f.nodes["n1"].NodeResources.Devices = []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "Tesla T4",
		Instances: []*api.NodeDevice{{ID: "GPU-0", Healthy: true}, {ID: "GPU-1", Healthy: true}}}}
	d := startDriver(t, f, Config{Host: &testHost{}, UsageInterval: time.Hour})
	nodes, err := d.Nodes(context.Background())
	must.NoError(t, err)
	must.SliceLen(t, 1, nodes)
	must.Eq(t, "Tesla T4", nodes[0].GPUType())

	job := shJob(t, "sh")
	job.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	_, err = d.Enact(context.Background(), &structs.Plan{Index: 1, Placements: []*structs.Placement{placementOn(job, 1, 2)}}, []*structs.Job{job})
	must.NoError(t, err)
	devices := map[string][]*api.RequestedDevice{}
	agent.WaitFor(t, 10*time.Second, "the job submitted", func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		nj := f.jobs[JobPrefix+"sh"]
		if nj == nil {
			return errors.New("not submitted yet")
		}
		for _, tg := range nj.TaskGroups {
			devices[*tg.Name] = tg.Tasks[0].Resources.Devices
		}
		return nil
	})
	// The parameter server runs the worker's template (the job has none
	// of its own), so it asks for a GPU too.
	must.Eq(t, map[string][]*api.RequestedDevice{
		"ps-n1":     {{Name: "nvidia/gpu/Tesla T4", Count: new(uint64(1))}},
		"worker-n1": {{Name: "nvidia/gpu/Tesla T4", Count: new(uint64(1))}},
	}, devices)
}
