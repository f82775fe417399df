//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestCaravanNomad_SiaByGPUType runs sia on a mixed fleet of two Nomad
// clients, one T4 (16 GiB, speed 1) and one A100 (40 GiB, four times as
// fast), each with one fake GPU (issue 30). Each new trainer job is first
// profiled on one GPU of each model by Nomad batch runs of its own
// (Sia §3.1), and waits for them:
//
//   - "big" trains at a local batch of 240 examples of 100 MiB each: its
//     profiling run on the T4 stops at once, out of memory, and the one on
//     the A100 measures it. Sia places it on the A100, and it never has a
//     placement on the T4.
//   - "mover", of 10 MiB a example, fits both; with the A100 taken, its run
//     there waits in Nomad, and sia starts it on the T4. Once "big" is
//     stopped, the run on the A100 measures it, and sia moves it there
//     through a confirmed checkpoint; it resumes at the checkpoint's step.
//
// Sia scales all-reduce jobs only; these parameter-server jobs run at
// their minimum, their workers on the type of best goodput they fit
// (planner/sia fillPS), their parameter servers anywhere. Every Nomad job
// of a worker asks for the model of its node.
func TestCaravanNomad_SiaByGPUType(t *testing.T) {
	slow, fast := t4, a100
	fast.Speed = 4
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{Clients: 2, GPUClients: []int{1, 1}, GPUModels: []agent.GPUModel{slow, fast}})
	dumpOnFailure(t, nc)
	trainer, bin := buildTrainer(t), agent.BuildCaravan(t)
	body := nomadAgentBodyEvery(nc, t.TempDir(), "sia", 5*time.Second, "", "")
	cl := startCaravans(t, bin, 1, body)
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 2, 2)
	nodeOf := map[string]agent.ClusterNode{}
	for _, n := range nc.Nodes {
		nodeOf[n.GPUModel.Name] = n
	}

	job := func(id string, memory string) *api.JobRegisterRequest {
		args := []string{"-features", "50", "-examples", "20000", "-sample-cost", "2ms", "-sample-memory-mib", memory}
		return trainerJobSpec{ID: id, Trainer: trainer, MaxWorkers: 1, WorkerArgs: args, PSArgs: args[:4],
			Threshold: 1e-9, Patience: 1000, MaxEpochs: 100000}.request()
	}
	_, _, err := c.Jobs().Register(job("big", "100"), nil)
	must.NoError(t, err)
	waitOwnSample(t, c, "big", fast.Name, 3)
	bigSamples, _, err := c.Jobs().Samples("big", nil)
	must.NoError(t, err)
	var profiled []int64
	for _, s := range bigSamples.Samples {
		must.NotEq(t, slow.Name, s.GPUType, must.Sprintf("big never ran on the T4, profiling or not: %+v", s))
		if s.Profile {
			profiled = append(profiled, s.LocalBatchSize)
		}
	}
	must.Eq(t, []int64{240, 240, 240}, profiled, must.Sprint("three timed steps of its one batch on the A100"))
	// A run on each model, purged once it ended.
	var runs []string
	for _, ev := range events(t, c, "big", api.EventJobProfiling) {
		runs = append(runs, ev.Details["gpu_type"]+" "+ev.Details["nomad_job"])
	}
	slices.Sort(runs)
	must.Eq(t, []string{fast.Name + " caravan-profile~caravan-big~" + fast.Name, slow.Name + " caravan-profile~caravan-big~Tesla-T4"}, runs)
	for _, r := range runs {
		id := r[strings.LastIndex(r, " ")+1:]
		agent.WaitFor(t, time.Minute, "the profiling run "+id+" purged", func() error {
			if _, _, err := nc.Client.Jobs().Info(id, nil); err == nil {
				return fmt.Errorf("%s is still in Nomad", id)
			}
			return nil
		})
	}
	mustWorkerModel(t, nc, "caravan-big", nodeOf[fast.Name], fast)

	_, _, err = c.Jobs().Register(job("mover", "10"), nil)
	must.NoError(t, err)
	waitOwnSample(t, c, "mover", slow.Name, 3)
	mustWorkerModel(t, nc, "caravan-mover", nodeOf[slow.Name], slow)
	pending, _, err := nc.Client.Jobs().Info("caravan-profile~caravan-mover~"+fast.Name, nil)
	must.NoError(t, err)
	must.Eq(t, "pending", *pending.Status, must.Sprint("the A100 is big's"))

	_, err = c.Jobs().Stop("big", false, nil)
	must.NoError(t, err)
	k := confirmedStep(t, waitEvent(t, c, "mover", api.EventCheckpointConfirmed, 1, 3*time.Minute))
	resumed := waitOwnSample(t, c, "mover", fast.Name, k+1)
	mustWorkerModel(t, nc, "caravan-mover", nodeOf[fast.Name], fast)
	smps, _, err := c.Jobs().Samples("mover", nil)
	must.NoError(t, err)
	after := false
	for _, s := range smps.Samples {
		if s.Profile {
			continue
		}
		if s.CheckpointStep == k {
			after = true
		}
		if after {
			must.GreaterEq(t, k, s.Step, must.Sprintf("no step before the checkpoint's %d after it: %+v", k, s))
		}
	}
	t.Logf("mover: checkpoint at step %d on the T4, resumed on the A100 at step %d", k, resumed.Step)

	history, _, err := c.Jobs().History("big", nil)
	must.NoError(t, err)
	for _, h := range history {
		for _, n := range h.Placement.Nodes {
			if n.Workers > 0 {
				must.NotEq(t, nodeOf[slow.Name].ID, n.NodeID, must.Sprintf("big's worker placed on the T4 by plan %d", h.PlanIndex))
			}
		}
	}
}

// waitOwnSample waits for a sample of a job's own tasks (not a profiling
// run's) on GPU type typ at step at least step, and returns it.
func waitOwnSample(t *testing.T, c *api.Client, job, typ string, step int64) api.Sample {
	t.Helper()
	var got api.Sample
	agent.WaitFor(t, 4*time.Minute, fmt.Sprintf("job %s at step %d on a %s", job, step, typ), func() error {
		smps, _, err := c.Jobs().Samples(job, nil)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(smps.Samples, func(s api.Sample) bool { return !s.Profile && s.GPUType == typ && s.Step >= step })
		if i < 0 {
			return fmt.Errorf("%d samples, none of step %d on a %s", len(smps.Samples), step, typ)
		}
		got = smps.Samples[i]
		return nil
	})
	return got
}

// mustWorkerModel checks that the Nomad job's worker group runs on node
// and asks for one GPU of its model.
func mustWorkerModel(t *testing.T, nc *agent.NomadCluster, nomadID string, node agent.ClusterNode, model agent.GPUModel) {
	t.Helper()
	nj, _, err := nc.Client.Jobs().Info(nomadID, nil)
	must.NoError(t, err)
	group := nj.LookupTaskGroup("worker-" + node.ID)
	must.NotNil(t, group, must.Sprintf("Nomad job %s has no group worker-%s", nomadID, node.ID))
	must.Eq(t, []*nomadapi.RequestedDevice{{Name: model.Device(), Count: new(uint64(1))}}, group.Tasks[0].Resources.Devices)
}
