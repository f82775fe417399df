package nomad

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestProfileJob checks a profiling run of resnet50 on the A100s: its
// worker alone, once, on one A100 of any node, told to time the batches,
// with no metadata of the job's own Nomad job, under an ID no job's own
// Nomad job can have.
func TestProfileJob(t *testing.T) {
	job := resnet(t)
	nj, err := profileJob(job, "node-b", a100GPU, []int{16, 32, 512}, Submission{Generation: 1, ReportAddrs: []string{"http://127.0.0.1:4646"},
		CheckpointDir: "/ckpt", GPUs: map[string]structs.DeviceID{"node-b": a100GPU}})
	must.NoError(t, err)
	must.Eq(t, "caravan-profile~caravan-resnet50~A100-SXM4-40GB", *nj.ID)
	must.Eq(t, map[string]string{metaProfileOf: "resnet50", metaNamespace: "default", metaProfileType: "A100-SXM4-40GB"}, nj.Meta)
	must.Eq(t, api.JobTypeBatch, *nj.Type)
	must.SliceLen(t, 1, nj.TaskGroups)
	tg := nj.TaskGroups[0]
	must.Eq(t, "profile", *tg.Name)
	must.Eq(t, 1, *tg.Count)
	must.SliceEmpty(t, tg.Constraints, must.Sprint("any node of the model"))
	must.Eq(t, 0, *tg.RestartPolicy.Attempts)
	task := tg.Tasks[0]
	must.Eq(t, []*api.RequestedDevice{{Name: "nvidia/gpu/A100-SXM4-40GB", Count: new(uint64(1)),
		Constraints: []*api.Constraint{{LTarget: "${device.attr.memory}", RTarget: "16 GiB", Operand: ">="}}}}, task.Resources.Devices)
	for k, v := range map[string]string{
		ProfileBatchesEnv: "16,32,512", ProfileStepsEnv: "3", "CARAVAN_NUM_WORKERS": "1", "CARAVAN_NUM_PS": "1",
		"CARAVAN_RESUME": "0", "CARAVAN_JOB_ID": "resnet50", "CARAVAN_COLLECTOR_ADDR": "http://127.0.0.1:4646", "CARAVAN_ROLE": "worker",
		"CARAVAN_CHECKPOINT_DIR": "${NOMAD_TASK_DIR}/caravan-profile",
	} {
		must.Eq(t, v, task.Env[k], must.Sprint(k))
	}

	nj, err = profileJob(job, "node-a", t4GPU, []int{16}, Submission{Generation: 1, GPUs: map[string]structs.DeviceID{"node-a": t4GPU}})
	must.NoError(t, err)
	must.Eq(t, "caravan-profile~caravan-resnet50~Tesla-T4", *nj.ID, must.Sprint("Nomad refuses spaces in job IDs"))
}

func TestProfileBatches(t *testing.T) {
	job := resnet(t) // sync, global 512, 1 to 32 workers
	must.Eq(t, []int{16, 19, 22, 25, 30, 36, 46, 64, 102, 512}, ProfileBatches(job), must.Sprint("512 over 1 to 32 workers, ten of them spread"))

	job.Elastic.Workers = structs.Bounds{Min: 1, Max: 2}
	must.Eq(t, []int{256, 512}, ProfileBatches(job))

	job.Training.Mode = structs.ModeAsync
	must.Eq(t, []int{512}, ProfileBatches(job))

	job.Training.BatchSize = &structs.BatchSize{Min: 64, Max: 4096, MinLocal: 8, MaxLocal: 100}
	must.Eq(t, []int{8, 16, 32, 64, 100}, ProfileBatches(job), must.Sprint("powers of two from the smallest local batch, and the largest"))

	job.Training = nil
	must.SliceEmpty(t, ProfileBatches(job))
}

// TestProfilesToPurge: runs that ended, and runs of jobs the plan does
// not name, are purged, once each until Nomad no longer lists them.
func TestProfilesToPurge(t *testing.T) {
	d := &Driver{purging: map[namespacedID]bool{}}
	run := func(id, job string, dead bool) profileRun {
		return profileRun{id: namespacedID{Namespace: "default", ID: id}, key: structs.NewJobKey("default", job), dead: dead}
	}
	runs := []profileRun{run("p-a-t4", "a", true), run("p-a-a100", "a", false), run("p-b-t4", "b", false)}
	planned := map[structs.JobKey]bool{structs.NewJobKey("default", "a"): true}
	must.Eq(t, []profileRun{runs[0], runs[2]}, d.profilesToPurge(runs, planned))
	must.SliceEmpty(t, d.profilesToPurge(runs, planned), must.Sprint("queued once"))
	must.SliceEmpty(t, d.profilesToPurge(runs[1:2], planned))
	must.MapEmpty(t, d.purging, must.Sprint("forgotten once Nomad no longer lists them"))
	must.Eq(t, []profileRun{runs[1]}, d.profilesToPurge(runs[1:2], nil), must.Sprint("a gone job's waiting run"))
}

// TestProfileRuns reads the profiling runs from Nomad's job list.
func TestProfileRuns(t *testing.T) {
	stubs := []*api.JobListStub{
		{ID: "caravan-a", Namespace: "ml", Meta: map[string]string{metaJobID: "a", metaNamespace: "ml"}},
		{ID: "caravan-profile~caravan-a~Tesla-T4", Namespace: "ml", Status: "dead", Meta: map[string]string{metaProfileOf: "a", metaNamespace: "ml"}},
		{ID: "caravan-profile~caravan-a~A100", Namespace: "ml", Status: "pending", Meta: map[string]string{metaProfileOf: "a", metaNamespace: "ml"}},
	}
	key := structs.NewJobKey("ml", "a")
	must.Eq(t, []profileRun{
		{id: namespacedID{Namespace: "ml", ID: "caravan-profile~caravan-a~Tesla-T4"}, key: key, dead: true},
		{id: namespacedID{Namespace: "ml", ID: "caravan-profile~caravan-a~A100"}, key: key},
	}, profileRuns(stubs))
}
